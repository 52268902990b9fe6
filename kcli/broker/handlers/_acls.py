"""What the ACL handlers share: bindings and filters read from the wire's codes (an unknown code
reads as UNKNOWN, as Kafka's fromCode), and the answer when no authorizer is configured."""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.security.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

SECURITY_DISABLED_MESSAGE = "No Authorizer is configured on the broker"


def _code(enum_type, value: int):
    try:
        return enum_type(value)
    except ValueError:
        return enum_type.UNKNOWN


def binding(creation) -> AclBinding | str:
    """A creation's binding, or why it names none (a filter's ANY or MATCH, an unknown code)."""
    resource_type = _code(ResourceType, creation.resource_type)
    pattern_type = _code(PatternType, creation.resource_pattern_type)
    operation = _code(AclOperation, creation.operation)
    permission = _code(AclPermissionType, creation.permission_type)
    if ResourceType.ANY == resource_type or not (pattern_type.is_specific or pattern_type == PatternType.UNKNOWN):
        return f"resourceType must not be ANY and patternType must be LITERAL or PREFIXED, not {resource_type.name} and {pattern_type.name}"
    if operation == AclOperation.ANY or permission == AclPermissionType.ANY:
        return "operation and permissionType must not be ANY"
    return AclBinding(
        ResourcePattern(resource_type, creation.resource_name, pattern_type),
        AccessControlEntry(creation.principal, creation.host, operation, permission),
    )


def binding_filter(wire) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(_code(ResourceType, wire.resource_type_filter), wire.resource_name_filter, _code(PatternType, wire.pattern_type_filter)),
        AccessControlEntryFilter(wire.principal_filter, wire.host_filter, _code(AclOperation, wire.operation), _code(AclPermissionType, wire.permission_type)),
    )


def unknown_elements(binding_filter: AclBindingFilter) -> bool:
    return binding_filter.pattern_filter.is_unknown or binding_filter.entry_filter.is_unknown


def error(code: ErrorCode, message: str | None = None) -> dict:
    return {"error_code": code, "error_message": message}
