"""The metadata tree: ZooKeeper's semantics in both backends (the embedded tree and a real
ZooKeeper server through kazoo), and what only the embedded one adds (one batch per commit,
persistence in one file)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.zookeeper_process import ZooKeeperProcess

from kcli.metadata import embedded
from kcli.metadata.embedded import METADATA_FILE, EmbeddedStore
from kcli.metadata.zookeeper import ConnectionLossError, ZooKeeperClientTimeoutError, ZooKeeperStore
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


@pytest.fixture(params=["embedded", "zookeeper"])
def store(request, tmp_path):
    """Each backend, empty: a ZooKeeper store gets a chroot of its own on the shared server."""
    if request.param == "embedded":
        with EmbeddedStore(tmp_path) as opened:
            yield opened
    else:
        server = request.getfixturevalue("zookeeper_server")
        with ZooKeeperStore(f"{server.connect}/{request.node.name.translate(_CHROOT_SAFE)}").start() as opened:
            yield opened


_CHROOT_SAFE = str.maketrans({"[": "-", "]": "", "/": "-"})


@pytest.fixture
def embedded_store(tmp_path):
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


def test_sequential_names_count_the_children_ever_created(store):
    # ZooKeeper 3.8 (checked against the real server by the zookeeper case): the suffix is the
    # number of children created under the parent so far; deletions bump cversion but not it.
    store.create("/changes")
    store.create("/changes/other")
    first = store.create("/changes/config_change_", b"1", sequence=True)
    second = store.create("/changes/config_change_", b"2", sequence=True)
    assert first == "/changes/config_change_0000000001"
    assert second == "/changes/config_change_0000000002"
    store.delete(first)
    store.delete("/changes/other")
    assert store.get("/changes")[1].cversion == 5
    assert store.create("/changes/config_change_", sequence=True) == "/changes/config_change_0000000003"


def test_sequence_count_survives_a_reload(tmp_path):
    with EmbeddedStore(tmp_path) as first:
        first.create("/c")
        first.delete(first.create("/c/n-", sequence=True))
    with EmbeddedStore(tmp_path) as second:
        assert second.create("/c/n-", sequence=True) == "/c/n-0000000001"


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


def test_failed_multi_changes_nothing_and_names_the_failed_op(embedded_store, tmp_path):
    embedded_store.create("/a", b"old")
    before = snapshot(embedded_store)
    file_before = (tmp_path / METADATA_FILE).read_bytes()
    with pytest.raises(BadVersionError) as caught:
        embedded_store.multi([CreateOp("/b"), SetDataOp("/a", b"new"), DeleteOp("/a", version=0), CreateOp("/c")])
    assert caught.value.op_index == 2
    assert snapshot(embedded_store) == before
    assert (tmp_path / METADATA_FILE).read_bytes() == file_before
    # The counters were not consumed either: the next commit continues where the last one ended.
    assert embedded_store.create("/d") == "/d"
    assert embedded_store.get("/d")[1].czxid == embedded_store.get("/a")[1].czxid + 1


def test_failed_multi_changes_nothing_in_either_backend(store):
    store.create("/a", b"old")
    before = snapshot(store)
    with pytest.raises(BadVersionError) as caught:
        store.multi([CreateOp("/b"), SetDataOp("/a", b"new"), DeleteOp("/a", version=0), CreateOp("/c")])
    assert caught.value.op_index == 2
    assert snapshot(store) == before


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


def test_watch_gets_one_batch_per_commit_filtered_by_prefix(embedded_store):
    embedded_store.create("/brokers")
    seen = Recorder()
    embedded_store.watch("/brokers", seen)
    embedded_store.multi([CreateOp("/brokers/topics"), CreateOp("/other"), CreateOp("/brokers/topics/t")])
    embedded_store.create("/brokersx")
    embedded_store.set("/brokers/topics/t", b"v")
    assert seen.batches == [
        [ChangeEvent(ChangeKind.CREATED, "/brokers/topics"), ChangeEvent(ChangeKind.CREATED, "/brokers/topics/t")],
        [ChangeEvent(ChangeKind.CHANGED, "/brokers/topics/t")],
    ]


def test_failed_commits_are_not_reported(embedded_store):
    seen = Recorder()
    embedded_store.watch("/", seen)
    with pytest.raises(NoNodeError):
        embedded_store.multi([CreateOp("/a"), CreateOp("/missing/b")])
    assert seen.batches == []


def test_unsubscribed_watch_is_silent(embedded_store):
    seen = Recorder()
    unsubscribe = embedded_store.watch("/", seen)
    embedded_store.create("/a")
    unsubscribe()
    embedded_store.create("/b")
    assert len(seen.batches) == 1


def test_watcher_can_read_and_its_writes_are_delivered_after_the_current_batch(embedded_store):
    order: list[str] = []

    def first(events):
        order.append("first:" + ",".join(event.path for event in events))
        if events[0].path == "/a":
            assert embedded_store.get("/a")[0] == b"1"
            embedded_store.create("/b")

    def second(events):
        order.append("second:" + ",".join(event.path for event in events))

    embedded_store.watch("/", first)
    embedded_store.watch("/", second)
    embedded_store.create("/a", b"1")
    assert order == ["first:/a", "second:/a", "first:/b", "second:/b"]


def test_a_failing_watcher_does_not_undo_the_commit_or_silence_others(embedded_store):
    seen = Recorder()

    def broken(events):
        raise ValueError("bug in a listener")

    embedded_store.watch("/", broken)
    embedded_store.watch("/", seen)
    embedded_store.create("/a")
    assert embedded_store.exists("/a") is not None
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


def test_file_is_json_with_text_values(embedded_store, tmp_path):
    embedded_store.create("/cluster/id", b'{"version":"1","id":"abc"}', makepath=True)
    document = json.loads((tmp_path / METADATA_FILE).read_text())
    assert document["format"] == "kcli-metadata"
    assert document["nodes"]["/cluster/id"]["data"] == '{"version":"1","id":"abc"}'


def test_a_transaction_of_thousands_of_nodes_is_one_file_write(embedded_store, monkeypatch):
    writes = []
    real_write = embedded.write_atomically

    def counting(path, data):
        writes.append(len(data))
        real_write(path, data)

    monkeypatch.setattr(embedded, "write_atomically", counting)
    ops = [CreateOp("/t"), CreateOp("/t/partitions")]
    for partition in range(1000):
        ops += [CreateOp(f"/t/partitions/{partition}"), CreateOp(f"/t/partitions/{partition}/state", b"{}")]
    embedded_store.multi(ops)
    assert len(writes) == 1


def test_a_failed_file_write_rolls_the_commit_back(embedded_store, monkeypatch):
    embedded_store.create("/a", b"1")

    def failing(path, data):
        raise OSError("disk full")

    monkeypatch.setattr(embedded, "write_atomically", failing)
    with pytest.raises(OSError):
        embedded_store.multi([SetDataOp("/a", b"2"), CreateOp("/b")])
    monkeypatch.undo()
    assert embedded_store.get("/a")[0] == b"1"
    assert embedded_store.exists("/b") is None
    embedded_store.create("/c")
    with EmbeddedStore(embedded_store.file_path.parent) as reloaded:
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


# -- ZooKeeper only ---------------------------------------------------------------------------------


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def zk_store(zookeeper_server, request):
    with ZooKeeperStore(f"{zookeeper_server.connect}/{request.node.name}").start() as opened:
        yield opened


def test_zookeeper_chroot_is_created_and_hides_the_rest_of_the_tree(zookeeper_server):
    with ZooKeeperStore(f"{zookeeper_server.connect}/kafka/cluster-a").start() as chrooted:
        chrooted.create("/brokers", b"x")
        assert chrooted.get_children("/") == ["brokers"]
    with ZooKeeperStore(zookeeper_server.connect).start() as whole:
        assert whole.get("/kafka/cluster-a/brokers")[0] == b"x"
        assert "zookeeper" in whole.get_children("/")


def test_zookeeper_watch_reports_each_change_below_the_prefix(zk_store):
    zk_store.create("/brokers/topics/old", makepath=True)
    seen = Recorder()
    unwatch = zk_store.watch("/brokers", seen)
    expected: list[list[ChangeEvent]] = []
    for change, kind in (
        (lambda: zk_store.create("/brokers/topics/t", b"1"), ChangeKind.CREATED),
        (lambda: zk_store.set("/brokers/topics/t", b"2"), ChangeKind.CHANGED),
        (lambda: zk_store.delete("/brokers/topics/t"), ChangeKind.DELETED),
    ):
        change()
        zk_store.create("/other-" + kind.value)  # outside the prefix: never reported
        expected.append([ChangeEvent(kind, "/brokers/topics/t")])
        assert wait_for(lambda: len(seen.batches) >= len(expected)), seen.batches
    assert seen.batches == expected  # the node that existed before the watch was not reported
    unwatch()
    zk_store.create("/brokers/topics/after")
    time.sleep(0.5)
    assert seen.batches == expected


def test_zookeeper_watch_of_a_missing_node_does_not_create_it_and_sees_it_come_and_go(zk_store):
    seen = Recorder()
    zk_store.watch("/controller", seen)
    assert zk_store.exists("/controller") is None
    zk_store.create("/controller", b"{}", ephemeral=True)
    assert wait_for(lambda: len(seen.batches) == 1)
    zk_store.delete("/controller")
    assert wait_for(lambda: len(seen.batches) == 2)
    assert seen.batches == [
        [ChangeEvent(ChangeKind.CREATED, "/controller")],
        [ChangeEvent(ChangeKind.DELETED, "/controller")],
    ]


def test_zookeeper_watch_always_reports_the_last_state_of_quick_changes(zk_store):
    zk_store.create("/t")
    seen = Recorder()
    zk_store.watch("/t", seen)
    for round_ in range(20):
        zk_store.create(f"/t/n{round_}", b"a")
        zk_store.set(f"/t/n{round_}", b"b")
        zk_store.delete(f"/t/n{round_}")

    def last_kinds() -> list[list[ChangeKind]]:
        return [[batch[0].kind for batch in seen.batches if batch[0].path == f"/t/n{r}"][-1:] for r in range(20)]

    # Events of different nodes may arrive in any order: wait for every node to settle. A node
    # reported created must be reported deleted too; one seen neither way is allowed.
    assert wait_for(lambda: all(kinds in ([], [ChangeKind.DELETED]) for kinds in last_kinds())), last_kinds()


def test_zookeeper_session_expiry_drops_ephemerals_and_calls_new_session_listeners(zk_store, zookeeper_server):
    from kazoo.client import KazooClient

    zk_store.create("/ids")
    zk_store.create("/ids/0", b"me", ephemeral=True)
    renewed = threading.Event()
    zk_store.on_new_session(renewed.set)
    old_session = zk_store.session_id
    # ZooKeeper's way to expire a session: open it from a second client, then close that client.
    session_id, password = zk_store.client.client_id
    thief = KazooClient(hosts=f"{zookeeper_server.connect}/{zk_store.chroot.lstrip('/')}",
                        client_id=(session_id, password))
    thief.start(timeout=10)
    thief.stop()
    thief.close()
    assert renewed.wait(30)
    assert zk_store.session_id not in (0, old_session)
    assert zk_store.exists("/ids/0") is None
    zk_store.create("/ids/0", b"me again", ephemeral=True)
    assert zk_store.get("/ids/0")[1].ephemeral_owner == zk_store.session_id


def test_zookeeper_unreachable_at_start_is_kafkas_timeout_message():
    from tests.zookeeper_process import free_port

    store = ZooKeeperStore(f"127.0.0.1:{free_port()}", connection_timeout_ms=1000)
    with pytest.raises(ZooKeeperClientTimeoutError) as caught:
        store.start()
    assert "Timed out waiting for connection" in str(caught.value)
    assert "while in state: CONNECTING" in str(caught.value)


def test_zookeeper_restart_loses_no_committed_node_and_the_store_reconnects(tmp_path):
    server = ZooKeeperProcess(tmp_path / "zk").start()
    try:
        with ZooKeeperStore(server.connect, session_timeout_ms=6000).start() as store:
            store.create("/kept", b"v")
            seen = Recorder()
            store.watch("/", seen)
            server.stop()
            with pytest.raises(ConnectionLossError):
                store.get("/kept")
            server.start()
            assert wait_for(lambda: _answers(store))
            assert store.get("/kept")[0] == b"v"
            store.create("/after-restart")
            assert wait_for(lambda: [ChangeEvent(ChangeKind.CREATED, "/after-restart")] in seen.batches)
    finally:
        server.stop()


def _answers(store) -> bool:
    try:
        store.exists("/")
        return True
    except ConnectionLossError:
        return False
