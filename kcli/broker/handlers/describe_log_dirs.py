"""DescribeLogDirs: v1-4

Behaviour: one result per configured log dir (its absolute path), holding the partition logs
found in it: for each, the size of its segments in bytes, the offset lag (Kafka's
getLogEndOffsetLag: the high watermark minus the log end offset, never below 0, so 0 for a
leader and for a follower, whose high watermark never passes its own log end offset; -1 for a
log this broker does not host as leader or follower) and is_future false (kcli never moves
replicas between dirs). Null topics
mean every log; otherwise only the named partitions, and a topic none of whose partitions live
in a dir is left out of that dir. From v4 each dir also carries the total and usable bytes of its
file system (Long.MAX_VALUE when the size does not fit). A dir that cannot be read, or that
went offline after a disk error, answers KAFKA_STORAGE_ERROR for that dir alone.

With an authorizer DESCRIBE on the cluster is needed (no log dirs, and from v3
CLUSTER_AUTHORIZATION_FAILED; Kafka 2.8 answers the empty list, 3.9 the code too).

Version notes: v0 is not served (a client sends v1, which is the same); v2 is flexible; v3 adds
the top-level error code; v4 adds total and usable bytes.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_LOG_DIRS
VERSIONS = (1, 4)

INVALID_OFFSET_LAG = -1
LONG_MAX = 2**63 - 1

log = logging.getLogger(__name__)


def handle(ctx, request):
    broker = ctx.broker
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    wanted = None if request.topics is None else {(t.topic, p) for t in request.topics for p in t.partitions}
    log_dirs = list(dict.fromkeys(broker.log_manager.log_dirs))
    return {"error_code": ErrorCode.NONE, "results": [_describe_dir(broker, log_dir, wanted) for log_dir in log_dirs]}


def _describe_dir(broker, log_dir: Path, wanted: set[tuple[str, int]] | None) -> dict:
    path = str(log_dir)
    if broker.log_manager.failure_channel.is_offline(log_dir):
        return {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": path, "topics": []}
    try:
        total, usable = _space(log_dir)
        topics = _topics(broker, log_dir, wanted)
    except OSError as e:
        log.warning("Unable to describe replica dirs for %s: %s", path, e)
        return {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": path, "topics": []}
    return {"error_code": ErrorCode.NONE, "log_dir": path, "topics": topics, "total_bytes": total, "usable_bytes": usable}


def _space(log_dir: Path) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding ``log_dir``, as Java's FileStore counts them."""
    stats = os.statvfs(log_dir)
    return _clamp(stats.f_blocks * stats.f_frsize), _clamp(stats.f_bavail * stats.f_frsize)


def _clamp(space: int) -> int:
    return space if 0 <= space <= LONG_MAX else LONG_MAX


def _topics(broker, log_dir: Path, wanted: set[tuple[str, int]] | None) -> list[dict]:
    by_topic: dict[str, list[dict]] = {}
    for partition_log in sorted(broker.log_manager.logs_in_dir(log_dir), key=lambda lg: (lg.topic, lg.partition)):
        key = (partition_log.topic, partition_log.partition)
        if wanted is not None and key not in wanted:
            continue
        by_topic.setdefault(partition_log.topic, []).append(
            {
                "partition_index": partition_log.partition,
                "partition_size": partition_log.size,
                "offset_lag": _offset_lag(broker, partition_log),
                "is_future_key": False,
            }
        )
    return [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]


def _offset_lag(broker, partition_log) -> int:
    hosted = broker.replica_manager.hosted(partition_log.topic, partition_log.partition)
    return log_end_offset_lag(hosted.log.high_watermark if hosted is not None else None, partition_log.log_end_offset)


def log_end_offset_lag(high_watermark: int | None, log_end_offset: int) -> int:
    """Kafka's ReplicaManager.getLogEndOffsetLag for a log that is not a future one: the high
    watermark of the replica hosted here (leader or follower) minus the log end offset, never
    below 0; -1 (INVALID_OFFSET_LAG) when the partition is not hosted here. A follower's high
    watermark is the leader's clamped to its own log end offset, so a follower, however far
    behind, reports 0 as Kafka's does; so does a leader, whose high watermark never passes its
    log end offset."""
    if high_watermark is None:
        return INVALID_OFFSET_LAG
    return max(high_watermark - log_end_offset, 0)
