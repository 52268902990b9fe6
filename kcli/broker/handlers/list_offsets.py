"""ListOffsets: v1-9

Behaviour: for each partition, the offset a timestamp names: -2 the log start offset (earliest),
-1 the high watermark (latest; the last stable offset for read_committed; the log end offset
for a replica, a follower's fetcher), -3 the offset and
timestamp of the record with the largest timestamp (v7+), -4 the earliest local offset (v8+, the
log start offset: kcli keeps no remote tier), -5 the latest tiered offset (v9+: offset, timestamp
and leader epoch -1, as Kafka answers without a remote tier); any other timestamp the first
offset whose record timestamp is at least it, or -1 when none is. A special timestamp the
request's version does not know answers UNSUPPORTED_VERSION. The leader epoch of the answer is
the epoch that offset was written in. UNKNOWN_TOPIC_OR_PARTITION for a partition not hosted; a
current leader epoch that does not match answers FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH.
With an authorizer each topic needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 answers one offset (the v0 list form is not served); v2 adds isolation_level;
v4 leader epochs; v6 flexible; v7, v8 and v9 add the timestamps -3, -4 and -5.
"""

from __future__ import annotations

from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.LIST_OFFSETS
VERSIONS = (1, 9)

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
# The first version that knows each special timestamp (Kafka's timestampMinSupportedVersion).
SPECIAL_SINCE = {LATEST: 1, EARLIEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}
READ_COMMITTED = 1


def handle(ctx, request):
    replicas = ctx.broker.replica_manager
    # A replica (a follower's fetcher) is answered without isolation: the latest offset is the
    # log end offset (Kafka's KafkaApis: isolation only for a client's request).
    isolation = None if getattr(request, "replica_id", -1) >= 0 else getattr(request, "isolation_level", 0)
    version = ctx.api_version
    allowed = None
    if ctx.authorizing:
        allowed = ctx.filter_by_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics))
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            result = {"partition_index": p.partition_index, "timestamp": -1, "offset": -1, "leader_epoch": -1}
            if allowed is not None and topic.name not in allowed:
                result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                partitions.append(result)
                continue
            try:
                partition = replicas.get_partition_or_error(topic.name, p.partition_index)
                partition.check_leader_epoch(getattr(p, "current_leader_epoch", -1))
                result.update(_lookup(partition, p.timestamp, isolation, version))
            except KcliError as e:
                result["error_code"] = e.error_code
            partitions.append(result)
        topics.append({"name": topic.name, "partitions": partitions})
    return {"topics": topics}


def _lookup(partition, timestamp: int, isolation: int | None, version: int) -> dict:
    log = partition.log
    if isolation is None:
        fetchable = log.log_end_offset
    else:
        fetchable = partition.last_stable_offset if isolation == READ_COMMITTED else partition.high_watermark
    if timestamp == LATEST:
        return {"offset": fetchable, "leader_epoch": _epoch(log.leader_epoch_cache.epoch_for_offset(fetchable))}
    since = SPECIAL_SINCE.get(timestamp)
    if timestamp < 0 and (since is None or version < since):
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"timestamp {timestamp} is not a special timestamp of ListOffsets v{version}")
    if timestamp == LATEST_TIERED:
        return {}  # nothing is tiered: the answer's -1 offset, timestamp and epoch are Kafka's
    found = log.fetch_offset_by_timestamp(timestamp)
    if found is None or found.offset < 0 or (timestamp >= 0 and found.offset >= fetchable):
        return {}
    return {"timestamp": found.timestamp, "offset": found.offset, "leader_epoch": _epoch(found.leader_epoch)}


def _epoch(epoch: int | None) -> int:
    return -1 if epoch is None else epoch
