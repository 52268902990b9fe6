"""The producer table (Kafka's ProducerStateManager): sequences, epochs, retries, transactions,
snapshots, and its rebuild after a clean shutdown or a crash."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kcli.errors import ErrorCode
from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.producer_state import (
    ActiveProducer,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStateEntry,
    ProducerStateManager,
    TransactionCoordinatorFencedError,
    read_producer_snapshot,
    snapshot_file_name,
)
from kcli.storage.records import ControlType, NewRecord, build_batch, control_record, end_txn_marker_value

INT32_MAX = 2**31 - 1
NOW = 1_700_000_000_000


class Clock:
    def __init__(self, now: int = NOW) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def produce(pid: int, epoch: int, seq: int, n: int = 2, *, timestamp: int = NOW, transactional: bool = False, **kwargs) -> bytes:
    records = [NewRecord(b"k%d" % i, b"v%d-%d" % (seq, i), timestamp + i) for i in range(n)]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional, **kwargs)


def marker(pid: int, epoch: int, coordinator_epoch: int, control_type: ControlType = ControlType.COMMIT, timestamp: int = NOW) -> bytes:
    return build_batch(
        [control_record(control_type, end_txn_marker_value(coordinator_epoch), timestamp)],
        producer_id=pid, producer_epoch=epoch, transactional=True, control=True,
    )


def open_log(directory: Path, clock: Clock | None = None, **config) -> Log:
    return Log.open(directory, LogConfig(**config), clock=clock or Clock())


@pytest.fixture
def log(tmp_path: Path) -> Log:
    return open_log(tmp_path / "topic-0")


def state(log: Log) -> list[ActiveProducer]:
    return log.active_producers()


def snapshot_view(log: Log):
    """What survives a restart: the table as a snapshot holds it."""
    return log.producer_state.snapshot_entries()


# -- sequences and epochs ------------------------------------------------------------------------------


def test_sequences_must_follow_on_and_a_gap_is_out_of_order(log):
    assert log.append(produce(1, 0, 7)).first_offset == 0  # an unknown producer may start anywhere
    assert log.append(produce(1, 0, 9, n=3)).first_offset == 2
    with pytest.raises(OutOfOrderSequenceError, match=r"13 \(incoming seq. number\), 11 \(current end sequence number\)") as caught:
        log.append(produce(1, 0, 13))
    assert caught.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 5
    assert state(log) == [ActiveProducer(1, 0, 11, NOW + 2, -1, -1)]


def test_a_retry_of_one_of_the_last_five_batches_returns_its_offsets_and_writes_nothing(log):
    infos = [log.append(produce(1, 0, 2 * i)) for i in range(6)]
    size, end = log.size, log.log_end_offset
    for i in (1, 3, 5):
        again = log.append(produce(1, 0, 2 * i))
        assert again.duplicate
        assert (again.first_offset, again.last_offset) == (infos[i].first_offset, infos[i].last_offset)
        assert again.log_append_time == NOW + 1  # Kafka reports the original batch's max timestamp here
    assert (log.size, log.log_end_offset) == (size, end)
    # The sixth batch back is no longer remembered: resending it is out of order.
    with pytest.raises(OutOfOrderSequenceError):
        log.append(produce(1, 0, 0))
    # A retry that overlaps but does not match a batch exactly is not a duplicate either.
    with pytest.raises(OutOfOrderSequenceError):
        log.append(produce(1, 0, 9, n=2))
    assert not infos[0].duplicate


def test_an_older_epoch_is_fenced(log):
    log.append(produce(1, 3, 0))
    with pytest.raises(InvalidProducerEpochError, match="is 2, which is smaller than the last seen epoch 3") as caught:
        log.append(produce(1, 2, 2))
    assert caught.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 2


def test_a_bumped_epoch_must_start_again_at_sequence_0(log):
    log.append(produce(1, 0, 0))
    with pytest.raises(OutOfOrderSequenceError, match="Invalid sequence number for new epoch"):
        log.append(produce(1, 1, 2))
    log.append(produce(1, 1, 0))
    assert state(log)[0][:3] == (1, 1, 1)
    # Retries of the old epoch are neither duplicates nor accepted.
    with pytest.raises(InvalidProducerEpochError):
        log.append(produce(1, 0, 0))


def test_sequences_wrap_after_int_max(log):
    log.append(produce(1, 0, INT32_MAX - 1, n=3))  # sequences MAX-1, MAX, 0
    assert state(log)[0].last_sequence == 0
    log.append(produce(1, 0, 1))
    assert log.append(produce(1, 0, INT32_MAX - 1, n=3)).duplicate
    log.append(produce(1, 0, 3, n=1))
    assert state(log)[0].last_sequence == 3


def test_producers_are_independent(log):
    log.append(produce(1, 0, 0) + produce(2, 5, 100))
    log.append(produce(2, 5, 102))
    assert [(p.producer_id, p.producer_epoch, p.last_sequence) for p in state(log)] == [(1, 0, 1), (2, 5, 103)]


def test_batches_without_producer_ids_leave_the_table_alone(log):
    log.append(build_batch([NewRecord(b"k", b"v", NOW)]))
    assert state(log) == [] and log.producer_state.map_end_offset == 1


def test_replication_takes_what_the_leader_wrote_without_checks(tmp_path):
    follower = open_log(tmp_path / "topic-0")
    follower.append_as_follower(produce(1, 2, 10, base_offset=0) + produce(1, 1, 50, base_offset=2))
    follower.append(produce(1, 2, 0, base_offset=4), origin="replication")
    assert state(follower) == [ActiveProducer(1, 2, 1, NOW + 1, -1, -1)]


def test_the_coordinator_is_fenced_by_epoch_but_not_by_sequence(log):
    log.append(produce(1, 4, 0))
    log.append(produce(1, 4, 99), origin="coordinator")
    with pytest.raises(InvalidProducerEpochError):
        log.append(produce(1, 3, 101), origin="coordinator")


# -- transactions --------------------------------------------------------------------------------------


def test_a_transaction_opens_with_its_first_batch_and_a_marker_closes_it(log):
    log.append(produce(1, 0, 0))
    info = log.append(produce(1, 0, 2, transactional=True))
    log.append(produce(1, 0, 4, transactional=True))
    assert state(log)[0].current_txn_start_offset == info.first_offset == 2
    with pytest.raises(InvalidTxnStateError, match="Expected transactional write from producer 1") as caught:
        log.append(produce(1, 0, 6))
    assert caught.value.error_code == ErrorCode.INVALID_TXN_STATE
    commit = log.append(marker(1, 0, coordinator_epoch=7, timestamp=NOW + 50), origin="coordinator")
    assert state(log) == [ActiveProducer(1, 0, 5, NOW + 50, 7, -1)]
    with pytest.raises(TransactionCoordinatorFencedError, match=r"6 \(zombie\), 7 \(current\)") as fenced:
        log.append(marker(1, 0, coordinator_epoch=6), origin="coordinator")
    assert fenced.value.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == commit.last_offset + 1
    log.append(produce(1, 0, 6))  # after the marker, plain writes are fine again


# -- snapshots -----------------------------------------------------------------------------------------


def test_a_roll_snapshots_the_table_at_the_new_base_offset(log):
    log.append(produce(1, 0, 0, n=3))
    log.roll()
    path = log.dir / snapshot_file_name(3)
    entries = read_producer_snapshot(path)
    assert [(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp) for e in entries] == [(1, 0, 2, 2, 2, NOW + 2)]
    log.append(produce(2, 0, 0))
    log.close()
    assert sorted(p.name for p in log.dir.glob("*.snapshot")) == [snapshot_file_name(3), snapshot_file_name(5)]
    assert [e.producer_id for e in read_producer_snapshot(log.dir / snapshot_file_name(5))] == [1, 2]


def test_snapshots_go_with_the_segments_they_start(tmp_path):
    clock = Clock()
    log = open_log(tmp_path / "topic-0", clock, retention_ms=1000, file_delete_delay_ms=0)
    for seq in (0, 2, 4):
        log.append(produce(1, 0, seq, timestamp=NOW - 10_000 + seq))
        log.roll()
    assert log.producer_state.snapshot_offsets() == [2, 4, 6]
    log.high_watermark = 6
    assert log.delete_old_segments() == 3
    assert log.producer_state.snapshot_offsets() == [6]
    assert sorted(p.name for p in log.dir.glob("*.snapshot*")) == [snapshot_file_name(6)]


def test_truncation_deletes_later_snapshots_and_rewinds_the_table(log):
    log.append(produce(1, 0, 0))
    log.roll()
    log.append(produce(1, 0, 2) + produce(2, 0, 0))
    log.roll()
    log.append(produce(1, 0, 4))
    assert log.producer_state.snapshot_offsets() == [2, 6]
    log.truncate_to(6)  # only the last batch goes; the segment based at 6 stays, and its snapshot
    assert log.producer_state.snapshot_offsets() == [2, 6]
    assert [(e.producer_id, e.last_sequence, e.last_offset) for e in snapshot_view(log)] == [(1, 3, 3), (2, 1, 5)]
    log.truncate_to(2)
    assert log.producer_state.snapshot_offsets() == [2]
    assert not (log.dir / snapshot_file_name(6)).exists()
    assert [(e.producer_id, e.last_sequence) for e in snapshot_view(log)] == [(1, 1)]
    # The producer goes on from where the truncated log leaves it.
    with pytest.raises(OutOfOrderSequenceError):
        log.append(produce(1, 0, 6))
    log.append(produce(1, 0, 2))
    log.truncate_fully_and_start_at(100)
    assert (state(log), log.producer_state.snapshot_offsets()) == ([], [])


def test_a_clean_restart_loads_the_close_snapshot_without_reading_segments(tmp_path, monkeypatch):
    directory = tmp_path / "topic-0"
    log = open_log(directory)
    log.append(produce(1, 0, 0))
    log.roll()
    log.append(produce(1, 0, 2) + produce(2, 3, 10, transactional=True))
    expected = snapshot_view(log)
    log.close()
    from kcli.storage import log_loader

    monkeypatch.setattr(log_loader, "_replay_segment", lambda *args: pytest.fail("a segment was read"))
    again = Log.open(directory, LogConfig(), had_clean_shutdown=True, clock=Clock())
    assert snapshot_view(again) == expected
    assert state(again)[1].current_txn_start_offset == 4
    assert again.append(produce(1, 0, 2)).duplicate  # the last batch is remembered across the restart
    again.append(produce(1, 0, 4))


def test_a_clean_shutdown_without_producers_writes_no_snapshot(tmp_path):
    log = open_log(tmp_path / "topic-0")
    log.append(build_batch([NewRecord(b"k", b"v", NOW)]))
    log.close()
    Log.open(log.dir, LogConfig(), had_clean_shutdown=True).close()
    assert not list(log.dir.glob("*.snapshot"))


def crash_copy(log: Log, destination: Path) -> Path:
    """The log's directory as a crash would leave it: files as they are, nothing closed or snapshotted."""
    shutil.copytree(log.dir, destination)
    return destination


def test_after_a_crash_the_table_is_rebuilt_from_the_last_snapshot_and_the_log(tmp_path):
    log = open_log(tmp_path / "topic-0", segment_bytes=400)
    for i in range(12):
        data = produce(i % 3, 0, 2 * (i // 3), transactional=(i in (4, 10)))
        log.append(data)
        if i == 4:
            log.append(marker(1, 0, coordinator_epoch=4, control_type=ControlType.ABORT, timestamp=NOW + 99), origin="coordinator")
    assert len(log.segments) > 2
    expected = snapshot_view(log)
    assert [(e.producer_id, e.coordinator_epoch, e.current_txn_first_offset >= 0) for e in expected] == [(0, -1, False), (1, 4, True), (2, -1, False)]
    directory = crash_copy(log, tmp_path / "crash" / "topic-0")
    recovered = Log.open(directory, LogConfig(segment_bytes=400), had_clean_shutdown=False, clock=Clock())
    assert recovered.log_end_offset == log.log_end_offset
    assert snapshot_view(recovered) == expected


def test_a_crash_that_lost_the_tail_gives_the_state_of_the_batches_that_survived(tmp_path):
    log = open_log(tmp_path / "topic-0", segment_bytes=400)  # four batches a segment
    for i in range(10):
        log.append(produce(i % 2, 0, 2 * (i // 2)))
    assert [s.base_offset for s in log.segments] == [0, 8, 16]
    # The state the log had before its last batch: from a second log given the same batches but the last.
    reference = open_log(tmp_path / "ref" / "topic-0", segment_bytes=400)
    for i in range(9):
        reference.append(produce(i % 2, 0, 2 * (i // 2)))
    directory = crash_copy(log, tmp_path / "crash" / "topic-0")
    active = directory / f"{log.segments[-1].base_offset:020d}.log"
    with open(active, "r+b") as f:
        f.truncate(active.stat().st_size - 5)  # half of the last batch never reached the disk
    recovered = Log.open(directory, LogConfig(segment_bytes=400), had_clean_shutdown=False, clock=Clock())
    assert recovered.log_end_offset == reference.log_end_offset
    assert snapshot_view(recovered) == snapshot_view(reference)
    # The producer of the lost batch may send it again, with the same sequence.
    assert not recovered.append(produce(1, 0, 8)).duplicate


def test_a_corrupt_snapshot_is_skipped_for_an_older_one(tmp_path):
    log = open_log(tmp_path / "topic-0")
    log.append(produce(1, 0, 0))
    log.roll()
    log.append(produce(1, 0, 2))
    log.roll()
    log.append(produce(1, 0, 4))
    expected = snapshot_view(log)
    directory = crash_copy(log, tmp_path / "crash" / "topic-0")
    (directory / snapshot_file_name(4)).write_bytes(b"\x00\x01garbage")
    recovered = Log.open(directory, LogConfig(), had_clean_shutdown=False, clock=Clock())
    assert snapshot_view(recovered) == expected
    # Rebuilt from the snapshot at 2; the segment snapshots on the way and the one at the end are written anew.
    assert recovered.producer_state.snapshot_offsets() == [2, 4, 6]
    assert [e.last_sequence for e in read_producer_snapshot(directory / snapshot_file_name(4))] == [3]


def test_stray_snapshots_are_removed_at_load_but_the_newest_above_every_segment_is_kept(tmp_path):
    log = open_log(tmp_path / "topic-0")
    log.append(produce(1, 0, 0))
    log.roll()
    log.append(produce(1, 0, 2))
    log.close()
    for offset in (1, 3):
        shutil.copy(log.dir / snapshot_file_name(4), log.dir / snapshot_file_name(offset))
    again = Log.open(log.dir, LogConfig(), had_clean_shutdown=True)
    assert again.producer_state.snapshot_offsets() == [2, 4]


# -- expiration and the manager itself -----------------------------------------------------------------


def test_idle_producers_expire_unless_a_transaction_is_open(tmp_path):
    clock = Clock()
    log = Log.open(tmp_path / "topic-0", LogConfig(), clock=clock, producer_id_expiration_ms=60_000)
    log.append(produce(1, 0, 0, timestamp=NOW))
    log.append(produce(2, 0, 0, timestamp=NOW, transactional=True))
    log.append(produce(3, 0, 0, timestamp=NOW + 30_000))
    assert log.remove_expired_producers(NOW + 59_999) == 0
    assert log.remove_expired_producers(NOW + 60_001) == 1
    assert [p.producer_id for p in state(log)] == [2, 3]
    log.close()
    clock.now = NOW + 95_000
    again = Log.open(log.dir, LogConfig(), had_clean_shutdown=True, clock=clock, producer_id_expiration_ms=60_000)
    assert [p.producer_id for p in state(again)] == [2]  # expired ones are not loaded


def test_an_entry_keeps_the_last_five_batches_of_its_epoch():
    entry = ProducerStateEntry(7)
    for i in range(7):
        entry.add_batch(0, 2 * i + 1, 10 * i + 1, 1, NOW + i)
    assert [b.first_seq for b in entry.batches] == [4, 6, 8, 10, 12]
    assert entry.find_duplicate(0, 4, 5) is not None and entry.find_duplicate(0, 2, 3) is None
    assert entry.find_duplicate(1, 4, 5) is None
    entry.add_batch(1, 0, 100, 0, NOW)
    assert [b.last_seq for b in entry.batches] == [0]


def test_a_snapshot_entry_round_trips_through_the_table(tmp_path):
    manager = ProducerStateManager(tmp_path / "topic-0")
    (tmp_path / "topic-0").mkdir()
    entry = ProducerStateEntry(5, 2, 9, NOW, 40)
    entry.add_batch(2, 20, 44, 3, NOW + 1)
    manager.load_entries([entry.to_snapshot_entry()])
    manager.update_map_end_offset(45)
    path = manager.take_snapshot()
    assert path == tmp_path / "topic-0" / snapshot_file_name(45)
    assert read_producer_snapshot(path) == [entry.to_snapshot_entry()]
    assert manager.take_snapshot() is None  # nothing new since
    assert manager.active_producers() == [ActiveProducer(5, 2, 20, NOW + 1, 9, 40)]


def test_a_log_manager_shutdown_and_restart_keeps_every_partitions_producers(tmp_path):
    from kcli.storage.log_manager import LogManager

    manager = LogManager([tmp_path / "d1"], clock=Clock())
    for partition in (0, 1):
        partition_log = manager.get_or_create_log("orders", partition)
        partition_log.append(produce(10 + partition, 1, 0))
        partition_log.append(produce(10 + partition, 1, 2, transactional=True))
    expected = {p: snapshot_view(manager.get_log("orders", p)) for p in (0, 1)}
    manager.shutdown()
    restarted = LogManager([tmp_path / "d1"], clock=Clock())
    assert {p: snapshot_view(restarted.get_log("orders", p)) for p in (0, 1)} == expected
    assert restarted.get_log("orders", 1).append(produce(11, 1, 2, transactional=True)).duplicate
    restarted.shutdown()
