"""DeleteRecords: v0-2

Behaviour: moves each partition's log start offset up to the requested offset (-1: the high
watermark), so records below it can no longer be read; the segments entirely below it are removed
by the next retention pass. The answer's low watermark is the partition's log start offset
afterwards (it may already be past the requested offset, which is not an error). A partition
missing from the metadata answers UNKNOWN_TOPIC_OR_PARTITION, one this broker does not host
NOT_LEADER_OR_FOLLOWER, an internal topic INVALID_TOPIC_EXCEPTION, a topic whose cleanup.policy
lacks ``delete`` POLICY_VIOLATION, and an offset past the high watermark (or negative but -1)
OFFSET_OUT_OF_RANGE; failed partitions answer low watermark -1. A partition named twice is
answered once, for the last offset given. With a single in-sync replica the deletion is complete
when it is answered, so the timeout is never waited on.

With an authorizer each topic needs DELETE (TOPIC_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 is v0 with throttling on quota violation; v2 is flexible.
"""

from __future__ import annotations

import logging

from kcli.metadata import topic_names
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.DELETE_RECORDS
VERSIONS = (0, 2)

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1

log = logging.getLogger(__name__)


def handle(ctx, request):
    offsets: dict[tuple[str, int], int] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            offsets[(topic.name, partition.partition_index)] = partition.offset
    deletable = ctx.filter_by_authorized(AclOperation.DELETE, ResourceType.TOPIC, (t.name for t in request.topics)) if ctx.authorizing else None
    by_topic: dict[str, list[dict]] = {}
    for (name, index), offset in offsets.items():
        if deletable is not None and name not in deletable:
            refused = {"partition_index": index, "low_watermark": INVALID_LOW_WATERMARK, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
            by_topic.setdefault(name, []).append(refused)
            continue
        by_topic.setdefault(name, []).append(_delete(ctx.broker, name, index, offset))
    return {"topics": [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]}


def _delete(broker, topic: str, index: int, offset: int) -> dict:
    result = {"partition_index": index, "low_watermark": INVALID_LOW_WATERMARK, "error_code": ErrorCode.NONE}
    try:
        result["low_watermark"] = _delete_below(broker, topic, index, offset)
    except KcliError as e:
        log.debug("DeleteRecords on %s-%d failed: %s", topic, index, e)
        result["error_code"] = e.error_code
    except Exception:
        log.exception("Error processing delete records operation on partition %s-%d", topic, index)
        result["error_code"] = ErrorCode.UNKNOWN_SERVER_ERROR
    return result


def _delete_below(broker, topic: str, index: int, offset: int) -> int:
    info = broker.metadata.topic(topic)
    if info is None or index not in info.partitions:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if topic_names.is_internal(topic):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {topic}")
    partition = broker.replica_manager.get(topic, index)
    if partition is None:
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"Leader not local for partition {topic}-{index} on broker {broker.id}")
    partition_log = partition.log
    if not partition_log.config.delete:
        raise KafkaError(ErrorCode.POLICY_VIOLATION, f"Records of partition {topic}-{index} can not be deleted due to the configured policy")
    target = partition_log.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"The offset {target} for partition {topic}-{index} is not valid")
    partition_log.maybe_increment_log_start_offset(target)
    return partition_log.log_start_offset
