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
from collections.abc import Callable
from dataclasses import dataclass

from kcli.metadata import zk_paths as zk
from kcli.metadata.store import BadVersionError, CreateOp, DeleteOp, MetadataStore, NodeExistsError, NoNodeError, Op, SetDataOp, join
from kcli.metadata.zk_client import CONFIG_CHANGE_EXPIRATION_MS, now_ms
from kcli.security.acl import RESOURCE_TYPES, AccessControlEntry, PatternType, ResourcePattern, ResourceType

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
