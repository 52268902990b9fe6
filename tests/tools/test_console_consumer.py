"""``kcli console-consumer`` against a real kcli broker process (and once against librdkafka's mock
cluster), with records written and offsets checked through confluent-kafka.

Expected output is built from Kafka's templates (reference section 2.2 and Kafka 3.9's
DefaultMessageFormatter): the chosen fields in the order timestamp, partition, offset, headers,
key, value, joined by ``key.separator`` and ended by ``line.separator``; ``NO_HEADERS`` for a record
without headers and ``null`` (``null.literal``) for null keys, values and header values.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kcli.broker.groups.partitioner import partition_for
from kcli.errors import KcliError, UsageError
from kcli.output import Format
from kcli.tools.console_consumer import EARLIEST, LATEST, parse_options

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 3
LOG4J_ERROR = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] ERROR "
TIMEOUT_LINES = re.compile(
    "^" + LOG4J_ERROR + r"Error processing message, terminating consumer process:  \(org\.apache\.kafka\.tools\.consumer\.ConsoleConsumer\)\n"
    r"org\.apache\.kafka\.common\.errors\.TimeoutException$", re.M)


class Sent(NamedTuple):
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10).values():
        future.result(timeout=20)


def produce(bootstrap: str, topic: str, records: list[tuple[int | None, bytes | None, bytes | None, list]]) -> list[Sent]:
    """Write (partition, key, value, headers) records with confluent-kafka, each with its own
    CreateTime; returns them with the partition and offset the broker acked."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    acked: list[Sent] = []

    def delivered(timestamp: int, headers: list, error, message) -> None:
        assert error is None, error
        # Delivery reports carry neither the headers nor (from the mock) the CreateTime sent.
        acked.append(Sent(message.partition(), message.offset(), timestamp, message.key(), message.value(), headers))

    base = int(time.time() * 1000) - 60_000
    for i, (partition, key, value, headers) in enumerate(records):
        kwargs: dict[str, Any] = {"key": key, "value": value, "headers": headers or None, "timestamp": base + i,
                                  "on_delivery": functools.partial(delivered, base + i, list(headers))}
        if partition is not None:
            kwargs["partition"] = partition
        producer.produce(topic, **kwargs)
    assert producer.flush(30) == 0
    assert len(acked) == len(records)
    return sorted(acked)


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return [tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)]
    finally:
        consumer.close()


def group_state(bootstrap: str, group: str) -> tuple[str, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    description = admin.describe_consumer_groups([group])[group].result(timeout=15)
    return description.state.name, len(description.members)


def kafka_line(record: Sent, props: dict[str, str]) -> bytes:
    """One record as Kafka's DefaultMessageFormatter lays it out (no deserializers)."""
    on = {name: props.get(f"print.{name}", "false").strip().lower() == "true" for name in ("timestamp", "partition", "offset", "headers", "key")}
    print_value = props.get("print.value", "true").strip().lower() == "true"
    null = props.get("null.literal", "null").encode()
    fields: list[bytes] = []
    if on["timestamp"]:
        fields.append(f"CreateTime:{record.timestamp}".encode())
    if on["partition"]:
        fields.append(f"Partition:{record.partition}".encode())
    if on["offset"]:
        fields.append(f"Offset:{record.offset}".encode())
    if on["headers"]:
        fields.append(props.get("headers.separator", ",").encode().join(
            k.encode() + b":" + (null if v is None else v) for k, v in record.headers) or b"NO_HEADERS")
    if on["key"]:
        fields.append(null if record.key is None else record.key)
    if print_value:
        fields.append(null if record.value is None else record.value)
    return props.get("key.separator", "\t").encode().join(fields) + props.get("line.separator", "\n").encode()


def run_consumer(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``kcli console-consumer ARGS`` with stdout as bytes (the formatter writes raw bytes)."""
    return subprocess.run([sys.executable, "-m", "kcli", "console-consumer", *args], capture_output=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def records(broker) -> tuple[str, list[Sent]]:
    """A 3-partition topic holding keyed and null-keyed records, headers (one with a null value),
    a null value and a value that is not UTF-8."""
    topic = f"console-consumer-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    wanted = []
    for i in range(12):
        key = None if i % 4 == 0 else f"key-{i}".encode()
        value = None if i == 5 else b"\xff\xfe not utf-8" if i == 7 else f"value-{i} ü".encode()
        headers = [] if i % 2 == 0 else [("h1", f"x{i}".encode()), ("h2", None)]
        wanted.append((i % PARTITIONS, key, value, headers))
    return topic, produce(broker.bootstrap, topic, wanted)


def lines_of(stdout: bytes, separator: bytes = b"\n") -> list[bytes]:
    parts = stdout.split(separator)
    assert parts[-1] == b"", stdout
    return [part + separator for part in parts[:-1]]


# -- option checks (Kafka 3.9's ConsoleConsumerOptions) ------------------------------------------------

BASE = dict(bootstrap_server="localhost:9092", topic="t", whitelist=None, include=None, partition=None, offset=None,
            consumer_property=[], consumer_config=None, formatter=None, formatter_property=[], formatter_config=None,
            from_beginning=False, max_messages=None, timeout_ms=None, skip_message_on_error=False, key_deserializer=None,
            value_deserializer=None, enable_systest_events=False, isolation_level=None, group=None)


@pytest.mark.parametrize("changes, message", [
    ({"topic": None}, "Exactly one of --include/--topic is required."),
    ({"include": "x.*"}, "Exactly one of --include/--topic is required."),
    ({"whitelist": "x", "include": "y"},
     "Exactly one of --include/--topic is required. --whitelist is DEPRECATED use --include instead; ignored if --include specified."),
    ({"topic": None, "include": "x.*", "partition": 0}, "The topic is required when partition is specified."),
    ({"partition": 0, "offset": "3", "from_beginning": True}, "Options from-beginning and offset cannot be specified together."),
    ({"offset": "3"}, "The partition is required when offset is specified."),
    ({"bootstrap_server": None}, 'Missing required argument "[bootstrap-server]"'),
    ({"group": "g", "partition": 0}, "Options group and partition cannot be specified together."),
    ({"consumer_property": ["group.id=g"], "partition": 0}, "Options group and partition cannot be specified together."),
    ({"group": "group-from-arguments", "consumer_property": ["group.id=group-from-properties"]},
     "The group ids provided in different places (directly using '--group', via '--consumer-property', or via "
     "'--consumer.config') do not match. Detected group ids: 'group-from-arguments', 'group-from-properties'"),
    ({"partition": 0, "offset": "-1"}, "The provided offset value '-1' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
    ({"partition": 0, "offset": "soon"}, "The provided offset value 'soon' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
    ({"partition": 0, "offset": "9223372036854775808"},
     "The provided offset value '9223372036854775808' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."),
])
def test_option_errors(changes, message):
    with pytest.raises(UsageError) as caught:
        parse_options(**(BASE | changes))
    assert str(caught.value) == message


def test_options_as_kafka_builds_them(tmp_path):
    options = parse_options(**BASE)
    props = options.consumer_props
    assert props["auto.offset.reset"] == "latest" and props["client.id"] == "console-consumer"
    assert re.fullmatch(r"console-consumer-\d{1,5}", props["group.id"]) and props["enable.auto.commit"] == "false"
    assert props["isolation.level"] == "read_uncommitted"
    assert (options.max_messages, options.offset) == (-1, LATEST)

    options = parse_options(**(BASE | {"group": "g", "from_beginning": True, "isolation_level": "read_committed"}))
    assert options.consumer_props["group.id"] == "g" and "enable.auto.commit" not in options.consumer_props
    assert options.consumer_props["auto.offset.reset"] == "earliest"
    assert options.consumer_props["isolation.level"] == "read_committed"

    assert parse_options(**(BASE | {"partition": 0, "offset": "LatEst"})).offset == LATEST
    assert parse_options(**(BASE | {"partition": 0, "offset": "earliest"})).offset == EARLIEST
    assert parse_options(**(BASE | {"partition": 0, "from_beginning": True})).offset == EARLIEST
    assert parse_options(**(BASE | {"partition": 0, "offset": "3"})).offset == 3
    assert parse_options(**(BASE | {"topic": None, "whitelist": "w.*"})).include == "w.*"
    assert parse_options(**(BASE | {"topic": None, "whitelist": "w.*", "include": "i.*"})).include == "i.*"

    config = tmp_path / "consumer.properties"
    config.write_text("request.timeout.ms=1000\ngroup.id=group1\n")
    options = parse_options(**(BASE | {"consumer_config": str(config), "consumer_property": ["group.id=group1"], "group": "group1"}))
    assert options.consumer_props["group.id"] == "group1" and options.consumer_props["request.timeout.ms"] == "1000"

    formatter_config = tmp_path / "formatter.properties"
    formatter_config.write_text("print.key=true\nkey.separator=\\t|\n")
    options = parse_options(**(BASE | {"formatter_config": str(formatter_config), "formatter_property": ["print.key=false", "null.literal="],
                                       "value_deserializer": "org.apache.kafka.common.serialization.StringDeserializer"}))
    assert options.formatter_props == {"print.key": "false", "key.separator": "\t|", "null.literal": "",
                                       "value.deserializer": "org.apache.kafka.common.serialization.StringDeserializer"}


def test_json_output_takes_no_formatter_settings():
    with pytest.raises(UsageError) as caught:
        parse_options(**(BASE | {"formatter_property": ["print.key=true"], "key_deserializer": "x"}), output=Format.json)
    assert str(caught.value) == "--output json writes every record field as it is and cannot be used with --property, --key-deserializer"
    assert parse_options(**BASE, output=Format.json).json


def test_from_beginning_conflicting_with_auto_offset_reset():
    with pytest.raises(KcliError) as caught:
        parse_options(**(BASE | {"from_beginning": True, "consumer_property": ["auto.offset.reset=latest"]}))
    assert not isinstance(caught.value, UsageError)
    assert str(caught.value) == "Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest', please remove one option"
    assert parse_options(**(BASE | {"from_beginning": True, "consumer_property": ["auto.offset.reset=earliest"]}))


def test_usage_error_on_the_command_line():
    result = run_consumer("--bootstrap-server", "127.0.0.1:1", "--include", "x", "--partition", "0")
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == ["Error: The topic is required when partition is specified."]
    result = run_consumer("--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--formatter", "kafka.tools.ChecksumMessageFormatter")
    assert result.returncode == 2 and result.stderr.decode().startswith("Error: Unknown formatter class 'kafka.tools.ChecksumMessageFormatter'")


# -- against the broker ---------------------------------------------------------------------------------

FORMATS = [
    {},
    {"print.key": "true"},
    {"print.timestamp": "true", "print.partition": "true", "print.offset": "true", "print.headers": "true", "print.key": "true"},
    {"print.key": "true", "print.headers": "true", "print.value": "false", "key.separator": "<sep>", "line.separator": "<end>",
     "headers.separator": "|", "null.literal": "<null>"},
    {"print.key": "true", "print.headers": "true", "print.partition": "TRUE", "print.offset": "yes"},
]


@pytest.mark.parametrize("props", FORMATS, ids=lambda props: ",".join(props) or "default")
def test_default_formatter_properties(broker, records, props):
    topic, sent = records
    args = ["--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning", "--max-messages", str(len(sent))]
    for name, value in props.items():
        args += ["--property", f"{name}={value}"]
    result = run_consumer(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode().splitlines()[-1] == f"Processed a total of {len(sent)} messages"
    separator = props.get("line.separator", "\n").encode()
    assert sorted(lines_of(result.stdout, separator)) == sorted(kafka_line(r, props) for r in sent)


def test_string_deserializers_print_text(broker, records):
    topic, sent = records
    string = "org.apache.kafka.common.serialization.StringDeserializer"
    result = run_consumer("--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "2", "--offset", "earliest",
                          "--max-messages", "4", "--key-deserializer", string, "--property", f"value.deserializer={string}",
                          "--property", "print.key=true")
    assert result.returncode == 0, result.stderr
    in_partition = [r for r in sent if r.partition == 2]
    assert lines_of(result.stdout) == [kafka_line(r, {"print.key": "true"}) for r in in_partition]


def test_partition_and_offset(broker, records):
    topic, sent = records
    in_partition = [r for r in sent if r.partition == 1]
    result = run_consumer("--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "1", "--offset", "1",
                          "--max-messages", "2", "--property", "print.offset=true")
    assert result.returncode == 0, result.stderr
    assert lines_of(result.stdout) == [kafka_line(r, {"print.offset": "true"}) for r in in_partition[1:3]]
    assert result.stderr.decode().splitlines() == ["Processed a total of 2 messages"]


def test_timeout_at_the_end_of_a_partition(broker, records):
    """--partition without --offset starts at the end; --timeout-ms then ends it with Kafka's ERROR line."""
    topic, _sent = records
    result = run_consumer("--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "0", "--timeout-ms", "1000",
                          "--enable-systest-events")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"shutdown_complete\n"
    stderr = result.stderr.decode()
    assert TIMEOUT_LINES.search(stderr), stderr
    assert stderr.splitlines()[-1] == "Processed a total of 0 messages"
    assert len(stderr.splitlines()) == 3, stderr


def test_include_pattern_with_the_2x_whitelist_flag(broker):
    prefix = f"cc-include-{uuid.uuid4().hex[:6]}"
    sent = produce(broker.bootstrap, f"{prefix}-a", [(None, None, b"from-a", [])]) + produce(broker.bootstrap, f"{prefix}-b", [(None, None, b"from-b", [])])
    produce(broker.bootstrap, f"{prefix}x-c", [(None, None, b"not-matched", [])])
    # The first wait covers the group join too; the last one ends the run.
    result = run_consumer("--bootstrap-server", broker.bootstrap, "--whitelist", f"{prefix}-.*", "--from-beginning", "--timeout-ms", "4000")
    assert result.returncode == 0, result.stderr
    assert sorted(lines_of(result.stdout)) == [b"from-a\n", b"from-b\n"] and len(sent) == 2


def test_group_commits_what_was_printed_and_leaves(broker):
    topic = f"cc-group-{uuid.uuid4().hex[:8]}"
    group = f"cc-group-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [(0, None, f"m{i}".encode(), []) for i in range(5)])
    first = run_consumer("--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "3")
    assert first.returncode == 0, first.stderr
    assert lines_of(first.stdout) == [b"m0\n", b"m1\n", b"m2\n"]
    # The poll fetched all five; the two not printed were put back before the commit.
    assert committed(broker.bootstrap, group, topic, 1) == [3]
    assert group_state(broker.bootstrap, group) == ("EMPTY", 0)
    second = run_consumer("--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group, "--max-messages", "2")
    assert second.returncode == 0, second.stderr
    assert lines_of(second.stdout) == [b"m3\n", b"m4\n"]
    assert committed(broker.bootstrap, group, topic, 1) == [5]


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_cleanly(broker, records, signum, code):
    topic, sent = records
    group = f"cc-signal-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen([sys.executable, "-m", "kcli", "console-consumer", "--bootstrap-server", broker.bootstrap,
                                "--topic", topic, "--group", group, "--from-beginning"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    got: list[bytes] = []
    done = threading.Event()

    def read() -> None:
        for line in process.stdout:
            got.append(line)
            if len(got) == len(sent):
                done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert done.wait(30), got
        process.send_signal(signum)
        assert process.wait(30) == code
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    reader.join(5)
    stderr = process.stderr.read().decode()
    assert stderr.splitlines() == [f"Processed a total of {len(sent)} messages"], stderr
    counts = [sum(1 for r in sent if r.partition == p) for p in range(PARTITIONS)]
    assert committed(broker.bootstrap, group, topic, PARTITIONS) == counts
    assert group_state(broker.bootstrap, group) == ("EMPTY", 0)


def test_deserializer_failure_stops_or_is_skipped(broker, records):
    topic, sent = records
    ints = "org.apache.kafka.common.serialization.IntegerDeserializer"
    args = ["--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "0", "--offset", "earliest",
            "--max-messages", "2", "--value-deserializer", ints]
    stopped = run_consumer(*args)
    assert stopped.returncode == 1
    assert stopped.stdout == b""
    assert stopped.stderr.decode().splitlines() == [
        "Processed a total of 1 messages", "Error: Size of data received by IntegerDeserializer is not 4"]
    skipped = run_consumer(*args, "--skip-message-on-error")
    assert skipped.returncode == 0, skipped.stderr
    stderr = skipped.stderr.decode()
    skip_lines = re.findall("^" + LOG4J_ERROR + r"Error processing message, skipping this message:  \(org\.apache\.kafka\.tools\.consumer\.ConsoleConsumer\)\n"
                            r"org\.apache\.kafka\.common\.errors\.SerializationException: Size of data received by IntegerDeserializer is not 4$", stderr, re.M)
    assert len(skip_lines) == 2, stderr
    assert stderr.splitlines()[-1] == "Processed a total of 2 messages"


def test_corrupt_batch_stops_or_is_skipped(broker):
    topic = f"cc-corrupt-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    for i in range(3):  # one batch each
        produce(broker.bootstrap, topic, [(0, None, f"record-{i}".encode(), [])])
    segment = broker.log_dir / f"{topic}-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    first_length = struct.unpack_from(">i", data, 8)[0]
    second_end = 12 + first_length + 12 + struct.unpack_from(">i", data, 12 + first_length + 8)[0]
    with open(segment, "r+b") as f:  # the last byte of the second batch's value: its CRC no longer matches
        f.seek(second_end - 2)
        f.write(bytes([data[second_end - 2] ^ 0xFF]))
    args = ["--bootstrap-server", broker.bootstrap, "--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", "2"]
    stopped = run_consumer(*args, "--timeout-ms", "5000")
    assert stopped.returncode == 1
    assert stopped.stdout == b"record-0\n"
    lines = stopped.stderr.decode().splitlines()
    assert lines[0] == "Processed a total of 1 messages" and len(lines) == 2, lines
    assert lines[1].startswith(f"Error: Received exception when fetching the next record from {topic}-0. If needed, please seek past the record")
    skipped = run_consumer(*args, "--skip-message-on-error")
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stdout == b"record-0\nrecord-2\n"
    stderr = skipped.stderr.decode()
    assert re.search("^" + LOG4J_ERROR + r"Error processing message, skipping this message:  \(org\.apache\.kafka\.tools\.consumer\.ConsoleConsumer\)\n"
                     r"org\.apache\.kafka\.common\.KafkaException: Received exception when fetching the next record from " + re.escape(f"{topic}-0"),
                     stderr, re.M), stderr
    assert stderr.splitlines()[-1] == "Processed a total of 2 messages"


def split_json_objects(text: str) -> list[Any]:
    """Kafka 3.9's coordinator formatters write one JSON object after another, with no separator."""
    decoder = json.JSONDecoder()
    objects, position = [], 0
    while position < len(text):
        obj, position = decoder.raw_decode(text, position)
        objects.append(obj)
    return objects


def test_coordinator_formatters_read_consumer_offsets(broker):
    topic = f"cc-offsets-{uuid.uuid4().hex[:8]}"
    group = f"cc-offsets-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [(0, None, f"m{i}".encode(), []) for i in range(3)])
    joined = run_consumer("--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "3")
    assert joined.returncode == 0, joined.stderr

    # The group's records are in one partition of the topic (5 partitions in this broker's config).
    partition = str(partition_for(group, 5))

    def read_offsets_topic(formatter: str) -> subprocess.CompletedProcess:
        result = run_consumer("--bootstrap-server", broker.bootstrap, "--topic", "__consumer_offsets", "--partition", partition,
                              "--offset", "earliest", "--formatter", formatter, "--timeout-ms", "1500")
        assert result.returncode == 0, result.stderr
        return result

    offsets = split_json_objects(read_offsets_topic("org.apache.kafka.tools.consumer.OffsetsMessageFormatter").stdout.decode())
    ours = [o for o in offsets if o["key"] and o["key"]["data"]["group"] == group]
    assert ours, offsets
    assert ours[-1]["key"] == {"version": 1, "data": {"group": group, "topic": topic, "partition": 0}}
    assert ours[-1]["value"]["version"] == 3
    assert ours[-1]["value"]["data"]["offset"] == 3 and ours[-1]["value"]["data"]["metadata"] == ""
    assert set(ours[-1]["value"]["data"]) == {"offset", "leaderEpoch", "metadata", "commitTimestamp"}

    groups = split_json_objects(read_offsets_topic("org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter").stdout.decode())
    ours = [g for g in groups if g["key"] and g["key"]["data"] == {"group": group}]
    assert ours, groups
    joined_value = next(g["value"] for g in ours if g["value"] and g["value"]["data"]["members"])
    assert joined_value["data"]["protocolType"] == "consumer"
    assert joined_value["data"]["members"][0]["clientId"] == "console-consumer"
    # It left: the last record of the group has no members.
    assert ours[-1]["value"]["data"]["members"] == []

    legacy = read_offsets_topic("kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter")
    assert legacy.stderr.decode().splitlines()[0] == (
        "WARNING: kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter is deprecated and will be removed in the "
        "next major release. Please use org.apache.kafka.tools.consumer.OffsetsMessageFormatter instead")
    pattern = re.compile(re.escape(f"[{group},{topic},0]::OffsetAndMetadata(offset=3, leaderEpoch=")
                         + r"(Optional\[\d+\]|Optional\.empty), metadata=, commitTimestamp=\d+, expireTimestamp=None\)")
    assert any(pattern.fullmatch(line) for line in legacy.stdout.decode().splitlines()), legacy.stdout


def test_json_output_round_trips_through_console_producer(broker, records):
    topic, sent = records
    result = run_consumer("--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
                          "--max-messages", str(len(sent)), "--output", "json")
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert {(o["partition"], o["offset"]) for o in objects} == {(r.partition, r.offset) for r in sent}
    by_place = {(o["partition"], o["offset"]): o for o in objects}
    for record in sent:
        shown = by_place[(record.partition, record.offset)]
        assert shown["topic"] == topic and shown["timestamp"] == record.timestamp and shown["timestampType"] == "CreateTime"
        assert shown["key"] == (None if record.key is None else record.key.decode())
        assert shown["headers"] == [{"key": k, "value": None if v is None else v.decode()} for k, v in record.headers]
    binary = next(r for r in sent if r.value == b"\xff\xfe not utf-8")
    assert by_place[(binary.partition, binary.offset)]["value"] == {"base64": base64.b64encode(binary.value).decode()}
    assert by_place[next((r.partition, r.offset) for r in sent if r.value is None)]["value"] is None

    copy = f"{topic}-copy"
    create_topic(broker.bootstrap, copy, PARTITIONS)
    produced = subprocess.run([sys.executable, "-m", "kcli", "console-producer", "--bootstrap-server", broker.bootstrap,
                               "--topic", copy, "--input", "json"], input=result.stdout, capture_output=True, timeout=60, cwd=ROOT)
    assert produced.returncode == 0, produced.stderr
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(copy, p, 0) for p in range(PARTITIONS)])
        copied: list[Sent] = []
        deadline = time.monotonic() + 30
        while len(copied) < len(sent) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                copied.append(Sent(message.partition(), message.offset(), message.timestamp()[1], message.key(),
                                   message.value(), list(message.headers() or [])))
    finally:
        consumer.close()
    assert sorted(copied) == sent


def test_against_the_librdkafka_mock_cluster(mock_cluster):
    """A second Kafka implementation: an assigned partition read from an offset (ListOffsets, Fetch),
    then a group member reading every partition and committing (the group protocol, OffsetCommit)."""
    topic = f"cc-mock-{uuid.uuid4().hex[:8]}"  # the mock creates it with 4 partitions
    sent = produce(mock_cluster.bootstrap, topic, [(i % 4, None if i == 1 else f"k{i}".encode(), f"v{i}".encode(),
                                                    [("h", b"1")] if i % 2 else []) for i in range(8)])
    props = {"print.key": "true", "print.partition": "true", "print.offset": "true", "print.headers": "true", "print.timestamp": "true"}
    formatting = [arg for name, value in props.items() for arg in ("--property", f"{name}={value}")]
    result = run_consumer("--bootstrap-server", mock_cluster.bootstrap, "--topic", topic, "--partition", "1", "--offset", "1",
                          "--max-messages", "1", *formatting)
    assert result.returncode == 0, result.stderr
    assert lines_of(result.stdout) == [kafka_line(r, props) for r in sent if (r.partition, r.offset) == (1, 1)]
    assert result.stderr.decode().splitlines() == ["Processed a total of 1 messages"]

    group = f"cc-mock-{uuid.uuid4().hex[:8]}"
    result = run_consumer("--bootstrap-server", mock_cluster.bootstrap, "--topic", topic, "--group", group, "--from-beginning",
                          "--max-messages", str(len(sent)), *formatting)
    assert result.returncode == 0, result.stderr
    assert sorted(lines_of(result.stdout)) == sorted(kafka_line(r, props) for r in sent)
    assert result.stderr.decode().splitlines() == [f"Processed a total of {len(sent)} messages"]
    assert committed(mock_cluster.bootstrap, group, topic, 4) == [2, 2, 2, 2]


def test_reader_going_away(broker, records):
    """Kafka prints "Unable to write to standard out, closing consumer." and stops when stdout closes."""
    topic, sent = records
    read_end, write_end = os.pipe()
    os.close(read_end)
    process = subprocess.run([sys.executable, "-m", "kcli", "console-consumer", "--bootstrap-server", broker.bootstrap,
                              "--topic", topic, "--from-beginning"], stdout=write_end, stderr=subprocess.PIPE, timeout=60, cwd=ROOT)
    os.close(write_end)
    assert process.returncode == 0, process.stderr
    lines = process.stderr.decode().splitlines()
    assert lines[0] == "Unable to write to standard out, closing consumer."
    assert re.fullmatch(r"Processed a total of \d+ messages", lines[-1]) and len(lines) == 2, lines
