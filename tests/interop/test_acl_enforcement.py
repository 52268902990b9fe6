"""Kafka 2.8's authorization rules enforced on real clients over SASL_PLAINTEXT: alice is granted
what she needs through ACLs, bob nothing; produce, consume, group membership, transactional ids,
topic creation and deletion are allowed and refused as Kafka's KafkaApis allows and refuses them;
Metadata hides the topics a principal may not describe; prefixed patterns and a DENY over an
ALLOW. The ACLs are written by the super user through confluent-kafka's AdminClient."""

from __future__ import annotations

import uuid

import pytest

from broker_process import BrokerProcess

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw" user_bob="bob-pw";'
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "security.inter.broker.protocol": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
    }).start()
    yield process
    process.stop()


def _config(broker, user: str) -> dict:
    return {"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": f"{user}-pw"}


def _admin(broker, user: str = "admin"):
    from confluent_kafka.admin import AdminClient

    return AdminClient(_config(broker, user))


def _grant(broker, *acls: tuple) -> None:
    """ACLs as (resource type, name, pattern type, principal, operation, permission), host *."""
    from confluent_kafka.admin import AclBinding

    bindings = [AclBinding(restype, name, pattern, principal, "*", operation, permission) for restype, name, pattern, principal, operation, permission in acls]
    admin = _admin(broker)  # held until the futures are done
    for future in admin.create_acls(bindings).values():
        future.result(30)


def _create_topics(broker, *names: str) -> None:
    from confluent_kafka.admin import NewTopic

    admin = _admin(broker)  # held until the futures are done
    for future in admin.create_topics([NewTopic(name, 1, 1) for name in names]).values():
        future.result(30)


def _produce(broker, user: str, topic: str, **extra) -> str | None:
    """The delivery error's name, or None when the record was written."""
    from confluent_kafka import Producer

    errors = []
    producer = Producer({**_config(broker, user), "message.timeout.ms": 10000, **extra})
    producer.produce(topic, b"value", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert len(errors) == 1
    return None if errors[0] is None else errors[0].name()


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_produce_needs_write_and_idempotence_idempotent_write(broker):
    from confluent_kafka.admin import AclOperation as Op, AclPermissionType as Perm, ResourcePatternType as Pat, ResourceType as Res

    topic = _unique("orders")
    _create_topics(broker, topic)
    _grant(broker, (Res.TOPIC, topic, Pat.LITERAL, "User:alice", Op.WRITE, Perm.ALLOW))
    assert _produce(broker, "alice", topic, **{"enable.idempotence": False}) is None
    assert _produce(broker, "bob", topic, **{"enable.idempotence": False}) == "TOPIC_AUTHORIZATION_FAILED"
    # An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    # (InitProducerId), then IDEMPOTENT_WRITE for its batches (Kafka 2.8's Produce).
    assert _produce(broker, "alice", topic, **{"enable.idempotence": True}) == "CLUSTER_AUTHORIZATION_FAILED"
    _grant(broker, (Res.BROKER, "kafka-cluster", Pat.LITERAL, "User:alice", Op.IDEMPOTENT_WRITE, Perm.ALLOW))
    assert _produce(broker, "alice", topic, **{"enable.idempotence": True}) is None


def test_consume_needs_read_on_the_topic_and_the_group(broker):
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka.admin import AclOperation as Op, AclPermissionType as Perm, ResourcePatternType as Pat, ResourceType as Res

    topic, group = _unique("events"), _unique("readers")
    _create_topics(broker, topic)
    assert _produce(broker, "admin", topic) is None
    _grant(broker, (Res.TOPIC, topic, Pat.LITERAL, "User:alice", Op.READ, Perm.ALLOW))

    def consume(user: str, group_id: str):
        consumer = Consumer({**_config(broker, user), "group.id": group_id, "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        try:
            for _ in range(60):
                message = consumer.poll(0.5)
                if message is not None:
                    if message.error():
                        return message.error().name()
                    return message.value()
            return None
        except KafkaException as e:
            return e.args[0].name()
        finally:
            consumer.close()

    assert consume("alice", group) == "GROUP_AUTHORIZATION_FAILED"
    _grant(broker, (Res.GROUP, group, Pat.LITERAL, "User:alice", Op.READ, Perm.ALLOW))
    assert consume("alice", group) == b"value"
    _grant(broker, (Res.GROUP, group, Pat.LITERAL, "User:bob", Op.READ, Perm.ALLOW))
    assert consume("bob", group) == "TOPIC_AUTHORIZATION_FAILED"


def test_metadata_hides_topics_the_principal_may_not_describe(broker):
    from confluent_kafka.admin import AclOperation as Op, AclPermissionType as Perm, ResourcePatternType as Pat, ResourceType as Res

    mine, theirs = _unique("visible"), _unique("hidden")
    _create_topics(broker, mine, theirs)
    _grant(broker, (Res.TOPIC, mine, Pat.LITERAL, "User:alice", Op.DESCRIBE, Perm.ALLOW))
    seen = set(_admin(broker, "alice").list_topics(timeout=30).topics)
    assert mine in seen and theirs not in seen
    assert not {mine, theirs} & set(_admin(broker, "bob").list_topics(timeout=30).topics)
    # Asked by name, a topic bob may not describe answers TOPIC_AUTHORIZATION_FAILED, existing or not.
    answer = _admin(broker, "bob").list_topics(topic=theirs, timeout=30).topics[theirs]
    assert answer.error is not None and answer.error.name() == "TOPIC_AUTHORIZATION_FAILED"


def test_prefixed_acls_and_deny_over_allow(broker):
    from confluent_kafka.admin import AclOperation as Op, AclPermissionType as Perm, ResourcePatternType as Pat, ResourceType as Res

    prefix = _unique("team") + "-"
    granted, secret, other = prefix + "a", prefix + "secret", _unique("other")
    _create_topics(broker, granted, secret, other)
    _grant(broker, (Res.TOPIC, prefix, Pat.PREFIXED, "User:alice", Op.WRITE, Perm.ALLOW))
    assert _produce(broker, "alice", granted, **{"enable.idempotence": False}) is None
    assert _produce(broker, "alice", other, **{"enable.idempotence": False}) == "TOPIC_AUTHORIZATION_FAILED"
    _grant(broker, (Res.TOPIC, secret, Pat.LITERAL, "User:alice", Op.WRITE, Perm.DENY))
    assert _produce(broker, "alice", secret, **{"enable.idempotence": False}) == "TOPIC_AUTHORIZATION_FAILED"
    assert _produce(broker, "alice", granted, **{"enable.idempotence": False}) is None


def test_transactional_ids_need_write(broker):
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AclOperation as Op, AclPermissionType as Perm, ResourcePatternType as Pat, ResourceType as Res

    topic, allowed, refused = _unique("txn"), _unique("tx-a"), _unique("tx-b")
    _create_topics(broker, topic)
    _grant(
        broker,
        (Res.TOPIC, topic, Pat.LITERAL, "User:alice", Op.WRITE, Perm.ALLOW),
        (Res.TRANSACTIONAL_ID, allowed, Pat.LITERAL, "User:alice", Op.WRITE, Perm.ALLOW),
    )
    producer = Producer({**_config(broker, "alice"), "transactional.id": allowed})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"in a transaction")
    producer.commit_transaction(30)

    with pytest.raises(KafkaException, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"):
        Producer({**_config(broker, "alice"), "transactional.id": refused}).init_transactions(30)


def test_topic_creation_and_deletion_need_create_and_delete(broker):
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, KafkaAdminClient, NewTopic, ResourcePattern, ResourceType
    from kafka.errors import TopicAuthorizationFailedError

    def admin(user: str):
        return KafkaAdminClient(bootstrap_servers=broker.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                sasl_plain_username=user, sasl_plain_password=f"{user}-pw", request_timeout_ms=30000)

    name = _unique("made-by-alice")
    alice, root = admin("alice"), admin("admin")
    try:
        result = alice.create_topics([NewTopic(name, 1, 1)], raise_errors=False)
        assert [t["error_code"] for t in result["topics"]] == [TopicAuthorizationFailedError.errno]
        root.create_acls([ACL("User:alice", "*", ACLOperation.CREATE, ACLPermissionType.ALLOW, ResourcePattern(ResourceType.TOPIC, name))])
        result = alice.create_topics([NewTopic(name, 1, 1)], raise_errors=False)
        assert [t["error_code"] for t in result["topics"]] == [0]
        with pytest.raises(TopicAuthorizationFailedError):
            alice.delete_topics([name])
        root.create_acls([ACL("User:alice", "*", ACLOperation.DELETE, ACLPermissionType.ALLOW, ResourcePattern(ResourceType.TOPIC, name))])
        alice.delete_topics([name])
    finally:
        alice.close()
        root.close()
