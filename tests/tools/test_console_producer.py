"""``kcli console-producer`` against a real kcli broker and the librdkafka mock cluster.

What was written is read back with confluent-kafka's Consumer (an independent client): values,
keys, headers, nulls and partitions. Partitions chosen for keys are compared with librdkafka's
``murmur2_random`` partitioner; codecs and producer ids are read from the broker's log files with
``kcli dump-log-segments``. Expected texts are Kafka 3.9's (ConsoleProducer, LineMessageReader,
ErrorLoggingCallback, ProducerConfig)."""

from __future__ import annotations

import base64
import json
import re
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess
from kcli.client.partitioner import partition_for_key
from kcli.tools.record_json import record_to_json

pytestmark = pytest.mark.timeout(120)


# -- helpers -------------------------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)], operation_timeout=10)
    futures[topic].result(20)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic, timeout=10)
        if topic in metadata.topics and len(metadata.topics[topic].partitions) == partitions and not metadata.topics[topic].error:
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} did not appear")


def consume(bootstrap: str, topic: str, count: int, timeout: float = 30.0) -> list:
    """``count`` records of every partition of ``topic``, from the beginning, by partition and offset."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "console-producer-test", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50,
    })
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        consumer.assign([TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions])
        records = []
        deadline = time.monotonic() + timeout
        while len(records) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error():
                continue
            records.append(message)
        extra = consumer.poll(0.3)
        assert extra is None or extra.error(), f"more records than expected: {extra.value()!r}"
        assert len(records) == count, f"read {len(records)} of {count} records"
        return sorted(records, key=lambda m: (m.partition(), m.offset()))
    finally:
        consumer.close()


def fields(messages: list) -> list[tuple]:
    return [(m.key(), m.value(), m.headers() or []) for m in messages]


def log_dump(kcli, broker: BrokerProcess, topic: str, partition: int = 0) -> list[str]:
    path = Path(broker.log_dir) / f"{topic}-{partition}" / "00000000000000000000.log"
    result = kcli("dump-log-segments", "--files", str(path))
    assert result.returncode == 0, result
    return [line for line in result.lines if line.startswith("baseOffset:")]


def produce(kcli, bootstrap: str, topic: str, text: str, *args: str):
    return kcli("console-producer", "--bootstrap-server", bootstrap, "--topic", topic, *args, input=text)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def strict_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker that does not create topics on first use."""
    process = BrokerProcess(tmp_path_factory.mktemp("strict"), {"broker.id": "0", "num.partitions": "1", "auto.create.topics.enable": "false"}).start()
    yield process
    process.stop()


# -- lines ---------------------------------------------------------------------------------------------


def test_plain_lines_become_records_in_order(broker, kcli, unique_topic):
    topic = unique_topic()
    result = produce(kcli, broker.bootstrap, topic, "first\nsecond\r\n\nthird\rfourth")
    assert result.returncode == 0, result
    assert result.stdout == "" and result.stderr == ""
    messages = consume(broker.bootstrap, topic, 5)
    assert fields(messages) == [(None, b"first", []), (None, b"second", []), (None, b"", []), (None, b"third", []), (None, b"fourth", [])]
    assert [m.offset() for m in messages] == [0, 1, 2, 3, 4]


def test_utf8_text_and_invalid_bytes(broker, kcli, unique_topic):
    topic = unique_topic()
    result = kcli("console-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic, input="h\u00e9llo \u2603\n")
    assert result.returncode == 0, result
    assert fields(consume(broker.bootstrap, topic, 1)) == [(None, "h\u00e9llo \u2603".encode(), [])]


def test_keys_land_where_librdkafka_murmur2_random_puts_them(broker, kcli, unique_topic):
    ours, theirs = unique_topic("kcli"), unique_topic("rdkafka")
    create_topic(broker.bootstrap, ours, 6)
    create_topic(broker.bootstrap, theirs, 6)
    keys = [f"key-{i}" for i in range(60)] + ["", "21", "foobar", "\u00e9t\u00e9"]
    result = produce(kcli, broker.bootstrap, ours, "".join(f"{k}\tvalue of {k}\n" for k in keys), "--property", "parse.key=true")
    assert result.returncode == 0, result

    chosen: dict[bytes, int] = {}
    producer = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        producer.produce(theirs, b"v", key.encode(), on_delivery=lambda err, msg: chosen.__setitem__(msg.key(), msg.partition()))
    assert producer.flush(30) == 0

    messages = consume(broker.bootstrap, ours, len(keys))
    placed = {m.key(): m.partition() for m in messages}
    assert placed == chosen
    assert placed == {k.encode(): partition_for_key(k.encode(), 6) for k in keys}
    assert {m.key(): m.value() for m in messages} == {k.encode(): f"value of {k}".encode() for k in keys}
    assert len(set(placed.values())) == 6


def test_custom_key_separator_and_the_first_separator_wins(broker, kcli, unique_topic):
    topic = unique_topic()
    text = "a::b::c\n::empty key\n"
    result = produce(kcli, broker.bootstrap, topic, text, "--property", "parse.key=true", "--property", "key.separator=::")
    assert result.returncode == 0, result
    assert fields(consume(broker.bootstrap, topic, 2)) == [(b"a", b"b::c", []), (b"", b"empty key", [])]


def test_headers_keys_and_values(broker, kcli, unique_topic):
    topic = unique_topic()
    text = "h1:v1,h2:v2\tk1\tval1\nonly:one\tk2\tval\twith tab\n"
    result = produce(kcli, broker.bootstrap, topic, text, "--property", "parse.headers=true", "--property", "parse.key=true")
    assert result.returncode == 0, result
    assert fields(consume(broker.bootstrap, topic, 2)) == [
        (b"k1", b"val1", [("h1", b"v1"), ("h2", b"v2")]),
        (b"k2", b"val\twith tab", [("only", b"one")]),
    ]


def test_custom_header_separators_and_regex_separator(broker, kcli, unique_topic):
    topic = unique_topic()
    text = "a=1;b=2;;c=x=y|key#value\n"
    result = produce(
        kcli, broker.bootstrap, topic, text,
        "--property", "parse.headers=true", "--property", "parse.key=true", "--property", "headers.delimiter=|",
        "--property", "headers.separator=;+", "--property", "headers.key.separator==", "--property", "key.separator=#",
    )
    assert result.returncode == 0, result
    assert fields(consume(broker.bootstrap, topic, 1)) == [(b"key", b"value", [("a", b"1"), ("b", b"2"), ("c", b"x=y")])]


def test_null_marker_makes_keys_values_and_header_values_null(broker, kcli, unique_topic):
    topic = unique_topic()
    text = "h:NULL,g:x\tNULL\tNULL\nNULL\tk\tv\n"
    result = produce(
        kcli, broker.bootstrap, topic, text,
        "--property", "parse.headers=true", "--property", "parse.key=true", "--property", "null.marker=NULL",
    )
    assert result.returncode == 0, result
    assert fields(consume(broker.bootstrap, topic, 2)) == [(None, None, [("h", None), ("g", b"x")]), (b"k", b"v", [])]


def test_ignore_error_keeps_lines_without_separators(broker, kcli, unique_topic):
    topic = unique_topic()
    text = "k\tv\nno separator\nbare\tk2\tv2\n"
    result = produce(kcli, broker.bootstrap, topic, text, "--property", "parse.key=true", "--property", "ignore.error=true")
    assert result.returncode == 0, result
    header_topic = unique_topic("headers")
    result = produce(kcli, broker.bootstrap, header_topic, "nopair,a:b\tv\n", "--property", "parse.headers=true", "--property", "ignore.error=true")
    assert result.returncode == 0, result
    assert fields(consume(broker.bootstrap, topic, 3)) == [(b"k", b"v", []), (None, b"no separator", []), (b"bare", b"k2\tv2", [])]
    assert fields(consume(broker.bootstrap, header_topic, 1)) == [(None, b"v", [("nopair", None), ("a", b"b")])]


@pytest.mark.parametrize(
    ("text", "properties", "message"),
    [
        ("k\tv\nnokey\nlater\tv\n", ["parse.key=true"], "No key separator found on line number 2: 'nokey'"),
        ("no delimiter\n", ["parse.headers=true"], "No headers delimiter found on line number 1: 'no delimiter'"),
        ("ok:1,bad\tv\n", ["parse.headers=true"], "No header key separator found in pair 'bad' on line number 1"),
        ("N:1\tv\n", ["parse.headers=true", "null.marker=N"], "Header keys should not be equal to the null marker 'N' as they can't be null"),
    ],
)
def test_malformed_lines_stop_with_kafkas_message(broker, kcli, unique_topic, text, properties, message):
    topic = unique_topic()
    args = [arg for prop in properties for arg in ("--property", prop)]
    result = produce(kcli, broker.bootstrap, topic, text, *args)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"Error: {message}"]
    if text.startswith("k\tv"):  # the records before the bad line were sent
        assert fields(consume(broker.bootstrap, topic, 1)) == [(b"k", b"v", [])]


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        (["headers.delimiter=,"], "headers.delimiter and headers.separator may not be equal"),
        (["headers.key.separator=\t"], "headers.delimiter and headers.key.separator may not be equal"),
        (["headers.separator=:"], "headers.separator and headers.key.separator may not be equal"),
        (["null.marker=\t"], "null.marker and key.separator may not be equal"),
        (["null.marker=,"], "null.marker and headers.separator may not be equal"),
    ],
)
def test_conflicting_reader_settings(broker, kcli, unique_topic, properties, message):
    args = [arg for prop in properties for arg in ("--property", prop)]
    result = produce(kcli, broker.bootstrap, unique_topic(), "x\n", *args)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"Error: {message}"]


def test_reader_config_file_and_property_precedence(broker, kcli, unique_topic, tmp_path):
    config = tmp_path / "reader.properties"
    config.write_text("parse.key=true\nkey.separator=|\n")
    topic = unique_topic()
    result = produce(kcli, broker.bootstrap, topic, "a|b\n", "--reader-config", str(config))
    assert result.returncode == 0, result
    assert fields(consume(broker.bootstrap, topic, 1)) == [(b"a", b"b", [])]
    topic2 = unique_topic("override")
    result = produce(kcli, broker.bootstrap, topic2, "a|b#c\n", "--reader-config", str(config), "--property", "key.separator=#")
    assert result.returncode == 0, result
    assert fields(consume(broker.bootstrap, topic2, 1)) == [(b"a|b", b"c", [])]


# -- sending -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "codec"), [
    ([], "none"), (["--compression-codec"], "gzip"), (["--compression-codec", "gzip"], "gzip"),
    (["--compression-codec", "snappy"], "snappy"), (["--compression-codec=lz4"], "lz4"), (["--compression-codec", "zstd"], "zstd"),
])
def test_compression_codec_is_what_the_broker_stores(broker, kcli, unique_topic, args, codec):
    topic = unique_topic()
    lines = [f"record {i} " + "abc" * i for i in range(50)]
    result = produce(kcli, broker.bootstrap, topic, "\n".join(lines) + "\n", *args, "--timeout", "5000")
    assert result.returncode == 0, result
    assert [m.value() for m in consume(broker.bootstrap, topic, 50)] == [line.encode() for line in lines]
    batches = log_dump(kcli, broker, topic)
    assert batches and all(f"compresscodec: {codec} " in line for line in batches)


def test_compression_codec_without_value_before_another_flag(broker, kcli, unique_topic):
    topic = unique_topic()
    result = kcli("console-producer", "--compression-codec", "--bootstrap-server", broker.bootstrap, "--topic", topic, input="x\n")
    assert result.returncode == 0, result
    assert all("compresscodec: gzip " in line for line in log_dump(kcli, broker, topic))


def test_idempotent_by_default_and_not_with_acks_1(broker, kcli, unique_topic):
    topic, plain = unique_topic("idempotent"), unique_topic("acks1")
    assert produce(kcli, broker.bootstrap, topic, "a\nb\nc\n").returncode == 0
    assert produce(kcli, broker.bootstrap, plain, "a\n", "--request-required-acks", "1").returncode == 0
    (batch,) = log_dump(kcli, broker, topic)
    assert re.search(r"producerId: (\d+) producerEpoch: 0 ", batch)
    assert "baseSequence: 0 lastSequence: 2 " in batch
    (batch,) = log_dump(kcli, broker, plain)
    assert "producerId: -1 producerEpoch: -1 " in batch and "baseSequence: -1 " in batch


def test_sync_sends_every_line(broker, kcli, unique_topic):
    topic = unique_topic()
    result = produce(kcli, broker.bootstrap, topic, "".join(f"line {i}\n" for i in range(20)), "--sync")
    assert result.returncode == 0, result
    assert [m.value() for m in consume(broker.bootstrap, topic, 20)] == [f"line {i}".encode() for i in range(20)]
    assert len(log_dump(kcli, broker, topic)) == 20  # one request, one batch, per line


def test_producer_settings_from_flags_properties_and_file(broker, kcli, unique_topic, tmp_path):
    config = tmp_path / "producer.properties"
    config.write_text("linger.ms=1\nclient.id=from-file\nno.such.setting=1\n")
    topic = unique_topic()
    result = produce(
        kcli, broker.bootstrap, topic, "a\n",
        "--producer.config", str(config), "--producer-property", "acks=1", "--producer-property", "other.unknown=x",
        "--batch-size", "1000", "--max-partition-memory-bytes", "2000", "--message-send-max-retries", "5",
        "--retry-backoff-ms", "50", "--request-timeout-ms", "3000", "--metadata-expiry-ms", "60000",
        "--max-block-ms", "5000", "--max-memory-bytes", "1000000", "--socket-buffer-size", "65536",
    )
    assert result.returncode == 0, result
    assert result.stderr.splitlines() == [
        "WARN The configuration 'no.such.setting' was supplied but isn't a known config.",
        "WARN The configuration 'other.unknown' was supplied but isn't a known config.",
    ]
    assert [m.value() for m in consume(broker.bootstrap, topic, 1)] == [b"a"]
    (batch,) = log_dump(kcli, broker, topic)
    assert "producerId: -1 " in batch  # acks=1 from --producer-property: not idempotent


def test_a_batch_larger_than_the_topic_allows_is_split(broker, kcli, unique_topic):
    topic = unique_topic()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": "1000"})])[topic].result(20)
    lines = [f"line {i:03d} " + "y" * 50 for i in range(100)]
    result = produce(kcli, broker.bootstrap, topic, "\n".join(lines) + "\n", "--batch-size", "100000")
    assert result.returncode == 0, result
    assert [m.value() for m in consume(broker.bootstrap, topic, 100)] == [line.encode() for line in lines]
    batches = log_dump(kcli, broker, topic)
    assert len(batches) > 1 and all(int(re.search(r" size: (\d+) ", b).group(1)) <= 1000 for b in batches)
    sequences = [int(re.search(r"baseSequence: (\d+) ", b).group(1)) for b in batches]
    offsets = [int(re.search(r"^baseOffset: (\d+) ", b).group(1)) for b in batches]
    assert sequences == offsets  # the halves keep the sequence numbers of the batch they came from


# -- JSON ----------------------------------------------------------------------------------------------


def test_json_input_carries_keys_nulls_headers_partitions_and_timestamps(broker, kcli, unique_topic):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 3)
    binary = bytes(range(250, 256)) + b"\x00\x01"
    lines = [
        {"key": "k1", "value": "v1", "headers": [{"key": "h", "value": "x"}, {"key": "n", "value": None}], "partition": 2, "timestamp": 1600000000123},
        {"key": None, "value": None, "partition": 1},
        {"key": {"base64": base64.b64encode(binary).decode()}, "value": {"base64": base64.b64encode(binary[::-1]).decode()}, "partition": 0, "timestamp": 1500000000000},
        {"value": "only value", "partition": 2, "offset": 999, "topic": "ignored", "timestampType": "LogAppendTime"},
    ]
    text = json.dumps(lines[0]) + "\n\n" + "\n".join(json.dumps(x) for x in lines[1:]) + "\n"
    result = produce(kcli, broker.bootstrap, topic, text, "--input", "json")
    assert result.returncode == 0, result
    messages = consume(broker.bootstrap, topic, 4)
    got = [(m.partition(), m.key(), m.value(), m.headers() or []) for m in messages]
    assert got == [
        (0, binary, binary[::-1], []),
        (1, None, None, []),
        (2, b"k1", b"v1", [("h", b"x"), ("n", None)]),
        (2, None, b"only value", []),
    ]
    stamps = {m.key(): m.timestamp() for m in messages}
    assert stamps[b"k1"] == (1, 1600000000123) and stamps[binary] == (1, 1500000000000)


def test_consume_produce_round_trip_loses_nothing(broker, kcli, unique_topic):
    """Records read back and written as record_json's writer shapes them (console-consumer
    --output json) go into another topic unchanged."""
    source, target = unique_topic("source"), unique_topic("target")
    create_topic(broker.bootstrap, source, 2)
    create_topic(broker.bootstrap, target, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    originals = [
        (b"k\xff", b"\x00binary", [("h1", b"\xfe"), ("h2", None)], 0),
        (None, b"text value", [], 1),
        (b"plain", None, [("x", b"y")], 1),
    ]
    for key, value, headers, partition in originals:
        producer.produce(source, value, key, partition=partition, headers=headers, timestamp=1234567890000)
    assert producer.flush(30) == 0
    read = consume(broker.bootstrap, source, 3)
    text = "".join(
        json.dumps(record_to_json(m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.timestamp()[0] - 1, m.key(), m.value(), m.headers() or [])) + "\n"
        for m in read
    )
    result = produce(kcli, broker.bootstrap, target, text, "--input", "json")
    assert result.returncode == 0, result
    copied = consume(broker.bootstrap, target, 3)
    assert [(m.partition(), m.key(), m.value(), m.headers() or [], m.timestamp()) for m in copied] == [
        (m.partition(), m.key(), m.value(), m.headers() or [], m.timestamp()) for m in read
    ]


def test_json_partition_the_topic_lacks_is_one_line_naming_both_ways_out(broker, kcli, unique_topic):
    """The README's copy into an auto-created topic (one partition) of records from partition 2:
    one line at once, not a wait of max.block.ms for a partition that will never appear."""
    topic = unique_topic()
    text = json.dumps({"key": "a", "value": "1", "partition": 0}) + "\n" + json.dumps({"key": "b", "value": "2", "partition": 2}) + "\n"
    result = produce(kcli, broker.bootstrap, topic, text, "--input", "json")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: The record on line number 2 names partition 2, and topic {topic} has 1 partition(s): --keep-partitions (the default) "
        f"sends each record to its own partition; create {topic} with at least 3 partitions, or pass --no-keep-partitions to let "
        "the partitioner choose"
    ]
    assert [(m.partition(), m.key()) for m in consume(broker.bootstrap, topic, 1)] == [(0, b"a")]  # the lines before it were sent


def test_json_no_keep_partitions_lets_the_key_choose(broker, kcli, unique_topic):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 3)
    keys = [f"key-{i}".encode() for i in range(12)]
    text = "".join(json.dumps({"key": k.decode(), "value": "v", "partition": 7}) + "\n" for k in keys)
    result = produce(kcli, broker.bootstrap, topic, text, "--input", "json", "--no-keep-partitions")
    assert result.returncode == 0, result
    placed = {m.key(): m.partition() for m in consume(broker.bootstrap, topic, len(keys))}
    assert placed == {k: partition_for_key(k, 3) for k in keys}


def test_the_readme_copy_pipeline_ends_and_keeps_partitions(broker, kcli, unique_topic):
    """console-consumer --output json --timeout-ms | console-producer --input json, as the README
    writes it: the consumer ends on its own, and the copy has every record in its partition."""
    source, target = unique_topic("source"), unique_topic("target")
    create_topic(broker.bootstrap, source, 3)
    create_topic(broker.bootstrap, target, 3)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(9):
        producer.produce(source, f"v{i}".encode(), f"k{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    dumped = kcli("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", source, "--from-beginning", "--output", "json", "--timeout-ms", "3000")
    assert dumped.returncode == 0 and len(dumped.lines) == 9, dumped
    result = produce(kcli, broker.bootstrap, target, dumped.stdout, "--input", "json")
    assert result.returncode == 0, result
    copied = sorted((m.partition(), m.key(), m.value()) for m in consume(broker.bootstrap, target, 9))
    assert copied == sorted((i % 3, f"k{i}".encode(), f"v{i}".encode()) for i in range(9))


def test_invalid_json_line(broker, kcli, unique_topic):
    result = produce(kcli, broker.bootstrap, unique_topic(), '{"value": "ok"}\n{"key": "no value"}\n', "--input", "json")
    assert result.returncode == 1
    assert result.stderr.splitlines() == ['Error: Invalid JSON record on line number 2: a JSON record needs a "value" field']
    result = produce(kcli, broker.bootstrap, unique_topic(), "not json\n", "--input", "json")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("Error: Invalid JSON record on line number 1: ")


# -- errors --------------------------------------------------------------------------------------------


def test_unknown_topic_without_auto_creation(strict_broker, kcli, unique_topic):
    topic = unique_topic()
    result = produce(kcli, strict_broker.bootstrap, topic, "hello\n", "--max-block-ms", "1000")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: Error when sending message to topic {topic} with key: null, value: 5 bytes with error: Topic {topic} not present in metadata after 1000 ms."
    ]


def test_unreachable_broker_is_one_line(kcli, unique_topic):
    port = closed_port()
    result = kcli("console-producer", "--bootstrap-server", f"127.0.0.1:{port}", "--topic", unique_topic(), input="x\n", timeout=60)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: no bootstrap server reachable: cannot connect to 127.0.0.1:")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--compression-codec", "brotli"], 1, "Error: Invalid value brotli for configuration compression.type: String must be one of: none, gzip, snappy, lz4, zstd"),
        (["--request-required-acks", "2"], 1, "Error: Invalid value 2 for configuration acks: String must be one of: all, -1, 0, 1"),
        (["--producer-property", "batch.size=lots"], 1, "Error: Invalid value lots for configuration batch.size: Not a number of type INT"),
        (["--producer-property", "security.protocol=SASL_PLAINTEXT", "--producer-property", "sasl.mechanism=PLAIN"], 1,
         "Error: security.protocol=SASL_PLAINTEXT needs sasl.jaas.config with a username and password"),
        (["--line-reader", "com.example.MyReader"], 2, "Error: the line reader com.example.MyReader is not available: kcli reads lines with Kafka's LineMessageReader (kafka.tools.ConsoleProducer$LineMessageReader)"),
        (["--producer.config", "/no/such/file.properties"], 1, None),
    ],
)
def test_bad_settings(broker, kcli, unique_topic, args, code, message):
    result = produce(kcli, broker.bootstrap, unique_topic(), "x\n", *args)
    assert result.returncode == code
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    if message is not None:
        assert lines == [message]


def test_required_flags(kcli):
    result = kcli("console-producer", "--bootstrap-server", "127.0.0.1:9092", input="")
    assert result.returncode == 2 and result.stderr.splitlines() == ['Error: Missing required argument "[topic]"']
    result = kcli("console-producer", "--topic", "t", input="")
    assert result.returncode == 2 and result.stderr.splitlines() == ["Error: Missing required option(s) [bootstrap-server]"]
    result = kcli("console-producer", "--topic", "t", "--bootstrap-server", "nohostport:", input="")
    assert result.returncode == 2
    result = kcli("console-producer", "--topic", "t", "--no-such-flag", input="")
    assert result.returncode == 2


def test_broker_list_is_still_accepted(broker, kcli, unique_topic):
    topic = unique_topic()
    result = kcli("console-producer", "--broker-list", broker.bootstrap, "--topic", topic, input="old spelling\n")
    assert result.returncode == 0, result
    assert [m.value() for m in consume(broker.bootstrap, topic, 1)] == [b"old spelling"]


# -- the librdkafka mock cluster -----------------------------------------------------------------------


def test_against_the_mock_cluster(mock_cluster, kcli, unique_topic):
    topic = unique_topic()
    keys = [f"user-{i}" for i in range(20)]
    text = "".join(f"{k}\tv{i}\n" for i, k in enumerate(keys))
    result = produce(kcli, mock_cluster.bootstrap, topic, text, "--property", "parse.key=true", "--compression-codec", "lz4")
    assert result.returncode == 0, result
    messages = consume(mock_cluster.bootstrap, topic, 20)
    assert {m.key(): m.value() for m in messages} == {k.encode(): f"v{i}".encode() for i, k in enumerate(keys)}
    admin = AdminClient({"bootstrap.servers": mock_cluster.bootstrap})
    count = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    assert count > 1
    assert {m.key(): m.partition() for m in messages} == {k.encode(): partition_for_key(k.encode(), count) for k in keys}


def test_plain_lines_and_sync_against_the_mock_cluster(mock_cluster, kcli, unique_topic):
    topic = unique_topic()
    result = produce(kcli, mock_cluster.bootstrap, topic, "one\ntwo\nthree\n", "--sync")
    assert result.returncode == 0, result
    assert sorted(m.value() for m in consume(mock_cluster.bootstrap, topic, 3)) == [b"one", b"three", b"two"]


def test_an_endless_input_line_is_one_line_in_bounded_memory(broker, unique_topic):
    """Standard input without a line end (/dev/zero) ends with one error once the line can no
    longer make a record that fits in max.request.size, instead of growing without bound (the
    memory limit turns an unbounded read into a MemoryError)."""
    topic = unique_topic()

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (768 * 1024 * 1024, 768 * 1024 * 1024))

    with open("/dev/zero", "rb") as endless:
        result = subprocess.run(
            [sys.executable, "-m", "kcli", "console-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic],
            stdin=endless, capture_output=True, text=True, timeout=120, preexec_fn=limit_memory,
        )
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "Error: Line number 1 of the input is longer than 2097152 characters: no record made from it fits in max.request.size"
    ]
