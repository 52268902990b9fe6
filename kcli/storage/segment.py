"""A log segment: one ``.log`` file with its ``.index`` and ``.timeindex`` (Kafka's LogSegment).

Files are named by the segment's base offset, 20 digits: ``00000000000000000000.log``. The base
offset is <= every offset in the segment and > every offset of the segment before it.

Index entries follow Kafka's rule exactly. Before a record set is appended, if more than
``index.interval.bytes`` were appended since the last entry, the offset index gets (last offset of
the set, position where the set starts) and the time index (largest timestamp so far, offset of
that timestamp's set) when that timestamp is larger than its last entry's; the byte count then
restarts at the size of the set. Recovery rebuilds the same entries batch by batch. When the
segment stops being the active one, or is closed, the time index gets a last entry for the largest
timestamp and both indexes are trimmed.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from kcli.errors import CorruptRecordError, InvalidOffsetError, InvalidRecordError, LogDirFailure
from kcli.storage.file_records import INT32_MAX, FileRecords, FileSlice, LogOffsetPosition, TimestampAndOffset
from kcli.storage.index import NO_TIMESTAMP, OffsetIndex, TimeIndex, TimestampOffset

if TYPE_CHECKING:
    from kcli.storage.log_config import LogConfig

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
_INDEX_SUFFIXES = (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX)

log = logging.getLogger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def filename_prefix_from_offset(offset: int) -> str:
    return f"{offset:020d}"


def log_file(directory: Path, offset: int, suffix: str = "") -> Path:
    return directory / f"{offset:020d}{LOG_FILE_SUFFIX}{suffix}"


def offset_index_file(directory: Path, offset: int, suffix: str = "") -> Path:
    return directory / f"{offset:020d}{INDEX_FILE_SUFFIX}{suffix}"


def time_index_file(directory: Path, offset: int, suffix: str = "") -> Path:
    return directory / f"{offset:020d}{TIME_INDEX_FILE_SUFFIX}{suffix}"


def transaction_index_file(directory: Path, offset: int, suffix: str = "") -> Path:
    return directory / f"{offset:020d}{TXN_INDEX_FILE_SUFFIX}{suffix}"


def offset_from_file_name(name: str) -> int:
    """The base offset a file is named by; ValueError when the name does not start with one."""
    prefix = name.split(".", 1)[0]
    if not prefix.isdigit():
        raise ValueError(f"{name} is not named by an offset")
    return int(prefix)


def is_log_file(name: str) -> bool:
    return name.endswith(LOG_FILE_SUFFIX)


def is_index_file(name: str) -> bool:
    return name.endswith(_INDEX_SUFFIXES)


def _replace_suffix(path: Path, old: str, new: str) -> Path:
    if not path.name.endswith(old):
        raise ValueError(f"Expected string to end with '{old}' but string is '{path.name}'")
    return path.with_name(path.name[: len(path.name) - len(old)] + new)


class LogOffsetMetadata(NamedTuple):
    """An offset with where its batch starts: segment base offset and position in that segment."""

    message_offset: int
    segment_base_offset: int = -1
    relative_position_in_segment: int = -1


class FetchDataInfo:
    """What a read returns: where it started and the file ranges to send, whole batches only."""

    __slots__ = ("fetch_offset_metadata", "slices", "first_entry_incomplete")

    def __init__(self, fetch_offset_metadata: LogOffsetMetadata, slices: list[FileSlice], first_entry_incomplete: bool = False) -> None:
        self.fetch_offset_metadata = fetch_offset_metadata
        self.slices = slices
        self.first_entry_incomplete = first_entry_incomplete

    @property
    def size(self) -> int:
        return sum(s.size for s in self.slices)

    def read(self) -> bytes:
        """The bytes of every slice, concatenated."""
        if len(self.slices) == 1:
            return self.slices[0].read()
        return b"".join(s.read() for s in self.slices)

    def __repr__(self) -> str:
        return f"FetchDataInfo({self.fetch_offset_metadata}, {self.slices}, first_entry_incomplete={self.first_entry_incomplete})"


class AppendMark(NamedTuple):
    """Where a segment stood before an append: what undoing the append restores."""

    size: int
    offset_index_entries: int
    time_index_entries: int
    max_timestamp_and_offset: TimestampOffset | None
    rolling_based_timestamp: int | None
    bytes_since_last_index_entry: int


class EpochAssigner(Protocol):
    @property
    def latest_epoch(self) -> int | None: ...

    def assign(self, epoch: int, start_offset: int) -> bool: ...


class LazyIndex:
    """An index opened on first use, so that loading a log with many segments maps nothing."""

    def __init__(self, path: Path, opener: Callable[[Path], OffsetIndex | TimeIndex]) -> None:
        self.path = path
        self._opener = opener
        self.index: OffsetIndex | TimeIndex | None = None

    @property
    def is_loaded(self) -> bool:
        return self.index is not None

    def get(self):
        if self.index is None:
            self.index = self._opener(self.path)
        return self.index

    def rename_to(self, path: Path) -> None:
        if self.index is not None:
            self.index.rename_to(path)
        elif self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def close(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None

    def close_handler(self) -> None:
        if self.index is not None:
            self.index.close_handler()
            self.index = None

    def delete(self) -> None:
        if self.index is not None:
            self.index.delete()
            self.index = None
        else:
            self.path.unlink(missing_ok=True)


class LogSegment:
    def __init__(
        self,
        records: FileRecords,
        offset_index: LazyIndex,
        time_index: LazyIndex,
        txn_index_path: Path,
        base_offset: int,
        index_interval_bytes: int,
        roll_jitter_ms: int = 0,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.log = records
        self._offset_index = offset_index
        self._time_index = time_index
        self.txn_index_path = txn_index_path
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self._clock = clock
        self.created = clock()
        self._rolling_based_timestamp: int | None = None
        self._max_timestamp_and_offset: TimestampOffset | None = None
        self._bytes_since_last_index_entry = 0

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        *,
        max_index_size: int,
        index_interval_bytes: int,
        roll_jitter_ms: int = 0,
        suffix: str = "",
        clock: Callable[[], int] = now_ms,
    ) -> LogSegment:
        """Open the segment at ``base_offset`` in ``directory``, creating its ``.log`` if missing."""
        records = FileRecords.open(log_file(directory, base_offset, suffix), writable=True)
        return cls(
            records,
            LazyIndex(offset_index_file(directory, base_offset, suffix), lambda p: OffsetIndex(p, base_offset, max_index_size)),
            LazyIndex(time_index_file(directory, base_offset, suffix), lambda p: TimeIndex(p, base_offset, max_index_size)),
            transaction_index_file(directory, base_offset, suffix),
            base_offset,
            index_interval_bytes,
            roll_jitter_ms,
            clock,
        )

    @classmethod
    def open_for_config(
        cls, directory: Path, base_offset: int, config: LogConfig, *, suffix: str = "", clock: Callable[[], int] = now_ms
    ) -> LogSegment:
        """Open a segment with a topic's index size, index interval and roll jitter."""
        return cls.open(
            directory,
            base_offset,
            max_index_size=config.segment_index_bytes,
            index_interval_bytes=config.index_interval_bytes,
            roll_jitter_ms=config.random_segment_jitter(),
            suffix=suffix,
            clock=clock,
        )

    # -- parts -------------------------------------------------------------------------------------

    @property
    def offset_index(self) -> OffsetIndex:
        return self._offset_index.get()

    @property
    def time_index(self) -> TimeIndex:
        return self._time_index.get()

    @property
    def offset_index_file(self) -> Path:
        return self._offset_index.path

    @property
    def time_index_file(self) -> Path:
        return self._time_index.path

    @property
    def size(self) -> int:
        return self.log.size

    def _max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        if self._max_timestamp_and_offset is None:
            self._max_timestamp_and_offset = self.time_index.last_entry
        return self._max_timestamp_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self._max_timestamp_and_offset_so_far().timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        return self._max_timestamp_and_offset_so_far().offset

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    # -- writing -----------------------------------------------------------------------------------

    def mark(self) -> AppendMark:
        """Where the segment stands now, for ``rollback_to``."""
        return AppendMark(
            self.log.size,
            (self._offset_index.index or self._offset_index.get()).entries,
            (self._time_index.index or self._time_index.get()).entries,
            self._max_timestamp_and_offset,
            self._rolling_based_timestamp,
            self._bytes_since_last_index_entry,
        )

    def rollback_to(self, mark: AppendMark) -> None:
        """Undo every append made since ``mark``: the ``.log`` is cut back (bytes a failed write left
        past its end included), the index entries taken back, the in-memory state restored.

        Raises LogDirFailure when the files cannot be put back: the segment is then unsure.
        """
        try:
            self.log.truncate_to(mark.size)
            self.offset_index.truncate_to_entries(mark.offset_index_entries)
            self.time_index.truncate_to_entries(mark.time_index_entries)
        except OSError as exc:
            raise LogDirFailure(f"Could not undo a failed append to {self.log.path}: {exc}") from exc
        self._max_timestamp_and_offset = mark.max_timestamp_and_offset
        self._rolling_based_timestamp = mark.rolling_based_timestamp
        self._bytes_since_last_index_entry = mark.bytes_since_last_index_entry

    def append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        offset_of_max_timestamp: int,
        records: bytes | bytearray | memoryview,
        mark: AppendMark | None = None,
    ) -> None:
        """Append a record set whose last offset is ``largest_offset``, indexing it if due.

        All or nothing: when a step fails (the ``.log`` write, an index entry: a full disk), what
        the earlier steps wrote is undone (back to ``mark``, taken now when None) and the error
        raised; LogDirFailure when even that fails.
        """
        size = len(records)
        if size == 0:
            return
        if not self.can_convert_to_relative_offset(largest_offset):
            raise InvalidOffsetError(
                f"Detected offset overflow at offset {largest_offset} in segment {self.log.path}: "
                f"it cannot be stored relative to the base offset {self.base_offset}"
            )
        if mark is None:
            mark = self.mark()
        try:
            self._append(largest_offset, largest_timestamp, offset_of_max_timestamp, records, size)
        except BaseException:
            self.rollback_to(mark)
            raise

    def _append(self, largest_offset: int, largest_timestamp: int, offset_of_max_timestamp: int, records: bytes | bytearray | memoryview, size: int) -> None:
        position = self.log.append(records)
        if position == 0:
            self._rolling_based_timestamp = largest_timestamp
        max_so_far = self._max_timestamp_and_offset or self._max_timestamp_and_offset_so_far()
        if largest_timestamp > max_so_far.timestamp:
            max_so_far = self._max_timestamp_and_offset = TimestampOffset(largest_timestamp, offset_of_max_timestamp)
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            (self._offset_index.index or self._offset_index.get()).append(largest_offset, position)
            (self._time_index.index or self._time_index.get()).maybe_append(max_so_far.timestamp, max_so_far.offset)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += size

    def flush(self) -> None:
        self.log.flush()
        if self._offset_index.is_loaded:
            self.offset_index.flush()
        if self._time_index.is_loaded:
            self.time_index.flush()

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def on_become_inactive_segment(self) -> None:
        """The segment was rolled: write the time index's last entry and trim both indexes."""
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    # -- reading -----------------------------------------------------------------------------------

    def translate_offset(self, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """The first batch whose last offset is >= ``offset``, searched from the index entry below it."""
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for_offset_with_size(offset, max(mapping.position, starting_position))

    def batch_end_at_or_before(self, start_position: int, limit: int) -> int:
        """The end of the last whole batch that starts at or after ``start_position`` and ends by ``limit``.

        ``start_position`` must be the start of a batch. An index entry gives a batch start close
        below the limit, so only a few headers are read however long the range is.
        """
        if limit >= self.log.size:
            return self.log.size
        position = max(start_position, self.offset_index.lookup_by_position(limit).position)
        for batch_position, _, size in self.log.headers(position, limit):
            position = batch_position + size
        return position

    def read(self, start_offset: int, max_size: int, max_position: int | None = None, min_one_message: bool = False) -> FetchDataInfo | None:
        """Whole batches from the one holding ``start_offset``, at most ``max_size`` bytes.

        With ``min_one_message`` the first batch is returned even when it is larger than
        ``max_size``. Nothing past ``max_position`` is returned. None when the segment holds no
        offset >= ``start_offset``.
        """
        if max_size < 0:
            raise ValueError(f"Invalid max size {max_size} for log read from segment {self.log.path}")
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start = found.position
        metadata = LogOffsetMetadata(start_offset, self.base_offset, start)
        adjusted_max_size = max(max_size, found.size) if min_one_message else max_size
        if max_position is None:
            max_position = self.log.size
        limit = min(max_position, start + adjusted_max_size)
        end = self.batch_end_at_or_before(start, limit) if limit > start else start
        return FetchDataInfo(metadata, [FileSlice(self.log, start, end - start)], adjusted_max_size < found.size)

    def read_next_offset(self) -> int:
        """The offset after the last batch: read from the last index entry on."""
        position = self.offset_index.lookup(self.offset_index.last_offset).position
        next_offset = self.base_offset
        for _, last_offset, _ in self.log.headers(position):
            next_offset = last_offset + 1
        return next_offset

    def find_invalid_tail(self) -> tuple[int, str] | None:
        """Whether the segment ends on a whole, valid batch, checked from its last index entry on
        (a few batches at most): None when it does, else the position where it stops doing so and why.

        What a clean shutdown lets the loader skip recovery for is checked this cheaply: a file
        cut (or grown) after the shutdown shows here."""
        size = self.log.size
        position = self.offset_index.lookup(self.offset_index.last_offset).position
        if position > size:
            return position, f"its last index entry points at position {position}, past its end at {size}"
        try:
            for batch_position, batch in self.log.batches(position):
                batch.validate()
                position = batch_position + batch.size_in_bytes
        except (CorruptRecordError, InvalidRecordError) as exc:
            return position, str(exc)
        if position != size:
            return position, f"{size - position} bytes after the last whole batch do not form one"
        return None

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int = 0) -> TimestampAndOffset | None:
        """The first record with a timestamp >= ``timestamp`` and an offset >= ``starting_offset``."""
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp, position, starting_offset)

    def offset_of_max_timestamp_record(self) -> int | None:
        """The offset of the first record carrying this segment's largest timestamp (Kafka's
        ``RecordBatch.offsetOfMaxTimestamp`` of the batch holding it); None for magic 0."""
        max_timestamp = self.max_timestamp_so_far
        position = self.offset_index.lookup(self.offset_of_max_timestamp_so_far).position
        for _, batch in self.log.batches(position):
            if batch.max_timestamp != max_timestamp:
                continue
            if batch.magic == 0:
                return None
            return next((r.offset for r in batch.records() if r.timestamp == max_timestamp), None)
        return None

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the file's modification time when there is none."""
        max_timestamp = self.max_timestamp_so_far
        return max_timestamp if max_timestamp >= 0 else self.last_modified

    @property
    def largest_record_timestamp(self) -> int | None:
        max_timestamp = self.max_timestamp_so_far
        return max_timestamp if max_timestamp >= 0 else None

    @property
    def last_modified(self) -> int:
        return os.stat(self.log.path).st_mtime_ns // 1_000_000

    def set_last_modified(self, ms: int) -> None:
        ns = ms * 1_000_000
        for path in (self.log.path, self.offset_index_file, self.time_index_file):
            if path.exists():
                os.utime(path, ns=(ns, ns))

    # -- rolling -----------------------------------------------------------------------------------

    def _first_batch_timestamp(self) -> int | None:
        if self._rolling_based_timestamp is None:
            for _, batch in self.log.batches(0, chunk_size=8192):
                self._rolling_based_timestamp = batch.max_timestamp
                break
        return self._rolling_based_timestamp

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """Time since the first batch's timestamp, or since creation when it has none."""
        timestamp = self._first_batch_timestamp()
        if timestamp is not None and timestamp >= 0:
            return message_timestamp - timestamp
        return now - self.created

    def should_roll(
        self,
        max_segment_bytes: int,
        max_segment_ms: int,
        messages_size: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        now: int,
    ) -> bool:
        size = self.log.size
        if size > max_segment_bytes - messages_size:
            return True
        if size > 0 and self.time_waited_for_roll(now, max_timestamp_in_messages) > max_segment_ms - self.roll_jitter_ms:
            return True
        offset_index = self._offset_index.index or self._offset_index.get()
        time_index = self._time_index.index or self._time_index.get()
        return offset_index.is_full or time_index.is_full or not self.can_convert_to_relative_offset(max_offset_in_messages)

    # -- recovery and truncation -------------------------------------------------------------------

    def recover(self, max_batch_size: int = INT32_MAX, leader_epoch_cache: EpochAssigner | None = None) -> int:
        """Rebuild the indexes from the ``.log``, cutting it at the first invalid batch.

        Every batch is checked (size, magic, CRC, offsets that increase and fit this segment).
        Returns the number of bytes truncated.
        """
        offset_index = self.offset_index
        time_index = self.time_index
        offset_index.reset()
        time_index.reset()
        valid_bytes = 0
        last_index_entry = 0
        max_timestamp, offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
        previous_last_offset = self.base_offset - 1
        interval = self.index_interval_bytes
        try:
            for position, batch in self.log.batches(0, max_batch_size=max_batch_size):
                batch.validate()
                last_offset = batch.last_offset
                if last_offset <= previous_last_offset or not self.can_convert_to_relative_offset(last_offset):
                    raise InvalidRecordError(
                        f"batch at position {position} has last offset {last_offset}, which does not follow {previous_last_offset} "
                        f"in a segment based at {self.base_offset}"
                    )
                previous_last_offset = last_offset
                if batch.max_timestamp > max_timestamp:
                    max_timestamp, offset_of_max_timestamp = batch.max_timestamp, last_offset
                if valid_bytes - last_index_entry > interval:
                    offset_index.append(last_offset, valid_bytes)
                    time_index.maybe_append(max_timestamp, offset_of_max_timestamp)
                    last_index_entry = valid_bytes
                valid_bytes += batch.size_in_bytes
                if leader_epoch_cache is not None and batch.magic >= 2:
                    epoch = batch.partition_leader_epoch
                    latest = leader_epoch_cache.latest_epoch
                    if epoch >= 0 and (latest is None or epoch > latest):
                        leader_epoch_cache.assign(epoch, batch.base_offset)
        except (CorruptRecordError, InvalidRecordError) as exc:
            log.warning("Found invalid messages in log segment %s at byte offset %d: %s", self.log.path.absolute(), valid_bytes, exc)
        truncated = self.log.size - valid_bytes
        if truncated > 0:
            log.debug("Truncated %d invalid bytes at the end of segment %s during recovery", truncated, self.log.path.absolute())
        self.log.truncate_to(valid_bytes)
        offset_index.trim_to_valid_size()
        time_index.maybe_append(max_timestamp, offset_of_max_timestamp, skip_full_check=True)
        time_index.trim_to_valid_size()
        self._max_timestamp_and_offset = TimestampOffset(max_timestamp, offset_of_max_timestamp)
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Remove every batch from the one holding ``offset`` on; returns the bytes removed."""
        mapping = self.translate_offset(offset)
        offset_index = self.offset_index
        time_index = self.time_index
        offset_index.truncate_to(offset)
        time_index.truncate_to(offset)
        offset_index.resize(offset_index.max_index_size)
        time_index.resize(time_index.max_index_size)
        truncated = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size == 0:
            self.created = self._clock()
            self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far >= 0:
            self._max_timestamp_and_offset = self._read_largest_timestamp()
        return truncated

    def _read_largest_timestamp(self) -> TimestampOffset:
        last_entry = self.time_index.last_entry
        position = self.offset_index.lookup(last_entry.offset).position
        after = self.log.largest_timestamp_after(position)
        if after.timestamp > last_entry.timestamp:
            return TimestampOffset(after.timestamp, after.offset)
        return last_entry

    def sanity_check(self, time_index_newly_created: bool = False) -> None:
        """Check both indexes (CorruptIndexError) and release them; FileNotFoundError without a ``.index``."""
        if not self.offset_index_file.exists():
            raise FileNotFoundError(f"Offset index file {self.offset_index_file.absolute()} does not exist")
        try:
            if time_index_newly_created:
                self.time_index.resize(0)
            self.offset_index.sanity_check()
            self.time_index.sanity_check()
        finally:
            self._offset_index.close_handler()
            self._time_index.close_handler()

    # -- files -------------------------------------------------------------------------------------

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        self.log.rename_to(_replace_suffix(self.log.path, old_suffix, new_suffix))
        self._offset_index.rename_to(_replace_suffix(self.offset_index_file, old_suffix, new_suffix))
        self._time_index.rename_to(_replace_suffix(self.time_index_file, old_suffix, new_suffix))
        txn = _replace_suffix(self.txn_index_path, old_suffix, new_suffix)
        if self.txn_index_path.exists():
            os.replace(self.txn_index_path, txn)
        self.txn_index_path = txn

    def has_suffix(self, suffix: str) -> bool:
        return all(p.name.endswith(suffix) for p in (self.log.path, self.offset_index_file, self.time_index_file, self.txn_index_path))

    def close(self) -> None:
        """Write the time index's last entry, trim the indexes and close every file.

        Index files not opened yet (a segment nothing was appended to or read from) are created
        empty, as Kafka's are by then: a clean restart expects every segment to have them."""
        self._offset_index.get()
        self._time_index.get()
        if self._max_timestamp_and_offset is not None:
            try:
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True)
            except (ValueError, InvalidOffsetError) as exc:
                log.warning("Could not append the last time index entry of %s: %s", self.log.path, exc)
        self._offset_index.close()
        self._time_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        """Release every file without writing anything."""
        self._offset_index.close_handler()
        self._time_index.close_handler()
        self.log.close()

    def delete(self) -> None:
        """Remove the segment's files, whatever suffix they carry now."""
        self._offset_index.delete()
        self._time_index.delete()
        self.txn_index_path.unlink(missing_ok=True)
        self.log.delete()

    def __repr__(self) -> str:
        return f"LogSegment(baseOffset={self.base_offset}, size={self.size})"
