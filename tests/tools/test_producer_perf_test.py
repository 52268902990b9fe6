"""``kcli producer-perf-test`` against a real kcli broker and the librdkafka mock cluster.

Output lines are matched against the templates of Kafka 3.9's ProducerPerformance.Stats
(``printWindow``: ``%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms
max latency.``; ``printTotal``: ``%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg
latency, %.2f ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.``). What was
sent is read back with confluent-kafka's Consumer."""

from __future__ import annotations

import re
import socket
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kcli.tools.producer_perf_test import Stats, Throttler, percentiles

pytestmark = pytest.mark.timeout(120)

WINDOW = re.compile(r"^(\d+) records sent, (\d+\.\d) records/sec \((\d+\.\d\d) MB/sec\), (\d+\.\d) ms avg latency, (\d+\.\d) ms max latency\.$")
TOTAL = re.compile(
    r"^(\d+) records sent, (\d+\.\d{6}) records/sec \((\d+\.\d\d) MB/sec\), (\d+\.\d\d) ms avg latency, (\d+\.\d\d) ms max latency, "
    r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$"
)
METRIC = re.compile(r"^producer-metrics:([a-z-]+):\{client-id=([^}]*)\} *: (-?\d+\.\d{3}|NaN)$")


def values_of(bootstrap: str, topic: str, count: int, timeout: float = 30.0) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "perf-test-check", "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        consumer.assign([TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                values.append(message.value())
        assert len(values) == count, f"read {len(values)} of {count}"
        return values
    finally:
        consumer.close()


def perf(kcli, bootstrap: str, topic: str, *args: str, **kwargs):
    return kcli("producer-perf-test", "--topic", topic, *args, "--producer-props", f"bootstrap.servers={bootstrap}", **kwargs)


def total_of(result) -> re.Match:
    match = TOTAL.match(result.lines[-1])
    assert match, result
    return match


def test_records_of_the_given_size(broker, kcli, unique_topic):
    topic = unique_topic()
    result = perf(kcli, broker.bootstrap, topic, "--num-records", "3000", "--record-size", "100", "--throughput", "-1")
    assert result.returncode == 0, result
    assert result.stderr == ""
    match = total_of(result)
    assert int(match.group(1)) == 3000
    p50, p95, p99, p999 = (int(match.group(i)) for i in range(6, 10))
    assert p50 <= p95 <= p99 <= p999 <= float(match.group(5))
    values = values_of(broker.bootstrap, topic, 3000)
    assert all(len(v) == 100 and re.fullmatch(rb"[A-Z]+", v) for v in values)
    assert len(set(values)) > 1000  # random letters, not one payload repeated


def test_periodic_lines_while_throttled(broker, kcli, unique_topic):
    topic = unique_topic()
    result = perf(kcli, broker.bootstrap, topic, "--num-records", "5600", "--record-size", "10", "--throughput", "1000")
    assert result.returncode == 0, result
    windows = [WINDOW.match(line) for line in result.lines[:-1]]
    assert windows and all(windows), result.lines
    assert int(total_of(result).group(1)) == 5600
    assert sum(int(m.group(1)) for m in windows) < 5600


def test_payload_file_and_delimiter(broker, kcli, unique_topic, tmp_path):
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha,beta,,gamma\u00e9,,")
    topic = unique_topic()
    result = perf(kcli, broker.bootstrap, topic, "--num-records", "200", "--payload-file", str(payloads), "--payload-delimiter", ",", "--throughput", "-1")
    assert result.returncode == 0, result
    assert result.lines[:2] == [f"Reading payloads from: {payloads}", "Number of messages read: 4"]
    assert int(total_of(result).group(1)) == 200
    assert set(values_of(broker.bootstrap, topic, 200)) == {b"alpha", b"beta", b"", "gamma\u00e9".encode()}


def test_payload_file_default_delimiter_is_a_newline(broker, kcli, unique_topic, tmp_path):
    payloads = tmp_path / "lines.txt"
    payloads.write_text("one\ntwo\n")
    topic = unique_topic()
    result = perf(kcli, broker.bootstrap, topic, "--num-records", "50", "--payload-file", str(payloads), "--throughput", "-1")
    assert result.returncode == 0, result
    assert result.lines[1] == "Number of messages read: 2"
    assert set(values_of(broker.bootstrap, topic, 50)) == {b"one", b"two"}


def test_empty_payload_file(broker, kcli, unique_topic, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    result = perf(kcli, broker.bootstrap, unique_topic(), "--num-records", "5", "--payload-file", str(empty), "--throughput", "-1")
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["Error: File does not exist or empty file provided."]


def test_payload_monotonic(broker, kcli, unique_topic):
    topic = unique_topic()
    result = perf(kcli, broker.bootstrap, topic, "--num-records", "500", "--payload-monotonic", "--throughput", "-1")
    assert result.returncode == 0, result
    assert values_of(broker.bootstrap, topic, 500) == [str(i).encode() for i in range(500)]


def test_several_producer_props_after_one_flag_and_print_metrics(broker, kcli, unique_topic):
    topic = unique_topic()
    result = kcli(
        "producer-perf-test", "--topic", topic, "--num-records", "1000", "--record-size", "50", "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={broker.bootstrap}", "acks=1", "client.id=mine", "linger.ms=5", "--print-metrics",
    )
    assert result.returncode == 0, result
    lines = result.lines
    assert TOTAL.match(lines[0]), lines
    assert lines[1] == ""
    assert re.match(r"^Metric Name +   Value$", lines[2])
    metrics = [METRIC.match(line) for line in lines[3:]]
    assert metrics and all(metrics), lines
    assert {m.group(2) for m in metrics} == {"mine"}
    names = [m.group(1) for m in metrics]
    assert names == sorted(names)
    by_name = {m.group(1): m.group(3) for m in metrics}
    assert by_name["record-send-total"] == "1000.000"
    assert by_name["record-error-total"] == "0.000"
    width = len(lines[2]) - len("   Value")
    assert all(line.index(" : ") == width for line in lines[3:])


def test_producer_config_file(broker, kcli, unique_topic, tmp_path):
    config = tmp_path / "producer.properties"
    config.write_text(f"bootstrap.servers={broker.bootstrap}\ncompression.type=lz4\n")
    topic = unique_topic()
    result = kcli("producer-perf-test", "--topic", topic, "--num-records", "100", "--record-size", "20", "--throughput", "-1", "--producer.config", str(config))
    assert result.returncode == 0, result
    dump = kcli("dump-log-segments", "--files", str(broker.log_dir / f"{topic}-0" / "00000000000000000000.log"))
    assert "compresscodec: lz4" in dump.stdout


def control_batches(kcli, broker, topic: str) -> tuple[list[str], list[str]]:
    """(data batch lines, control batch lines) of the topic's partition 0 as dump-log-segments prints them."""
    dump = kcli("dump-log-segments", "--files", str(broker.log_dir / f"{topic}-0" / "00000000000000000000.log"))
    batches = [line for line in dump.stdout.splitlines() if line.startswith("baseOffset:")]
    return [b for b in batches if "isControl: false" in b], [b for b in batches if "isControl: true" in b]


def read_committed(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "perf-test-check", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                break  # the end of the partition (the last stable offset)
            values.append(message.value())
        return values
    finally:
        consumer.close()


def test_transactions_commit_every_transaction_duration(broker, kcli, unique_topic):
    """The throttle keeps the run at 2000 records/s or less, so 600 records take 300 ms or more:
    with 50 ms transactions, several commits."""
    topic = unique_topic()
    kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, "--partitions", "1")
    result = perf(kcli, broker.bootstrap, topic, "--num-records", "600", "--payload-monotonic", "--throughput", "2000", "--transaction-duration-ms", "50")
    assert result.returncode == 0, result
    assert int(total_of(result).group(1)) == 600
    data, markers = control_batches(kcli, broker, topic)
    assert all("isTransactional: true" in b for b in data + markers)
    assert len(markers) >= 2
    assert read_committed(broker.bootstrap, topic) == [str(i).encode() for i in range(600)]
    described = kcli("transactions", "--bootstrap-server", broker.bootstrap, "describe", "--transactional-id", "performance-producer-default-transactional-id")
    assert described.returncode == 0 and "CompleteCommit" in described.stdout, described


def test_the_transactional_id_flag_takes_precedence_over_the_properties(broker, kcli, unique_topic):
    topic, flag, prop = unique_topic(), unique_topic("flag"), unique_topic("prop")
    result = perf(kcli, broker.bootstrap, topic, "--num-records", "20", "--record-size", "10", "--throughput", "-1",
                  "--transaction-duration-ms", "100000", "--transactional-id", flag, "--producer-props", f"transactional.id={prop}")
    assert result.returncode == 0, result
    data, markers = control_batches(kcli, broker, topic)
    assert len(markers) == 1 and data  # one transaction, committed after the loop
    assert len(read_committed(broker.bootstrap, topic)) == 20
    assert kcli("transactions", "--bootstrap-server", broker.bootstrap, "describe", "--transactional-id", flag).returncode == 0
    unknown = kcli("transactions", "--bootstrap-server", broker.bootstrap, "describe", "--transactional-id", prop)
    assert unknown.returncode != 0


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        # Kafka 3.9 turns transactions on only with --transaction-duration-ms: a transactional id
        # alone makes a producer whose first send comes before initTransactions.
        (["--producer-props", "transactional.id=alone"], 1, "Error: Cannot perform a 'send' before completing a call to initTransactions when transactions are enabled."),
        (["--producer-props", "acks"], 2, "Error: Invalid property: acks"),
        (["--producer-props", "a=b=c"], 2, "Error: Invalid property: a=b=c"),
        (["--producer-props", "enable.idempotence=true", "acks=1"], 1, "Error: Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence."),
        (["--payload-monotonic"], 2, "Error: argument --payload-monotonic: not allowed with argument --record-size"),
    ],
)
def test_bad_arguments(broker, kcli, unique_topic, args, code, message):
    result = perf(kcli, broker.bootstrap, unique_topic(), "--num-records", "10", "--record-size", "10", "--throughput", "-1", *args)
    assert result.returncode == code, result
    assert result.stderr.splitlines() == [message]


@pytest.mark.parametrize(("size", "props"), [("2147483647", []), ("2000", ["max.request.size=1000"])])
def test_a_record_size_the_producer_would_refuse_is_refused_before_any_payload_is_made(broker, kcli, unique_topic, size, props):
    result = kcli("producer-perf-test", "--topic", unique_topic(), "--num-records", "10", "--record-size", size, "--throughput", "-1",
                  "--producer-props", f"bootstrap.servers={broker.bootstrap}", *props)
    limit = "1000" if props else "1048576"
    assert result.returncode == 1, result
    assert result.stderr.splitlines() == [f"Error: --record-size {size} is larger than {limit}, the value of the max.request.size "
                                          "configuration: the producer would refuse every record"]


def test_required_arguments(kcli):
    result = kcli("producer-perf-test", "--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["Error: Either --producer-props or --producer.config must be specified."]
    result = kcli("producer-perf-test", "--topic", "t", "--num-records", "1", "--throughput", "-1", "--producer-props", "a=b")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["Error: one of the arguments --record-size --payload-file --payload-monotonic is required"]
    result = kcli("producer-perf-test", "--topic", "t", "--record-size", "1", "--throughput", "-1", "--producer-props", "a=b")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["Error: argument --num-records is required"]


def test_unreachable_broker(kcli, unique_topic):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = perf(kcli, f"127.0.0.1:{port}", unique_topic(), "--num-records", "10", "--record-size", "10", "--throughput", "-1", timeout=60)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: no bootstrap server reachable")


def test_against_the_mock_cluster(mock_cluster, kcli, unique_topic):
    topic = unique_topic()
    result = perf(kcli, mock_cluster.bootstrap, topic, "--num-records", "2000", "--record-size", "64", "--throughput", "-1")
    assert result.returncode == 0, result
    assert int(total_of(result).group(1)) == 2000
    assert len(values_of(mock_cluster.bootstrap, topic, 2000)) == 2000


# -- the measuring parts, without a broker -----------------------------------------------------------


def test_total_line_follows_kafkas_arithmetic():
    lines: list[str] = []
    stats = Stats(10, 5000, 1_000_000, lines.append)
    for latency in (5, 1, 9, 3, 7, 2, 8, 4, 6, 10):
        stats.record(latency, 1024 * 1024, 1_000_100)
    line = stats.total_line(1_002_000)
    assert line == (
        "10 records sent, 5.000000 records/sec (5.00 MB/sec), 5.50 ms avg latency, 10.00 ms max latency, "
        "6 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th."
    )
    assert lines == []  # no window passed


def test_window_line_and_sampling():
    lines: list[str] = []
    stats = Stats(2_000_000, 5000, 0, lines.append)
    assert stats.sampling == 4
    for i in range(8):
        stats.record(i, 100, 1000)
    assert stats.latencies == [0, 4]
    stats.record(100, 100, 5000)
    assert lines == ["9 records sent, 1.8 records/sec (0.00 MB/sec), 14.2 ms avg latency, 100.0 ms max latency."]
    assert stats.window_count == 0 and stats.count == 9


def test_nothing_sent():
    stats = Stats(5, 5000, 0, print)
    assert stats.total_line(10) == "0 records sent, 0.000000 records/sec (0.00 MB/sec), NaN ms avg latency, 0.00 ms max latency, 0 ms 50th, 0 ms 95th, 0 ms 99th, 0 ms 99.9th."


def test_percentile_index_is_kafkas():
    assert percentiles(list(range(100, 0, -1)), 0.5, 0.95, 0.99, 0.999) == [51, 96, 100, 100]
    assert percentiles([7], 0.5, 0.999) == [7, 7]


def test_throttler_decides_as_kafkas():
    throttler = Throttler(100.0, 0)
    assert not throttler.should_throttle(5, 0)  # nothing elapsed
    assert throttler.should_throttle(11, 100)  # 110/s
    assert not throttler.should_throttle(9, 100)
    assert not Throttler(-1, 0).should_throttle(10**9, 1)
