"""OffsetFetch: v0-10

Behaviour: answers a group's committed offsets (offset, leader epoch, metadata) for the asked
partitions, -1 and empty metadata for partitions without a commit (and for groups that do not
exist), or, with a null topic list (v2+), every partition the group has an offset for. Offsets
are answered whatever the group's state: simple consumers keep offsets without membership. From
v8 one request asks for several groups, each answered with its own error. ``require_stable``
(v7+) answers UNSTABLE_OFFSET_COMMIT for a partition with a transactional commit still open.
Group errors: INVALID_GROUP_ID (null id), COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE; v1 has no top-level error and puts the group's error on every asked
partition.

With an authorizer the group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED) and each topic DESCRIBE
(TOPIC_AUTHORIZATION_FAILED; all offsets: those of describable topics), as in Kafka 2.8.

Version notes: v0 reads ZooKeeper-stored offsets, ``/consumers/<group>/offsets/<topic>/<partition>``
(Kafka 3.9's ``handleOffsetFetchRequestFromZookeeper``): a partition the cluster does not know,
or without a stored offset, answers -1 and UNKNOWN_TOPIC_OR_PARTITION; a znode that is not a
number UNKNOWN_SERVER_ERROR; no metadata and no leader epoch. A broker without ZooKeeper
(embedded mode) answers UNSUPPORTED_VERSION on every asked partition, as a KRaft broker does. v0
is stated by ``protocol.zookeeper_offset_messages`` (kio has v1 on). v2 adds the top-level error and all-partitions fetch; v3 throttling; v5 leader
epochs; v6 is flexible; v7 require_stable; v8 several groups; v9 member id and epoch (not checked
for classic groups, as Kafka does); v10 names topics by id.
"""

from __future__ import annotations

from kcli.broker.groups.offsets import INVALID_OFFSET, NO_LEADER_EPOCH, NO_METADATA
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.OFFSET_FETCH
VERSIONS = (0, 10)


def handle(ctx, request):
    version = ctx.api_version
    if version == 0:
        return _handle_v0(ctx, request)
    if version >= 8:
        groups = [_fetch_group(ctx, g.group_id, g.topics, request.require_stable, version) for g in request.groups]
        return {"groups": groups}
    group = _fetch_group(ctx, request.group_id, request.topics, getattr(request, "require_stable", False), version)
    if version < 2 and group["error_code"] is not ErrorCode.NONE:
        group["topics"] = [
            {"name": t.name, "partitions": [_partition(p, error=group["error_code"]) for p in t.partition_indexes]}
            for t in request.topics
        ]
    return {"error_code": group["error_code"], "topics": group["topics"]}


def _fetch_group(ctx, group_id: str, requested, require_stable: bool, version: int) -> dict:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return {"group_id": group_id, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
    metadata = ctx.broker.metadata
    unknown_ids: list[dict] = []
    partitions = None
    if requested is not None:
        partitions = []
        for topic in requested:
            if version >= 10:
                info = metadata.topic_by_id(topic.topic_id)
                if info is None:
                    unknown_ids.append({"topic_id": topic.topic_id, "partitions": [_partition(p, error=ErrorCode.UNKNOWN_TOPIC_ID) for p in topic.partition_indexes]})
                    continue
                name = info.name
            else:
                name = topic.name
            partitions.extend((name, p) for p in topic.partition_indexes)
    refused: list[tuple[str, int]] = []
    if ctx.authorizing and partitions is not None:
        allowed = ctx.filter_by_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, (name for name, _ in partitions))
        refused = [(name, p) for name, p in partitions if name not in allowed]
        partitions = [(name, p) for name, p in partitions if name in allowed]
    error, fetched = ctx.broker.group_coordinator.fetch_offsets(group_id, require_stable, partitions)
    if error is not ErrorCode.NONE:
        return {"group_id": group_id, "error_code": error, "topics": []}
    if ctx.authorizing and requested is None:  # every committed offset: those of describable topics
        allowed = ctx.filter_by_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, {o.topic for o in fetched}, log_if_denied=False)
        fetched = [o for o in fetched if o.topic in allowed]
    by_topic: dict[str, list[dict]] = {}
    for name, index in refused:
        by_topic.setdefault(name, []).append(_partition(index, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    for offset in fetched:
        by_topic.setdefault(offset.topic, []).append(
            _partition(offset.partition, offset.offset, offset.leader_epoch, offset.metadata, offset.error)
        )
    topics = []
    for name, answered in by_topic.items():
        entry = {"name": name, "partitions": answered}
        if version >= 10:
            info = metadata.topic(name)
            if info is None:
                continue  # a topic deleted since the commit has no id to answer with
            entry["topic_id"] = info.topic_id
        topics.append(entry)
    return {"group_id": group_id, "error_code": ErrorCode.NONE, "topics": topics + unknown_ids}


def _partition(index: int, offset: int = INVALID_OFFSET, leader_epoch: int | None = None, metadata: str = NO_METADATA, error: ErrorCode = ErrorCode.NONE) -> dict:
    return {
        "partition_index": index,
        "committed_offset": offset,
        "committed_leader_epoch": NO_LEADER_EPOCH if leader_epoch is None else leader_epoch,
        "metadata": metadata,
        "error_code": error,
    }


# -- v0: ZooKeeper storage ----------------------------------------------------------------------------


def _handle_v0(ctx, request):
    broker = ctx.broker
    asked = [(t.name, p) for t in request.topics for p in t.partition_indexes]
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, request.group_id):
        return _v0_response(request, {tp: _partition(tp[1], error=ErrorCode.GROUP_AUTHORIZATION_FAILED) for tp in asked})
    refused = {}
    if ctx.authorizing:
        allowed = ctx.filter_by_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, (name for name, _ in asked))
        refused = {tp: _partition(tp[1], error=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for tp in asked if tp[0] not in allowed}
        asked = [tp for tp in asked if tp not in refused]
    if not broker.config.get("zookeeper.connect"):
        return _v0_response(request, {tp: _partition(tp[1], error=ErrorCode.UNSUPPORTED_VERSION) for tp in asked})
    return _fetch_v0(ctx, request, asked, refused)


async def _fetch_v0(ctx, request, asked, refused):
    from kcli.common import TopicPartition
    from kcli.metadata.store import MetadataStoreError
    from kcli.metadata.zk_consumers import ZkConsumerGroups
    from kcli.metadata.zk_paths import consumer_offset_path

    broker = ctx.broker
    answers: dict[tuple[str, int], dict] = dict(refused)
    known = []
    for name, index in asked:
        info = broker.metadata.topic(name)
        if info is None or index not in info.partitions:
            answers[(name, index)] = _partition(index, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        else:
            known.append((name, index))
    if known:
        groups = ZkConsumerGroups(broker.zk_client.store)
        try:
            stored = await broker.metadata_thread.call(groups.read_offsets, [request.group_id], {n for n, _ in known})
            found = stored[request.group_id]
            error = None
        except MetadataStoreError:
            found, error = None, ErrorCode.UNKNOWN_SERVER_ERROR
        malformed = {path for path, _ in found.malformed} if found is not None else set()
        for name, index in known:
            offset = found.offsets.get(TopicPartition(name, index)) if found is not None else None
            if error is not None or consumer_offset_path(request.group_id, name, index) in malformed:
                answers[(name, index)] = _partition(index, error=error or ErrorCode.UNKNOWN_SERVER_ERROR)
            elif offset is None:
                answers[(name, index)] = _partition(index, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                answers[(name, index)] = _partition(index, offset)
    return _v0_response(request, answers)


def _v0_response(request, answers) -> dict:
    return {"topics": [
        {"name": t.name, "partitions": [answers[(t.name, p)] for p in t.partition_indexes]}
        for t in request.topics
    ]}
