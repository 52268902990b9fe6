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

The producer table itself (Kafka's ProducerStateManager) lives here too: for each producer id of a
partition, its epoch, the metadata of its last five batches (sequence range, offsets, timestamp),
the coordinator epoch of its last transaction marker and the first offset of its open transaction.
Every append of a batch with a producer id goes through it: a client's batch is fenced by epoch,
checked for its sequence and recognised as a retry when it repeats one of the last five batches.
Replicated batches update the table without checks.

A snapshot is the table as of an offset (all batches below it). Snapshots are written when a
segment rolls (at the new segment's base offset) and when the log closes; on open the newest one at
or below the log end is loaded and the batches after it are replayed from their headers.
"""

from __future__ import annotations

import enum
import logging
import struct
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from crc32c import crc32c

from kcli.errors import CorruptCheckpointError, ErrorCode, KcliError
from kcli.storage.checkpoints import write_atomically
from kcli.storage.records import NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP, ControlType, RecordBatch, TimestampType, parse_control_record

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

log = logging.getLogger(__name__)


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


# -- the producer table ----------------------------------------------------------------------------

NUM_BATCHES_TO_RETAIN = 5
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000


class AppendOrigin(enum.StrEnum):
    """Where an append comes from; it decides how much of it is checked (Kafka's AppendOrigin)."""

    CLIENT = "client"  # a Produce request: offsets, records, epochs and sequences are checked
    COORDINATOR = "coordinator"  # the group or transaction coordinator: epochs, not sequences
    REPLICATION = "replication"  # a follower copying its leader, or a log being loaded: no checks


class OutOfOrderSequenceError(KcliError):
    """A batch whose sequence does not follow the producer's last one (or a new epoch not at 0)."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(KcliError):
    """A batch from an epoch older than the producer's current one: a fenced writer."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(KcliError):
    """A plain batch from a producer whose transaction on the partition is still open."""

    error_code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(KcliError):
    """A transaction marker from a coordinator older than the one that wrote the last marker."""

    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement``, wrapping below 0 back to Int.MaxValue as sequences wrap past it."""
    if sequence < decrement:
        return _INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == _INT32_MAX)


class BatchMetadata(NamedTuple):
    """One batch a producer appended: its last sequence and offset, their span, its max timestamp."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """What the partition knows of one producer id (Kafka's ProducerStateEntry).

    ``batches`` holds the last five batches of the current epoch, oldest first; an epoch change
    empties it. ``current_txn_first_offset`` is -1 when no transaction is open.
    """

    __slots__ = ("producer_id", "producer_epoch", "batches", "coordinator_epoch", "last_timestamp", "current_txn_first_offset")

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        coordinator_epoch: int = -1,
        last_timestamp: int = NO_TIMESTAMP,
        current_txn_first_offset: int = -1,
        batches: Iterable[BatchMetadata] = (),
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)

    @property
    def is_empty(self) -> bool:
        """True when no batch of the current epoch is known."""
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        if self.producer_epoch == producer_epoch:
            return False
        self.batches.clear()
        self.producer_epoch = producer_epoch
        return True

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def end_transaction(self, producer_epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = -1
        self.last_timestamp = timestamp

    def update(self, staged: ProducerStateEntry) -> None:
        """Take over what an append staged: its epoch, its batches after ours, its other fields."""
        self.maybe_update_producer_epoch(staged.producer_epoch)
        self.batches.extend(staged.batches)
        self.coordinator_epoch = staged.coordinator_epoch
        self.current_txn_first_offset = staged.current_txn_first_offset
        self.last_timestamp = staged.last_timestamp

    def without_batches(self) -> ProducerStateEntry:
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch, self.last_timestamp, self.current_txn_first_offset)

    def find_duplicate(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The retained batch with exactly this sequence range in the current epoch, if any."""
        if producer_epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.last_seq == last_seq and batch.first_seq == first_seq:
                return batch
        return None

    def to_snapshot_entry(self) -> ProducerSnapshotEntry:
        return ProducerSnapshotEntry(
            producer_id=self.producer_id,
            epoch=self.producer_epoch,
            last_sequence=self.last_seq,
            last_offset=self.last_data_offset,
            offset_delta=self.last_offset_delta,
            timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=self.current_txn_first_offset,
        )

    @classmethod
    def from_snapshot_entry(cls, entry: ProducerSnapshotEntry) -> ProducerStateEntry:
        """A snapshot keeps only the last batch, and only when its last offset is known."""
        batches = ()
        if entry.last_offset >= 0:
            batches = (BatchMetadata(entry.last_sequence, entry.last_offset, entry.offset_delta, entry.timestamp),)
        txn_first_offset = entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else -1
        return cls(entry.producer_id, entry.epoch, entry.coordinator_epoch, entry.timestamp, txn_first_offset, batches)

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(producer_id={self.producer_id}, epoch={self.producer_epoch}, "
            f"coordinator_epoch={self.coordinator_epoch}, last_timestamp={self.last_timestamp}, "
            f"current_txn_first_offset={self.current_txn_first_offset}, batches={list(self.batches)})"
        )


class CompletedTxn(NamedTuple):
    """A transaction a marker closed: its first offset, the marker's offset, and whether it aborted."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ActiveProducer(NamedTuple):
    """One producer as DescribeProducers reports it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class ProducerAppendInfo:
    """One producer's batches within one append, checked and staged before the log is written.

    ``entry`` starts as the producer's current state without its batches and collects what the
    append adds; the manager merges it into the table once the bytes are in the log.
    """

    def __init__(self, partition: str, producer_id: int, current: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.partition = partition
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.entry = current.without_batches()
        self.completed_txns: list[CompletedTxn] = []

    def append(self, batch: RecordBatch) -> None:
        """Check and stage one batch of this producer (its offsets already assigned)."""
        if not batch.is_control:
            self.append_data_batch(
                batch.producer_epoch, batch.base_sequence, batch.last_sequence, batch.max_timestamp,
                batch.base_offset, batch.last_offset, batch.is_transactional,
            )
            return
        marker = read_end_txn_marker(batch)
        if marker is not None:
            control_type, coordinator_epoch, timestamp = marker
            self.append_end_txn_marker(batch.producer_epoch, control_type, coordinator_epoch, batch.base_offset, timestamp)

    def append_data_batch(
        self, producer_epoch: int, first_seq: int, last_seq: int, timestamp: int, first_offset: int, last_offset: int, transactional: bool
    ) -> None:
        self._check_producer_epoch(producer_epoch, first_offset)
        if self.origin == AppendOrigin.CLIENT:
            self._check_sequence(producer_epoch, first_seq, first_offset)
        entry = self.entry
        in_transaction = entry.current_txn_first_offset >= 0
        if in_transaction and not transactional and self.origin != AppendOrigin.REPLICATION:
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {self.producer_id} at offset {first_offset} in partition {self.partition}"
            )
        entry.add_batch(producer_epoch, last_seq, last_offset, last_offset - first_offset, timestamp)
        if transactional and not in_transaction:
            entry.current_txn_first_offset = first_offset

    def append_end_txn_marker(self, producer_epoch: int, control_type: ControlType, coordinator_epoch: int, offset: int, timestamp: int) -> CompletedTxn | None:
        self._check_producer_epoch(producer_epoch, offset)
        self._check_coordinator_epoch(coordinator_epoch, offset)
        entry = self.entry
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(self.producer_id, entry.current_txn_first_offset, offset, control_type == ControlType.ABORT)
            self.completed_txns.append(completed)
        entry.end_transaction(producer_epoch, coordinator_epoch, timestamp)
        return completed

    def _check_producer_epoch(self, producer_epoch: int, offset: int) -> None:
        current_epoch = self.entry.producer_epoch
        if producer_epoch >= current_epoch:
            return
        message = (
            f"Epoch of producer {self.producer_id} at offset {offset} in {self.partition} is {producer_epoch}, "
            f"which is smaller than the last seen epoch {current_epoch}"
        )
        if self.origin == AppendOrigin.REPLICATION:
            log.warning(message)
            return
        raise InvalidProducerEpochError(message)

    def _check_sequence(self, producer_epoch: int, first_seq: int, offset: int) -> None:
        entry = self.entry
        if producer_epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in partition {self.partition}: "
                    f"{producer_epoch} (request epoch), {first_seq} (seq. number), {entry.producer_epoch} (current producer epoch)"
                )
            return
        if not entry.is_empty:
            last_seq = entry.last_seq
        elif producer_epoch == self.current.producer_epoch:
            last_seq = self.current.last_seq
        else:
            last_seq = NO_SEQUENCE
        # With no known epoch (the producer's batches were all deleted) any sequence starts it again.
        if self.current.producer_epoch != NO_PRODUCER_EPOCH and not in_sequence(last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {self.producer_id} at offset {offset} in partition {self.partition}: "
                f"{first_seq} (incoming seq. number), {last_seq} (current end sequence number)"
            )

    def _check_coordinator_epoch(self, coordinator_epoch: int, offset: int) -> None:
        current = self.entry.coordinator_epoch
        if current <= coordinator_epoch:
            return
        message = (
            f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset} in partition {self.partition}: "
            f"{coordinator_epoch} (zombie), {current} (current)"
        )
        if self.origin == AppendOrigin.REPLICATION:
            log.info(message)
            return
        raise TransactionCoordinatorFencedError(message)


def read_end_txn_marker(batch: RecordBatch) -> tuple[ControlType, int, int] | None:
    """``(COMMIT or ABORT, coordinator epoch, timestamp)`` of a control batch; None when it holds
    no transaction marker (the cleaner emptied it, or it is another kind of control record)."""
    fields = batch.record_fields()
    if not fields:
        return None
    offset_delta, timestamp_delta, key, value, _ = fields[0]
    control_type, coordinator_epoch = parse_control_record(key, value, batch.base_offset + offset_delta)
    if coordinator_epoch is None:
        return None
    timestamp = batch.max_timestamp if batch.timestamp_type == TimestampType.LOG_APPEND_TIME else batch.base_timestamp + timestamp_delta
    return control_type, coordinator_epoch, timestamp


class ProducerStateManager:
    """The producer table of one partition and its snapshot files (Kafka's ProducerStateManager).

    ``map_end_offset`` is the offset the table is current up to (the log end offset once loaded);
    ``last_snapshot_offset`` that of the last snapshot written or loaded.
    """

    def __init__(self, directory: Path | str, *, partition: str | None = None, producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> None:
        self.dir = Path(directory)
        self.partition = partition or self.dir.name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._snapshots = self._scan_snapshots()
        self.map_end_offset = 0
        self.last_snapshot_offset = 0

    # -- the table -----------------------------------------------------------------------------

    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        return MappingProxyType(self._producers)

    @property
    def is_empty(self) -> bool:
        return not self._producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def active_producers(self) -> list[ActiveProducer]:
        return [
            ActiveProducer(pid, e.producer_epoch, e.last_seq, e.last_timestamp, e.coordinator_epoch, e.current_txn_first_offset)
            for pid, e in sorted(self._producers.items())
        ]

    def snapshot_entries(self) -> list[ProducerSnapshotEntry]:
        """The table as a snapshot holds it, by producer id."""
        return [entry.to_snapshot_entry() for _, entry in sorted(self._producers.items())]

    def load_entries(self, entries: Iterable[ProducerSnapshotEntry]) -> None:
        for snapshot_entry in entries:
            self._producers[snapshot_entry.producer_id] = ProducerStateEntry.from_snapshot_entry(snapshot_entry)

    # -- appends -------------------------------------------------------------------------------

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        current = self._producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(self.partition, producer_id, current, origin)

    def analyze(self, batches: Iterable[RecordBatch], origin: AppendOrigin) -> tuple[BatchMetadata | None, list[ProducerAppendInfo]]:
        """Check the batches (with producer ids, offsets assigned) of one append, in order.

        Returns the earlier batch a client's batch repeats, if one does (nothing is staged then),
        and what to apply once the append is written. Raises when a batch is fenced or out of order.
        """
        staged: dict[int, ProducerAppendInfo] = {}
        for batch in batches:
            producer_id = batch.producer_id
            if origin == AppendOrigin.CLIENT:
                current = self._producers.get(producer_id)
                if current is not None:
                    duplicate = current.find_duplicate(batch.producer_epoch, batch.base_sequence, batch.last_sequence)
                    if duplicate is not None:
                        return duplicate, []
            info = staged.get(producer_id)
            if info is None:
                info = staged[producer_id] = self.prepare_update(producer_id, origin)
            info.append(batch)
        return None, list(staged.values())

    def update(self, info: ProducerAppendInfo) -> None:
        current = self._producers.get(info.producer_id)
        if current is None:
            self._producers[info.producer_id] = info.entry
        else:
            current.update(info.entry)

    def replay_batch(self, batch: RecordBatch) -> None:
        """Apply a batch already in the log, without checks (loading, or a follower's append)."""
        info = self.prepare_update(batch.producer_id, AppendOrigin.REPLICATION)
        info.append(batch)
        self.update(info)

    def update_map_end_offset(self, offset: int) -> None:
        self.map_end_offset = offset

    def is_expired(self, entry: ProducerStateEntry, now: int) -> bool:
        return entry.current_txn_first_offset < 0 and now - entry.last_timestamp >= self.producer_id_expiration_ms

    def remove_expired_producers(self, now: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms`` with no open transaction; returns how many."""
        expired = [pid for pid, entry in self._producers.items() if self.is_expired(entry, now)]
        for pid in expired:
            del self._producers[pid]
        return len(expired)

    # -- snapshots -----------------------------------------------------------------------------

    def _scan_snapshots(self) -> dict[int, Path]:
        found: dict[int, Path] = {}
        if not self.dir.is_dir():
            return found
        for path in self.dir.iterdir():
            if path.name.endswith(SNAPSHOT_SUFFIX) and path.is_file():
                try:
                    found[offset_from_snapshot_name(path.name)] = path
                except ValueError:
                    continue
        return found

    def snapshot_offsets(self) -> list[int]:
        return sorted(self._snapshots)

    def latest_snapshot_offset(self) -> int | None:
        return max(self._snapshots) if self._snapshots else None

    def take_snapshot(self, *, skip_if_empty: bool = False) -> Path | None:
        """Write the table at ``map_end_offset`` unless a snapshot there or later was already taken
        (or, with ``skip_if_empty``, the table is empty); returns the file written."""
        offset = self.map_end_offset
        if offset <= self.last_snapshot_offset or (skip_if_empty and not self._producers):
            return None
        path = self.dir / snapshot_file_name(offset)
        write_producer_snapshot(path, self.snapshot_entries())
        self._snapshots[offset] = path
        self.last_snapshot_offset = offset
        log.debug("Wrote producer snapshot at offset %d with %d producer ids in %s", offset, len(self._producers), self.dir)
        return path

    def delete_snapshot(self, offset: int) -> bool:
        path = self._snapshots.pop(offset, None)
        if path is None:
            return False
        path.unlink(missing_ok=True)
        return True

    def remove_stray_snapshots(self, segment_base_offsets: Iterable[int]) -> None:
        """Delete snapshots that match no segment base offset, but keep the newest such one when it
        lies above every segment (the one a clean shutdown writes at the log end)."""
        bases = set(segment_base_offsets)
        self._snapshots = self._scan_snapshots()
        strays = sorted(offset for offset in self._snapshots if offset not in bases)
        keep = strays[-1] if strays and (not bases or strays[-1] > max(bases)) else None
        for offset in strays:
            if offset != keep:
                self.delete_snapshot(offset)

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now: int) -> None:
        """Drop the snapshots outside (log start, log end] and, unless the table already ends at the
        log end, reload it from the newest snapshot left (producers that expired are skipped)."""
        for offset in list(self._snapshots):
            if offset > log_end_offset or offset <= log_start_offset:
                self.delete_snapshot(offset)
        if log_end_offset != self.map_end_offset:
            self._producers.clear()
            self._load_from_snapshot(log_start_offset, now)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def _load_from_snapshot(self, log_start_offset: int, now: int) -> None:
        while (offset := self.latest_snapshot_offset()) is not None:
            path = self._snapshots[offset]
            try:
                entries = read_producer_snapshot(path)
            except (CorruptCheckpointError, OSError) as exc:
                log.warning("Failed to load producer snapshot from '%s': %s", path, exc)
                self.delete_snapshot(offset)
                continue
            log.info("Loading producer state from snapshot file '%s'", path)
            for snapshot_entry in entries:
                entry = ProducerStateEntry.from_snapshot_entry(snapshot_entry)
                if not self.is_expired(entry, now):
                    self._producers[entry.producer_id] = entry
            self.last_snapshot_offset = self.map_end_offset = offset
            return
        self.last_snapshot_offset = self.map_end_offset = log_start_offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        if self.map_end_offset < log_start_offset:
            self.map_end_offset = log_start_offset
        latest = self.latest_snapshot_offset()
        self.last_snapshot_offset = log_start_offset if latest is None else latest

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget every producer and snapshot; the table starts empty at ``offset``."""
        self._producers.clear()
        for snapshot_offset in list(self._snapshots):
            self.delete_snapshot(snapshot_offset)
        self.last_snapshot_offset = 0
        self.map_end_offset = offset

    def __repr__(self) -> str:
        return f"ProducerStateManager({self.partition}, producers={len(self._producers)}, map_end_offset={self.map_end_offset})"
