"""``kcli.tools.record_counts``: records counted from batch headers, on batches built by the one
batch writer (``storage.records.build_batch``) as a producer, the cleaner and the transaction
coordinator lay them out."""

from __future__ import annotations

import pytest

from kcli.errors import CorruptRecordError
from kcli.storage import records as rec
from kcli.storage.compression import CompressionType
from kcli.tools.record_counts import RecordCount


def batch(base: int, n: int, *, deltas: list[int] | None = None, pid: int = -1, transactional: bool = False, codec=CompressionType.NONE) -> bytes:
    records = [rec.NewRecord(b"k%d" % i, b"v" * 20, 1000 + i, offset_delta=None if deltas is None else deltas[i]) for i in range(n)]
    return rec.build_batch(records, base_offset=base, producer_id=pid, producer_epoch=0 if pid >= 0 else -1, transactional=transactional, compression=codec)


def marker(offset: int, pid: int, control_type: rec.ControlType) -> bytes:
    record = rec.control_record(control_type, rec.end_txn_marker_value(0), 2000)
    return rec.build_batch([record], base_offset=offset, producer_id=pid, producer_epoch=0, transactional=True, control=True)


def test_records_come_from_the_header_count_of_each_batch_compressed_or_not():
    data = batch(0, 5) + batch(5, 3, codec=CompressionType.GZIP) + batch(8, 7, codec=CompressionType.ZSTD)
    tally = RecordCount()
    assert tally.feed(data) == len(data)
    assert (tally.records, tally.batches, tally.next_offset) == (15, 3, 15)


def test_offset_gaps_left_by_compaction_are_not_records():
    # Offsets 0, 4 and 9 kept of 0..9, then a batch the cleaner emptied but kept for its producer.
    data = batch(0, 3, deltas=[0, 4, 9]) + rec.build_batch([], base_offset=10, last_offset_delta=4) + batch(15, 1)
    tally = RecordCount()
    tally.feed(data)
    assert (tally.records, tally.next_offset) == (4, 16)


def test_committed_aborted_and_open_transactions_and_markers():
    data = (
        batch(0, 2)
        + batch(2, 3, pid=7, transactional=True)
        + batch(5, 4, pid=8, transactional=True)
        + marker(9, 7, rec.ControlType.COMMIT)
        + marker(10, 8, rec.ControlType.ABORT)
        + batch(11, 6, pid=7, transactional=True)
    )
    tally = RecordCount()
    tally.feed(data)
    assert (tally.records, tally.aborted, tally.open, tally.control_batches) == (5, 4, 6, 2)
    assert tally.count(read_committed=True) == 5
    assert tally.count(read_committed=False) == 15


def test_a_batch_across_the_log_start_offset_counts_from_it():
    contiguous = RecordCount(start=3)
    contiguous.feed(batch(0, 5) + batch(5, 2))
    assert contiguous.records == 4  # offsets 3, 4, 5, 6
    compacted = RecordCount(start=3)
    compacted.feed(batch(0, 3, deltas=[0, 2, 6]) + batch(7, 1))
    assert compacted.records == 2  # offsets 6 and 7
    whole_batch_below = RecordCount(start=5)
    whole_batch_below.feed(batch(0, 5) + batch(5, 1))
    assert whole_batch_below.records == 1


def test_a_marker_below_the_start_ends_no_transaction_counted_after_it():
    tally = RecordCount(start=4)
    tally.feed(batch(0, 3, pid=7, transactional=True) + marker(3, 7, rec.ControlType.ABORT) + batch(4, 2, pid=7, transactional=True) + marker(6, 7, rec.ControlType.COMMIT))
    assert (tally.records, tally.aborted, tally.open) == (2, 0, 0)


def test_a_partial_batch_at_the_end_is_left_for_the_next_read():
    first, second = batch(0, 4), batch(4, 4)
    tally = RecordCount()
    assert tally.feed(first + second[:40]) == len(first)
    assert (tally.records, tally.next_offset) == (4, 4)
    assert tally.feed(second) == len(second)
    assert tally.records == 8


def test_legacy_messages_count_one_each_and_a_compressed_wrapper_its_inner_messages():
    import gzip
    import struct
    import zlib

    def message(offset: int, value: bytes, attributes: int = 0) -> bytes:
        body = struct.pack(">bb", 0, attributes) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
        return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body

    inner = message(0, b"a") + message(1, b"b") + message(2, b"c")
    data = message(0, b"x") + message(1, b"y") + message(4, gzip.compress(inner), attributes=1)
    tally = RecordCount()
    assert tally.feed(data) == len(data)
    assert (tally.records, tally.next_offset) == (5, 5)


def test_a_batch_length_below_the_header_is_corrupt():
    data = bytearray(batch(0, 2))
    data[8:12] = (10).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="batchLength of 10"):
        RecordCount().feed(data)


def test_batches_from_the_stop_offset_on_are_left_out():
    tally = RecordCount(start=0, stop=5)
    data = batch(0, 5) + batch(5, 5)
    assert tally.feed(data) == len(batch(0, 5))
    assert (tally.records, tally.next_offset) == (5, 5)
    gap = RecordCount(start=0, stop=5)  # compacted up to past the stop: the count is done
    gap.feed(batch(0, 3) + batch(8, 2))
    assert (gap.records, gap.next_offset) == (3, 5)
