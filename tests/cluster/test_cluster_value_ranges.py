"""Znodes written by hand whose JSON parses but whose numbers do not fit the wire field they are
sent in (a partition id, a broker id, an epoch, a port): each is named in one error line by every
broker that reads it and skipped, and the cluster goes on: every broker answers an all-topics
Metadata request, and a topic created afterwards is hosted and serves."""

from __future__ import annotations

import json

import pytest

from tests.cluster.conftest import wait_until, zk_session
from tests.cluster.test_zookeeper_cluster import consume, create_topic, leaders, metadata, produce

INT32_PAST = 2**31


def assert_the_cluster_serves(cluster, topic: str) -> None:
    """Every broker answers an all-topics Metadata request, and ``topic``, created now, is hosted
    and serves produce and consume."""
    for broker in cluster.brokers.values():
        metadata(broker.bootstrap)  # raises when the broker cannot answer
    create_topic(cluster.brokers[1].bootstrap, topic, 4)
    placed = wait_until(lambda: (lambda l: l if -1 not in l.values() else None)(leaders(cluster.bootstrap, topic)))
    assert sorted(set(placed.values())) == [0, 1]
    produce(cluster.brokers[0].bootstrap, topic, 20)
    assert sorted(consume(cluster.brokers[1].bootstrap, topic, 20, f"{topic}-readers")) == sorted(
        b"value-%d" % i for i in range(20)
    )
    for broker in cluster.brokers.values():
        assert topic in metadata(broker.bootstrap).topics
    assert all(broker.process.poll() is None for broker in cluster.brokers.values())


def no_traceback(cluster) -> None:
    for broker in cluster.brokers.values():
        assert not [line for line in broker.log_lines if "Traceback" in line or "struct.error" in line], broker.log_lines[-20:]


@pytest.mark.parametrize(
    "assignment",
    [
        {"version": 1, "partitions": {str(INT32_PAST): [0]}},
        {"version": 1, "partitions": {"0": [-5]}},
        {"version": 1, "partitions": {"0": [INT32_PAST]}},
    ],
    ids=["partition-past-int32", "negative-replica", "replica-past-int32"],
)
def test_a_topic_znode_with_numbers_past_their_wire_field_is_named_and_skipped(cluster, assignment):
    cluster.start(2)
    with zk_session(cluster) as zk:
        zk.create("/brokers/topics/outsized", json.dumps(assignment).encode())
    for broker in cluster.brokers.values():
        broker.wait_for(r"ERROR.*/brokers/topics/outsized\b", timeout=30)
    assert_the_cluster_serves(cluster, "after")
    # Removing the znode leaves nothing behind: topics created later are hosted as well.
    with zk_session(cluster) as zk:
        zk.delete("/brokers/topics/outsized", recursive=True)
    assert_the_cluster_serves(cluster, "later")
    no_traceback(cluster)


def test_a_partition_state_with_a_leader_epoch_past_int32_is_named_and_skipped(cluster):
    cluster.start(2)
    create_topic(cluster.brokers[0].bootstrap, "epochs", 2)
    wait_until(lambda: -1 not in leaders(cluster.bootstrap, "epochs").values())
    with zk_session(cluster) as zk:
        state = json.loads(zk.get("/brokers/topics/epochs/partitions/1/state")[0])
        zk.set("/brokers/topics/epochs/partitions/1/state", json.dumps({**state, "leader_epoch": INT32_PAST}).encode())
        # The topic's own znode written again (as a tool adding nothing would): everyone reads it.
        data, _ = zk.get("/brokers/topics/epochs")
        zk.set("/brokers/topics/epochs", data)
        controller = json.loads(zk.get("/controller")[0])["brokerid"]
    cluster.brokers[controller].wait_for(r"ERROR.*/brokers/topics/epochs/partitions/1/state", timeout=30)
    assert_the_cluster_serves(cluster, "after")
    no_traceback(cluster)


@pytest.mark.parametrize("port", [INT32_PAST, 70000], ids=["past-int32", "past-65535"])
def test_a_broker_registration_with_a_port_out_of_range_is_named_and_skipped(cluster, port):
    cluster.start(2)
    registration = {
        "features": {}, "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [f"PLAINTEXT://127.0.0.1:{port}"], "jmx_port": -1, "port": port, "host": "127.0.0.1",
        "version": 5, "timestamp": "1700000000000",
    }
    with zk_session(cluster) as zk:
        zk.create("/brokers/ids/7", json.dumps(registration).encode(), ephemeral=True)
        controller = json.loads(zk.get("/controller")[0])["brokerid"]
        cluster.brokers[controller].wait_for(r"ERROR.*/brokers/ids/7\b", timeout=30)
        assert_the_cluster_serves(cluster, "after")
        for broker in cluster.brokers.values():
            assert sorted(metadata(broker.bootstrap).brokers) == [0, 1]
    no_traceback(cluster)
