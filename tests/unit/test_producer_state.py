"""Producer-state ``.snapshot`` files against the layout facts (version 1, CRC-32C, big-endian)."""

from __future__ import annotations

import re
import struct

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from kcli.errors import CorruptCheckpointError
from kcli.storage.producer_state import (
    BatchMetadata,
    ProducerSnapshotEntry,
    ProducerStateEntry,
    decode_producer_snapshot,
    encode_producer_snapshot,
    format_snapshot_entry,
    offset_from_snapshot_name,
    in_sequence,
    read_producer_snapshot,
    snapshot_file_name,
    write_producer_snapshot,
)

EMPTY_SNAPSHOT = bytes.fromhex("0001 4867 4bc7 0000 0000")

ENTRY = ProducerSnapshotEntry(
    producer_id=1000,
    epoch=3,
    last_sequence=9,
    last_offset=41,
    offset_delta=4,
    timestamp=1632815304456,
    coordinator_epoch=7,
    current_txn_first_offset=37,
)


def golden_snapshot(*fields: tuple[int, ...]) -> bytes:
    """A snapshot assembled straight from the documented layout."""
    body = struct.pack(">i", len(fields)) + b"".join(struct.pack(">qhiqiqiq", *f) for f in fields)
    return struct.pack(">hI", 1, crc32c(body)) + body


def int_range(bits: int):
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


entries = st.builds(
    ProducerSnapshotEntry,
    producer_id=int_range(64),
    epoch=int_range(16),
    last_sequence=int_range(32),
    last_offset=int_range(64),
    offset_delta=int_range(32),
    timestamp=int_range(64),
    coordinator_epoch=int_range(32),
    current_txn_first_offset=int_range(64),
)


def test_empty_snapshot_golden(tmp_path):
    assert encode_producer_snapshot([]) == EMPTY_SNAPSHOT
    path = tmp_path / snapshot_file_name(0)
    write_producer_snapshot(path, [])
    assert path.read_bytes() == EMPTY_SNAPSHOT
    assert read_producer_snapshot(path) == []


def test_snapshot_golden():
    data = golden_snapshot((1000, 3, 9, 41, 4, 1632815304456, 7, 37))
    assert encode_producer_snapshot([ENTRY]) == data
    assert decode_producer_snapshot(data, "x.snapshot") == [ENTRY]


@given(st.lists(entries, max_size=10))
def test_snapshot_round_trip(snapshot):
    assert decode_producer_snapshot(encode_producer_snapshot(snapshot), "s") == snapshot


def test_snapshot_bytes_after_the_entries_are_allowed_when_the_crc_covers_them():
    body = bytes.fromhex("00000000") + b"extra"
    data = struct.pack(">hI", 1, crc32c(body)) + body
    assert decode_producer_snapshot(data, "s") == []


def test_current_txn_first_offset_defaults_to_none():
    entry = ProducerSnapshotEntry(producer_id=1, epoch=0, last_sequence=0, last_offset=0, offset_delta=0, timestamp=0, coordinator_epoch=-1)
    assert entry.current_txn_first_offset == -1


@pytest.mark.parametrize(
    ("last_sequence", "offset_delta", "first_sequence"),
    [
        (9, 4, 5),
        (0, 0, 0),
        (2, 5, 2**31 - 3),  # the batch wrapped past Int.MaxValue
        (-1, 0, 2**31 - 1),  # no sequence, as Kafka's decrementSequence computes it
    ],
)
def test_first_sequence(last_sequence, offset_delta, first_sequence):
    entry = ProducerSnapshotEntry(
        producer_id=1, epoch=0, last_sequence=last_sequence, last_offset=10, offset_delta=offset_delta, timestamp=0, coordinator_epoch=0
    )
    assert entry.first_sequence == first_sequence


@pytest.mark.parametrize(
    ("last_sequence", "offset_delta", "first_sequence"),
    [(9, 4, 5), (0, 0, 0), (2, 5, 2**31 - 3), (2**31 - 1, 2**31 - 1, 0)],
)
def test_the_tables_batch_metadata_wraps_sequences_as_the_snapshot_entry_does(last_sequence, offset_delta, first_sequence):
    assert BatchMetadata(last_sequence, 10, offset_delta, 0).first_seq == first_sequence
    entry = ProducerStateEntry(1, 0, batches=[BatchMetadata(last_sequence, 10, offset_delta, 0)])
    assert entry.to_snapshot_entry().first_sequence == first_sequence


def test_in_sequence_wraps_at_int_max():
    assert in_sequence(4, 5) and in_sequence(2**31 - 1, 0) and in_sequence(-1, 0)
    assert not in_sequence(4, 6) and not in_sequence(2**31 - 2, 0) and not in_sequence(5, 5)


def test_a_snapshot_entry_without_batch_metadata_loads_as_an_entry_without_batches():
    entry = ProducerStateEntry.from_snapshot_entry(
        ProducerSnapshotEntry(producer_id=3, epoch=2, last_sequence=-1, last_offset=-1, offset_delta=0, timestamp=77, coordinator_epoch=5)
    )
    assert (entry.is_empty, entry.last_seq, entry.last_timestamp, entry.coordinator_epoch) == (True, -1, 77, 5)
    assert entry.to_snapshot_entry().last_offset == -1


def test_snapshot_file_names():
    assert snapshot_file_name(256) == "00000000000000000256.snapshot"
    assert offset_from_snapshot_name("00000000000000000256.snapshot") == 256
    with pytest.raises(ValueError):
        snapshot_file_name(-1)
    for name in ["00000000000000000256.log", "x.snapshot", ".snapshot", "00000000000000000256.snapshot.deleted"]:
        with pytest.raises(ValueError):
            offset_from_snapshot_name(name)


# -- corruption -----------------------------------------------------------------------------------


def corrupt(tmp_path, data: bytes) -> str:
    path = tmp_path / "00000000000000000005.snapshot"
    path.write_bytes(data)
    with pytest.raises(CorruptCheckpointError) as caught:
        read_producer_snapshot(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


def test_unknown_version(tmp_path):
    data = struct.pack(">h", 2) + EMPTY_SNAPSHOT[2:]
    assert corrupt(tmp_path, data) == "Snapshot contained an unknown file version 2"


def test_negative_version(tmp_path):
    data = struct.pack(">h", -1) + EMPTY_SNAPSHOT[2:]
    assert corrupt(tmp_path, data) == "Snapshot contained an unknown file version -1"


def test_bad_crc(tmp_path):
    data = EMPTY_SNAPSHOT[:2] + struct.pack(">I", 0xDEADBEEF) + EMPTY_SNAPSHOT[6:]
    assert corrupt(tmp_path, data) == f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {0xDEADBEEF}. Computed crc: {0x48674BC7}"


@pytest.mark.parametrize("position", range(10 + 46))
def test_flipped_byte_is_caught(tmp_path, position):
    data = bytearray(golden_snapshot((1000, 3, 9, 41, 4, 1632815304456, 7, 37)))
    data[position] ^= 0x01
    message = corrupt(tmp_path, bytes(data))
    assert message.startswith(("Snapshot is corrupt (CRC", "Snapshot failed schema validation:", "Snapshot contained an unknown file version"))


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "Error reading field 'version': java.nio.BufferUnderflowException"),
        (b"\x00", "Error reading field 'version': java.nio.BufferUnderflowException"),
        (EMPTY_SNAPSHOT[:5], "Error reading field 'crc': java.nio.BufferUnderflowException"),
        (EMPTY_SNAPSHOT[:8], "Error reading field 'producer_entries': java.nio.BufferUnderflowException"),
        (EMPTY_SNAPSHOT[:6] + struct.pack(">i", -1), "Error reading field 'producer_entries': Array size -1 cannot be negative"),
        (EMPTY_SNAPSHOT[:6] + struct.pack(">i", 3), "Error reading field 'producer_entries': Error reading array of size 3, only 0 bytes available"),
    ],
)
def test_truncated_header(tmp_path, data, problem):
    assert corrupt(tmp_path, data) == f"Snapshot failed schema validation: {problem}"


@pytest.mark.parametrize(
    ("keep", "field"),
    [(0, "producer_id"), (7, "producer_id"), (8, "epoch"), (10, "last_sequence"), (14, "last_offset"), (22, "offset_delta"),
     (26, "timestamp"), (34, "coordinator_epoch"), (38, "current_txn_first_offset"), (45, "current_txn_first_offset")],
)
def test_truncated_entry_names_the_field(tmp_path, keep, field):
    two = golden_snapshot((1, 0, 0, 0, 0, 0, 0, -1), (2, 0, 0, 0, 0, 0, 0, -1))
    data = two[: 10 + 46 + keep]
    assert corrupt(tmp_path, data) == (
        f"Snapshot failed schema validation: Error reading field 'producer_entries': Error reading field '{field}': java.nio.BufferUnderflowException"
    )


# -- kafka-dump-log lines -------------------------------------------------------------------------


def test_format_entry_with_batch_metadata():
    assert format_snapshot_entry(ENTRY) == (
        "producerId: 1000 producerEpoch: 3 coordinatorEpoch: 7 currentTxnFirstOffset: OptionalLong[37] "
        "lastTimestamp: 1632815304456 firstSequence: 5 lastSequence: 9 lastOffset: 41 offsetDelta: 4 timestamp: 1632815304456"
    )


def test_format_entry_without_open_transaction():
    entry = ProducerSnapshotEntry(
        producer_id=0, epoch=0, last_sequence=0, last_offset=0, offset_delta=0, timestamp=1, coordinator_epoch=-1, current_txn_first_offset=-1
    )
    assert format_snapshot_entry(entry) == (
        "producerId: 0 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1 firstSequence: 0 lastSequence: 0 lastOffset: 0 offsetDelta: 0 timestamp: 1"
    )


def test_format_entry_without_batch_metadata_keeps_the_trailing_space():
    entry = ProducerSnapshotEntry(
        producer_id=5, epoch=1, last_sequence=-1, last_offset=-1, offset_delta=0, timestamp=-1, coordinator_epoch=2, current_txn_first_offset=-1
    )
    assert format_snapshot_entry(entry) == (
        "producerId: 5 producerEpoch: 1 coordinatorEpoch: 2 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: -1 "
    )


def test_entry_is_frozen():
    with pytest.raises(AttributeError):
        ENTRY.epoch = 4  # type: ignore[misc]
    assert not hasattr(ENTRY, "__dict__")
    assert re.search(r"producer_id=1000", repr(ENTRY))
