"""StopReplica: v0-4

Behaviour: the controller tells this broker to stop hosting partitions, and to delete their logs
when asked (a deleted topic, or a replica moved away): Kafka's ReplicaManager.stopReplicas
(``replica_manager``). A log is deleted even when this broker does not host the partition (it
was down when its topic was deleted). A request for an older registration of this broker answers
STALE_BROKER_EPOCH, one from an older controller epoch STALE_CONTROLLER_EPOCH, changing nothing.
Per partition (v3+): a hosted partition whose leader epoch is not older than the request's
(unless the request's is -1, or -2 for a deletion) answers FENCED_LEADER_EPOCH and stays; a log
in an offline dir answers KAFKA_STORAGE_ERROR.

With an authorizer the sender needs CLUSTER_ACTION on the cluster, as a broker (its inter-broker
principal a super user) has: anyone else is answered CLUSTER_AUTHORIZATION_FAILED.

Version notes: v1 adds the broker epoch and groups partitions by topic; v2 is flexible; v3 gives
each partition its leader epoch and its own deletion flag; v4 the KRaft controller flag.
"""

from __future__ import annotations

from kcli.broker.handlers._control_requests import broker_epoch_is_stale
from kcli.broker.replica.replica_manager import NO_EPOCH, StopPartition
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.STOP_REPLICA
VERSIONS = (0, 4)
CLUSTER_MODE_ONLY = True  # a single-process broker has no controller to send it


def stopped_partitions(request) -> list[StopPartition]:
    if hasattr(request, "topic_states"):
        return [
            StopPartition(t.topic_name, p.partition_index, p.leader_epoch, p.delete_partition)
            for t in request.topic_states
            for p in t.partition_states
        ]
    delete = request.delete_partitions
    if hasattr(request, "ungrouped_partitions"):
        return [StopPartition(p.topic_name, p.partition_index, NO_EPOCH, delete) for p in request.ungrouped_partitions]
    return [StopPartition(t.name, index, NO_EPOCH, delete) for t in request.topics for index in t.partition_indexes]


def handle(ctx, request):
    broker = ctx.broker
    partitions = stopped_partitions(request)
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _response(error, partitions, {(p.topic, p.index): error for p in partitions})
    if broker_epoch_is_stale(broker, request):
        error = ErrorCode.STALE_BROKER_EPOCH
        return _response(error, partitions, {(p.topic, p.index): error for p in partitions})
    error, errors = broker.replica_manager.stop_replicas_request(request.controller_id, request.controller_epoch, partitions)
    if error == ErrorCode.NONE:
        broker.replicas_stopped(partitions)
    return _response(error, partitions, errors)


def _response(error: ErrorCode, partitions: list[StopPartition], errors) -> dict:
    # As Kafka answers: a stale broker epoch for every partition, a stale controller epoch alone.
    return {
        "error_code": error,
        "partition_errors": [
            {"topic_name": p.topic, "partition_index": p.index, "error_code": errors[(p.topic, p.index)]}
            for p in partitions
            if (p.topic, p.index) in errors
        ],
    }
