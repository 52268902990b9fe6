"""Fetch: v4-17

Behaviour: reads whole batches from each requested partition, from the fetch offset up to the
high watermark (read_uncommitted) or the last stable offset (read_committed, with the aborted
transactions the read overlaps, from the segments' ``.txnindex``), at most
``partition_max_bytes`` per partition and ``max_bytes`` (capped by the broker's
``fetch.max.bytes``) in all, except that the first partition with data returns at least one
batch. When fewer than ``min_bytes`` are available the request waits, without polling, until an
append to one of its partitions or ``max_wait_ms`` (the replica manager's ``fetch_messages``
and its ``DelayedFetch``; the handler keeps the fetch session and the encoding). Records go out as file ranges (sendfile for
large ranges). Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v13+),
OFFSET_OUT_OF_RANGE (below the log start offset or above the log end offset),
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, KAFKA_STORAGE_ERROR (a log in an offline log dir). Incremental fetch sessions as in KIP-227
(``fetch_sessions``); partitions that returned data move to the end of their session, so
every partition gets its turn. A fetch from a follower (``replica_id``, from v15 ``replica_state``'s,
a broker id) reads up to the log end offset whatever its isolation level, and the leader records
the follower's fetch offset and log start offset in the partition's replica state. With an
authorizer, a consumer needs READ on each topic and a follower CLUSTER_ACTION on the cluster
(Kafka 2.8: a refused partition answers TOPIC_AUTHORIZATION_FAILED either way).

From v11 a consumer (or kafka-replica-verification.sh's debugging consumer, replica id -2) may
read a follower's replica too, up to that replica's high watermark (KIP-392, Kafka's
fetchOnlyFromLeader); before v11, and for followers, a partition not led here answers
NOT_LEADER_OR_FOLLOWER.

Version notes: v7 adds sessions; v11 rack-aware preferred read replica (always -1 here);
v12 is flexible; v13 names topics by id; v15 moves the replica id into a tagged field; v17 adds
a follower's directory id as a tagged field of each partition (KIP-853: consumers send none, and
kcli's followers send v12, so it is read and ignored); v17's response is v16's.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict

from kcli.broker.replica.delayed_fetch import CONSUMER_REPLICA_ID, FetchParams
from kcli.broker.replica.fetch_sessions import CachedPartition
from kcli.broker.handlers import RawResponse
from kcli.errors import ErrorCode, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.protocol.fetch_response import PartitionResult, TopicResult, encode_fetch_response
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.FETCH
VERSIONS = (4, 17)


async def handle(ctx, request):
    broker = ctx.broker
    version = ctx.api_version
    replicas = broker.replica_manager
    by_id = version >= 13
    requested: OrderedDict[tuple[str, int], CachedPartition] = OrderedDict()
    unknown_ids: list[TopicResult] = []
    for topic in request.topics:
        name = replicas.topic_name(topic.topic_id) if by_id else topic.topic
        if name is None:
            unknown_ids.append(
                TopicResult("", topic.topic_id, [_error(p.partition, ErrorCode.UNKNOWN_TOPIC_ID) for p in topic.partitions])
            )
            continue
        topic_id = topic.topic_id if by_id else None
        for p in topic.partitions:
            requested[(name, p.partition)] = CachedPartition(
                topic_id, p.fetch_offset, p.partition_max_bytes, getattr(p, "current_leader_epoch", -1),
                fetcher_log_start_offset=getattr(p, "log_start_offset", -1), last_fetched_epoch=getattr(p, "last_fetched_epoch", -1),
            )
    forgotten = []
    for topic in getattr(request, "forgotten_topics_data", ()):
        name = replicas.topic_name(topic.topic_id) if by_id else topic.topic
        if name is not None:
            forgotten.extend((name, p) for p in topic.partitions)
    try:
        context = broker.fetch_sessions.new_context(getattr(request, "session_id", 0), getattr(request, "session_epoch", -1), requested, forgotten)
    except KcliError as e:
        chunks, size = encode_fetch_response(version, [], error_code=e.error_code)
        return RawResponse(chunks, size)

    replica_id = _replica_id(request)
    params = FetchParams(
        replica_id=replica_id,
        max_wait_ms=int(request.max_wait.total_seconds() * 1000),
        min_bytes=request.min_bytes,
        max_bytes=min(request.max_bytes, broker.config.get("fetch.max.bytes")),
        isolation_level=getattr(request, "isolation_level", 0),
        fetch_only_from_leader=replica_id >= 0 or version < 11,
    )
    partitions, denied = _authorized(ctx, params.replica_id, context.partitions)
    reads = []
    if partitions or not denied:
        future = asyncio.get_running_loop().create_future()

        def respond(reads):
            if not future.done():
                future.set_result(reads)

        replicas.fetch_messages(params, partitions, respond)
        reads = list(await future)
    reads.extend((key, context.partitions[key], _error(key[1], ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for key in denied)
    topics = _group(reads, context)
    chunks, size = encode_fetch_response(version, unknown_ids + topics, session_id=context.session_id)
    return RawResponse(chunks, size)


def _authorized(ctx, replica_id: int, partitions):
    """The session's partitions this fetch may read, and those it may not (Kafka 2.8: a follower
    needs CLUSTER_ACTION on the cluster, a consumer READ on each topic; either way a refused
    partition answers TOPIC_AUTHORIZATION_FAILED)."""
    if not ctx.authorizing:
        return partitions, []
    if replica_id >= 0:
        allowed = ctx.authorize_cluster(AclOperation.CLUSTER_ACTION)
        return (partitions, []) if allowed else (OrderedDict(), list(partitions))
    topics = ctx.filter_by_authorized(AclOperation.READ, ResourceType.TOPIC, (name for name, _ in partitions))
    denied = [key for key in partitions if key[0] not in topics]
    if not denied:
        return partitions, []
    return OrderedDict((key, cached) for key, cached in partitions.items() if key[0] in topics), denied


def _group(reads, context) -> list[TopicResult]:
    """The session's answer (Kafka's FetchContext.updateAndGenerateResponseData): an incremental
    session leaves out partitions with nothing new, and partitions that returned data move to the
    end of their session, so every partition gets its turn."""
    topics: dict[str, TopicResult] = {}
    moved = []
    for key, cached, result in reads:
        respond = cached.must_respond(result.high_watermark, result.last_stable_offset, result.log_start_offset, result.records_size > 0, result.error_code)
        if context.incremental:
            if not respond:
                continue
            if result.records_size:
                moved.append(key)
        topic = topics.get(key[0])
        if topic is None:
            topic = topics[key[0]] = TopicResult(key[0], cached.topic_id or uuid.UUID(int=0))
        topic.partitions.append(result)
    for key in moved:
        context.partitions.move_to_end(key)
    return list(topics.values())


def _replica_id(request) -> int:
    """Who fetches: a broker id for a follower, -1 for a consumer (v15+: ``replica_state``)."""
    state = getattr(request, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    return int(getattr(request, "replica_id", CONSUMER_REPLICA_ID))


def _error(index: int, code: ErrorCode) -> PartitionResult:
    return PartitionResult(index, error_code=code, records=b"")
