"""Brokers of one cluster with different listeners: a Metadata answer on a listener names only
the brokers that have it, and a partition whose leader lacks it has no leader on that listener
(LISTENER_NOT_FOUND from v6, LEADER_NOT_AVAILABLE before), as Kafka's MetadataCache answers.
Each broker registers every endpoint and its protocol map in ``/brokers/ids/N`` as Kafka 2.8 does."""

from __future__ import annotations

import json

from tests.cluster.conftest import wait_until
from tests.wire_client import WireClient, code

LISTENER_NOT_FOUND = 72
LEADER_NOT_AVAILABLE = 5


def _ports(broker) -> list[int]:
    return broker.listener_ports


def _partitions(port: int, topic: str, version: int):
    with WireClient("127.0.0.1", port) as client:
        answer = client.call(3, version, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    return answer, {p.partition_index: p for p in answer.topics[0].partitions}


def test_metadata_on_a_listener_leaves_out_brokers_without_it(cluster):
    cluster.broker(
        0,
        listeners="PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"},
    ).start(timeout=60)
    cluster.broker(1).start(timeout=60)
    plaintext_port, external_port = _ports(cluster.brokers[0])
    with WireClient("127.0.0.1", plaintext_port) as client:
        created = client.call(19, 7, {
            "topics": [{"name": "split", "num_partitions": -1, "replication_factor": -1, "assignments": [
                {"partition_index": 0, "broker_ids": [0]}, {"partition_index": 1, "broker_ids": [1]}]}],
            "timeout": 10000,
        })
        assert code(created.topics[0].error_code) == 0
    # Both brokers know both leaders (the controller's UpdateMetadata reached them).
    for port in (plaintext_port, _ports(cluster.brokers[1])[0]):
        wait_until(lambda port=port: [p.leader_id for p in _partitions(port, "split", 12)[1].values()] == [0, 1])

    answer, partitions = _partitions(external_port, "split", 12)
    assert [(b.node_id, b.port) for b in answer.brokers] == [(0, external_port)]
    assert (code(partitions[0].error_code), partitions[0].leader_id) == (0, 0)
    assert (code(partitions[1].error_code), partitions[1].leader_id) == (LISTENER_NOT_FOUND, -1)
    _, old = _partitions(external_port, "split", 5)
    assert (code(old[1].error_code), old[1].leader_id) == (LEADER_NOT_AVAILABLE, -1)
    answer, partitions = _partitions(plaintext_port, "split", 12)
    assert [b.node_id for b in answer.brokers] == [0, 1]
    assert [(code(p.error_code), p.leader_id) for p in partitions.values()] == [(0, 0), (0, 1)]

    zk = cluster.zk()
    try:
        registration = json.loads(zk.get("/brokers/ids/0")[0])
    finally:
        zk.stop()
        zk.close()
    assert registration["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "EXTERNAL": "PLAINTEXT"}
    assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{plaintext_port}", f"EXTERNAL://127.0.0.1:{external_port}"]
    assert (registration["host"], registration["port"], registration["version"]) == ("127.0.0.1", plaintext_port, 5)
