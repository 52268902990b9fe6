"""The transaction coordinator's pieces without a broker: Kafka's state machine, the
``__transaction_state`` records (read back with the dump tool's decoder), their replay, and
what a marker leaves in a log (the last stable offset and the ``.txnindex`` entry)."""

from __future__ import annotations

import pytest

from kcli.broker.transactions import transaction_state_manager
from kcli.broker.transactions.markers import marker_batch
from kcli.broker.transactions.metadata import IllegalTransitionError, TransactionMetadata, TransactionState
from kcli.protocol.coordinator_records import format_transaction_log_record
from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import NewRecord, build_batch, iter_batches
from kcli.storage.transaction_index import AbortedTxn, read_aborted_txns

S = TransactionState


def ongoing(**changes) -> TransactionMetadata:
    base = TransactionMetadata("app-1", 7, producer_epoch=2, state=S.ONGOING, partitions=frozenset({("t", 0), ("t", 1)}),
                               txn_start_timestamp=1000, txn_last_update_timestamp=1500)
    return TransactionMetadata(**{**base.__dict__, **changes})


def test_transitions_outside_kafkas_table_are_refused():
    empty = TransactionMetadata("app-1", 7, producer_epoch=0)
    with pytest.raises(IllegalTransitionError):
        empty.prepare_abort_or_commit(S.PREPARE_COMMIT, 2000)
    with pytest.raises(IllegalTransitionError):
        ongoing().prepare_complete(2000)
    prepared = ongoing().prepare_abort_or_commit(S.PREPARE_COMMIT, 2000)
    done = prepared.prepare_complete(3000)
    assert (done.state, done.partitions, done.txn_last_update_timestamp) == (S.COMPLETE_COMMIT, frozenset(), 3000)


def test_epoch_bumps_as_kafka_prepares_them():
    current = TransactionMetadata("app-1", 7, producer_epoch=4, last_producer_epoch=3, state=S.COMPLETE_COMMIT)
    assert (current.prepare_increment_producer_epoch(100, None, 1).producer_epoch, current.prepare_increment_producer_epoch(100, None, 1).last_producer_epoch) == (5, -1)
    bumped = current.prepare_increment_producer_epoch(100, 4, 1)
    assert (bumped.producer_epoch, bumped.last_producer_epoch, bumped.state) == (5, 4, S.EMPTY)
    retry = current.prepare_increment_producer_epoch(100, 3, 1)  # the response to the last bump was lost
    assert (retry.producer_epoch, retry.last_producer_epoch) == (4, 3)
    assert current.prepare_increment_producer_epoch(100, 1, 1) is None  # fenced
    fence = ongoing().prepare_fence_producer_epoch()
    assert (fence.state, fence.producer_epoch) == (S.PREPARE_EPOCH_FENCE, 3)
    assert fence.prepare_abort_or_commit(S.PREPARE_ABORT, 2).state == S.PREPARE_ABORT


def test_records_read_back_as_kafkas_transaction_log_decoder_prints_them():
    key, value = transaction_state_manager.transaction_record(ongoing(partitions=frozenset({("t", 1), ("u", 0)})))
    text_key, payload = format_transaction_log_record(key, value, 0)
    assert text_key == "transaction_metadata::transactionalId=app-1"
    listed = payload.split("partitions=[")[1].split("]")[0]
    assert sorted(listed.split(",")) == ["t-1", "u-0"]
    assert payload.replace(listed, "") == "producerId:7,producerEpoch:2,state=Ongoing,partitions=[],txnLastUpdateTimestamp=1500,txnTimeoutMs=60000"
    empty = TransactionMetadata("app-1", 7, producer_epoch=0, txn_last_update_timestamp=5)
    key, value = transaction_state_manager.transaction_record(empty)
    assert format_transaction_log_record(key, value, 0)[1] == "producerId:7,producerEpoch:0,state=Empty,partitions=[],txnLastUpdateTimestamp=5,txnTimeoutMs=60000"


def test_replay_keeps_each_ids_last_record_and_forgets_tombstoned_ones():
    batches = b"".join([
        bytes(transaction_state_manager.transaction_batch(ongoing(), 10)),
        bytes(transaction_state_manager.transaction_batch(ongoing().prepare_abort_or_commit(S.PREPARE_COMMIT, 20), 20)),
        bytes(transaction_state_manager.transaction_batch(TransactionMetadata("gone", 8, producer_epoch=0), 30)),
        bytes(transaction_state_manager.tombstone_batch("gone", 40)),
    ])
    loaded = transaction_state_manager.replay(iter_batches(batches), "__transaction_state-0")
    assert list(loaded) == ["app-1"]
    state = loaded["app-1"]
    assert (state.state, state.producer_id, state.producer_epoch, state.partitions, state.txn_start_timestamp) == (
        S.PREPARE_COMMIT, 7, 2, frozenset({("t", 0), ("t", 1)}), 1000)


def _txn_data(producer_id: int, sequence: int, now: int) -> bytes:
    return build_batch([NewRecord(None, b"v", now)], producer_id=producer_id, producer_epoch=0, base_sequence=sequence, transactional=True)


def test_an_abort_indexes_its_transaction_with_the_stable_offset_another_one_holds(tmp_path):
    now = 1_800_000_000_000
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=lambda: now)
    log.append(_txn_data(1, 0, now))  # producer 1's transaction from offset 0
    log.append(_txn_data(2, 0, now))  # producer 2's from offset 1
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 0
    log.append(marker_batch(1, 0, 0, False, now), origin=AppendOrigin.COORDINATOR)  # ABORT at 2
    log.update_high_watermark(log.log_end_offset)
    # Producer 2's open transaction still holds the stable offset at 1.
    assert log.last_stable_offset == 1
    entries = read_aborted_txns(log.segments[-1].txn_index_path)
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries] == [(1, 0, 2, 1)]
    log.append(marker_batch(2, 0, 0, True, now), origin=AppendOrigin.COORDINATOR)  # COMMIT at 3: not indexed
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 4
    assert len(read_aborted_txns(log.segments[-1].txn_index_path)) == 1
    assert [(t.producer_id, t.first_offset) for t in log.collect_aborted_transactions(0, 4)] == [(1, 0)]
    log.close()


def test_truncation_drops_the_index_entries_of_markers_it_removes(tmp_path):
    now = 1_800_000_000_000
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=lambda: now)
    for producer_id in (1, 2):
        log.append(_txn_data(producer_id, 0, now))
        log.append(marker_batch(producer_id, 0, 0, False, now), origin=AppendOrigin.COORDINATOR)
    # Producer 1's transaction is [0, 1], producer 2's [2, 3].
    path = log.segments[-1].txn_index_path
    assert [e.producer_id for e in read_aborted_txns(path)] == [1, 2]
    log.truncate_to(3)  # producer 2's marker is gone: its transaction is open again, not aborted
    assert [e.producer_id for e in read_aborted_txns(path)] == [1]
    assert [t.producer_id for t in log.collect_aborted_transactions(0, 3)] == [1]
    log.close()


def test_an_abort_whose_txn_index_entry_the_disk_refuses_takes_the_log_dir_offline(tmp_path, monkeypatch):
    # The marker is in the log before its .txnindex entry is written: without the entry a
    # read_committed reader would see the aborted record, and the append cannot be undone as
    # "refused", so the dir goes offline (Kafka's LogDirFailureChannel) rather than answer a
    # storage error for a marker that is in fact stored.
    import errno

    from kcli.errors import KafkaStorageError
    from kcli.storage import log as log_module

    now = 1_800_000_000_000
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=lambda: now)
    log.append(_txn_data(1, 0, now))

    def full_disk(path, entry):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(log_module, "append_aborted_txn", full_disk)
    with pytest.raises(KafkaStorageError):
        log.append(marker_batch(1, 0, 0, False, now), origin=AppendOrigin.COORDINATOR)
    assert log.failure_channel.is_offline(log.dir.parent)
    with pytest.raises(KafkaStorageError):
        log.append(_txn_data(2, 0, now))
    log.close()


def _crash(log: Log) -> None:
    """Drop the log as a process kill would: release file handles, write nothing more."""
    for segment in log.segments:
        segment.close_handlers()


def test_recovery_rebuilds_the_txn_index_a_crash_lost_and_drops_entries_past_the_end(tmp_path):
    now = 1_800_000_000_000
    directory = tmp_path / "t-0"
    log = Log.open(directory, LogConfig(segment_bytes=1024), clock=lambda: now)
    log.append(_txn_data(1, 0, now))                                                  # 0: producer 1 opens
    log.append(_txn_data(2, 0, now))                                                  # 1: producer 2 opens
    log.append(marker_batch(1, 0, 0, False, now), origin=AppendOrigin.COORDINATOR)   # 2: ABORT 1 (2 still open)
    log.roll()
    log.append(marker_batch(2, 0, 0, False, now), origin=AppendOrigin.COORDINATOR)   # 3: ABORT 2
    log.append(_txn_data(1, 1, now))                                                  # 4: producer 1 again
    log.append(marker_batch(1, 0, 0, False, now), origin=AppendOrigin.COORDINATOR)   # 5: ABORT 1
    expected = {0: [(1, 0, 2, 1)], 3: [(2, 1, 3, 4), (1, 4, 5, 6)]}

    def index() -> dict[int, list[tuple[int, int, int, int]]]:
        return {
            s.base_offset: [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in read_aborted_txns(s.txn_index_path)]
            for s in log.segments if s.txn_index_path.exists()
        }

    assert index() == expected
    # The crash lost the last entry, and a stale one for an offset past the end was left behind.
    last = log.segments[-1].txn_index_path
    last.write_bytes(AbortedTxn(9, 7, 8, 9).encode())
    _crash(log)
    # Recovery replays the last segment only: producer 2's transaction, open where it begins,
    # comes from the producer snapshot at its base.
    log = Log.open(directory, LogConfig(segment_bytes=1024), had_clean_shutdown=False, recovery_point=4, clock=lambda: now)
    assert index() == expected
    log.close()


def test_an_aborted_transaction_is_found_from_a_segment_before_its_marker(tmp_path):
    now = 1_800_000_000_000
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=lambda: now)
    log.append(_txn_data(1, 0, now))                                                 # 0
    log.roll()
    log.append(_txn_data(1, 1, now))                                                 # 1
    log.append(marker_batch(1, 0, 0, False, now), origin=AppendOrigin.COORDINATOR)  # 2: ABORT, in segment 1
    # Cleaning segment 0 alone asks about [0, 1): the entry in segment 1's index covers it.
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.collect_aborted_transactions(0, 1)] == [(1, 0, 2)]
    log.close()
