"""An idempotent confluent-kafka producer keeps producing while the broker restarts, gracefully
(SIGTERM) or by a crash (SIGKILL). Afterwards every acknowledged record must be in the log
exactly once, at the offset it was acknowledged with, and each partition must hold its
per-partition sequence numbers in order with no gap and no duplicate."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
RECORDS_PER_PHASE = 1200  # before, during and after the restart
PACE_EVERY = 10  # records between two short polls, so production spans the restart


class AcknowledgingProducer:
    """An idempotent producer that records every acknowledged (partition, offset, value)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acknowledged: list[tuple[int, int, bytes]] = []
        self.failures: list[str] = []
        self.client_errors: list[str] = []
        self.next_sequence = [0] * PARTITIONS
        self.producer = Producer({
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 90000,
            "retry.backoff.ms": 50,
            "retry.backoff.max.ms": 500,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "error_cb": lambda err: self.client_errors.append(str(err)),
        })

    def _on_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.failures.append(f"partition {msg.partition()} value {msg.value()!r}: {err}")
        else:
            self.acknowledged.append((msg.partition(), msg.offset(), msg.value()))

    def produce(self, count: int) -> int:
        """Produce ``count`` records round-robin over the partitions, pacing with short polls."""
        for i in range(count):
            partition = i % PARTITIONS
            value = f"{partition}:{self.next_sequence[partition]:07d}".encode()
            self.producer.produce(self.topic, value=value, partition=partition, on_delivery=self._on_delivery)
            self.next_sequence[partition] += 1
            if i % PACE_EVERY == 0:
                self.producer.poll(0.01)
        return count

    def wait_for_acks(self, at_least: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acknowledged) + len(self.failures) < at_least:
            assert time.monotonic() < deadline, f"only {len(self.acknowledged)} of {at_least} records acknowledged"
            self.producer.poll(0.05)

    def flush(self) -> None:
        remaining = self.producer.flush(120)
        assert remaining == 0, f"{remaining} records never acknowledged; client errors: {self.client_errors[-5:]}"

    def close(self) -> None:
        self.producer.close()


def read_everything(bootstrap: str, topic: str, timeout: float = 60.0) -> dict[int, list[tuple[int, bytes]]]:
    """(offset, value) of every record of every partition, reading until each reports its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "interop-unused", "enable.auto.commit": False,
                         "enable.partition.eof": True, "auto.offset.reset": "error", "fetch.wait.max.ms": 100})
    records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        while len(at_end) < PARTITIONS:
            assert time.monotonic() < deadline, f"read timed out at {({p: len(r) for p, r in records.items()})}"
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, f"consumer error: {msg.error()}"
                at_end.add(msg.partition())
                continue
            at_end.discard(msg.partition())
            records[msg.partition()].append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    return records


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=10).values():
        future.result(timeout=20)


@pytest.mark.parametrize("crash", [False, True], ids=["graceful", "kill-9"])
def test_every_acknowledged_record_survives_a_restart_exactly_once(own_broker, topic, crash):
    create_topic(own_broker.bootstrap, topic)
    producer = AcknowledgingProducer(own_broker.bootstrap, topic)
    restart_errors: list[BaseException] = []

    def restart() -> None:
        try:
            own_broker.restart(crash=crash)
        except BaseException as exc:  # reported by the test thread below
            restart_errors.append(exc)

    produced = producer.produce(RECORDS_PER_PHASE)
    producer.wait_for_acks(RECORDS_PER_PHASE // 2)
    restarter = threading.Thread(target=restart)
    restarter.start()
    produced += producer.produce(RECORDS_PER_PHASE)
    restarter.join(60)
    assert not restarter.is_alive() and not restart_errors, f"restart failed: {restart_errors}"
    produced += producer.produce(RECORDS_PER_PHASE)
    producer.flush()
    producer.close()

    assert sum(" started (" in line for line in own_broker.log_lines) == 2
    recovered = [line for line in own_broker.log_lines if "Recovering unflushed segment" in line and topic in line]
    # only a crash leaves segments to recover; a graceful stop marks the shutdown clean
    assert bool(recovered) == crash, recovered
    assert producer.failures == []
    assert len(producer.acknowledged) == produced
    stored = read_everything(own_broker.bootstrap, topic)
    for partition in range(PARTITIONS):
        expected = [f"{partition}:{seq:07d}".encode() for seq in range(producer.next_sequence[partition])]
        offsets = [offset for offset, _ in stored[partition]]
        assert offsets == list(range(len(offsets))), f"partition {partition}: offsets not contiguous"
        values = [value for _, value in stored[partition]]
        duplicates = len(values) - len(set(values))
        assert duplicates == 0, f"partition {partition}: {duplicates} records stored twice"
        assert values == expected, f"partition {partition}: stored {len(values)} records, sent {len(expected)}"
        acknowledged = sorted((o, v) for p, o, v in producer.acknowledged if p == partition)
        assert acknowledged == stored[partition], f"partition {partition}: acknowledged offsets differ from the log"
    assert own_broker.stop() == 0
