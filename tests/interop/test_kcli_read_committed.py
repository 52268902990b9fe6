"""kcli's consumer and ``kcli console-consumer`` reading what confluent-kafka (librdkafka)
transactional producers wrote to a real kcli broker: with isolation.level=read_committed they see
exactly the committed records (and the plain ones), never an aborted record or a marker; with
read_uncommitted, every data record. Two transactional producers interleave in the same
partitions, one committing while the other aborts, so the aborted ranges must be told apart by
producer id as Kafka's consumer does."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable
from typing import TypeVar

from confluent_kafka import Producer

from kcli.client.consumer import Consumer, TopicPartition
from kcli.client.network_client import NetworkClient
from test_confluent_kafka_transactions import TIMEOUT, create_topics, transactional_producer

T = TypeVar("T")
PARTITIONS = 2


def run(coroutine: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, TIMEOUT * 2)

    return asyncio.run(bounded())


def write_interleaved(bootstrap: str, topic: str, prefix: str) -> tuple[list[bytes], list[bytes]]:
    """Two transactional producers and a plain one writing into the same partitions, their
    transactions overlapping: (values a read_committed reader must see, values it must not)."""
    first = transactional_producer(bootstrap, f"{prefix}-first")
    second = transactional_producer(bootstrap, f"{prefix}-second")
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    visible: list[bytes] = []
    hidden: list[bytes] = []
    for round_ in range(3):
        first.begin_transaction()
        second.begin_transaction()
        for i in range(6):
            for producer, name in ((first, "first"), (second, "second")):
                value = f"{name}-{round_}-{i}".encode()
                producer.produce(topic, value=value, partition=i % PARTITIONS)
                producer.flush(TIMEOUT)
                # In round 1 the first producer aborts; otherwise the second one does.
                aborts = (name == "first") == (round_ == 1)
                (hidden if aborts else visible).append(value)
            plain_value = f"plain-{round_}-{i}".encode()
            plain.produce(topic, value=plain_value, partition=i % PARTITIONS)
            plain.flush(TIMEOUT)
            visible.append(plain_value)
        for producer, name in ((first, "first"), (second, "second")):
            if (name == "first") == (round_ == 1):
                producer.abort_transaction(TIMEOUT)
            else:
                producer.commit_transaction(TIMEOUT)
    return visible, hidden


async def kcli_read(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    """Every value kcli's consumer reads from the start to the end of each partition (the last
    stable offset for read_committed, which end_offsets answers)."""
    async with NetworkClient(bootstrap) as cluster:
        consumer = Consumer.from_properties(cluster, {"isolation.level": isolation, "auto.offset.reset": "earliest"})
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        values: list[bytes] = []
        reached = False
        deadline = time.monotonic() + TIMEOUT
        try:
            while not reached and time.monotonic() < deadline:
                values += [r.value for r in await consumer.poll(0.5)]
                reached = all([await consumer.position(tp) >= ends[tp] for tp in tps])
        finally:
            await consumer.close(commit=False)
        assert reached, f"did not reach the end offsets {ends}"
        return values


def console_consumer(bootstrap: str, topic: str, *flags: str) -> list[bytes]:
    result = subprocess.run(
        [sys.executable, "-m", "kcli", "console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
         "--from-beginning", "--timeout-ms", "3000", *flags],
        capture_output=True, timeout=120,
    )
    assert b"Traceback" not in result.stderr, result.stderr
    return result.stdout.splitlines()


def test_kcli_consumer_reads_only_committed_records_with_read_committed(broker, unique_topic):
    topic = unique_topic()
    create_topics(broker.bootstrap, {topic: PARTITIONS})
    visible, hidden = write_interleaved(broker.bootstrap, topic, unique_topic("txn"))
    assert sorted(run(kcli_read(broker.bootstrap, topic, "read_committed"))) == sorted(visible)
    assert sorted(run(kcli_read(broker.bootstrap, topic, "read_uncommitted"))) == sorted(visible + hidden)


def test_console_consumer_isolation_level_filters_aborted_records(broker, unique_topic):
    topic = unique_topic()
    create_topics(broker.bootstrap, {topic: PARTITIONS})
    visible, hidden = write_interleaved(broker.bootstrap, topic, unique_topic("txn"))
    assert sorted(console_consumer(broker.bootstrap, topic, "--isolation-level", "read_committed")) == sorted(visible)
    assert sorted(console_consumer(broker.bootstrap, topic, "--consumer-property", "isolation.level=read_committed")) == sorted(visible)
    # Kafka's default is read_uncommitted: every data record, no marker.
    assert sorted(console_consumer(broker.bootstrap, topic)) == sorted(visible + hidden)


def test_read_committed_stops_at_an_open_transaction(broker, unique_topic):
    """Records after the first offset of an open transaction wait, even committed ones of
    another producer, until that transaction ends: the last stable offset."""
    topic = unique_topic()
    create_topics(broker.bootstrap, {topic: 1})
    open_one = transactional_producer(broker.bootstrap, unique_topic("open"))
    other = transactional_producer(broker.bootstrap, unique_topic("other"))
    other.begin_transaction()
    other.produce(topic, value=b"before", partition=0)
    other.commit_transaction(TIMEOUT)
    open_one.begin_transaction()
    open_one.produce(topic, value=b"pending", partition=0)
    open_one.flush(TIMEOUT)
    other.begin_transaction()
    other.produce(topic, value=b"after", partition=0)
    other.commit_transaction(TIMEOUT)

    assert console_consumer(broker.bootstrap, topic, "--isolation-level", "read_committed") == [b"before"]
    open_one.abort_transaction(TIMEOUT)
    assert console_consumer(broker.bootstrap, topic, "--isolation-level", "read_committed") == [b"before", b"after"]
