"""DescribeCluster: v0-1

Behaviour: the cluster id, the controller and every registered broker with the host and port of
its advertised listener. Authorized operations, when asked for, are every cluster operation
(kcli has no authorizer). Only the broker endpoint type (1) is served; a request for controller
endpoints (2) answers UNSUPPORTED_ENDPOINT_TYPE, as a ZooKeeper-mode Kafka broker does.

Version notes: v1 adds endpoint_type.
"""

from __future__ import annotations

from kcli.errors import ErrorCode

API_KEY = 60
VERSIONS = (0, 1)

BROKER_ENDPOINTS = 1
# CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE,
# CREATE_TOKENS, DESCRIBE_TOKENS (Kafka's AclOperation codes) as a bit field.
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12, 13, 14))
NOT_REQUESTED = -(2**31)


def handle(ctx, request):
    broker = ctx.broker
    if getattr(request, "endpoint_type", BROKER_ENDPOINTS) != BROKER_ENDPOINTS:
        return {
            "error_code": ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            "error_message": "The request was sent to a broker and only broker endpoints can be described",
            "cluster_id": broker.cluster_id,
        }
    return {
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id(),
        "brokers": [{"broker_id": b.id, "host": b.host, "port": b.port, "rack": b.rack} for b in broker.live_brokers()],
        "cluster_authorized_operations": CLUSTER_OPERATIONS if request.include_cluster_authorized_operations else NOT_REQUESTED,
    }
