"""``kcli delete-records`` against a kcli broker: Kafka 3.9's DeleteRecordsCommand lines and
messages (tools/src/main/java/org/apache/kafka/tools/DeleteRecordsCommand.java), with the records
written and the log start offsets read back through confluent-kafka."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kcli.java_compat import hash_map_order, topic_partition_hash

pytestmark = pytest.mark.timeout(120)

RECORDS = {0: 5, 1: 3, 2: 0}


@pytest.fixture(scope="module")
def topic(broker) -> str:
    name = f"dr-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, len(RECORDS), 1)], operation_timeout=10)[name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for partition, count in RECORDS.items():
        for i in range(count):
            producer.produce(name, f"v{i}".encode(), partition=partition)
    assert producer.flush(10) == 0
    return name


def offsets_file(tmp_path, partitions, **extra) -> str:
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"partitions": partitions, **extra}))
    return str(path)


def low_watermark(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[0]
    finally:
        consumer.close()


def java_hash_order(partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Kafka prints the results from a HashMap<TopicPartition, ...>."""
    return hash_map_order(partitions, lambda tp: topic_partition_hash(*tp))


def test_deletes_below_the_offsets_and_prints_the_low_watermarks(kcli, broker, topic, tmp_path):
    path = offsets_file(tmp_path, [{"topic": topic, "partition": 0, "offset": 3}, {"topic": topic, "partition": 1, "offset": -1}], version=1)
    result = kcli("delete-records", "--bootstrap-server", broker.bootstrap, "--offset-json-file", path)
    assert (result.returncode, result.stderr) == (0, ""), result
    expected = {(topic, 0): f"partition: {topic}-0\tlow_watermark: 3", (topic, 1): f"partition: {topic}-1\tlow_watermark: 3"}
    assert result.lines == [
        "Executing records delete operation",
        "Records delete operation completed:",
        *(expected[tp] for tp in java_hash_order(list(expected))),
    ]
    assert low_watermark(broker.bootstrap, topic, 0) == 3
    assert low_watermark(broker.bootstrap, topic, 1) == 3  # -1: up to the high watermark


def test_a_partition_that_fails_is_its_error_line(kcli, broker, topic, tmp_path):
    path = offsets_file(tmp_path, [{"topic": topic, "partition": 2, "offset": 10}])  # no version: 1
    result = kcli("delete-records", "--bootstrap-server", broker.bootstrap, "--offset-json-file", path)
    assert result.returncode == 1
    assert result.lines[:2] == ["Executing records delete operation", "Records delete operation completed:"]
    assert result.lines[2].startswith(f"partition: {topic}-2\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: ")


def test_duplicate_partitions_are_refused_before_anything_is_deleted(kcli, broker, topic, tmp_path):
    before = low_watermark(broker.bootstrap, topic, 0)
    path = offsets_file(tmp_path, [{"topic": topic, "partition": 0, "offset": 4}, {"topic": topic, "partition": 0, "offset": 5}], version=1)
    result = kcli("delete-records", "--bootstrap-server", broker.bootstrap, "--offset-json-file", path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [f"Offset json file contains duplicate topic partitions: {topic}-0"]
    assert low_watermark(broker.bootstrap, topic, 0) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "The input string is not a valid JSON"),
        ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
        ('{"version": 1}', "Missing partitions field"),
        ('{"partitions": [{"topic": "t", "offset": 1}]}', "No such field exists: `partition`"),
        ('{"partitions": [{"topic": "t", "partition": "0", "offset": 1}]}', 'Expected `Integer` value, received "0"'),
    ],
)
def test_files_kafka_refuses(inproc, tmp_path, text, message):
    path = tmp_path / "offsets.json"
    path.write_text(text)
    result = inproc("delete-records", "--bootstrap-server", "localhost:1", "--offset-json-file", str(path))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [message]


@pytest.mark.parametrize(("args", "missing"), [(("--offset-json-file", "x.json"), "bootstrap-server"), (("--bootstrap-server", "localhost:1"), "offset-json-file")])
def test_required_arguments(inproc, args, missing):
    result = inproc("delete-records", *args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f'Error: Missing required argument "[{missing}]"'
