"""UpdateMetadata: v0-8

Behaviour: the controller's view of the cluster, applied to this broker's metadata cache (Kafka's
MetadataCache.updateMetadata, ``metadata_cache.update_metadata``): the live brokers with their
endpoints and racks, the controller, and the partitions' leaders, leader epochs, ISR and
replicas; a partition whose leader is -2 (LeaderDuringDelete) is being deleted and leaves the
cache. A request for an older registration of this broker answers STALE_BROKER_EPOCH, one from
an older controller epoch STALE_CONTROLLER_EPOCH, and neither changes anything.

With an authorizer the sender needs CLUSTER_ACTION on the cluster, as a broker (its inter-broker
principal a super user) has: anyone else is answered CLUSTER_AUTHORIZATION_FAILED.

Version notes: v1 lists endpoints per broker; v2 adds racks; v3 listener names; v4 offline
replicas; v5 the broker epoch and groups partitions by topic; v6 is flexible; v7 adds topic ids;
v8 the KRaft controller flag and the request type.
"""

from __future__ import annotations

import logging

from kcli.broker.handlers._control_requests import broker_epoch_is_stale, partition_state
from kcli.errors import ErrorCode
from kcli.metadata import zk_paths as zk
from kcli.metadata.topics import PartitionState
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.UPDATE_METADATA
VERSIONS = (0, 8)
CLUSTER_MODE_ONLY = True  # a single-process broker has no controller to send it

LEADER_DURING_DELETE = -2  # Kafka's LeaderAndIsr.LeaderDuringDelete

log = logging.getLogger("kcli.broker.state.change")


def handle(ctx, request):
    broker = ctx.broker
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    if broker_epoch_is_stale(broker, request):
        return {"error_code": ErrorCode.STALE_BROKER_EPOCH}
    replica_manager = broker.replica_manager
    if request.controller_epoch < replica_manager.controller_epoch:
        log.warning(
            "Received UpdateMetadata request from controller %d with stale controller epoch %d; latest known controller epoch is %d",
            request.controller_id, request.controller_epoch, replica_manager.controller_epoch,
        )
        return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH}
    replica_manager.controller_epoch = request.controller_epoch
    broker.metadata.update_metadata(request.controller_id, live_brokers(request), topic_states(request))
    return {"error_code": ErrorCode.NONE}


def live_brokers(request) -> dict[int, zk.BrokerRegistration]:
    brokers = {}
    for broker in request.live_brokers:
        if hasattr(broker, "endpoints"):
            endpoints = tuple(
                zk.Endpoint(
                    getattr(e, "listener", None) or _protocol(e.security_protocol), e.host, e.port, _protocol(e.security_protocol)
                )
                for e in broker.endpoints
            )
        else:
            endpoints = (zk.Endpoint("PLAINTEXT", broker.v0_host, broker.v0_port, "PLAINTEXT"),)
        brokers[broker.id] = zk.BrokerRegistration(endpoints=endpoints, timestamp=0, rack=getattr(broker, "rack", None))
    return brokers


def _protocol(security_protocol: int) -> str:
    """Kafka's SecurityProtocol id as its name (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL)."""
    return zk.SECURITY_PROTOCOLS[security_protocol] if 0 <= security_protocol < len(zk.SECURITY_PROTOCOLS) else "PLAINTEXT"


def topic_states(request) -> dict:
    """topic -> (topic id or None, partition -> state, or None for a partition being deleted)."""
    if hasattr(request, "ungrouped_partition_states"):
        grouped = {}
        for p in request.ungrouped_partition_states:
            grouped.setdefault(p.topic_name, (None, []))[1].append(p)
    else:
        grouped = {t.topic_name: (getattr(t, "topic_id", None), t.partition_states) for t in request.topic_states}
    result = {}
    for name, (topic_id, partitions) in grouped.items():
        states: dict[int, PartitionState | None] = {}
        for p in partitions:
            if p.leader == LEADER_DURING_DELETE:
                states[p.partition_index] = None
            else:
                states[p.partition_index] = partition_state(p)
        result[name] = (topic_id, states)
    return result
