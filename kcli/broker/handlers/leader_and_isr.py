"""LeaderAndIsr: v0-7

Behaviour: the controller tells this broker which partitions it leads and which it follows, with
their leader epoch, ISR and replicas (Kafka's ReplicaManager.becomeLeaderOrFollower,
``replica_manager``). A leader hosts the partition and serves it; a follower opens (or creates)
its log and keeps it, serving nothing (replication comes later). A request for an older
registration of this broker answers STALE_BROKER_EPOCH, one from an older controller epoch
STALE_CONTROLLER_EPOCH, each for every partition and changing nothing. Per partition: a leader
epoch not newer than the one hosted answers STALE_CONTROLLER_EPOCH (left as it is), a partition
whose replicas do not include this broker UNKNOWN_TOPIC_OR_PARTITION, a log in an offline dir
KAFKA_STORAGE_ERROR, a log of an earlier topic of the same name INCONSISTENT_TOPIC_ID. New logs
are created in a worker thread first, so a large topic does not hold the loop.

With an authorizer the sender needs CLUSTER_ACTION on the cluster, as a broker (its inter-broker
principal a super user) has: anyone else is answered CLUSTER_AUTHORIZATION_FAILED.

Version notes: v1 adds is_new; v2 the broker epoch and groups partitions by topic; v3 adding
and removing replicas; v4 is flexible; v5 adds topic ids and the request type, and answers by
topic id; v6 the leader recovery state; v7 the KRaft controller flag.
"""

from __future__ import annotations

from kcli.broker.handlers._control_requests import broker_epoch_is_stale, partition_state
from kcli.metadata.topics import TopicPartitionState
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.LEADER_AND_ISR
VERSIONS = (0, 7)
CLUSTER_MODE_ONLY = True  # a single-process broker has no controller to send it

FIRST_BY_TOPIC_ID = 5  # the answer names topics by id


def partition_states(request):
    """(topic name, topic id or None, partition state) of every partition in the request."""
    if hasattr(request, "ungrouped_partition_states"):
        return [(p.topic_name, None, p) for p in request.ungrouped_partition_states]
    return [(t.topic_name, getattr(t, "topic_id", None), p) for t in request.topic_states for p in t.partition_states]


async def handle(ctx, request):
    broker = ctx.broker
    states = partition_states(request)
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _response(ctx.api_version, error, states, {(name, p.partition_index): error for name, _id, p in states})
    if broker_epoch_is_stale(broker, request):
        error = ErrorCode.STALE_BROKER_EPOCH
        return _response(ctx.api_version, error, states, {(name, p.partition_index): error for name, _id, p in states})
    updates = [TopicPartitionState(name, topic_id, p.partition_index, partition_state(p)) for name, topic_id, p in states]
    await broker.replica_manager.open_logs(request.controller_epoch, updates)
    error, errors = broker.replica_manager.become_leader_or_follower(request.controller_id, request.controller_epoch, updates)
    return _response(ctx.api_version, error, states, errors)


def _response(version: int, error: ErrorCode, states, errors) -> dict:
    if version < FIRST_BY_TOPIC_ID:
        return {
            "error_code": error,
            "partition_errors": [
                {"topic_name": name, "partition_index": p.partition_index, "error_code": errors.get((name, p.partition_index), error)}
                for name, _id, p in states
            ],
        }
    by_topic: dict = {}
    for name, topic_id, p in states:
        by_topic.setdefault(topic_id, []).append(
            {"partition_index": p.partition_index, "error_code": errors.get((name, p.partition_index), error)}
        )
    return {"error_code": error, "topics": [{"topic_id": topic_id, "partition_errors": errs} for topic_id, errs in by_topic.items()]}
