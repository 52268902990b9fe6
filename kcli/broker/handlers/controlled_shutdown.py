"""ControlledShutdown: v0-3

Behaviour: a broker about to stop asks the active controller to move its leadership away first
(Kafka's KafkaController.controlledShutdown, ``controller/kafka_controller``). Only partitions with
more than one replica are acted on: each it leads gets another live in-sync replica as leader (the
controlled-shutdown leader selector), or, with no other replica in sync, goes offline (leader -1);
its follower replicas leave the ISR. A partition with one replica stays led by it until it really
goes. The answer lists the partitions of more than one replica it still leads (empty when all
moved). A broker that is not
the active controller answers NOT_CONTROLLER; a request carrying an older registration of the
broker (v2+) STALE_BROKER_EPOCH; an unregistered broker id BROKER_NOT_AVAILABLE.

With an authorizer the sender needs CLUSTER_ACTION on the cluster, as a broker (its inter-broker
principal a super user) has: anyone else is answered CLUSTER_AUTHORIZATION_FAILED.

Version notes: v0 is sent with request header v0 (no client id); v2 adds the broker epoch; v3 is
flexible.
"""

from __future__ import annotations

from kcli.errors import ErrorCode, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.CONTROLLED_SHUTDOWN
VERSIONS = (0, 3)
CLUSTER_MODE_ONLY = True  # a single-process broker has no controller to send it

UNKNOWN_BROKER_EPOCH = -1


async def handle(ctx, request):
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "remaining_partitions": []}
    controller = ctx.broker.controller
    if controller is None or not controller.active:
        return {"error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []}
    try:
        remaining = await controller.controlled_shutdown(request.broker_id, getattr(request, "broker_epoch", UNKNOWN_BROKER_EPOCH))
    except KcliError as e:
        return {"error_code": e.error_code, "remaining_partitions": []}
    return {
        "error_code": ErrorCode.NONE,
        "remaining_partitions": [{"topic_name": topic, "partition_index": index} for topic, index in remaining],
    }
