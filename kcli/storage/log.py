"""A partition's log: its segments, offsets, retention, flushing and leader epochs (Kafka's UnifiedLog).

The directory is ``<topic>-<partition>``. Offsets the log keeps:

- log start offset: the first offset a reader may ask for (moved by retention and DeleteRecords);
- log end offset (LEO): the offset the next appended record gets;
- high watermark: the end of what is replicated; retention never deletes past it;
- recovery point: everything below it is flushed to disk, so start-up recovery begins there.

Appends keep the produced bytes: as a leader, each batch is validated (``log_validator``: frame,
CRC-32C, header, record framing and the topic's record rules) and its base offset and partition
leader epoch are written into the buffer in place; the same bytes go to the active segment, unless
the topic's ``compression.type`` makes the batch be rebuilt. Batches with a producer id go through
the producer table (``producer_state``): a client's retry of one of its last five batches is
answered with the original offsets and not written again. A batch the broker built itself
(``records.MemoryRecordsBuilder``, the group coordinator's) is not read again: its builder's facts are
checked against the topic's rules and its offsets patched in. Reads return file ranges of whole
batches.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from kcli.common import uuid_to_string
from kcli.errors import CorruptRecordError, InvalidOffsetError, KafkaStorageError, KcliError, LogDirFailure, OffsetOutOfRangeError
from kcli.storage.checkpoints import PARTITION_METADATA, fsync_path, read_partition_metadata, write_partition_metadata
from kcli.storage.file_records import FileSlice, TimestampAndOffset
from kcli.storage.leader_epoch_cache import LeaderEpochFileCache
from kcli.storage.log_dir_failure import LogDirFailureChannel
from kcli.storage.log_config import LOG_APPEND_TIME, LogConfig
from kcli.storage.log_loader import LogLoader, rebuild_producer_state
from kcli.storage.log_validator import (
    RecordBatchTooLargeError,
    RecordTooLargeError,
    assign_offsets_to_built_batch,
    validate_and_assign_offsets,
)
from kcli.storage.producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ActiveProducer,
    AppendOrigin,
    ProducerAppendInfo,
    ProducerStateManager,
)
from kcli.storage.records import NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, MemoryRecordsBuilder, RecordBatch, read_batch
from kcli.storage.segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    FetchDataInfo,
    LogOffsetMetadata,
    LogSegment,
    now_ms,
)
from kcli.storage import truncated
from kcli.storage.truncated import TruncatedRecords
from kcli.storage.transaction_index import AbortedTxn, append_aborted_txn, read_aborted_txns, truncate_aborted_txns

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4


class InconsistentTopicIdError(KcliError):
    """A log asked to take a topic id other than the one its ``partition.metadata`` holds: the
    topic was deleted and created again while this log stayed (Kafka's INCONSISTENT_TOPIC_ID)."""

    def __init__(self, partition: str, requested: uuid.UUID, stored: uuid.UUID) -> None:
        super().__init__(
            f"Tried to assign topic ID {uuid_to_string(requested)} to log for topic partition {partition}, "
            f"but log already contained topic ID {uuid_to_string(stored)}"
        )


class LastRecord(NamedTuple):
    """What the cleaner keeps for an active producer: the offset of its last data batch (None
    when its last batch was a transaction marker) and its epoch (Kafka's LastRecord)."""

    last_data_offset: int | None
    producer_epoch: int


class LogAppendInfo(NamedTuple):
    """What an append did (Kafka's LogAppendInfo).

    ``offset_of_max_timestamp`` is the last offset of the batch holding the max timestamp (Kafka's
    shallow offset), since finding the exact record would mean decoding the records.
    ``log_append_time`` is -1 unless the topic uses LogAppendTime.

    ``duplicate`` is True when a client resent a batch the log already holds: nothing was written,
    and the offsets (and ``log_append_time``, set to that batch's max timestamp, as Kafka does) are
    those of the batch appended before.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    valid_bytes: int
    shallow_count: int
    record_count: int
    duplicate: bool = False


def parse_topic_partition_name(name: str, directory: Path | None = None) -> tuple[str, int]:
    """``("orders", 3)`` from ``orders-3``, also for ``orders-3.<id>-delete`` and ``-future`` names.

    Anything else is Kafka's error (LocalLog.parseTopicPartitionName), naming ``directory``'s
    full path when it is given, on one line."""
    original = name
    if name.endswith(("-delete", "-future", "-stray")):
        name = name[: name.rindex(".")] if "." in name else ""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        found = directory.resolve() if directory is not None else original
        raise KcliError(
            f"Found directory {found}, '{original}' is not in the form of topic-partition or topic-partition.uniqueId-delete "
            "(if marked for deletion). Kafka's log directories (and children) should only contain Kafka topic data."
        )
    return topic, int(partition)


def log_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def log_delete_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>.<32 hex>-delete``, the topic cut so that the name fits in 255 bytes."""
    suffix = f"-{partition}.{uuid.uuid4().hex}-delete"
    return topic[: min(len(topic), 255 - len(suffix))] + suffix


class Log:
    """One partition's log. Methods take a lock, so the broker may call them from several threads."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        *,
        log_start_offset: int,
        recovery_point: int,
        next_offset: int,
        leader_epoch_cache: LeaderEpochFileCache,
        topic_id: uuid.UUID | None = None,
        producer_state: ProducerStateManager | None = None,
        clock: Callable[[], int] = now_ms,
        failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        self.dir = directory
        self.failure_channel = failure_channel or LogDirFailureChannel()
        self._log_dir = directory.parent  # the log dir holding this partition's directory
        self.topic, self.partition = parse_topic_partition_name(directory.name)
        self.config = config
        self.leader_epoch_cache = leader_epoch_cache
        self._producer_state = producer_state or ProducerStateManager(directory)
        self.topic_id = topic_id
        self._clock = clock
        self._lock = threading.RLock()
        self._segments = segments
        self._base_offsets = [s.base_offset for s in segments]
        self._log_start_offset = log_start_offset
        self._recovery_point = recovery_point
        self._log_end_offset = next_offset
        self._high_watermark = log_start_offset
        self._last_flush_time = clock()
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._last_roll_undo: _RollUndo | None = None
        self._closed = False

    @classmethod
    def open(
        cls,
        directory: Path | str,
        config: LogConfig | None = None,
        *,
        had_clean_shutdown: bool = False,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        topic_id: uuid.UUID | None = None,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        clock: Callable[[], int] = now_ms,
        failure_channel: LogDirFailureChannel | None = None,
    ) -> Log:
        """Open (creating if needed) the log in ``directory``, recovering it unless it was shut down
        cleanly, and rebuild its producer table."""
        directory = Path(directory)
        parse_topic_partition_name(directory.name)
        config = config or LogConfig()
        directory.mkdir(parents=True, exist_ok=True)
        topic_id = _check_topic_id(directory, topic_id)
        cache = LeaderEpochFileCache.for_dir(directory)
        producer_state = ProducerStateManager(directory, producer_id_expiration_ms=producer_id_expiration_ms)
        loader = LogLoader(
            directory,
            config,
            had_clean_shutdown=had_clean_shutdown,
            log_start_offset_checkpoint=log_start_offset,
            recovery_point_checkpoint=recovery_point,
            leader_epoch_cache=cache,
            producer_state=producer_state,
            clock=clock,
        )
        segments, offsets = loader.load()
        return cls(
            directory,
            config,
            segments,
            log_start_offset=offsets.log_start_offset,
            recovery_point=offsets.recovery_point,
            next_offset=offsets.next_offset,
            leader_epoch_cache=cache,
            topic_id=topic_id,
            producer_state=producer_state,
            clock=clock,
            failure_channel=failure_channel,
        )

    # -- disk errors -------------------------------------------------------------------------------

    @property
    def is_offline(self) -> bool:
        """True once an I/O error took this log's dir offline (``log_dir_failure``)."""
        return self.failure_channel.is_offline(self._log_dir)

    def _check_online(self) -> None:
        if self.failure_channel.is_offline(self._log_dir):
            raise KafkaStorageError(
                f"The log dir {self.dir.parent} holding {self.dir.name} is offline: {self.failure_channel.offline_reason(self._log_dir)}"
            )

    @contextlib.contextmanager
    def _disk_errors(self, what: str) -> Iterator[None]:
        """Refuse work on an offline log; an I/O error within leaves the log unsure: its dir goes offline."""
        self._check_online()
        try:
            yield
        except (LogDirFailure, OSError) as exc:
            raise self._dir_failed(what, exc) from None

    def _dir_failed(self, what: str, exc: BaseException) -> KafkaStorageError:
        """Take this log's dir offline after an I/O error that left the log unsure; the error to raise."""
        message = f"{what} {self.dir.name} in dir {self.dir.parent}: {exc}"
        self.failure_channel.maybe_add_offline_log_dir(self._log_dir, message)
        return KafkaStorageError(message)

    # -- offsets -----------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self.update_high_watermark(offset)

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Move the high watermark up to ``offset`` (at most the log end offset), never down
        (Kafka's UnifiedLog.maybeIncrementHighWatermark); True when it moved."""
        with self._lock:
            offset = min(offset, self._log_end_offset)
            if offset <= self._high_watermark:
                return False
            self._high_watermark = offset
            return True

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, kept within [log start offset, log end offset]; returns it."""
        with self._lock:
            self._high_watermark = min(max(offset, self._log_start_offset), self._log_end_offset)
            return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The first offset of a transaction still open, when below the high watermark; else the
        high watermark (Kafka's lastStableOffset)."""
        with self._lock:
            unstable = [e.current_txn_first_offset for e in self._producer_state.producers.values() if e.current_txn_first_offset >= 0]
            first_unstable = min(unstable, default=None)
            if first_unstable is not None and first_unstable < self._high_watermark:
                return first_unstable
            return self._high_watermark

    @property
    def lock(self) -> threading.RLock:
        """The log's lock: the cleaner holds it while it reads segment indexes."""
        return self._lock

    @property
    def last_flush_time(self) -> int:
        return self._last_flush_time

    @property
    def unflushed_messages(self) -> int:
        return self._log_end_offset - self._recovery_point

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def segments_between(self, from_offset: int, to_offset: int) -> list[LogSegment]:
        """The segments from the one holding ``from_offset`` to the last based below ``to_offset``
        (Kafka's logSegments(from, to)); none when the offsets are equal."""
        if to_offset < from_offset:
            raise ValueError(f"Invalid log segment range: requested segments in {self.dir.name} from offset {from_offset} which is greater than limit offset {to_offset}")
        with self._lock:
            if from_offset == to_offset:
                return []
            first = max(0, bisect.bisect_right(self._base_offsets, from_offset) - 1)
            end = bisect.bisect_left(self._base_offsets, to_offset)
            return self._segments[first:end]

    def non_active_segments_from(self, offset: int) -> list[LogSegment]:
        """The segments from the one holding ``offset`` up to, not including, the active one."""
        with self._lock:
            active_base = self._segments[-1].base_offset
            if offset > active_base:
                return []
            return self.segments_between(offset, active_base)

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        with self._lock:
            return self.leader_epoch_cache.end_offset_for(epoch, self._log_end_offset)

    def maybe_assign_epoch_start_offset(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (a leader calls it when elected)."""
        with self._lock:
            self._check_online()
            try:
                self.leader_epoch_cache.assign(epoch, start_offset)
            except OSError as exc:
                raise KafkaStorageError(f"Could not write the leader epoch checkpoint of {self.dir.name} in dir {self.dir.parent}: {exc}") from None

    # -- appending ---------------------------------------------------------------------------------

    def append(
        self,
        records: bytes | bytearray | memoryview | RecordBatch,
        *,
        leader_epoch: int = 0,
        origin: AppendOrigin | str = AppendOrigin.CLIENT,
        assign_offsets: bool = True,
        log_append_time: int | None = None,
    ) -> LogAppendInfo:
        """Append whole batches; as a leader (``assign_offsets``) they get offsets from the LEO.

        ``origin`` is ``client`` (a Produce request: fully validated), ``coordinator`` (offset
        commits, transaction markers: validated, producer epochs checked but not sequences) or
        ``replication``, which is the same as ``assign_offsets=False``: a follower's append, whose
        offsets and epochs are kept; they must be above the log end offset and increasing.

        A writable buffer is patched in place (bytes are copied once). A ``RecordBatch`` whose
        buffer it fills (a produced partition's, ``records.single_batch_header``) is appended
        with that header: it is not read again, and follows the patches. As a leader, each batch gets
        ``leader_epoch`` as its partition leader epoch and, on a LogAppendTime topic, the time
        ``log_append_time`` (now when None). Errors are KcliErrors whose ``error_code`` answers
        the whole append; nothing is written then.

        A ``MemoryRecordsBuilder`` appended as a leader is given its offsets from what its builder knows
        (``log_validator.assign_offsets_to_built_batch``) and is validated only when the topic's
        rules need more than that; everything after validation is the same for every append.
        """
        if type(origin) is not AppendOrigin:
            origin = AppendOrigin(origin)
        if origin == AppendOrigin.REPLICATION:
            assign_offsets = False
        header = None
        if type(records) is RecordBatch:
            header, records = records, records.buffer
        view = memoryview(records)
        if view.readonly:
            view = memoryview(bytearray(view))
            header = None  # it reads the bytes left behind
        elif header is not None and (header.position != 0 or header.size_in_bytes != len(view)):
            header = None
        if len(view) == 0:
            raise CorruptRecordError("an append must hold at least one record batch")
        with self._lock:
            if self._closed:
                raise KcliError(f"{self.dir.name}: the log is closed")
            self._check_online()
            try:
                if assign_offsets:
                    built = records if type(records) is MemoryRecordsBuilder else None
                    info = self._append_as_leader(view, leader_epoch, origin, log_append_time, built, header)
                else:
                    info = self._append_as_follower(view)
            except LogDirFailure as exc:
                raise self._dir_failed("Error while appending records to", exc) from None
            except OSError as exc:
                # Every write step was undone: the log is as it was, and the next append may succeed.
                message = f"Error while appending records to {self.dir.name} in dir {self.dir.parent}: {exc}"
                self.failure_channel.write_refused(self._log_dir, str(exc))
                raise KafkaStorageError(message) from None
            flush_due = self._log_end_offset - self._recovery_point >= self.config.flush_messages
        if not info.duplicate:
            self.failure_channel.write_succeeded(self._log_dir)
            if flush_due:
                self.flush()
        return info

    def _append_as_leader(
        self,
        view: memoryview,
        leader_epoch: int,
        origin: AppendOrigin,
        log_append_time: int | None,
        built: MemoryRecordsBuilder | None = None,
        header: RecordBatch | None = None,
    ) -> LogAppendInfo:
        config = self.config
        now = self._clock()
        append_time = -1
        if config.message_timestamp_type == LOG_APPEND_TIME:
            append_time = now if log_append_time is None else log_append_time
        result = None
        if built is not None:
            result = assign_offsets_to_built_batch(
                built, first_offset=self._log_end_offset, config=config, now=now, origin=origin, leader_epoch=leader_epoch
            )
        if result is None:
            result = validate_and_assign_offsets(
                view,
                first_offset=self._log_end_offset,
                config=config,
                partition=self.dir.name,
                now=now,
                origin=origin,
                leader_epoch=leader_epoch,
                log_append_time=append_time,
                header=header,
            )
        size = len(result.records)
        self._check_segment_size(size)
        duplicate, staged = None, []
        if result.producer_batches:
            duplicate, staged = self._producer_state.analyze(result.producer_batches, origin)
        if duplicate is not None:
            return LogAppendInfo(
                duplicate.first_offset, duplicate.last_offset, result.max_timestamp, result.offset_of_max_timestamp,
                duplicate.timestamp, self._log_start_offset, size, result.shallow_count, result.record_count, duplicate=True,
            )
        epochs = [(leader_epoch, result.first_offset)] if leader_epoch >= 0 else []
        self._write(result.records, result.first_offset, result.last_offset, result.max_timestamp, result.offset_of_max_timestamp, now, epochs)
        self._apply_producer_updates(staged, result.last_offset)
        return LogAppendInfo(
            result.first_offset, result.last_offset, result.max_timestamp, result.offset_of_max_timestamp, append_time,
            self._log_start_offset, size, result.shallow_count, result.record_count,
        )

    def _append_as_follower(self, view: memoryview) -> LogAppendInfo:
        (first_offset, last_offset, max_timestamp, offset_of_max_timestamp, shallow_count, record_count), producer_batches, epochs = (
            self._check_follower_offsets(view)
        )
        size = len(view)
        self._check_segment_size(size)
        staged = []
        if producer_batches:
            _, staged = self._producer_state.analyze(producer_batches, AppendOrigin.REPLICATION)
        self._write(view, first_offset, last_offset, max_timestamp, offset_of_max_timestamp, self._clock(), epochs)
        self._apply_producer_updates(staged, last_offset)
        return LogAppendInfo(first_offset, last_offset, max_timestamp, offset_of_max_timestamp, -1, self._log_start_offset, size, shallow_count, record_count)

    def _check_segment_size(self, size: int) -> None:
        if size > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {size} bytes in append to partition {self.dir.name} which exceeds the maximum configured segment size of {self.config.segment_bytes}."
            )

    def _write(
        self,
        data: bytes | bytearray | memoryview,
        first_offset: int,
        last_offset: int,
        max_timestamp: int,
        offset_of_max_timestamp: int,
        now: int,
        epochs: list[tuple[int, int]],
    ) -> None:
        """Write an append's batches, then the leader epochs they start; all or nothing.

        A step that fails (the roll, the ``.log`` write, an index entry, the epoch checkpoint)
        leaves the files and the log's state as they were before and raises its error; when the
        undoing fails too, LogDirFailure. The log end offset moves only once every step succeeded.
        """
        config = self.config
        segment = self._segments[-1]
        rolled = None
        if segment.should_roll(config.segment_bytes, config.segment_ms, len(data), max_timestamp, last_offset, now):
            previous, segment = segment, self._roll(first_offset)
            rolled = self._last_roll_undo if segment is not previous else None
            self._last_roll_undo = None
        cache = self.leader_epoch_cache
        latest_epoch = cache.latest_epoch
        epoch_entries = cache.entries if any(epoch != latest_epoch for epoch, _ in epochs) else None
        mark = None
        try:
            mark = segment.mark()
            segment.append(last_offset, max_timestamp, offset_of_max_timestamp, data, mark)
            for epoch, start_offset in epochs:
                if cache.latest_epoch != epoch:
                    cache.assign(epoch, start_offset)
        except LogDirFailure:
            raise
        except BaseException as exc:
            try:
                if mark is not None:
                    segment.rollback_to(mark)
                if epoch_entries is not None:
                    cache.restore(epoch_entries)
                if rolled is not None:
                    rolled()
            except LogDirFailure:
                raise
            except OSError as undo_exc:
                raise LogDirFailure(f"Could not undo a failed append ({exc}): {undo_exc}") from undo_exc
            raise
        self._log_end_offset = last_offset + 1

    def _apply_producer_updates(self, staged: list[ProducerAppendInfo], last_offset: int) -> None:
        producer_state = self._producer_state
        for info in staged:
            producer_state.update(info)
        # The table moves with the log even without producers, so snapshots carry the right offset.
        producer_state.update_map_end_offset(last_offset + 1)
        try:
            self._index_aborted_txns(staged)
        except OSError as exc:
            # The markers are in the log already: a .txnindex missing their entries would let
            # read_committed readers see aborted records, so the dir goes offline, as in Kafka.
            raise LogDirFailure(f"Could not write the .txnindex entry of an aborted transaction: {exc}") from exc

    def _index_aborted_txns(self, staged: list[ProducerAppendInfo]) -> None:
        """Write a ``.txnindex`` entry in the active segment for each transaction an ABORT marker of
        this append closed, with the last stable offset as the marker leaves it (Kafka's
        ``lastStableOffset(completedTxn)``: the first offset of another producer's open
        transaction, else the offset after the marker)."""
        aborted = [txn for info in staged for txn in info.completed_txns if txn.is_aborted]
        if not aborted:
            return
        open_firsts = {pid: e.current_txn_first_offset for pid, e in self._producer_state.producers.items() if e.current_txn_first_offset >= 0}
        path = self._segments[-1].txn_index_path
        for txn in aborted:
            others = [first for pid, first in open_firsts.items() if pid != txn.producer_id]
            last_stable = min(others) if others else txn.last_offset + 1
            append_aborted_txn(path, AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, last_stable))

    def _check_follower_offsets(self, view: memoryview) -> tuple[tuple[int, int, int, int, int, int], list[RecordBatch], list[tuple[int, int]]]:
        """Validate each batch and check that its offsets follow the log's.

        Also returns the magic-2 batches that carry a producer id, and the (leader epoch, base
        offset) of each batch, for the write to record new epochs.
        """
        max_message_bytes = self.config.max_message_bytes
        n = len(view)
        first_offset = -1
        last_offset = self._log_end_offset - 1
        max_timestamp = offset_of_max_timestamp = -1
        shallow_count = record_count = 0
        epochs = []
        producer_batches = []
        position = 0
        while position < n:
            batch = read_batch(view, position)
            if batch.magic >= 2 and n - position < RECORD_BATCH_OVERHEAD:
                raise CorruptRecordError(f"record batch at position {position} is shorter than its header", position)
            batch.validate()
            size = batch.size_in_bytes
            if size > max_message_bytes:
                raise RecordTooLargeError(f"The record batch of {size} bytes at position {position} is larger than max.message.bytes ({max_message_bytes})")
            base = batch.base_offset
            if base <= last_offset:
                if first_offset < 0:
                    raise InvalidOffsetError(
                        f"Unexpected offset in append to {self.dir.name}. First offset {base} is less than the next offset {last_offset + 1}. "
                        f"Last offset in append: {batch.last_offset}. Log start offset = {self._log_start_offset}"
                    )
                raise InvalidOffsetError(f"Out of order offsets found in append to {self.dir.name}: {base} follows {last_offset}")
            if first_offset < 0:
                first_offset = base
            last_offset = batch.last_offset
            if batch.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max_timestamp = batch.max_timestamp, last_offset
            if batch.magic >= 2:
                if batch.partition_leader_epoch >= 0:
                    epochs.append((batch.partition_leader_epoch, base))
                if batch.producer_id >= 0:
                    producer_batches.append(batch)
            shallow_count += 1
            record_count += batch.record_count
            position += size
        return (first_offset, last_offset, max_timestamp, offset_of_max_timestamp, shallow_count, record_count), producer_batches, epochs

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches that already carry their offsets and leader epochs."""
        return self.append(records, assign_offsets=False)

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset."""
        with self._lock:
            self._check_online()
            try:
                return self._roll(self._log_end_offset)
            except LogDirFailure as exc:
                raise self._dir_failed("Error while rolling", exc) from None
            except OSError as exc:
                raise KafkaStorageError(f"Error while rolling {self.dir.name} in dir {self.dir.parent}: {exc}") from None

    def _roll(self, expected_next_offset: int) -> LogSegment:
        new_offset = max(expected_next_offset, self._log_end_offset)
        active = self._segments[-1] if self._segments else None
        if active is not None and active.base_offset == new_offset:
            if active.size:
                raise KcliError(f"Trying to roll a new log segment for topic partition {self.dir.name} with start offset {new_offset} while it already exists.")
            # An empty active segment at the same offset is simply kept.
            return active
        if active is not None and new_offset < active.base_offset:
            raise KcliError(
                f"Trying to roll a new log segment for topic partition {self.dir.name} with start offset {new_offset} "
                f"lower than start offset of the active segment {active}"
            )
        # All or nothing: a failed step puts back the active segment as it was (its last time index
        # entry and trimmed indexes undone) and leaves no file of the new segment behind.
        undo = _RollUndo(self, active)
        try:
            if active is not None:
                active.on_become_inactive_segment()
            segment = undo.segment = self._new_segment(new_offset)
            segment.mark()  # creates its indexes: a disk that refuses them fails the roll here
            self._segments.append(segment)
            self._base_offsets.append(new_offset)
            # A snapshot at each segment's base offset: recovering the segment starts from it.
            self._producer_state.update_map_end_offset(new_offset)
            self._producer_state.take_snapshot()
        except BaseException as exc:
            try:
                undo()
            except OSError as undo_exc:
                raise LogDirFailure(f"Could not undo a failed roll ({exc}): {undo_exc}") from undo_exc
            raise
        self._last_roll_undo = undo
        return segment

    def _new_segment(self, base_offset: int) -> LogSegment:
        config = self.config
        paths = [self.dir / f"{base_offset:020d}{suffix}" for suffix in (".log", ".index", ".timeindex", ".txnindex")]
        for stale in paths:
            if stale.exists():
                log.warning("Newly rolled segment file %s already exists; deleting it first", stale.absolute())
                stale.unlink()
        try:
            return LogSegment.open_for_config(self.dir, base_offset, config, clock=self._clock)
        except BaseException:
            for created in paths:
                created.unlink(missing_ok=True)
            raise

    # -- reading -----------------------------------------------------------------------------------

    def read(self, start_offset: int, max_bytes: int, *, min_one_message: bool = True, max_offset: int | None = None) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset``, up to ``max_bytes`` (the first batch
        even when larger, with ``min_one_message``), not past ``max_offset`` (exclusive: the high
        watermark or last stable offset for a consumer), continuing into later segments."""
        with self._lock, self._disk_errors("Error while reading"):
            end_offset = self._log_end_offset
            if start_offset > end_offset:
                raise OffsetOutOfRangeError(
                    f"Received request for offset {start_offset} for partition {self.dir.name}, but we only have log segments upto {end_offset}."
                )
            if start_offset < self._log_start_offset:
                raise OffsetOutOfRangeError(
                    f"Received request for offset {start_offset} for partition {self.dir.name}, "
                    f"but we only have log segments starting from offset: {self._log_start_offset}."
                )
            limit_offset = end_offset if max_offset is None else min(max_offset, end_offset)
            if start_offset >= limit_offset:
                return FetchDataInfo(self._offset_metadata(start_offset), [])
            segments = self._segments
            i = max(0, bisect.bisect_right(self._base_offsets, start_offset) - 1)
            slices: list[FileSlice] = []
            metadata: LogOffsetMetadata | None = None
            first_incomplete = False
            budget = max_bytes
            offset = start_offset
            while i < len(segments):
                segment = segments[i]
                if segment.base_offset >= limit_offset:
                    break
                next_base = self._base_offsets[i + 1] if i + 1 < len(segments) else end_offset
                max_position = segment.size
                if limit_offset < next_base:
                    found = segment.translate_offset(limit_offset)
                    if found is not None:
                        max_position = found.position
                info = segment.read(offset, budget, max_position, min_one_message and not slices)
                if info is not None:
                    if metadata is None:
                        metadata = info.fetch_offset_metadata
                        first_incomplete = info.first_entry_incomplete
                    piece = info.slices[0]
                    if piece.size:
                        slices.append(piece)
                        budget -= piece.size
                    if piece.position + piece.size < max_position or budget <= 0 or max_position < segment.size:
                        break
                i += 1
                offset = next_base
            return FetchDataInfo(metadata or self._offset_metadata(start_offset), slices, first_incomplete)

    def _offset_metadata(self, offset: int) -> LogOffsetMetadata:
        if offset == self._log_end_offset:
            active = self._segments[-1]
            return LogOffsetMetadata(offset, active.base_offset, active.size)
        return LogOffsetMetadata(offset)

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the first offset whose record timestamp is >= ``timestamp``.

        ``EARLIEST_TIMESTAMP`` (-2) and ``LATEST_TIMESTAMP`` (-1) give the log start and end
        offsets, ``MAX_TIMESTAMP`` (-3) the first record holding the largest timestamp.
        """
        with self._lock, self._disk_errors("Error while searching offsets of"):
            cache = self.leader_epoch_cache
            if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
                return TimestampAndOffset(NO_TIMESTAMP, self._log_start_offset, cache.epoch_for_offset(self._log_start_offset))
            if timestamp == LATEST_TIMESTAMP:
                return TimestampAndOffset(NO_TIMESTAMP, self._log_end_offset, cache.latest_epoch)
            if timestamp == MAX_TIMESTAMP:
                best = max(self._segments, key=lambda s: s.max_timestamp_so_far)
                if best.max_timestamp_so_far < 0:
                    return TimestampAndOffset(NO_TIMESTAMP, -1, None)
                offset = best.offset_of_max_timestamp_record()
                if offset is None:
                    return TimestampAndOffset(NO_TIMESTAMP, -1, None)
                return TimestampAndOffset(best.max_timestamp_so_far, offset, cache.epoch_for_offset(offset))
            for segment in self._segments:
                if segment.largest_timestamp >= timestamp:
                    return segment.find_offset_by_timestamp(timestamp, self._log_start_offset)
            return None

    # -- flushing ----------------------------------------------------------------------------------

    def flush(self, offset: int | None = None, now: int | None = None) -> None:
        """Sync every segment holding offsets below ``offset`` (the LEO when None); that moves the
        recovery point to ``offset``."""
        with self._lock:
            offset = self._log_end_offset if offset is None else min(offset, self._log_end_offset)
            if offset <= self._recovery_point:
                return
            first = max(0, bisect.bisect_right(self._base_offsets, self._recovery_point) - 1)
            to_flush = [s for s in self._segments[first:] if s.base_offset < offset]
        # Syncing can take long: appends go on meanwhile, and the recovery point moves after.
        # A failed sync leaves unknown what reached the disk: the dir goes offline (as in Kafka).
        self._check_online()
        try:
            for segment in to_flush:
                segment.flush()
        except OSError as exc:
            raise self._dir_failed("Error while flushing log for", exc) from None
        with self._lock:
            if offset > self._recovery_point:
                self._recovery_point = offset
                self._last_flush_time = self._clock() if now is None else now

    def maybe_flush(self, now: int | None = None) -> bool:
        """What the broker's flusher calls: flush when ``flush.ms`` passed, or sync segments that
        were rolled since the last flush. True when something was flushed."""
        now = self._clock() if now is None else now
        with self._lock:
            if self.is_offline:
                return False
            rolled_up_to = self._segments[-1].base_offset
            if self._log_end_offset > self._recovery_point and now - self._last_flush_time >= self.config.flush_ms:
                target = self._log_end_offset
            elif rolled_up_to > self._recovery_point:
                target = rolled_up_to
            else:
                return False
        self.flush(target, now)
        return True

    # -- truncation --------------------------------------------------------------------------------

    def truncate_to(self, target_offset: int, *, keep_aside_epoch: int | None = None) -> TruncatedRecords | None:
        """Remove every offset >= ``target_offset``, and the leader epochs starting there. Returns
        what was removed, None when the log already ends there (its epochs starting at its end
        are removed even so). With ``keep_aside_epoch`` (a follower's leader epoch) the removed
        batches are first kept aside in ``truncated-<epoch>-<offset>/`` (``storage/truncated.py``),
        never loaded as part of the log; that failing, they go all the same, and the answer says why."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.dir.name} to a negative offset ({target_offset}).")
        with self._lock, self._disk_errors("Error while truncating"):
            if target_offset >= self._log_end_offset:
                # As Kafka's: the epoch cache is cut at the log end all the same, since a broker
                # that led (assigning its epoch a start offset) without appending leaves an entry
                # there that a follower must not keep reporting as its last fetched epoch.
                self.leader_epoch_cache.truncate_from_end(self._log_end_offset)
                return None
            fully = self._segments[0].base_offset > target_offset
            if fully:
                pieces = [(segment.log, 0) for segment in self._segments]
            else:
                keep = bisect.bisect_right(self._base_offsets, target_offset)
                cut = self._segments[keep - 1].translate_offset(target_offset)
                pieces = [(self._segments[keep - 1].log, cut.position)] if cut is not None else []
                pieces += [(segment.log, 0) for segment in self._segments[keep:]]
            removed = self._removed_records(target_offset, pieces, keep_aside_epoch)
            if fully:
                self.truncate_fully_and_start_at(target_offset)
                return removed
            doomed = self._segments[keep:]
            del self._segments[keep:]
            del self._base_offsets[keep:]
            self._delete_segments_async(doomed)
            self._segments[-1].truncate_to(target_offset)
            truncate_aborted_txns(self._segments[-1].txn_index_path, target_offset)
            self._log_end_offset = target_offset
            self._recovery_point = min(self._recovery_point, target_offset)
            self.leader_epoch_cache.truncate_from_end(target_offset)
            self._log_start_offset = min(target_offset, self._log_start_offset)
            self._high_watermark = min(self._high_watermark, target_offset)
            self._rebuild_producer_state(target_offset)
            return removed

    def _removed_records(self, target_offset: int, pieces, keep_aside_epoch: int | None) -> TruncatedRecords:
        """What a truncation to ``target_offset`` removes (the batches of ``pieces``), kept aside
        first when ``keep_aside_epoch`` is given."""
        first, last, batches, records, epochs = truncated.summarize(pieces)
        removed = TruncatedRecords(target_offset, max(last, self._log_end_offset - 1), batches, records, epochs)
        if keep_aside_epoch is None or batches == 0:
            return removed
        try:
            kept_in = truncated.keep_aside(self.dir, keep_aside_epoch, target_offset, max(first, 0), pieces)
        except OSError as exc:
            return removed._replace(keep_error=str(exc))
        return removed._replace(kept_in=kept_in)

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete everything and start an empty log at ``new_offset``."""
        with self._lock, self._disk_errors("Error while truncating"):
            doomed = self._segments[:]
            self._segments.clear()
            self._base_offsets.clear()
            self._delete_segments_async(doomed)
            self._segments.append(self._new_segment(new_offset))
            self._base_offsets.append(new_offset)
            self._log_end_offset = new_offset
            self._log_start_offset = new_offset
            self._recovery_point = new_offset
            self._high_watermark = new_offset
            self.leader_epoch_cache.clear_and_flush()
            self._producer_state.truncate_fully_and_start_at(new_offset)
            self._rebuild_producer_state(new_offset)

    def _rebuild_producer_state(self, last_offset: int) -> None:
        rebuild_producer_state(
            self._producer_state, self._segments, self._log_start_offset, last_offset, reload_from_clean_shutdown=False, now=self._clock()
        )

    # -- retention ---------------------------------------------------------------------------------

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """DeleteRecords: move the log start offset up to at most the high watermark."""
        with self._lock:
            self._check_online()
            if new_log_start_offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {new_log_start_offset} of partition {self.dir.name} "
                    f"since it is larger than the high watermark {self._high_watermark}"
                )
            try:
                return self._increment_log_start_offset(new_log_start_offset)
            except OSError as exc:
                raise KafkaStorageError(f"Could not move the log start offset of {self.dir.name} in dir {self.dir.parent}: {exc}") from None

    def _increment_log_start_offset(self, offset: int) -> bool:
        if offset <= self._log_start_offset:
            return False
        # The epoch checkpoint first: when the disk refuses it, nothing has moved.
        self.leader_epoch_cache.truncate_from_start(offset)
        self._log_start_offset = offset
        if self._high_watermark < offset:
            self._high_watermark = offset
        if self._recovery_point < offset:
            self._recovery_point = offset
        self._producer_state.on_log_start_offset_incremented(offset)
        log.info("Incremented log start offset of %s to %d", self.dir.name, offset)
        return True

    def delete_old_segments(self, now: int | None = None) -> int:
        """Delete segments that fall below the log start offset and, for ``cleanup.policy=delete``,
        those past ``retention.bytes`` or older than ``retention.ms``; returns how many."""
        now = self._clock() if now is None else now
        with self._lock, self._disk_errors("Error while deleting segments of"):
            deleted = self._delete_log_start_offset_breached_segments()
            if self.config.delete:
                deleted += self._delete_retention_size_breached_segments()
                deleted += self._delete_retention_ms_breached_segments(now)
            return deleted

    def _delete_log_start_offset_breached_segments(self) -> int:
        return self._delete_old_segments(lambda segment, next_base: next_base is not None and next_base <= self._log_start_offset)

    def _delete_retention_size_breached_segments(self) -> int:
        retention_bytes = self.config.retention_bytes
        size = self.size
        if retention_bytes < 0 or size < retention_bytes:
            return 0
        excess = size - retention_bytes

        def breached(segment: LogSegment, next_base: int | None) -> bool:
            nonlocal excess
            if excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        return self._delete_old_segments(breached)

    def _delete_retention_ms_breached_segments(self, now: int) -> int:
        retention_ms = self.config.retention_ms
        if retention_ms < 0:
            return 0
        return self._delete_old_segments(lambda segment, next_base: now - segment.largest_timestamp > retention_ms)

    def _delete_old_segments(self, predicate: Callable[[LogSegment, int | None], bool]) -> int:
        segments = self._segments
        deletable: list[LogSegment] = []
        for i, segment in enumerate(segments):
            next_base = self._base_offsets[i + 1] if i + 1 < len(segments) else None
            upper_bound = self._log_end_offset if next_base is None else next_base
            if next_base is None and segment.size == 0:
                break
            # Nothing at or past the high watermark is deleted, so the start offset never passes it.
            if self._high_watermark < upper_bound or not predicate(segment, next_base):
                break
            deletable.append(segment)
        if not deletable:
            return 0
        if len(deletable) == len(segments):
            self._roll(self._log_end_offset)
        count = len(deletable)
        del self._segments[:count]
        del self._base_offsets[:count]
        self._delete_segments_async(deletable)
        self._increment_log_start_offset(self._segments[0].base_offset)
        return count

    def _delete_segments_async(self, segments: list[LogSegment], keep_snapshots_at: frozenset[int] = frozenset(), on_each: Callable[[], None] | None = None) -> None:
        """Rename to ``.deleted`` now, remove after ``file.delete.delay.ms``: a read or sendfile
        still using the files finishes first. Their producer snapshots go at once (except those at
        ``keep_snapshots_at``, where a replacing segment starts): nothing reads them but a later load."""
        due = self._clock() + self.config.file_delete_delay_ms
        for segment in segments:
            if segment.base_offset not in keep_snapshots_at:
                self._producer_state.delete_snapshot(segment.base_offset)
            if not segment.has_suffix(DELETED_FILE_SUFFIX):
                segment.change_file_suffixes("", DELETED_FILE_SUFFIX)
            self._pending_deletes.append((due, segment))
            if on_each is not None:
                on_each()
        if self.config.file_delete_delay_ms == 0:
            self.delete_pending_segments()

    # -- compaction --------------------------------------------------------------------------------

    def replace_segments(
        self,
        new_segments: list[LogSegment],
        old_segments: list[LogSegment],
        on_step: Callable[[str], None] | None = None,
        old_sizes: list[int] | None = None,
    ) -> bool:
        """Swap the cleaner's ``.cleaned`` segments in for ``old_segments`` (Kafka's replaceSegments).

        The order makes a crash at any point recoverable by ``log_loader``: the new files are
        renamed ``.cleaned`` -> ``.swap`` (highest offset first, so a swap left beside a
        ``.cleaned`` file is known to be incomplete and discarded); the old segments are renamed
        ``.deleted`` (removed later, as retention's are); the ``.swap`` files then lose their
        suffix. Readers see the old or the new segments, never a mix: it all happens under the
        log's lock. ``on_step`` is called after each step (``swap``, ``deleted`` per old segment,
        ``replaced``).

        Returns False, touching nothing, when the log is closed, or one of ``old_segments`` has left
        it or no longer has its size in ``old_sizes`` (a retention or truncation that did not pause
        the cleaner got there first): the new segments would bring back offsets the log no longer has.
        """
        new_sorted = sorted(new_segments, key=lambda s: s.base_offset)
        with self._lock, self._disk_errors("Error while replacing segments of"):
            present = {id(s) for s in self._segments}
            if self._closed or any(id(s) not in present for s in old_segments):
                return False
            if old_sizes is not None and [s.size for s in old_segments] != list(old_sizes):
                return False
            old_sorted = sorted(old_segments, key=lambda s: s.base_offset)
            for segment in reversed(new_sorted):
                segment.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
            fsync_path(self.dir)
            if on_step is not None:
                on_step("swap")
            doomed = {id(s) for s in old_sorted}
            kept = [s for s in self._segments if id(s) not in doomed]
            self._segments = sorted(kept + new_sorted, key=lambda s: s.base_offset)
            self._base_offsets = [s.base_offset for s in self._segments]
            replaced = frozenset(s.base_offset for s in new_sorted)
            self._delete_segments_async(old_sorted, keep_snapshots_at=replaced, on_each=(lambda: on_step("deleted")) if on_step else None)
            for segment in new_sorted:
                segment.change_file_suffixes(SWAP_FILE_SUFFIX, "")
            fsync_path(self.dir)
            if on_step is not None:
                on_step("replaced")
            return True

    def last_records_of_active_producers(self) -> dict[int, LastRecord]:
        """Producer id -> its last data offset and epoch, for the cleaner to keep those batches."""
        with self._lock:
            return {
                pid: LastRecord(entry.last_data_offset if entry.last_data_offset >= 0 else None, entry.producer_epoch)
                for pid, entry in self._producer_state.producers.items()
            }

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions (from the segments' ``.txnindex``) that overlap [start, upper bound).

        An entry sits in the segment of its ABORT marker, which may come after the range, so the
        search goes on through later segments until an entry whose marker is at or past the upper
        bound shows that no later one can overlap (Kafka's ``collectAbortedTransactions``)."""
        with self._lock:
            first = max(0, bisect.bisect_right(self._base_offsets, start_offset) - 1)
            segments = list(self._segments[first:])
        found = []
        for segment in segments:
            path = segment.txn_index_path
            if not path.exists():
                continue
            for txn in read_aborted_txns(path):
                if txn.last_offset >= upper_bound_offset:
                    if txn.first_offset < upper_bound_offset:
                        found.append(txn)
                    return found
                if txn.last_offset >= start_offset:
                    found.append(txn)
        return found

    def delete_pending_segments(self, now: int | None = None, force: bool = False) -> int:
        """Remove the ``.deleted`` files whose delay is over (all with ``force``)."""
        now = self._clock() if now is None else now
        with self._lock:
            keep = []
            removed = 0
            for due, segment in self._pending_deletes:
                if force or due <= now:
                    segment.delete()
                    removed += 1
                else:
                    keep.append((due, segment))
            self._pending_deletes = keep
            return removed

    # -- producers ---------------------------------------------------------------------------------

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._producer_state

    def active_producers(self) -> list[ActiveProducer]:
        """The producers of this partition as DescribeProducers reports them, by producer id."""
        with self._lock:
            return self._producer_state.active_producers()

    def remove_expired_producers(self, now: int | None = None) -> int:
        """Forget producers idle for ``producer.id.expiration.ms`` (none with an open transaction);
        for the broker to call periodically. Returns how many were removed."""
        now = self._clock() if now is None else now
        with self._lock:
            return self._producer_state.remove_expired_producers(now)

    def take_producer_snapshot(self) -> Path | None:
        """Snapshot the producer table at the log end now (if not done there already)."""
        with self._lock, self._disk_errors("Error while writing a producer snapshot of"):
            return self._producer_state.take_snapshot()

    # -- configuration and lifetime ----------------------------------------------------------------

    def update_config(self, config: LogConfig) -> None:
        with self._lock:
            self.config = config

    def close(self) -> None:
        """Close every segment: the active one gets its last time-index entry and trimmed indexes.

        The producer table is snapshotted at the log end when it holds producers, so that a clean
        restart reads no segment to rebuild it.
        """
        with self._lock:
            if self._closed:
                return
            if self.is_offline:
                # Nothing more is written to an offline dir: its logs are recovered at the next start.
                self.close_handlers()
                return
            try:
                self._producer_state.take_snapshot(skip_if_empty=True)
                self.delete_pending_segments(force=True)
                for segment in self._segments:
                    segment.close()
            except OSError:
                self.close_handlers()
                raise
            self._closed = True

    def close_handlers(self) -> None:
        """Release every file without writing anything (Kafka's closeHandlers)."""
        with self._lock:
            for segment in self._segments:
                segment.close_handlers()
            for _, segment in self._pending_deletes:
                segment.close_handlers()
            self._closed = True

    def delete(self) -> None:
        """Close the log and remove its directory.

        The directory is first renamed to its ``-delete`` name, so that a crash midway leaves a
        directory the log manager removes at start-up rather than a half-deleted log.
        """
        with self._lock:
            self.delete_pending_segments(force=True)
            for segment in self._segments:
                segment.close_handlers()
            self._segments.clear()
            self._base_offsets.clear()
            self._closed = True
            doomed = self.dir.parent / log_delete_dir_name(self.topic, self.partition)
            self.dir.rename(doomed)
            self.dir = doomed
            shutil.rmtree(doomed, ignore_errors=True)

    def __repr__(self) -> str:
        return f"Log({self.dir.name}, start={self._log_start_offset}, end={self._log_end_offset}, hw={self._high_watermark})"


class _RollUndo:
    """Takes back a roll: the new segment leaves the log with its files, the segment active before
    gets back its time index entries and index lengths, the producer table its end offset."""

    def __init__(self, log: Log, previous: LogSegment | None) -> None:
        self.log = log
        self.previous = previous
        self.segment: LogSegment | None = None
        self.map_end_offset = log.producer_state.map_end_offset
        if previous is not None:
            self.previous_mark = previous.mark()
            self.previous_lengths = (previous.offset_index.length, previous.time_index.length)

    def __call__(self) -> None:
        log, segment = self.log, self.segment
        log.producer_state.update_map_end_offset(self.map_end_offset)
        if segment is not None:
            if log._segments and log._segments[-1] is segment:
                log._segments.pop()
                log._base_offsets.pop()
            segment.delete()
        previous = self.previous
        if previous is not None:
            previous.rollback_to(self.previous_mark)
            previous.offset_index.resize(self.previous_lengths[0])
            previous.time_index.resize(self.previous_lengths[1])




def _check_topic_id(directory: Path, topic_id: uuid.UUID | None) -> uuid.UUID | None:
    """The topic id in ``partition.metadata``, written when new; a different one is an error."""
    path = directory / PARTITION_METADATA
    if path.exists():
        stored = read_partition_metadata(path)
        if topic_id is not None and stored != topic_id:
            raise InconsistentTopicIdError(directory.name, topic_id, stored)
        return stored
    if topic_id is not None:
        write_partition_metadata(path, topic_id)
    return topic_id
