"""kafka-python against a real kcli broker: KafkaProducer with keys, headers and every codec,
KafkaConsumer without a group (assign, seek, seek_to_beginning, seek_to_end), and
KafkaAdminClient (create, describe, grow and delete topics). Records read back are compared
with what was sent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

Sent = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]


@pytest.fixture(scope="module")
def admin(broker: Any) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20000)
    yield client
    client.close()


def new_producer(broker: Any, **config: Any) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=20000, **config)


def new_consumer(broker: Any) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                         auto_offset_reset="none", fetch_max_wait_ms=100, request_timeout_ms=30000)


def create_topic(admin: KafkaAdminClient, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    response = admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1, "configs": configs or {}}})
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [(name, 0)]


def send_all(producer: KafkaProducer, topic: str, records: list[Sent]) -> list[tuple[int, int]]:
    """Send every record and wait for each acknowledgement; returns (partition, offset) per record."""
    futures = [producer.send(topic, value=value, key=key, headers=headers, partition=partition)
               for partition, key, value, headers in records]
    producer.flush(timeout=30)
    acknowledged = []
    for future in futures:
        metadata = future.get(timeout=30)
        acknowledged.append((metadata.partition, metadata.offset))
    return acknowledged


def read_until(consumer: KafkaConsumer, counts: dict[TopicPartition, int], timeout: float = 30.0) -> dict[TopicPartition, list[Any]]:
    """Poll until each partition gave ``counts[tp]`` records; the log end must then be exactly there."""
    received: dict[TopicPartition, list[Any]] = {tp: [] for tp in counts}
    deadline = time.monotonic() + timeout
    while any(len(received[tp]) < n for tp, n in counts.items()):
        assert time.monotonic() < deadline, f"timed out: {({tp.partition: len(r) for tp, r in received.items()})}"
        for tp, records in consumer.poll(timeout_ms=200).items():
            received[tp].extend(records)
    return received


def sample(partitions: int, count: int) -> list[Sent]:
    records: list[Sent] = []
    for i in range(count):
        value = None if i % 10 == 7 else f"value-{i}|".encode() * (1 + i % 5)
        key = None if i % 9 == 4 and value is not None else f"key-{i}".encode()  # the client needs one of them
        headers = [("seq", str(i).encode()), ("dup", b"1"), ("dup", b"2")] if i % 2 else []
        records.append((i % partitions, key, value, headers))
    return records


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_with_codec(broker, admin, topic, stored_batches, codec):
    create_topic(admin, topic, partitions=2)
    sent = sample(2, 300)
    producer = new_producer(broker, compression_type=codec, linger_ms=20, acks="all")
    try:
        acknowledged = send_all(producer, topic, sent)
    finally:
        producer.close(timeout=10)

    consumer = new_consumer(broker)
    try:
        tps = [TopicPartition(topic, p) for p in (0, 1)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        received = read_until(consumer, {tp: 150 for tp in tps})
        assert consumer.end_offsets(tps) == {tp: 150 for tp in tps}
    finally:
        consumer.close()

    for tp in tps:
        expected = [(key, value, headers) for partition, key, value, headers in sent if partition == tp.partition]
        assert [(r.key, r.value, list(r.headers)) for r in received[tp]] == expected
        assert [r.offset for r in received[tp]] == list(range(150))
        assert sorted(o for p, o in acknowledged if p == tp.partition) == list(range(150))
        assert {b["compresscodec"] for b in stored_batches(topic, tp.partition)} == {codec or "none"}


def test_consumer_seek_positions(broker, admin, topic):
    create_topic(admin, topic)
    producer = new_producer(broker)
    try:
        send_all(producer, topic, [(0, f"k{i}".encode(), f"v{i}".encode(), []) for i in range(40)])
    finally:
        producer.close(timeout=10)

    tp = TopicPartition(topic, 0)
    consumer = new_consumer(broker)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 25)
        tail = read_until(consumer, {tp: 15})[tp]
        assert [(r.offset, r.value) for r in tail] == [(i, f"v{i}".encode()) for i in range(25, 40)]

        consumer.seek_to_end(tp)
        assert consumer.position(tp) == 40

        consumer.seek_to_beginning(tp)
        head = read_until(consumer, {tp: 40})[tp]
        assert [(r.offset, r.key) for r in head] == [(i, f"k{i}".encode()) for i in range(40)]
    finally:
        consumer.close()


def test_admin_create_describe_grow_and_delete(broker, admin, topic):
    create_topic(admin, topic, partitions=2, configs={"retention.ms": "7654321", "cleanup.policy": "compact"})
    assert topic in admin.list_topics()

    duplicate = admin.create_topics({topic: {"num_partitions": 1}}, raise_errors=False)
    assert [(t["name"], t["error_code"]) for t in duplicate["topics"]] == [(topic, 36)]  # TOPIC_ALREADY_EXISTS

    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    overrides = described["topic"][topic]
    assert {name: entry["value"] for name, entry in overrides.items()} == {"retention.ms": "7654321", "cleanup.policy": "compact"}
    assert {entry["config_source"] for entry in overrides.values()} == {"DYNAMIC_TOPIC_CONFIG"}

    response = admin.create_partitions({topic: 4})
    assert [(r.name, r.error_code) for r in response.results] == [(topic, 0)]
    (description,) = admin.describe_topics([topic])
    assert sorted(p["partition_index"] for p in description["partitions"]) == [0, 1, 2, 3]
    assert all(p["leader_id"] == 0 for p in description["partitions"])

    producer = new_producer(broker)
    try:
        assert send_all(producer, topic, [(3, b"k", b"in-new-partition", [])]) == [(3, 0)]
    finally:
        producer.close(timeout=10)

    deleted = admin.delete_topics([topic])
    assert [(t["name"], t["error_code"]) for t in deleted["topics"]] == [(topic, 0)]
    assert topic not in admin.list_topics()
    again = admin.delete_topics([topic], raise_errors=False)
    assert [(t["name"], t["error_code"]) for t in again["topics"]] == [(topic, 3)]  # UNKNOWN_TOPIC_OR_PARTITION


def test_the_broker_is_taken_for_kafka_3_9(admin):
    # kafka-python infers a broker's release from the versions ApiVersions advertises: Fetch v17
    # is its mark of Kafka 3.9, ListOffsets v10 would be 4.0's.
    assert admin.get_broker_version_data(0).broker_version == (3, 9)
