"""``kcli consumer-perf-test`` against a real kcli broker and the librdkafka mock cluster, its
output checked against Kafka 3.9's ConsumerPerformance: the header, the result line's
``%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f`` and the relations between its fields."""

from __future__ import annotations

import datetime
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from confluent_kafka import Producer

HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
          "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DETAILED_HEADER = ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                   "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DATE = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3}"
F4 = r"(?:-?\d+\.\d{4}|NaN|-?Infinity)"
RESULT = re.compile(rf"^({DATE}), ({DATE}), ({F4}), ({F4}), (\d+), ({F4}), (\d+), (-?\d+), ({F4}), ({F4})$")
PROGRESS = re.compile(rf"^({DATE}), 0, ({F4}), ({F4}), (\d+), ({F4}), (\d+), (-?\d+), ({F4}), ({F4})$")
TIMEOUT_WARNING = ("WARNING: Exiting before consuming the expected number of messages: timeout ({} ms) exceeded. "
                   "You can use the --timeout option to increase the timeout.")
THREADS_WARNING = "WARNING: option [threads] and [num-fetch-threads] have been deprecated and will be ignored by the test"


def f4(value: float) -> str:
    """Java's %.4f."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return str(Decimal(repr(value)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def parse_ms(text: str) -> int:
    moment = datetime.datetime.strptime(text[:-4], "%Y-%m-%d %H:%M:%S").replace(microsecond=int(text[-3:]) * 1000)
    return int(moment.timestamp() * 1000 + 0.5)


def produce(bootstrap: str, topic: str, count: int, key_size: int, value_size: int) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=b"k" * key_size if key_size else None, value=b"v" * value_size, partition=0)
    assert producer.flush(30) == 0
    return count * (key_size + value_size)


def check_result_line(line: str, messages: int, total_bytes: int) -> None:
    match = RESULT.match(line)
    assert match, line
    start, end, mb, mb_sec, n, n_sec, rebalance_ms, fetch_ms, fetch_mb_sec, fetch_n_sec = match.groups()
    total_mb = total_bytes / (1024 * 1024)
    assert int(n) == messages
    assert mb == f4(total_mb)
    elapsed_ms = parse_ms(end) - parse_ms(start)
    assert int(fetch_ms) == elapsed_ms - int(rebalance_ms)
    if elapsed_ms:
        assert mb_sec == f4(total_mb / (elapsed_ms / 1000))
        assert n_sec == f4(messages / (elapsed_ms / 1000))
    if int(fetch_ms):
        assert fetch_mb_sec == f4(total_mb / (int(fetch_ms) / 1000))
        assert fetch_n_sec == f4(messages / (int(fetch_ms) / 1000))


def test_summary_line_matches_kafkas_format_and_arithmetic(broker, kcli, unique_topic):
    topic = unique_topic()
    total = produce(broker.bootstrap, topic, 500, 3, 100)
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", "500", "--timeout", "20000")
    assert result.returncode == 0, result
    assert result.lines[0] == HEADER
    assert len(result.lines) == 2, result
    check_result_line(result.lines[1], 500, total)


def test_broker_list_hide_header_and_deprecated_thread_options(broker, kcli, unique_topic):
    topic = unique_topic()
    total = produce(broker.bootstrap, topic, 50, 0, 10)
    result = kcli("consumer-perf-test", "--broker-list", broker.bootstrap, "--topic", topic, "--messages", "50",
                  "--hide-header", "--threads", "4", "--num-fetch-threads", "2", "--fetch-size", "2048", "--socket-buffer-size", "65536")
    assert result.returncode == 0, result
    assert result.lines[0] == THREADS_WARNING
    assert len(result.lines) == 2
    check_result_line(result.lines[1], 50, total)


def test_timeout_prints_kafkas_warning_and_the_partial_result(broker, kcli, unique_topic):
    topic = unique_topic()
    total = produce(broker.bootstrap, topic, 20, 0, 10)
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", "1000", "--timeout", "1500")
    assert result.returncode == 0, result
    assert result.lines[0] == HEADER
    assert result.lines[1] == TIMEOUT_WARNING.format(1500)
    check_result_line(result.lines[2], 20, total)


def test_from_latest_skips_what_is_already_there(broker, kcli, unique_topic):
    topic = unique_topic()
    produce(broker.bootstrap, topic, 20, 0, 10)
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", "5",
                  "--timeout", "1500", "--from-latest", "--hide-header")
    assert result.returncode == 0, result
    assert result.lines[0] == TIMEOUT_WARNING.format(1500)
    check_result_line(result.lines[1], 0, 0)


def test_detailed_stats_print_interval_lines_and_no_summary(broker, kcli, unique_topic):
    topic = unique_topic()
    produce(broker.bootstrap, topic, 3000, 0, 100)
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", "3000",
                  "--show-detailed-stats", "--reporting-interval", "1")
    assert result.returncode == 0, result
    assert result.lines[0] == DETAILED_HEADER
    progress = result.lines[1:]
    assert progress, result
    counts = []
    for line in progress:
        match = PROGRESS.match(line)
        assert match, line
        counts.append(int(match.group(4)))
        assert match.group(2) == f4(int(match.group(4)) * 100 / (1024 * 1024))
    assert counts == sorted(counts) and counts[-1] <= 3000


def test_date_format_and_metrics(broker, kcli, unique_topic):
    topic = unique_topic()
    produce(broker.bootstrap, topic, 10, 0, 10)
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", "10",
                  "--date-format", "yyyy/MM/dd'T'HH:mm 'o''clock'", "--print-metrics", "--hide-header")
    assert result.returncode == 0, result
    assert re.match(r"^\d{4}/\d{2}/\d{2}T\d{2}:\d{2} o'clock, \d{4}/\d{2}/\d{2}T\d{2}:\d{2} o'clock, 0\.0001, ", result.lines[0]), result.lines[0]
    # ToolsUtils.printMetrics: a blank line, "Metric Name   Value", then "name : value" rows, sorted.
    assert result.lines[1] == ""
    assert re.match(r"^Metric Name +Value$", result.lines[2])
    rows = result.lines[3:]
    assert rows and all(re.match(r"^\S+ +: \S+$", row) for row in rows)
    names = [row.split(" : ")[0].rstrip() for row in rows]
    assert names == sorted(names)
    width = len(result.lines[2]) - len("   Value")
    assert all(len(row.split(" : ")[0]) == width for row in rows)
    consumed = [row for row in rows if row.startswith("consumer-fetch-manager-metrics:records-consumed-total:{client-id=perf-consumer-client}")]
    assert consumed and consumed[0].endswith(": 10.000")


def test_consumer_config_file_and_unknown_property_warning(broker, kcli, unique_topic, tmp_path):
    topic = unique_topic()
    total = produce(broker.bootstrap, topic, 30, 0, 10)
    config = tmp_path / "consumer.properties"
    config.write_text("max.poll.records=7\nsurely.not.a.config=1\nclient.id=my-perf\n")
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", "30",
                  "--consumer.config", str(config), "--print-metrics")
    assert result.returncode == 0, result
    assert "The configuration 'surely.not.a.config' was supplied but isn't a known config." in result.stderr
    check_result_line(result.lines[1], 30, total)
    assert any("{client-id=my-perf}" in line for line in result.lines)


def test_include_regex_beyond_kafka_39(broker, kcli, unique_topic):
    prefix = unique_topic("inc")
    total = produce(broker.bootstrap, f"{prefix}-a", 10, 0, 5) + produce(broker.bootstrap, f"{prefix}-b", 10, 0, 5)
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--include", f"{prefix}-.*", "--messages", "20", "--hide-header")
    assert result.returncode == 0, result
    check_result_line(result.lines[0], 20, total)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--messages", "5"], 'Missing required argument "[topic]"'),
        (["--topic", "t"], 'Missing required argument "[messages]"'),
        (["--topic", "t", "--messages", "5", "--reporting-interval", "5s"], "Value [5s] did not match regex [^\\d+$]"),
        (["--topic", "t", "--include", "t.*", "--messages", "5"], "Exactly one of --topic or --include"),
    ],
)
def test_usage_errors(broker, kcli, args, message):
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, *args)
    assert result.returncode == 2, result
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_bootstrap_and_zero_reporting_interval(broker, kcli):
    result = kcli("consumer-perf-test", "--topic", "t", "--messages", "1")
    assert result.returncode == 2 and "Missing required option(s) [bootstrap-server]" in result.stderr
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", "t", "--messages", "1", "--reporting-interval", "0")
    assert result.returncode == 1
    assert result.lines == [HEADER]  # Kafka prints the header before it reads the interval
    assert "Reporting interval must be greater than 0." in result.stderr


def test_against_the_mock_cluster(mock_cluster, kcli, unique_topic, tmp_path):
    topic = unique_topic()
    total = produce(mock_cluster.bootstrap, topic, 100, 2, 20)
    # The mock delays joins by up to session.timeout.ms: keep the session short.
    config = tmp_path / "consumer.properties"
    config.write_text("session.timeout.ms=6000\nheartbeat.interval.ms=500\n")
    result = kcli("consumer-perf-test", "--bootstrap-server", mock_cluster.bootstrap, "--topic", topic, "--messages", "100",
                  "--timeout", "20000", "--consumer.config", str(config))
    assert result.returncode == 0, result
    assert result.lines[0] == HEADER
    check_result_line(result.lines[1], 100, total)


def test_json_output(broker, kcli, unique_topic):
    import json

    topic = unique_topic()
    total = produce(broker.bootstrap, topic, 40, 1, 9)
    result = kcli("consumer-perf-test", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--messages", "40",
                  "--output", "json", "--print-metrics")
    assert result.returncode == 0, result
    objects = [json.loads(line) for line in result.lines]
    assert [o["type"] for o in objects] == ["result", "metrics"]
    final = objects[0]
    assert final["messages"] == 40
    assert final["data_consumed_mb"] == total / (1024 * 1024)
    assert final["fetch_time_ms"] == final["end_time_ms"] - final["start_time_ms"] - final["rebalance_time_ms"]
    assert objects[1]["metrics"]["consumer-fetch-manager-metrics:records-consumed-total:{client-id=perf-consumer-client}"] == 40.0
