"""OffsetCommit: v2-10

Behaviour: stores a group's committed offsets in ``__consumer_offsets`` (OffsetCommitKey v1 ->
OffsetCommitValue v3, or v1 with an expire time). A member commits with its member id and
generation (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID otherwise;
REBALANCE_IN_PROGRESS between a rebalance's JoinGroup and SyncGroup); generation -1 without a
member id is a simple consumer or an admin tool, accepted while the group has no members. A
partition of a topic the cluster does not know answers UNKNOWN_TOPIC_OR_PARTITION (v10:
UNKNOWN_TOPIC_ID) without reaching the group; metadata longer than ``offset.metadata.max.bytes``
answers OFFSET_METADATA_TOO_LARGE while the partition's other commits are stored. The committed
metadata, leader epoch and offset come back from OffsetFetch as given; a null metadata is stored
as the empty string.

Version notes: v2-v4 carry a retention time (-1: the broker's ``offsets.retention.minutes``;
otherwise the commit expires that long after it is made); v3 adds throttling; v6 the leader epoch;
v7 group.instance.id; v8 is flexible; v10 names topics by id.
"""

from __future__ import annotations

from kcli.broker.groups.offsets import DEFAULT_RETENTION_TIME, NO_METADATA, OffsetAndMetadata
from kcli.broker.groups.wire import duration_ms, leader_epoch_or_none
from kcli.errors import ErrorCode

API_KEY = 8
VERSIONS = (2, 10)


def handle(ctx, request):
    broker = ctx.broker
    coordinator = broker.group_coordinator
    version = ctx.api_version
    now = coordinator.now_ms()
    retention = duration_ms(request.retention_time) if version <= 4 else DEFAULT_RETENTION_TIME
    expire = None if retention == DEFAULT_RETENTION_TIME else now + retention
    errors: dict[tuple[int, int], ErrorCode] = {}  # (topic's place in the request, partition)
    names: dict[int, str] = {}
    commits: dict[tuple[str, int], OffsetAndMetadata] = {}
    for t, topic in enumerate(request.topics):
        if version >= 10:
            info = broker.metadata.topic_by_id(topic.topic_id)
            unknown = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            info = broker.metadata.topic(topic.name)
            unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if info is not None:
            names[t] = info.name
        for partition in topic.partitions:
            index = partition.partition_index
            if info is None:
                errors[(t, index)] = unknown
            elif index not in info.partitions:
                errors[(t, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                commits[(info.name, index)] = OffsetAndMetadata(
                    partition.committed_offset,
                    leader_epoch_or_none(getattr(partition, "committed_leader_epoch", -1)),
                    NO_METADATA if partition.committed_metadata is None else partition.committed_metadata,
                    now,
                    expire,
                )
    results = {}
    if commits:
        results = coordinator.commit_offsets(
            request.group_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
            request.generation_id_or_member_epoch,
            commits,
        )
    topics = []
    for t, topic in enumerate(request.topics):
        partitions = []
        for partition in topic.partitions:
            index = partition.partition_index
            error = errors.get((t, index))
            if error is None:
                error = results[(names[t], index)]
            partitions.append({"partition_index": index, "error_code": error})
        topics.append({"name": getattr(topic, "name", None), "topic_id": getattr(topic, "topic_id", None), "partitions": partitions})
    return {"topics": topics}
