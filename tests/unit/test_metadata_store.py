"""The embedded metadata tree: ZooKeeper's semantics, atomic transactions, watches, persistence."""

from __future__ import annotations

import json
import threading

import pytest

from kcli.metadata import embedded
from kcli.metadata.embedded import METADATA_FILE, EmbeddedStore
from kcli.metadata.store import (
    BadVersionError,
    ChangeEvent,
    ChangeKind,
    CheckOp,
    CorruptMetadataError,
    CreateOp,
    DeleteOp,
    InvalidPathError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SetDataOp,
    StoreClosedError,
)


@pytest.fixture
def store(tmp_path):
    with EmbeddedStore(tmp_path) as opened:
        yield opened


def snapshot(store: EmbeddedStore) -> dict[str, tuple[bytes, object]]:
    """Every node's value and Stat, walked through the public interface."""
    nodes = {}
    pending = ["/"]
    while pending:
        path = pending.pop()
        nodes[path] = store.get(path)
        pending.extend(f"{path.rstrip('/')}/{child}" for child in store.get_children(path))
    return nodes


class Recorder:
    def __init__(self) -> None:
        self.batches: list[list[ChangeEvent]] = []

    def __call__(self, events: list[ChangeEvent]) -> None:
        self.batches.append(events)


# -- create / get / set / delete ------------------------------------------------------------------


def test_create_then_get_returns_value_and_fresh_stat(store):
    assert store.create("/a", b"hello") == "/a"
    value, stat = store.get("/a")
    assert value == b"hello"
    assert stat.version == 0 and stat.cversion == 0
    assert stat.czxid == stat.mzxid == stat.pzxid
    assert stat.ctime == stat.mtime > 0
    assert stat.data_length == 5 and stat.num_children == 0 and stat.ephemeral_owner == 0


def test_create_updates_parent_child_bookkeeping(store):
    store.create("/a")
    store.create("/a/b")
    store.create("/a/c")
    _, parent = store.get("/a")
    _, child = store.get("/a/c")
    assert parent.num_children == 2 and parent.cversion == 2
    assert parent.pzxid == child.czxid
    assert parent.version == 0
    assert store.get_children("/a") == ["b", "c"]


def test_each_commit_gets_a_larger_zxid(store):
    store.create("/a")
    store.create("/b")
    assert store.get("/b")[1].czxid == store.get("/a")[1].czxid + 1


def test_create_existing_node_fails(store):
    store.create("/a")
    with pytest.raises(NodeExistsError) as caught:
        store.create("/a")
    assert caught.value.path == "/a"


def test_create_without_parent_fails_unless_makepath(store):
    with pytest.raises(NoNodeError):
        store.create("/x/y/z")
    assert store.create("/x/y/z", b"v", makepath=True) == "/x/y/z"
    assert store.get("/x")[0] == b"" and store.get("/x/y")[0] == b""
    assert store.get("/x/y/z")[0] == b"v"


def test_exists(store):
    assert store.exists("/a") is None
    store.create("/a", b"12")
    assert store.exists("/a").data_length == 2


def test_ensure_path_is_idempotent(store):
    store.ensure_path("/p/q")
    store.ensure_path("/p/q")
    assert store.get_children("/p") == ["q"]


def test_set_bumps_version_and_checks_expected_version(store):
    store.create("/a", b"1")
    created = store.get("/a")[1]
    stat = store.set("/a", b"2")
    assert stat.version == 1 and stat.mzxid > created.mzxid and stat.czxid == created.czxid
    assert store.set("/a", b"3", version=1).version == 2
    with pytest.raises(BadVersionError):
        store.set("/a", b"4", version=1)
    assert store.get("/a")[0] == b"3"


def test_set_missing_node_fails(store):
    with pytest.raises(NoNodeError):
        store.set("/nope", b"")


def test_delete_checks_version_and_children(store):
    store.create("/a")
    store.create("/a/b")
    with pytest.raises(NotEmptyError):
        store.delete("/a")
    store.set("/a/b", b"x")
    with pytest.raises(BadVersionError):
        store.delete("/a/b", version=0)
    store.delete("/a/b", version=1)
    store.delete("/a")
    assert store.exists("/a") is None
    assert store.get("/")[1].num_children == 0


def test_recursive_delete_removes_the_subtree(store):
    for path in ("/t/p/0/state", "/t/p/1/state", "/t/q"):
        store.create(path, makepath=True)
    store.delete("/t", recursive=True)
    assert store.exists("/t") is None
    assert store.get_children("/") == []


def test_delete_missing_and_root(store):
    with pytest.raises(NoNodeError):
        store.delete("/missing")
    with pytest.raises(InvalidPathError):
        store.delete("/")


@pytest.mark.parametrize("path", ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/../b"])
def test_invalid_paths_are_refused(store, path):
    with pytest.raises(InvalidPathError):
        store.create(path)


# -- sequential and ephemeral nodes ---------------------------------------------------------------


def test_sequential_names_come_from_the_parent_child_version(store):
    store.create("/changes")
    store.create("/changes/other")
    first = store.create("/changes/config_change_", b"1", sequence=True)
    second = store.create("/changes/config_change_", b"2", sequence=True)
    assert first == "/changes/config_change_0000000001"
    assert second == "/changes/config_change_0000000002"
    store.delete(first)
    assert store.create("/changes/config_change_", sequence=True) == "/changes/config_change_0000000004"


def test_ephemeral_node_is_owned_by_the_session_and_cannot_have_children(store):
    store.create("/ids", b"")
    store.create("/ids/0", b"me", ephemeral=True)
    assert store.get("/ids/0")[1].ephemeral_owner == store.session_id != 0
    with pytest.raises(NoChildrenForEphemeralsError):
        store.create("/ids/0/child")


def test_ephemeral_nodes_are_not_persisted(tmp_path):
    with EmbeddedStore(tmp_path) as first:
        first.create("/ids")
        first.create("/ids/0", b"broker", ephemeral=True)
        first.create("/kept", b"yes")
        assert b"broker" not in (tmp_path / METADATA_FILE).read_bytes()
        with EmbeddedStore(tmp_path) as second:
            assert second.exists("/ids/0") is None
            assert second.get("/kept")[0] == b"yes"


def test_close_deletes_ephemeral_nodes_and_tells_watchers(tmp_path):
    store = EmbeddedStore(tmp_path)
    store.create("/ids")
    store.create("/ids/7", ephemeral=True)
    seen = Recorder()
    store.watch("/ids", seen)
    store.close()
    assert seen.batches == [[ChangeEvent(ChangeKind.DELETED, "/ids/7")]]
    with pytest.raises(StoreClosedError):
        store.get("/ids")


# -- transactions ---------------------------------------------------------------------------------


def test_multi_applies_everything_and_returns_each_result(store):
    store.create("/a", b"old")
    results = store.multi(
        [
            CreateOp("/b", b"new"),
            CreateOp("/b/seq-", sequence=True),
            SetDataOp("/a", b"changed", version=0),
            CheckOp("/a", 1),
            DeleteOp("/a"),
        ]
    )
    assert results[0] == "/b"
    assert results[1] == "/b/seq-0000000000"
    assert results[2].version == 1
    assert results[3:] == [None, None]
    assert store.exists("/a") is None
    assert store.get("/b")[0] == b"new"


def test_a_transaction_shares_one_zxid(store):
    store.multi([CreateOp("/a"), CreateOp("/b")])
    assert store.get("/a")[1].czxid == store.get("/b")[1].czxid


def test_failed_multi_changes_nothing_and_names_the_failed_op(store, tmp_path):
    store.create("/a", b"old")
    before = snapshot(store)
    file_before = (tmp_path / METADATA_FILE).read_bytes()
    with pytest.raises(BadVersionError) as caught:
        store.multi([CreateOp("/b"), SetDataOp("/a", b"new"), DeleteOp("/a", version=0), CreateOp("/c")])
    assert caught.value.op_index == 2
    assert snapshot(store) == before
    assert (tmp_path / METADATA_FILE).read_bytes() == file_before
    # The counters were not consumed either: the next commit continues where the last one ended.
    assert store.create("/d") == "/d"
    assert store.get("/d")[1].czxid == store.get("/a")[1].czxid + 1


def test_failed_multi_restores_deleted_and_ephemeral_nodes(store):
    store.create("/e", ephemeral=True)
    store.create("/k", b"v")
    with pytest.raises(NoNodeError):
        store.multi([DeleteOp("/e"), DeleteOp("/k"), CheckOp("/missing", 0)])
    assert store.get("/e")[1].ephemeral_owner == store.session_id
    assert store.get("/k")[0] == b"v"


def test_transaction_commits_at_the_end_of_the_block(store):
    with store.transaction() as txn:
        txn.create("/a", b"1")
        txn.create("/a/b")
        assert store.exists("/a") is None
    assert txn.results == ["/a", "/a/b"]
    assert store.get_children("/a") == ["b"]


def test_transaction_is_dropped_when_the_block_raises(store):
    with pytest.raises(RuntimeError):
        with store.transaction() as txn:
            txn.create("/a")
            raise RuntimeError("abandon")
    assert store.exists("/a") is None


# -- watches --------------------------------------------------------------------------------------


def test_watch_gets_one_batch_per_commit_filtered_by_prefix(store):
    store.create("/brokers")
    seen = Recorder()
    store.watch("/brokers", seen)
    store.multi([CreateOp("/brokers/topics"), CreateOp("/other"), CreateOp("/brokers/topics/t")])
    store.create("/brokersx")
    store.set("/brokers/topics/t", b"v")
    assert seen.batches == [
        [ChangeEvent(ChangeKind.CREATED, "/brokers/topics"), ChangeEvent(ChangeKind.CREATED, "/brokers/topics/t")],
        [ChangeEvent(ChangeKind.CHANGED, "/brokers/topics/t")],
    ]


def test_failed_commits_are_not_reported(store):
    seen = Recorder()
    store.watch("/", seen)
    with pytest.raises(NoNodeError):
        store.multi([CreateOp("/a"), CreateOp("/missing/b")])
    assert seen.batches == []


def test_unsubscribed_watch_is_silent(store):
    seen = Recorder()
    unsubscribe = store.watch("/", seen)
    store.create("/a")
    unsubscribe()
    store.create("/b")
    assert len(seen.batches) == 1


def test_watcher_can_read_and_its_writes_are_delivered_after_the_current_batch(store):
    order: list[str] = []

    def first(events):
        order.append("first:" + ",".join(event.path for event in events))
        if events[0].path == "/a":
            assert store.get("/a")[0] == b"1"
            store.create("/b")

    def second(events):
        order.append("second:" + ",".join(event.path for event in events))

    store.watch("/", first)
    store.watch("/", second)
    store.create("/a", b"1")
    assert order == ["first:/a", "second:/a", "first:/b", "second:/b"]


def test_a_failing_watcher_does_not_undo_the_commit_or_silence_others(store):
    seen = Recorder()

    def broken(events):
        raise ValueError("bug in a listener")

    store.watch("/", broken)
    store.watch("/", seen)
    store.create("/a")
    assert store.exists("/a") is not None
    assert len(seen.batches) == 1


# -- persistence ----------------------------------------------------------------------------------


def test_reload_gives_the_same_tree(tmp_path):
    with EmbeddedStore(tmp_path) as first:
        first.create("/brokers/topics/t", b'{"version":3}', makepath=True)
        first.create("/bin", bytes(range(256)))
        first.create("/config/changes/config_change_", b"x", makepath=True, sequence=True)
        first.set("/bin", b"\xff\x00\xfe")
        first.delete("/config/changes/config_change_0000000000")
        before = snapshot(first)
    with EmbeddedStore(tmp_path) as second:
        assert snapshot(second) == before
        assert second.create("/later").startswith("/later")
        assert second.get("/later")[1].czxid > max(stat.mzxid for _, stat in before.values())


def test_file_is_json_with_text_values(store, tmp_path):
    store.create("/cluster/id", b'{"version":"1","id":"abc"}', makepath=True)
    document = json.loads((tmp_path / METADATA_FILE).read_text())
    assert document["format"] == "kcli-metadata"
    assert document["nodes"]["/cluster/id"]["data"] == '{"version":"1","id":"abc"}'


def test_a_transaction_of_thousands_of_nodes_is_one_file_write(store, monkeypatch):
    writes = []
    real_write = embedded.write_atomically

    def counting(path, data):
        writes.append(len(data))
        real_write(path, data)

    monkeypatch.setattr(embedded, "write_atomically", counting)
    ops = [CreateOp("/t"), CreateOp("/t/partitions")]
    for partition in range(1000):
        ops += [CreateOp(f"/t/partitions/{partition}"), CreateOp(f"/t/partitions/{partition}/state", b"{}")]
    store.multi(ops)
    assert len(writes) == 1


def test_a_failed_file_write_rolls_the_commit_back(store, monkeypatch):
    store.create("/a", b"1")

    def failing(path, data):
        raise OSError("disk full")

    monkeypatch.setattr(embedded, "write_atomically", failing)
    with pytest.raises(OSError):
        store.multi([SetDataOp("/a", b"2"), CreateOp("/b")])
    monkeypatch.undo()
    assert store.get("/a")[0] == b"1"
    assert store.exists("/b") is None
    store.create("/c")
    with EmbeddedStore(store.file_path.parent) as reloaded:
        assert reloaded.get("/a")[0] == b"1" and reloaded.exists("/c") is not None


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'{"format":"other","version":1,"zxid":0,"nodes":{}}',
        b'{"format":"kcli-metadata","version":99,"zxid":0,"nodes":{}}',
        b'{"format":"kcli-metadata","version":1,"zxid":0,"nodes":{}}',
        b'{"format":"kcli-metadata","version":1,"zxid":"1","nodes":{}}',
    ],
)
def test_corrupt_file_is_one_clear_error_naming_it(tmp_path, content):
    (tmp_path / METADATA_FILE).write_bytes(content)
    with pytest.raises(CorruptMetadataError) as caught:
        EmbeddedStore(tmp_path)
    assert str(tmp_path / METADATA_FILE) in str(caught.value)


def test_node_without_parent_is_corruption(tmp_path):
    with EmbeddedStore(tmp_path) as store:
        store.create("/a/b", makepath=True)
    document = json.loads((tmp_path / METADATA_FILE).read_text())
    del document["nodes"]["/a"]
    (tmp_path / METADATA_FILE).write_text(json.dumps(document))
    with pytest.raises(CorruptMetadataError, match="'/a/b' has no parent"):
        EmbeddedStore(tmp_path)


def test_node_with_a_bad_stat_is_corruption(tmp_path):
    with EmbeddedStore(tmp_path) as store:
        store.create("/a")
    document = json.loads((tmp_path / METADATA_FILE).read_text())
    document["nodes"]["/a"]["version"] = "zero"
    (tmp_path / METADATA_FILE).write_text(json.dumps(document))
    with pytest.raises(CorruptMetadataError, match="version is not an integer"):
        EmbeddedStore(tmp_path)


# -- threads --------------------------------------------------------------------------------------


def test_concurrent_sequential_creates_get_distinct_names(store):
    store.create("/seq")
    created: list[str] = []

    def worker() -> None:
        for _ in range(50):
            created.append(store.create("/seq/n-", sequence=True))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(created)) == 200
    assert store.get("/seq")[1].num_children == 200
