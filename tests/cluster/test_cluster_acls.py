"""ACLs on a 3-broker ZooKeeper cluster as Kafka 2.8 keeps them: an ACL created through one
broker's CreateAcls (confluent-kafka's AdminClient), one written by ``kcli acls
--authorizer-properties zookeeper.connect=...`` and one written straight into the znodes (as
another tool would, with its change node) take effect on every broker; brokers reach each other
as their inter-broker principal, a super user, while another user's LeaderAndIsr, StopReplica,
UpdateMetadata and replica Fetch are refused (a replica Fetch answers TOPIC_AUTHORIZATION_FAILED
per partition, as Kafka 2.8's KafkaApis does)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

from tests.cluster.conftest import wait_until
from tests.wire_client import WireClient, code

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";'
)
NONE, TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 0, 29, 31


def _start(cluster) -> list[int]:
    for broker_id in (0, 1, 2):
        cluster.broker(broker_id, listeners="SASL_PLAINTEXT://127.0.0.1:0", **{
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin",
        }).start(timeout=60)
    return [cluster.brokers[b].port for b in (0, 1, 2)]


def _login(client: WireClient, user: str) -> WireClient:
    assert code(client.call(17, 1, {"mechanism": "PLAIN"}).error_code) == NONE
    assert code(client.call(36, 2, {"auth_bytes": f"\0{user}\0{user}-pw".encode()}).error_code) == NONE
    return client


def _described(port: int, topic: str) -> int:
    """The error alice's Metadata request for the topic answers at this broker."""
    with _login(WireClient("127.0.0.1", port), "alice") as client:
        answer = client.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    return code(answer.topics[0].error_code)


def _create_topic(port: int, topic: str) -> None:
    with _login(WireClient("127.0.0.1", port), "admin") as client:
        created = client.call(19, 7, {"topics": [{"name": topic, "num_partitions": 3, "replication_factor": 1, "assignments": [], "configs": []}],
                                      "timeout": 10000, "validate_only": False})
    assert code(created.topics[0].error_code) == NONE


def test_acls_from_the_admin_api_and_from_the_znodes_reach_every_broker(cluster):
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    ports = _start(cluster)
    first, second, third = (f"{label}-{uuid.uuid4().hex[:6]}" for label in ("first", "second", "third"))
    for topic in (first, second, third):
        _create_topic(ports[0], topic)
    assert [_described(port, first) for port in ports] == [TOPIC_AUTHORIZATION_FAILED] * 3

    # CreateAcls answered by broker 0 alone: the others learn it from the change node.
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports[0]}", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-pw"})
    binding = AclBinding(ResourceType.TOPIC, first, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding]).values():
        future.result(30)
    for port in ports:
        wait_until(lambda port=port: _described(port, first) == NONE)

    # Written by hand, as Kafka 2.8's tools write them.
    zk = cluster.zk()
    try:
        acls = {"version": 1, "acls": [{"principal": "User:alice", "permissionType": "Allow", "operation": "Describe", "host": "*"}]}
        zk.create(f"/kafka-acl/Topic/{second}", json.dumps(acls).encode(), makepath=True)
        zk.create("/kafka-acl-changes/acl_changes_", f"Topic:{second}".encode(), sequence=True)
        assert json.loads(zk.get(f"/kafka-acl/Topic/{first}")[0])["acls"] == [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Describe", "host": "*"}
        ]
    finally:
        zk.stop()
        zk.close()
    for port in ports:
        wait_until(lambda port=port: _described(port, second) == NONE)

    # kafka-acls.sh --authorizer-properties zookeeper.connect=... (Kafka 2.8's path).
    def acls(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "kcli", "acls", "--authorizer-properties", f"zookeeper.connect={cluster.connect}", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    added = acls("--add", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", third)
    assert added.returncode == 0, added.stderr
    assert added.stderr.startswith("Warning: support for ACL configuration directly through the authorizer is deprecated")
    assert added.stdout.startswith(f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={third}, patternType=LITERAL)`: ")
    for port in ports:
        wait_until(lambda port=port: _described(port, third) == NONE)
    listed = acls("--list", "--topic", first)
    assert listed.stdout == (
        f"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name={first}, patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n"
    )
    assert acls("--remove", "--force", "--topic", third).returncode == 0
    for port in ports:
        wait_until(lambda port=port: _described(port, third) == TOPIC_AUTHORIZATION_FAILED)


def _as_alice(port: int, calls):
    """Each (api key, version, fields) sent by alice over kcli's own connection (which writes the
    inter-broker schemas), the answers in order."""
    import asyncio

    from kcli.client.connection import BrokerConnection
    from kcli.client.security_config import ClientSecurity

    async def send():
        security = ClientSecurity("SASL_PLAINTEXT", sasl_mechanism="PLAIN", username="alice", password="alice-pw")
        connection = await BrokerConnection.open("127.0.0.1", port, timeout=30, security=security)
        try:
            return [await connection.send(api_key, version, fields) for api_key, version, fields in calls]
        finally:
            await connection.close()

    return asyncio.run(send())


def test_a_user_may_not_send_the_brokers_requests(cluster):
    ports = _start(cluster)
    topic = f"guarded-{uuid.uuid4().hex[:6]}"
    _create_topic(ports[0], topic)
    partition_state = {"topic_name": topic, "partition_index": 0, "controller_epoch": 99, "leader": 1, "leader_epoch": 99,
                       "isr": [1], "partition_epoch": 99, "replicas": [1]}
    leader_and_isr, stop_replica, update_metadata, fetch = _as_alice(ports[1], [
        (4, 7, {
            "controller_id": 0, "controller_epoch": 99, "broker_epoch": -1, "type": 0,
            "topic_states": [{"topic_name": topic, "topic_id": uuid.uuid4(), "partition_states": [partition_state]}],
            "live_leaders": [{"broker_id": 1, "host_name": "127.0.0.1", "port": ports[1]}],
        }),
        (5, 4, {
            "controller_id": 0, "controller_epoch": 99, "broker_epoch": -1,
            "topic_states": [{"topic_name": topic, "partition_states": [{"partition_index": 0, "leader_epoch": -2, "delete_partition": True}]}],
        }),
        (6, 8, {"controller_id": 0, "controller_epoch": 99, "broker_epoch": -1, "topic_states": [], "live_brokers": []}),
        (1, 12, {
            "replica_id": 0, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": topic, "partitions": [{"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20} for p in range(3)]}],
        }),
    ])
    assert code(leader_and_isr.error_code) == CLUSTER_AUTHORIZATION_FAILED
    assert {code(p.error_code) for t in leader_and_isr.topics for p in t.partition_errors} == {CLUSTER_AUTHORIZATION_FAILED}
    assert code(stop_replica.error_code) == CLUSTER_AUTHORIZATION_FAILED
    assert code(update_metadata.error_code) == CLUSTER_AUTHORIZATION_FAILED
    assert [code(p.error_code) for r in fetch.responses for p in r.partitions] == [TOPIC_AUTHORIZATION_FAILED] * 3
    # Nothing moved: the topic is still there with its three partitions.
    with _login(WireClient("127.0.0.1", ports[1]), "admin") as client:
        answer = client.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    assert code(answer.topics[0].error_code) == NONE and len(answer.topics[0].partitions) == 3
    assert all(p.leader_id >= 0 for p in answer.topics[0].partitions)
