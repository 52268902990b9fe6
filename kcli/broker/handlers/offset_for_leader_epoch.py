"""OffsetForLeaderEpoch: v2-4

Behaviour: for each partition, the largest epoch at most the requested one that the leader has,
and the offset where the next epoch begins (the log end offset for the latest epoch), from the
leader epoch cache. An epoch older than every cached one answers (-1, -1) (UNDEFINED), as Kafka
does. The current leader epoch fences stale callers (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH);
UNKNOWN_TOPIC_OR_PARTITION for a partition not hosted.

With an authorizer CLUSTER_ACTION on the cluster (a follower) or DESCRIBE on each topic is needed
(TOPIC_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v2 adds current_leader_epoch (v0-1, used only by old followers, are not served);
v3 the replica id; v4 is flexible.
"""

from __future__ import annotations

from kcli.errors import ErrorCode, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
VERSIONS = (2, 4)


def handle(ctx, request):
    replicas = ctx.broker.replica_manager
    describable = None
    if ctx.authorizing and not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION, log_if_denied=False):
        describable = ctx.filter_by_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, (t.topic for t in request.topics))
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            result = {"partition": p.partition, "leader_epoch": -1, "end_offset": -1}
            if describable is not None and topic.topic not in describable:
                result["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                partitions.append(result)
                continue
            try:
                partition = replicas.get_partition_or_error(topic.topic, p.partition)
                partition.check_leader_epoch(p.current_leader_epoch)
                epoch, end_offset = partition.log.end_offset_for_epoch(p.leader_epoch)
                result["leader_epoch"], result["end_offset"] = epoch, end_offset
            except KcliError as e:
                result["error_code"] = e.error_code
            partitions.append(result)
        topics.append({"topic": topic.topic, "partitions": partitions})
    return {"topics": topics}
