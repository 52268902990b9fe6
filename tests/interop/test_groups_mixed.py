"""Real consumers of three client libraries in one consumer group on the kcli broker.

confluent-kafka (librdkafka), kafka-python and aiokafka all implement the classic ``range`` and
``roundrobin`` assignors, so one group can mix them; each member runs as its own process
(``group_member.py``) so that one can be killed with SIGKILL. The group must always end with every
partition owned by exactly one member: after the members join, after one leaves cleanly, and
after one crashes and its session times out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess
from conftest import start_broker

pytestmark = pytest.mark.timeout(240)

GROUP_OVERRIDES = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "10",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
}
SESSION_TIMEOUT_MS = 3000
PARTITIONS = 6
MEMBER_SCRIPT = Path(__file__).with_name("group_member.py")


class Member:
    """A group member process and the assignments it reported."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, assignor: str, instance: str | None = None) -> None:
        self.client = client
        args = [sys.executable, str(MEMBER_SCRIPT), client, bootstrap, group, topic, assignor, str(SESSION_TIMEOUT_MS)]
        if instance:
            args.append(instance)
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.assignments: list[list[int]] = []
        self.closed = False
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            message = json.loads(line)
            if "assignment" in message:
                self.assignments.append(message["assignment"])
            if message.get("closed"):
                self.closed = True

    def _drain_stderr(self) -> None:
        for line in self.process.stderr:
            self.errors.append(line.rstrip())

    @property
    def assignment(self) -> set[int]:
        return set(self.assignments[-1]) if self.assignments else set()

    def close(self, timeout: float = 60.0) -> None:
        self.process.stdin.write("close\n")
        self.process.stdin.flush()
        assert self.process.wait(timeout) == 0, "\n".join(self.errors[-20:])
        assert self.closed

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def __repr__(self) -> str:
        return f"{self.client}{sorted(self.assignment)}"


def wait_until_partitioned(members: list[Member], timeout: float = 90.0) -> None:
    """Until the members' assignments are disjoint and cover every partition."""
    deadline = time.monotonic() + timeout
    while True:
        owned = [m.assignment for m in members]
        if sum(len(a) for a in owned) == PARTITIONS and set().union(*owned) == set(range(PARTITIONS)) and all(owned):
            return
        assert time.monotonic() < deadline, f"assignments never settled: {members}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = start_broker(tmp_path_factory.mktemp("groups"), GROUP_OVERRIDES)
    yield process
    process.stop()


@pytest.fixture
def members() -> Iterator[Callable[..., Member]]:
    started: list[Member] = []

    def start(*args, **kwargs) -> Member:
        member = Member(*args, **kwargs)
        started.append(member)
        return member

    yield start
    for member in started:
        member.kill()


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


@pytest.mark.parametrize("assignor", ["roundrobin", "range"])
def test_mixed_clients_share_partitions_and_take_over_on_leave_and_crash(group_broker, members, unique_topic, assignor):
    topic = unique_topic(assignor)
    group = f"mixed-{topic}"
    create_topic(group_broker.bootstrap, topic)
    confluent = members("confluent", group_broker.bootstrap, group, topic, assignor)
    python = members("kafka-python", group_broker.bootstrap, group, topic, assignor)
    aio = members("aiokafka", group_broker.bootstrap, group, topic, assignor)

    wait_until_partitioned([confluent, python, aio])
    assert [len(m.assignment) for m in (confluent, python, aio)] == [2, 2, 2]

    python.close()  # a clean LeaveGroup: its partitions move at once
    wait_until_partitioned([confluent, aio])
    assert sorted(len(m.assignment) for m in (confluent, aio)) == [3, 3]

    aio.kill()  # a crash: its partitions move after its session timeout
    wait_until_partitioned([confluent])
    assert confluent.assignment == set(range(PARTITIONS))
    assert any("has failed, removing it from the group" in line and group in line for line in group_broker.log_lines)


def test_librdkafka_cooperative_sticky(group_broker, members, unique_topic):
    topic = unique_topic("coop")
    group = f"coop-{topic}"
    create_topic(group_broker.bootstrap, topic)
    first = members("confluent", group_broker.bootstrap, group, topic, "cooperative-sticky")
    wait_until_partitioned([first])
    second = members("confluent", group_broker.bootstrap, group, topic, "cooperative-sticky")
    wait_until_partitioned([first, second])
    assert sorted(len(m.assignment) for m in (first, second)) == [3, 3]
    # Cooperative: the first member only ever gave partitions up; it never lost all of them.
    assert all(first.assignments[1:]) and all(set(later) <= set(earlier) for earlier, later in zip(first.assignments, first.assignments[1:]))
    second.close()
    wait_until_partitioned([first])


def test_static_member_restart_does_not_rebalance(group_broker, members, unique_topic):
    topic = unique_topic("static")
    group = f"static-{topic}"
    create_topic(group_broker.bootstrap, topic)
    a = members("confluent", group_broker.bootstrap, group, topic, "range", instance="static-a")
    b = members("confluent", group_broker.bootstrap, group, topic, "range", instance="static-b")
    wait_until_partitioned([a, b])
    before_b = b.assignment

    def rebalances() -> int:
        return sum(f"Preparing to rebalance group {group} " in line for line in group_broker.log_lines)

    count = rebalances()
    a.kill()  # a static member sends no LeaveGroup; it comes back before its session times out
    again = members("confluent", group_broker.bootstrap, group, topic, "range", instance="static-a")
    wait_until_partitioned([again, b])
    assert any("Static member which joins during Stable stage and doesn't affect selectProtocol will not trigger rebalance." in line for line in group_broker.log_lines)
    assert rebalances() == count
    assert b.assignment == before_b and b.assignments[-1] == sorted(before_b)
