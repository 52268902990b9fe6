"""Unclean leader election on three kcli brokers under ZooKeeper (Kafka 2.8's
``unclean.leader.election.enable``), and kcli's loss report when the former leader returns.

Each test uses a partition of two replicas, L and F, on the two brokers that are not the
controller (so the controller, which decides, is never stopped). F is killed: its session ends
and the controller takes it out of the ISR; records written then with acks=1 are on L alone. L is
killed: no replica of the ISR is live, the partition goes offline (leader -1, ISR [L]). F starts
again: what happens next depends on the topic's ``unclean.leader.election.enable``."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from tests.cluster.conftest import Cluster, wait_until
from tests.cluster.test_replication import controller, new_topic, partition_dir, produce, segment_bytes, state


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    made = Cluster(zookeeper_server, f"/unclean-{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("cluster"))
    try:
        for broker_id in range(3):
            made.broker(broker_id, **{"replica.lag.time.max.ms": "2000"}).start(timeout=60)
        yield made
    finally:
        made.stop()


def leaves_only_the_leader(cluster: Cluster, label: str, **configs: str) -> tuple[str, int, int]:
    """A two-replica topic on the brokers other than the controller, its leader L and follower F;
    returns once F was killed and the ISR is [L]: ``(topic, L, F)``."""
    leader, follower = sorted({0, 1, 2} - {controller(cluster)})
    topic = new_topic(cluster, label, assignment=[leader, follower], **configs)
    wait_until(lambda: sorted(state(cluster, topic).get("isr", [])) == sorted([leader, follower]), timeout=30)
    at_leader = cluster.brokers[leader].bootstrap
    assert produce(at_leader, topic, [b"committed-%d" % i for i in range(10)]) == ["ok"] * 10
    wait_until(lambda: segment_bytes(cluster, follower, topic, 0) == segment_bytes(cluster, leader, topic, 0), timeout=30)
    cluster.brokers[follower].kill()
    wait_until(lambda: state(cluster, topic).get("isr") == [leader], timeout=30)
    return topic, leader, follower


def offline_after_the_leader_dies(cluster: Cluster, topic: str, leader: int) -> dict:
    cluster.brokers[leader].kill()
    return wait_until(lambda: (lambda s: s if s.get("leader") == -1 else None)(state(cluster, topic)), timeout=30)


def stays_offline(cluster: Cluster, topic: str, seconds: float = 3.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert state(cluster, topic)["leader"] == -1
        time.sleep(0.2)


def test_without_unclean_election_the_partition_waits_offline_for_its_last_in_sync_replica(cluster):
    topic, leader, follower = leaves_only_the_leader(cluster, "clean")
    try:
        offline = offline_after_the_leader_dies(cluster, topic, leader)
        assert offline["isr"] == [leader]  # Kafka 2.8: the ISR keeps its last member
        cluster.brokers[follower].start(timeout=60)
        stays_offline(cluster, topic)  # the out-of-sync replica is live, and not elected
        assert state(cluster, topic)["isr"] == [leader]
        in_controller = cluster.brokers[controller(cluster)].log_lines
        assert any(f"failed to change state for partition {topic}-0 from OfflinePartition to OnlinePartition" in line
                   and "OfflinePartitionLeaderElectionStrategy(false)" in line for line in in_controller)
    finally:
        for broker_id in (leader, follower):
            if cluster.brokers[broker_id].process.poll() is not None:
                cluster.brokers[broker_id].start(timeout=60)
    # The in-sync replica is back: it leads, the other catches up and joins the ISR.
    back = wait_until(lambda: (lambda s: s if sorted(s.get("isr", [])) == sorted([leader, follower]) else None)(state(cluster, topic)), timeout=60)
    assert back["leader"] == leader and back["leader_epoch"] > offline["leader_epoch"]
    assert segment_bytes(cluster, follower, topic, 0) == segment_bytes(cluster, leader, topic, 0)


def test_an_unclean_election_by_topic_override_reports_and_keeps_the_records_it_lost(cluster):
    topic, leader, follower = leaves_only_the_leader(cluster, "unclean")
    lost = [b"lost-%d" % i for i in range(7)]
    try:
        # Written to L alone, acknowledged with acks=1.
        assert produce(cluster.brokers[leader].bootstrap, topic, lost, acks="1") == ["ok"] * len(lost)
        offline = offline_after_the_leader_dies(cluster, topic, leader)
        cluster.brokers[follower].start(timeout=60)
        stays_offline(cluster, topic, 1.0)
        # The topic's override turned on: the controller elects the out-of-sync replica alone
        # (Kafka 2.8's TopicUncleanLeaderElectionEnable, from the config change).
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        entry = ConfigEntry("unclean.leader.election.enable", "true", incremental_operation=AlterConfigOpType.SET)
        for future in admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[entry])]).values():
            future.result(30)
        elected = wait_until(lambda: (lambda s: s if s.get("leader") == follower else None)(state(cluster, topic)), timeout=30)
        assert elected["isr"] == [follower] and elected["leader_epoch"] > offline["leader_epoch"]
        in_controller = cluster.brokers[controller(cluster)].log_lines
        assert any(f"Unclean leader election has been enabled for topic {topic}" in line for line in in_controller)
        assert produce(cluster.brokers[follower].bootstrap, topic, [b"new-%d" % i for i in range(5)]) == ["ok"] * 5
    finally:
        cluster.brokers[leader].start(timeout=60)

    # The former leader follows, truncates what the new leader lacks: one WARN line, the
    # records kept aside.
    pattern = rf"WARN.*Truncated {re.escape(topic)}-0 to offset 10: offsets 10 to 16 \(7 records in \d+ batch(es)? of leader epochs [\d, ]+\) " \
              rf"are not in the log of leader {follower} at leader epoch {elected['leader_epoch']} and are lost.*kept aside in (\S+) "
    line = cluster.brokers[leader].wait_for(pattern, timeout=60)
    assert sum(1 for l in cluster.brokers[leader].log_lines if f"Truncated {topic}-0" in l) == 1
    kept = re.search(pattern, line).group(2)
    assert kept.startswith(str(partition_dir(cluster, leader, topic, 0) / "truncated-"))
    dumped = subprocess.run(
        [sys.executable, "-m", "kcli", "dump-log-segments", "--files", kept, "--print-data-log"],
        capture_output=True, text=True, timeout=60,
    )
    assert dumped.returncode == 0, dumped.stderr
    payloads = [l.rsplit("payload: ", 1)[1] for l in dumped.stdout.splitlines() if l.startswith("| offset:")]
    assert payloads == [v.decode() for v in lost]
    offsets = [int(l.split()[2]) for l in dumped.stdout.splitlines() if l.startswith("| offset:")]
    assert offsets == list(range(10, 17))

    # It then copies the new leader's log and rejoins the ISR; the lost records are in no log.
    wait_until(lambda: sorted(state(cluster, topic).get("isr", [])) == sorted([leader, follower]), timeout=60)
    wait_until(lambda: segment_bytes(cluster, leader, topic, 0) == segment_bytes(cluster, follower, topic, 0), timeout=30)
    assert b"lost-" not in segment_bytes(cluster, leader, topic, 0)
    assert b"new-4" in segment_bytes(cluster, leader, topic, 0)

    # A restart loads the log only: the kept-aside batches stay beside it, outside it.
    assert cluster.brokers[leader].stop() == 0
    cluster.brokers[leader].start(timeout=60)
    wait_until(lambda: sorted(state(cluster, topic).get("isr", [])) == sorted([leader, follower]), timeout=60)
    wait_until(lambda: segment_bytes(cluster, leader, topic, 0) == segment_bytes(cluster, follower, topic, 0), timeout=30)
    assert b"lost-" not in segment_bytes(cluster, leader, topic, 0)
    assert sorted(p.name for p in Path(kept).glob("*.log"))
