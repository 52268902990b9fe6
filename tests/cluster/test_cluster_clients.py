"""kafka-python and aiokafka against three kcli brokers on ZooKeeper: each finds the leaders of a
6-partition topic spread over the brokers, produces to all of them and reads everything back in a
consumer group, whose coordinator is whichever broker leads the group's offsets partition.
(confluent-kafka's turn is in test_zookeeper_cluster.py.)"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka import KafkaConsumer, KafkaProducer

from tests.cluster.conftest import wait_until
from tests.cluster.test_zookeeper_cluster import create_topic, leaders

PARTITIONS = 6
RECORDS = 300


def spread_topic(cluster, name: str) -> dict[int, int]:
    cluster.start(3)
    create_topic(cluster.brokers[2].bootstrap, name, PARTITIONS)
    placed = wait_until(lambda: (lambda l: l if -1 not in l.values() else None)(leaders(cluster.bootstrap, name)))
    assert sorted(set(placed.values())) == [0, 1, 2]
    return placed


def test_kafka_python_produces_to_and_consumes_from_a_topic_over_three_brokers(cluster):
    spread_topic(cluster, "kp-spread")
    # One bootstrap address: the rest of the cluster comes from Metadata.
    producer = KafkaProducer(bootstrap_servers=cluster.brokers[0].bootstrap, acks="all", linger_ms=5)
    try:
        acked = [producer.send("kp-spread", key=b"%d" % i, value=b"kp-%d" % i) for i in range(RECORDS)]
        producer.flush(30)
        partitions = {future.get(timeout=30).partition for future in acked}
    finally:
        producer.close(10)
    assert partitions == set(range(PARTITIONS))

    consumer = KafkaConsumer(
        "kp-spread",
        bootstrap_servers=cluster.brokers[1].bootstrap,
        group_id="kp-readers",
        auto_offset_reset="earliest",
        consumer_timeout_ms=1000,
    )
    values: list[bytes] = []
    try:
        wait_until(lambda: values.extend(record.value for record in consumer) or len(values) >= RECORDS, timeout=90, interval=0)
        consumer.commit()
        committed = {p: consumer.committed(tp) for p, tp in ((tp.partition, tp) for tp in consumer.assignment())}
    finally:
        consumer.close()
    assert sorted(values) == sorted(b"kp-%d" % i for i in range(RECORDS))
    assert sum(committed.values()) == RECORDS


def test_aiokafka_produces_to_and_consumes_from_a_topic_over_three_brokers(cluster):
    spread_topic(cluster, "aio-spread")

    async def scenario() -> tuple[set[int], list[bytes]]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.brokers[1].bootstrap, acks="all", linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send("aio-spread", key=b"%d" % i, value=b"aio-%d" % i) for i in range(RECORDS)]
            metadata = await asyncio.wait_for(asyncio.gather(*futures), 30)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            "aio-spread",
            bootstrap_servers=cluster.brokers[2].bootstrap,
            group_id="aio-readers",
            auto_offset_reset="earliest",
        )
        await consumer.start()
        values: list[bytes] = []
        try:

            async def drain() -> None:
                while len(values) < RECORDS:
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        values.extend(record.value for record in records)

            await asyncio.wait_for(drain(), 90)
        finally:
            await consumer.stop()
        return {m.partition for m in metadata}, values

    partitions, values = asyncio.run(scenario())
    assert partitions == set(range(PARTITIONS))
    assert sorted(values) == sorted(b"aio-%d" % i for i in range(RECORDS))
