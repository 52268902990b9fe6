"""The old consumer's ``/consumers`` tree, on both backends of the metadata tree.

Formats from the reference (kafka-tools.md 5.1): ``/consumers/<g>/offsets/<t>/<p>`` holds the next
offset as a plain decimal string; ``/consumers/<g>/ids/<id>`` holds
``{"version":1,"subscription":{"<topic>":<n>},"pattern":"static","timestamp":"<ms>"}``;
``/consumers/<g>/owners/<t>/<p>`` the owning thread id.
"""

from __future__ import annotations

import json

import pytest

from kcli.common import TopicPartition as TP
from kcli.metadata import zk_paths as zk
from kcli.metadata.embedded import EmbeddedStore
from kcli.metadata.store import BadVersionError, NodeExistsError
from kcli.metadata.zk_consumers import ZkConsumerGroups
from kcli.metadata.zookeeper import ZooKeeperStore

_CHROOT_SAFE = str.maketrans({"[": "-", "]": "", "/": "-"})


@pytest.fixture(params=["embedded", "zookeeper"])
def store(request, tmp_path):
    if request.param == "embedded":
        with EmbeddedStore(tmp_path) as opened:
            yield opened
    else:
        server = request.getfixturevalue("zookeeper_server")
        with ZooKeeperStore(f"{server.connect}/zkc-{request.node.name.translate(_CHROOT_SAFE)}").start() as opened:
            yield opened


def put(store, path: str, value: bytes) -> None:
    store.create(path, value, makepath=True)


def test_reads_offsets_written_as_the_old_consumer_wrote_them(store):
    put(store, "/consumers/g1/offsets/orders/0", b"42")
    put(store, "/consumers/g1/offsets/orders/1", b"0")
    put(store, "/consumers/g1/offsets/audit/10", b"9000000000")
    put(store, "/consumers/g2/offsets/orders/0", b"7")
    put(store, "/consumers/g3/ids", b"")  # a group that never committed
    groups = ZkConsumerGroups(store)
    assert groups.groups() == ["g1", "g2", "g3"]
    assert groups.groups_with_offsets() == ["g1", "g2"]
    read = groups.read_offsets(["g1", "g2", "g3", "missing"])
    assert read["g1"].offsets == {TP("audit", 10): 9000000000, TP("orders", 0): 42, TP("orders", 1): 0}
    assert read["g1"].malformed == []
    assert read["g2"].offsets == {TP("orders", 0): 7}
    assert read["g3"] is None and read["missing"] is None
    assert groups.read_offsets(["g1"], topics=["orders"])["g1"].offsets == {TP("orders", 0): 42, TP("orders", 1): 0}


@pytest.mark.parametrize("data", [b"abc", b"", b"12.5", b" 12", b"0x10", b"99999999999999999999", "١٢".encode()])
def test_a_node_that_is_not_a_number_is_reported_with_its_path(store, data):
    put(store, "/consumers/g/offsets/t/0", data)
    put(store, "/consumers/g/offsets/t/1", b"5")
    put(store, "/consumers/g/offsets/t/x", b"5")
    read = ZkConsumerGroups(store).read_offsets(["g"])["g"]
    assert read.offsets == {TP("t", 1): 5}
    assert [path for path, _ in read.malformed] == ["/consumers/g/offsets/t/0", "/consumers/g/offsets/t/x"]
    assert "not a decimal number" in read.malformed[0][1]
    assert "not a partition number" in read.malformed[1][1]


def test_write_creates_parents_and_sets_existing_nodes_as_decimal_strings(store):
    put(store, "/consumers/g/offsets/t/0", b"3")
    groups = ZkConsumerGroups(store)
    groups.write_offsets("g", {TP("t", 0): 10, TP("t", 1): 11, TP("u", 0): 0})
    assert store.get("/consumers/g/offsets/t/0")[0] == b"10"
    assert store.get("/consumers/g/offsets/t/0")[1].version == 1
    assert store.get("/consumers/g/offsets/t/1")[0] == b"11"
    assert store.get("/consumers/g/offsets/u/0")[0] == b"0"
    groups.write_offsets("fresh", {TP("t", 2): 5})
    assert store.get("/consumers/fresh/offsets/t/2")[0] == b"5"


def test_a_write_is_all_or_nothing(store):
    groups = ZkConsumerGroups(store)
    put(store, "/consumers/g/offsets/t/0", b"1")
    ops = groups.write_ops("g", {TP("t", 0): 2, TP("t", 1): 3})
    store.set("/consumers/g/offsets/t/0", b"9")  # changed after it was read
    with pytest.raises(BadVersionError):
        store.multi(ops)
    assert store.get("/consumers/g/offsets/t/0")[0] == b"9"
    assert store.exists("/consumers/g/offsets/t/1") is None


def test_members_registrations_and_owners(store):
    groups = ZkConsumerGroups(store)
    registration = zk.ConsumerRegistration({"orders": 1}, "static", 1643692590218)
    groups.register_consumer("g", "g_host-1643692590218-1a2b3c4d", registration)
    data = store.get("/consumers/g/ids/g_host-1643692590218-1a2b3c4d")[0]
    assert json.loads(data) == {"version": 1, "subscription": {"orders": 1}, "pattern": "static", "timestamp": "1643692590218"}
    assert store.exists("/consumers/g/ids/g_host-1643692590218-1a2b3c4d").ephemeral_owner == store.session_id
    assert groups.members(["g", "other"]) == {"g": ["g_host-1643692590218-1a2b3c4d"], "other": []}
    assert groups.registrations("g") == {"g_host-1643692590218-1a2b3c4d": registration}
    assert groups.claim_partition("g", TP("orders", 0), "g_host-1643692590218-1a2b3c4d-0")
    assert not groups.claim_partition("g", TP("orders", 0), "someone-else-0")
    assert store.get("/consumers/g/owners/orders/0")[0] == b"g_host-1643692590218-1a2b3c4d-0"
    assert groups.owners("g") == {TP("orders", 0): "g_host-1643692590218-1a2b3c4d-0"}
    groups.release_partition("g", TP("orders", 0))
    groups.unregister_consumer("g", "g_host-1643692590218-1a2b3c4d")
    assert groups.owners("g") == {} and groups.members(["g"]) == {"g": []}
    with pytest.raises(NodeExistsError):
        store.create("/consumers/g/ids")


def test_pipelined_reads_match_single_reads(store):
    for p in range(50):
        put(store, f"/consumers/g/offsets/t/{p}", str(p * 3).encode())
    paths = [f"/consumers/g/offsets/t/{p}" for p in range(60)]
    many = store.get_many(paths)
    for p, path in enumerate(paths):
        if p < 50:
            assert many[path][0] == store.get(path)[0]
        else:
            assert many[path] is None
    children = store.get_children_many(["/consumers/g/offsets/t", "/consumers/none"])
    assert children["/consumers/g/offsets/t"] == sorted(str(p) for p in range(50))
    assert children["/consumers/none"] is None
