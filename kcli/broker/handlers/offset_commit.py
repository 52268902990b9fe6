"""OffsetCommit: v0-10

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

With an authorizer the group needs READ (every partition GROUP_AUTHORIZATION_FAILED) and each
topic READ (TOPIC_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v0 stores the offsets in ZooKeeper, ``/consumers/<group>/offsets/<topic>/<partition>``
(Kafka 3.9's ``commitOffsetsToZookeeper``: no group membership, metadata still limited to
``offset.metadata.max.bytes``); a broker without ZooKeeper (embedded mode) answers
UNSUPPORTED_VERSION for every partition, as a KRaft broker does, once a partition is known. v1
stores in ``__consumer_offsets`` with a per-partition commit timestamp (-1: now) and no expiry.
v0 and v1 are stated by ``protocol.zookeeper_offset_messages`` (kio has v2 on). v2-v4 carry a retention time (-1: the broker's ``offsets.retention.minutes``;
otherwise the commit expires that long after it is made); v3 adds throttling; v6 the leader epoch;
v7 group.instance.id; v8 is flexible; v10 names topics by id.
"""

from __future__ import annotations

import logging

from kcli.broker.handlers._completion import Completion, answer
from kcli.broker.groups.offsets import DEFAULT_RETENTION_TIME, NO_METADATA, OffsetAndMetadata
from kcli.broker.groups.wire import duration_ms, leader_epoch_or_none
from kcli.common import TopicPartition
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

log = logging.getLogger(__name__)

API_KEY = ApiKey.OFFSET_COMMIT
VERSIONS = (0, 10)
DEFAULT_TIMESTAMP = -1  # v1's commit timestamp meaning "now"


def handle(ctx, request):
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        every = {(t, p.partition_index): error for t, topic in enumerate(request.topics) for p in topic.partitions}
        return _response(request, ctx.api_version, every, {}, {})
    if ctx.api_version == 0:
        return _handle_v0(ctx, request)
    broker = ctx.broker
    coordinator = broker.group_coordinator
    version = ctx.api_version
    now = coordinator.now_ms()
    retention = duration_ms(request.retention_time) if 2 <= version <= 4 else DEFAULT_RETENTION_TIME
    expire = None if retention == DEFAULT_RETENTION_TIME else now + retention
    errors: dict[tuple[int, int], ErrorCode] = {}  # (topic's place in the request, partition)
    names: dict[int, str] = {}
    commits: dict[tuple[str, int], OffsetAndMetadata] = {}
    allowed = _readable_topics(ctx, request)
    for t, topic in enumerate(request.topics):
        if version >= 10:
            info = broker.metadata.topic_by_id(topic.topic_id)
            unknown = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            info = broker.metadata.topic(topic.name)
            unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if info is not None:
            names[t] = info.name
        refused = allowed is not None and (info.name if info is not None else getattr(topic, "name", None)) not in allowed
        for partition in topic.partitions:
            index = partition.partition_index
            if refused:
                errors[(t, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None:
                errors[(t, index)] = unknown
            elif index not in info.partitions:
                errors[(t, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                commits[(info.name, index)] = OffsetAndMetadata(
                    partition.committed_offset,
                    leader_epoch_or_none(getattr(partition, "committed_leader_epoch", -1)),
                    NO_METADATA if partition.committed_metadata is None else partition.committed_metadata,
                    _commit_time(partition, now),
                    expire,
                )
    done = Completion()
    if commits:
        coordinator.commit_offsets(
            request.group_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
            request.generation_id_or_member_epoch,
            commits,
            done,
        )
    else:
        done({})
    return answer(done, lambda results: _response(request, version, errors, names, results))


def _readable_topics(ctx, request) -> set[str] | None:
    """The topics named (by name, or by id from v10) the principal may READ; None without an
    authorizer."""
    if not ctx.authorizing:
        return None
    metadata = ctx.broker.metadata
    names = []
    for topic in request.topics:
        info = metadata.topic_by_id(topic.topic_id) if ctx.api_version >= 10 else None
        name = info.name if info is not None else getattr(topic, "name", None)
        if name is not None:
            names.append(name)
    return ctx.filter_by_authorized(AclOperation.READ, ResourceType.TOPIC, names)


def _response(request, version: int, errors: dict, names: dict, results: dict) -> dict:
    topics = []
    for t, topic in enumerate(request.topics):
        partitions = []
        for partition in topic.partitions:
            index = partition.partition_index
            error = errors.get((t, index))
            if error is None:
                error = results[(names[t], index)]
            partitions.append({"partition_index": index, "error_code": error})
        entry = {"name": getattr(topic, "name", None), "partitions": partitions}
        if version >= 10:
            entry["topic_id"] = topic.topic_id
        topics.append(entry)
    return {"topics": topics}


def _commit_time(partition, now: int) -> int:
    stamp = getattr(partition, "commit_timestamp", DEFAULT_TIMESTAMP)  # v1 only
    return now if stamp == DEFAULT_TIMESTAMP else stamp


# -- v0: ZooKeeper storage ----------------------------------------------------------------------------


def _handle_v0(ctx, request):
    """Kafka 3.9's v0 path: unknown partitions answered first; the rest written to ZooKeeper."""
    broker = ctx.broker
    errors: dict[tuple[str, int], ErrorCode] = {}
    known: dict[tuple[str, int], object] = {}
    allowed = _readable_topics(ctx, request)
    for topic in request.topics:
        info = broker.metadata.topic(topic.name)
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            if allowed is not None and topic.name not in allowed:
                errors[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or partition.partition_index not in info.partitions:
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                known[key] = partition
    if not known:
        return _v0_response(request, errors)
    if not broker.config.get("zookeeper.connect"):
        # requireZkOrThrow: the whole request fails, every partition answered with the error.
        return _v0_response(request, {}, everywhere=ErrorCode.UNSUPPORTED_VERSION)
    limit = broker.group_coordinator.config.offset_metadata_max_bytes
    offsets = {}
    for key, partition in known.items():
        metadata = partition.committed_metadata
        if metadata is not None and len(metadata) > limit:
            errors[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
        else:
            offsets[TopicPartition(*key)] = partition.committed_offset
    return _store_v0(ctx, request, offsets, errors)


async def _store_v0(ctx, request, offsets, errors):
    from kcli.metadata.store import MetadataStoreError
    from kcli.metadata.zk_consumers import ZkConsumerGroups

    broker = ctx.broker
    groups = ZkConsumerGroups(broker.zk_client.store)
    try:
        await broker.metadata_thread.call(groups.write_offsets, request.group_id, offsets, if_unchanged=False)
        outcome = ErrorCode.NONE
    except MetadataStoreError as exc:
        log.warning("OffsetCommit v0 of group %s to ZooKeeper failed: %s", request.group_id, exc)
        outcome = ErrorCode.UNKNOWN_SERVER_ERROR
    for tp in offsets:
        errors[(tp.topic, tp.partition)] = outcome
    return _v0_response(request, errors)


def _v0_response(request, errors, everywhere: ErrorCode | None = None) -> dict:
    return {"topics": [
        {"name": topic.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": everywhere if everywhere is not None else errors[(topic.name, p.partition_index)]}
            for p in topic.partitions
        ]}
        for topic in request.topics
    ]}
