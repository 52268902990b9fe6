"""Topic configs the broker honours on produce and storage, seen through a real client and the files."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kcli.storage.file_records import FileRecords
from kcli.storage.records import CompressionType
from broker_process import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("topic-configs")).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _create(admin, name: str, config: dict[str, str], partitions: int = 1) -> None:
    admin.create_topics([NewTopic(name, partitions, 1, config=config)])[name].result(15)


def _produce(broker, topic: str, values: list[bytes], **config) -> list[tuple[KafkaError | None, int]]:
    results = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "retries": 0, **config})
    for value in values:
        producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: results.append((err, msg.offset())))
    assert producer.flush(15) == 0
    return results


def _consume(broker, topic: str, count: int):
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "configs", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages = []
    deadline = time.monotonic() + 15
    try:
        while len(messages) < count and time.monotonic() < deadline:
            messages.extend(m for m in consumer.consume(count, 0.5) if m.error() is None)
    finally:
        consumer.close()
    return messages


def _stored_codecs(broker, topic: str) -> set[CompressionType]:
    segment = broker.log_dir / f"{topic}-0" / "00000000000000000000.log"
    records = FileRecords.open(segment)
    try:
        return {batch.compression for _, batch in records.batches()}
    finally:
        records.close()


def test_topic_compression_type_recompresses_on_the_broker(broker, admin):
    _create(admin, "zstd-topic", {"compression.type": "zstd"})
    values = [b"value-%d" % i * 20 for i in range(200)]
    assert all(err is None for err, _ in _produce(broker, "zstd-topic", values, **{"compression.type": "none"}))
    assert _stored_codecs(broker, "zstd-topic") == {CompressionType.ZSTD}
    assert [m.value() for m in _consume(broker, "zstd-topic", 200)] == values


def test_producer_compression_is_kept_when_the_topic_says_producer(broker, admin):
    _create(admin, "producer-codec", {})
    assert all(err is None for err, _ in _produce(broker, "producer-codec", [b"x" * 100] * 50, **{"compression.type": "lz4"}))
    assert _stored_codecs(broker, "producer-codec") == {CompressionType.LZ4}


def test_log_append_time_replaces_the_producer_timestamp(broker, admin):
    _create(admin, "append-time", {"message.timestamp.type": "LogAppendTime"})
    _create(admin, "create-time", {})
    before = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for topic in ("append-time", "create-time"):
        producer.produce(topic, value=b"v", partition=0, timestamp=1_000_000)
    assert producer.flush(15) == 0
    (appended,) = _consume(broker, "append-time", 1)
    kind, timestamp = appended.timestamp()
    assert kind == TIMESTAMP_LOG_APPEND_TIME and timestamp >= before
    (created,) = _consume(broker, "create-time", 1)
    assert created.timestamp() == (TIMESTAMP_CREATE_TIME, 1_000_000)


def test_min_insync_replicas_refuses_acks_all_but_not_acks_one(broker, admin):
    _create(admin, "needs-two", {"min.insync.replicas": "2"})
    ((error, _),) = _produce(broker, "needs-two", [b"v"], acks="all")
    assert error is not None and error.code() == KafkaError.NOT_ENOUGH_REPLICAS
    ((error, offset),) = _produce(broker, "needs-two", [b"v"], acks=1)
    assert error is None and offset == 0


def test_max_message_bytes_refuses_larger_batches(broker, admin):
    _create(admin, "small-messages", {"max.message.bytes": "1000"})
    ((error, _),) = _produce(broker, "small-messages", [b"x" * 5000], **{"compression.type": "none"})
    assert error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE
    ((error, offset),) = _produce(broker, "small-messages", [b"x" * 100])
    assert error is None and offset == 0


def test_compacted_topic_refuses_records_without_keys(broker, admin):
    _create(admin, "compacted", {"cleanup.policy": "compact"})
    ((error, _),) = _produce(broker, "compacted", [b"no key"])
    assert error is not None and error.code() == KafkaError.INVALID_RECORD


def test_idempotent_producer_gets_consecutive_offsets(broker, admin):
    _create(admin, "idempotent", {})
    results = _produce(broker, "idempotent", [b"%d" % i for i in range(1000)], **{"enable.idempotence": True, "retries": 5})
    assert [offset for err, offset in results if err is None] == list(range(1000))
