"""Opening a partition directory: leftovers, interrupted swaps, segments and recovery (Kafka's LogLoader).

In order:

1. ``*.deleted`` files (deletes that did not finish) are removed; ``*.cleaned`` files (cleaner
   output never swapped in) are removed, and with them any ``*.swap`` file at or above the lowest
   ``.cleaned`` offset, which belongs to a split that did not finish.
2. The remaining ``*.swap`` files complete their swap: the segments whose offsets they cover are
   deleted and the swap files lose their suffix.
3. Index files without a ``.log`` are deleted; every ``.log`` is opened as a segment. A segment
   whose offset index is missing or fails its sanity check is recovered (indexes rebuilt).
4. A clean shutdown is trusted only when the last segment ends on a whole, valid batch (checked
   from its last index entry on); when it does not (a file cut or damaged after the shutdown), a
   warning names the file and position and the log is recovered as after a crash.
   Unless the log was shut down cleanly, every segment from the one holding the recovery point on
   is recovered: each batch is checked (size, magic, CRC, increasing offsets) and the log is cut at
   the first invalid one; the segments after a cut are deleted. Nothing before the first invalid
   batch is lost.
5. The producer table is rebuilt: snapshots that belong to no segment, or lie past the log end,
   are deleted; the newest one left is loaded and the batches after it are replayed from their
   headers up to the log end. A clean shutdown without any snapshot means the table was empty.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from kcli.errors import CorruptIndexError, CorruptRecordError
from kcli.storage.file_records import FileRecords
from kcli.storage.leader_epoch_cache import LeaderEpochFileCache
from kcli.storage.log_config import LogConfig
from kcli.storage.producer_state import ProducerStateManager
from kcli.storage.transaction_index_recovery import rebuild_transaction_indexes
from kcli.storage.records import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RecordBatch, check_batch_size, peek_batch_header
from kcli.storage.segment import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    LogSegment,
    is_index_file,
    is_log_file,
    log_file,
    now_ms,
    offset_from_file_name,
    time_index_file,
)

log = logging.getLogger(__name__)

# KRaft snapshots are renamed with this suffix and removed by the metadata log itself.
_SNAPSHOT_DELETE_SUFFIX = ".checkpoint.deleted"


class LoadedLogOffsets(NamedTuple):
    log_start_offset: int
    recovery_point: int
    next_offset: int


class LogLoader:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        *,
        had_clean_shutdown: bool,
        log_start_offset_checkpoint: int = 0,
        recovery_point_checkpoint: int = 0,
        leader_epoch_cache: LeaderEpochFileCache | None = None,
        producer_state: ProducerStateManager | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.dir = Path(directory)
        self.config = config
        self.had_clean_shutdown = had_clean_shutdown
        self.log_start_offset_checkpoint = log_start_offset_checkpoint
        self.recovery_point_checkpoint = recovery_point_checkpoint
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state = producer_state
        self.clock = clock
        self.segments: list[LogSegment] = []

    def _open_segment(self, base_offset: int, suffix: str = "") -> LogSegment:
        return LogSegment.open_for_config(self.dir, base_offset, self.config, suffix=suffix, clock=self.clock)

    def load(self) -> tuple[list[LogSegment], LoadedLogOffsets]:
        """Load the directory; returns its segments in offset order and its offsets."""
        swap_files = self._remove_temp_files_and_collect_swap_files()
        self._complete_swaps(swap_files)
        try:
            self._load_segment_files()
            if self.had_clean_shutdown and self.segments:
                self._check_clean_tail()
            recovery_point, next_offset = self._recover_log()
            self.segments[-1].resize_indexes(self.config.segment_index_bytes)
            if self.leader_epoch_cache is not None:
                self.leader_epoch_cache.truncate_from_end(next_offset)
                self.leader_epoch_cache.truncate_from_start(self.log_start_offset_checkpoint)
            log_start_offset = max(self.log_start_offset_checkpoint, self.segments[0].base_offset)
            if self.producer_state is not None:
                self.producer_state.remove_stray_snapshots(s.base_offset for s in self.segments)
                rebuild_producer_state(
                    self.producer_state, self.segments, log_start_offset, next_offset,
                    reload_from_clean_shutdown=self.had_clean_shutdown, now=self.clock(),
                )
                if not self.had_clean_shutdown:
                    rebuild_transaction_indexes(self.dir, self.segments, self.producer_state.snapshot_offsets(), recovery_point, _producer_batches)
        except BaseException:
            for segment in self.segments:
                segment.close_handlers()
            raise
        return self.segments, LoadedLogOffsets(log_start_offset, recovery_point, next_offset)

    def _files(self) -> list[Path]:
        return [p for p in self.dir.iterdir() if p.is_file()]

    def _remove_temp_files_and_collect_swap_files(self) -> list[Path]:
        swap_files: list[Path] = []
        cleaned_files: list[Path] = []
        min_cleaned_offset: int | None = None
        for path in self._files():
            name = path.name
            if name.endswith(DELETED_FILE_SUFFIX) and not name.endswith(_SNAPSHOT_DELETE_SUFFIX):
                log.debug("Deleting stray temporary file %s", path.absolute())
                path.unlink(missing_ok=True)
            elif name.endswith(CLEANED_FILE_SUFFIX):
                offset = _offset_or_none(name)
                if offset is not None:
                    min_cleaned_offset = offset if min_cleaned_offset is None else min(min_cleaned_offset, offset)
                cleaned_files.append(path)
            elif name.endswith(SWAP_FILE_SUFFIX):
                swap_files.append(path)
        valid_swaps = []
        for path in swap_files:
            offset = _offset_or_none(path.name)
            if offset is None or (min_cleaned_offset is not None and offset >= min_cleaned_offset):
                log.debug("Deleting invalid swap file %s minCleanedFileOffset: %s", path.absolute(), min_cleaned_offset)
                path.unlink(missing_ok=True)
            else:
                valid_swaps.append(path)
        for path in cleaned_files:
            log.debug("Deleting stray .clean file %s", path.absolute())
            path.unlink(missing_ok=True)
        return valid_swaps

    def _complete_swaps(self, swap_files: list[Path]) -> None:
        min_swap_offset: int | None = None
        max_swap_offset: int | None = None
        for path in swap_files:
            if not is_log_file(path.name[: -len(SWAP_FILE_SUFFIX)]):
                continue
            base_offset = offset_from_file_name(path.name)
            segment = self._open_segment(base_offset, SWAP_FILE_SUFFIX)
            try:
                log.info("Found log file %s from interrupted swap operation, which is recoverable from %s files by renaming.", path, SWAP_FILE_SUFFIX)
                next_offset = segment.read_next_offset()
            finally:
                segment.close_handlers()
            min_swap_offset = base_offset if min_swap_offset is None else min(min_swap_offset, base_offset)
            max_swap_offset = next_offset if max_swap_offset is None else max(max_swap_offset, next_offset)
        if min_swap_offset is not None and max_swap_offset is not None:
            for path in self._files():
                if path.name.endswith(SWAP_FILE_SUFFIX):
                    continue
                offset = _offset_or_none(path.name)
                if offset is not None and min_swap_offset <= offset < max_swap_offset:
                    log.info("Deleting segment files %s that is compacted but has not been deleted yet.", path.name)
                    path.unlink(missing_ok=True)
        for path in self._files():
            if path.name.endswith(SWAP_FILE_SUFFIX):
                log.info("Recovering file %s by renaming from %s files.", path.name, SWAP_FILE_SUFFIX)
                path.rename(path.with_name(path.name[: -len(SWAP_FILE_SUFFIX)]))

    def _load_segment_files(self) -> None:
        files = sorted(
            ((offset, path) for path in self._files() if (offset := _offset_or_none(path.name)) is not None),
            key=lambda item: (item[0], item[1].name),
        )
        for base_offset, path in files:
            name = path.name
            if is_index_file(name):
                if not log_file(self.dir, base_offset).exists():
                    log.warning("Found an orphaned index file %s, with no corresponding log file.", path.absolute())
                    path.unlink(missing_ok=True)
            elif is_log_file(name):
                time_index_newly_created = not time_index_file(self.dir, base_offset).exists()
                segment = self._open_segment(base_offset)
                self.segments.append(segment)
                try:
                    segment.sanity_check(time_index_newly_created)
                except FileNotFoundError:
                    if self.had_clean_shutdown or base_offset < self.recovery_point_checkpoint:
                        log.error(
                            "Could not find offset index file corresponding to log file %s, recovering segment and rebuilding index files...",
                            segment.log.path.absolute(),
                        )
                    segment.recover(leader_epoch_cache=self.leader_epoch_cache)
                except CorruptIndexError as exc:
                    log.warning(
                        "Found a corrupted index file corresponding to log file %s due to %s, recovering segment and rebuilding index files...",
                        segment.log.path.absolute(),
                        exc,
                    )
                    segment.recover(leader_epoch_cache=self.leader_epoch_cache)

    def _check_clean_tail(self) -> None:
        last = self.segments[-1]
        found = last.find_invalid_tail()
        if found is None:
            return
        position, reason = found
        log.warning(
            "Log segment %s does not end on a whole, valid batch at position %d despite a clean shutdown (%s); recovering the log",
            last.log.path.absolute(),
            position,
            reason,
        )
        self.had_clean_shutdown = False

    def _recover_log(self) -> tuple[int, int]:
        """Recover the unflushed segments; returns ``(recovery point, next offset)``."""
        segments = self.segments
        if not self.had_clean_shutdown and segments:
            first = _floor_index(segments, self.recovery_point_checkpoint)
            for i in range(first, len(segments)):
                segment = segments[i]
                log.info("Recovering unflushed segment %d in %s", segment.base_offset, self.dir)
                if segment.recover(leader_epoch_cache=self.leader_epoch_cache) > 0:
                    log.warning("Corruption found in segment %d of %s, truncating to offset %d", segment.base_offset, self.dir, segment.read_next_offset())
                    for rest in segments[i + 1 :]:
                        rest.delete()
                    del segments[i + 1 :]
                    break
        log_end_offset = self._delete_segments_if_log_start_greater_than_log_end()
        if not segments:
            segments.append(self._open_segment(self.log_start_offset_checkpoint))
        if self.had_clean_shutdown and log_end_offset is not None:
            return log_end_offset, log_end_offset
        if log_end_offset is None:
            log_end_offset = self._read_log_end_offset()
        return min(self.recovery_point_checkpoint, log_end_offset), log_end_offset

    def _read_log_end_offset(self) -> int:
        last = self.segments[-1]
        try:
            return last.read_next_offset()
        except CorruptRecordError as exc:
            # Kafka fails the whole log dir here; the damage is at the tail, so recover that segment.
            log.warning("Found a corrupt tail in %s despite a clean shutdown (%s); recovering the segment", last.log.path.absolute(), exc)
            last.recover(leader_epoch_cache=self.leader_epoch_cache)
            return last.read_next_offset()

    def _delete_segments_if_log_start_greater_than_log_end(self) -> int | None:
        if not self.segments:
            return None
        log_end_offset = self._read_log_end_offset()
        if log_end_offset >= self.log_start_offset_checkpoint:
            return log_end_offset
        log.warning(
            "Deleting all segments because logEndOffset (%d) is smaller than logStartOffset %d. "
            "This could happen if segment files were deleted from the file system.",
            log_end_offset,
            self.log_start_offset_checkpoint,
        )
        for segment in self.segments:
            segment.delete()
        self.segments.clear()
        if self.leader_epoch_cache is not None:
            self.leader_epoch_cache.clear_and_flush()
        return None


# -- producer state -------------------------------------------------------------------------------

# Replay reads batch headers through windows of this size; a batch that fits is not read again.
_HEADER_WINDOW = 8192


def rebuild_producer_state(
    manager: ProducerStateManager,
    segments: list[LogSegment],
    log_start_offset: int,
    last_offset: int,
    *,
    reload_from_clean_shutdown: bool,
    now: int,
) -> None:
    """Bring the producer table up to ``last_offset`` (Kafka's rebuildProducerState).

    The table is reloaded from the newest snapshot in (log start, ``last_offset``], then the
    batches from there to ``last_offset`` are replayed from their headers. Snapshots are taken at
    the base offsets of the last two segments on the way, and at ``last_offset`` when the table
    holds producers. After a clean shutdown without any snapshot nothing is read: the table was empty.
    """
    if reload_from_clean_shutdown and manager.latest_snapshot_offset() is None:
        manager.update_map_end_offset(last_offset)
        return
    was_empty = manager.is_empty and manager.map_end_offset >= last_offset
    manager.truncate_and_reload(log_start_offset, last_offset, now)
    replay_from = manager.map_end_offset
    if last_offset > replay_from and not was_empty:
        bases = [segment.base_offset for segment in segments]
        snapshot_at = set(bases[-2:])
        for i, segment in enumerate(segments):
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            if next_base is not None and next_base <= replay_from:
                continue
            if segment.base_offset >= last_offset:
                break
            start = max(segment.base_offset, replay_from, log_start_offset)
            manager.update_map_end_offset(start)
            if segment.base_offset in snapshot_at:
                _try_snapshot(manager)
            holds_last_offset = next_base is None or next_base > last_offset
            _replay_segment(manager, segment, start, last_offset if holds_last_offset else None)
    manager.update_map_end_offset(last_offset)
    _try_snapshot(manager, skip_if_empty=True)


def _try_snapshot(manager: ProducerStateManager, *, skip_if_empty: bool = False) -> None:
    """Snapshots taken while rebuilding only spare the next rebuild some reading: one the disk
    refuses (a full disk) is skipped, and the log is loaded all the same."""
    try:
        manager.take_snapshot(skip_if_empty=skip_if_empty)
    except OSError as exc:
        log.warning("Could not write a producer snapshot of %s at offset %d: %s", manager.dir, manager.map_end_offset, exc)


def _replay_segment(manager: ProducerStateManager, segment: LogSegment, start_offset: int, stop_offset: int | None) -> None:
    """Replay the segment's batches with producer ids from ``start_offset`` up to the batch holding
    ``stop_offset`` (the end of the segment when None)."""
    start = 0
    if start_offset > segment.base_offset:
        found = segment.translate_offset(start_offset)
        if found is None:
            return
        start = found.position
    end = segment.size
    if stop_offset is not None:
        found = segment.translate_offset(stop_offset)
        if found is not None:
            end = found.position
    for batch in _producer_batches(segment.log, start, end):
        manager.replay_batch(batch)


def _producer_batches(records: FileRecords, start: int, end: int) -> Iterator[RecordBatch]:
    """Views of the magic-2 batches with a producer id in ``[start, end)``, read header by header;
    a control batch is read whole, since its marker is a record."""
    window = b""
    window_start = start
    position = start
    while end - position >= HEADER_SIZE_UP_TO_MAGIC:
        rel = position - window_start
        if len(window) - rel < RECORD_BATCH_OVERHEAD:
            window = records.read(position, min(_HEADER_WINDOW, end - position))
            window_start, rel = position, 0
            if len(window) < HEADER_SIZE_UP_TO_MAGIC:
                return
        _, size, magic = peek_batch_header(window, rel)
        check_batch_size(size - LOG_OVERHEAD, position)
        if position + size > end:
            return
        if magic >= 2 and len(window) - rel >= RECORD_BATCH_OVERHEAD:
            batch = RecordBatch(window, rel)
            if batch.producer_id >= 0:
                if batch.is_control and rel + size > len(window):
                    batch = RecordBatch(records.read(position, size), 0)
                yield batch
        position += size


def _offset_or_none(name: str) -> int | None:
    try:
        return offset_from_file_name(name)
    except ValueError:
        return None


def _floor_index(segments: list[LogSegment], offset: int) -> int:
    """Index of the segment holding ``offset`` (the last one based at or below it), or 0."""
    found = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= offset:
            found = i
        else:
            break
    return found
