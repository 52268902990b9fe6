"""What the broker counts against its open-file limit: the descriptors its logs hold."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from kcli.storage.descriptors import DESCRIPTORS_PER_NEW_PARTITION, descriptors_for, open_file_limit, raise_open_file_limit
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.records import NewRecord, build_batch


def open_files_under(directory: Path) -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(directory)) and not fd_is_lock(fd):
                count += 1
        except OSError:
            pass
    return count


def fd_is_lock(fd: str) -> bool:
    return os.readlink(f"/proc/self/fd/{fd}").endswith("/.lock")


def fill(manager: LogManager, topic: str, partition: int, batches: int) -> None:
    partition_log = manager.get_or_create_log(topic, partition)
    for n in range(batches):
        partition_log.append(build_batch([NewRecord(None, b"x" * 200, n)]))


def test_the_count_matches_what_the_logs_hold_once_written(tmp_path):
    manager = LogManager([tmp_path / "a", tmp_path / "b"], LogConfig(segment_bytes=1024))
    try:
        fill(manager, "rolled", 0, 12)  # several segments: each keeps its .log open
        fill(manager, "rolled", 1, 1)
        manager.get_or_create_log("idle", 0)
        held = open_files_under(tmp_path)
        assert manager.descriptors_needed() == held
        assert manager.descriptors_needed() == descriptors_for(3, sum(len(l.segments) for l in manager.all_logs()))
        assert len(manager.get_log("rolled", 0).segments) > 2
    finally:
        manager.shutdown()


def test_the_logs_on_disk_are_counted_without_opening_them(tmp_path):
    manager = LogManager([tmp_path / "a", tmp_path / "b"], LogConfig(segment_bytes=1024))
    fill(manager, "rolled", 0, 12)
    manager.get_or_create_log("idle", 0)
    manager.get_or_create_log("idle", 1)
    expected = manager.descriptors_needed()
    manager.shutdown()
    (tmp_path / "a" / "gone-0-delete").mkdir()
    (tmp_path / "b" / "__cluster_metadata-0").mkdir()
    (tmp_path / "b" / "empty-0").mkdir()  # loading gives it one segment
    reopened = LogManager([tmp_path / "a", tmp_path / "b"], load=False)
    try:
        on_disk = reopened.logs_on_disk()
        assert open_files_under(tmp_path) == 0
        assert sorted(on_disk.partitions) == ["empty-0", "idle-0", "idle-1", "rolled-0"]
        assert on_disk.descriptors == expected + DESCRIPTORS_PER_NEW_PARTITION
    finally:
        reopened.abandon()


def test_the_soft_open_file_limit_is_raised_to_the_hard_one():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(256, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        assert raise_open_file_limit() == (lowered, hard)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
        assert open_file_limit() == hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
