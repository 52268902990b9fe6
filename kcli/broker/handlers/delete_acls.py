"""DeleteAcls: v1-3

Behaviour: the ACLs each filter matches (MATCH and ANY included) removed from their resources'
znodes through the broker's authorizer, answered by any broker as Kafka 2.8's KafkaApis: each
filter's result lists the bindings it deleted (a binding several filters match counts for the
first), each with its own error; ALTER on the cluster is required (every filter
CLUSTER_AUTHORIZATION_FAILED); without an authorizer every filter is SECURITY_DISABLED; a filter
with an unknown code is INVALID_REQUEST (Kafka closes the connection on such a request).

Version notes: v1 adds the pattern type filter; v2 is flexible; v3 adds user resource types to
the schema only. v0 (literal patterns only) was removed in Kafka 4.0 and kio has no schema for it.
"""

from __future__ import annotations

from kcli.broker.handlers import _acls
from kcli.errors import ErrorCode
from kcli.metadata.acl_store import AclStore
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.DELETE_ACLS
VERSIONS = (1, 3)


def _failed(code: ErrorCode, message: str) -> dict:
    return {**_acls.error(code, message), "matching_acls": []}


async def handle(ctx, request):
    wire_filters = request.filters
    if not ctx.authorize_cluster(AclOperation.ALTER):
        message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
        return {"throttle_time": 0, "filter_results": [_failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message) for _ in wire_filters]}
    broker = ctx.broker
    if broker.authorizer is None:
        message = _acls.SECURITY_DISABLED_MESSAGE + "."
        return {"throttle_time": 0, "filter_results": [_failed(ErrorCode.SECURITY_DISABLED, message) for _ in wire_filters]}
    filters = [_acls.binding_filter(wire) for wire in wire_filters]
    results: list = [None] * len(filters)
    valid = [(i, f) for i, f in enumerate(filters) if not _acls.unknown_elements(f)]
    for index, binding_filter in enumerate(filters):
        if _acls.unknown_elements(binding_filter):
            results[index] = _failed(ErrorCode.INVALID_REQUEST, "Filters contain UNKNOWN elements")
    if valid:
        deleted = await broker.metadata_thread.call(broker.authorizer.delete_acls, AclStore(broker.zk_client.store), [f for _, f in valid])
        for (index, _), bindings in zip(valid, deleted):
            results[index] = {
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "matching_acls": [_matching(binding, code, message) for binding, (code, message) in bindings],
            }
    return {"throttle_time": 0, "filter_results": results}


def _matching(binding, code: ErrorCode, message: str | None) -> dict:
    pattern, entry = binding.pattern, binding.entry
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": pattern.resource_type,
        "resource_name": pattern.name,
        "pattern_type": pattern.pattern_type,
        "principal": entry.principal,
        "host": entry.host,
        "operation": entry.operation,
        "permission_type": entry.permission_type,
    }
