"""The tools tell the truth about replication: ``kcli topics --describe`` and its report filters
(``--bootstrap-server``: Kafka 3.9's TopicCommand; ``--zookeeper``: Kafka 2.8's), ``kcli cluster
status``, ``kcli log-dirs --describe`` (offsetLag) and the leader's ISR log lines, each checked
against the partition state znodes of a replicated three-broker cluster while followers are
frozen, while a partition's only replica is down, and once all is healthy again.

The brokers check their ISRs every second (``replica.lag.time.max.ms`` = 2000) and keep their
ZooKeeper sessions for 30 s, longer than test_replication's 12 s: followers stay frozen with
SIGSTOP while a leader shrinks the ISR and the tools run (side by side, several seconds on a
loaded machine), and a session that expired meanwhile would make the controller, not the leader,
take them out. The frozen followers are never the controller (it must answer the leader's
AlterPartition), and every tool is pointed at the controller, which is never frozen or stopped."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.cluster.conftest import Cluster, wait_until, zk_session
from tests.cluster.test_replication import controller, new_topic, produce, state, stopped

LAG_MS = 2000
SESSION_MS = 30000
ELR = "\tElr: N/A\tLastKnownElr: N/A"
WAIT_S = 60  # Kafka 3.9's tool against a ZooKeeper-mode broker


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    made = Cluster(zookeeper_server, f"/replication-tools-{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("cluster"))
    try:
        for broker_id in range(3):
            made.broker(broker_id, **{"replica.lag.time.max.ms": str(LAG_MS), "zookeeper.session.timeout.ms": str(SESSION_MS)}).start(timeout=60)
        yield made
    finally:
        made.stop()


@pytest.fixture(autouse=True)
def broker_logs_on_failure(cluster, request):
    """The brokers' own account of a failure, shown with the test's report."""
    yield
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        for broker_id, process in cluster.brokers.items():
            tail = "\n".join(process.log_lines[-60:])
            sys.stderr.write(f"--- broker {broker_id}'s last log lines ---\n{tail}\n")


def settled(predicate):
    """``wait_until`` with room for a loaded machine (each try runs a tool); healthy, it returns
    at the first try or soon after."""
    return wait_until(predicate, timeout=WAIT_S)


def at_once(**calls):
    """Each call's result, the calls run side by side: the time followers stay frozen is the
    slowest tool's, not the sum (a session that expired would change what is checked)."""
    with ThreadPoolExecutor(len(calls)) as pool:
        futures = {name: pool.submit(call) for name, call in calls.items()}
        return {name: future.result() for name, future in futures.items()}


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


def settled_full_isr(cluster: Cluster, topic: str) -> dict:
    return settled(lambda: (lambda s: s if sorted(s.get("isr", [])) == [0, 1, 2] else None)(state(cluster, topic)))


def test_frozen_followers_are_reported_by_every_tool_as_the_znodes_say_then_healthy_again(cluster):
    leader = controller(cluster)
    first, second = sorted({0, 1, 2} - {leader})
    topic = new_topic(cluster, "frozen", assignment=[leader, first, second], **{"min.insync.replicas": "2"})
    steady = new_topic(cluster, "steady", assignment=[leader])  # one replica, min.insync.replicas 1: always at the minimum
    both = f"{topic}|{steady}"
    at_leader = cluster.brokers[leader].bootstrap  # no tool waits on a frozen broker
    settled_full_isr(cluster, topic)
    steady_line = partition_line(cluster, steady, settled(lambda: (lambda s: s if s.get("leader") == leader else None)(state(cluster, steady))))
    assert produce(at_leader, topic, [b"all-%d" % i for i in range(20)]) == ["ok"] * 20

    def reports(*filters: str):
        return lambda: describe(at_leader, both, *filters)

    def healthy() -> None:
        settled(lambda: describe(at_leader, both, "--under-replicated-partitions") == [])
        seen = at_once(
            at_min=reports("--at-min-isr-partitions"), under_min=reports("--under-min-isr-partitions"),
            unavailable=reports("--unavailable-partitions"), zk=lambda: describe_zk(cluster, both, "--under-replicated-partitions"),
            status=lambda: status(cluster, topic, steady),
        )
        assert (seen["at_min"], seen["under_min"], seen["unavailable"], seen["zk"]) == ([steady_line + ELR], [], [], [])
        sections, document = seen["status"]
        assert (sections["OfflinePartitions"], sections["UnderReplicatedPartitions"]) == ([], [])
        assert (document["offline_partitions"], document["under_replicated_partitions"]) == ([], [])

    healthy()
    with stopped(cluster, first):
        # acks=all waits until the leader has taken the frozen follower out of the ISR.
        assert produce(at_leader, topic, [b"one-frozen-%d" % i for i in range(20)]) == ["ok"] * 20
        shrunk = settled(lambda: (lambda s: s if sorted(s["isr"]) == sorted([leader, second]) else None)(state(cluster, topic)))
        line = partition_line(cluster, topic, shrunk)
        settled(lambda: describe(at_leader, both, "--under-replicated-partitions") == [line + ELR])
        seen = at_once(
            at_min=reports("--at-min-isr-partitions"), under_or_at=reports("--under-replicated-partitions", "--at-min-isr-partitions"),
            under_min=reports("--under-min-isr-partitions"), unavailable=reports("--unavailable-partitions"),
            zk_under=lambda: describe_zk(cluster, both, "--under-replicated-partitions"),
            zk_unavailable=lambda: describe_zk(cluster, both, "--unavailable-partitions"),
            status=lambda: status(cluster, topic, steady), lags=lambda: offset_lags(at_leader, [leader, second], topic),
        )
    # Under-replicated (ISR 2 of 3) and at min.insync.replicas (2): Kafka 3.9 prints a partition
    # when any filter given matches, once, and no summary line.
    assert seen["at_min"] == seen["under_or_at"] == sorted([line + ELR, steady_line + ELR])
    assert (seen["under_min"], seen["unavailable"]) == ([], [])
    assert (seen["zk_under"], seen["zk_unavailable"]) == ([line], [])
    sections, document = seen["status"]
    assert (sections["OfflinePartitions"], sections["UnderReplicatedPartitions"]) == ([], [line])
    assert document["under_replicated_partitions"] == [status_entry(cluster, topic, shrunk)]
    # Kafka's getLogEndOffsetLag: 0 at the leader and at the follower (its high watermark never
    # passes its own log end); kcli answered -1 at a follower.
    assert seen["lags"] == {leader: [(f"{topic}-0", 0)], second: [(f"{topic}-0", 0)]}
    shrink = re.escape(f"[Partition {topic}-0 broker={leader}] Shrinking ISR from ") + r"[\d,]+" + re.escape(
        f" to {','.join(map(str, shrunk['isr']))}. Leader: (highWatermark: "
    ) + r"\d+, endOffset: \d+\)\. Out of sync replicas: " + re.escape(f"(brokerId: {first}, endOffset: ") + r"\d+\)\."
    assert cluster.brokers[leader].wait_for(shrink)

    settled_full_isr(cluster, topic)
    with stopped(cluster, first, second):
        # A record the followers lack: the leader alone is left in the ISR, below the minimum.
        assert produce(at_leader, topic, [b"unreplicated"], acks="1") == ["ok"]
        alone = settled(lambda: (lambda s: s if s["isr"] == [leader] else None)(state(cluster, topic)))
        line = partition_line(cluster, topic, alone)
        settled(lambda: describe(at_leader, both, "--under-min-isr-partitions") == [line + ELR])
        seen = at_once(
            under=reports("--under-replicated-partitions"), at_min=reports("--at-min-isr-partitions"),
            under_or_at=reports("--under-min-isr-partitions", "--at-min-isr-partitions"), unavailable=reports("--unavailable-partitions"),
            zk_under=lambda: describe_zk(cluster, both, "--under-replicated-partitions"), status=lambda: status(cluster, topic, steady),
        )
    assert (seen["under"], seen["at_min"], seen["unavailable"]) == ([line + ELR], [steady_line + ELR], [])
    assert seen["under_or_at"] == sorted([line + ELR, steady_line + ELR])
    assert seen["zk_under"] == [line]
    sections, document = seen["status"]
    assert sections["UnderReplicatedPartitions"] == [line]
    assert document["under_replicated_partitions"] == [status_entry(cluster, topic, alone)]

    whole = settled_full_isr(cluster, topic)
    healthy()
    full = partition_line(cluster, topic, whole) + ELR
    assert [l for l in describe(at_leader, topic) if l.startswith("\t")] == [full]
    # The followers, the one that was behind included, report no lag once back.
    assert offset_lags(at_leader, [0, 1, 2], topic) == {b: [(f"{topic}-0", 0)] for b in (0, 1, 2)}
    assert cluster.brokers[leader].wait_for(
        re.escape(f"[Partition {topic}-0 broker={leader}] ISR updated to {','.join(map(str, whole['isr']))} and version updated to [") + r"\d+\]"
    )
    assert not any("Expanding ISR" in l for l in cluster.brokers[leader].log_lines)  # Kafka 2.6's line, not 2.8's


def test_a_partition_whose_only_replica_is_down_shows_no_leader_and_its_last_isr(cluster):
    """A partition's only replica stopped: once its registration is gone the controller writes
    leader -1, the ISR keeping its last member. Kafka's filters: unavailable and under min ISR (no leader),
    at min ISR (ISR 1 == 1, leader or not), not under-replicated (ISR 1 of 1). A replicated
    partition the dead broker followed is under-replicated and names it offline."""
    alive = controller(cluster)
    victim = max({0, 1, 2} - {alive})
    other = min({0, 1, 2} - {alive})
    lonely = new_topic(cluster, "lonely", assignment=[victim])
    spread = new_topic(cluster, "spread", assignment=[alive, other, victim], **{"min.insync.replicas": "2"})
    both = f"{lonely}|{spread}"
    at = cluster.brokers[alive].bootstrap
    settled_full_isr(cluster, spread)
    settled(lambda: state(cluster, lonely).get("leader") == victim)
    settled(lambda: describe(at, both, "--unavailable-partitions") == [])

    assert cluster.brokers[victim].stop() == 0  # its session closed at once (a crash would wait for the session's end)
    try:
        dead = settled(lambda: (lambda s: s if s.get("leader") == -1 else None)(state(cluster, lonely)))
        assert dead["isr"] == [victim]
        shrunk = settled(lambda: (lambda s: s if victim not in s["isr"] else None)(state(cluster, spread)))
        offline, under = partition_line(cluster, lonely, dead), partition_line(cluster, spread, shrunk)
        assert "\tLeader: none\t" in offline
        settled(lambda: describe(at, both, "--unavailable-partitions") == [offline + ELR])
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

    settled_full_isr(cluster, spread)
    settled(lambda: state(cluster, lonely).get("leader") == victim)
    settled(lambda: describe(at, both, "--unavailable-partitions", "--under-replicated-partitions", "--under-min-isr-partitions") == [])
    sections, _ = status(cluster, lonely, spread)
    assert (sections["OfflinePartitions"], sections["UnderReplicatedPartitions"]) == ([], [])


class ReplicaVerification:
    """``kcli replica-verification`` running against the cluster; its stdout lines as they come."""

    STARTED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}: verification process is started$")

    def __init__(self, cluster: Cluster, topic: str) -> None:
        import queue
        import threading

        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        broker_list = ",".join(b.bootstrap for b in cluster.brokers.values())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kcli", "replica-verification", "--broker-list", broker_list, "--topics-include", topic,
             "--time", "-2", "--report-interval-ms", "200", "--max-wait-ms", "100"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        threading.Thread(target=lambda: [self.lines.put(line.rstrip("\n")) for line in self.process.stdout], daemon=True).start()

    def line(self, pattern: str) -> re.Match:
        """The next line matching ``pattern`` (a regex searched in it), within WAIT_S."""
        import queue
        import time

        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r}: {self.seen[-10:]}, stderr {self.process.stderr.read() if self.process.poll() is not None else ''}")

    def stop(self) -> int:
        import signal as signals

        if self.process.poll() is None:
            self.process.send_signal(signals.SIGTERM)
        return self.process.wait(30)


def segment_path(cluster: Cluster, broker_id: int, topic: str):
    return cluster.brokers[broker_id].log_dir / f"{topic}-0" / "00000000000000000000.log"


def test_replica_verification_finds_replicas_equal_then_names_a_checksum_and_an_offset_that_differ(cluster):
    """Kafka's kafka-replica-verification.sh: every replica read from its own broker (followers
    answer the debugging consumer up to their high watermarks), batches compared up to them."""
    leader = controller(cluster)
    first, second = sorted({0, 1, 2} - {leader})
    topic = new_topic(cluster, "verified", assignment=[leader, first, second])
    settled_full_isr(cluster, topic)
    at = cluster.brokers[leader].bootstrap
    assert produce(at, topic, [b"v-%d" % i for i in range(30)], **{"batch.num.messages": 1}) == ["ok"] * 30
    settled(lambda: all(segment_path(cluster, b, topic).stat().st_size == segment_path(cluster, leader, topic).stat().st_size for b in (first, second)))

    tool = ReplicaVerification(cluster, topic)
    try:
        assert ReplicaVerification.STARTED.match(tool.line("verification process is started").string)
        tool.line(rf": max lag is 0 for partition {re.escape(topic)}-0 at offset 30 among 1 partitions$")
    finally:
        assert tool.stop() == 143  # stopped by SIGTERM, as the JVM exits

    # A follower's copy of batch 3 altered in place: its CRC field (bytes 17-20 of the batch).
    path = segment_path(cluster, second, topic)
    data = bytearray(path.read_bytes())
    position = 0
    for _ in range(3):
        position += 12 + int.from_bytes(data[position + 8:position + 12], "big")
    crc = leader_crc = int.from_bytes(data[position + 17:position + 21], "big")
    data[position + 17:position + 21] = (crc ^ 0x5A5A5A5A).to_bytes(4, "big")
    # And batch 10's last offset delta (bytes 23-26), so that replica's batch ends elsewhere.
    position = 0
    for _ in range(10):
        position += 12 + int.from_bytes(data[position + 8:position + 12], "big")
    data[position + 23:position + 27] = (5).to_bytes(4, "big")
    path.write_bytes(bytes(data))

    # Kafka compares each replica with the first of its HashMap of broker ids: broker 0.
    tool = ReplicaVerification(cluster, topic)
    tool.line(
        rf": partition {re.escape(topic)}-0 has unmatched checksum at offset 3; replica 0's checksum {leader_crc}; "
        rf"replica {second}'s checksum {crc ^ 0x5A5A5A5A}$"
    )
    tool.line(rf": partition {re.escape(topic)}-0: replica 0's offset 10 doesn't match replica {second}'s offset 15$")
    assert tool.process.wait(WAIT_S) == 1
