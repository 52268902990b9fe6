"""The coordinator's ``__consumer_offsets`` records: Kafka 3.9's layouts, batches, and replay."""

from __future__ import annotations

import struct

import pytest

from kcli.broker.groups import store
from kcli.broker.groups.group import ClassicGroup, GroupState
from kcli.broker.groups.member import ClassicGroupMember
from kcli.broker.groups.offsets import CommittedOffset, OffsetAndMetadata
from kcli.protocol import coordinator_records as cr
from kcli.storage.compression import CompressionType
from kcli.storage.log import Log
from kcli.storage.records import (
    ControlType,
    NewRecord,
    RecordBatch,
    TimestampType,
    build_batch,
    control_record,
    end_txn_marker_value,
)


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def test_offset_commit_record_has_kafka_39_layout():
    record = store.offset_commit_record("grp", ("orders", 7), OffsetAndMetadata(1234, 5, "meta", 1700000000000), 1700000000001)
    # OffsetCommitKey v1: version, group, topic, partition.
    assert record.key == struct.pack(">h", 1) + _string("grp") + _string("orders") + struct.pack(">i", 7)
    # OffsetCommitValue v3: version, offset, leaderEpoch, metadata, commitTimestamp.
    assert record.value == struct.pack(">hqi", 3, 1234, 5) + _string("meta") + struct.pack(">q", 1700000000000)
    assert record.timestamp == 1700000000001


def test_offset_commit_with_expire_time_is_value_v1_and_no_epoch_is_minus_one():
    record = store.offset_commit_record("g", ("t", 0), OffsetAndMetadata(9, None, "", 100, expire_timestamp=500), 100)
    # OffsetCommitValue v1: version, offset, metadata, commitTimestamp, expireTimestamp.
    assert record.value == struct.pack(">hq", 1, 9) + _string("") + struct.pack(">qq", 100, 500)
    v3 = store.offset_commit_record("g", ("t", 0), OffsetAndMetadata(9, None, "", 100), 100)
    assert cr.decode_offset_commit_value(v3.value) == (3, {"Offset": 9, "LeaderEpoch": -1, "Metadata": "", "CommitTimestamp": 100})


def _member(member_id: str, protocols, *, instance=None, assignment=b"") -> ClassicGroupMember:
    return ClassicGroupMember(member_id, instance, "client-" + member_id, "/127.0.0.1", 30000, 10000, "consumer", protocols, assignment)


def _subscription(*topics: str) -> bytes:
    return cr.encode_consumer_protocol_subscription({"Topics": list(topics), "UserData": None, "OwnedPartitions": []}, version=1)


def test_group_metadata_record_round_trips_through_the_schema_decoder():
    group = ClassicGroup("payments", state=GroupState.STABLE, current_state_timestamp=1700000000123, generation_id=4)
    group.add(_member("m1", [("range", _subscription("a"))], instance="i-1"))
    group.add(_member("m2", [("range", _subscription("a", "b"))]))
    group.protocol_name = "range"
    record = store.group_metadata_record(group, {"m1": b"\x01", "m2": b"\x02"}, 1700000000999)
    assert record.key == struct.pack(">h", 2) + _string("payments")
    version, value = cr.decode_group_metadata_value(record.value)
    assert version == 3
    assert (value["ProtocolType"], value["Generation"], value["Protocol"], value["Leader"], value["CurrentStateTimestamp"]) == (
        "consumer", 4, "range", "m1", 1700000000123,
    )
    members = {m["MemberId"]: m for m in value["Members"]}
    assert members["m1"]["GroupInstanceId"] == "i-1" and members["m2"]["GroupInstanceId"] is None
    assert members["m2"]["Subscription"] == _subscription("a", "b") and members["m2"]["Assignment"] == b"\x02"
    assert (members["m1"]["ClientId"], members["m1"]["ClientHost"], members["m1"]["RebalanceTimeout"], members["m1"]["SessionTimeout"]) == (
        "client-m1", "/127.0.0.1", 30000, 10000,
    )
    # The first member, byte by byte after the group header (GroupMetadataValue v3 field order).
    header = struct.pack(">h", 3) + _string("consumer") + struct.pack(">i", 4) + _string("range") + _string("m1") + struct.pack(">q", 1700000000123)
    first = _string("m1") + _string("i-1") + _string("client-m1") + _string("/127.0.0.1") + struct.pack(">ii", 30000, 10000)
    first += _bytes(_subscription("a")) + _bytes(b"\x01")
    assert record.value.startswith(header + struct.pack(">i", 2) + first)


def test_empty_group_record_has_null_protocol_and_leader():
    group = ClassicGroup("idle", generation_id=2, protocol_type="consumer", current_state_timestamp=5)
    version, value = cr.decode_group_metadata_value(store.group_metadata_record(group, {}, 5).value)
    assert (value["Protocol"], value["Leader"], value["Members"]) == (None, None, [])


def test_tombstones_have_the_key_and_no_value():
    assert store.offset_tombstone("g", ("t", 1), 7) == NewRecord(cr.encode_offset_commit_key("g", "t", 1), None, 7)
    assert store.group_tombstone("g", 7) == NewRecord(cr.encode_group_metadata_key("g"), None, 7)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4])
def test_records_are_one_magic_2_create_time_batch_without_producer(codec):
    records = [store.offset_commit_record("g", ("t", p), OffsetAndMetadata(p, None, "", 10), 10) for p in range(3)]
    batch = RecordBatch(store.build_records(records, codec))
    batch.validate()
    assert (batch.compression, batch.timestamp_type, batch.producer_id, batch.record_count) == (codec, TimestampType.CREATE_TIME, -1, 3)
    assert [(r.key, r.value) for r in batch.records()] == [(r.key, r.value) for r in records]


def _log(tmp_path, partition: int = 3) -> Log:
    return Log.open(tmp_path / f"__consumer_offsets-{partition}")


def _append(log: Log, records, **batch_args) -> int:
    return log.append(build_batch(records, **batch_args), origin="coordinator").first_offset


def test_replay_keeps_the_last_record_per_key_and_honours_tombstones(tmp_path):
    log = _log(tmp_path)
    group = ClassicGroup("g", state=GroupState.STABLE, generation_id=1, current_state_timestamp=1)
    group.add(_member("m1", [("range", _subscription("t"))]))
    group.protocol_name = "range"
    _append(log, [store.offset_commit_record("g", ("t", 0), OffsetAndMetadata(5, None, "a", 1), 1),
                  store.offset_commit_record("g", ("t", 1), OffsetAndMetadata(6, 2, "b", 1), 1)])
    second = _append(log, [store.offset_commit_record("g", ("t", 0), OffsetAndMetadata(8, None, "c", 2), 2)])
    _append(log, [store.offset_tombstone("g", ("t", 1), 3)])
    _append(log, [store.group_metadata_record(group, {"m1": b"x"}, 3)])
    _append(log, [store.offset_commit_record("gone", ("t", 0), OffsetAndMetadata(1, None, "", 1), 1)])
    _append(log, [store.group_metadata_record(ClassicGroup("gone", generation_id=1, protocol_type="consumer"), {}, 1)])
    _append(log, [store.group_tombstone("gone", 4), store.offset_tombstone("gone", ("t", 0), 4)])

    replayed = store.replay(store.read_batches(log, 64))  # a small buffer: several reads
    assert replayed.offsets == {("g", "t", 0): CommittedOffset(OffsetAndMetadata(8, None, "c", 2), second)}
    assert set(replayed.groups) == {"g"} and replayed.removed_groups == {"gone"}
    loaded = store.group_from_record("g", *replayed.groups["g"])
    assert (loaded.state, loaded.generation_id, loaded.protocol_name, loaded.leader_id) == (GroupState.STABLE, 1, "range", "m1")
    assert loaded.get("m1").assignment == b"x" and loaded.subscribed_topics == {"t"}


def test_replay_applies_transactional_commits_on_commit_markers_only(tmp_path):
    log = _log(tmp_path)
    txn = dict(producer_id=42, producer_epoch=0, base_sequence=0, transactional=True)
    _append(log, [store.offset_commit_record("g", ("t", 0), OffsetAndMetadata(10, None, "", 1), 1)], **txn)
    _append(log, [control_record(ControlType.COMMIT, end_txn_marker_value(0), 2)], producer_id=42, producer_epoch=0, transactional=True, control=True)
    _append(log, [store.offset_commit_record("g", ("t", 1), OffsetAndMetadata(20, None, "", 3), 3)], **txn)
    _append(log, [control_record(ControlType.ABORT, end_txn_marker_value(0), 4)], producer_id=42, producer_epoch=0, transactional=True, control=True)
    _append(log, [store.offset_commit_record("g", ("t", 2), OffsetAndMetadata(30, None, "", 5), 5)], **txn)
    replayed = store.replay(store.read_batches(log, 1 << 20))
    assert {k: v.value.offset for k, v in replayed.offsets.items()} == {("g", "t", 0): 10}
    assert {k: v.value.offset for k, v in replayed.pending[42].items()} == {("g", "t", 2): 30}


def test_replay_skips_undecodable_records_and_keeps_the_rest(tmp_path):
    log = _log(tmp_path)
    _append(log, [NewRecord(b"\x00", b"junk", 1), store.offset_commit_record("g", ("t", 0), OffsetAndMetadata(3, None, "", 1), 1)])
    replayed = store.replay(store.read_batches(log, 1 << 20))
    assert replayed.skipped == 1 and replayed.records == 1
    assert replayed.offsets[("g", "t", 0)].value.offset == 3
