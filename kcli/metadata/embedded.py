"""The embedded metadata tree of single-process mode: in memory, persisted to one file.

The whole tree lives in memory. After every committed change or transaction the persistent nodes
are written to ``<directory>/metadata.json`` (temp file, fsync, rename, fsync of the directory),
so one transaction is one file write however many nodes it touches. Ephemeral nodes belong to the
running process and are never written; they vanish with ``close`` or with the process. Each
node's JSON entry is cached and rebuilt only when the node changes, so a write costs one pass
over cached strings rather than a re-encoding of the tree.

The file::

    {"format":"kcli-metadata","version":1,"zxid":42,
     "nodes":{"/":{...},"/cluster/id":{"data":"{\\"version\\":\\"1\\",...}","czxid":3,...}}}

A value that is valid UTF-8 is kept as text under ``data``; any other value as base64 under
``data_base64``. Each entry carries the Stat fields that cannot be derived (``czxid``, ``mzxid``,
``pzxid``, ``ctime``, ``mtime``, ``version``, ``cversion``) and ``children_created``, the count of
children ever created under the node, which names its next sequential child as ZooKeeper does
(deletions bump ``cversion`` but not the sequence; absent in older files, where ``cversion``
stands in: names stay unique, as that count never exceeds ``cversion``).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kcli.metadata.store import (
    ANY_VERSION,
    BadVersionError,
    ChangeEvent,
    ChangeKind,
    CorruptMetadataError,
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
    is_under,
    join,
    parent_of,
    validate_path,
)
from kcli.storage.checkpoints import write_atomically

log = logging.getLogger("kcli.broker.metadata")

METADATA_FILE = "metadata.json"
FILE_FORMAT = "kcli-metadata"
FILE_VERSION = 1
_STAT_FIELDS = ("czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion")


class _Node:
    __slots__ = (
        "data",
        "czxid",
        "mzxid",
        "pzxid",
        "ctime",
        "mtime",
        "version",
        "cversion",
        "children_created",
        "ephemeral_owner",
        "children",
    )

    def __init__(self, data: bytes, zxid: int, now: int, ephemeral_owner: int = 0) -> None:
        self.data = data
        self.czxid = self.mzxid = self.pzxid = zxid
        self.ctime = self.mtime = now
        self.version = 0
        self.cversion = 0
        self.children_created = 0
        self.ephemeral_owner = ephemeral_owner
        self.children: set[str] = set()

    def copy(self) -> _Node:
        twin = _Node.__new__(_Node)
        for field in _Node.__slots__:
            setattr(twin, field, getattr(self, field))
        twin.children = set(self.children)
        return twin

    def stat(self) -> Stat:
        return Stat(
            czxid=self.czxid,
            mzxid=self.mzxid,
            pzxid=self.pzxid,
            ctime=self.ctime,
            mtime=self.mtime,
            version=self.version,
            cversion=self.cversion,
            ephemeral_owner=self.ephemeral_owner,
            data_length=len(self.data),
            num_children=len(self.children),
        )


class _Changes:
    """What one commit did: the original of every node it touched (for rollback) and its events."""

    def __init__(self) -> None:
        self.originals: dict[str, _Node | None] = {}
        self.events: list[ChangeEvent] = []


class EmbeddedStore(MetadataStore):
    """The file-backed tree; thread-safe. ``file_path`` is the persisted file."""

    def __init__(self, directory: Path | str) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.file_path = directory / METADATA_FILE
        self.session_id = secrets.randbits(63) or 1
        self._lock = threading.RLock()
        self._nodes: dict[str, _Node] = {}
        self._ephemerals: set[str] = set()
        self._entries: dict[str, str] = {}
        self._zxid = 0
        self._watchers: dict[int, tuple[str, WatchCallback]] = {}
        self._next_watcher = 0
        self._pending: deque[list[ChangeEvent]] = deque()
        self._delivering = False
        self._closed = False
        self._load()

    # -- reads ------------------------------------------------------------------------------------

    def get(self, path: str) -> tuple[bytes, Stat]:
        with self._lock:
            node = self._existing(path)
            return node.data, node.stat()

    def exists(self, path: str) -> Stat | None:
        validate_path(path)
        with self._lock:
            self._check_open(path)
            node = self._nodes.get(path)
            return node.stat() if node is not None else None

    def get_children(self, path: str) -> list[str]:
        with self._lock:
            return sorted(self._existing(path).children)

    # -- writes -----------------------------------------------------------------------------------

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
        with self._lock:
            ops: list[Op] = [CreateOp(ancestor) for ancestor in self._missing_ancestors(path)] if makepath else []
            ops.append(CreateOp(path, value, ephemeral, sequence))
            result = self._commit(ops)[-1]
            assert isinstance(result, str)
            return result

    def set(self, path: str, value: bytes, version: int = ANY_VERSION) -> Stat:
        result = self._commit([SetDataOp(path, value, version)])[0]
        assert isinstance(result, Stat)
        return result

    def delete(self, path: str, version: int = ANY_VERSION, recursive: bool = False) -> None:
        with self._lock:
            ops: list[Op] = []
            if recursive and path in self._nodes:
                ops.extend(DeleteOp(descendant) for descendant in self._descendants_deepest_first(path))
            ops.append(DeleteOp(path, version))
            self._commit(ops)

    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        return self._commit(list(ops))

    def watch(self, prefix: str, callback: WatchCallback) -> Callable[[], None]:
        validate_path(prefix)
        with self._lock:
            key = self._next_watcher
            self._next_watcher += 1
            self._watchers[key] = (prefix, callback)

        def unsubscribe() -> None:
            with self._lock:
                self._watchers.pop(key, None)

        return unsubscribe

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            if self._ephemerals:
                self._commit([DeleteOp(path) for path in sorted(self._ephemerals, reverse=True)])
            self._closed = True


    # -- commit -----------------------------------------------------------------------------------

    def _commit(self, ops: list[Op]) -> list[OpResult]:
        with self._lock:
            self._check_open(ops[0].path if ops else "/")
            if not ops:
                return []
            zxid = self._zxid + 1
            now = int(time.time() * 1000)
            changes = _Changes()
            results: list[OpResult] = []
            for index, op in enumerate(ops):
                try:
                    results.append(self._apply(op, zxid, now, changes))
                except MetadataStoreError as error:
                    error.op_index = index
                    self._roll_back(changes)
                    raise
            try:
                self._persist(changes, zxid)
            except BaseException:
                self._roll_back(changes)
                raise
            self._zxid = zxid
            if changes.events:
                self._pending.append(changes.events)
                self._deliver()
            return results

    def _apply(self, op: Op, zxid: int, now: int, changes: _Changes) -> OpResult:
        validate_path(op.path)
        if isinstance(op, CreateOp):
            return self._apply_create(op, zxid, now, changes)
        if isinstance(op, SetDataOp):
            return self._apply_set(op, zxid, now, changes)
        if isinstance(op, DeleteOp):
            self._apply_delete(op, zxid, changes)
            return None
        self._expect_version(self._existing(op.path), op.path, op.version)
        return None

    def _apply_create(self, op: CreateOp, zxid: int, now: int, changes: _Changes) -> str:
        if op.path == "/":
            raise NodeExistsError(op.path)
        parent_path = parent_of(op.path)
        parent = self._nodes.get(parent_path)
        if parent is None:
            raise NoNodeError(op.path)
        if parent.ephemeral_owner:
            raise NoChildrenForEphemeralsError(op.path)
        path = f"{op.path}{parent.children_created:010d}" if op.sequence else op.path
        if path in self._nodes:
            raise NodeExistsError(path)
        self._save(changes, parent_path)
        self._save(changes, path)
        self._nodes[path] = _Node(bytes(op.value), zxid, now, self.session_id if op.ephemeral else 0)
        if op.ephemeral:
            self._ephemerals.add(path)
        parent.children.add(path.rsplit("/", 1)[1])
        parent.cversion += 1
        parent.children_created += 1
        parent.pzxid = zxid
        changes.events.append(ChangeEvent(ChangeKind.CREATED, path))
        return path

    def _apply_set(self, op: SetDataOp, zxid: int, now: int, changes: _Changes) -> Stat:
        node = self._existing(op.path)
        self._expect_version(node, op.path, op.version)
        self._save(changes, op.path)
        node.data = bytes(op.value)
        node.version += 1
        node.mzxid = zxid
        node.mtime = now
        changes.events.append(ChangeEvent(ChangeKind.CHANGED, op.path))
        return node.stat()

    def _apply_delete(self, op: DeleteOp, zxid: int, changes: _Changes) -> None:
        if op.path == "/":
            raise InvalidPathError(op.path, "The root node cannot be deleted")
        node = self._existing(op.path)
        self._expect_version(node, op.path, op.version)
        if node.children:
            raise NotEmptyError(op.path)
        parent_path = parent_of(op.path)
        parent = self._nodes[parent_path]
        self._save(changes, parent_path)
        self._save(changes, op.path)
        del self._nodes[op.path]
        self._ephemerals.discard(op.path)
        parent.children.discard(op.path.rsplit("/", 1)[1])
        parent.cversion += 1
        parent.pzxid = zxid
        changes.events.append(ChangeEvent(ChangeKind.DELETED, op.path))

    def _save(self, changes: _Changes, path: str) -> None:
        if path not in changes.originals:
            node = self._nodes.get(path)
            changes.originals[path] = node.copy() if node is not None else None

    def _roll_back(self, changes: _Changes) -> None:
        for path, original in changes.originals.items():
            self._ephemerals.discard(path)
            if original is None:
                self._nodes.pop(path, None)
                continue
            self._nodes[path] = original
            if original.ephemeral_owner:
                self._ephemerals.add(path)

    def _deliver(self) -> None:
        # A callback that writes to the store queues its events behind the ones being delivered,
        # so every watcher sees commits in commit order.
        if self._delivering:
            return
        self._delivering = True
        try:
            while self._pending:
                events = self._pending.popleft()
                for prefix, callback in list(self._watchers.values()):
                    selected = [event for event in events if is_under(event.path, prefix)]
                    if selected:
                        self._call(callback, selected)
        finally:
            self._delivering = False

    @staticmethod
    def _call(callback: WatchCallback, events: list[ChangeEvent]) -> None:
        try:
            callback(events)
        except Exception:
            log.exception("A metadata watcher failed on %d change(s) starting at %s", len(events), events[0].path)

    # -- helpers ----------------------------------------------------------------------------------

    def _check_open(self, path: str) -> None:
        if self._closed:
            raise StoreClosedError(path)

    def _existing(self, path: str) -> _Node:
        validate_path(path)
        self._check_open(path)
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        return node

    @staticmethod
    def _expect_version(node: _Node, path: str, version: int) -> None:
        if version != ANY_VERSION and version != node.version:
            raise BadVersionError(path, f"Version mismatch at {path}: expected {version}, found {node.version}")

    def _missing_ancestors(self, path: str) -> list[str]:
        missing: list[str] = []
        ancestor = parent_of(path)
        while ancestor not in self._nodes:
            missing.append(ancestor)
            ancestor = parent_of(ancestor)
        return missing[::-1]

    def _descendants_deepest_first(self, path: str) -> list[str]:
        ordered: list[str] = []
        stack = [path]
        while stack:
            current = stack.pop()
            for name in self._nodes[current].children:
                child = join(current, name)
                ordered.append(child)
                stack.append(child)
        # A node is listed after its parent, so the reversed list deletes children first.
        return ordered[::-1]

    # -- persistence ------------------------------------------------------------------------------

    def _persist(self, changes: _Changes, zxid: int) -> None:
        touched = [path for path in changes.originals if not self._is_ephemeral_change(path, changes)]
        if not touched:
            return
        previous = {path: self._entries.get(path) for path in touched}
        for path in touched:
            node = self._nodes.get(path)
            if node is None:
                self._entries.pop(path, None)
            else:
                self._entries[path] = _entry(path, node)
        try:
            write_atomically(self.file_path, self._document(zxid))
        except BaseException:
            for path, entry in previous.items():
                if entry is None:
                    self._entries.pop(path, None)
                else:
                    self._entries[path] = entry
            raise

    def _is_ephemeral_change(self, path: str, changes: _Changes) -> bool:
        original = changes.originals[path]
        if original is not None:
            return bool(original.ephemeral_owner)
        node = self._nodes.get(path)
        return node is None or bool(node.ephemeral_owner)

    def _document(self, zxid: int) -> bytes:
        head = f'{{"format":"{FILE_FORMAT}","version":{FILE_VERSION},"zxid":{zxid},"nodes":{{'
        return (head + ",".join(self._entries.values()) + "}}").encode("utf-8")

    def _load(self) -> None:
        try:
            raw = self.file_path.read_bytes()
        except FileNotFoundError:
            root = _Node(b"", 0, 0)
            self._nodes["/"] = root
            self._entries["/"] = _entry("/", root)
            return
        loaded = _parse_document(raw, self.file_path)
        self._zxid = loaded.zxid
        self._nodes = loaded.nodes
        self._entries = {path: _entry(path, node) for path, node in self._nodes.items()}


def _entry(path: str, node: _Node) -> str:
    fields: dict[str, Any] = {}
    try:
        fields["data"] = node.data.decode("utf-8")
    except UnicodeDecodeError:
        fields["data_base64"] = base64.b64encode(node.data).decode("ascii")
    for name in _STAT_FIELDS:
        fields[name] = getattr(node, name)
    fields["children_created"] = node.children_created
    return json.dumps(path, ensure_ascii=False) + ":" + json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


class _Loaded:
    def __init__(self, zxid: int, nodes: dict[str, _Node]) -> None:
        self.zxid = zxid
        self.nodes = nodes


def _parse_document(raw: bytes, file_path: Path) -> _Loaded:
    def corrupt(reason: str) -> CorruptMetadataError:
        return CorruptMetadataError(f"Metadata file {file_path} is corrupt: {reason}")

    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise corrupt(f"not valid JSON ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FILE_FORMAT:
        raise corrupt(f'the "format" field is not "{FILE_FORMAT}"')
    if document.get("version") != FILE_VERSION:
        raise corrupt(f"unsupported version {document.get('version')!r}")
    zxid = document.get("zxid")
    entries = document.get("nodes")
    if not _is_int(zxid) or not isinstance(entries, dict):
        raise corrupt('missing "zxid" or "nodes"')
    nodes: dict[str, _Node] = {}
    for path, fields in entries.items():
        try:
            validate_path(path)
            nodes[path] = _parse_node(fields)
        except (InvalidPathError, ValueError) as error:
            raise corrupt(f"node {path!r}: {error}") from None
    if "/" not in nodes:
        raise corrupt("the root node is missing")
    for path in nodes:
        if path == "/":
            continue
        parent = nodes.get(parent_of(path))
        if parent is None:
            raise corrupt(f"node {path!r} has no parent")
        parent.children.add(path.rsplit("/", 1)[1])
    return _Loaded(zxid, nodes)


def _parse_node(fields: object) -> _Node:
    if not isinstance(fields, dict):
        raise ValueError("entry is not an object")
    if isinstance(fields.get("data"), str):
        data = fields["data"].encode("utf-8")
    elif isinstance(fields.get("data_base64"), str):
        try:
            data = base64.b64decode(fields["data_base64"], validate=True)
        except binascii.Error as error:
            raise ValueError(f"bad base64 value ({error})") from None
    else:
        raise ValueError("no value")
    node = _Node(data, 0, 0)
    for name in _STAT_FIELDS:
        value = fields.get(name)
        if not _is_int(value):
            raise ValueError(f"{name} is not an integer")
        setattr(node, name, value)
    created = fields.get("children_created", node.cversion)
    if not _is_int(created):
        raise ValueError("children_created is not an integer")
    node.children_created = created
    return node


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
