"""The coordinator's ``__consumer_offsets`` records: Kafka 3.9's layouts, batches, and replay."""

from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace

import pytest

from kcli.broker.handlers._completion import Completion
from kcli.broker.replica.delayed_fetch import FetchParams
from kcli.broker.replica.fetch_sessions import CachedPartition
from kcli.broker.groups import group_metadata_manager
from kcli.broker.groups.group import ClassicGroup, GroupState
from kcli.broker.groups.member import ClassicGroupMember
from kcli.broker.groups.offsets import CommittedOffset, OffsetAndMetadata
from kcli.broker.replica.replica_manager import ReplicaManager
from kcli.errors import ErrorCode
from kcli.metadata.topics import PartitionState
from kcli.protocol import coordinator_records as cr
from kcli.storage.compression import CompressionType
from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.records import ControlType, NewRecord, RecordBatch, TimestampType, build_batch, control_record, end_txn_marker_value, iter_batches


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def test_offset_commit_record_has_kafka_39_layout():
    record = group_metadata_manager.offset_commit_record("grp", ("orders", 7), OffsetAndMetadata(1234, 5, "meta", 1700000000000), 1700000000001)
    # OffsetCommitKey v1: version, group, topic, partition.
    assert record.key == struct.pack(">h", 1) + _string("grp") + _string("orders") + struct.pack(">i", 7)
    # OffsetCommitValue v3: version, offset, leaderEpoch, metadata, commitTimestamp.
    assert record.value == struct.pack(">hqi", 3, 1234, 5) + _string("meta") + struct.pack(">q", 1700000000000)
    assert record.timestamp == 1700000000001


def test_offset_commit_with_expire_time_is_value_v1_and_no_epoch_is_minus_one():
    record = group_metadata_manager.offset_commit_record("g", ("t", 0), OffsetAndMetadata(9, None, "", 100, expire_timestamp=500), 100)
    # OffsetCommitValue v1: version, offset, metadata, commitTimestamp, expireTimestamp.
    assert record.value == struct.pack(">hq", 1, 9) + _string("") + struct.pack(">qq", 100, 500)
    v3 = group_metadata_manager.offset_commit_record("g", ("t", 0), OffsetAndMetadata(9, None, "", 100), 100)
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
    record = group_metadata_manager.group_metadata_record(group, {"m1": b"\x01", "m2": b"\x02"}, 1700000000999)
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
    version, value = cr.decode_group_metadata_value(group_metadata_manager.group_metadata_record(group, {}, 5).value)
    assert (value["Protocol"], value["Leader"], value["Members"]) == (None, None, [])


def test_tombstones_have_the_key_and_no_value():
    assert group_metadata_manager.offset_tombstone("g", ("t", 1), 7) == NewRecord(cr.encode_offset_commit_key("g", "t", 1), None, 7)
    assert group_metadata_manager.group_tombstone("g", 7) == NewRecord(cr.encode_group_metadata_key("g"), None, 7)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4])
def test_records_are_one_magic_2_create_time_batch_without_producer(codec):
    records = [group_metadata_manager.offset_commit_record("g", ("t", p), OffsetAndMetadata(p, None, "", 10), 10) for p in range(3)]
    batch = RecordBatch(group_metadata_manager.build_records(records, codec))
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
    _append(log, [group_metadata_manager.offset_commit_record("g", ("t", 0), OffsetAndMetadata(5, None, "a", 1), 1),
                  group_metadata_manager.offset_commit_record("g", ("t", 1), OffsetAndMetadata(6, 2, "b", 1), 1)])
    second = _append(log, [group_metadata_manager.offset_commit_record("g", ("t", 0), OffsetAndMetadata(8, None, "c", 2), 2)])
    _append(log, [group_metadata_manager.offset_tombstone("g", ("t", 1), 3)])
    _append(log, [group_metadata_manager.group_metadata_record(group, {"m1": b"x"}, 3)])
    _append(log, [group_metadata_manager.offset_commit_record("gone", ("t", 0), OffsetAndMetadata(1, None, "", 1), 1)])
    _append(log, [group_metadata_manager.group_metadata_record(ClassicGroup("gone", generation_id=1, protocol_type="consumer"), {}, 1)])
    _append(log, [group_metadata_manager.group_tombstone("gone", 4), group_metadata_manager.offset_tombstone("gone", ("t", 0), 4)])

    replayed = group_metadata_manager.replay(group_metadata_manager.read_batches(log, 64))  # a small buffer: several reads
    assert replayed.offsets == {("g", "t", 0): CommittedOffset(OffsetAndMetadata(8, None, "c", 2), second)}
    assert set(replayed.groups) == {"g"} and replayed.removed_groups == {"gone"}
    loaded = group_metadata_manager.group_from_record("g", *replayed.groups["g"])
    assert (loaded.state, loaded.generation_id, loaded.protocol_name, loaded.leader_id) == (GroupState.STABLE, 1, "range", "m1")
    assert loaded.get("m1").assignment == b"x" and loaded.subscribed_topics == {"t"}


def test_replay_applies_transactional_commits_on_commit_markers_only(tmp_path):
    log = _log(tmp_path)
    txn = dict(producer_id=42, producer_epoch=0, base_sequence=0, transactional=True)
    _append(log, [group_metadata_manager.offset_commit_record("g", ("t", 0), OffsetAndMetadata(10, None, "", 1), 1)], **txn)
    _append(log, [control_record(ControlType.COMMIT, end_txn_marker_value(0), 2)], producer_id=42, producer_epoch=0, transactional=True, control=True)
    _append(log, [group_metadata_manager.offset_commit_record("g", ("t", 1), OffsetAndMetadata(20, None, "", 3), 3)], **txn)
    _append(log, [control_record(ControlType.ABORT, end_txn_marker_value(0), 4)], producer_id=42, producer_epoch=0, transactional=True, control=True)
    _append(log, [group_metadata_manager.offset_commit_record("g", ("t", 2), OffsetAndMetadata(30, None, "", 5), 5)], **txn)
    replayed = group_metadata_manager.replay(group_metadata_manager.read_batches(log, 1 << 20))
    assert {k: v.value.offset for k, v in replayed.offsets.items()} == {("g", "t", 0): 10}
    assert {k: v.value.offset for k, v in replayed.pending[42].items()} == {("g", "t", 2): 30}


def test_replay_skips_undecodable_records_and_keeps_the_rest(tmp_path):
    log = _log(tmp_path)
    _append(log, [NewRecord(b"\x00", b"junk", 1), group_metadata_manager.offset_commit_record("g", ("t", 0), OffsetAndMetadata(3, None, "", 1), 1)])
    replayed = group_metadata_manager.replay(group_metadata_manager.read_batches(log, 1 << 20))
    assert replayed.skipped == 1 and replayed.records == 1
    assert replayed.offsets[("g", "t", 0)].value.offset == 3


# -- the offset commit batch and the writer -------------------------------------------------------

COMMITS = {
    ("orders", 0): OffsetAndMetadata(1234, 5, "", 1700000000000),
    ("orders", 1): OffsetAndMetadata(0, None, "meta", 1700000000001),
    ("payments-" + "x" * 60, 70000): OffsetAndMetadata(2**40, 0, "naïve ✓ 𝄞", 1700000000002),
    ("expiring", 3): OffsetAndMetadata(7, None, "", 1700000000003, expire_timestamp=1700000900000),
    ("long", 4): OffsetAndMetadata(9, 2, "m" * 3000, 1700000000004),
}


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD])
def test_the_offset_commit_batch_is_the_batch_of_its_records(codec):
    for count in (1, 2, len(COMMITS)):
        offsets = dict(list(COMMITS.items())[:count])
        expected = build_batch([group_metadata_manager.offset_commit_record("grp", tp, value, 1700000000009) for tp, value in offsets.items()], compression=codec)
        assert bytes(group_metadata_manager.offset_commit_batch("grp", offsets, 1700000000009, codec)) == expected
    records = RecordBatch(group_metadata_manager.offset_commit_batch("grp", COMMITS, 1700000000009, codec)).records()
    assert [cr.decode_offset_commit_value(r.value)[0] for r in records] == [3, 3, 3, 1, 3]


def test_group_records_and_tombstones_are_built_batches_with_build_batch_bytes():
    group = ClassicGroup("payments", state=GroupState.STABLE, current_state_timestamp=5, generation_id=4)
    group.add(_member("m1", [("range", _subscription("a"))]))
    group.protocol_name = "range"
    records = [group_metadata_manager.group_metadata_record(group, {"m1": b"\x01"}, 5), group_metadata_manager.offset_tombstone("payments", ("a", 0), 5), group_metadata_manager.group_tombstone("payments", 5)]
    built = group_metadata_manager.build_records(records, CompressionType.LZ4)
    assert bytes(built) == build_batch(records, compression=CompressionType.LZ4)
    assert (built.record_count, built.null_keys, built.timestamp) == (3, False, 5)
    with pytest.raises(ValueError, match="share a timestamp"):
        group_metadata_manager.build_records([*records, group_metadata_manager.group_tombstone("payments", 6)], CompressionType.NONE)


class _Metadata:
    """The broker's cache as the replica manager asks it: which partitions the offsets topic has."""

    def topic(self, name):
        return SimpleNamespace(partitions=range(50)) if name == "__consumer_offsets" else None


def _replicas(tmp_path, partition=3, **config) -> ReplicaManager:
    """A replica manager leading one ``__consumer_offsets`` partition at leader epoch 6."""
    manager = LogManager([tmp_path / "logs"], LogConfig(cleanup_policy=("compact",), **config))
    replicas = ReplicaManager(1, manager, _Metadata())
    replicas.become_leader("__consumer_offsets", partition, None, PartitionState(replicas=(1,), isr=(1,), leader=1, leader_epoch=6, partition_epoch=0))
    return replicas


def test_the_writer_appends_commits_without_validating_and_moves_the_high_watermark(tmp_path, monkeypatch):
    from kcli.storage import log as log_module

    monkeypatch.setattr(log_module, "validate_and_assign_offsets", lambda *a, **k: pytest.fail("a coordinator batch was validated again"))
    replicas = _replicas(tmp_path)
    hosted = replicas.get("__consumer_offsets", 3)
    writer = group_metadata_manager.GroupMetadataManager(replicas, CompressionType.GZIP)
    first, second, tombstone = Completion(), Completion(), Completion()
    writer.append_offset_commits(3, "grp", COMMITS, 1700000000009, first)
    writer.append_offset_commits(3, "grp", {("orders", 0): OffsetAndMetadata(1300, 5, "", 1700000000010)}, 1700000000010, second)
    writer.append(3, [group_metadata_manager.offset_tombstone("grp", ("orders", 1), 1700000000011)], tombstone)
    # The partition's ISR is its leader alone: each append is answered within its call.
    assert [(c.result().error_code, c.result().base_offset) for c in (first, second, tombstone)] == [(0, 0), (0, 5), (0, 6)]
    assert hosted.log.log_end_offset == hosted.high_watermark == 7
    stored = list(iter_batches(b"".join(s.log.path.read_bytes() for s in hosted.log.segments)))
    expected = bytearray(build_batch([group_metadata_manager.offset_commit_record("grp", tp, v, 1700000000009) for tp, v in COMMITS.items()], compression=CompressionType.GZIP))
    expected[12:16] = struct.pack(">i", 6)  # the partition leader epoch, outside the CRC
    assert bytes(stored[0].buffer[: stored[0].size_in_bytes]) == bytes(expected)
    assert [(b.base_offset, b.partition_leader_epoch, b.compression) for b in stored] == [(0, 6, CompressionType.GZIP), (5, 6, CompressionType.GZIP), (6, 6, CompressionType.GZIP)]
    for batch in stored:
        batch.validate()
    replayed = group_metadata_manager.replay(group_metadata_manager.read_batches(hosted.log, 1 << 20))
    assert replayed.offsets[("grp", "orders", 0)] == CommittedOffset(OffsetAndMetadata(1300, 5, "", 1700000000010), 5)
    assert ("grp", "orders", 1) not in replayed.offsets
    assert replayed.offsets[("grp", "expiring", 3)].value == COMMITS[("expiring", 3)]
    assert replayed.offsets[("grp", "payments-" + "x" * 60, 70000)].value.metadata == "naïve ✓ 𝄞"
    assert replayed.records == 7 and replayed.skipped == 0


def test_a_write_answers_a_fetch_waiting_on_the_offsets_partition(tmp_path):
    replicas = _replicas(tmp_path)
    writer = group_metadata_manager.GroupMetadataManager(replicas, CompressionType.NONE)

    async def scenario():
        answered = asyncio.get_running_loop().create_future()
        params = FetchParams(replica_id=-1, max_wait_ms=60_000, min_bytes=1, max_bytes=1 << 20)
        replicas.fetch_messages(params, {("__consumer_offsets", 3): CachedPartition(None, 0, 1 << 20, -1)}, answered.set_result)
        assert not answered.done() and replicas.fetch_purgatory.watched() == 1
        writer.append_offset_commits(3, "grp", COMMITS, 1700000000009, lambda response: None)
        return answered.done(), await answered

    done_by_the_write, reads = asyncio.run(scenario())
    assert done_by_the_write
    [(key, _, result)] = reads
    assert key == ("__consumer_offsets", 3) and result.error_code == 0 and result.high_watermark == len(COMMITS)
    assert result.records_size > 0 and replicas.fetch_purgatory.watched() == 0


def test_the_writer_answers_the_partitions_errors(tmp_path):
    replicas = _replicas(tmp_path, min_insync_replicas=2)
    hosted = replicas.get("__consumer_offsets", 3)
    writer = group_metadata_manager.GroupMetadataManager(replicas, CompressionType.NONE)
    isr, elsewhere, too_large = Completion(), Completion(), Completion()
    writer.append_offset_commits(3, "grp", COMMITS, 1, isr)
    assert group_metadata_manager.append_error(isr.result().error_code, offsets=True) is ErrorCode.COORDINATOR_NOT_AVAILABLE
    writer.append_offset_commits(4, "grp", COMMITS, 1, elsewhere)
    assert group_metadata_manager.append_error(elsewhere.result().error_code, offsets=True) is ErrorCode.NOT_COORDINATOR
    small_replicas = _replicas(tmp_path / "small", max_message_bytes=200)
    small = small_replicas.get("__consumer_offsets", 3)
    group_metadata_manager.GroupMetadataManager(small_replicas, CompressionType.NONE).append_offset_commits(3, "grp", COMMITS, 1, too_large)
    assert group_metadata_manager.append_error(too_large.result().error_code, offsets=True) is ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    assert hosted.log.log_end_offset == small.log.log_end_offset == 0


def test_written_commits_print_with_the_offsets_decoder(tmp_path, kcli_run):
    replicas = _replicas(tmp_path)
    hosted = replicas.get("__consumer_offsets", 3)
    writer = group_metadata_manager.GroupMetadataManager(replicas, CompressionType.NONE)
    writer.append_offset_commits(3, "grp", {("orders", 0): OffsetAndMetadata(1234, 5, "m", 1700000000000)}, 1700000000009, lambda response: None)
    hosted.log.flush()
    code, out, err = kcli_run("dump-log-segments", "--offsets-decoder", "--files", str(hosted.log.segments[0].log.path))
    assert code == 0 and err == []
    assert out[-1] == (
        '| offset: 0 CreateTime: 1700000000009 keySize: 19 valueSize: 25 sequence: -1 headerKeys: [] '
        'key: {"type":"1","data":{"group":"grp","topic":"orders","partition":0}} '
        'payload: {"version":"3","data":{"offset":1234,"leaderEpoch":5,"metadata":"m","commitTimestamp":1700000000000}}'
    )
