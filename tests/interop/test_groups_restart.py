"""Committed offsets survive a broker restart, graceful (SIGTERM) or a crash (SIGKILL): a group
that consumed and committed part of a topic on one broker run resumes exactly where it committed on
the next, with another client library, with no record read twice and none skipped."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer

from broker_process import BrokerProcess
from conftest import start_broker

pytestmark = pytest.mark.timeout(180)

OVERRIDES = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "10",
    "group.initial.rebalance.delay.ms": "0",
}
PARTITIONS = 3
RECORDS = 90
FIRST_RUN = 45


@pytest.fixture
def group_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = start_broker(tmp_path / "broker", OVERRIDES)
    yield process
    process.stop()


def produce(bootstrap: str, topic: str) -> set[bytes]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = {f"{i % PARTITIONS}:{i:04d}".encode() for i in range(RECORDS)}
    for value in sorted(values):
        producer.produce(topic, value=value, partition=int(value.split(b":")[0]))
    assert producer.flush(30) == 0
    return values


def consume_and_commit(bootstrap: str, topic: str, group: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    seen: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(seen) < count:
        assert time.monotonic() < deadline, f"consumed only {len(seen)} records"
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen.append(message.value())
    committed = consumer.commit(asynchronous=False)
    assert all(tp.error is None for tp in committed)
    consumer.close()
    return seen


def committed_offsets(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)}
    finally:
        consumer.close()


def consume_rest(bootstrap: str, topic: str, group: str, expected: int) -> list[bytes]:
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=1000)
    seen: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(seen) < expected:
            assert time.monotonic() < deadline, f"resumed with only {len(seen)} of {expected} records"
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
        # Nothing more arrives: the group did not go back before its commits.
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
    finally:
        consumer.close()
    return seen


@pytest.mark.parametrize("crash", [False, True], ids=["sigterm", "sigkill"])
def test_group_resumes_where_it_committed_after_a_restart(group_broker, unique_topic, crash):
    topic = unique_topic()
    group = f"resume-{topic}"
    values = produce(group_broker.bootstrap, topic)
    first = consume_and_commit(group_broker.bootstrap, topic, group, FIRST_RUN)
    before = committed_offsets(group_broker.bootstrap, topic, group)
    assert sum(offset for offset in before.values() if offset >= 0) == FIRST_RUN  # -1001: no commit yet

    group_broker.restart(crash=crash)

    assert committed_offsets(group_broker.bootstrap, topic, group) == before
    rest = consume_rest(group_broker.bootstrap, topic, group, RECORDS - FIRST_RUN)
    assert len(first) + len(rest) == RECORDS
    assert set(first) | set(rest) == values and not set(first) & set(rest)
