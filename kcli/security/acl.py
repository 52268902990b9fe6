"""Kafka's ACL model (``org.apache.kafka.common.acl`` and ``.resource``), sans I/O.

An ACL binds a resource pattern to an access control entry:

    ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)
    (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

A pattern is LITERAL (its name, or ``*`` for every resource of its type) or PREFIXED (every
resource whose name starts with it). Filters, which DescribeAcls and DeleteAcls carry, add ANY
(any value of a field; a null name or principal or host matches any) and, for the pattern type,
MATCH (every pattern that would apply to the named resource: literal, wildcard and prefixes).

The codes are the wire's; the names are Kafka's in two spellings: the Java enum name (``TOPIC``,
``DESCRIBE_CONFIGS``), which the tools print, and SecurityUtils' Pascal case (``Topic``,
``DescribeConfigs``), which the znodes and the authorizer's log lines hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from kcli.errors import ErrorCode
from kcli.security.principal import KafkaPrincipal, USER_TYPE

WILDCARD_RESOURCE = "*"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource (Kafka's Resource.CLUSTER_NAME)
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = KafkaPrincipal(USER_TYPE, "*")


def pascal_case(name: str) -> str:
    """SecurityUtils.toPascalCase: ``DESCRIBE_CONFIGS`` -> ``DescribeConfigs``."""
    return "".join(part[:1].upper() + part[1:].lower() for part in name.split("_"))


class _Named(IntEnum):
    @property
    def pascal_name(self) -> str:
        return pascal_case(self.name)

    @classmethod
    def from_name(cls, text: str):  # type: ignore[no-untyped-def]
        """SecurityUtils' look-up: the Pascal-case name or any case of the Java name (``Read``,
        ``READ``, ``read``, ``DescribeConfigs``, ``describe_configs``); UNKNOWN otherwise."""
        for member in cls:
            if text == member.pascal_name or text.upper() == member.name or text.upper() == member.pascal_name.upper():
                return member
        return cls(0)

    def __str__(self) -> str:
        return self.name


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# Concrete resource types and operations (AclEntry.ResourceTypes, AclEntry.AclOperations).
RESOURCE_TYPES = tuple(t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY))
ACL_OPERATIONS = tuple(o for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY))

_O = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
    ResourceType.GROUP: frozenset({_O.READ, _O.DESCRIBE, _O.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
}

AUTHORIZATION_ERRORS: dict[ResourceType, ErrorCode] = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}


def implying_operations(operation: AclOperation) -> frozenset[AclOperation]:
    """The operations whose ALLOW also allows ``operation`` (AclAuthorizer's allowOps; ALL is
    matched separately, as it is for DENY too): READ, WRITE, DELETE and ALTER imply DESCRIBE;
    ALTER_CONFIGS implies DESCRIBE_CONFIGS."""
    if operation == _O.DESCRIBE:
        return frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER})
    if operation == _O.DESCRIBE_CONFIGS:
        return frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})
    return frozenset({operation})


def parse_principal(text: str) -> KafkaPrincipal:
    """SecurityUtils.parseKafkaPrincipal: ``Type:name``, split at the first colon."""
    principal_type, sep, name = (text or "").partition(":")
    if not sep:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return KafkaPrincipal(principal_type, name)


def _or_any(value: str | None) -> str:
    return "<any>" if value is None else value


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, patternType={self.pattern_type.name})"

    @property
    def is_unknown(self) -> bool:
        return self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN

    def to_filter(self) -> ResourcePatternFilter:
        return ResourcePatternFilter(self.resource_type, self.name, self.pattern_type)


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={_or_any(self.name)}, patternType={self.pattern_type.name})"

    @property
    def is_unknown(self) -> bool:
        return self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type == PatternType.ANY or self.pattern_type == pattern.pattern_type:
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        raise ValueError(f"Unsupported PatternType: {pattern.pattern_type.name}")

    def find_indefinite_field(self) -> str | None:
        if self.resource_type == ResourceType.ANY:
            return "Resource type is ANY."
        if self.resource_type == ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type == PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type == PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        return None

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )

    @property
    def is_unknown(self) -> bool:
        return self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN

    @property
    def kafka_principal(self) -> KafkaPrincipal:
        return parse_principal(self.principal)


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={_or_any(self.principal)}, host={_or_any(self.host)}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )

    @property
    def is_unknown(self) -> bool:
        return self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN

    def matches(self, entry: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != entry.operation:
            return False
        return self.permission_type == AclPermissionType.ANY or self.permission_type == entry.permission_type


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)


ANY_FILTER = AclBindingFilter(
    ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
)


def validate_binding(binding: AclBinding) -> None:
    """AuthorizerUtils.validateAclBinding: a binding with no UNKNOWN part (ValueError otherwise)."""
    if binding.pattern.is_unknown or binding.entry.is_unknown:
        raise ValueError("ACL binding contains unknown elements")
