"""The authorizer's cache kept as the tree holds the ACLs (AclAuthorizer's loadCache and its
ZkNodeChangeNotificationListeners on both change roots).

At start every resource pattern's znode is read; then each new change node under
``/kafka-acl-changes`` or ``/kafka-acl-extended-changes`` names one resource whose znode is read
again, so a change written by any broker, tool or hand takes effect on every broker. All of it
runs on the metadata thread; the event loop only reads the cache.

A znode that does not hold Kafka's ACL JSON (or a change node naming no resource) is one ERROR
line naming its path: that resource keeps the ACLs the cache had for it (none at start, so a
malformed znode grants nothing unless ``allow.everyone.if.no.acl.found``), and every other
resource keeps working.
"""

from __future__ import annotations

import logging
from typing import Any

from kcli.broker.security.authorizer import AclAuthorizer
from kcli.metadata import zk_paths as zk
from kcli.metadata.acl_store import STORED_PATTERN_TYPES, AclStore
from kcli.security.acl import PatternType, ResourcePattern

log = logging.getLogger("kcli.broker.security")


class AclChangeListener:
    def __init__(self, acl_store: AclStore, thread: Any, authorizer: AclAuthorizer) -> None:
        self._acl_store = acl_store
        self._thread = thread
        self._authorizer = authorizer
        self._seen: dict[PatternType, set[str]] = {}
        self._unwatch: list = []

    def start(self) -> None:
        """Follow both change roots, then load every resource (on the metadata thread), so no
        change falls between the load and the watch."""
        store = self._acl_store.store
        self._acl_store.create_acl_paths()
        for pattern_type in STORED_PATTERN_TYPES:
            self._seen[pattern_type] = set(self._acl_store.change_notifications(pattern_type))
            self._unwatch.append(
                store.watch(zk.acl_change_root(pattern_type), lambda events, p=pattern_type: self._thread.submit(lambda: self._process(p)))
            )
        for resource in self._acl_store.resources():
            self.reload(resource)
        for pattern_type in STORED_PATTERN_TYPES:
            self._process(pattern_type)

    def stop(self) -> None:
        for unwatch in self._unwatch:
            unwatch()
        self._unwatch.clear()

    def _process(self, pattern_type: PatternType) -> None:
        children = self._acl_store.change_notifications(pattern_type)
        seen = self._seen[pattern_type]
        for child in children:
            if child in seen:
                continue
            seen.add(child)
            try:
                resource = self._acl_store.changed_resource(pattern_type, child)
            except zk.ZNodeFormatError as e:
                log.error("Ignoring a malformed ACL change notification: %s", e)
                continue
            if resource is not None:
                self.reload(resource, notified=True)
        seen.intersection_update(children)

    def reload(self, resource: ResourcePattern, notified: bool = False) -> None:
        """Read one resource's ACLs again into the cache."""
        try:
            versioned = self._acl_store.versioned_acls(resource)
        except zk.ZNodeFormatError as e:
            log.error("Ignoring malformed ACLs; the resource keeps the ACLs it had: %s", e)
            return
        if notified:
            log.info(
                "Processing Acl change notification for %s, versionedAcls : %s, zkVersion : %d",
                resource,
                "Set(" + ", ".join(str(acl) for acl in sorted(versioned.acls, key=str)) + ")",
                versioned.zk_version,
            )
        self._authorizer.update_cache(resource, versioned)
