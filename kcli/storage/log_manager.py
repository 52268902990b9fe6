"""Every partition log in every ``log.dirs`` entry (Kafka's LogManager).

Each log dir is locked (``.lock``) while in use. At start the manager loads every
``<topic>-<partition>`` directory, with the recovery point, log start offset and high watermark
of the dir's checkpoint files (the high watermark clamped to what the log holds); when ``.kafka_cleanshutdown`` is there the logs skip recovery, and the marker is
removed once they are loaded. The periodic work (flush, retention, checkpoints) is plain methods
for the broker to schedule. ``start_cleaner`` starts the log cleaner's threads, which compact the
logs whose ``cleanup.policy`` includes ``compact`` and run retention on them; deleting or
truncating a log stops its cleaning first. ``shutdown`` stops the cleaner, flushes, writes the
checkpoints, closes the logs and writes the marker.

Disk errors go through one ``LogDirFailureChannel`` shared by every log: a dir taken offline gets
no more periodic work, and its shutdown writes neither checkpoints nor the marker, so the next
start recovers it. A checkpoint that cannot be written (a full disk) keeps the one before it and
is warned about once per dir; a dir whose shutdown could not write everything gets no marker.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from kcli.common import CLUSTER_METADATA_TOPIC_NAME
from kcli.errors import KafkaStorageError, KcliError
from kcli.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    has_clean_shutdown_marker,
    read_offset_checkpoint,
    remove_clean_shutdown_marker,
    write_clean_shutdown_marker,
    write_offset_checkpoint,
)
from kcli.storage.descriptors import LogsOnDisk, descriptors_for, logs_on_disk
from kcli.storage.log import InconsistentTopicIdError, Log, log_dir_name, parse_topic_partition_name
from kcli.storage.log_cleaner import CleanerConfig, LogCleaner, StepHook
from kcli.storage.log_config import LogConfig
from kcli.storage.log_dir_failure import LogDirFailureChannel
from kcli.storage.segment import now_ms
from kcli.storage.truncated import TruncatedRecords

# Kafka's RemoteIndexCache.DIR_NAME: tiered storage's index cache, the one directory in a log dir
# that Kafka's LogManager skips without it being a partition's.
REMOTE_INDEX_CACHE_DIR_NAME = "remote-log-index-cache"

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
# The KRaft metadata log lives in a log dir but is not a partition log the manager owns.

DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86400000  # producer.id.expiration.ms

TopicConfigs = Mapping[str, LogConfig] | Callable[[str], LogConfig | None]


class LogManager:
    def __init__(
        self,
        log_dirs: list[Path | str],
        default_config: LogConfig | None = None,
        topic_configs: TopicConfigs | None = None,
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        clock: Callable[[], int] = now_ms,
        load: bool = True,
    ) -> None:
        """Lock every log dir, then (with ``load``) open every partition log in them."""
        if not log_dirs:
            raise KcliError("log.dirs must name at least one directory")
        self.log_dirs = [Path(d).absolute() for d in log_dirs]
        self.default_config = default_config or LogConfig()
        self._topic_configs = topic_configs
        self._clock = clock
        self._producer_id_expiration_ms = producer_id_expiration_ms
        self._lock = threading.RLock()
        self._logs: dict[tuple[str, int], Log] = {}
        self._dir_locks: list[int] = []
        self._cleaner: LogCleaner | None = None
        self.failure_channel = LogDirFailureChannel()
        # Partitions whose dir went offline while loading: not created again in another dir.
        self._offline_partitions: set[tuple[str, int]] = set()
        # Dirs that could not even be locked (a read-only or failed disk): offline once loading.
        self._unusable_dirs: dict[Path, OSError] = {}
        try:
            for log_dir in self.log_dirs:
                try:
                    log_dir.mkdir(parents=True, exist_ok=True)
                    self._dir_locks.append(_lock_dir(log_dir))
                except OSError as exc:
                    self._unusable_dirs[log_dir] = exc
        except BaseException:
            self._release_locks()
            raise
        if load:
            self.load_logs()

    def load_logs(self) -> None:
        """Open (recovering when needed) every partition log of every dir; done once, at start.

        A dir whose loading fails with an I/O error goes offline, as in Kafka: its partitions are
        not served (nor created again elsewhere) and the other dirs load; when no dir is left, the
        start fails."""
        try:
            for log_dir in self.log_dirs:
                try:
                    unusable = self._unusable_dirs.get(log_dir)
                    if unusable is not None:
                        raise unusable
                    self._load_logs(log_dir)
                except OSError as exc:
                    self._load_failed(log_dir, exc)
            if self.log_dirs and not self.online_log_dirs():
                raise KcliError(f"No log dir could be loaded: {'; '.join(f'{d}: {self.failure_channel.offline_reason(d)}' for d in self.log_dirs)}")
        except BaseException:
            for existing in self._logs.values():
                existing.close()
            self._logs.clear()
            self._release_locks()
            raise

    def _load_failed(self, log_dir: Path, exc: OSError) -> None:
        for key, loaded in list(self._logs.items()):
            if loaded.dir.parent == log_dir:
                loaded.close_handlers()
                del self._logs[key]
        with contextlib.suppress(OSError):
            for child in log_dir.iterdir():
                with contextlib.suppress(KcliError):
                    self._offline_partitions.add(parse_topic_partition_name(child.name))
        # Loading may have changed some of its logs before failing: the next start recovers them.
        with contextlib.suppress(OSError):
            remove_clean_shutdown_marker(log_dir)
        self.failure_channel.maybe_add_offline_log_dir(log_dir, f"Error while loading logs in dir {log_dir}: {exc}")

    # -- configs -----------------------------------------------------------------------------------

    def config_for(self, topic: str) -> LogConfig:
        configs = self._topic_configs
        found = None
        if callable(configs):
            found = configs(topic)
        elif configs is not None:
            found = configs.get(topic)
        return found or self.default_config

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        """Apply a topic's new config to its open logs (the caller keeps ``topic_configs`` current)."""
        with self._lock:
            for (t, _), partition_log in self._logs.items():
                if t == topic:
                    partition_log.update_config(config)

    # -- loading -----------------------------------------------------------------------------------

    def _load_logs(self, log_dir: Path) -> None:
        had_clean_shutdown = has_clean_shutdown_marker(log_dir)
        recovery_points = read_offset_checkpoint(log_dir / RECOVERY_POINT_OFFSET_CHECKPOINT)
        log_start_offsets = read_offset_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = read_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT)
        for child in sorted(log_dir.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith("-delete"):
                log.info("Deleting %s, a log marked for deletion", child)
                shutil.rmtree(child, ignore_errors=True)
                continue
            if child.name.endswith(("-future", "-stray")):
                log.warning("Skipping %s: kcli does not move replicas between log dirs", child)
                continue
            if child.name == REMOTE_INDEX_CACHE_DIR_NAME:
                continue
            # Any other directory that is not a partition's stops the start with Kafka's line
            # naming it, as Kafka's LogManager.loadLogs does.
            topic, partition = parse_topic_partition_name(child.name, child)
            if topic == CLUSTER_METADATA_TOPIC_NAME:
                continue
            key = (topic, partition)
            if key in self._logs:
                raise KcliError(f"Duplicate log directories for {topic}-{partition} are found in both {self._logs[key].dir} and {child}.")
            self._logs[key] = Log.open(
                child,
                self.config_for(topic),
                had_clean_shutdown=had_clean_shutdown,
                log_start_offset=log_start_offsets.get(key, 0),
                recovery_point=recovery_points.get(key, 0),
                producer_id_expiration_ms=self._producer_id_expiration_ms,
                clock=self._clock,
                failure_channel=self.failure_channel,
            )
            if key in high_watermarks:
                # Kafka's Partition.createLog: the high watermark the replica had when last checkpointed.
                self._logs[key].update_high_watermark(high_watermarks[key])
        remove_clean_shutdown_marker(log_dir)

    # -- logs --------------------------------------------------------------------------------------

    def is_partition_offline(self, topic: str, partition: int) -> bool:
        """Whether the partition's log is in a dir that went offline (Kafka's HostedPartition.Offline)."""
        if (topic, partition) in self._offline_partitions:
            return True
        found = self._logs.get((topic, partition))
        return found is not None and found.is_offline

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def logs_on_disk(self) -> LogsOnDisk:
        """The partition logs ``load_logs`` would open, counted without opening them."""
        return logs_on_disk(self.log_dirs, skipped_topics=(CLUSTER_METADATA_TOPIC_NAME,))

    def descriptors_needed(self) -> int:
        """File descriptors the hosted logs hold once each active segment is written (descriptors.py)."""
        with self._lock:
            return descriptors_for(len(self._logs), sum(len(partition_log.segments) for partition_log in self._logs.values()))

    def logs_in_dir(self, log_dir: Path) -> list[Log]:
        with self._lock:
            return [partition_log for partition_log in self._logs.values() if partition_log.dir.parent == log_dir]

    def get_or_create_log(self, topic: str, partition: int, topic_id: uuid.UUID | None = None, config: LogConfig | None = None) -> Log:
        """The partition's log, created in the log dir holding the fewest partitions when new."""
        with self._lock:
            existing = self._logs.get((topic, partition))
            if existing is not None:
                if topic_id is not None and existing.topic_id is not None and existing.topic_id != topic_id:
                    raise InconsistentTopicIdError(f"{topic}-{partition}", topic_id, existing.topic_id)
                return existing
            if (topic, partition) in self._offline_partitions:
                raise KafkaStorageError(f"The log of {topic}-{partition} is in an offline log dir")
            log_dir = self._next_log_dir()
            created = Log.open(
                log_dir / log_dir_name(topic, partition),
                config or self.config_for(topic),
                had_clean_shutdown=True,
                topic_id=topic_id,
                producer_id_expiration_ms=self._producer_id_expiration_ms,
                clock=self._clock,
                failure_channel=self.failure_channel,
            )
            self._logs[(topic, partition)] = created
            log.info("Created log for partition %s-%d in %s", topic, partition, log_dir)
            return created

    def online_log_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if not self.failure_channel.is_offline(d)]

    def _next_log_dir(self) -> Path:
        online = self.online_log_dirs()
        if not online:
            raise KafkaStorageError(f"No log dir is online to create a log in: {', '.join(map(str, self.log_dirs))} are offline")
        if len(online) == 1:
            return online[0]
        # Counted by path string: hashing Path objects made creating n logs cost O(n^2) slow steps.
        counts = {str(d): 0 for d in online}
        for partition_log in self._logs.values():
            parent = str(partition_log.dir.parent)
            if parent in counts:
                counts[parent] += 1
        return min(online, key=lambda d: counts[str(d)])

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove the partition's log and its files (its cleaning stopped first, its cleaner
        checkpoint entry removed); False when there is none. Its one caller is
        ``ReplicaManager.stop_replicas`` with ``delete``: a broker deletes a replica only on the
        controller's StopReplica with delete (or, in single-process mode, its own topic deletion)."""
        with self._lock:
            partition_log = self._logs.pop((topic, partition), None)
        if partition_log is None:
            return False
        cleaner = self._cleaner
        if cleaner is not None:
            cleaner.abort_cleaning((topic, partition))
            cleaner.update_checkpoints(partition_log.dir.parent, remove=(topic, partition))
        partition_log.delete()
        log.info("Deleted log for partition %s-%d in %s.", topic, partition, partition_log.dir)
        return True

    def truncate_to(self, topic: str, partition: int, offset: int, *, keep_aside_epoch: int | None = None) -> TruncatedRecords | None:
        """Truncate the partition's log to ``offset`` (a follower's truncation; ``keep_aside_epoch``
        as ``Log.truncate_to``); cleaning is paused meanwhile when the truncation reaches below
        the active segment, and the cleaner checkpoint lowered. Returns what was removed; None
        when the log does not exist or already ends there."""
        partition_log = self.get_log(topic, partition)
        if partition_log is None:
            return None
        key = (topic, partition)
        cleaner = self._cleaner
        stop_cleaner = cleaner is not None and offset < partition_log.active_segment.base_offset
        if stop_cleaner:
            cleaner.abort_and_pause_cleaning(key)
            log.info("The cleaning for partition %s-%d is aborted and paused", topic, partition)
        try:
            truncated = partition_log.truncate_to(offset, keep_aside_epoch=keep_aside_epoch)
            if stop_cleaner:
                cleaner.maybe_truncate_checkpoint(partition_log.dir.parent, key, partition_log.active_segment.base_offset)
        finally:
            if stop_cleaner:
                cleaner.resume_cleaning([key])
                log.info("Cleaning for partition %s-%d is resumed", topic, partition)
        if truncated:
            self._checkpoint_recovery_points_in(partition_log.dir.parent)
        return truncated

    def truncate_fully_and_start_at(self, topic: str, partition: int, new_offset: int) -> bool:
        """Empty the partition's log and start it at ``new_offset``, its cleaning paused meanwhile
        and its cleaner checkpoint lowered; False when the log does not exist."""
        partition_log = self.get_log(topic, partition)
        if partition_log is None:
            return False
        key = (topic, partition)
        cleaner = self._cleaner
        if cleaner is not None:
            cleaner.abort_and_pause_cleaning(key)
        try:
            partition_log.truncate_fully_and_start_at(new_offset)
            if cleaner is not None:
                cleaner.maybe_truncate_checkpoint(partition_log.dir.parent, key, partition_log.active_segment.base_offset)
        finally:
            if cleaner is not None:
                cleaner.resume_cleaning([key])
        self._checkpoint_recovery_points_in(partition_log.dir.parent)
        return True

    # -- the log cleaner ---------------------------------------------------------------------------

    @property
    def cleaner(self) -> LogCleaner | None:
        return self._cleaner

    def start_cleaner(self, config: CleanerConfig, *, step_hook: StepHook | None = None) -> LogCleaner | None:
        """Start the log cleaner (``log.cleaner.enable``): ``log.cleaner.threads`` threads compact
        the compacted logs and run their retention. Returns it, or None when disabled."""
        if not config.enable_cleaner or self._cleaner is not None:
            return self._cleaner
        cleaner = LogCleaner(config, self.log_dirs, self.all_logs, clock=self._clock, step_hook=step_hook)
        cleaner.startup()
        self._cleaner = cleaner
        return cleaner

    def stop_cleaner(self, timeout: float = 30.0) -> None:
        """Stop the cleaner threads, each aborting the cleaning it has under way (bounded wait)."""
        cleaner, self._cleaner = self._cleaner, None
        if cleaner is not None:
            cleaner.shutdown(timeout)

    # -- periodic work -----------------------------------------------------------------------------

    def flush_dirty_logs(self, now: int | None = None) -> int:
        """Flush logs whose ``flush.ms`` has passed and segments rolled since; returns how many logs."""
        now = self._clock() if now is None else now
        flushed = 0
        for partition_log in self.all_logs():
            try:
                flushed += partition_log.maybe_flush(now)
            except KafkaStorageError:
                pass  # its dir went offline, which the failure channel has logged
        return flushed

    def cleanup_logs(self, now: int | None = None) -> int:
        """Retention: delete old segments and remove files whose delete delay passed.

        With the cleaner running, compacted logs are left to it (it runs their retention between
        cleanings, as Kafka does) and the others are paused for the cleaner meanwhile; without it,
        every log goes through retention here.
        """
        now = self._clock() if now is None else now
        deleted = 0
        cleaner = self._cleaner
        if cleaner is None:
            for partition_log in self.all_logs():
                deleted += self._delete_old_segments(partition_log, now)
        else:
            paused = cleaner.pause_cleaning_for_non_compacted_partitions()
            try:
                for partition_log in paused:
                    deleted += self._delete_old_segments(partition_log, now)
            finally:
                cleaner.resume_cleaning([(l.topic, l.partition) for l in paused])
        for partition_log in self.all_logs():
            if not partition_log.is_offline:
                partition_log.delete_pending_segments(now)
        return deleted

    @staticmethod
    def _delete_old_segments(partition_log: Log, now: int) -> int:
        if partition_log.is_offline:
            return 0
        try:
            return partition_log.delete_old_segments(now)
        except KafkaStorageError:
            return 0  # its dir went offline, which the failure channel has logged

    def checkpoint_recovery_points(self) -> bool:
        written = True
        for log_dir in self.log_dirs:
            written &= self._checkpoint_recovery_points_in(log_dir)
        return written

    def _checkpoint_recovery_points_in(self, log_dir: Path) -> bool:
        logs = self.logs_in_dir(log_dir)
        offsets = {(l.topic, l.partition): l.recovery_point for l in logs}
        return self._write_checkpoint(log_dir, RECOVERY_POINT_OFFSET_CHECKPOINT, offsets)

    def checkpoint_high_watermarks(self) -> bool:
        """``replication-offset-checkpoint`` in each dir: every log's high watermark (Kafka's
        ReplicaManager.checkpointHighWatermarks, every replica.high.watermark.checkpoint.interval.ms)."""
        written = True
        for log_dir in self.log_dirs:
            offsets = {(l.topic, l.partition): l.high_watermark for l in self.logs_in_dir(log_dir)}
            written &= self._write_checkpoint(log_dir, REPLICATION_OFFSET_CHECKPOINT, offsets)
        return written

    def checkpoint_log_start_offsets(self) -> bool:
        """Write the log start offsets that are above their first segment (only those, as Kafka)."""
        written = True
        for log_dir in self.log_dirs:
            offsets = {
                (l.topic, l.partition): l.log_start_offset for l in self.logs_in_dir(log_dir) if l.log_start_offset > l.segments[0].base_offset
            }
            written &= self._write_checkpoint(log_dir, LOG_START_OFFSET_CHECKPOINT, offsets)
        return written

    def _write_checkpoint(self, log_dir: Path, name: str, offsets: dict[tuple[str, int], int]) -> bool:
        """Write one of the dir's offset checkpoints; False (the previous file kept, a warning once
        per dir) when the disk refuses it, or when the dir is offline."""
        if self.failure_channel.is_offline(log_dir):
            return False
        try:
            write_offset_checkpoint(log_dir / name, offsets)
        except OSError as exc:
            self.failure_channel.write_refused(log_dir, f"could not write {name}: {exc}")
            return False
        return True

    def shutdown(self, broker_epoch: int | None = None) -> None:
        """Stop the cleaner, flush and close every log, write the checkpoints, then mark each dir
        cleanly shut down."""
        self.stop_cleaner()
        with self._lock:
            logs = list(self._logs.values())
            # A dir where something could not be written is not marked clean: its next start recovers it.
            unclean: dict[Path, str] = {d: "it is offline" for d in self.log_dirs if self.failure_channel.is_offline(d)}
            for partition_log in logs:
                if partition_log.dir.parent in unclean:
                    continue
                try:
                    partition_log.flush()
                except KafkaStorageError as exc:
                    unclean.setdefault(partition_log.dir.parent, str(exc))
            for log_dir in self.log_dirs:
                if log_dir in unclean:
                    continue
                if not self._checkpoint_recovery_points_in(log_dir):
                    unclean[log_dir] = f"its {RECOVERY_POINT_OFFSET_CHECKPOINT} could not be written"
            self.checkpoint_log_start_offsets()
            self.checkpoint_high_watermarks()
            for partition_log in logs:
                try:
                    partition_log.close()
                except OSError as exc:
                    unclean.setdefault(partition_log.dir.parent, f"closing {partition_log.dir.name} failed: {exc}")
            for log_dir in self.log_dirs:
                if log_dir not in unclean:
                    try:
                        write_clean_shutdown_marker(log_dir, broker_epoch)
                        continue
                    except OSError as exc:
                        unclean[log_dir] = f"the clean-shutdown marker could not be written: {exc}"
                log.warning("Log dir %s was not shut down cleanly (%s); its logs are recovered at the next start", log_dir, unclean[log_dir])
            self._logs.clear()
            self._release_locks()

    def abandon(self) -> None:
        """Close without writing checkpoints or the clean-shutdown marker (a start that failed)."""
        self.stop_cleaner()
        with self._lock:
            for partition_log in self._logs.values():
                partition_log.close()
            self._logs.clear()
            self._release_locks()

    def _release_locks(self) -> None:
        for fd in self._dir_locks:
            os.close(fd)
        self._dir_locks.clear()


def _lock_dir(log_dir: Path) -> int:
    fd = os.open(log_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise KcliError(
            f"Failed to acquire lock on file .lock in {log_dir}. A Kafka instance in another process or thread is using this directory."
        ) from None
    return fd
