"""AlterPartition: v2-3

Behaviour: a partition leader asks the active controller to change the partition's ISR (Kafka's
KafkaController.processAlterPartition in ZooKeeper mode, ``controller/kafka_controller``). A
broker that is not the active controller answers NOT_CONTROLLER; an unregistered requester, or
one whose broker epoch is not its registration's, STALE_BROKER_EPOCH. Per partition: an unknown
topic id UNKNOWN_TOPIC_ID, an unknown partition UNKNOWN_TOPIC_OR_PARTITION, a requester that is
not the leader INVALID_REQUEST, an older leader epoch FENCED_LEADER_EPOCH, a newer leader or
partition epoch than the controller's NOT_CONTROLLER (the requester may be talking to a deposed
controller), an older partition epoch INVALID_UPDATE_VERSION unless the partition is already in
the asked state, an ISR member that is not a live, registered replica (or is shutting down)
INELIGIBLE_REPLICA, a recovering partition with more than its leader in the ISR INVALID_REQUEST.
An accepted change is written to the partition's state znode and answered with the new state
(its partition epoch one higher); every broker is then sent UpdateMetadata.

With an authorizer the sender needs CLUSTER_ACTION on the cluster, as a broker (its inter-broker
principal a super user) has: anyone else is answered CLUSTER_AUTHORIZATION_FAILED.

Version notes: v0-1 (topics by name) are left out: kio, which follows Kafka 4.x, has no schema
for them, and only brokers send this API; v3 gives each ISR member its broker epoch.
"""

from __future__ import annotations

from kcli.errors import ErrorCode, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.ALTER_PARTITION
VERSIONS = (2, 3)
CLUSTER_MODE_ONLY = True  # a single-process broker has no controller to send it


async def handle(ctx, request):
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "topics": []}
    controller = ctx.broker.controller
    if controller is None or not controller.active or controller.channel is None:
        return {"error_code": ErrorCode.NOT_CONTROLLER, "topics": []}
    changes = [
        (
            topic.topic_id,
            p.partition_index,
            p.leader_epoch,
            tuple(m.broker_id for m in p.new_isr_with_epochs) if hasattr(p, "new_isr_with_epochs") else tuple(p.new_isr),
            p.leader_recovery_state,
            p.partition_epoch,
        )
        for topic in request.topics
        for p in topic.partitions
    ]
    try:
        results = await controller.alter_partitions(request.broker_id, request.broker_epoch, changes)
    except KcliError as e:
        return {"error_code": e.error_code, "topics": []}
    by_topic: dict = {}
    for (topic_id, index, *_), result in zip(changes, results):
        by_topic.setdefault(topic_id, []).append(result | {"partition_index": index})
    return {"error_code": ErrorCode.NONE, "topics": [{"topic_id": t, "partitions": parts} for t, parts in by_topic.items()]}
