"""At-least-once accounting over a scripted sequence of rebalances is exact.

One group of confluent-kafka and kafka-python members (``accounting_member.py``, one process each,
auto commit off) consumes a 6-partition topic while its membership changes under it: one member,
a second joins, a third joins, one leaves cleanly, one is killed, a new one joins, that one is
killed, another joins, and the survivors drain the topic. Every member journals each batch it
processes before committing it, and each commit once it succeeded; a revoke commits what was
processed before the partitions go. The members are paced, so every step happens mid-stream.

A member is killed at a known point: told to ``pause``, it journals its next batch and stops
before committing it; only then is it sent SIGKILL. So what each killed member processed and
never committed is known exactly: the records in its journal not covered by a later successful
commit of its own. From the journals alone, the accounting must then be exact:

- every produced record was processed, and nothing else (each value matches its offset);
- a record was processed more than once only if a killed member left it uncommitted, and then
  exactly once by each killed member that left it so and once by the member that committed it
  (a new owner resumes from the last committed offset). Clean leaves and rebalances add none;
- the group's committed offsets, read back after the survivors leave, are the end offsets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess
from conftest import start_broker

pytestmark = pytest.mark.timeout(150)

GROUP_OVERRIDES = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}
SESSION_TIMEOUT_MS = 4000
PARTITIONS = 6
RECORDS_PER_PARTITION = 400
# At most MAX_BATCH records per PACE_MS per member until the drain: the topic cannot run dry
# before the last membership change, however fast the machine.
MAX_BATCH = 3
PACE_MS = 100
MEMBER_SCRIPT = Path(__file__).with_name("accounting_member.py")

Record = tuple[int, int]  # (partition, offset)


class Member:
    """A member process and its journal, read line by line as it is written."""

    def __init__(self, name: str, client: str, bootstrap: str, group: str, topic: str) -> None:
        self.name = name
        self.client = client
        self.process = subprocess.Popen(
            [sys.executable, str(MEMBER_SCRIPT), client, bootstrap, group, topic, str(SESSION_TIMEOUT_MS), str(MAX_BATCH), str(PACE_MS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.journal: list[dict] = []
        self.assignment: set[int] = set()
        self.batches_since_assignment = 0
        self.paused = threading.Event()
        self.killed = False
        self.errors: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            entry = json.loads(line)
            self.journal.append(entry)
            if "assigned" in entry:
                self.assignment |= set(entry["assigned"])
                self.batches_since_assignment = 0
            elif "revoked" in entry:
                self.assignment -= set(entry["revoked"])
            elif "processed" in entry:
                self.batches_since_assignment += 1
            elif entry.get("paused"):
                self.paused.set()

    def _drain_stderr(self) -> None:
        for line in self.process.stderr:
            self.errors.append(line.rstrip())

    def send(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        self.send("close")
        assert self.process.wait(60) == 0, f"{self.name} did not close cleanly:\n" + "\n".join(self.errors[-20:])
        self._reader.join(10)

    def pause_and_kill(self) -> None:
        """SIGKILL once the member has journaled a batch it will never commit."""
        self.send("pause")
        assert self.paused.wait(30), f"{self.name} never paused:\n" + "\n".join(self.errors[-20:])
        self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
            self.killed = True
        self._reader.join(10)

    def processed(self) -> list[tuple[int, int, str]]:
        return [tuple(record) for entry in list(self.journal) for record in entry.get("processed", ())]

    def __repr__(self) -> str:
        return f"{self.name}({self.client}){sorted(self.assignment)}"


@pytest.fixture
def group_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = start_broker(tmp_path / "broker", GROUP_OVERRIDES)
    yield process
    process.stop()


@pytest.fixture
def members() -> Iterator[Callable[..., Member]]:
    started: list[Member] = []

    def start(*args) -> Member:
        member = Member(*args)
        started.append(member)
        return member

    yield start
    for member in started:
        if member.process.poll() is None:
            member.process.kill()
            member.process.wait(10)


def produce(bootstrap: str, topic: str) -> dict[Record, str]:
    """Every record of the topic, keyed by where the broker says it stored it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    stored: dict[Record, str] = {}

    def delivered(error, message) -> None:
        assert error is None, error
        stored[(message.partition(), message.offset())] = message.value().decode()

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for i in range(RECORDS_PER_PARTITION):
        for partition in range(PARTITIONS):
            producer.produce(topic, value=f"{partition}:{i:04d}".encode(), partition=partition, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert len(stored) == PARTITIONS * RECORDS_PER_PARTITION
    return stored


def committed_offsets(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)}
    finally:
        consumer.close()


def wait_until(condition: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what()
        time.sleep(0.05)


def wait_until_partitioned(group: list[Member], timeout: float = 60.0) -> None:
    """Until the members own disjoint partitions covering the topic and each has processed a batch
    of its current assignment."""

    def settled() -> bool:
        owned = [m.assignment for m in group]
        return (sum(map(len, owned)) == PARTITIONS and set().union(*owned) == set(range(PARTITIONS))
                and all(m.assignment and m.batches_since_assignment for m in group))

    wait_until(settled, timeout, lambda: f"assignments never settled: {group}")


def unique_processed(started: list[Member]) -> set[Record]:
    return {(p, o) for m in started for p, o, _ in m.processed()}


def committed_ends(started: list[Member]) -> dict[int, int]:
    """The highest offset each partition's journals say was committed."""
    ends: dict[int, int] = {}
    for m in started:
        for entry in list(m.journal):
            for partition, next_offset in entry.get("committed", {}).items():
                ends[int(partition)] = max(ends.get(int(partition), 0), next_offset)
    return ends


def uncommitted(member: Member) -> set[Record]:
    """The records a member processed that no later successful commit of its own covers."""
    pending: set[Record] = set()
    for entry in member.journal:
        pending.update((p, o) for p, o, _ in entry.get("processed", ()))
        for partition, next_offset in entry.get("committed", {}).items():
            pending -= {(p, o) for p, o in pending if p == int(partition) and o < next_offset}
    return pending


def test_at_least_once_accounting_over_rebalances_is_exact(group_broker, members, unique_topic):
    topic = unique_topic()
    group = f"accounting-{topic}"
    bootstrap = group_broker.bootstrap
    produced = produce(bootstrap, topic)
    end_offsets = {p: RECORDS_PER_PARTITION for p in range(PARTITIONS)}
    started: list[Member] = []

    def join(name: str, client: str) -> Member:
        member = members(name, client, bootstrap, group, topic)
        started.append(member)
        return member

    def mid_stream(step: str) -> None:
        done = len(unique_processed(started))
        assert 0 < done < len(produced), f"{step}: {done} of {len(produced)} records processed; the step is not mid-stream"

    a = join("a", "confluent")
    wait_until_partitioned([a])
    b = join("b", "kafka-python")
    wait_until_partitioned([a, b])
    c = join("c", "confluent")
    wait_until_partitioned([a, b, c])

    mid_stream("b leaves")
    b.close()
    wait_until_partitioned([a, c])

    mid_stream("c is killed")
    c.pause_and_kill()
    wait_until_partitioned([a])  # after c's session times out
    d = join("d", "kafka-python")
    wait_until_partitioned([a, d])

    mid_stream("d is killed")
    d.pause_and_kill()
    wait_until_partitioned([a])
    e = join("e", "confluent")
    wait_until_partitioned([a, e])

    mid_stream("drain")
    for survivor in (a, e):
        survivor.send("fast")
    wait_until(lambda: committed_ends(started) == end_offsets, 60,
               lambda: f"commits reached {committed_ends(started)}, not the end offsets {end_offsets}: {started}")
    a.close()
    e.close()

    # The accounting, from the journals alone.
    failures = [(m.name, entry) for m in started for entry in m.journal if "commit_failed" in entry]
    assert not failures, f"commits failed: {failures}"

    counts: Counter[Record] = Counter()
    processed_by: dict[Record, list[str]] = {}
    for m in started:
        for p, o, value in m.processed():
            assert produced.get((p, o)) == value, f"{m.name} processed {value!r} at {p}/{o}, stored there: {produced.get((p, o))!r}"
            counts[(p, o)] += 1
            processed_by.setdefault((p, o), []).append(m.name)
    missing = set(produced) - set(counts)
    assert not missing, f"{len(missing)} records never processed, e.g. {sorted(missing)[:10]}"

    killed = [m for m in started if m.killed]
    assert [m.name for m in killed] == ["c", "d"]
    expected_duplicates: Counter[Record] = Counter()
    for m in started:
        left = uncommitted(m)
        if m.killed:
            last_batch = {(p, o) for p, o, _ in next(entry for entry in reversed(m.journal) if "processed" in entry)["processed"]}
            assert left and left == last_batch, f"{m.name}: uncommitted {sorted(left)}, last batch {sorted(last_batch)}"
            expected_duplicates.update(left)
        else:
            assert not left, f"{m.name} left without committing {sorted(left)}"
    duplicates = Counter({record: n - 1 for record, n in counts.items() if n > 1})
    unexplained = sorted(set(duplicates - expected_duplicates))
    assert duplicates == expected_duplicates, (
        f"unexplained duplicates (record: members): {[(r, processed_by[r]) for r in unexplained][:20]}; "
        f"uncommitted records not read again: {sorted(set(expected_duplicates - duplicates))}"
    )

    assert committed_offsets(bootstrap, topic, group) == end_offsets
