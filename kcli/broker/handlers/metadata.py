"""Metadata: v0-12

Behaviour: the live brokers (advertised host and port), the cluster id, the controller, and the
requested topics: null (v1+; an empty list in v0) means every topic, an empty list none. Each
topic has its id, whether it is internal, and per partition the leader, leader epoch, replicas,
in-sync and offline replicas. A missing topic is created when the request allows it (v4+) and
``auto.create.topics.enable`` is true, with ``num.partitions`` and
``default.replication.factor``, and is answered at once with its partitions; otherwise
UNKNOWN_TOPIC_OR_PARTITION. An illegal name answers INVALID_TOPIC_EXCEPTION; internal topics are
never auto-created here. A topic asked for by id (v10+) that does not exist answers
UNKNOWN_TOPIC_ID. Authorized operations, when asked for, are every topic operation (no
authorizer).

Version notes: v1 adds racks, the controller and is_internal; v2 the cluster id; v4 the
auto-creation flag; v5 offline replicas; v7 leader epochs; v8 authorized operations; v9
flexible; v10 topic ids; v11 drops the cluster authorized operations.
"""

from __future__ import annotations

import logging
import uuid

from kcli.broker.metadata import topic_names
from kcli.errors import ErrorCode, KcliError

API_KEY = 3
VERSIONS = (0, 12)

# READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclOperation codes).
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
NOT_REQUESTED = -(2**31)
ZERO_UUID = uuid.UUID(int=0)

log = logging.getLogger(__name__)


def handle(ctx, request):
    broker = ctx.broker
    metadata = broker.metadata
    version = ctx.api_version
    include_ops = getattr(request, "include_topic_authorized_operations", False)
    if request.topics is None or (version == 0 and not request.topics):
        topics = [_describe(t, include_ops) for t in metadata.topics().values()]
    else:
        allow_create = getattr(request, "allow_auto_topic_creation", True) and broker.config.get("auto.create.topics.enable")
        topics = [_requested(broker, t, allow_create, include_ops) for t in request.topics]
    return {
        "brokers": [{"node_id": b.id, "host": b.host, "port": b.port, "rack": b.rack} for b in broker.live_brokers()],
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id(),
        "topics": topics,
    }


def _requested(broker, requested, allow_create: bool, include_ops: bool) -> dict:
    metadata = broker.metadata
    topic_id = getattr(requested, "topic_id", None)
    name = requested.name
    if name is None:
        info = metadata.topic_by_id(topic_id) if topic_id not in (None, ZERO_UUID) else None
        if info is None:
            return {"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id, "partitions": []}
        return _describe(info, include_ops)
    info = metadata.topic(name)
    if info is not None:
        return _describe(info, include_ops)
    if not topic_names.is_valid(name):
        return {"error_code": ErrorCode.INVALID_TOPIC_EXCEPTION, "name": name, "partitions": []}
    if not allow_create or topic_names.is_internal(name):
        return {"error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []}
    try:
        info = broker.auto_create_topic(name)
    except KcliError as e:
        log.info("Auto-creation of topic %s failed: %s", name, e)
        return {"error_code": e.error_code, "name": name, "partitions": []}
    return _describe(info, include_ops)


def _describe(info, include_ops: bool) -> dict:
    partitions = []
    for index, state in sorted(info.partitions.items()):
        partitions.append(
            {
                "partition_index": index,
                "leader_id": state.leader,
                "leader_epoch": state.leader_epoch,
                "replica_nodes": state.replicas,
                "isr_nodes": state.isr,
                "offline_replicas": [],
                "error_code": ErrorCode.LEADER_NOT_AVAILABLE if state.leader < 0 else ErrorCode.NONE,
            }
        )
    return {
        "name": info.name,
        "topic_id": info.topic_id,
        "is_internal": topic_names.is_internal(info.name),
        "partitions": partitions,
        "topic_authorized_operations": TOPIC_OPERATIONS if include_ops else NOT_REQUESTED,
    }

