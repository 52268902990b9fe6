"""The tools tell the truth about replication: ``kcli topics --describe`` and its report filters
(``--bootstrap-server``: Kafka 3.9's TopicCommand; ``--zookeeper``: Kafka 2.8's), ``kcli cluster
status``, ``kcli log-dirs --describe`` (offsetLag) and the leader's ISR log lines, each checked
against the partition state znodes of a replicated three-broker cluster while followers are
frozen, while a leader is dead, and once all is healthy again.

The brokers check their ISRs every second (``replica.lag.time.max.ms`` = 2000) and keep their
ZooKeeper sessions for 12 s, so a follower frozen with SIGSTOP leaves an ISR because its leader
says so, and a broker killed goes offline once its session ends. The frozen followers are never
the controller (it must answer the leader's AlterPartition), and every tool is pointed at the
controller, which is never frozen or killed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid

import pytest

from tests.cluster.conftest import Cluster, wait_until, zk_session
from tests.cluster.test_replication import controller, full_isr, new_topic, produce, state, stopped

LAG_MS = 2000
SESSION_MS = 12000
ELR = "\tElr: N/A\tLastKnownElr: N/A"  # Kafka 3.9's tool against a ZooKeeper-mode broker


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    made = Cluster(zookeeper_server, f"/replication-tools-{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("cluster"))
    try:
        for broker_id in range(3):
            made.broker(broker_id, **{"replica.lag.time.max.ms": str(LAG_MS), "zookeeper.session.timeout.ms": str(SESSION_MS)}).start(timeout=60)
        yield made
    finally:
        made.stop()


def kcli(*args: str) -> subprocess.CompletedProcess:
    completed = subprocess.run([sys.executable, "-m", "kcli", *args], capture_output=True, text=True, timeout=90)
    assert completed.returncode == 0, (args, completed.stdout, completed.stderr)
    return completed


def describe(bootstrap: str, topics: str, *filters: str) -> list[str]:
    """The lines of ``kcli topics --bootstrap-server --describe``, sorted (Kafka's tool prints topics
    in HashMap order)."""
    return sorted(kcli("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topics, *filters).stdout.splitlines())


def describe_zk(cluster: Cluster, topics: str, *filters: str) -> list[str]:
    return kcli("topics", "--zookeeper", cluster.connect, "--describe", "--topic", topics, *filters).stdout.splitlines()


def assignment(cluster: Cluster, topic: str, partition: int = 0) -> list[int]:
    with zk_session(cluster) as zk:
        return json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"][str(partition)]


def partition_line(cluster: Cluster, topic: str, znode: dict, partition: int = 0) -> str:
    """Kafka's partition line for what the state znode says (without the ELR fields of 3.9)."""
    leader = znode["leader"]
    return (
        f"\tTopic: {topic}\tPartition: {partition}\tLeader: {leader if leader >= 0 else 'none'}"
        f"\tReplicas: {','.join(map(str, assignment(cluster, topic, partition)))}\tIsr: {','.join(map(str, znode['isr']))}"
    )


def status(cluster: Cluster, *topics: str) -> tuple[dict[str, list[str]], dict]:
    """``kcli cluster status``: its plain sections (the partition lines under each heading) and its
    JSON, both keeping to ``topics``."""
    sections: dict[str, list[str]] = {}
    heading = None
    for line in kcli("cluster", "status", "--zookeeper", cluster.connect).stdout.splitlines():
        if not line.startswith("\t"):
            heading = line.split(":")[0]
            sections[heading] = []
        elif line.split("\t")[1].removeprefix("Topic: ") in topics:
            sections[heading].append(line)
    document = json.loads(kcli("cluster", "status", "--zookeeper", cluster.connect, "--output", "json").stdout)
    for key in ("offline_partitions", "under_replicated_partitions"):
        document[key] = [p for p in document[key] if p["topic"] in topics]
    return sections, document


def status_entry(cluster: Cluster, topic: str, znode: dict) -> dict:
    return {"topic": topic, "partition": 0, "leader": znode["leader"], "replicas": assignment(cluster, topic), "isr": znode["isr"]}


def offset_lags(bootstrap: str, brokers: list[int], topic: str) -> dict[int, list[tuple[str, int]]]:
    """``kcli log-dirs --describe``'s JSON: per broker asked, its partitions of ``topic`` with their offsetLag."""
    lines = kcli("log-dirs", "--bootstrap-server", bootstrap, "--describe", "--broker-list", ",".join(map(str, brokers)), "--topic-list", topic).stdout.splitlines()
    document = json.loads(lines[-1])
    return {
        entry["broker"]: sorted((p["partition"], p["offsetLag"]) for d in entry["logDirs"] for p in d["partitions"])
        for entry in document["brokers"]
    }


def test_frozen_followers_are_reported_by_every_tool_as_the_znodes_say_then_healthy_again(cluster):
    leader = controller(cluster)
    first, second = sorted({0, 1, 2} - {leader})
    topic = new_topic(cluster, "frozen", assignment=[leader, first, second], **{"min.insync.replicas": "2"})
    steady = new_topic(cluster, "steady", assignment=[leader])  # one replica, min.insync.replicas 1: always at the minimum
    both = f"{topic}|{steady}"
    at_leader = cluster.brokers[leader].bootstrap  # no tool waits on a frozen broker
    full_isr(cluster, topic)
    steady_line = partition_line(cluster, steady, wait_until(lambda: (lambda s: s if s.get("leader") == leader else None)(state(cluster, steady))))
    assert produce(at_leader, topic, [b"all-%d" % i for i in range(20)]) == ["ok"] * 20

    def healthy() -> None:
        wait_until(lambda: describe(at_leader, both, "--under-replicated-partitions") == [], timeout=30)
        assert describe(at_leader, both, "--at-min-isr-partitions") == [steady_line + ELR]
        assert describe(at_leader, both, "--under-min-isr-partitions") == []
        assert describe(at_leader, both, "--unavailable-partitions") == []
        assert describe_zk(cluster, both, "--under-replicated-partitions") == []
        sections, document = status(cluster, topic, steady)
        assert (sections["OfflinePartitions"], sections["UnderReplicatedPartitions"]) == ([], [])
        assert (document["offline_partitions"], document["under_replicated_partitions"]) == ([], [])

    healthy()
    with stopped(cluster, first):
        # acks=all waits until the leader has taken the frozen follower out of the ISR.
        assert produce(at_leader, topic, [b"one-frozen-%d" % i for i in range(20)]) == ["ok"] * 20
        shrunk = wait_until(lambda: (lambda s: s if sorted(s["isr"]) == sorted([leader, second]) else None)(state(cluster, topic)))
        line = partition_line(cluster, topic, shrunk)
        # Under-replicated (ISR 2 of 3) and at min.insync.replicas (2): Kafka 3.9 prints a partition
        # when any filter given matches, once, and no summary line.
        wait_until(lambda: describe(at_leader, both, "--under-replicated-partitions") == [line + ELR], timeout=30)
        assert describe(at_leader, both, "--at-min-isr-partitions") == sorted([line + ELR, steady_line + ELR])
        assert describe(at_leader, both, "--under-replicated-partitions", "--at-min-isr-partitions") == sorted([line + ELR, steady_line + ELR])
        assert describe(at_leader, both, "--under-min-isr-partitions") == []
        assert describe(at_leader, both, "--unavailable-partitions") == []
        assert describe_zk(cluster, both, "--under-replicated-partitions") == [line]
        assert describe_zk(cluster, both, "--unavailable-partitions") == []
        sections, document = status(cluster, topic, steady)
        assert (sections["OfflinePartitions"], sections["UnderReplicatedPartitions"]) == ([], [line])
        assert document["under_replicated_partitions"] == [status_entry(cluster, topic, shrunk)]
        # Kafka's getLogEndOffsetLag: 0 at the leader and at the follower (its high watermark never
        # passes its own log end); kcli answered -1 at a follower.
        assert offset_lags(at_leader, [leader, second], topic) == {leader: [(f"{topic}-0", 0)], second: [(f"{topic}-0", 0)]}
        shrink = re.escape(f"[Partition {topic}-0 broker={leader}] Shrinking ISR from ") + r"[\d,]+" + re.escape(
            f" to {','.join(map(str, shrunk['isr']))}. Leader: (highWatermark: "
        ) + r"\d+, endOffset: \d+\)\. Out of sync replicas: " + re.escape(f"(brokerId: {first}, endOffset: ") + r"\d+\)\."
        assert cluster.brokers[leader].wait_for(shrink)

        with stopped(cluster, second):
            # A record the followers lack: the leader alone is left in the ISR, below the minimum.
            assert produce(at_leader, topic, [b"unreplicated"], acks="1") == ["ok"]
            alone = wait_until(lambda: (lambda s: s if s["isr"] == [leader] else None)(state(cluster, topic)))
            line = partition_line(cluster, topic, alone)
            wait_until(lambda: describe(at_leader, both, "--under-min-isr-partitions") == [line + ELR], timeout=30)
            assert describe(at_leader, both, "--under-replicated-partitions") == [line + ELR]
            assert describe(at_leader, both, "--at-min-isr-partitions") == [steady_line + ELR]
            assert describe(at_leader, both, "--under-min-isr-partitions", "--at-min-isr-partitions") == sorted([line + ELR, steady_line + ELR])
            assert describe(at_leader, both, "--unavailable-partitions") == []
            assert describe_zk(cluster, both, "--under-replicated-partitions") == [line]
            sections, document = status(cluster, topic, steady)
            assert sections["UnderReplicatedPartitions"] == [line]
            assert document["under_replicated_partitions"] == [status_entry(cluster, topic, alone)]

    whole = full_isr(cluster, topic)
    healthy()
    full = partition_line(cluster, topic, whole) + ELR
    assert [l for l in describe(at_leader, topic) if l.startswith("\t")] == [full]
    # The followers, the one that was behind included, report no lag once back.
    assert offset_lags(at_leader, [0, 1, 2], topic) == {b: [(f"{topic}-0", 0)] for b in (0, 1, 2)}
    assert cluster.brokers[leader].wait_for(
        re.escape(f"[Partition {topic}-0 broker={leader}] ISR updated to {','.join(map(str, whole['isr']))} and version updated to [") + r"\d+\]"
    )
    assert not any("Expanding ISR" in l for l in cluster.brokers[leader].log_lines)  # Kafka 2.6's line, not 2.8's


def test_a_partition_whose_leader_is_dead_shows_no_leader_and_its_last_isr(cluster):
    """A partition's only replica killed: once its session ends the controller writes leader -1,
    the ISR keeping its last member. Kafka's filters: unavailable and under min ISR (no leader),
    at min ISR (ISR 1 == 1, leader or not), not under-replicated (ISR 1 of 1). A replicated
    partition the dead broker followed is under-replicated and names it offline."""
    alive = controller(cluster)
    victim = max({0, 1, 2} - {alive})
    other = min({0, 1, 2} - {alive})
    lonely = new_topic(cluster, "lonely", assignment=[victim])
    spread = new_topic(cluster, "spread", assignment=[alive, other, victim], **{"min.insync.replicas": "2"})
    both = f"{lonely}|{spread}"
    at = cluster.brokers[alive].bootstrap
    full_isr(cluster, spread)
    wait_until(lambda: state(cluster, lonely).get("leader") == victim)
    wait_until(lambda: describe(at, both, "--unavailable-partitions") == [], timeout=30)

    cluster.brokers[victim].kill()
    try:
        dead = wait_until(lambda: (lambda s: s if s.get("leader") == -1 else None)(state(cluster, lonely)), timeout=SESSION_MS / 1000 + 30)
        assert dead["isr"] == [victim]
        shrunk = wait_until(lambda: (lambda s: s if victim not in s["isr"] else None)(state(cluster, spread)))
        offline, under = partition_line(cluster, lonely, dead), partition_line(cluster, spread, shrunk)
        assert "\tLeader: none\t" in offline
        wait_until(lambda: describe(at, both, "--unavailable-partitions") == [offline + ELR], timeout=30)
        assert describe(at, both, "--under-min-isr-partitions") == [offline + ELR]
        assert describe(at, both, "--at-min-isr-partitions") == sorted([offline + ELR, under + ELR])
        assert describe(at, both, "--under-replicated-partitions") == [under + ELR]
        assert describe(at, both, "--unavailable-partitions", "--under-replicated-partitions") == sorted([offline + ELR, under + ELR])
        described = {
            d["topic"]: d["partitions"][0]
            for d in map(json.loads, kcli("topics", "--bootstrap-server", at, "--describe", "--topic", both, "--output", "json").stdout.splitlines())
        }
        assert described[lonely] == {"partition": 0, "leader": None, "replicas": [victim], "isr": [victim], "offline": [victim]}
        assert described[spread] == {"partition": 0, "leader": alive, "replicas": [alive, other, victim], "isr": shrunk["isr"], "offline": [victim]}
        assert describe_zk(cluster, both, "--unavailable-partitions") == [offline]
        assert describe_zk(cluster, both, "--under-replicated-partitions") == [under]
        sections, document = status(cluster, lonely, spread)
        assert (sections["OfflinePartitions"], sections["UnderReplicatedPartitions"]) == ([offline], [under])
        assert document["offline_partitions"] == [status_entry(cluster, lonely, dead)]
        assert document["under_replicated_partitions"] == [status_entry(cluster, spread, shrunk)]
    finally:
        cluster.brokers[victim].start(timeout=60)

    full_isr(cluster, spread)
    wait_until(lambda: state(cluster, lonely).get("leader") == victim, timeout=30)
    wait_until(lambda: describe(at, both, "--unavailable-partitions", "--under-replicated-partitions", "--under-min-isr-partitions") == [], timeout=30)
    sections, _ = status(cluster, lonely, spread)
    assert (sections["OfflinePartitions"], sections["UnderReplicatedPartitions"]) == ([], [])
