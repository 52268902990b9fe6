"""The tree interface every piece of cluster metadata is written against.

Cluster metadata lives in a tree of znodes shaped like ZooKeeper's: each node has a path
(``/brokers/topics/orders``), a byte value and a ``Stat``. Two backends implement
``MetadataStore``: the embedded, file-backed tree of single-process mode and, later, a real
ZooKeeper ensemble through kazoo. The controller, the broker and the tools see only this module,
so the semantics are ZooKeeper's:

* ``create`` fails with ``NodeExistsError`` when the node exists and ``NoNodeError`` when its
  parent does not (unless ``makepath``); a sequential node gets ZooKeeper's 10-digit suffix taken
  from the parent's child version; an ephemeral node lives as long as the store's session and
  cannot have children.
* ``set`` and ``delete`` take an expected ``version`` (``-1`` matches any) and fail with
  ``BadVersionError`` on a mismatch; ``delete`` refuses a node with children unless ``recursive``.
* ``multi`` applies a list of operations atomically: all of them, or none and the error of the
  first that failed (its position in ``op_index``). ``transaction()`` collects the same operations
  with kazoo's method names and commits them when its ``with`` block ends.
* ``watch(prefix, callback)`` calls ``callback(events)`` once after each committed change or
  transaction that touched a path at or below ``prefix``, with those paths in commit order.
  Callbacks run on a thread of the store (the committing thread of the embedded tree, kazoo's
  event thread for ZooKeeper, which reports one node per batch) and may read the store; an
  asyncio user hands the events to its loop (``loop.call_soon_threadsafe``).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

from kcli.errors import KcliError

ANY_VERSION = -1


# -- errors ---------------------------------------------------------------------------------------


class MetadataStoreError(KcliError):
    """A tree operation that was refused; ``path`` names the node, ``op_index`` the failed op."""

    default_message = "Metadata store operation failed"

    def __init__(self, path: str, message: str | None = None) -> None:
        super().__init__(message if message is not None else f"{self.default_message}: {path}")
        self.path = path
        self.op_index: int | None = None


class NoNodeError(MetadataStoreError):
    """The node (or, for ``create``, its parent) does not exist."""

    default_message = "No node"


class NodeExistsError(MetadataStoreError):
    """``create`` of a node that already exists."""

    default_message = "Node already exists"


class BadVersionError(MetadataStoreError):
    """The node's version is not the one the operation expected."""

    default_message = "Version mismatch"


class NotEmptyError(MetadataStoreError):
    """A non-recursive ``delete`` of a node that has children."""

    default_message = "Node has children"


class NoChildrenForEphemeralsError(MetadataStoreError):
    """``create`` under an ephemeral node."""

    default_message = "Ephemeral nodes cannot have children"


class InvalidPathError(MetadataStoreError):
    """A path that is not absolute, ends with ``/``, or has an empty, ``.`` or ``..`` component."""

    default_message = "Invalid path"


class StoreClosedError(MetadataStoreError):
    """An operation on a store whose session has ended."""

    default_message = "The metadata store is closed"


class CorruptMetadataError(KcliError):
    """A persisted tree that cannot be loaded; the message names the file."""


# -- values ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stat:
    """A node's bookkeeping, as ZooKeeper's ``Stat`` (times in milliseconds since the epoch).

    ``czxid``/``mzxid``/``pzxid`` are the ids of the transactions that created the node, last
    changed its value and last changed its children; ``version`` counts value changes and
    ``cversion`` child creations and deletions; ``ephemeral_owner`` is the owning session's id
    (0 for a persistent node).
    """

    czxid: int
    mzxid: int
    pzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    value: bytes = b""
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    value: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class CheckOp:
    """Fails the transaction unless the node exists with ``version``."""

    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp
# What each op yields in ``multi``'s result list: the created path, the new Stat, None, None.
OpResult = str | Stat | None


class ChangeKind(enum.Enum):
    CREATED = "created"
    CHANGED = "changed"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    kind: ChangeKind
    path: str


WatchCallback = Callable[[list[ChangeEvent]], None]


# -- paths ----------------------------------------------------------------------------------------


def validate_path(path: str) -> None:
    """Raise ``InvalidPathError`` unless ``path`` is a well-formed absolute znode path."""
    if path == "/":
        return
    if not path.startswith("/") or path.endswith("/"):
        raise InvalidPathError(path)
    for name in path[1:].split("/"):
        if name in ("", ".", "..") or "\x00" in name:
            raise InvalidPathError(path)


def parent_of(path: str) -> str:
    """The parent path: ``/a/b`` -> ``/a``, ``/a`` -> ``/``."""
    cut = path.rfind("/")
    return path[:cut] if cut > 0 else "/"


def join(parent: str, name: str) -> str:
    return parent + name if parent == "/" else f"{parent}/{name}"


def is_under(path: str, prefix: str) -> bool:
    """True when ``path`` is ``prefix`` or one of its descendants."""
    if prefix == "/" or path == prefix:
        return True
    return path.startswith(prefix + "/")


# -- the interface --------------------------------------------------------------------------------


class MetadataStore(ABC):
    """A znode tree with ZooKeeper's semantics; see the module docstring."""

    # The id of the store's current session: the ``ephemeral_owner`` of the nodes it creates.
    session_id: int

    @abstractmethod
    def get(self, path: str) -> tuple[bytes, Stat]:
        """The node's value and Stat; ``NoNodeError`` when it does not exist."""

    @abstractmethod
    def exists(self, path: str) -> Stat | None:
        """The node's Stat, or None."""

    @abstractmethod
    def create(
        self,
        path: str,
        value: bytes = b"",
        *,
        makepath: bool = False,
        ephemeral: bool = False,
        sequence: bool = False,
    ) -> str:
        """Create a node and return its path (with the sequence suffix when ``sequence``)."""

    @abstractmethod
    def set(self, path: str, value: bytes, version: int = ANY_VERSION) -> Stat:
        """Replace the node's value; returns the new Stat."""

    @abstractmethod
    def delete(self, path: str, version: int = ANY_VERSION, recursive: bool = False) -> None:
        """Delete the node (and with ``recursive`` everything below it)."""

    @abstractmethod
    def get_children(self, path: str) -> list[str]:
        """The names (not paths) of the node's children, sorted."""

    @abstractmethod
    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        """Apply every op or none; see the module docstring."""

    @abstractmethod
    def watch(self, prefix: str, callback: WatchCallback) -> Callable[[], None]:
        """Call ``callback`` after each commit touching ``prefix``; returns the unsubscriber."""

    @abstractmethod
    def close(self) -> None:
        """End the session: ephemeral nodes are deleted (watchers see it), further calls fail."""

    def on_new_session(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` after the store's session was replaced by a new one (ZooKeeper's
        session expiry: the old session's ephemeral nodes are gone); returns the remover.

        A store whose session lasts as long as it is open (the embedded tree) never calls it.
        """
        return lambda: None

    def get_many(self, paths: Sequence[str]) -> dict[str, tuple[bytes, Stat] | None]:
        """Each node's value and Stat (None for a node that does not exist). A ZooKeeper store
        pipelines the reads; other errors raise as ``get`` raises them."""
        found: dict[str, tuple[bytes, Stat] | None] = {}
        for path in paths:
            try:
                found[path] = self.get(path)
            except NoNodeError:
                found[path] = None
        return found

    def get_children_many(self, paths: Sequence[str]) -> dict[str, list[str] | None]:
        """Each node's sorted child names (None for a node that does not exist), pipelined as
        ``get_many``."""
        found: dict[str, list[str] | None] = {}
        for path in paths:
            try:
                found[path] = self.get_children(path)
            except NoNodeError:
                found[path] = None
        return found

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def transaction(self) -> Transaction:
        """Collect operations to commit atomically: ``with store.transaction() as txn: ...``."""
        return Transaction(self)

    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its missing ancestors as empty persistent nodes, if absent."""
        if self.exists(path) is not None:
            return
        try:
            self.create(path, makepath=True)
        except NodeExistsError:
            pass


class Transaction:
    """Operations gathered with kazoo's names and applied by one ``multi`` on ``commit``.

    Used as a context manager the transaction commits when the block ends without an exception;
    the results are then in ``results``.
    """

    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self.ops: list[Op] = []
        self.results: list[OpResult] | None = None

    def create(self, path: str, value: bytes = b"", *, ephemeral: bool = False, sequence: bool = False) -> None:
        self.ops.append(CreateOp(path, value, ephemeral, sequence))

    def set_data(self, path: str, value: bytes, version: int = ANY_VERSION) -> None:
        self.ops.append(SetDataOp(path, value, version))

    def delete(self, path: str, version: int = ANY_VERSION) -> None:
        self.ops.append(DeleteOp(path, version))

    def check(self, path: str, version: int) -> None:
        self.ops.append(CheckOp(path, version))

    def commit(self) -> list[OpResult]:
        self.results = self._store.multi(self.ops)
        return self.results

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
