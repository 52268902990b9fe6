"""Which compacted log to clean next, and the cleaning state of every partition (Kafka's LogCleanerManager).

A log's *dirty* section starts at its first dirty offset: the offset in its log dir's
``cleaner-offset-checkpoint``, or the log start offset. It is cleanable up to the first
uncleanable offset, the lowest of: the last stable offset (the high watermark without open
transactions), the active segment's base offset and, with ``min.compaction.lag.ms``, the base of
the first dirty segment whose largest timestamp is younger than that lag. The dirtiest log whose
cleanable share of bytes is above ``min.cleanable.dirty.ratio``, or one holding records older
than ``max.compaction.lag.ms`` in its dirty section, is cleaned first.

A partition is in one state at a time: cleaning in progress, cleaning aborted (the cleaner stops
at its next check), or paused (counted: each pause needs a resume). Deleting or truncating a log
aborts and pauses its cleaning first, and waits until the cleaner has let go of it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from kcli.common import TopicPartition
from kcli.errors import KcliError
from kcli.storage.checkpoints import CLEANER_OFFSET_CHECKPOINT, read_offset_checkpoint, write_offset_checkpoint
from kcli.storage.log import Log
from kcli.storage.log_config import LONG_MAX
from kcli.storage.records import HEADER_SIZE_UP_TO_MAGIC, RECORD_BATCH_OVERHEAD, read_batch
from kcli.storage.segment import LogSegment

log = logging.getLogger("kcli.log_cleaner")



class LogCleaningAbortedError(KcliError):
    """The cleaning of a log was aborted (its log is being deleted or truncated, or the cleaner stops)."""


class LogCleaningError(KcliError):
    """Cleaning a log failed; the partition is then left alone until the broker restarts."""

    def __init__(self, failed_log: Log, message: str) -> None:
        super().__init__(message)
        self.log = failed_log


class OffsetsToClean(NamedTuple):
    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    force_update_checkpoint: bool = False


class PreCleanStats:
    """How overdue compaction is, across the logs looked at when choosing one."""

    def __init__(self) -> None:
        self.max_compaction_delay_ms = 0
        self.delayed_partitions = 0
        self.cleanable_partitions = 0

    def update_max_compaction_delay(self, delay_ms: int) -> None:
        self.max_compaction_delay_ms = max(self.max_compaction_delay_ms, delay_ms)
        if delay_ms > 0:
            self.delayed_partitions += 1


def topic_partition(partition_log: Log) -> TopicPartition:
    return partition_log.topic, partition_log.partition


def calculate_cleanable_bytes(partition_log: Log, first_dirty_offset: int, uncleanable_offset: int) -> tuple[int, int]:
    """``(first uncleanable offset, cleanable bytes)``: the uncleanable offset moved down to the
    base of the segment holding it, and the bytes of the segments from the first dirty offset to it."""
    later = partition_log.non_active_segments_from(uncleanable_offset)
    first_uncleanable = (later[0] if later else partition_log.active_segment).base_offset
    segments = partition_log.segments_between(min(first_dirty_offset, first_uncleanable), first_uncleanable)
    return first_uncleanable, sum(s.size for s in segments)


class LogToClean:
    """A log with its dirty section measured (Kafka's LogToClean); logs compare by cleanable ratio."""

    def __init__(self, partition: TopicPartition, partition_log: Log, first_dirty_offset: int, uncleanable_offset: int, need_compaction_now: bool = False) -> None:
        self.topic_partition = partition
        self.log = partition_log
        self.first_dirty_offset = first_dirty_offset
        self.uncleanable_offset = uncleanable_offset
        self.need_compaction_now = need_compaction_now
        self.clean_bytes = sum(s.size for s in partition_log.segments_between(-1, first_dirty_offset))
        self.first_uncleanable_offset, self.cleanable_bytes = calculate_cleanable_bytes(partition_log, first_dirty_offset, uncleanable_offset)
        self.total_bytes = self.clean_bytes + self.cleanable_bytes
        self.cleanable_ratio = self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    def __repr__(self) -> str:
        return (
            f"LogToClean({self.log.dir.name}, first_dirty={self.first_dirty_offset}, "
            f"first_uncleanable={self.first_uncleanable_offset}, ratio={self.cleanable_ratio:.3f})"
        )


def cleanable_offsets(partition_log: Log, last_clean_offset: int | None, now: int) -> OffsetsToClean:
    """The range of dirty offsets that can be cleaned now (Kafka's cleanableOffsets).

    A checkpointed offset below the log start or past the log end (the log was truncated or
    lost its tail) is reset to the log start offset, and the checkpoint is to be rewritten.
    """
    log_start_offset = partition_log.log_start_offset
    checkpoint_dirty_offset = log_start_offset if last_clean_offset is None else last_clean_offset
    force_update = False
    first_dirty_offset = checkpoint_dirty_offset
    config = partition_log.config
    if checkpoint_dirty_offset < log_start_offset:
        if not (config.compact and config.delete):
            log.warning(
                "Resetting first dirty offset of %s to log start offset %d since the checkpointed offset %d is invalid.",
                partition_log.dir.name, log_start_offset, checkpoint_dirty_offset,
            )
        first_dirty_offset, force_update = log_start_offset, True
    elif checkpoint_dirty_offset > partition_log.log_end_offset:
        log.warning(
            "The last checkpoint dirty offset for partition %s is %d, which is larger than the log end offset %d. Resetting to the log start offset %d.",
            partition_log.dir.name, checkpoint_dirty_offset, partition_log.log_end_offset, log_start_offset,
        )
        first_dirty_offset, force_update = log_start_offset, True

    candidates = [partition_log.last_stable_offset, partition_log.active_segment.base_offset]
    min_compaction_lag_ms = max(config.min_compaction_lag_ms, 0)
    if min_compaction_lag_ms > 0:
        with partition_log.lock:
            for segment in partition_log.non_active_segments_from(first_dirty_offset):
                if segment.largest_timestamp > now - min_compaction_lag_ms:
                    candidates.append(segment.base_offset)
                    break
    first_uncleanable = min(candidates)
    return OffsetsToClean(first_dirty_offset, max(first_dirty_offset, first_uncleanable), force_update)


def _first_batch_timestamp(segment: LogSegment) -> int:
    """The max timestamp of the segment's first batch, or LONG_MAX when it has none (Kafka's
    getFirstBatchTimestamp)."""
    data = segment.log.read(0, RECORD_BATCH_OVERHEAD)
    if len(data) < HEADER_SIZE_UP_TO_MAGIC:
        return LONG_MAX
    try:
        timestamp = read_batch(data).max_timestamp
    except KcliError:
        return LONG_MAX
    return timestamp if timestamp >= 0 else LONG_MAX


def max_compaction_delay(partition_log: Log, first_dirty_offset: int, now: int) -> int:
    """How far past ``max.compaction.lag.ms`` the oldest dirty segment's first batch is; 0 if not."""
    max_compaction_lag_ms = max(partition_log.config.max_compaction_lag_ms, 0)
    clean_until = now - max_compaction_lag_ms
    if clean_until <= 0:
        return 0
    timestamps = (_first_batch_timestamp(s) for s in partition_log.non_active_segments_from(first_dirty_offset))
    earliest = min((t for t in timestamps if t > 0), default=LONG_MAX)
    return clean_until - earliest if earliest < clean_until else 0


_IN_PROGRESS = "in progress"
_ABORTED = "aborted"


class LogCleanerManager:
    """The cleaning state of every partition and the ``cleaner-offset-checkpoint`` of every log dir.

    ``logs`` returns the logs currently open; the manager never keeps them itself.
    """

    def __init__(self, log_dirs: Iterable[Path | str], logs: Callable[[], Iterable[Log]]) -> None:
        self.log_dirs = [Path(d).absolute() for d in log_dirs]
        self._logs = logs
        self._lock = threading.RLock()
        self._paused_cond = threading.Condition(self._lock)
        # partition -> _IN_PROGRESS, _ABORTED or a pause count (an int >= 1)
        self._in_progress: dict[TopicPartition, str | int] = {}
        self._uncleanable: dict[Path, set[TopicPartition]] = {}
        self.dirtiest_log_cleanable_ratio = 0.0

    def _checkpoint_path(self, log_dir: Path) -> Path:
        return Path(log_dir).absolute() / CLEANER_OFFSET_CHECKPOINT

    # -- checkpoints -------------------------------------------------------------------------------

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        """Every partition's first dirty offset, from every log dir's checkpoint file."""
        with self._lock:
            offsets: dict[TopicPartition, int] = {}
            for log_dir in self.log_dirs:
                path = self._checkpoint_path(log_dir)
                try:
                    offsets.update(read_offset_checkpoint(path))
                except (KcliError, OSError) as exc:
                    log.error("Failed to access checkpoint file %s in dir %s: %s", path.name, log_dir, exc)
            return offsets

    def update_checkpoints(
        self, log_dir: Path, update: tuple[TopicPartition, int] | None = None, remove: TopicPartition | None = None
    ) -> None:
        """Rewrite a log dir's checkpoint: partitions whose log is gone are dropped, ``remove`` too,
        and ``update`` is set."""
        log_dir = Path(log_dir).absolute()
        if log_dir not in self.log_dirs:
            return
        with self._lock:
            path = self._checkpoint_path(log_dir)
            live = {topic_partition(l) for l in self._logs()}
            try:
                current = {tp: offset for tp, offset in read_offset_checkpoint(path).items() if tp in live}
            except (KcliError, OSError) as exc:
                log.error("Failed to access checkpoint file %s in dir %s: %s", path.name, log_dir, exc)
                current = {}
            if remove is not None:
                current.pop(remove, None)
            if update is not None:
                current[update[0]] = update[1]
            try:
                write_offset_checkpoint(path, current)
            except OSError as exc:
                log.error("Failed to access checkpoint file %s in dir %s: %s", path.name, log_dir, exc)

    def maybe_truncate_checkpoint(self, log_dir: Path, partition: TopicPartition, offset: int) -> None:
        """Lower the partition's checkpointed offset to ``offset`` when it is above it (after a truncation)."""
        log_dir = Path(log_dir).absolute()
        if log_dir not in self.log_dirs:
            return
        with self._lock:
            path = self._checkpoint_path(log_dir)
            existing = read_offset_checkpoint(path)
            if existing.get(partition, 0) > offset:
                existing[partition] = offset
                write_offset_checkpoint(path, existing)

    # -- choosing a log ----------------------------------------------------------------------------

    def grab_filthiest_compacted_log(self, now: int, pre_clean_stats: PreCleanStats | None = None) -> LogToClean | None:
        """The compacted log to clean next, marked in progress; None when no log needs cleaning."""
        stats = pre_clean_stats or PreCleanStats()
        with self._lock:
            last_clean = self.all_cleaner_checkpoints()
            dirty: list[LogToClean] = []
            for partition_log in self._logs():
                if not partition_log.config.compact:
                    continue
                tp = topic_partition(partition_log)
                if tp in self._in_progress or self._is_uncleanable(partition_log):
                    continue
                try:
                    offsets = cleanable_offsets(partition_log, last_clean.get(tp), now)
                    if offsets.force_update_checkpoint:
                        self.update_checkpoints(partition_log.dir.parent, update=(tp, offsets.first_dirty_offset))
                    delay = max_compaction_delay(partition_log, offsets.first_dirty_offset, now)
                    stats.update_max_compaction_delay(delay)
                    candidate = LogToClean(tp, partition_log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, delay > 0)
                except Exception as exc:
                    raise LogCleaningError(partition_log, f"Failed to calculate log cleaning stats for partition {partition_log.dir.name}: {exc}") from exc
                if candidate.total_bytes > 0:
                    dirty.append(candidate)
            self.dirtiest_log_cleanable_ratio = max((c.cleanable_ratio for c in dirty), default=0.0)
            cleanable = [
                c for c in dirty
                if (c.need_compaction_now and c.cleanable_bytes > 0) or c.cleanable_ratio > c.log.config.min_cleanable_dirty_ratio
            ]
            if not cleanable:
                return None
            stats.cleanable_partitions = len(cleanable)
            filthiest = max(cleanable, key=lambda c: c.cleanable_ratio)
            self._in_progress[filthiest.topic_partition] = _IN_PROGRESS
            return filthiest

    def deletable_logs(self) -> list[Log]:
        """Compacted logs not being cleaned, marked in progress while retention runs on them."""
        with self._lock:
            found = [
                l for l in self._logs()
                if l.config.compact and topic_partition(l) not in self._in_progress and not self._is_uncleanable(l)
            ]
            for partition_log in found:
                self._in_progress[topic_partition(partition_log)] = _IN_PROGRESS
            return found

    def pause_cleaning_for_non_compacted_partitions(self) -> list[Log]:
        """Logs without ``compact`` and no cleaning or retention under way, paused for retention to
        run on them (a policy switched meanwhile cannot have both at once)."""
        with self._lock:
            found = [l for l in self._logs() if not l.config.compact and topic_partition(l) not in self._in_progress]
            for partition_log in found:
                self._in_progress[topic_partition(partition_log)] = 1
            return found

    # -- states ------------------------------------------------------------------------------------

    def cleaning_state(self, partition: TopicPartition) -> str | int | None:
        """``"in progress"``, ``"aborted"``, a pause count, or None when idle."""
        with self._lock:
            return self._in_progress.get(partition)

    def abort_cleaning(self, partition: TopicPartition) -> None:
        """Abort the partition's cleaning if under way and wait until the cleaner let go of it."""
        with self._lock:
            self.abort_and_pause_cleaning(partition)
            self.resume_cleaning([partition])

    def abort_and_pause_cleaning(self, partition: TopicPartition, timeout: float | None = None) -> None:
        """Abort the partition's cleaning if under way and pause it until ``resume_cleaning``.

        Blocks until the cleaner has stopped working on the partition, which it notices between
        two chunks it reads. Must not be called holding the log's lock: the cleaner may need it to
        finish a swap first.
        """
        with self._lock:
            state = self._in_progress.get(partition)
            if state is None:
                self._in_progress[partition] = 1
            elif state == _IN_PROGRESS:
                self._in_progress[partition] = _ABORTED
            elif isinstance(state, int):
                self._in_progress[partition] = state + 1
            else:
                raise KcliError(f"Compaction for partition {partition[0]}-{partition[1]} cannot be aborted and paused since it is in {state} state.")
            if not self._paused_cond.wait_for(lambda: isinstance(self._in_progress.get(partition), int), timeout):
                raise KcliError(f"Timed out waiting for the cleaning of {partition[0]}-{partition[1]} to stop")

    def resume_cleaning(self, partitions: Iterable[TopicPartition]) -> None:
        """Undo one pause of each partition."""
        with self._lock:
            for partition in partitions:
                state = self._in_progress.get(partition)
                if state is None:
                    raise KcliError(f"Compaction for partition {partition[0]}-{partition[1]} cannot be resumed since it is not paused.")
                if not isinstance(state, int):
                    raise KcliError(f"Compaction for partition {partition[0]}-{partition[1]} cannot be resumed since it is in {state} state.")
                if state == 1:
                    del self._in_progress[partition]
                else:
                    self._in_progress[partition] = state - 1

    def check_cleaning_aborted(self, partition: TopicPartition) -> None:
        with self._lock:
            if self._in_progress.get(partition) == _ABORTED:
                raise LogCleaningAbortedError(f"The cleaning of {partition[0]}-{partition[1]} was aborted")

    def done_cleaning(self, partition: TopicPartition, log_dir: Path, end_offset: int) -> None:
        """The cleaner finished with the partition: checkpoint ``end_offset``, or if it was aborted,
        leave it paused and wake whoever waits for that."""
        with self._lock:
            if self._in_progress.get(partition) == _IN_PROGRESS:
                self.update_checkpoints(log_dir, update=(partition, end_offset))
            self._leave_in_progress(partition)

    def done_deleting(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for partition in partitions:
                self._leave_in_progress(partition)

    def _leave_in_progress(self, partition: TopicPartition) -> None:
        """A cleaning or deletion ended: forget the partition, or, when it was aborted meanwhile,
        leave it paused once and wake whoever waits for that."""
        state = self._in_progress.get(partition)
        if state == _IN_PROGRESS:
            del self._in_progress[partition]
        elif state == _ABORTED:
            self._in_progress[partition] = 1
            self._paused_cond.notify_all()
        elif state is None:
            raise KcliError(f"State for partition {partition[0]}-{partition[1]} should exist.")
        else:
            raise KcliError(f"In-progress partition {partition[0]}-{partition[1]} cannot be in {state} state.")

    # -- uncleanable partitions --------------------------------------------------------------------

    def mark_partition_uncleanable(self, log_dir: Path, partition: TopicPartition) -> None:
        with self._lock:
            self._uncleanable.setdefault(Path(log_dir).absolute(), set()).add(partition)

    def uncleanable_partitions(self, log_dir: Path) -> set[TopicPartition]:
        with self._lock:
            return set(self._uncleanable.get(Path(log_dir).absolute(), ()))

    def _is_uncleanable(self, partition_log: Log) -> bool:
        return topic_partition(partition_log) in self._uncleanable.get(partition_log.dir.parent.absolute(), ())

    def maintain_uncleanable_partitions(self) -> None:
        """Forget uncleanable partitions whose log is gone."""
        with self._lock:
            if not self._uncleanable:
                return
            live = {topic_partition(l) for l in self._logs()}
            for log_dir in list(self._uncleanable):
                self._uncleanable[log_dir] &= live
                if not self._uncleanable[log_dir]:
                    del self._uncleanable[log_dir]
