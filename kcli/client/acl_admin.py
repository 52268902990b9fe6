"""ACLs as an operator manages them through any broker (Kafka's Admin createAcls, describeAcls,
deleteAcls): CreateAcls, DescribeAcls and DeleteAcls v1-3, the bindings and filters in
``kcli.security.acl``'s model. A whole-request error (DescribeAcls' code) raises; a creation's or
a filter's error comes back with it."""

from __future__ import annotations

from collections.abc import Sequence

from kcli.client.connection import error_code
from kcli.client.network_client import NetworkClient
from kcli.errors import ErrorCode, KafkaError
from kcli.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31


def _failure(code: int, message: str | None) -> KafkaError | None:
    if not code:
        return None
    error = ErrorCode.for_code(code)
    return KafkaError(error, message or error.message)


def _filter_fields(binding_filter: AclBindingFilter) -> dict:
    pattern, entry = binding_filter.pattern_filter, binding_filter.entry_filter
    return {
        "resource_type_filter": int(pattern.resource_type),
        "resource_name_filter": pattern.name,
        "pattern_type_filter": int(pattern.pattern_type),
        "principal_filter": entry.principal,
        "host_filter": entry.host,
        "operation": int(entry.operation),
        "permission_type": int(entry.permission_type),
    }


def _binding(resource_type, name, pattern_type, acl) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType(int(resource_type)), name, PatternType(int(pattern_type))),
        AccessControlEntry(acl.principal, acl.host, AclOperation(int(acl.operation)), AclPermissionType(int(acl.permission_type))),
    )


async def create_acls(cluster: NetworkClient, bindings: Sequence[AclBinding]) -> list[KafkaError | None]:
    connection = await cluster.any_connection()
    creations = [
        {
            "resource_type": int(b.pattern.resource_type),
            "resource_name": b.pattern.name,
            "resource_pattern_type": int(b.pattern.pattern_type),
            "principal": b.entry.principal,
            "host": b.entry.host,
            "operation": int(b.entry.operation),
            "permission_type": int(b.entry.permission_type),
        }
        for b in bindings
    ]
    answer = await connection.call(CREATE_ACLS, {"creations": creations}, timeout=cluster.request_timeout)
    return [_failure(error_code(r.error_code), r.error_message) for r in answer.results]


async def describe_acls(cluster: NetworkClient, binding_filter: AclBindingFilter) -> list[AclBinding]:
    connection = await cluster.any_connection()
    answer = await connection.call(DESCRIBE_ACLS, _filter_fields(binding_filter), timeout=cluster.request_timeout)
    failure = _failure(error_code(answer.error_code), answer.error_message)
    if failure is not None:
        raise failure
    return [_binding(r.resource_type, r.resource_name, r.pattern_type, acl) for r in answer.resources for acl in r.acls]


async def delete_acls(cluster: NetworkClient, filters: Sequence[AclBindingFilter]) -> list[tuple[KafkaError | None, list[AclBinding]]]:
    """Each filter's error, or the bindings it deleted."""
    connection = await cluster.any_connection()
    answer = await connection.call(DELETE_ACLS, {"filters": [_filter_fields(f) for f in filters]}, timeout=cluster.request_timeout)
    results = []
    for result in answer.filter_results:
        failure = _failure(error_code(result.error_code), result.error_message)
        matching = [m for m in result.matching_acls]
        failure = failure or next((_failure(error_code(m.error_code), m.error_message) for m in matching if error_code(m.error_code)), None)
        results.append((failure, [_binding(m.resource_type, m.resource_name, m.pattern_type, m) for m in matching]))
    return results
