"""DescribeProducers: v0

Behaviour: for each requested partition, the producers its log currently tracks (those that
wrote idempotently or transactionally and have not expired): producer id and epoch, last
sequence and timestamp, coordinator epoch, and the first offset of an open transaction (-1 when
none). An illegal topic name answers INVALID_TOPIC_EXCEPTION with the reason for each of its
partitions, a missing topic UNKNOWN_TOPIC_OR_PARTITION with the code's message, a partition
index the topic lacks UNKNOWN_TOPIC_OR_PARTITION, and a partition this broker does not host
NOT_LEADER_OR_FOLLOWER.

With an authorizer each topic needs READ (TOPIC_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v0 is the only version, flexible.
"""

from __future__ import annotations

import logging

from kcli.metadata import topic_names
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_PRODUCERS
VERSIONS = (0, 0)

log = logging.getLogger(__name__)


def handle(ctx, request):
    broker = ctx.broker
    readable = ctx.filter_by_authorized(AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)) if ctx.authorizing else None
    topics = []
    for topic in request.topics:
        if readable is not None and topic.name not in readable:
            problem = KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        else:
            problem = _topic_problem(broker, topic.name)
        partitions = [
            _failed(index, problem) if problem is not None else _describe(broker, topic.name, index)
            for index in topic.partition_indexes
        ]
        topics.append({"name": topic.name, "partitions": partitions})
    return {"topics": topics}


def _topic_problem(broker, name: str) -> KafkaError | None:
    try:
        topic_names.validate(name)
    except KafkaError as e:
        return e
    if broker.metadata.topic(name) is None:
        return KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return None


def _describe(broker, topic: str, index: int) -> dict:
    partition = broker.replica_manager.get(topic, index)
    if partition is None:
        info = broker.metadata.topic(topic)
        code = ErrorCode.NOT_LEADER_OR_FOLLOWER if info is not None and index in info.partitions else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return {"partition_index": index, "error_code": code, "error_message": None, "active_producers": []}
    try:
        producers = partition.log.active_producers()
    except KcliError as e:
        return _failed(index, e)
    return {
        "partition_index": index,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "active_producers": [
            {
                "producer_id": p.producer_id,
                "producer_epoch": p.producer_epoch,
                "last_sequence": p.last_sequence,
                "last_timestamp": p.last_timestamp,
                "coordinator_epoch": p.coordinator_epoch,
                "current_txn_start_offset": p.current_txn_start_offset,
            }
            for p in producers
        ],
    }


def _failed(index: int, error: KcliError) -> dict:
    return {"partition_index": index, "error_code": error.error_code, "error_message": str(error) or None, "active_producers": []}
