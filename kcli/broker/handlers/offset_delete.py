"""OffsetDelete: v0

Behaviour: deletes a group's committed offsets for the named partitions (tombstones in
``__consumer_offsets``). An Empty group's offsets are all deletable; while a consumer group has
members, offsets of topics its members subscribe to answer GROUP_SUBSCRIBED_TO_TOPIC and the
others are deleted; a non-consumer group with members answers NON_EMPTY_GROUP. A partition of a
topic the cluster does not know answers UNKNOWN_TOPIC_OR_PARTITION. Group errors (the answer then
has no partitions): GROUP_ID_NOT_FOUND, INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS,
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE.

With an authorizer the group needs DELETE (GROUP_AUTHORIZATION_FAILED) and each topic READ
(TOPIC_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: only v0 exists.
"""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.OFFSET_DELETE
VERSIONS = (0, 0)


def handle(ctx, request):
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
    metadata = ctx.broker.metadata
    errors: dict[tuple[str, int], ErrorCode] = {}
    partitions: list[tuple[str, int]] = []
    allowed = ctx.filter_by_authorized(AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)) if ctx.authorizing else None
    for topic in request.topics:
        info = metadata.topic(topic.name)
        for partition in topic.partitions:
            tp = (topic.name, partition.partition_index)
            if allowed is not None and topic.name not in allowed:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or partition.partition_index not in info.partitions:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                partitions.append(tp)
    error, results = ctx.broker.group_coordinator.delete_offsets(request.group_id, partitions)
    if error is not ErrorCode.NONE:
        return {"error_code": error, "topics": []}
    results = {**errors, **results}
    topics = []
    for topic in request.topics:
        answered = [{"partition_index": p.partition_index, "error_code": results[(topic.name, p.partition_index)]} for p in topic.partitions]
        topics.append({"name": topic.name, "partitions": answered})
    return {"error_code": ErrorCode.NONE, "topics": topics}
