"""CreateAcls, DescribeAcls and DeleteAcls through confluent-kafka's AdminClient over
SASL_PLAINTEXT, against a broker with Kafka's AclAuthorizer: a super user writes literal and
prefixed ACLs and reads them back through MATCH and ANY filters, deletes through a filter;
another user is refused with CLUSTER_AUTHORIZATION_FAILED; a bad creation fails alone; a broker
without an authorizer answers SECURITY_DISABLED."""

from __future__ import annotations

import pytest

from broker_process import BrokerProcess

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";'
)


def _broker(tmp_path_factory, **extra: str) -> BrokerProcess:
    broker = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        **extra,
    }).start()
    return broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = _broker(tmp_path_factory, **{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:admin"})
    yield process
    process.stop()


def _admin(broker, user: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                        "sasl.username": user, "sasl.password": f"{user}-pw"})


def _binding(name, pattern, principal, operation, permission, restype=None, host="*"):
    from confluent_kafka.admin import AclBinding, ResourceType

    return AclBinding(restype or ResourceType.TOPIC, name, pattern, principal, host, operation, permission)


def _texts(bindings) -> set[tuple]:
    return {(b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name, b.permission_type.name) for b in bindings}


def _kafka_python_describe(broker, user: str) -> list:
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient
    from kafka.admin import ResourcePatternFilter, ResourceType

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                             sasl_plain_username=user, sasl_plain_password=f"{user}-pw", request_timeout_ms=30000)
    try:
        pattern = ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY)
        acls, error = admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern))
        return acls
    finally:
        admin.close()


def test_acls_created_described_and_deleted_through_the_admin_client(broker):
    from kafka.errors import ClusterAuthorizationFailedError

    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclBindingFilter, AclOperation as Op, AclPermissionType as Perm, ResourcePatternType as Pat, ResourceType

    admin = _admin(broker, "admin")
    bindings = [
        _binding("orders", Pat.LITERAL, "User:alice", Op.READ, Perm.ALLOW),
        _binding("team-", Pat.PREFIXED, "User:alice", Op.WRITE, Perm.ALLOW),
        _binding("*", Pat.LITERAL, "User:bob", Op.ALL, Perm.DENY),
        _binding("g1", Pat.LITERAL, "User:alice", Op.READ, Perm.ALLOW, restype=ResourceType.GROUP),
    ]
    for future in admin.create_acls(bindings).values():
        assert future.result(30) is None

    everything = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, Pat.ANY, None, None, Op.ANY, Perm.ANY)).result(30)
    assert _texts(everything) == {
        ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "team-", "PREFIXED", "User:alice", "*", "WRITE", "ALLOW"),
        ("TOPIC", "*", "LITERAL", "User:bob", "*", "ALL", "DENY"),
        ("GROUP", "g1", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
    }
    # MATCH: every pattern that applies to the topic team-orders: the prefix and the wildcard.
    matching = admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, "team-orders", Pat.MATCH, None, None, Op.ANY, Perm.ANY)).result(30)
    assert {(b.name, b.resource_pattern_type.name) for b in matching} == {("team-", "PREFIXED"), ("*", "LITERAL")}

    # alice is no super user and holds no ALTER or DESCRIBE on the cluster (librdkafka drops
    # DescribeAcls' error code, so kafka-python asks).
    with pytest.raises(ClusterAuthorizationFailedError):
        _kafka_python_describe(broker, "alice")
    alice = _admin(broker, "alice")
    for future in alice.create_acls([_binding("x", Pat.LITERAL, "User:alice", Op.ALL, Perm.ALLOW)]).values():
        with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
            future.result(30)

    # A CLUSTER resource not named kafka-cluster fails alone.
    results = admin.create_acls([
        _binding("my-cluster", Pat.LITERAL, "User:alice", Op.ALTER, Perm.ALLOW, restype=ResourceType.BROKER),
        _binding("kafka-cluster", Pat.LITERAL, "User:alice", Op.DESCRIBE, Perm.ALLOW, restype=ResourceType.BROKER),
    ])
    outcomes = {}
    for binding, future in results.items():
        try:
            outcomes[binding.name] = future.result(30)
        except KafkaException as e:
            outcomes[binding.name] = e.args[0].name()
    assert outcomes == {"my-cluster": "INVALID_REQUEST", "kafka-cluster": None}
    # alice may now describe the cluster's ACLs.
    assert len(_kafka_python_describe(broker, "alice")) == 5

    deleted = admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, None, Pat.ANY, "User:alice", None, Op.ANY, Perm.ANY)])
    [(_, future)] = deleted.items()
    assert {(b.name, b.operation.name) for b in future.result(30)} == {("orders", "READ"), ("team-", "WRITE")}
    left = admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, None, Pat.ANY, None, None, Op.ANY, Perm.ANY)).result(30)
    assert _texts(left) == {("TOPIC", "*", "LITERAL", "User:bob", "*", "ALL", "DENY")}


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(tmp_path_factory):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclOperation as Op, AclPermissionType as Perm, ResourcePatternType as Pat
    from kafka.errors import SecurityDisabledError

    broker = _broker(tmp_path_factory)
    try:
        with pytest.raises(SecurityDisabledError):
            _kafka_python_describe(broker, "admin")
        admin = _admin(broker, "admin")
        for future in admin.create_acls([_binding("t", Pat.LITERAL, "User:alice", Op.READ, Perm.ALLOW)]).values():
            with pytest.raises(KafkaException, match="SECURITY_DISABLED"):
                future.result(30)
    finally:
        broker.stop()
