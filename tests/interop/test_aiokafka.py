"""aiokafka against a real kcli broker: AIOKafkaProducer (keys, headers, codecs, batches of
concurrent sends) and AIOKafkaConsumer without a group (assign, seek, seek_to_beginning). Each
test runs its own event loop with asyncio.run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

Sent = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]


def create_topic(broker: Any, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10).values():
        future.result(timeout=20)


async def send_all(producer: AIOKafkaProducer, topic: str, records: list[Sent]) -> list[tuple[int, int]]:
    """Send every record concurrently (so the producer batches them) and wait for each ack."""
    futures = [await producer.send(topic, value=value, key=key, partition=partition, headers=headers)
               for partition, key, value, headers in records]
    metadata = await asyncio.wait_for(asyncio.gather(*futures), timeout=30)
    return [(m.partition, m.offset) for m in metadata]


async def read_until(consumer: AIOKafkaConsumer, counts: dict[TopicPartition, int], timeout: float = 30.0) -> dict[TopicPartition, list[Any]]:
    received: dict[TopicPartition, list[Any]] = {tp: [] for tp in counts}

    async def drain() -> None:
        while any(len(received[tp]) < n for tp, n in counts.items()):
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                received[tp].extend(records)

    await asyncio.wait_for(drain(), timeout)
    return received


def new_consumer(broker: Any) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                            auto_offset_reset="none", fetch_max_wait_ms=100)


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume(broker, topic, stored_batches, codec):
    create_topic(broker, topic, 3)
    sent: list[Sent] = [
        (i % 3, f"key-{i}".encode(), None if i % 8 == 2 else f"value-{i}".encode() * (1 + i % 4),
         [("n", str(i).encode()), ("tag", b"x")] if i % 3 else [])
        for i in range(240)
    ]

    async def scenario() -> tuple[list[tuple[int, int]], dict[TopicPartition, list[Any]], dict[TopicPartition, int]]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec, linger_ms=20, acks="all")
        await producer.start()
        try:
            acknowledged = await send_all(producer, topic, sent)
        finally:
            await producer.stop()
        consumer = new_consumer(broker)
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(3)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            received = await read_until(consumer, {tp: 80 for tp in tps})
            ends = await consumer.end_offsets(tps)
        finally:
            await consumer.stop()
        return acknowledged, received, ends

    acknowledged, received, ends = asyncio.run(scenario())

    for tp, records in received.items():
        expected = [(key, value, headers) for partition, key, value, headers in sent if partition == tp.partition]
        assert [(r.key, r.value, list(r.headers)) for r in records] == expected
        assert [r.offset for r in records] == list(range(80))
        assert sorted(o for p, o in acknowledged if p == tp.partition) == list(range(80))
        assert ends[tp] == 80
        assert {b["compresscodec"] for b in stored_batches(topic, tp.partition)} == {codec or "none"}


def test_seek_and_send_and_wait(broker, topic):
    create_topic(broker, topic, 1)
    tp = TopicPartition(topic, 0)

    async def scenario() -> tuple[list[int], list[Any], list[Any], int]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        try:
            offsets = []
            for i in range(20):
                metadata = await producer.send_and_wait(topic, value=f"v{i}".encode(), key=f"k{i}".encode())
                offsets.append(metadata.offset)
        finally:
            await producer.stop()
        consumer = new_consumer(broker)
        await consumer.start()
        try:
            consumer.assign([tp])
            consumer.seek(tp, 12)
            tail = (await read_until(consumer, {tp: 8}))[tp]
            position = await consumer.position(tp)
            await consumer.seek_to_beginning(tp)
            head = (await read_until(consumer, {tp: 20}))[tp]
        finally:
            await consumer.stop()
        return offsets, tail, head, position

    offsets, tail, head, position = asyncio.run(scenario())

    assert offsets == list(range(20))
    assert [(r.offset, r.key, r.value) for r in tail] == [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(12, 20)]
    assert position == 20
    assert [(r.offset, r.value) for r in head] == [(i, f"v{i}".encode()) for i in range(20)]
