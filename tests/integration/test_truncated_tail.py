"""Segments cut mid-batch after a clean shutdown, under a real broker and a real client.

A clean-shutdown marker must not be trusted over a last segment that no longer ends on a whole
batch: the broker warns, naming the file, recovers the log, and records written after the restart
are readable, in a topic as in ``__consumer_offsets`` (committed offsets).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kcli.storage.records import iter_batches  # noqa: E402
from tests.broker_process import BrokerProcess  # noqa: E402

GROUP = "tail-group"
TOPIC = "tail"
WARNING = "does not end on a whole, valid batch"


def _batch_starts(segment: Path) -> list[int]:
    starts, position = [], 0
    for batch in iter_batches(segment.read_bytes()):
        starts.append(position)
        position += batch.size_in_bytes
    return starts


def _consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False, "auto.offset.reset": "earliest"})


def _commit(bootstrap: str, offset: int) -> None:
    consumer = _consumer(bootstrap)
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def _committed(bootstrap: str) -> int:
    consumer = _consumer(bootstrap)
    try:
        (found,) = consumer.committed([TopicPartition(TOPIC, 0)], timeout=20)
        return found.offset
    finally:
        consumer.close()


def _read(bootstrap: str) -> list[bytes]:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "tail-reader", "enable.auto.commit": False,
        "enable.partition.eof": True, "fetch.wait.max.ms": 100,
    })
    values = []
    deadline = time.monotonic() + 30
    try:
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        while True:
            assert time.monotonic() < deadline, f"read timed out after {len(values)} records"
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                return values
            values.append(msg.value())
    finally:
        consumer.close()


def _produce(bootstrap: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    failures = []
    for value in values:
        producer.produce(TOPIC, value=value, partition=0, on_delivery=lambda err, msg: err and failures.append(err))
        producer.flush(10)
    assert producer.flush(10) == 0 and not failures, failures


@pytest.fixture
def broker(tmp_path):
    process = BrokerProcess(tmp_path / "logs", {"broker.id": "0", "offsets.topic.num.partitions": "1"}).start()
    yield process
    process.kill()


def test_records_produced_after_a_restart_on_a_segment_cut_mid_batch_are_readable(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    _produce(broker.bootstrap, [f"before-{i}".encode().ljust(500, b"x") for i in range(5)])
    broker.stop()
    segment = broker.log_dir / f"{TOPIC}-0" / "00000000000000000000.log"
    starts = _batch_starts(segment)
    os.truncate(segment, starts[3] + 100)  # within the fourth batch

    broker.start()
    assert any(WARNING in line and str(segment) in line for line in broker.log_lines), broker.log_lines[-20:]
    _produce(broker.bootstrap, [b"after-0", b"after-1"])
    assert [v[:8] for v in _read(broker.bootstrap)] == [b"before-0", b"before-1", b"before-2", b"after-0", b"after-1"]


def test_offsets_committed_after_a_restart_on_a_cut_offsets_segment_survive(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    for offset in range(1, 6):
        _commit(broker.bootstrap, offset)
    assert _committed(broker.bootstrap) == 5
    broker.stop()
    segment = broker.log_dir / "__consumer_offsets-0" / "00000000000000000000.log"
    starts = _batch_starts(segment)
    assert len(starts) >= 5, starts
    os.truncate(segment, starts[-1] + 10)  # within the batch of the last commit

    broker.start()
    assert any(WARNING in line and str(segment) in line for line in broker.log_lines), broker.log_lines[-20:]
    assert _committed(broker.bootstrap) == 4  # the commit that was cut is gone, the ones before it are not
    _commit(broker.bootstrap, 20)
    broker.stop()
    broker.start()
    assert _committed(broker.bootstrap) == 20
