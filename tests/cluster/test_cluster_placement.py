"""Where a broker places the replicas of the topics and partitions it is asked to create: on the
brokers the controller counts alive, never on a ``/brokers/ids/N`` that cannot be read (a
registration written by hand), which no controller would send LeaderAndIsr to."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from tests.cluster.conftest import wait_until, zk_session
from tests.cluster.test_zookeeper_cluster import consume, create_topic, produce

GARBAGE = [b"garbage", b'{"version":5,"endpoints":["PLAINTEXT://127.0.0.1:99999"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}}']


def replicas(cluster, topic: str) -> dict[int, list[int]]:
    with zk_session(cluster) as zk:
        return {int(p): r for p, r in json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"].items()}


def online(cluster, topic: str, count: int) -> bool:
    described = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(topic, timeout=20).topics[topic]
    return len(described.partitions) == count and all(p.leader >= 0 for p in described.partitions.values())


@pytest.mark.parametrize("registration", GARBAGE, ids=["not-json", "port-out-of-range"])
def test_create_topics_and_partitions_place_replicas_only_on_brokers_the_controller_counts_alive(cluster, registration):
    cluster.start(2)
    with zk_session(cluster) as zk:
        zk.create("/brokers/ids/5", registration, ephemeral=True)
        # Through either broker, with the unreadable registration in place all along.
        for number, broker in enumerate(cluster.brokers.values()):
            topic = f"spread-{number}"
            create_topic(broker.bootstrap, topic, 12)
            assert {b for placed in replicas(cluster, topic).values() for b in placed} == {0, 1}
            wait_until(lambda: online(cluster, topic, 12))
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept alive until the answer comes
            admin.create_partitions([NewPartitions(topic, 24)])[topic].result(30)
            assert {b for placed in replicas(cluster, topic).values() for b in placed} == {0, 1}
            wait_until(lambda: online(cluster, topic, 24))
            produce(broker.bootstrap, topic, 48)
            assert len(consume(cluster.bootstrap, topic, 48, f"{topic}-readers")) == 48
