"""DescribeCluster: v0-1

Behaviour: the cluster id, the controller and every registered broker with the host and port of
its advertised listener. Authorized operations, when asked for, are what Kafka answers without an
authorizer: every cluster operation (``authorized_operations``). Only broker endpoints (1) are
described, as by a Kafka 3.9 broker: a request for controller endpoints (2) answers
MISMATCHED_ENDPOINT_TYPE, any other type UNSUPPORTED_ENDPOINT_TYPE, each with Kafka's message.

With an authorizer the cluster's authorized operations are the ACLs' (none without DESCRIBE on it).

Version notes: v1 adds endpoint_type.
"""

from __future__ import annotations

from kcli.broker import authorized_operations
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import CLUSTER_NAME, AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_CLUSTER
VERSIONS = (0, 1)

# Kafka's EndpointType ids and names (KIP-919).
BROKER_ENDPOINTS = 1
ENDPOINT_TYPES = {BROKER_ENDPOINTS: "BROKER", 2: "CONTROLLER"}


def handle(ctx, request):
    broker = ctx.broker
    endpoint_type = getattr(request, "endpoint_type", BROKER_ENDPOINTS)
    if endpoint_type not in ENDPOINT_TYPES:
        return _refused(ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}")
    if endpoint_type != BROKER_ENDPOINTS:
        message = (
            f"The request was sent to an endpoint of type {ENDPOINT_TYPES[BROKER_ENDPOINTS]}, "
            f"but we wanted an endpoint of type {ENDPOINT_TYPES[endpoint_type]}"
        )
        return _refused(ErrorCode.MISMATCHED_ENDPOINT_TYPE, message)
    include_ops = request.include_cluster_authorized_operations
    return {
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id(),
        "brokers": [{"broker_id": b.id, "host": b.host, "port": b.port, "rack": b.rack} for b in broker.live_brokers(ctx.listener_name)],
        "cluster_authorized_operations": _cluster_operations(ctx) if include_ops else authorized_operations.NOT_REQUESTED,
        "endpoint_type": BROKER_ENDPOINTS,
    }


def _cluster_operations(ctx) -> int:
    """All Kafka supports without an authorizer; with one, the ACLs' when DESCRIBE is allowed,
    else none (Kafka 2.8)."""
    if not ctx.authorizing:
        return authorized_operations.CLUSTER
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return 0
    return authorized_operations.bit_field(ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME))


def _refused(error_code: ErrorCode, message: str) -> dict:
    """Kafka's error answer: the schema's defaults but for the code and message (only v1 carries
    an endpoint type, so only v1 is refused)."""
    return {
        "error_code": error_code,
        "error_message": message,
        "cluster_id": "",
        "controller_id": -1,
        "brokers": [],
        "cluster_authorized_operations": authorized_operations.NOT_REQUESTED,
        "endpoint_type": BROKER_ENDPOINTS,
    }
