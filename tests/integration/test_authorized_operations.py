"""Authorized operations (KIP-430) and DescribeCluster's endpoint types over the wire.

The expected values are Kafka 3.9's answers with no authorizer configured: the operations
``AclEntry.supportedOperations`` lists for the resource type, as a bit field with bit n set for
AclOperation code n (``Utils.to32BitField``); Integer.MIN_VALUE when the request did not ask. In
Metadata, cluster operations exist in v8-10 only; topic operations go on every topic answered by
name, errors included (``KafkaApis.handleTopicMetadataRequest``).
"""

from __future__ import annotations

import uuid

import pytest

from kcli.errors import ErrorCode
from tests.wire_client import code

BROKER_OVERRIDES = {"auto.create.topics.enable": "false", "num.partitions": "1"}

METADATA, DESCRIBE_CLUSTER = 3, 60
NOT_REQUESTED = -2147483648

# Kafka's AclOperation codes.
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def bits(*codes: int) -> int:
    return sum(1 << c for c in codes)


CLUSTER_OPERATIONS = bits(CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE)
TOPIC_OPERATIONS = bits(READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS)


def metadata(client, version: int, topics, *, cluster_ops: bool, topic_ops: bool):
    fields = {
        "topics": topics,
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": cluster_ops,
        "include_topic_authorized_operations": topic_ops,
    }
    return client.call(METADATA, version, fields)


@pytest.mark.parametrize("version", [8, 9, 10])
def test_metadata_v8_to_v10_answers_cluster_operations_when_asked(client, version):
    asked = metadata(client, version, [], cluster_ops=True, topic_ops=False)
    assert asked.cluster_authorized_operations == CLUSTER_OPERATIONS
    not_asked = metadata(client, version, [], cluster_ops=False, topic_ops=False)
    assert not_asked.cluster_authorized_operations == NOT_REQUESTED


@pytest.mark.parametrize("version", [8, 10, 12])
def test_metadata_topic_operations_on_every_topic_answered_by_name(client, new_topic, version):
    existing, missing = new_topic("here"), new_topic("missing")
    client.create_topic(existing, 1)
    requested = [{"name": n} for n in (existing, missing, "bad name!")]
    answer = metadata(client, version, requested, cluster_ops=False, topic_ops=True)
    by_name = {t.name: (code(t.error_code), t.topic_authorized_operations) for t in answer.topics}
    assert by_name == {
        existing: (ErrorCode.NONE, TOPIC_OPERATIONS),
        missing: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, TOPIC_OPERATIONS),
        "bad name!": (ErrorCode.INVALID_TOPIC_EXCEPTION, TOPIC_OPERATIONS),
    }
    not_asked = metadata(client, version, requested, cluster_ops=False, topic_ops=False)
    assert {t.topic_authorized_operations for t in not_asked.topics} == {NOT_REQUESTED}


def test_metadata_all_topics_carry_topic_operations(client, new_topic):
    topic = new_topic()
    client.create_topic(topic, 1)
    answer = metadata(client, 9, None, cluster_ops=True, topic_ops=True)
    assert {t.name: t.topic_authorized_operations for t in answer.topics}[topic] == TOPIC_OPERATIONS
    assert answer.cluster_authorized_operations == CLUSTER_OPERATIONS


def test_metadata_unknown_topic_id_carries_no_operations(client):
    unknown = uuid.uuid4()
    answer = metadata(client, 12, [{"name": None, "topic_id": unknown}], cluster_ops=False, topic_ops=True)
    (topic,) = answer.topics
    assert (code(topic.error_code), topic.topic_id, topic.topic_authorized_operations) == (ErrorCode.UNKNOWN_TOPIC_ID, unknown, NOT_REQUESTED)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster_answers_kafkas_cluster_operations(client, version):
    asked = client.call(DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": True, "endpoint_type": 1})
    assert (code(asked.error_code), asked.cluster_authorized_operations) == (ErrorCode.NONE, CLUSTER_OPERATIONS)
    not_asked = client.call(DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": False, "endpoint_type": 1})
    assert not_asked.cluster_authorized_operations == NOT_REQUESTED


def test_describe_cluster_for_controllers_is_a_mismatched_endpoint(client):
    answer = client.call(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 2})
    assert (code(answer.error_code), answer.error_message) == (
        ErrorCode.MISMATCHED_ENDPOINT_TYPE,
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
    )
    assert (answer.cluster_id, answer.controller_id, answer.brokers, answer.endpoint_type) == ("", -1, (), 1)
    assert answer.cluster_authorized_operations == NOT_REQUESTED


@pytest.mark.parametrize("endpoint_type", [0, 3])
def test_describe_cluster_unknown_endpoint_type_is_unsupported(client, endpoint_type):
    answer = client.call(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False, "endpoint_type": endpoint_type})
    assert (code(answer.error_code), answer.error_message) == (ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}")
