"""Log compaction through the broker, written and read back with confluent-kafka.

A compacted topic with tiny segments and a low dirty ratio gets keys with updates and tombstones;
the broker's cleaner thread compacts it on its own (log.cleaner.backoff.ms=100), and a consumer
reading from the beginning then sees the last record of each key only, at the offset it was
written at. Tombstones stay for delete.retention.ms after the cleaning that first kept them.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import start_broker

pytestmark = pytest.mark.timeout(180)

KEYS = [f"key-{i}".encode() for i in range(10)]


@pytest.fixture
def cleaning_broker(tmp_path: Path):
    process = start_broker(tmp_path / "broker", {"log.cleaner.backoff.ms": "100"})
    yield process
    process.stop()


def create_compacted(bootstrap: str, topic: str, delete_retention_ms: int) -> None:
    configs = {
        "cleanup.policy": "compact",
        "segment.bytes": "2048",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": str(delete_retention_ms),
    }
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(timeout=30)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> list[int]:
    """Each record acknowledged before the next is sent; their offsets."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    offsets: list[int] = []

    def delivered(err, msg) -> None:
        if err is not None:
            raise KafkaException(err)
        offsets.append(msg.offset())

    for key, value in records:
        producer.produce(topic, value, key, partition=0, on_delivery=delivered)
        assert producer.flush(30) == 0
    return offsets


def read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-reader", "enable.auto.commit": False})
    try:
        tp = TopicPartition(topic, 0)
        low, high = consumer.get_watermark_offsets(tp, timeout=10)
        if high == low:
            return []
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        records = []
        deadline = time.monotonic() + 30
        while (not records or records[-1][0] < high - 1) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                records.append((message.offset(), message.key(), message.value()))
        return records
    finally:
        consumer.close()


def cleaned_up_to(log_dir: Path, topic: str) -> int:
    """The offset cleaner-offset-checkpoint holds for partition 0 of ``topic`` (-1 when none)."""
    path = log_dir / "cleaner-offset-checkpoint"
    if not path.exists():
        return -1
    for line in path.read_text().splitlines()[2:]:
        name, partition, offset = line.split()
        if name == topic and partition == "0":
            return int(offset)
    return -1


def wait_cleaned_past(log_dir: Path, topic: str, offset: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while cleaned_up_to(log_dir, topic) <= offset:
        if time.monotonic() > deadline:
            pytest.fail(f"{topic} was not cleaned past offset {offset} within {timeout:g} s")
        time.sleep(0.1)


def filler(count: int, tag: str) -> list[tuple[bytes, bytes]]:
    """Records on one key of their own, so that the records before them leave the active segment."""
    return [(b"filler", f"{tag}-{i}".encode() * 20) for i in range(count)]


def test_only_the_last_record_of_each_key_is_left_at_its_offset(cleaning_broker, topic):
    bootstrap = cleaning_broker.bootstrap
    create_compacted(bootstrap, topic, delete_retention_ms=86_400_000)
    updates = [(key, f"{key.decode()}-v{version}".encode()) for version in range(5) for key in KEYS]
    offsets = produce(bootstrap, topic, updates + [(KEYS[3], None)])
    last_offset_of = {key: offset for (key, _), offset in zip(updates + [(KEYS[3], None)], offsets)}
    produce(bootstrap, topic, filler(30, "a"))

    wait_cleaned_past(cleaning_broker.log_dir, topic, offsets[-1])

    records = [r for r in read_all(bootstrap, topic) if r[1] != b"filler"]
    assert [key for _, key, _ in records] == sorted(KEYS, key=lambda k: last_offset_of[k])
    for offset, key, value in records:
        assert offset == last_offset_of[key]
        assert value == (None if key == KEYS[3] else f"{key.decode()}-v4".encode())


def test_a_tombstone_goes_once_delete_retention_has_passed(cleaning_broker, topic):
    bootstrap = cleaning_broker.bootstrap
    create_compacted(bootstrap, topic, delete_retention_ms=0)
    first = produce(bootstrap, topic, [(key, b"v1") for key in KEYS] + [(KEYS[0], None)])
    produce(bootstrap, topic, filler(30, "a"))
    wait_cleaned_past(cleaning_broker.log_dir, topic, first[-1])
    # The first cleaning keeps the tombstone and stamps its delete horizon; a later one removes it.
    second = produce(bootstrap, topic, filler(30, "b"))
    wait_cleaned_past(cleaning_broker.log_dir, topic, second[-1] - 30)
    produce(bootstrap, topic, filler(30, "c"))

    deadline = time.monotonic() + 60
    while True:
        keys = {key for _, key, _ in read_all(bootstrap, topic)}
        if KEYS[0] not in keys or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert KEYS[0] not in keys
    assert set(KEYS[1:]) <= keys


def test_a_record_without_a_key_is_refused_on_a_compacted_topic(cleaning_broker, topic):
    bootstrap = cleaning_broker.bootstrap
    create_compacted(bootstrap, topic, delete_retention_ms=86_400_000)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0})
    errors = []
    producer.produce(topic, b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].name() == "INVALID_RECORD"
    assert read_all(bootstrap, topic) == []
