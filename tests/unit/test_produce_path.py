"""A produced batch goes from the request's bytes to the log file as one view: its header read
once, its records checked and patched where they arrived, never copied on the way."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import pytest
from crc32c import crc32c

from kcli.errors import InvalidRecordError
from kcli.storage import records as records_module
from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.records import NewRecord, RecordBatch, build_batch, iter_batches, single_batch_header

PRODUCER_ID = 4242


def _request_with(batch: bytes) -> tuple[bytearray, memoryview]:
    """A request buffer holding ``batch`` after some other bytes, and the view of the batch in it."""
    frame = bytearray(b"\x00" * 37 + batch + b"\x00" * 5)
    return frame, memoryview(frame)[37 : 37 + len(batch)]


def _idempotent_batch(count: int, value_size: int, base_sequence: int = 0) -> bytes:
    return build_batch(
        [NewRecord(b"key", bytes(value_size), 1_000) for _ in range(count)],
        producer_id=PRODUCER_ID, producer_epoch=0, base_sequence=base_sequence,
    )


class _CountingStruct:
    def __init__(self, real: struct.Struct) -> None:
        self.real = real
        self.size = real.size
        self.reads = 0

    def unpack_from(self, *args):
        self.reads += 1
        return self.real.unpack_from(*args)


def test_the_header_is_read_once_from_the_handler_to_the_producer_state(tmp_path: Path, monkeypatch):
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=lambda: 2_000)
    log.append(_idempotent_batch(3, 10))  # offsets 0-2, sequences 0-2
    frame, view = _request_with(_idempotent_batch(5, 10, base_sequence=3))
    header = _CountingStruct(records_module._HEADER)
    peek = _CountingStruct(records_module._SIZE)
    monkeypatch.setattr(records_module, "_HEADER", header)
    monkeypatch.setattr(records_module, "_SIZE", peek)

    batch = single_batch_header(view)
    info = log.append(batch, leader_epoch=7)

    assert (header.reads, peek.reads) == (1, 0)
    assert (info.first_offset, info.last_offset) == (3, 7)
    # The header object followed the patches it made in the request's own bytes.
    assert (batch.base_offset, batch.partition_leader_epoch) == (3, 7)
    monkeypatch.undo()
    in_frame = RecordBatch(frame, 37)
    assert (in_frame.base_offset, in_frame.partition_leader_epoch) == (3, 7)
    assert log.producer_state.last_entry(PRODUCER_ID).last_seq == 7
    written = log.read(3, 1 << 20).read()
    assert bytes(written) == bytes(view)


@pytest.mark.parametrize("value_size", [100, 1000])
def test_a_large_batch_is_appended_without_a_copy_of_its_records(tmp_path: Path, value_size: int):
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=lambda: 2_000)
    payload = _idempotent_batch(900_000 // value_size, value_size)
    frame, view = _request_with(payload)
    batch = single_batch_header(view)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        log.append(batch, leader_epoch=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(payload) // 4, f"{peak} bytes allocated to append a {len(payload)}-byte batch"
    [stored] = iter_batches(log.read(0, 1 << 21).read())
    assert stored.record_count == 900_000 // value_size and stored.is_valid()


def test_bytes_that_cannot_be_patched_are_copied_and_read_from_the_copy(tmp_path: Path):
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=lambda: 2_000)
    payload = _idempotent_batch(2, 10)
    batch = single_batch_header(payload)  # over read-only bytes
    info = log.append(batch, leader_epoch=1)
    assert (info.first_offset, info.last_offset) == (0, 1)
    assert RecordBatch(payload).base_offset == 0  # the caller's bytes are untouched
    [stored] = iter_batches(log.read(0, 1 << 20).read())
    assert (stored.base_offset, stored.partition_leader_epoch, stored.producer_id) == (0, 1, PRODUCER_ID)


def test_only_a_magic_2_batch_long_enough_for_a_header_gets_one():
    payload = _idempotent_batch(1, 1)
    assert single_batch_header(payload) is not None
    assert single_batch_header(payload[:60]) is None
    assert single_batch_header(None) is None
    legacy = bytearray(payload)
    legacy[records_module.MAGIC_OFFSET] = 1
    assert single_batch_header(legacy) is None


def test_records_checked_in_their_frame_are_checked_where_they_sit(tmp_path: Path):
    # A record's length prefix that does not lead to the next record, under a valid CRC: the walk
    # over the frame (the batch 37 bytes into it) finds it, as it does in a buffer of its own.
    payload = bytearray(_idempotent_batch(8, 10))
    first_record = records_module.RECORD_BATCH_OVERHEAD
    payload[first_record] += 2  # zig-zag: the first record claims one byte more
    crc_start = records_module.ATTRIBUTES_OFFSET
    struct.pack_into(">I", payload, records_module.CRC_OFFSET, crc32c(bytes(payload[crc_start:])))
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=lambda: 2_000)
    _, view = _request_with(bytes(payload))
    with pytest.raises(InvalidRecordError):
        log.append(single_batch_header(view))
    with pytest.raises(InvalidRecordError):
        log.append(bytes(payload))
    assert log.log_end_offset == 0
