"""SCRAM credentials as every broker of a Kafka 2.8 cluster keeps them (Kafka's CredentialCache,
fed by DynamicConfigManager's user config handler).

A user's credentials live in ``/config/users/<sanitized user>``:

    {"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}

written with a change notification ``/config/changes/config_change_N`` holding
``{"version":2,"entity_path":"users/<user>"}`` (by AlterUserScramCredentials, ``kafka-configs.sh
--zookeeper``, or a test fixture writing the znodes). The cache reads every user at start and,
on each notification, the user it names, on the metadata thread; authentication looks users up
from the event loop without touching the tree. The embedded tree (single-process mode) holds
the same nodes and notifications.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import quote, unquote

from kcli.metadata import zk_paths as zk
from kcli.metadata.store import NoNodeError
from kcli.security import scram
from kcli.security.scram import ScramCredential, ScramError

log = logging.getLogger("kcli.broker.security")


def sanitize(user: str) -> str:
    """Kafka's Sanitizer.sanitize: the user's name as a znode name (URL-encoded, ``*`` as %2A)."""
    return quote(user, safe="")


def desanitize(name: str) -> str:
    return unquote(name)


def user_config_path(user: str) -> str:
    return zk.config_entity_path(zk.CONFIG_TYPE_USERS, sanitize(user))


def parse_user_credentials(config: dict[str, str]) -> dict[str, ScramCredential]:
    """The SCRAM credentials of a user's config (other keys, quotas, are not ours)."""
    credentials = {}
    for mechanism in scram.MECHANISMS:
        text = config.get(mechanism)
        if text is not None:
            credentials[mechanism] = ScramCredential.from_text(text)
    return credentials


class CredentialCache:
    def __init__(self, store: Any, thread: Any) -> None:
        self._store = store
        self._thread = thread
        self._lock = threading.Lock()
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._unwatch = None
        self._seen: set[str] = set()

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        with self._lock:
            return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        with self._lock:
            return {user: dict(credentials) for user, credentials in self._users.items()}

    # -- on the metadata thread --------------------------------------------------------------------

    def start(self) -> None:
        """Read every user and follow the change notifications (on the metadata thread)."""
        self._seen = set(self._children(zk.CONFIG_CHANGES))
        self._unwatch = self._store.watch(zk.CONFIG_CHANGES, lambda events: self._thread.submit(self._process_notifications))
        for name in self._children(zk.config_entity_type_path(zk.CONFIG_TYPE_USERS)):
            self.reload(desanitize(name))
        self._process_notifications()

    def stop(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None

    def _children(self, path: str) -> list[str]:
        try:
            return self._store.get_children(path)
        except NoNodeError:
            return []

    def _process_notifications(self) -> None:
        children = self._children(zk.CONFIG_CHANGES)
        for child in children:
            if child in self._seen:
                continue
            self._seen.add(child)
            try:
                entity_path = zk.decode_config_change(self._store.get(f"{zk.CONFIG_CHANGES}/{child}")[0])
            except (NoNodeError, zk.ZNodeFormatError):
                continue
            entity_type, _, name = entity_path.partition("/")
            if entity_type == zk.CONFIG_TYPE_USERS and name and "/" not in name:
                self.reload(desanitize(name))
        self._seen.intersection_update(children)

    def reload(self, user: str) -> None:
        """Read one user's credentials again (absent: removed)."""
        try:
            config = zk.decode_entity_config(self._store.get(user_config_path(user))[0])
            credentials = parse_user_credentials(config)
        except NoNodeError:
            credentials = {}
        except (zk.ZNodeFormatError, ScramError) as e:
            log.warning("Ignoring the SCRAM credentials of user %s: %s", user, e)
            credentials = {}
        with self._lock:
            if credentials:
                self._users[user] = credentials
            else:
                self._users.pop(user, None)
