"""One consumer-group member that keeps an at-least-once journal, run as its own process by
``test_groups_at_least_once.py``.

    python accounting_member.py CLIENT BOOTSTRAP GROUP TOPIC SESSION_TIMEOUT_MS MAX_BATCH PACE_MS

CLIENT is ``confluent`` or ``kafka-python``. The member subscribes to TOPIC (``roundrobin``, auto
commit off) and handles one batch of at most MAX_BATCH records at a time, sleeping PACE_MS between
batches. Its journal is its stdout, one JSON line each, flushed as it is written:

- ``{"assigned": [partitions]}`` / ``{"revoked": [partitions]}`` from the rebalance callbacks;
- ``{"processed": [[partition, offset, value], ...]}`` for a batch, before its commit is sent;
- ``{"committed": {partition: next offset}}`` once a synchronous commit of those offsets succeeded;
- ``{"commit_failed": {partition: next offset}, "error": text}`` when it did not;
- ``{"paused": true}`` and ``{"closed": true}`` (see below).

A revoke commits whatever was processed and not yet committed before the partitions go. Lines on
stdin: ``fast`` drops the pacing and takes larger batches; ``pause`` makes the member stop right
after journaling its next non-empty batch, before committing it, and wait there to be killed;
``close`` leaves the group cleanly (exit 0).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

POLL_SECONDS = 0.1
FAST_BATCH = 100


def journal(**entry: Any) -> None:
    print(json.dumps(entry), flush=True)


class Controls:
    """Commands from stdin, watched in a thread; the consuming thread only reads the flags."""

    def __init__(self) -> None:
        self.fast = threading.Event()
        self.pause = threading.Event()
        self.close = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        flags = {"fast": self.fast, "pause": self.pause, "close": self.close}
        for line in sys.stdin:
            if line.strip() in flags:
                flags[line.strip()].set()
            if self.close.is_set():
                return
        self.close.set()


class Ledger:
    """What this member processed and has not yet committed: partition -> next offset."""

    def __init__(self, commit) -> None:
        self._commit = commit
        self.pending: dict[int, int] = {}

    def process(self, records: list[tuple[int, int, str]]) -> None:
        journal(processed=[list(record) for record in records])
        for partition, offset, _ in records:
            self.pending[partition] = max(self.pending.get(partition, 0), offset + 1)

    def commit(self, partitions: set[int] | None = None) -> None:
        offsets = {p: n for p, n in self.pending.items() if partitions is None or p in partitions}
        if not offsets:
            return
        try:
            self._commit(offsets)
        except Exception as e:  # the journal says what failed; the test decides what that means
            journal(commit_failed=offsets, error=repr(e))
        else:
            journal(committed=offsets)
        for partition in offsets:
            del self.pending[partition]


def run(controls: Controls, poll_batch, ledger: Ledger, max_batch: int, pace: float) -> None:
    """The loop both clients share: a batch, its journal, its commit, the pacing."""
    while not controls.close.is_set():
        fast = controls.fast.is_set()
        records = poll_batch(FAST_BATCH if fast else max_batch)
        if not records:
            continue
        ledger.process(records)
        if controls.pause.is_set():
            journal(paused=True)
            controls.close.wait()  # a SIGKILL is expected first; never commit the batch
            os._exit(3)
        ledger.commit()
        if not fast:
            time.sleep(pace)


def run_confluent(bootstrap: str, group: str, topic: str, session_ms: int, controls: Controls, max_batch: int, pace: float) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": "roundrobin",
        "session.timeout.ms": session_ms, "heartbeat.interval.ms": max(session_ms // 5, 100),
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })

    def commit(offsets: dict[int, int]) -> None:
        result = consumer.commit(offsets=[TopicPartition(topic, p, n) for p, n in offsets.items()], asynchronous=False)
        errors = [tp for tp in result if tp.error is not None]
        if errors:
            raise RuntimeError(f"commit errors: {errors}")

    ledger = Ledger(commit)
    assigned: set[int] = set()

    def on_assign(_consumer, partitions) -> None:
        assigned.update(tp.partition for tp in partitions)
        journal(assigned=sorted(tp.partition for tp in partitions))

    def on_revoke(_consumer, partitions) -> None:
        revoked = {tp.partition for tp in partitions}
        ledger.commit(revoked)
        assigned.difference_update(revoked)
        journal(revoked=sorted(revoked))

    def poll_batch(size: int) -> list[tuple[int, int, str]]:
        messages = consumer.consume(num_messages=size, timeout=POLL_SECONDS)
        # A message fetched before a revoke served in the same call is not this member's to process.
        return [(m.partition(), m.offset(), m.value().decode()) for m in messages if m.error() is None and m.partition() in assigned]

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    try:
        run(controls, poll_batch, ledger, max_batch, pace)
    finally:
        consumer.close()


def run_kafka_python(bootstrap: str, group: str, topic: str, session_ms: int, controls: Controls, max_batch: int, pace: float) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, partition_assignment_strategy=[RoundRobinPartitionAssignor],
        session_timeout_ms=session_ms, heartbeat_interval_ms=max(session_ms // 5, 100), auto_offset_reset="earliest",
        enable_auto_commit=False,
    )

    def commit(offsets: dict[int, int]) -> None:
        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(n, "", -1) for p, n in offsets.items()})

    ledger = Ledger(commit)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked) -> None:
            ledger.commit({tp.partition for tp in revoked})
            journal(revoked=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned) -> None:
            journal(assigned=sorted(tp.partition for tp in assigned))

    def poll_batch(size: int) -> list[tuple[int, int, str]]:
        batches = consumer.poll(timeout_ms=int(POLL_SECONDS * 1000), max_records=size)
        return [(r.partition, r.offset, r.value.decode()) for records in batches.values() for r in records]

    consumer.subscribe(topics=[topic], listener=Listener())
    try:
        run(controls, poll_batch, ledger, max_batch, pace)
    finally:
        consumer.close()


RUNNERS = {"confluent": run_confluent, "kafka-python": run_kafka_python}


def main(argv: list[str]) -> int:
    client, bootstrap, group, topic, session_ms, max_batch, pace_ms = argv[:7]
    controls = Controls()
    RUNNERS[client](bootstrap, group, topic, int(session_ms), controls, int(max_batch), int(pace_ms) / 1000)
    journal(closed=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
