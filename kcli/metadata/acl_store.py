"""ACLs in the tree as Kafka 2.8 keeps them (KafkaZkClient's ACL methods over ZkAclStore and
ZkAclChangeStore; paths and JSON in ``zk_paths``).

One znode per resource pattern holds all its ACLs, so a change is a read, a change of the set and
a write conditional on the version read, retried when another writer came first (AclAuthorizer's
updateResourceAcls). kcli writes the resource and its change node in one transaction, which also
purges change nodes older than Kafka's 15 minutes; every broker follows the change nodes, whoever
wrote them (a broker answering CreateAcls, ``kcli acls --authorizer-properties``, Kafka's own
tools, a hand-written znode). Both tree backends hold the same nodes.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kcli.metadata import zk_paths as zk
from kcli.metadata.store import BadVersionError, CreateOp, DeleteOp, MetadataStore, NodeExistsError, NoNodeError, Op, SetDataOp, join
from kcli.metadata.zk_client import CONFIG_CHANGE_EXPIRATION_MS, now_ms
from kcli.errors import ErrorCode
from kcli.security.acl import (
    RESOURCE_TYPES,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_principal,
    validate_binding,
)

log = logging.getLogger("kcli.metadata")

UNKNOWN_VERSION = -1
# AclAuthorizer's maxUpdateRetries and its back-off (100 ms plus up to 50 ms of jitter).
MAX_UPDATE_RETRIES = 10
STORED_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)


@dataclass(frozen=True, slots=True)
class VersionedAcls:
    """A resource's ACLs and the version of the znode they were read from (UNKNOWN_VERSION: no
    znode)."""

    acls: frozenset[AccessControlEntry]
    zk_version: int

    @property
    def exists(self) -> bool:
        return self.zk_version != UNKNOWN_VERSION


NO_ACLS = VersionedAcls(frozenset(), UNKNOWN_VERSION)


# A create or delete result: NONE, or an error code and its message.
AclResult = tuple[ErrorCode, "str | None"]
OK: AclResult = (ErrorCode.NONE, None)


class AclUpdateError(Exception):
    """A resource's ACLs could not be written after MAX_UPDATE_RETRIES conflicting attempts."""


class AclStore:
    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    def create_acl_paths(self) -> None:
        """KafkaZkClient.createAclPaths: each store's root, change root and resource types."""
        for pattern_type in STORED_PATTERN_TYPES:
            self.store.ensure_path(zk.acl_store_path(pattern_type))
            self.store.ensure_path(zk.acl_change_root(pattern_type))
            for resource_type in RESOURCE_TYPES:
                self.store.ensure_path(zk.acl_resource_type_path(pattern_type, resource_type))

    def _children(self, path: str) -> list[str]:
        try:
            return self.store.get_children(path)
        except NoNodeError:
            return []

    def resources(self) -> list[ResourcePattern]:
        """Every resource pattern with a znode (unknown resource type names skipped, as Kafka)."""
        resources = []
        for pattern_type in STORED_PATTERN_TYPES:
            for type_name in self._children(zk.acl_store_path(pattern_type)):
                resource_type = ResourceType.from_name(type_name)
                if resource_type not in RESOURCE_TYPES:
                    log.warning("Ignoring unknown ResourceType: %s", type_name)
                    continue
                for name in self._children(zk.acl_resource_type_path(pattern_type, resource_type)):
                    resources.append(ResourcePattern(resource_type, name, pattern_type))
        return resources

    def versioned_acls(self, resource: ResourcePattern) -> VersionedAcls:
        """The resource's ACLs as stored; ``ZNodeFormatError`` naming the path when malformed."""
        path = zk.acl_resource_path(resource)
        try:
            data, stat = self.store.get(path)
        except NoNodeError:
            return NO_ACLS
        try:
            return VersionedAcls(zk.decode_acls(data), stat.version)
        except zk.ZNodeFormatError as e:
            raise zk.ZNodeFormatError(f"{path}: {e}") from None

    def update_resource_acls(
        self,
        resource: ResourcePattern,
        current: VersionedAcls | None,
        new_acls: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
        sleep: Callable[[float], None] = time.sleep,
    ) -> tuple[VersionedAcls, VersionedAcls]:
        """Apply ``new_acls`` to the resource's ACLs (``current`` as cached, or read when None),
        retried on a conflicting write; returns (the ACLs before, the ACLs after). An unchanged
        set writes nothing; a changed one is written with its change node."""
        if current is None:
            current = self.versioned_acls(resource)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            acls = frozenset(new_acls(current.acls))
            if acls == current.acls and current.exists == bool(acls):
                return current, current
            try:
                version = self._write(resource, current, acls)
                return current, VersionedAcls(acls, version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                sleep((100 + random.randrange(50)) / 1000)
                current = self.versioned_acls(resource)
        raise AclUpdateError(f"Failed to update ACLs for {resource} after trying a maximum of {MAX_UPDATE_RETRIES} times")

    def _write(self, resource: ResourcePattern, current: VersionedAcls, acls: frozenset[AccessControlEntry]) -> int:
        path = zk.acl_resource_path(resource)
        ops: list[Op]
        if acls and current.exists:
            ops = [SetDataOp(path, zk.encode_acls(acls), current.zk_version)]
        elif acls:
            self.store.ensure_path(zk.acl_resource_type_path(resource.pattern_type, resource.resource_type))
            ops = [CreateOp(path, zk.encode_acls(acls))]
        elif current.exists:
            ops = [DeleteOp(path, current.zk_version)]
        else:
            return UNKNOWN_VERSION
        self.store.ensure_path(zk.acl_change_root(resource.pattern_type))
        ops.append(CreateOp(zk.acl_change_path(resource.pattern_type), zk.encode_acl_change(resource), sequence=True))
        ops.extend(DeleteOp(expired) for expired in self._expired_changes(resource.pattern_type))
        results = self.store.multi(ops)
        if acls and current.exists:
            return results[0].version  # type: ignore[union-attr]
        return 0 if acls else UNKNOWN_VERSION

    def _expired_changes(self, pattern_type: PatternType) -> list[str]:
        root = zk.acl_change_root(pattern_type)
        horizon = now_ms() - CONFIG_CHANGE_EXPIRATION_MS
        expired = []
        for child in self._children(root):
            stat = self.store.exists(join(root, child))
            if stat is not None and stat.ctime < horizon:
                expired.append(join(root, child))
        return expired

    def change_notifications(self, pattern_type: PatternType) -> list[str]:
        """The change nodes under the pattern type's change root, oldest first."""
        return [child for child in self._children(zk.acl_change_root(pattern_type)) if child.startswith(zk.ACL_CHANGE_PREFIX)]

    def changed_resource(self, pattern_type: PatternType, child: str) -> ResourcePattern | None:
        """The resource a change node names (None: it is gone); ``ZNodeFormatError`` naming its
        path when it names none."""
        root = zk.acl_change_root(pattern_type)
        path = join(root, child)
        try:
            data = self.store.get(path)[0]
        except NoNodeError:
            return None
        try:
            resource = zk.decode_acl_change(root, data)
        except zk.ZNodeFormatError as e:
            raise zk.ZNodeFormatError(f"{path}: {e}") from None
        if resource.resource_type not in RESOURCE_TYPES or resource.pattern_type not in STORED_PATTERN_TYPES:
            raise zk.ZNodeFormatError(f"{path}: no ACL resource: {data.decode('utf-8', errors='replace')}")
        return resource


# -- AclAuthorizer's createAcls and deleteAcls, over a cache of what was read ----------------------
# The broker's authorizer and kcli acls' ZooKeeper path share them; ``cached`` is the caller's
# view of the stored ACLs (read again where it is missing or stale), and each returns what it
# wrote for the caller to keep.


def matching_bindings(cached: Mapping[ResourcePattern, VersionedAcls], binding_filter: AclBindingFilter) -> list[AclBinding]:
    """Every binding of ``cached`` the filter matches (AclAuthorizer.acls)."""
    bindings = []
    for resource, versioned in list(cached.items()):
        for entry in sorted(versioned.acls, key=str):
            binding = AclBinding(resource, entry)
            if binding_filter.matches(binding):
                bindings.append(binding)
    return bindings


def _update(
    acl_store: AclStore, cached: Mapping[ResourcePattern, VersionedAcls], written: dict[ResourcePattern, VersionedAcls],
    resource: ResourcePattern, new_acls,
) -> None:
    before, after = acl_store.update_resource_acls(resource, written.get(resource, cached.get(resource)), new_acls)
    if after.acls != before.acls:
        log.info("Updated ACLs for %s with new version %d", resource, after.zk_version)
    written[resource] = after


_FAILURES = (AclUpdateError, zk.ZNodeFormatError, OSError)


def create_acls(
    acl_store: AclStore, cached: Mapping[ResourcePattern, VersionedAcls], bindings: list[AclBinding]
) -> tuple[list[AclResult], dict[ResourcePattern, VersionedAcls]]:
    """Each binding added to its resource's znode (one conditional write per resource), its result
    in order: NONE, or the error that kept it out."""
    results: list[AclResult] = [OK] * len(bindings)
    written: dict[ResourcePattern, VersionedAcls] = {}
    by_resource: dict[ResourcePattern, list[int]] = {}
    for index, binding in enumerate(bindings):
        try:
            validate_binding(binding)
            parse_principal(binding.entry.principal)
        except ValueError as e:
            results[index] = (ErrorCode.INVALID_REQUEST, f"Failed to create ACL: {e}")
            continue
        by_resource.setdefault(binding.pattern, []).append(index)
    for resource, indexes in by_resource.items():
        entries = frozenset(bindings[index].entry for index in indexes)
        try:
            _update(acl_store, cached, written, resource, lambda current, entries=entries: current | entries)
        except _FAILURES as e:
            for index in indexes:
                results[index] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
    return results, written


def delete_acls(
    acl_store: AclStore, cached: Mapping[ResourcePattern, VersionedAcls], filters: list[AclBindingFilter]
) -> tuple[list[list[tuple[AclBinding, AclResult]]], dict[ResourcePattern, VersionedAcls]]:
    """The bindings each filter deleted, each with its result: a binding several filters match
    counts for the first; the resources are the cached ones and those a filter names exactly."""
    resources = dict.fromkeys(cached)
    for binding_filter in filters:
        if binding_filter.pattern_filter.matches_at_most_one():
            resources.update(dict.fromkeys(_filter_resources(binding_filter)))
    written: dict[ResourcePattern, VersionedAcls] = {}
    deleted: list[list[tuple[AclBinding, AclResult]]] = [[] for _ in filters]
    for resource in resources:
        matching = [(i, f) for i, f in enumerate(filters) if f.pattern_filter.matches(resource)]
        if not matching:
            continue
        removed: list[tuple[int, AclBinding]] = []

        def remaining(current: frozenset[AccessControlEntry], resource=resource, matching=matching, removed=removed):
            removed.clear()
            kept = set(current)
            for entry in sorted(current, key=str):
                for index, binding_filter in matching:
                    if binding_filter.entry_filter.matches(entry):
                        removed.append((index, AclBinding(resource, entry)))
                        kept.discard(entry)
                        break
            return frozenset(kept)

        try:
            _update(acl_store, cached, written, resource, remaining)
            result: AclResult = OK
        except _FAILURES as e:
            result = (ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
        for index, binding in removed:
            deleted[index].append((binding, result))
    return deleted, written


def _filter_resources(binding_filter: AclBindingFilter) -> list[ResourcePattern]:
    """The patterns a filter that matches at most one names (AclAuthorizer.filterToResources)."""
    pattern_filter = binding_filter.pattern_filter
    assert pattern_filter.name is not None
    if pattern_filter.pattern_type == PatternType.ANY:
        return [ResourcePattern(pattern_filter.resource_type, pattern_filter.name, p) for p in STORED_PATTERN_TYPES]
    return [ResourcePattern(pattern_filter.resource_type, pattern_filter.name, pattern_filter.pattern_type)]
