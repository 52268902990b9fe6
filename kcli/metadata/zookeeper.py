"""The metadata tree in a real ZooKeeper ensemble, through kazoo.

``ZooKeeperStore`` implements ``MetadataStore`` over one ZooKeeper session, with the settings a
Kafka broker reads:

* ``zookeeper.connect``: ``host:port[,host:port...][/chroot]``. A chroot that does not exist yet
  is created first, through a session without it, as Kafka's ``KafkaZkClient`` does.
* ``zookeeper.session.timeout.ms`` (Kafka's default 18000) and
  ``zookeeper.connection.timeout.ms`` (defaults to the session timeout): a start that cannot
  connect within it fails with Kafka's message, "Timed out waiting for connection while in
  state: CONNECTING".

ZooKeeper's errors become the tree interface's (``NoNodeError``, ``BadVersionError``, ...). A
lost connection surfaces as ``ConnectionLossError`` on the call that met it; kazoo reconnects by
itself within the session. When the session expires kazoo opens a new one: ephemeral nodes of the
old session are gone, and the callbacks given to ``on_new_session`` run so their owners can
register again (Kafka's ``afterInitializingSession``).

``watch(prefix, callback)`` keeps a kazoo ``TreeCache`` of the subtree (without creating it): ZooKeeper's one-shot
watches, re-armed on every node, and a resynchronisation after a reconnect. The callback hears of
every node below ``prefix`` whose state differs from what the cache saw last, so the last state
of each node is always reported, also for changes made while the connection was down. As with
every ZooKeeper watch, quick successive changes of one node may reach it as one (a create then a
delete, without the set between): a watcher re-reads the node, as Kafka's controller does.
Unlike the embedded tree, ZooKeeper reports one node per event, not one transaction per batch,
and callbacks run on kazoo's event thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from kazoo import exceptions as kz
from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.cache import TreeCache, TreeEvent

from kcli.metadata.zk_connect import parse_connect
from kcli.metadata.store import (
    ANY_VERSION,
    BadVersionError,
    ChangeEvent,
    ChangeKind,
    CheckOp,
    CreateOp,
    DeleteOp,
    InvalidPathError,
    MetadataStore,
    MetadataStoreError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    OpResult,
    SetDataOp,
    Stat,
    StoreClosedError,
    WatchCallback,
    validate_path,
)

log = logging.getLogger(__name__)

DEFAULT_SESSION_TIMEOUT_MS = 18000
# Requests in flight at once in ``get_many``/``get_children_many``.
PIPELINE_WINDOW = 2000


class ConnectionLossError(MetadataStoreError):
    """The connection to ZooKeeper dropped before the operation's answer came."""

    default_message = "Connection to ZooKeeper lost"


class ZooKeeperClientTimeoutError(MetadataStoreError):
    """No session could be opened within ``zookeeper.connection.timeout.ms``."""


def split_connect(connect: str) -> tuple[str, str | None]:
    """``"h1:2181,h2:2181/kafka/a"`` -> ``("h1:2181,h2:2181", "/kafka/a")``; chroot None if absent.
    A string ZooKeeper would refuse raises (``zk_connect.parse_connect``)."""
    parsed = parse_connect(connect)
    return parsed.hosts, parsed.chroot


class _AtDebug(logging.LoggerAdapter):
    """A logger whose every record, whatever level it is logged at, is a DEBUG record."""

    def log(self, level, msg, *args, **kwargs):
        super().log(min(level, logging.DEBUG), msg, *args, **kwargs)


def _stat(znode: ZnodeStat) -> Stat:
    return Stat(
        czxid=znode.czxid,
        mzxid=znode.mzxid,
        pzxid=znode.pzxid,
        ctime=znode.ctime,
        mtime=znode.mtime,
        version=znode.version,
        cversion=znode.cversion,
        ephemeral_owner=znode.ephemeralOwner,
        data_length=znode.dataLength,
        num_children=znode.numChildren,
    )


def _translated(error: kz.KazooException, path: str) -> MetadataStoreError:
    """The tree interface's error for one of kazoo's."""
    if isinstance(error, kz.NoNodeError):
        return NoNodeError(path)
    if isinstance(error, kz.NodeExistsError):
        return NodeExistsError(path)
    if isinstance(error, kz.BadVersionError):
        return BadVersionError(path)
    if isinstance(error, kz.NotEmptyError):
        return NotEmptyError(path)
    if isinstance(error, kz.NoChildrenForEphemeralsError):
        return NoChildrenForEphemeralsError(path)
    if isinstance(error, kz.BadArgumentsError):
        return InvalidPathError(path)
    if isinstance(error, (kz.ConnectionLoss, kz.OperationTimeoutError)):
        return ConnectionLossError(path)
    if isinstance(error, kz.SessionExpiredError):
        return ConnectionLossError(path, f"ZooKeeper session expired: {path}")
    if isinstance(error, kz.ConnectionClosedError):
        return StoreClosedError(path)
    return MetadataStoreError(path, f"ZooKeeper refused the operation on {path}: {type(error).__name__}")


class _TreeWatch(TreeCache):
    """kazoo's TreeCache, except that it does not create its root: a watched path may not exist
    yet, or come and go (``/controller``); the cache then watches for its creation."""

    def start(self) -> None:
        if self._state != self.STATE_LATENT:
            raise kz.KazooException("already started or closed")
        self._state = self.STATE_STARTED
        self._task_thread = self._client.handler.spawn(self._do_background)
        self._client.add_listener(self._session_watcher)
        if self._client.connected:
            self._in_background(self._root.on_created)


class ZooKeeperStore(MetadataStore):
    """One ZooKeeper session as a ``MetadataStore``; see the module docstring."""

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        connection_timeout_ms: int | None = None,
        client_logs_at_debug: bool = False,
    ) -> None:
        self.connect = connect
        # A tool reports its own failure in one line: kazoo's records (a warning per refused
        # connection attempt) are then kept to DEBUG. A broker keeps them at their level.
        client_log = logging.getLogger("kazoo.client")
        self._client_log = _AtDebug(client_log, {}) if client_logs_at_debug else client_log
        self.hosts, self.chroot = split_connect(connect)
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms if connection_timeout_ms is not None else session_timeout_ms
        self._client: KazooClient | None = None
        self._caches: list[TreeCache] = []
        self._session_listeners: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._closed = False
        self._expired = False

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> ZooKeeperStore:
        """Open the session (creating the chroot first when it is missing)."""
        if self.chroot is not None:
            bare = self._new_client(self.hosts)
            try:
                bare.ensure_path(self.chroot)
            except kz.KazooException as e:
                raise _translated(e, self.chroot) from None
            finally:
                bare.stop()
                bare.close()
        self._client = self._new_client(self.hosts + (self.chroot or ""))
        self._client.add_listener(self._on_state)
        return self

    def _new_client(self, hosts: str) -> KazooClient:
        client = KazooClient(
            hosts=hosts,
            timeout=self.session_timeout_ms / 1000,
            connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1.0},
            command_retry=None,
            logger=self._client_log,
        )
        try:
            client.start(timeout=self.connection_timeout_ms / 1000)
        except KazooTimeoutError:
            client.stop()
            client.close()
            raise ZooKeeperClientTimeoutError(
                self.connect,
                f"Timed out waiting for connection to ZooKeeper at {self.connect} while in state: CONNECTING",
            ) from None
        return client

    def _on_state(self, state: str) -> None:
        # Runs on kazoo's connection thread, which must not block: the listeners run elsewhere.
        if self._closed:
            return
        if state == KazooState.LOST:
            self._expired = True
            log.warning("ZooKeeper session expired (%s); a new one will be opened", self.connect)
        elif state == KazooState.CONNECTED and self._expired:
            self._expired = False
            self.client.handler.spawn(self._run_session_listeners)

    def _run_session_listeners(self) -> None:
        for listener in list(self._session_listeners):
            try:
                listener()
            except Exception:  # one listener's failure must not silence the others
                log.exception("A new-session listener failed")

    def on_new_session(self, callback: Callable[[], None]) -> Callable[[], None]:
        self._session_listeners.append(callback)

        def remove() -> None:
            if callback in self._session_listeners:
                self._session_listeners.remove(callback)

        return remove

    @property
    def client(self) -> KazooClient:
        if self._client is None or self._closed:
            raise StoreClosedError("/")
        return self._client

    @property
    def session_id(self) -> int:
        """The current session's id (ZooKeeper's ``ephemeralOwner`` of this session's nodes)."""
        session = self.client.client_id
        return session[0] if session else 0

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            caches, self._caches = self._caches, []
        for cache in caches:
            cache.close()
        if self._client is not None:
            self._client.stop()
            self._client.close()

    # -- the tree ---------------------------------------------------------------------------------

    def _wait(self, pending, path: str):
        """The answer of one request. While disconnected kazoo holds requests until it is
        connected again; a request still unanswered after the session timeout fails with
        ``ConnectionLossError`` (by then the session is gone anyway), so no caller hangs."""
        try:
            return pending.get(timeout=self.session_timeout_ms / 1000)
        except KazooTimeoutError:
            raise ConnectionLossError(path, f"No answer from ZooKeeper at {self.connect} for {path}") from None

    def get(self, path: str) -> tuple[bytes, Stat]:
        validate_path(path)
        try:
            value, znode = self._wait(self.client.get_async(path), path)
        except kz.KazooException as e:
            raise _translated(e, path) from None
        return value or b"", _stat(znode)

    def exists(self, path: str) -> Stat | None:
        validate_path(path)
        try:
            znode = self._wait(self.client.exists_async(path), path)
        except kz.KazooException as e:
            raise _translated(e, path) from None
        return None if znode is None else _stat(znode)

    def create(
        self,
        path: str,
        value: bytes = b"",
        *,
        makepath: bool = False,
        ephemeral: bool = False,
        sequence: bool = False,
    ) -> str:
        validate_path(path)
        try:
            return self._wait(
                self.client.create_async(path, value, ephemeral=ephemeral, sequence=sequence, makepath=makepath), path
            )
        except kz.KazooException as e:
            raise _translated(e, path) from None

    def set(self, path: str, value: bytes, version: int = ANY_VERSION) -> Stat:
        validate_path(path)
        try:
            return _stat(self._wait(self.client.set_async(path, value, version=version), path))
        except kz.KazooException as e:
            raise _translated(e, path) from None

    def delete(self, path: str, version: int = ANY_VERSION, recursive: bool = False) -> None:
        validate_path(path)
        if path == "/":
            raise InvalidPathError(path, "The root cannot be deleted")
        try:
            if recursive:
                self._delete_tree(path, version)
            else:
                self._wait(self.client.delete_async(path, version=version), path)
        except kz.KazooException as e:
            raise _translated(e, path) from None

    def _delete_tree(self, path: str, version: int) -> None:
        """Children first, then the node (with its expected version), as ZooKeeper's deleteall."""
        for child in self._wait(self.client.get_children_async(path), path):
            try:
                self._delete_tree(f"{path}/{child}", ANY_VERSION)
            except kz.NoNodeError:
                pass  # deleted meanwhile by someone else
        self._wait(self.client.delete_async(path, version=version), path)

    def get_children(self, path: str) -> list[str]:
        validate_path(path)
        try:
            return sorted(self._wait(self.client.get_children_async(path), path))
        except kz.KazooException as e:
            raise _translated(e, path) from None

    def get_many(self, paths: Sequence[str]) -> dict[str, tuple[bytes, Stat] | None]:
        return self._pipelined(paths, self.client.get_async, lambda answer: (answer[0] or b"", _stat(answer[1])))

    def get_children_many(self, paths: Sequence[str]) -> dict[str, list[str] | None]:
        return self._pipelined(paths, self.client.get_children_async, sorted)

    def _pipelined(self, paths: Sequence[str], request, convert) -> dict:
        """Send every request before waiting for the first answer (ZooKeeper answers a session's
        requests in order), a window at a time; a missing node answers None."""
        found: dict = {}
        for start in range(0, len(paths), PIPELINE_WINDOW):
            window = paths[start:start + PIPELINE_WINDOW]
            for path in window:
                validate_path(path)
            pending = [(path, request(path)) for path in window]
            for path, answer in pending:
                try:
                    found[path] = convert(self._wait(answer, path))
                except kz.NoNodeError:
                    found[path] = None
                except kz.KazooException as e:
                    raise _translated(e, path) from None
        return found

    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        if not ops:
            return []
        transaction = self.client.transaction()
        for op in ops:
            validate_path(op.path)
            if isinstance(op, CreateOp):
                transaction.create(op.path, op.value, ephemeral=op.ephemeral, sequence=op.sequence)
            elif isinstance(op, SetDataOp):
                transaction.set_data(op.path, op.value, version=op.version)
            elif isinstance(op, DeleteOp):
                transaction.delete(op.path, version=op.version)
            elif isinstance(op, CheckOp):
                transaction.check(op.path, op.version)
            else:  # pragma: no cover - Op is a closed union
                raise TypeError(f"not a tree operation: {op!r}")
        try:
            results = self._wait(transaction.commit_async(), ops[0].path)
        except kz.KazooException as e:
            raise _translated(e, ops[0].path) from None
        for index, result in enumerate(results):
            if isinstance(result, Exception) and not isinstance(result, kz.RolledBackError):
                error = _translated(result, ops[index].path)
                error.op_index = index
                raise error
        return [self._op_result(op, result) for op, result in zip(ops, results)]

    @staticmethod
    def _op_result(op: Op, result: object) -> OpResult:
        if isinstance(op, CreateOp):
            return result  # the created path
        if isinstance(op, SetDataOp):
            return _stat(result)  # type: ignore[arg-type]
        return None

    # -- watches ----------------------------------------------------------------------------------

    def watch(self, prefix: str, callback: WatchCallback) -> Callable[[], None]:
        validate_path(prefix)
        cache = _TreeWatch(self.client, prefix)
        initialized = threading.Event()
        kinds = {
            TreeEvent.NODE_ADDED: ChangeKind.CREATED,
            TreeEvent.NODE_UPDATED: ChangeKind.CHANGED,
            TreeEvent.NODE_REMOVED: ChangeKind.DELETED,
        }

        def listener(event: TreeEvent) -> None:
            if event.event_type == TreeEvent.INITIALIZED:
                initialized.set()
                return
            kind = kinds.get(event.event_type)
            # The cache reports every existing node once as it fills: those are not changes.
            if kind is None or event.event_data is None or not initialized.is_set():
                return
            # kazoo's cache can publish a node's data after the node was deleted (a read answered
            # before the deletion but handled after it, python-zk/kazoo#645), which would leave
            # "created" as the last word on a node that is gone. The cache handles its events in
            # order on one thread, so a node it no longer holds below the root is not reported
            # created or changed; its deletion was (or is about to be) reported.
            path = event.event_data.path
            if kind is not ChangeKind.DELETED and path != prefix and cache.get_data(path) is None:
                return
            try:
                callback([ChangeEvent(kind, path)])
            except Exception:  # a failing watcher must not stop the cache's thread
                log.exception("A metadata watcher failed on %s", path)

        cache.listen(listener)
        cache.listen_fault(lambda error: log.warning("Watch on %s: %s", prefix, error))
        cache.start()
        if not initialized.wait(self.connection_timeout_ms / 1000):
            cache.close()
            raise ConnectionLossError(prefix, f"Timed out filling the watch on {prefix}")
        with self._lock:
            self._caches.append(cache)

        def unwatch() -> None:
            with self._lock:
                if cache not in self._caches:
                    return
                self._caches.remove(cache)
            cache.close()

        return unwatch
