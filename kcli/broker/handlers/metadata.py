"""Metadata: v0-12

Behaviour: the live brokers (advertised host and port), the cluster id, the controller, and the
requested topics: null (v1+; an empty list in v0) means every topic, an empty list none. Each
topic has its id, whether it is internal, and per partition the leader, leader epoch, replicas,
in-sync and offline replicas (those on brokers not alive, as the controller's UpdateMetadata
counts them). A partition without a leader, or whose leader is not alive, has leader -1 and
LEADER_NOT_AVAILABLE, as Kafka's MetadataCache answers. A missing topic is created when the request allows it (v4+) and
``auto.create.topics.enable`` is true, with ``num.partitions`` and
``default.replication.factor``, and is answered at once with its partitions; otherwise
UNKNOWN_TOPIC_OR_PARTITION. An illegal name answers INVALID_TOPIC_EXCEPTION; internal topics are
never auto-created here. A topic asked for by id (v10+) that does not exist answers
UNKNOWN_TOPIC_ID. Brokers are given at their endpoint on the listener the request came in on;
a broker without that listener is left out, and a partition whose live leader lacks it has no
leader and LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before), as Kafka's MetadataCache
answers. Authorized operations (v8+), when asked for, are what Kafka answers without an
authorizer (``authorized_operations``): every topic operation on each topic answered by name,
errors included (not on an unknown topic id), and in v8-10 every cluster operation.

With an authorizer (Kafka 2.8's rules): all topics means those the principal may DESCRIBE (the
others left out, quietly); a named topic it may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED
whether or not it exists; auto-creation needs CREATE on the cluster or the topic
(TOPIC_AUTHORIZATION_FAILED); the authorized operations are the ACLs' (the cluster's none
without DESCRIBE on it).

Version notes: v1 adds racks, the controller and is_internal; v2 the cluster id; v4 the
auto-creation flag; v5 offline replicas; v7 leader epochs; v8 authorized operations; v9
flexible; v10 topic ids; v11 drops the cluster authorized operations.
"""

from __future__ import annotations

import logging
import uuid

from kcli.broker import authorized_operations
from kcli.metadata import topic_names
from kcli.errors import ErrorCode, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import CLUSTER_NAME, AclOperation, ResourceType

API_KEY = ApiKey.METADATA
VERSIONS = (0, 12)

LAST_WITH_CLUSTER_OPERATIONS = 10  # v11 moved them to DescribeCluster (KIP-700)
ZERO_UUID = uuid.UUID(int=0)

log = logging.getLogger(__name__)


# Kafka answers LISTENER_NOT_FOUND from v6 (errorUnavailableListeners), LEADER_NOT_AVAILABLE before.
FIRST_WITH_LISTENER_NOT_FOUND = 6


class _View:
    """The brokers as the requester's listener sees them."""

    __slots__ = ("brokers", "alive", "unreachable", "listener_error")

    def __init__(self, broker, listener_name: str, version: int) -> None:
        self.brokers = broker.live_brokers(listener_name)
        reachable = {address.id for address in self.brokers}
        self.alive = frozenset(broker.metadata.alive_brokers())
        self.unreachable = frozenset(broker_id for broker_id in self.alive if broker_id not in reachable)
        first = FIRST_WITH_LISTENER_NOT_FOUND
        self.listener_error = ErrorCode.LISTENER_NOT_FOUND if version >= first else ErrorCode.LEADER_NOT_AVAILABLE


def handle(ctx, request):
    broker = ctx.broker
    metadata = broker.metadata
    version = ctx.api_version
    view = _View(broker, ctx.listener_name, version)
    include_ops = getattr(request, "include_topic_authorized_operations", False)
    cluster_ops = authorized_operations.NOT_REQUESTED
    if version <= LAST_WITH_CLUSTER_OPERATIONS and getattr(request, "include_cluster_authorized_operations", False):
        cluster_ops = _cluster_ops(ctx)
    if request.topics is None or (version == 0 and not request.topics):
        every = metadata.topics()
        if ctx.authorizing:  # topics the principal may not describe are left out, quietly
            names = ctx.filter_by_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, every, log_if_denied=False)
            every = {name: info for name, info in every.items() if name in names}
        topics = [_describe(t, include_ops, view) for t in every.values()]
    else:
        allow_create = getattr(request, "allow_auto_topic_creation", True) and broker.config.get("auto.create.topics.enable")
        describable = None
        if ctx.authorizing:
            names = [t.name if t.name is not None else _name_of(metadata, t) for t in request.topics]
            describable = ctx.filter_by_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, [n for n in names if n is not None])
        topics = [_requested(ctx, t, allow_create, include_ops, view, describable) for t in request.topics]
        if any(not isinstance(topic, dict) for topic in topics):
            return _after_creations(ctx, topics, cluster_ops, view, include_ops)
    return _answer(ctx, topics, cluster_ops, view, include_ops)


def _cluster_ops(ctx) -> int:
    """The cluster's authorized operations: all Kafka supports without an authorizer; with one,
    those allowed when DESCRIBE is, else none."""
    if not ctx.authorizing:
        return authorized_operations.CLUSTER
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return 0
    return authorized_operations.bit_field(ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME))


def _name_of(metadata, requested) -> str | None:
    topic_id = getattr(requested, "topic_id", None)
    info = metadata.topic_by_id(topic_id) if topic_id not in (None, ZERO_UUID) else None
    return None if info is None else info.name


async def _after_creations(ctx, topics: list, cluster_ops: int, view: _View, include_ops: bool) -> dict:
    """The answer once the topics being auto-created are (or failed to be)."""
    done = [topic if isinstance(topic, dict) else await topic for topic in topics]
    return _answer(ctx, done, cluster_ops, view, include_ops)


def _answer(ctx, topics: list[dict], cluster_ops: int, view: _View, include_ops: bool) -> dict:
    broker = ctx.broker
    if include_ops and ctx.authorizing:
        for topic in topics:
            if topic.get("name") is not None:
                operations = ctx.authorized_operations(ResourceType.TOPIC, topic["name"])
                topic["topic_authorized_operations"] = authorized_operations.bit_field(operations)
    return {
        "brokers": [{"node_id": b.id, "host": b.host, "port": b.port, "rack": b.rack} for b in view.brokers],
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id(),
        "topics": topics,
        "cluster_authorized_operations": cluster_ops,
    }


def _requested(ctx, requested, allow_create: bool, include_ops: bool, view: _View, describable: set[str] | None):
    """The topic's entry, or a coroutine giving it when the topic is being auto-created. With an
    authorizer (``describable`` the names the principal may describe), a topic it may not describe
    answers TOPIC_AUTHORIZATION_FAILED whether or not it exists, and auto-creation needs CREATE on
    the cluster or the topic."""
    broker = ctx.broker
    metadata = broker.metadata
    topic_id = getattr(requested, "topic_id", None)
    name = requested.name
    if name is None:
        info = metadata.topic_by_id(topic_id) if topic_id not in (None, ZERO_UUID) else None
        if info is None:
            return {"error_code": ErrorCode.UNKNOWN_TOPIC_ID, "name": None, "topic_id": topic_id, "partitions": []}
        if describable is not None and info.name not in describable:
            return {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": None, "topic_id": topic_id, "partitions": []}
        return _describe(info, include_ops, view)
    if describable is not None and name not in describable:
        return _failed(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name, include_ops)
    info = metadata.topic(name)
    if info is not None:
        return _describe(info, include_ops, view)
    if not topic_names.is_valid(name):
        return _failed(ErrorCode.INVALID_TOPIC_EXCEPTION, name, include_ops)
    if not allow_create or topic_names.is_internal(name):
        return _failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, include_ops)
    if describable is not None and not (
        ctx.authorize_cluster(AclOperation.CREATE, log_if_denied=False) or ctx.authorize(AclOperation.CREATE, ResourceType.TOPIC, name)
    ):
        return _failed(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name, include_ops)
    return _auto_created(broker, name, include_ops, view)


async def _auto_created(broker, name: str, include_ops: bool, view: _View) -> dict:
    try:
        info = await broker.auto_create_topic(name)
    except KcliError as e:
        log.info("Auto-creation of topic %s failed: %s", name, e)
        return _failed(e.error_code, name, include_ops)
    return _describe(info, include_ops, view)


def _failed(error_code, name: str, include_ops: bool) -> dict:
    return {"error_code": error_code, "name": name, "partitions": [], "topic_authorized_operations": _topic_ops(include_ops)}


def _topic_ops(include_ops: bool) -> int:
    return authorized_operations.TOPIC if include_ops else authorized_operations.NOT_REQUESTED


def _describe(info, include_ops: bool, view: _View) -> dict:
    partitions = []
    for index, state in sorted(info.partitions.items()):
        leader, error = state.leader, ErrorCode.NONE
        if leader < 0 or leader not in view.alive:
            # No leader, or one the cache no longer counts alive (until the controller elects
            # another): Kafka 2.8's MetadataCache answers no leader.
            leader, error = -1, ErrorCode.LEADER_NOT_AVAILABLE
        elif leader in view.unreachable:
            leader, error = -1, view.listener_error
        partitions.append(
            {
                "partition_index": index,
                "leader_id": leader,
                "leader_epoch": state.leader_epoch,
                "replica_nodes": state.replicas,
                "isr_nodes": state.isr,
                "offline_replicas": [r for r in state.replicas if r not in view.alive],
                "error_code": error,
            }
        )
    return {
        "name": info.name,
        "topic_id": info.topic_id,
        "is_internal": topic_names.is_internal(info.name),
        "partitions": partitions,
        "topic_authorized_operations": _topic_ops(include_ops),
    }

