"""Fetch: v4-17

Behaviour: reads whole batches from each requested partition, from the fetch offset up to the
high watermark (read_uncommitted) or the last stable offset (read_committed, with the aborted
transactions the read overlaps, from the segments' ``.txnindex``), at most
``partition_max_bytes`` per partition and ``max_bytes`` (capped by the broker's
``fetch.max.bytes``) in all, except that the first partition with data returns at least one
batch. When fewer than ``min_bytes`` are available the request waits, without polling, until an
append to one of its partitions or ``max_wait_ms``. Records go out as file ranges (sendfile for
large ranges). Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v13+),
OFFSET_OUT_OF_RANGE (below the log start offset or above the log end offset),
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, KAFKA_STORAGE_ERROR (a log in an offline log dir). Incremental fetch sessions as in KIP-227
(``fetch_sessions``); partitions that returned data move to the end of their session, so
every partition gets its turn.

Version notes: v7 adds sessions; v11 rack-aware preferred read replica (always -1 here);
v12 is flexible; v13 names topics by id; v15 moves the replica id into a tagged field; v17 adds
a follower's directory id as a tagged field of each partition (KIP-853: consumers send none, and
kcli has no followers, so it is read and ignored); v17's response is v16's.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict

from kcli.broker.fetch_sessions import CachedPartition
from kcli.broker.handlers import RawResponse
from kcli.errors import ErrorCode, KcliError
from kcli.protocol.fetch_response import PartitionResult, TopicResult, encode_fetch_response

API_KEY = 1
VERSIONS = (4, 17)

READ_COMMITTED = 1


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
            requested[(name, p.partition)] = CachedPartition(topic_id, p.fetch_offset, p.partition_max_bytes, getattr(p, "current_leader_epoch", -1))
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

    isolation = getattr(request, "isolation_level", 0)
    max_bytes = min(request.max_bytes, broker.config.get("fetch.max.bytes"))
    deadline = time.monotonic() + request.max_wait.total_seconds()
    while True:
        reads = _read_all(replicas, context.partitions, max_bytes, isolation)
        available = sum(r.records_size for _, _, r in reads)
        remaining = deadline - time.monotonic()
        if available >= request.min_bytes or remaining <= 0 or replicas.closing or any(r.error_code for _, _, r in reads):
            break
        await replicas.wait_for_data(context.partitions.keys(), remaining)

    topics = _group(reads, context)
    chunks, size = encode_fetch_response(version, unknown_ids + topics, session_id=context.session_id)
    return RawResponse(chunks, size)


def _read_all(replicas, partitions, max_bytes: int, isolation: int) -> list[tuple[tuple[str, int], CachedPartition, PartitionResult]]:
    results = []
    budget = max_bytes
    min_one_message = True
    for key, cached in partitions.items():
        result = _read_partition(replicas, key, cached, max(0, min(cached.max_bytes, budget)), min_one_message, isolation)
        size = result.records_size
        if size:
            budget -= size
            min_one_message = False
        results.append((key, cached, result))
    return results


def _read_partition(replicas, key, cached: CachedPartition, max_bytes: int, min_one_message: bool, isolation: int) -> PartitionResult:
    topic, index = key
    partition = replicas.get(topic, index)
    if partition is None:
        if replicas.log_manager.is_partition_offline(topic, index):
            return _error(index, ErrorCode.KAFKA_STORAGE_ERROR)
        return _error(index, ErrorCode.UNKNOWN_TOPIC_ID if cached.topic_id is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    log = partition.log
    result = PartitionResult(index, high_watermark=partition.high_watermark, last_stable_offset=partition.last_stable_offset, log_start_offset=log.log_start_offset)
    result.aborted_transactions = [] if isolation == READ_COMMITTED else None
    try:
        partition.check_leader_epoch(cached.current_leader_epoch)
        limit = result.last_stable_offset if isolation == READ_COMMITTED else result.high_watermark
        if max_bytes <= 0 and not min_one_message:
            result.records = b""
            return result
        data = log.read(cached.fetch_offset, max_bytes, min_one_message=min_one_message, max_offset=limit)
        result.records = data.slices
        if isolation == READ_COMMITTED and data.slices:
            result.aborted_transactions = _aborted_transactions(log, cached.fetch_offset, limit)
    except KcliError as e:
        result.error_code = e.error_code
        result.records = b""
    return result


def _aborted_transactions(log, fetch_offset: int, upper_bound: int) -> list[tuple[int, int]]:
    """(producer id, first offset) of each aborted transaction that overlaps the read, from the
    segments' ``.txnindex`` (the consumer drops their records as it meets the ABORT markers)."""
    return [(txn.producer_id, txn.first_offset) for txn in log.collect_aborted_transactions(fetch_offset, upper_bound)]


def _group(reads, context) -> list[TopicResult]:
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


def _error(index: int, code: ErrorCode) -> PartitionResult:
    return PartitionResult(index, error_code=code, records=b"")
