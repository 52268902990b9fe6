"""Producer-state snapshots: ``<offset>.snapshot``, the producer table as of that log offset.

Layout, version 1 (all integers big-endian):

    0    version                   int16   1
    2    crc                       uint32  CRC-32C of everything after this field
    6    producer_entries          int32   count, then per entry (46 bytes):
           producer_id               int64
           epoch                     int16
           last_sequence             int32
           last_offset               int64   -1 when the producer has no batch metadata
           offset_delta              int32   last offset - first offset of the last batch
           timestamp                 int64   max timestamp of the last batch
           coordinator_epoch         int32
           current_txn_first_offset  int64   -1 when no transaction is open

An empty snapshot is the 10 bytes ``00 01 48 67 4b c7 00 00 00 00``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

from kcli.errors import CorruptCheckpointError
from kcli.storage.checkpoints import write_atomically

PRODUCER_SNAPSHOT_VERSION = 1
SNAPSHOT_SUFFIX = ".snapshot"

_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
# Kafka's field names in its snapshot schema, which are also ProducerSnapshotEntry's; the sizes
# tell which field a truncated file ends in.
_ENTRY_FIELDS = (
    ("producer_id", 8),
    ("epoch", 2),
    ("last_sequence", 4),
    ("last_offset", 8),
    ("offset_delta", 4),
    ("timestamp", 8),
    ("coordinator_epoch", 4),
    ("current_txn_first_offset", 8),
)
_ENTRY_FIELD_NAMES = tuple(name for name, _ in _ENTRY_FIELDS)
# Kafka reads the snapshot with its protocol Schema class, so a short file fails with Java's exception name.
_UNDERFLOW = "java.nio.BufferUnderflowException"
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerSnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int = -1

    @property
    def first_sequence(self) -> int:
        """First sequence of the last batch, wrapping below 0 the way sequences wrap past Int.MaxValue.

        Kafka's BatchMetadata.firstSeq = DefaultRecordBatch.decrementSequence(lastSeq, offsetDelta):
        ``lastSeq - offsetDelta``, or ``Integer.MAX_VALUE - (offsetDelta - lastSeq) + 1`` when
        lastSeq < offsetDelta, in 32-bit arithmetic.
        """
        if self.last_sequence < self.offset_delta:
            value = _INT32_MAX - (self.offset_delta - self.last_sequence) + 1
        else:
            value = self.last_sequence - self.offset_delta
        return (value + 2**31) % 2**32 - 2**31


def encode_producer_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    body = bytearray(_COUNT.size)
    count = 0
    for entry in entries:
        body += _ENTRY.pack(*(getattr(entry, name) for name in _ENTRY_FIELD_NAMES))
        count += 1
    _COUNT.pack_into(body, 0, count)
    return _HEADER.pack(PRODUCER_SNAPSHOT_VERSION, crc32c(body)) + bytes(body)


def _schema_error(data: bytes) -> str | None:
    """Kafka's message for bytes that do not fill the snapshot schema, or None if they do."""
    if len(data) < 2:
        return f"Error reading field 'version': {_UNDERFLOW}"
    if len(data) < _HEADER.size:
        return f"Error reading field 'crc': {_UNDERFLOW}"
    if len(data) < _HEADER.size + _COUNT.size:
        return f"Error reading field 'producer_entries': {_UNDERFLOW}"
    (count,) = _COUNT.unpack_from(data, _HEADER.size)
    remaining = len(data) - _HEADER.size - _COUNT.size
    if count < 0:
        return f"Error reading field 'producer_entries': Array size {count} cannot be negative"
    if count > remaining:
        return f"Error reading field 'producer_entries': Error reading array of size {count}, only {remaining} bytes available"
    if remaining < count * _ENTRY.size:
        short_by = remaining % _ENTRY.size
        end = 0
        for name, size in _ENTRY_FIELDS:
            end += size
            if short_by < end:
                return f"Error reading field 'producer_entries': Error reading field '{name}': {_UNDERFLOW}"
    return None


def decode_producer_snapshot(data: bytes, source: str) -> list[ProducerSnapshotEntry]:
    """The entries of a snapshot file's bytes; ``source`` names the file in error messages.

    Checks run in Kafka's order: schema, then version, then CRC. As in Kafka, bytes after the last
    entry are allowed as long as the CRC covers them.
    """
    problem = _schema_error(data)
    if problem:
        raise CorruptCheckpointError(f"{source}: Snapshot failed schema validation: {problem}")
    version, stored_crc = _HEADER.unpack_from(data)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptCheckpointError(f"{source}: Snapshot contained an unknown file version {version}")
    computed_crc = crc32c(data[_HEADER.size :])
    if stored_crc != computed_crc:
        raise CorruptCheckpointError(
            f"{source}: Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. Computed crc: {computed_crc}"
        )
    (count,) = _COUNT.unpack_from(data, _HEADER.size)
    start = _HEADER.size + _COUNT.size
    entries = _ENTRY.iter_unpack(data[start : start + count * _ENTRY.size])
    return [ProducerSnapshotEntry(**dict(zip(_ENTRY_FIELD_NAMES, fields))) for fields in entries]


def read_producer_snapshot(path: Path | str) -> list[ProducerSnapshotEntry]:
    return decode_producer_snapshot(Path(path).read_bytes(), str(path))


def write_producer_snapshot(path: Path | str, entries: Iterable[ProducerSnapshotEntry]) -> None:
    write_atomically(path, encode_producer_snapshot(entries))


def snapshot_file_name(offset: int) -> str:
    """``00000000000000000256.snapshot`` for offset 256."""
    if offset < 0:
        raise ValueError(f"a snapshot offset cannot be negative: {offset}")
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def offset_from_snapshot_name(name: str) -> int:
    """The offset a snapshot file name (not a path) stands for."""
    stem = name.removesuffix(SNAPSHOT_SUFFIX)
    if stem == name or not stem.isascii() or not stem.isdigit():
        raise ValueError(f"{name} is not a producer snapshot file name")
    return int(stem)


def format_snapshot_entry(entry: ProducerSnapshotEntry) -> str:
    """The line kafka-dump-log prints for one snapshot entry (Kafka 3.5 to 3.9).

    The batch part is printed only when the entry has batch metadata, which a snapshot entry has
    when its last offset is >= 0; without it the line keeps Kafka's trailing space.
    """
    if entry.current_txn_first_offset >= 0:
        txn_first_offset = f"OptionalLong[{entry.current_txn_first_offset}]"
    else:
        txn_first_offset = "OptionalLong.empty"
    line = (
        f"producerId: {entry.producer_id} producerEpoch: {entry.epoch} "
        f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: {txn_first_offset} "
        f"lastTimestamp: {entry.timestamp} "
    )
    if entry.last_offset >= 0:
        line += (
            f"firstSequence: {entry.first_sequence} lastSequence: {entry.last_sequence} "
            f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} timestamp: {entry.timestamp}"
        )
    return line
