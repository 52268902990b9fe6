"""confluent-kafka (librdkafka) against a real kcli broker: Producer, Consumer with assign/seek
(no consumer group), and AdminClient. Every check compares what was read back with what was
sent: contents, order, keys, headers, null values, offsets and timestamps."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from kcli.storage.compression import CompressionType, compress

Headers = list[tuple[str, bytes | None]]
ADMIN_TIMEOUT = 20.0


@dataclass(frozen=True)
class Outgoing:
    value: bytes | None
    key: bytes | None = None
    headers: Headers = field(default_factory=list)
    partition: int = -1
    timestamp: int = 0


@dataclass(frozen=True)
class Received:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int


# ---------------------------------------------------------------------------------------------
# helpers


def produce(bootstrap: str, topic: str, records: list[Outgoing], **config: Any) -> list[tuple[int, int, bytes | None]]:
    """Produce every record and wait for all delivery reports; returns (partition, offset, value)
    of each acknowledged record in acknowledgement order. Any delivery error fails the test."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **config})
    acknowledged: list[tuple[int, int, bytes | None]] = []
    failures: list[str] = []

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            failures.append(f"{msg.partition()}: {err}")
        else:
            acknowledged.append((msg.partition(), msg.offset(), msg.value()))

    for record in records:
        kwargs: dict[str, Any] = {"value": record.value, "key": record.key, "on_delivery": on_delivery}
        if record.headers:
            kwargs["headers"] = record.headers
        if record.partition >= 0:
            kwargs["partition"] = record.partition
        if record.timestamp:
            kwargs["timestamp"] = record.timestamp
        producer.produce(topic, **kwargs)
        producer.poll(0)
    remaining = producer.flush(60)
    assert remaining == 0, f"{remaining} records still undelivered"
    assert not failures, f"delivery failures: {failures[:10]}"
    assert len(acknowledged) == len(records)
    return acknowledged


def read_all(bootstrap: str, topic: str, partitions: list[int], *, start: int = OFFSET_BEGINNING,
             timeout: float = 30.0) -> dict[int, list[Received]]:
    """Read the given partitions from ``start`` to their end (every partition reporting EOF)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "interop-unused",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
        "fetch.wait.max.ms": 100,
    })
    received: dict[int, list[Received]] = {p: [] for p in partitions}
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        consumer.assign([TopicPartition(topic, p, start) for p in partitions])
        while len(at_end) < len(partitions):
            assert time.monotonic() < deadline, f"read timed out; at end: {sorted(at_end)}, counts: " + str(
                {p: len(r) for p, r in received.items()})
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, f"consumer error: {msg.error()}"
                at_end.add(msg.partition())
                continue
            at_end.discard(msg.partition())
            received[msg.partition()].append(Received(
                msg.partition(), msg.offset(), msg.key(), msg.value(), list(msg.headers() or []), msg.timestamp()[1]))
    finally:
        consumer.close()
    return received


def result_of(futures: dict[Any, Any]) -> dict[Any, Any]:
    return {key: future.result(timeout=ADMIN_TIMEOUT) for key, future in futures.items()}


def error_of(future: Any) -> KafkaError:
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=ADMIN_TIMEOUT)
    return raised.value.args[0]


def create_topic(admin: AdminClient, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    result_of(admin.create_topics([NewTopic(name, partitions, 1, config=config or {})], operation_timeout=10))


def topic_config(admin: AdminClient, name: str) -> dict[str, ConfigEntry]:
    (entries,) = result_of(admin.describe_configs([ConfigResource(ResourceType.TOPIC, name)])).values()
    return entries


def sample_records(count: int) -> list[Outgoing]:
    """Keys, null keys, null values, empty values and headers (repeated keys, null header values)."""
    records = []
    for i in range(count):
        key = None if i % 7 == 3 else f"key-{i % 13}".encode()
        value = None if i % 11 == 5 else (b"" if i % 17 == 8 else f"value-{i}-".encode() * (1 + i % 9))
        headers: Headers = []
        if i % 3 == 0:
            headers = [("h1", f"a{i}".encode()), ("h2", None), ("h1", b"again")]
        elif i % 3 == 1:
            headers = [("trace", os.urandom(8))]
        records.append(Outgoing(value, key, headers))
    return records


def as_sent(records: list[Outgoing]) -> list[tuple[bytes | None, bytes | None, Headers]]:
    return [(r.key, r.value, r.headers) for r in records]


def as_read(records: list[Received]) -> list[tuple[bytes | None, bytes | None, Headers]]:
    return [(r.key, r.value, r.headers) for r in records]


@pytest.fixture(scope="module")
def admin(broker: Any) -> Iterator[AdminClient]:
    yield AdminClient({"bootstrap.servers": broker.bootstrap})


# ---------------------------------------------------------------------------------------------
# producing and consuming


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_round_trips_keys_values_nulls_and_headers(broker, admin, topic, stored_batches, codec):
    create_topic(admin, topic)
    sent = sample_records(400)

    acknowledged = produce(broker.bootstrap, topic, sent, **{"compression.type": codec, "linger.ms": 50})

    (read,) = read_all(broker.bootstrap, topic, [0]).values()
    assert as_read(read) == as_sent(sent)
    assert [r.offset for r in read] == list(range(len(sent)))
    assert sorted(offset for _, offset, _ in acknowledged) == list(range(len(sent)))
    batches = stored_batches(topic, 0)
    assert sum(int(b["count"]) for b in batches) == len(sent)
    assert len(batches) < len(sent)  # the producer really batched, so the codec compressed many records
    # librdkafka compresses a batch only when that makes it smaller: rd_kafka_msgset_writer_compress
    # (src/rdkafka_msgset_writer.c) sends the records uncompressed when the compressed data is
    # larger, as it is for a lone small record that linger.ms leaves in a batch of its own.
    codecs = {b["compresscodec"] for b in batches}
    assert codec in codecs and codecs <= {codec, "none"}
    if codec != "none":
        for batch in (b for b in batches if b["compresscodec"] == "none"):
            records = stored_records(broker, topic, batch)
            assert len(compress(CompressionType.from_name(codec), records)) + CODEC_FRAMING_SLACK >= len(records), batch


# How much kcli's framing of a codec (xerial snappy's header and block lengths, the LZ4 frame's
# options) may differ in size from librdkafka's for the same records.
CODEC_FRAMING_SLACK = 32
BATCH_HEADER_BYTES = 61  # RecordBatch v2: baseOffset .. recordCount


def stored_records(broker: Any, topic: str, batch: dict[str, str]) -> bytes:
    """The records section of a stored batch, as the producer sent it (compression.type=producer
    stores client batches as they came)."""
    (segment,) = sorted((broker.log_dir / f"{topic}-0").glob("*.log"))
    position, size = int(batch["position"]), int(batch["size"])
    with open(segment, "rb") as f:
        f.seek(position)
        data = f.read(size)
    return data[BATCH_HEADER_BYTES:]


def test_consumer_seeks_within_a_partition(broker, admin, topic):
    create_topic(admin, topic)
    sent = [Outgoing(f"v{i}".encode(), f"k{i}".encode()) for i in range(50)]
    produce(broker.bootstrap, topic, sent)

    (from_offset_30,) = read_all(broker.bootstrap, topic, [0], start=30).values()
    assert [(r.offset, r.key, r.value) for r in from_offset_30] == [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(30, 50)]

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "interop-unused",
                         "enable.auto.commit": False, "auto.offset.reset": "error"})
    try:
        consumer.assign([TopicPartition(topic, 0, 45)])
        first = _poll_one(consumer)
        assert (first.offset(), first.value()) == (45, b"v45")
        consumer.seek(TopicPartition(topic, 0, 7))
        after_seek = _poll_one(consumer)
        assert (after_seek.offset(), after_seek.value()) == (7, b"v7")
    finally:
        consumer.close()


def _poll_one(consumer: Consumer, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None:
            assert msg.error() is None, f"consumer error: {msg.error()}"
            return msg
    raise AssertionError("no record within the timeout")


def test_one_mib_record(broker, admin, topic):
    create_topic(admin, topic, config={"max.message.bytes": str(3 * 1024 * 1024)})
    big = os.urandom(1024 * 1024)
    sent = [Outgoing(b"small-before", b"a"), Outgoing(big, b"big", [("size", b"1MiB")]), Outgoing(b"small-after", b"c")]

    produce(broker.bootstrap, topic, sent, **{"message.max.bytes": 4 * 1024 * 1024, "linger.ms": 0})

    (read,) = read_all(broker.bootstrap, topic, [0]).values()
    assert as_read(read) == as_sent(sent)
    assert [r.offset for r in read] == [0, 1, 2]


def test_record_over_the_topic_limit_is_rejected_by_the_broker(broker, admin, topic):
    create_topic(admin, topic, config={"max.message.bytes": str(100 * 1024)})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.max.bytes": 4 * 1024 * 1024, "retries": 0})
    errors: list[KafkaError] = []
    producer.produce(topic, value=os.urandom(200 * 1024), on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE

    produce(broker.bootstrap, topic, [Outgoing(b"fits")])
    (read,) = read_all(broker.bootstrap, topic, [0]).values()
    assert [(r.offset, r.value) for r in read] == [(0, b"fits")]


def test_topic_with_100_partitions(broker, admin, topic):
    create_topic(admin, topic, partitions=100)
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 100
    sent = [Outgoing(f"p{p}-r{r}".encode(), f"k{p}".encode(), partition=p) for r in range(3) for p in range(100)]

    acknowledged = produce(broker.bootstrap, topic, sent)

    assert sorted((p, o) for p, o, _ in acknowledged) == [(p, r) for p in range(100) for r in range(3)]
    read = read_all(broker.bootstrap, topic, list(range(100)), timeout=60)
    for p in range(100):
        assert [(r.offset, r.key, r.value) for r in read[p]] == [(i, f"k{p}".encode(), f"p{p}-r{i}".encode()) for i in range(3)]


def test_idempotent_producer_writes_each_record_once_in_order(broker, admin, topic, stored_batches):
    create_topic(admin, topic, partitions=3)
    sent = [Outgoing(f"{i % 3}:{i // 3}".encode(), partition=i % 3) for i in range(1500)]

    acknowledged = produce(broker.bootstrap, topic, sent, **{
        "enable.idempotence": True, "retries": 1000, "retry.backoff.ms": 50,
        "max.in.flight.requests.per.connection": 5, "linger.ms": 5, "batch.num.messages": 50,
    })

    read = read_all(broker.bootstrap, topic, [0, 1, 2])
    for p in range(3):
        expected = [f"{p}:{seq}".encode() for seq in range(500)]
        assert [r.value for r in read[p]] == expected
        assert [r.offset for r in read[p]] == list(range(500))
        assert sorted((o, v) for q, o, v in acknowledged if q == p) == list(enumerate(expected))
        batches = stored_batches(topic, p)
        producer_ids = {b["producerId"] for b in batches}
        assert len(producer_ids) == 1 and int(producer_ids.pop()) >= 0
        # sequence numbers continue from batch to batch: nothing was lost or written twice
        assert [int(b["baseSequence"]) for b in batches] == [int(b["baseOffset"]) for b in batches]
        assert [int(b["lastSequence"]) for b in batches] == [int(b["lastOffset"]) for b in batches]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker, admin, topic, acks):
    create_topic(admin, topic, partitions=2)
    sent = [Outgoing(f"{acks}-{i}".encode(), f"k{i}".encode(), partition=i % 2) for i in range(200)]

    acknowledged = produce(broker.bootstrap, topic, sent, acks=acks)

    read = read_all(broker.bootstrap, topic, [0, 1])
    for p in (0, 1):
        assert [(r.key, r.value) for r in read[p]] == [(s.key, s.value) for s in sent if s.partition == p]
        assert [r.offset for r in read[p]] == list(range(100))
        if acks != "0":  # with acks=0 the broker answers nothing, so no offsets are known
            assert sorted((o, v) for q, o, v in acknowledged if q == p) == [(r.offset, r.value) for r in read[p]]


# ---------------------------------------------------------------------------------------------
# AdminClient


def test_create_topics_validate_only_then_for_real_with_config(broker, admin, topic):
    config = {"retention.ms": "123456789", "cleanup.policy": "compact", "segment.bytes": "1048576"}
    result_of(admin.create_topics([NewTopic(topic, 3, 1, config=config)], validate_only=True))
    assert topic not in admin.list_topics(timeout=10).topics

    create_topic(admin, topic, partitions=3, config=config)

    metadata = admin.list_topics(timeout=10).topics[topic]
    assert sorted(metadata.partitions) == [0, 1, 2]
    assert all(p.leader == 0 and p.replicas == [0] and p.isrs == [0] for p in metadata.partitions.values())
    entries = topic_config(admin, topic)
    for name, value in config.items():
        assert entries[name].value == value
        assert entries[name].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["max.message.bytes"].value == "1048588"
    assert entries["max.message.bytes"].is_default

    again = admin.create_topics([NewTopic(topic, 1, 1)])[topic]
    assert error_of(again).code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_create_topics_rejects_bad_requests(broker, admin, unique_topic):
    bad_config, bad_replication = unique_topic("config"), unique_topic("rf")
    futures = admin.create_topics([
        NewTopic(bad_config, 1, 1, config={"cleanup.policy": "sideways"}),
        NewTopic(bad_replication, 1, 3),
        NewTopic("bad/name", 1, 1),
    ])

    codes = {name: error_of(future).code() for name, future in futures.items()}

    assert codes == {
        bad_config: KafkaError.INVALID_CONFIG,
        bad_replication: KafkaError.INVALID_REPLICATION_FACTOR,
        "bad/name": KafkaError.TOPIC_EXCEPTION,
    }
    assert not {bad_config, bad_replication, "bad/name"} & set(admin.list_topics(timeout=10).topics)


def test_describe_configs_of_topic_and_broker(broker, admin, topic):
    create_topic(admin, topic, config={"retention.bytes": "987654"})

    entries = topic_config(admin, topic)
    assert entries["retention.bytes"].value == "987654"
    assert not entries["retention.bytes"].is_default
    assert entries["cleanup.policy"].value == "delete" and entries["cleanup.policy"].is_default
    assert entries["compression.type"].value == "producer"

    (broker_entries,) = result_of(admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")])).values()
    assert broker_entries["num.partitions"].value == "1"
    assert broker_entries["auto.create.topics.enable"].value == "true"
    assert broker_entries["log.dirs"].value == str(broker.log_dir)


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_alter_configs_replaces_the_topic_overrides(broker, admin, topic):
    create_topic(admin, topic, config={"cleanup.policy": "compact", "retention.ms": "1000000"})

    result_of(admin.alter_configs([ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "2000000"})]))

    entries = topic_config(admin, topic)
    assert entries["retention.ms"].value == "2000000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    # the non-incremental form replaces every override: cleanup.policy went back to its default
    assert entries["cleanup.policy"].value == "delete" and entries["cleanup.policy"].is_default


def test_incremental_alter_configs_sets_and_deletes(broker, admin, topic):
    create_topic(admin, topic, config={"cleanup.policy": "compact", "retention.ms": "1000000"})

    result_of(admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "3000000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("max.message.bytes", "2000000", incremental_operation=AlterConfigOpType.SET),
    ])]))

    entries = topic_config(admin, topic)
    assert entries["retention.ms"].value == "3000000"
    assert entries["max.message.bytes"].value == "2000000" and not entries["max.message.bytes"].is_default
    assert entries["cleanup.policy"].value == "delete" and entries["cleanup.policy"].is_default

    bad = admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "not-a-number", incremental_operation=AlterConfigOpType.SET)])])
    (future,) = bad.values()
    assert error_of(future).code() == KafkaError.INVALID_CONFIG
    assert topic_config(admin, topic)["retention.ms"].value == "3000000"


def test_create_partitions_grows_the_topic(broker, admin, topic):
    create_topic(admin, topic, partitions=2)

    result_of(admin.create_partitions([NewPartitions(topic, 5)], validate_only=True))
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 2
    result_of(admin.create_partitions([NewPartitions(topic, 5)]))

    assert sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions) == [0, 1, 2, 3, 4]
    produce(broker.bootstrap, topic, [Outgoing(f"to-{p}".encode(), partition=p) for p in range(5)])
    read = read_all(broker.bootstrap, topic, list(range(5)))
    assert {p: [(r.offset, r.value) for r in read[p]] for p in range(5)} == {p: [(0, f"to-{p}".encode())] for p in range(5)}
    shrink = admin.create_partitions([NewPartitions(topic, 3)])[topic]
    assert error_of(shrink).code() == KafkaError.INVALID_PARTITIONS


def test_list_offsets_earliest_latest_and_by_timestamp(broker, admin, topic):
    create_topic(admin, topic)
    base = 1_700_000_000_000
    sent = [Outgoing(f"t{i}".encode(), timestamp=base + i * 1000) for i in range(10)]
    produce(broker.bootstrap, topic, sent)
    (read,) = read_all(broker.bootstrap, topic, [0]).values()
    assert [(r.value, r.timestamp) for r in read] == [(s.value, s.timestamp) for s in sent]

    tp = TopicPartition(topic, 0)

    def offset_for(spec: OffsetSpec) -> tuple[int, int]:
        (info,) = result_of(admin.list_offsets({tp: spec})).values()
        return info.offset, info.timestamp

    assert offset_for(OffsetSpec.earliest())[0] == 0
    assert offset_for(OffsetSpec.latest())[0] == 10
    assert offset_for(OffsetSpec.for_timestamp(base + 5500)) == (6, base + 6000)
    assert offset_for(OffsetSpec.for_timestamp(base)) == (0, base)
    assert offset_for(OffsetSpec.for_timestamp(base + 60_000))[0] == -1
    assert offset_for(OffsetSpec.max_timestamp()) == (9, base + 9000)


def test_delete_records_moves_the_log_start(broker, admin, topic):
    create_topic(admin, topic)
    produce(broker.bootstrap, topic, [Outgoing(f"r{i}".encode()) for i in range(10)])

    (deleted,) = result_of(admin.delete_records([TopicPartition(topic, 0, 4)])).values()

    assert deleted.low_watermark == 4
    (earliest,) = result_of(admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})).values()
    assert earliest.offset == 4
    (read,) = read_all(broker.bootstrap, topic, [0]).values()
    assert [(r.offset, r.value) for r in read] == [(i, f"r{i}".encode()) for i in range(4, 10)]


def test_delete_topics(broker, admin, topic):
    create_topic(admin, topic, partitions=2)
    produce(broker.bootstrap, topic, [Outgoing(b"doomed", partition=1)])

    result_of(admin.delete_topics([topic], operation_timeout=10))

    assert topic not in admin.list_topics(timeout=10).topics
    _wait_until(lambda: not any(broker.log_dir.glob(f"{topic}-*")), "partition directories removed")
    again = admin.delete_topics([topic])[topic]
    assert error_of(again).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        time.sleep(0.1)


def test_describe_cluster(broker, admin):
    cluster = admin.describe_cluster().result(timeout=ADMIN_TIMEOUT)

    assert cluster.cluster_id and cluster.cluster_id == admin.list_topics(timeout=10).cluster_id
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, "127.0.0.1", broker.port)]
    assert cluster.controller.id == 0


# Kafka 3.9 without an authorizer answers every operation AclEntry.supportedOperations lists for the
# resource type (AuthHelper.authorizedOperations).
CLUSTER_OPERATIONS = {"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE"}
TOPIC_OPERATIONS = {"READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
GROUP_OPERATIONS = {"READ", "DESCRIBE", "DELETE"}


def _names(operations: list[Any] | None) -> set[str] | None:
    return None if operations is None else {op.name for op in operations}


def test_describe_cluster_and_topics_report_kafkas_authorized_operations(broker, admin, topic):
    create_topic(admin, topic)

    cluster = admin.describe_cluster(include_authorized_operations=True).result(timeout=ADMIN_TIMEOUT)
    described = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(timeout=ADMIN_TIMEOUT)

    assert _names(cluster.authorized_operations) == CLUSTER_OPERATIONS
    assert _names(described.authorized_operations) == TOPIC_OPERATIONS
    assert admin.describe_cluster().result(timeout=ADMIN_TIMEOUT).authorized_operations is None


def test_describe_consumer_groups_reports_kafkas_authorized_operations(broker, admin, topic):
    create_topic(admin, topic)
    group = f"{topic}-group"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    finally:
        consumer.close()

    described = admin.describe_consumer_groups([group], include_authorized_operations=True)[group].result(timeout=ADMIN_TIMEOUT)

    assert _names(described.authorized_operations) == GROUP_OPERATIONS
