"""Replication on three kcli brokers under ZooKeeper (Kafka 2.8's followers), with real processes
and real clients."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster, wait_until, zk_session

RECORDS = 400
LAG_MS = 2000


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    made = Cluster(zookeeper_server, f"/replication-{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("cluster"))
    try:
        for broker_id in range(3):
            made.broker(broker_id, **{"replica.lag.time.max.ms": str(LAG_MS), "zookeeper.session.timeout.ms": "12000"}).start(timeout=60)
        yield made
    finally:
        made.stop()


def new_topic(cluster: Cluster, label: str, partitions: int = 1) -> str:
    topic = f"{label}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(30)
    return topic


def state(cluster: Cluster, topic: str, partition: int = 0) -> dict:
    """The partition's state znode, as the controller wrote it."""
    with zk_session(cluster) as zk:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        return json.loads(zk.get(path)[0]) if zk.exists(path) else {}


def partition_dir(cluster: Cluster, broker_id: int, topic: str, partition: int) -> Path:
    return cluster.brokers[broker_id].log_dir / f"{topic}-{partition}"


def segment_bytes(cluster: Cluster, broker_id: int, topic: str, partition: int) -> bytes:
    path = partition_dir(cluster, broker_id, topic, partition) / "00000000000000000000.log"
    return path.read_bytes() if path.exists() else b""


def test_followers_copy_the_leaders_log_byte_for_byte(cluster):
    topic = new_topic(cluster, "copied", partitions=3)
    leaders = {p: wait_until(lambda: state(cluster, topic, p).get("leader", -1) + 1) - 1 for p in range(3)}
    # Idempotent, compressed, in several batches per partition: the followers must keep the
    # leader's offsets, producer ids, sequences, epochs and compression as they are.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 2, "batch.num.messages": 37})
    for i in range(RECORDS):
        producer.produce(topic, key=b"%d" % i, value=b"value-%d" % i, partition=i % 3)
        producer.poll(0)
    assert producer.flush(30) == 0

    for partition, leader in leaders.items():
        written = segment_bytes(cluster, leader, topic, partition)
        assert len(written) > 0
        leader_epochs = (partition_dir(cluster, leader, topic, partition) / "leader-epoch-checkpoint").read_text()
        for follower in {0, 1, 2} - {leader}:
            wait_until(lambda: segment_bytes(cluster, follower, topic, partition) == written, timeout=30)
            epochs = (partition_dir(cluster, follower, topic, partition) / "leader-epoch-checkpoint").read_text()
            assert epochs == leader_epochs

