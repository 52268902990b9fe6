"""Kafka 2.8's AclAuthorizer (``kafka.security.authorizer.AclAuthorizer``): who may do what.

Enabled by ``authorizer.class.name=kafka.security.authorizer.AclAuthorizer``; configured by
``super.users`` (principals separated by ``;``, allowed everything) and
``allow.everyone.if.no.acl.found`` (default false). An operation on a resource is allowed when

- the principal is a super user; or
- no ACL applies to the resource at all and ``allow.everyone.if.no.acl.found`` is true; or
- no DENY ACL matches and an ALLOW ACL matches the operation or one implying it
  (``acl.implying_operations``),

where an ACL applies to the resource if its pattern is the literal name, the literal wildcard
``*`` or a prefix of the name, and matches if its principal is the principal or ``User:*``, its
host the client's address or ``*``, its operation the one asked for or ALL. A DENY always wins.

Every decision asked for is logged on ``kafka.authorizer.logger`` as Kafka's logAuditMessage
writes it: a denial at INFO, an allowance at DEBUG, and either at TRACE when the check only
filters (hidden topics, authorized operations). The lines name principals, hosts and resources,
nothing secret.

The cache maps each resource pattern to its ACLs and its znode's version. It is read on the
event loop and written on the metadata thread (the store, the change notifications), one
resource at a time: an entry is replaced whole, never changed in place.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kcli.broker.log_levels import TRACE
from kcli.errors import KcliError
from kcli.metadata import acl_store as acl_store_module
from kcli.metadata.acl_store import NO_ACLS, AclResult, AclStore, VersionedAcls, matching_bindings
from kcli.security.acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    implying_operations,
    parse_principal,
)
from kcli.security.principal import KafkaPrincipal

authorizer_logger = logging.getLogger("kafka.authorizer.logger")

ACL_AUTHORIZER_CLASS = "kafka.security.authorizer.AclAuthorizer"
SUPER_USERS = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found"
# The keys the authorizer reads from the broker's properties, which KafkaConfig does not define.
AUTHORIZER_KEYS = (SUPER_USERS, ALLOW_EVERYONE_IF_NO_ACL_FOUND)


class AuthorizerConfigError(KcliError):
    """An authorizer setting the broker cannot start with."""


@dataclass(frozen=True, slots=True)
class Action:
    """Kafka's Action: an operation on one literal resource, how many times the request names
    it, and whether an allowance or a denial is worth logging at its level."""

    operation: AclOperation
    resource: ResourcePattern
    resource_reference_count: int = 1
    log_if_allowed: bool = True
    log_if_denied: bool = True


def parse_super_users(text: str | None) -> frozenset[KafkaPrincipal]:
    if not text:
        return frozenset()
    try:
        return frozenset(parse_principal(part.strip()) for part in text.split(";"))
    except ValueError as e:
        raise AuthorizerConfigError(f"Invalid value for configuration {SUPER_USERS}: {e}") from None


class AclAuthorizer:
    def __init__(self, super_users: Iterable[KafkaPrincipal] = (), allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._cache: dict[ResourcePattern, VersionedAcls] = {}
        # The names of the prefixed patterns per resource type, so a name's prefixes are looked
        # up only where some exist.
        self._prefixes: dict[ResourceType, frozenset[str]] = {}

    @classmethod
    def from_config(cls, class_name: str | None, configs: Mapping[str, str]) -> AclAuthorizer | None:
        """The authorizer ``authorizer.class.name`` names, or None when it is empty; its own
        settings (AUTHORIZER_KEYS) come from the broker's properties as given."""
        class_name = (class_name or "").strip()
        if not class_name:
            return None
        if class_name != ACL_AUTHORIZER_CLASS:
            raise AuthorizerConfigError(
                f"Invalid value {class_name} for configuration authorizer.class.name: kcli provides {ACL_AUTHORIZER_CLASS} only"
            )
        allow_everyone = configs.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND, "false").strip().lower() == "true"
        return cls(parse_super_users(configs.get(SUPER_USERS)), allow_everyone)

    # -- decisions (event loop) --------------------------------------------------------------------

    def authorize(self, principal: KafkaPrincipal, host: str, action: Action, request: str = "") -> bool:
        resource = action.resource
        if resource.pattern_type != PatternType.LITERAL:
            raise ValueError(f"Only literal resources are supported. Got: {resource.pattern_type.name}")
        principal = KafkaPrincipal(principal.principal_type, principal.name)
        if principal in self.super_users:
            authorizer_logger.debug("principal = %s is a super user, allowing operation without checking acls.", principal)
            authorized = True
        else:
            acls = self._matching_acls(resource.resource_type, resource.name)
            if not acls:
                authorizer_logger.debug(
                    "No acl found for resource %s, authorized = %s", resource, str(self.allow_everyone_if_no_acl_found).lower()
                )
                authorized = self.allow_everyone_if_no_acl_found
            else:
                operation = action.operation
                principal_text = str(principal)
                denied = _matching_acl_exists(acls, {operation}, principal_text, host, AclPermissionType.DENY)
                authorized = not denied and _matching_acl_exists(
                    acls, implying_operations(operation), principal_text, host, AclPermissionType.ALLOW
                )
        self._log_audit_message(principal, host, action, authorized, request)
        return authorized

    def authorized_operations(self, principal: KafkaPrincipal, host: str, resource: ResourcePattern, request: str = "") -> frozenset[AclOperation]:
        """The operations of the resource's type the principal may do on it (KIP-430), each
        checked quietly (TRACE), as Kafka's authorizedOperations."""
        return frozenset(
            operation
            for operation in SUPPORTED_OPERATIONS[resource.resource_type]
            if self.authorize(principal, host, Action(operation, resource, 1, False, False), request)
        )

    def authorize_by_resource_type(
        self, principal: KafkaPrincipal, host: str, operation: AclOperation, resource_type: ResourceType, request: str = ""
    ) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type
        (AclAuthorizer.authorizeByResourceType: an ALLOW no DENY overrides, literal or prefixed;
        a literal DENY of ``*`` refuses all)."""
        principal = KafkaPrincipal(principal.principal_type, principal.name)
        action = Action(operation, ResourcePattern(resource_type, "NONE", PatternType.UNKNOWN), 0)
        if principal in self.super_users:
            return True
        names: dict[tuple[AclPermissionType, PatternType], set[str]] = {}
        principals = (str(principal), str(WILDCARD_PRINCIPAL))
        for resource, versioned in list(self._cache.items()):
            if resource.resource_type != resource_type:
                continue
            for acl in versioned.acls:
                if (
                    acl.principal in principals
                    and acl.host in (host, WILDCARD_HOST)
                    and acl.operation in (operation, AclOperation.ALL)
                ):
                    names.setdefault((acl.permission_type, resource.pattern_type), set()).add(resource.name)
        deny_literals = names.get((AclPermissionType.DENY, PatternType.LITERAL), set())
        deny_prefixes = names.get((AclPermissionType.DENY, PatternType.PREFIXED), set())

        def dominated(name: str) -> bool:
            return any(name[:end] in deny_prefixes for end in range(1, len(name) + 1))

        if WILDCARD_RESOURCE in deny_literals:
            authorized = False
        elif self.allow_everyone_if_no_acl_found:
            authorized = True
        else:
            authorized = any(not dominated(p) for p in names.get((AclPermissionType.ALLOW, PatternType.PREFIXED), ())) or any(
                literal == WILDCARD_RESOURCE or (literal not in deny_literals and not dominated(literal))
                for literal in names.get((AclPermissionType.ALLOW, PatternType.LITERAL), ())
            )
        self._log_audit_message(principal, host, action, authorized, request)
        return authorized

    def _matching_acls(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        cache = self._cache
        acls: list[AccessControlEntry] = []
        for pattern_name in (WILDCARD_RESOURCE, name) if name != WILDCARD_RESOURCE else (name,):
            found = cache.get(ResourcePattern(resource_type, pattern_name, PatternType.LITERAL))
            if found is not None:
                acls.extend(found.acls)
        prefixes = self._prefixes.get(resource_type)
        if prefixes:
            for end in range(1, len(name) + 1):
                if name[:end] in prefixes:
                    found = cache.get(ResourcePattern(resource_type, name[:end], PatternType.PREFIXED))
                    if found is not None:
                        acls.extend(found.acls)
        return acls

    def _log_audit_message(self, principal: KafkaPrincipal, host: str, action: Action, authorized: bool, request: str) -> None:
        if authorized:
            level = logging.DEBUG if action.log_if_allowed else TRACE
        else:
            level = logging.INFO if action.log_if_denied else TRACE
        if not authorizer_logger.isEnabledFor(level):
            return
        resource = action.resource
        authorizer_logger.log(
            level,
            "Principal = %s is %s Operation = %s from host = %s on resource = %s:%s:%s for request = %s with resourceRefCount = %d",
            principal,
            "Allowed" if authorized else "Denied",
            action.operation.pascal_name,
            host,
            resource.resource_type.pascal_name,
            resource.pattern_type.name,
            resource.name,
            request,
            action.resource_reference_count,
        )

    # -- the cache ---------------------------------------------------------------------------------

    def versioned_acls(self, resource: ResourcePattern) -> VersionedAcls:
        return self._cache.get(resource, NO_ACLS)

    def resources(self) -> list[ResourcePattern]:
        return list(self._cache)

    def update_cache(self, resource: ResourcePattern, versioned: VersionedAcls) -> None:
        """A resource's ACLs as now stored (none: the resource leaves the cache)."""
        if versioned.acls:
            self._cache[resource] = versioned
        else:
            self._cache.pop(resource, None)
        if resource.pattern_type == PatternType.PREFIXED:
            self._prefixes[resource.resource_type] = frozenset(
                pattern.name
                for pattern in list(self._cache)
                if pattern.resource_type == resource.resource_type and pattern.pattern_type == PatternType.PREFIXED
            )

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """Every cached binding the filter matches (DescribeAcls)."""
        return matching_bindings(self._cache, binding_filter)

    def cached(self) -> Mapping[ResourcePattern, VersionedAcls]:
        return dict(self._cache)

    # -- changes (metadata thread) -----------------------------------------------------------------

    def create_acls(self, acl_store: AclStore, bindings: list[AclBinding]) -> list[AclResult]:
        """Kafka's createAcls (``acl_store.create_acls``), the cache updated with what was written."""
        results, written = acl_store_module.create_acls(acl_store, self._cache, bindings)
        self._apply(written)
        return results

    def delete_acls(self, acl_store: AclStore, filters: list[AclBindingFilter]) -> list[list[tuple[AclBinding, AclResult]]]:
        """Kafka's deleteAcls (``acl_store.delete_acls``), the cache updated with what was written."""
        deleted, written = acl_store_module.delete_acls(acl_store, self._cache, filters)
        self._apply(written)
        return deleted

    def _apply(self, written: Mapping[ResourcePattern, VersionedAcls]) -> None:
        for resource, versioned in written.items():
            self.update_cache(resource, versioned)


def _matching_acl_exists(
    acls: list[AccessControlEntry], operations: set[AclOperation] | frozenset[AclOperation], principal: str, host: str,
    permission_type: AclPermissionType,
) -> bool:
    wildcard_principal = str(WILDCARD_PRINCIPAL)
    for acl in acls:
        if (
            acl.permission_type == permission_type
            and (acl.principal == principal or acl.principal == wildcard_principal)
            and (acl.operation in operations or acl.operation == AclOperation.ALL)
            and (acl.host == host or acl.host == WILDCARD_HOST)
        ):
            authorizer_logger.debug("operation = %s is %s based on acl = %s", sorted(o.name for o in operations), permission_type.name, acl)
            return True
    return False

