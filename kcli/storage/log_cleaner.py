"""Log compaction: removing obsolete records from ``cleanup.policy=compact`` logs (Kafka's LogCleaner).

A record with key K at offset O is obsolete once a record with key K sits at an offset above O.
A log is a clean section (cleaned before) followed by a dirty one; ``log_cleaner_manager``
chooses the log and its cleanable range. Cleaning it:

1. An offset map (key -> last offset) is built over the dirty section, up to where the map is
   full (``offset_map``); the offset after the last one mapped is where this cleaning ends.
2. The segments from the log start to there are grouped so that each group fits one segment
   (``segment.bytes``, ``segment.index.bytes``, offsets relative to the first base offset), and
   each group is recopied into one ``.cleaned`` segment, keeping a record only when no later
   offset holds its key. Offsets never change.
3. Each cleaned segment is swapped in (``Log.replace_segments``: ``.cleaned`` -> ``.swap``, old
   segments -> ``.deleted``, ``.swap`` -> in place), so a crash at any step leaves files that
   ``log_loader`` completes or discards.

Batches are recopied as they are when every record stays; otherwise rebuilt with the same
magic, codec, timestamp type, producer id/epoch/base sequence and last offset. A tombstone (null
value) survives the first cleaning that keeps it, which stamps its batch with a delete horizon
(base timestamp = now + ``delete.retention.ms``, attribute bit 6), and goes in the first cleaning
after that horizon; magic 0/1 tombstones go once their segment is older than the last cleaned
segment by ``delete.retention.ms``. The last batch of each active producer is kept, emptied if
need be, so that a rebuilt producer table still knows its sequence. Records of aborted
transactions are removed; transaction markers stay until their transaction's batches are gone
and the delete horizon has passed.

The cleaner runs in ``log.cleaner.threads`` threads; each cleans the dirtiest log, runs retention
for the compacted logs, and sleeps ``log.cleaner.backoff.ms`` when nothing was to be cleaned.
Reads and writes together are throttled to ``log.cleaner.io.max.bytes.per.second``.
"""

from __future__ import annotations

import dataclasses
import enum
import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from kcli.errors import CorruptRecordError, KafkaStorageError, KcliError
from kcli.storage.compression import CompressionType
from kcli.storage.log import LastRecord, Log
from kcli.storage.log_cleaner_manager import (
    LogCleanerManager,
    LogCleaningAbortedError,
    LogCleaningError,
    LogToClean,
    PreCleanStats,
    TopicPartition,
)
from kcli.storage.offset_map import OffsetMap
from kcli.storage.records import (
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    ControlType,
    LegacyBatch,
    NewRecord,
    RecordBatch,
    TimestampType,
    batch_attributes,
    build_batch,
    check_batch_size,
    iter_batches,
    parse_control_record,
    peek_batch_header,
    write_header,
)
from kcli.storage.segment import CLEANED_FILE_SUFFIX, LogSegment, now_ms
from kcli.storage.transaction_index import AbortedTxn

log = logging.getLogger("kcli.log_cleaner")

DOUBLE_MAX = 1.7976931348623157e308
_INT32_MAX = 2**31 - 1
_THROTTLE_CHECK_INTERVAL_MS = 300
_OFFSET_INDEX_ENTRY = 8
_TIME_INDEX_ENTRY = 12

StepHook = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class CleanerConfig:
    """The broker's ``log.cleaner.*`` settings, with Kafka's defaults (Kafka's CleanerConfig)."""

    num_threads: int = 1  # log.cleaner.threads
    dedupe_buffer_size: int = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
    dedupe_buffer_load_factor: float = 0.9  # log.cleaner.io.buffer.load.factor
    io_buffer_size: int = 512 * 1024  # log.cleaner.io.buffer.size
    max_message_size: int = 1048588  # message.max.bytes
    max_io_bytes_per_second: float = DOUBLE_MAX  # log.cleaner.io.max.bytes.per.second
    backoff_ms: int = 15000  # log.cleaner.backoff.ms
    enable_cleaner: bool = True  # log.cleaner.enable

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any]) -> CleanerConfig:
        """From a broker config's typed getter (``BrokerConfig.get``)."""
        return cls(
            num_threads=get("log.cleaner.threads"),
            dedupe_buffer_size=get("log.cleaner.dedupe.buffer.size"),
            dedupe_buffer_load_factor=get("log.cleaner.io.buffer.load.factor"),
            io_buffer_size=get("log.cleaner.io.buffer.size"),
            max_message_size=get("message.max.bytes"),
            max_io_bytes_per_second=get("log.cleaner.io.max.bytes.per.second"),
            backoff_ms=get("log.cleaner.backoff.ms"),
            enable_cleaner=get("log.cleaner.enable"),
        )


class Throttler:
    """Sleeps when the bytes observed over each check interval ran above the rate (Kafka's Throttler)."""

    def __init__(self, desired_rate_per_sec: float, check_interval_ms: int = _THROTTLE_CHECK_INTERVAL_MS, *,
                 nanos: Callable[[], int] = time.monotonic_ns, sleep: Callable[[float], None] = time.sleep) -> None:
        self.desired_rate_per_sec = desired_rate_per_sec
        self._check_interval_ns = check_interval_ms * 1_000_000
        self._nanos = nanos
        self._sleep = sleep
        self._lock = threading.Lock()
        self._period_start_ns = nanos()
        self._observed_so_far = 0.0

    def maybe_throttle(self, observed: float) -> None:
        rate = self.desired_rate_per_sec
        with self._lock:
            self._observed_so_far += observed
            now = self._nanos()
            elapsed_ns = now - self._period_start_ns
            if elapsed_ns > self._check_interval_ns and self._observed_so_far > 0:
                if self._observed_so_far * 1e9 / elapsed_ns > rate:
                    sleep_ms = round(self._observed_so_far / (rate / 1000) - elapsed_ns // 1_000_000)
                    if sleep_ms > 0:
                        self._sleep(sleep_ms / 1000)
                self._period_start_ns = self._nanos()
                self._observed_so_far = 0.0


class CleanerStats:
    """What one cleaning read, kept and took (Kafka's CleanerStats)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.start_time = clock()
        self.map_complete_time = -1.0
        self.end_time = -1.0
        self.bytes_read = 0
        self.bytes_written = 0
        self.map_bytes_read = 0
        self.map_messages_read = 0
        self.messages_read = 0
        self.invalid_messages_read = 0
        self.messages_written = 0
        self.buffer_utilization = 0.0

    def index_done(self) -> None:
        self.map_complete_time = self._clock()

    def all_done(self) -> None:
        self.end_time = self._clock()

    @property
    def elapsed_secs(self) -> float:
        return self.end_time - self.start_time

    @property
    def elapsed_index_secs(self) -> float:
        return self.map_complete_time - self.start_time


class CleanedTransactionMetadata:
    """Transactions met while cleaning: which batches belong to aborted ones, which markers may go
    (Kafka's CleanedTransactionMetadata). Retained abort markers are written to the cleaned
    segment's ``.txnindex``."""

    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()
        # producer id -> [aborted txn, last offset of a batch of it seen or None]
        self._ongoing_aborted: dict[int, list] = {}
        self._aborted: list[tuple[int, int, AbortedTxn]] = []
        self._sequence = 0
        self.cleaned_index: list[AbortedTxn] | None = None

    def add_aborted_transactions(self, transactions: Iterable[AbortedTxn]) -> None:
        for txn in transactions:
            heapq.heappush(self._aborted, (txn.first_offset, self._sequence, txn))
            self._sequence += 1

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, [txn, None])

    def on_control_batch_read(self, batch: RecordBatch) -> bool:
        """A control batch was reached; True when it may be discarded."""
        self._consume_aborted_up_to(batch.last_offset)
        fields = batch.record_fields()
        if not fields:
            return True  # emptied by an earlier cleaning
        _, _, key, value, _ = fields[0]
        control_type, _ = parse_control_record(key, value, batch.base_offset)
        producer_id = batch.producer_id
        if control_type == ControlType.ABORT:
            ongoing = self._ongoing_aborted.pop(producer_id, None)
            if ongoing is not None and ongoing[1] is not None:
                # Kept until every batch of the transaction has been removed.
                if self.cleaned_index is not None:
                    self.cleaned_index.append(ongoing[0])
                return False
            return True
        if control_type == ControlType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False

    def on_batch_read(self, batch: RecordBatch | LegacyBatch) -> bool:
        """A data batch was reached; True when it belongs to an aborted transaction."""
        self._consume_aborted_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(batch.producer_id)
        if ongoing is not None:
            ongoing[1] = batch.last_offset
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False


class _Retention(enum.Enum):
    DELETE = 0  # drop the whole batch unread
    RETAIN_EMPTY = 1  # keep the batch even when no record stays
    DELETE_EMPTY = 2  # drop the batch when no record stays


def _empty_batch(batch: RecordBatch) -> bytes:
    """A batch with no records that keeps the batch's producer fields and offset range (Kafka's
    writeEmptyHeader): uncompressed, no base timestamp, the original max timestamp."""
    buf = bytearray(RECORD_BATCH_OVERHEAD)
    attributes = batch_attributes(CompressionType.NONE, batch.timestamp_type, batch.is_transactional, batch.is_control)
    write_header(
        buf, batch.base_offset, batch.partition_leader_epoch, attributes, batch.last_offset_delta, NO_TIMESTAMP,
        batch.max_timestamp, batch.producer_id, batch.producer_epoch, batch.base_sequence, 0,
    )
    return bytes(buf)


class _ChunkOutput:
    """The retained batches of one chunk, with what the segment's indexes need."""

    __slots__ = ("parts", "size", "max_offset", "max_timestamp", "offset_of_max_timestamp")

    def __init__(self) -> None:
        self.parts: list[bytes | memoryview] = []
        self.size = 0
        self.max_offset = -1
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = -1

    def add(self, data: bytes | memoryview, max_offset: int, max_timestamp: int, offset_of_max_timestamp: int) -> None:
        self.parts.append(data)
        self.size += len(data)
        if max_offset > self.max_offset:
            self.max_offset = max_offset
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, offset_of_max_timestamp


def _java_date(ms: int) -> str:
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(ms / 1000))


class Cleaner:
    """Cleans one log at a time (Kafka's Cleaner); one per cleaner thread.

    ``check_done(partition)`` is called between chunks and raises LogCleaningAbortedError to stop.
    ``step_hook`` is called at each step of a swap (``cleaned``, ``swap``, ``deleted``,
    ``replaced``), which is where tests inject crashes.
    """

    def __init__(
        self,
        cleaner_id: int,
        offset_map: OffsetMap,
        io_buffer_size: int,
        max_io_buffer_size: int,
        dedupe_buffer_load_factor: float,
        throttler: Throttler,
        clock: Callable[[], int] = now_ms,
        check_done: Callable[[TopicPartition], None] = lambda partition: None,
        step_hook: StepHook | None = None,
    ) -> None:
        if offset_map.slots * dedupe_buffer_load_factor <= 1:
            raise KcliError(
                "offset map is too small to fit in even a single message, so log cleaning will never make progress. "
                "You can increase log.cleaner.dedupe.buffer.size or decrease log.cleaner.threads"
            )
        self.id = cleaner_id
        self.offset_map = offset_map
        self.io_buffer_size = max(io_buffer_size, RECORD_BATCH_OVERHEAD)
        self.max_io_buffer_size = max_io_buffer_size
        self.dedupe_buffer_load_factor = dedupe_buffer_load_factor
        self.throttler = throttler
        self.clock = clock
        self.check_done = check_done
        self.step_hook = step_hook

    def _info(self, message: str, *args: object) -> None:
        log.info("Cleaner %d: " + message, self.id, *args)

    # -- one cleaning ------------------------------------------------------------------------------

    def clean(self, cleanable: LogToClean, now: int | None = None) -> tuple[int, CleanerStats]:
        """Clean the log up to where the offset map reached; returns the first offset not cleaned
        (the next first dirty offset) and the statistics."""
        now = self.clock() if now is None else now
        partition_log = cleanable.log
        name = partition_log.dir.name
        config = partition_log.config
        self._info("Beginning cleaning of log %s", name)
        # Below this last-modified time, magic 0/1 tombstones may go: the last clean segment's
        # time minus delete.retention.ms.
        clean_segments = partition_log.segments_between(0, cleanable.first_dirty_offset)
        legacy_delete_horizon_ms = clean_segments[-1].last_modified - config.delete_retention_ms if clean_segments else 0
        stats = CleanerStats()

        self._info("Building offset map for %s...", name)
        self.build_offset_map(partition_log, cleanable.first_dirty_offset, cleanable.first_uncleanable_offset, self.offset_map, stats)
        end_offset = self.offset_map.latest_offset + 1
        stats.index_done()

        below_uncleanable = partition_log.segments_between(0, cleanable.first_uncleanable_offset)
        cleanable_horizon_ms = below_uncleanable[-1].last_modified if below_uncleanable else 0
        self._info(
            "Cleaning log %s (cleaning prior to %s, discarding tombstones prior to upper bound deletion horizon %s)...",
            name, _java_date(cleanable_horizon_ms), _java_date(legacy_delete_horizon_ms),
        )
        transactions = CleanedTransactionMetadata()
        groups = self.group_segments_by_size(
            partition_log, partition_log.segments_between(0, end_offset), config.segment_bytes, config.segment_index_bytes, cleanable.first_uncleanable_offset
        )
        for group in groups:
            self.clean_segments(partition_log, group, self.offset_map, now, stats, transactions, legacy_delete_horizon_ms)
        stats.buffer_utilization = self.offset_map.utilization
        stats.all_done()
        return end_offset, stats

    def clean_segments(
        self,
        partition_log: Log,
        segments: Sequence[LogSegment],
        offset_map: OffsetMap,
        now: int,
        stats: CleanerStats,
        transactions: CleanedTransactionMetadata,
        legacy_delete_horizon_ms: int,
    ) -> None:
        """Recopy a group of segments into one ``.cleaned`` segment and swap it in."""
        name = partition_log.dir.name
        config = partition_log.config
        old_sizes = [s.size for s in segments]
        cleaned = _new_cleaned_segment(partition_log, segments[0].base_offset)
        retained_aborts: list[AbortedTxn] = []
        transactions.cleaned_index = retained_aborts
        swapping = False
        try:
            last_records = partition_log.last_records_of_active_producers()
            for i, segment in enumerate(segments):
                if i + 1 < len(segments):
                    upper_bound = segments[i + 1].base_offset
                else:
                    with partition_log.lock:
                        upper_bound = segment.read_next_offset()
                transactions.add_aborted_transactions(partition_log.collect_aborted_transactions(segment.base_offset, upper_bound))
                last_modified = segment.last_modified
                retain_legacy_deletes = last_modified > legacy_delete_horizon_ms
                self._info(
                    "Cleaning %s in log %s into %d with an upper bound deletion horizon %d computed from the segment last modified time of %d,%s deletes.",
                    segment, name, cleaned.base_offset, legacy_delete_horizon_ms, last_modified, "retaining" if retain_legacy_deletes else "discarding",
                )
                self.clean_into(
                    partition_log, segment, cleaned, offset_map, retain_legacy_deletes, config.delete_retention_ms,
                    config.max_message_bytes, transactions, last_records, stats, now,
                )
            if retained_aborts:
                with open(cleaned.txn_index_path, "ab") as txn_index:
                    for txn in retained_aborts:
                        txn_index.write(txn.encode())
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            # The cleaned segment keeps the age of the segments it replaces.
            cleaned.set_last_modified(segments[-1].last_modified)
            self._step("cleaned")
            self._info("Swapping in cleaned segment %s for segment(s) %s in log %s", cleaned, list(segments), partition_log)
            swapping = True
            if not partition_log.replace_segments([cleaned], list(segments), on_step=self.step_hook, old_sizes=old_sizes):
                swapping = False
                raise LogCleaningAbortedError(f"The segments of {name} being cleaned changed meanwhile; the cleaning is aborted")
        except LogCleaningAbortedError:
            if not swapping:
                cleaned.delete()
            raise
        except OSError:
            # The disk refused the cleaner's output (a full disk): the log is untouched, and the
            # .cleaned files go at once, giving their space back.
            if not swapping:
                cleaned.close_handlers()
                cleaned.delete()
            raise
        except BaseException:
            # The files stay as they are for the next start to sort out, as after a crash.
            if not swapping:
                cleaned.close_handlers()
            raise

    def _step(self, step: str) -> None:
        if self.step_hook is not None:
            self.step_hook(step)

    # -- recopying ---------------------------------------------------------------------------------

    def clean_into(
        self,
        partition_log: Log,
        source: LogSegment,
        dest: LogSegment,
        offset_map: OffsetMap,
        retain_legacy_deletes: bool,
        delete_retention_ms: int,
        max_message_size: int,
        transactions: CleanedTransactionMetadata,
        last_records: dict[int, LastRecord],
        stats: CleanerStats,
        now: int,
    ) -> None:
        """Copy the records of ``source`` that are to be retained into ``dest``, chunk by chunk."""
        partition = (partition_log.topic, partition_log.partition)
        records = source.log
        size = records.size
        read_size = self.io_buffer_size
        position = 0
        while position < size:
            self.check_done(partition)
            chunk = records.read(position, read_size)
            self.throttler.maybe_throttle(len(chunk))
            out = _ChunkOutput()
            consumed = 0
            for batch in iter_batches(chunk):
                consumed += batch.size_in_bytes
                self._filter_batch(batch, out, offset_map, retain_legacy_deletes, delete_retention_ms, transactions, last_records, stats, now)
            position += consumed
            if out.parts:
                data = b"".join(out.parts)
                dest.append(out.max_offset, out.max_timestamp, out.offset_of_max_timestamp, data)
                self.throttler.maybe_throttle(len(data))
            if consumed == 0:
                read_size = self._grown_buffer(records.path, chunk, position, size - position, max_message_size)
            elif read_size != self.io_buffer_size:
                read_size = self.io_buffer_size

    def _grown_buffer(self, path: Path, chunk: bytes, position: int, bytes_left: int, max_message_size: int) -> int:
        """A read size that holds the next batch, which did not fit in the last read."""
        if len(chunk) < 17:
            raise CorruptRecordError(f"Log segment {path} may be corrupt: {bytes_left} bytes left at position {position} hold no batch header", position)
        _, next_size, _ = peek_batch_header(chunk, 0)
        check_batch_size(next_size - LOG_OVERHEAD, position)
        if next_size > bytes_left:
            raise CorruptRecordError(
                f"Log segment may be corrupt, batch size {next_size} > {bytes_left} bytes left in segment for log segment {path} at position {position}", position
            )
        self._info("Growing cleaner I/O buffers from %d bytes to %d bytes.", len(chunk), next_size)
        return next_size

    def _filter_batch(
        self,
        batch: RecordBatch | LegacyBatch,
        out: _ChunkOutput,
        offset_map: OffsetMap,
        retain_legacy_deletes: bool,
        delete_retention_ms: int,
        transactions: CleanedTransactionMetadata,
        last_records: dict[int, LastRecord],
        stats: CleanerStats,
        now: int,
    ) -> None:
        """Kafka's RecordFilter over one batch: decide the batch's retention, then each record's."""
        batch.validate()
        size = batch.size_in_bytes
        stats.bytes_read += size
        if batch.magic < 2:
            self._filter_legacy_batch(batch, out, offset_map, retain_legacy_deletes, stats)
            return
        is_control = batch.is_control
        can_discard = transactions.on_control_batch_read(batch) if is_control else transactions.on_batch_read(batch)
        horizon = batch.delete_horizon_ms
        discard_records = can_discard and horizon is not None and horizon <= now if is_control else can_discard
        retention = _Retention.DELETE_EMPTY
        producer_id = batch.producer_id
        if producer_id >= 0 and _is_last_batch_of_producer(batch, last_records.get(producer_id)):
            retention = _Retention.RETAIN_EMPTY
        elif discard_records:
            retention = _Retention.DELETE
        if retention is _Retention.DELETE:
            return
        marker_for_empty_txn = can_discard and is_control

        fields = batch.record_fields()
        stats.messages_read += len(fields)
        base_offset = batch.base_offset
        retained = []
        contains_tombstones = False
        if not discard_records:
            latest = offset_map.latest_offset
            get = offset_map.get
            retain_deletes = horizon is None or now < horizon
            for item in fields:
                offset_delta, _, key, value, _ = item
                if not is_control:
                    offset = base_offset + offset_delta
                    if offset <= latest:
                        if key is None:
                            stats.invalid_messages_read += 1
                            continue
                        if offset < get(key) or (value is None and not retain_deletes):
                            continue
                if value is None:
                    contains_tombstones = True
                retained.append(item)

        if retained:
            need_horizon = (contains_tombstones or marker_for_empty_txn) and horizon is None
            if len(retained) == len(fields) and not need_horizon:
                out.add(memoryview(batch.buffer)[batch.position : batch.position + size], batch.last_offset, batch.max_timestamp, batch.last_offset)
                stats.messages_written += len(retained)
                stats.bytes_written += size
                return
            new_horizon = now + delete_retention_ms if need_horizon else horizon
            rebuilt = _rebuild_batch(batch, retained, new_horizon)
            max_retained_offset = base_offset + retained[-1][0]
            out.add(rebuilt, max_retained_offset, RecordBatch(rebuilt).max_timestamp, batch.last_offset)
            stats.messages_written += len(retained)
            stats.bytes_written += len(rebuilt)
        elif retention is _Retention.RETAIN_EMPTY:
            empty = _empty_batch(batch)
            out.add(empty, batch.last_offset, batch.max_timestamp, batch.last_offset)
            stats.bytes_written += len(empty)

    def _filter_legacy_batch(
        self, batch: LegacyBatch, out: _ChunkOutput, offset_map: OffsetMap, retain_legacy_deletes: bool, stats: CleanerStats
    ) -> None:
        """A magic 0/1 message or compressed wrapper: kept whole when any record in it stays.

        Kafka rewrites a wrapper some of whose records go; kcli writes no magic 0/1 data and keeps
        such a wrapper as it is (its obsolete records stay readable, nothing is lost).
        """
        records = batch.records()
        stats.messages_read += len(records)
        latest = offset_map.latest_offset
        kept = 0
        for record in records:
            if record.offset > latest:
                kept += 1
            elif record.key is None:
                stats.invalid_messages_read += 1
            elif record.offset >= offset_map.get(record.key) and (record.value is not None or retain_legacy_deletes):
                kept += 1
        if kept:
            size = batch.size_in_bytes
            out.add(memoryview(batch.buffer)[batch.position : batch.position + size], batch.last_offset, batch.max_timestamp, batch.last_offset)
            stats.messages_written += len(records)
            stats.bytes_written += size

    # -- grouping ----------------------------------------------------------------------------------

    def group_segments_by_size(
        self, partition_log: Log, segments: Sequence[LogSegment], max_size: int, max_index_size: int, first_uncleanable_offset: int
    ) -> list[list[LogSegment]]:
        """Consecutive segments grouped so that each group's log bytes fit ``max_size``, its index
        bytes ``max_index_size``, and its offsets the index's 32-bit relative offsets (Kafka's
        groupSegmentsBySize)."""
        with partition_log.lock:
            sizes = [(s.size, s.offset_index.entries * _OFFSET_INDEX_ENTRY, s.time_index.entries * _TIME_INDEX_ENTRY) for s in segments]
        groups: list[list[LogSegment]] = []
        i = 0
        n = len(segments)
        while i < n:
            group = [segments[i]]
            log_size, index_size, time_index_size = sizes[i]
            i += 1
            while i < n:
                seg_size, seg_index, seg_time_index = sizes[i]
                # The last offset the next segment may hold: the base of the one after it, less one.
                last_offset = segments[i + 1].base_offset - 1 if i + 1 < n else first_uncleanable_offset - 1
                if (
                    log_size + seg_size <= max_size
                    and index_size + seg_index <= max_index_size
                    and time_index_size + seg_time_index <= max_index_size
                    and (seg_size == 0 or last_offset - group[-1].base_offset <= _INT32_MAX)
                ):
                    group.append(segments[i])
                    log_size += seg_size
                    index_size += seg_index
                    time_index_size += seg_time_index
                    i += 1
                else:
                    break
            groups.append(group)
        return groups

    # -- the offset map ----------------------------------------------------------------------------

    def build_offset_map(self, partition_log: Log, start: int, end: int, offset_map: OffsetMap, stats: CleanerStats) -> None:
        """Map the keys of [start, end) to their last offsets, stopping where the map is full."""
        offset_map.clear()
        dirty = partition_log.segments_between(start, end)
        name = partition_log.dir.name
        self._info("Building offset map for log %s for %d segments in offset range [%d, %d).", name, len(dirty), start, end)
        transactions = CleanedTransactionMetadata()
        transactions.add_aborted_transactions(partition_log.collect_aborted_transactions(start, end))
        for i, segment in enumerate(dirty):
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            if self._build_offset_map_for_segment(partition_log, segment, offset_map, start, next_start, transactions, stats):
                log.debug("Offset map is full, %d segments fully mapped, segment with base offset %d is partially mapped", i, segment.base_offset)
                break
        self._info("Offset map for log %s complete.", name)

    def _build_offset_map_for_segment(
        self,
        partition_log: Log,
        segment: LogSegment,
        offset_map: OffsetMap,
        start_offset: int,
        next_segment_start_offset: int,
        transactions: CleanedTransactionMetadata,
        stats: CleanerStats,
    ) -> bool:
        """Add the segment's keys from ``start_offset`` on; True when the map filled up."""
        partition = (partition_log.topic, partition_log.partition)
        with partition_log.lock:
            position = segment.offset_index.lookup(start_offset).position
        max_desired_size = int(offset_map.slots * self.dedupe_buffer_load_factor)
        records = segment.log
        read_size = self.io_buffer_size
        while position < records.size:
            self.check_done(partition)
            chunk = records.read(position, read_size)
            self.throttler.maybe_throttle(len(chunk))
            consumed = 0
            for batch in iter_batches(chunk):
                consumed += batch.size_in_bytes
                if batch.magic >= 2 and batch.is_control:
                    transactions.on_control_batch_read(batch)
                    stats.map_messages_read += 1
                elif transactions.on_batch_read(batch):
                    stats.map_messages_read += batch.record_count
                elif batch.magic >= 2:
                    base_offset = batch.base_offset
                    for offset_delta, _, key, _, _ in batch.record_fields():
                        offset = base_offset + offset_delta
                        if key is not None and offset >= start_offset:
                            if len(offset_map) >= max_desired_size:
                                return True
                            offset_map.put(key, offset)
                        stats.map_messages_read += 1
                else:
                    for record in batch.records():
                        if record.key is not None and record.offset >= start_offset:
                            if len(offset_map) >= max_desired_size:
                                return True
                            offset_map.put(record.key, record.offset)
                        stats.map_messages_read += 1
                if batch.last_offset >= start_offset:
                    offset_map.update_latest_offset(batch.last_offset)
            position += consumed
            stats.map_bytes_read += consumed
            if consumed == 0:
                read_size = self._grown_buffer(records.path, chunk, position, records.size - position, self.max_io_buffer_size)
            elif read_size != self.io_buffer_size:
                read_size = self.io_buffer_size
        # Offsets may have gaps: the segment covers everything up to the next one.
        offset_map.update_latest_offset(next_segment_start_offset - 1)
        return False


def _is_last_batch_of_producer(batch: RecordBatch, last: LastRecord | None) -> bool:
    """The batch holds an active producer's last sequence, or is the marker with its last epoch."""
    if last is None:
        return False
    if last.last_data_offset is not None:
        return batch.last_offset == last.last_data_offset
    return batch.is_control and batch.producer_epoch == last.producer_epoch


def _rebuild_batch(batch: RecordBatch, retained: list, delete_horizon_ms: int | None) -> bytes:
    """The batch with only ``retained`` records: same magic, codec, timestamp type, producer
    fields, partition leader epoch and last offset; timestamps re-based on the delete horizon."""
    base_timestamp = batch.base_timestamp
    log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    append_time = batch.max_timestamp
    records = [
        NewRecord(key, value, append_time if log_append else base_timestamp + ts_delta, headers, offset_delta)
        for offset_delta, ts_delta, key, value, headers in retained
    ]
    return build_batch(
        records,
        base_offset=batch.base_offset,
        compression=batch.compression,
        timestamp_type=batch.timestamp_type,
        log_append_time=append_time if log_append else None,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        partition_leader_epoch=batch.partition_leader_epoch,
        transactional=batch.is_transactional,
        control=batch.is_control,
        delete_horizon_ms=delete_horizon_ms,
        last_offset_delta=batch.last_offset_delta,
    )


def _new_cleaned_segment(partition_log: Log, base_offset: int) -> LogSegment:
    """An empty ``.cleaned`` segment (a stale one from an earlier attempt is removed first)."""
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        (partition_log.dir / f"{base_offset:020d}{suffix}{CLEANED_FILE_SUFFIX}").unlink(missing_ok=True)
    return LogSegment.open_for_config(partition_log.dir, base_offset, partition_log.config, suffix=CLEANED_FILE_SUFFIX)


# -- the threads ----------------------------------------------------------------------------------


class LogCleaner:
    """The cleaner threads of a broker and their shared state (Kafka's LogCleaner).

    ``logs`` returns the logs currently open (the log manager's ``all_logs``).
    """

    def __init__(
        self,
        config: CleanerConfig,
        log_dirs: Iterable[Path | str],
        logs: Callable[[], Iterable[Log]],
        *,
        clock: Callable[[], int] = now_ms,
        step_hook: StepHook | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.step_hook = step_hook
        self.manager = LogCleanerManager(log_dirs, logs)
        self.throttler = Throttler(config.max_io_bytes_per_second)
        self.threads: list[CleanerThread] = []

    def startup(self) -> None:
        log.info("Starting the log cleaner")
        for i in range(self.config.num_threads):
            thread = CleanerThread(self, i)
            self.threads.append(thread)
            thread.start()

    def shutdown(self, timeout: float = 30.0) -> None:
        """Stop every thread: each aborts the cleaning under way at its next check. Waits at most
        ``timeout`` seconds in all."""
        log.info("Shutting down the log cleaner.")
        for thread in self.threads:
            thread.initiate_shutdown()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning("Log cleaner thread %d did not stop within %.1f s", thread.cleaner.id, timeout)
        self.threads.clear()

    # -- for the log manager -----------------------------------------------------------------------

    def abort_cleaning(self, partition: TopicPartition) -> None:
        self.manager.abort_cleaning(partition)

    def abort_and_pause_cleaning(self, partition: TopicPartition) -> None:
        self.manager.abort_and_pause_cleaning(partition)

    def resume_cleaning(self, partitions: Iterable[TopicPartition]) -> None:
        self.manager.resume_cleaning(partitions)

    def update_checkpoints(self, log_dir: Path, remove: TopicPartition | None = None) -> None:
        self.manager.update_checkpoints(log_dir, remove=remove)

    def maybe_truncate_checkpoint(self, log_dir: Path, partition: TopicPartition, offset: int) -> None:
        self.manager.maybe_truncate_checkpoint(log_dir, partition, offset)

    def pause_cleaning_for_non_compacted_partitions(self) -> list[Log]:
        return self.manager.pause_cleaning_for_non_compacted_partitions()

    def await_cleaned(self, partition: TopicPartition, offset: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until the partition's checkpoint reaches ``offset``."""
        deadline = time.monotonic() + timeout
        while True:
            if self.manager.all_cleaner_checkpoints().get(partition, -1) >= offset:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(0.05, remaining))

    @property
    def dead_thread_count(self) -> int:
        return sum(1 for t in self.threads if t.failed)


class _ThreadShutdownError(LogCleaningAbortedError):
    """The cleaner thread is stopping; the cleaning under way is aborted."""


class CleanerThread(threading.Thread):
    """Cleans the dirtiest log again and again, sleeping ``log.cleaner.backoff.ms`` when none is."""

    def __init__(self, owner: LogCleaner, thread_id: int) -> None:
        super().__init__(name=f"kafka-log-cleaner-thread-{thread_id}", daemon=True)
        config = owner.config
        self.owner = owner
        self.manager = owner.manager
        self._running = True
        self._wake = threading.Event()
        self.failed = False
        self.last_stats: CleanerStats | None = None
        self.last_pre_clean_stats = PreCleanStats()
        threads = max(config.num_threads, 1)
        self.cleaner = Cleaner(
            thread_id,
            OffsetMap(min(config.dedupe_buffer_size // threads, _INT32_MAX)),
            config.io_buffer_size // threads // 2,
            config.max_message_size,
            config.dedupe_buffer_load_factor,
            owner.throttler,
            clock=owner.clock,
            check_done=self._check_done,
            step_hook=owner.step_hook,
        )

    def initiate_shutdown(self) -> None:
        self._running = False
        self._wake.set()

    def _check_done(self, partition: TopicPartition) -> None:
        if not self._running:
            raise _ThreadShutdownError("the log cleaner is shutting down")
        self.manager.check_cleaning_aborted(partition)

    def run(self) -> None:
        backoff = self.owner.config.backoff_ms / 1000
        while self._running:
            try:
                cleaned = self._try_clean_filthiest_log()
            except _ThreadShutdownError:
                break
            except Exception:
                log.exception("Cleaner %d: unexpected error", self.cleaner.id)
                cleaned = False
            if not self._running:
                break
            if not cleaned:
                self._wake.wait(backoff)
            self.manager.maintain_uncleanable_partitions()

    def _try_clean_filthiest_log(self) -> bool:
        try:
            return self._clean_filthiest_log()
        except LogCleaningError as exc:
            # A disk error is one line (its cause says it all); anything else keeps its traceback.
            disk_error = isinstance(exc.__cause__, (OSError, KafkaStorageError))
            log.warning(
                "Unexpected exception thrown when cleaning log %s%s. Marking its partition (%s) as uncleanable",
                exc.log, f": {exc.__cause__}" if disk_error else "", exc.log.dir.name, exc_info=None if disk_error else exc,
            )
            self.manager.mark_partition_uncleanable(exc.log.dir.parent, (exc.log.topic, exc.log.partition))
            return False

    def _clean_filthiest_log(self) -> bool:
        pre_clean_stats = PreCleanStats()
        cleanable = self.manager.grab_filthiest_compacted_log(self.owner.clock(), pre_clean_stats)
        cleaned = False
        if cleanable is not None:
            self.last_pre_clean_stats = pre_clean_stats
            try:
                self._clean_log(cleanable)
            except LogCleaningAbortedError:
                raise
            except Exception as exc:
                raise LogCleaningError(cleanable.log, str(exc)) from exc
            cleaned = True
        deletable = self.manager.deletable_logs()
        try:
            for partition_log in deletable:
                try:
                    partition_log.delete_old_segments()
                except Exception as exc:
                    raise LogCleaningError(partition_log, str(exc)) from exc
        finally:
            self.manager.done_deleting([(l.topic, l.partition) for l in deletable])
        return cleaned

    def _clean_log(self, cleanable: LogToClean) -> None:
        start_offset = cleanable.first_dirty_offset
        end_offset = start_offset
        try:
            end_offset, stats = self.cleaner.clean(cleanable)
            self._record_stats(cleanable.log.dir.name, start_offset, end_offset, stats)
        except _ThreadShutdownError:
            raise
        except LogCleaningAbortedError:
            pass
        finally:
            self.manager.done_cleaning(cleanable.topic_partition, cleanable.log.dir.parent, end_offset)

    def _record_stats(self, name: str, start: int, end: int, stats: CleanerStats) -> None:
        self.last_stats = stats

        def mb(n: float) -> float:
            return n / (1024 * 1024)

        def per_sec(n: float, secs: float) -> float:
            return n / secs if secs > 0 else 0.0

        def share(part: float, whole: float) -> float:
            return 100 * part / whole if whole > 0 else 0.0

        elapsed = stats.elapsed_secs
        index_secs = stats.elapsed_index_secs
        clean_secs = elapsed - index_secs
        read, written = stats.bytes_read, stats.bytes_written
        log.info(
            "\n\tLog cleaner thread %d cleaned log %s (dirty section = [%d, %d])\n"
            "\t%s MB of log processed in %s seconds (%s MB/sec).\n"
            "\tIndexed %s MB in %.1f seconds (%s Mb/sec, %.1f%% of total time)\n"
            "\tBuffer utilization: %.1f%%\n"
            "\tCleaned %s MB in %.1f seconds (%s Mb/sec, %.1f%% of total time)\n"
            "\tStart size: %s MB (%s messages)\n"
            "\tEnd size: %s MB (%s messages)\n"
            "\t%.1f%% size reduction (%.1f%% fewer messages)\n",
            self.cleaner.id, name, start, end,
            f"{mb(read):,.1f}", f"{elapsed:,.1f}", f"{mb(per_sec(read, elapsed)):,.1f}",
            f"{mb(stats.map_bytes_read):,.1f}", index_secs, f"{mb(per_sec(stats.map_bytes_read, index_secs)):,.1f}", share(index_secs, elapsed),
            100 * stats.buffer_utilization,
            f"{mb(read):,.1f}", clean_secs, f"{mb(per_sec(read, clean_secs)):,.1f}", share(clean_secs, elapsed),
            f"{mb(read):,.1f}", f"{stats.messages_read:,}",
            f"{mb(written):,.1f}", f"{stats.messages_written:,}",
            100.0 * (1.0 - written / read) if read else 0.0,
            100.0 * (1.0 - stats.messages_written / stats.messages_read) if stats.messages_read else 0.0,
        )
        pre = self.last_pre_clean_stats
        if pre.delayed_partitions > 0:
            log.info("\tCleanable partitions: %d, Delayed partitions: %d, max delay: %d", pre.cleanable_partitions, pre.delayed_partitions, pre.max_compaction_delay_ms)
        if stats.invalid_messages_read > 0:
            log.warning("\tFound %d invalid messages during compaction.", stats.invalid_messages_read)
