"""A failed append leaves the log exactly as it was; when even that fails, the log dir goes offline.

Disk errors are injected at each write step of an append (the ``.log`` write, whole or half done;
the offset and time index entries; a roll's new index and producer snapshot; the leader epoch
checkpoint) by making ``os.pwrite``, ``os.ftruncate`` or ``os.fsync`` raise ENOSPC for the file
the step writes.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from kcli.errors import ErrorCode, KafkaStorageError
from kcli.storage.file_records import FileRecords
from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.records import NewRecord, build_batch, iter_batches

PRODUCER_ID = 7
ROLL_AT_3 = "a segment size that makes the fourth batch roll"


class DiskFaults:
    """Makes chosen os calls raise ENOSPC for files whose name ends with a given suffix."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rules: list[tuple[str, str, bool]] = []  # (call, suffix, half: write half first)
        self.hits = 0
        for call in ("pwrite", "ftruncate", "fsync"):
            original = getattr(os, call)
            monkeypatch.setattr(os, call, self._wrap(call, original))

    def _wrap(self, call, original):
        def faulty(fd, *args):
            for rule_call, suffix, half in self.rules:
                if rule_call == call and _path_of(fd).endswith(suffix):
                    self.hits += 1
                    if half and call == "pwrite":
                        data, position = args
                        if len(data) > 1:
                            return original(fd, memoryview(data)[: len(data) // 2], position)
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return original(fd, *args)

        return faulty

    def fail(self, call: str, suffix: str, half: bool = False) -> None:
        self.rules.append((call, suffix, half))

    def clear(self) -> None:
        self.rules.clear()


def _path_of(fd) -> str:
    if not isinstance(fd, int):
        fd = fd.fileno()
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> DiskFaults:
    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd to tell which file a descriptor writes")
    return DiskFaults(monkeypatch)


def batch(sequence: int, value: bytes = b"v" * 100, epoch: int = -1) -> bytes:
    return build_batch(
        [NewRecord(b"k", value, 1_000 + sequence)],
        producer_id=PRODUCER_ID,
        producer_epoch=0,
        base_sequence=sequence,
        partition_leader_epoch=epoch,
    )


def state_of(log: Log) -> dict:
    """Everything an undone append must leave unchanged: files (bytes) and in-memory state."""
    files = {}
    for path in sorted(log.dir.iterdir()):
        if path.is_file():
            files[path.name] = path.read_bytes()
    producers = {pid: (e.last_seq, e.last_data_offset) for pid, e in log.producer_state.producers.items()}
    active = log.active_segment
    return {
        "files": files,
        "log_end_offset": log.log_end_offset,
        "segments": [(s.base_offset, s.size) for s in log.segments],
        "indexes": (active.offset_index.entries, active.time_index.entries, active.max_timestamp_so_far),
        "epochs": log.leader_epoch_cache.entries,
        "producers": producers,
        "map_end_offset": log.producer_state.map_end_offset,
    }


def values_in(directory: Path) -> list[tuple[int, bytes]]:
    records = []
    for path in sorted(directory.glob("*.log")):
        with FileRecords.open(path) as file:
            data = file.read(0, file.size)
        for b in iter_batches(data):
            b.validate()
            records.extend((r.offset, r.value) for r in b.records())
    return records


# (name, os call, file suffix, write half first, log config, leader epoch of the failing append)
STEPS = [
    ("log write", "pwrite", ".log", False, {}, 0),
    ("log write, half done", "pwrite", ".log", True, {}, 0),
    ("offset index entry", "pwrite", ".index", False, {}, 0),
    ("time index entry", "pwrite", ".timeindex", False, {}, 0),
    ("roll: new index", "ftruncate", "00000000000000000003.index", False, {"segment_bytes": ROLL_AT_3}, 0),
    ("roll: producer snapshot", "fsync", "00000000000000000003.snapshot.tmp", False, {"segment_bytes": ROLL_AT_3}, 0),
    ("leader epoch checkpoint", "fsync", "leader-epoch-checkpoint.tmp", False, {}, 1),
]


@pytest.mark.parametrize(("call", "suffix", "half", "config", "epoch"), [s[1:] for s in STEPS], ids=[s[0] for s in STEPS])
def test_an_append_failing_at_any_step_leaves_the_log_as_it_was(tmp_path, faults, call, suffix, half, config, epoch):
    if config.get("segment_bytes") == ROLL_AT_3:
        config = {**config, "segment_bytes": 3 * len(batch(0)) + 1}
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=1, **config))
    for sequence in range(3):
        log.append(batch(sequence), leader_epoch=0)
    assert len(log.segments) == 1
    before = state_of(log)

    faults.fail(call, suffix, half)
    with pytest.raises(KafkaStorageError) as raised:
        log.append(batch(3, b"refused"), leader_epoch=epoch)
    assert raised.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert faults.hits, "the fault was never reached: the test does not exercise its step"
    assert state_of(log) == before
    assert not log.is_offline

    # The same batch is accepted once the disk takes it, at the offset the refused one would have had.
    faults.clear()
    info = log.append(batch(3, b"accepted"), leader_epoch=epoch)
    assert (info.first_offset, info.duplicate) == (3, False)
    log.close()
    expected = [(0, b"v" * 100), (1, b"v" * 100), (2, b"v" * 100), (3, b"accepted")]
    assert values_in(log.dir) == expected
    for clean in (True, False):
        reopened = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=1, **config), had_clean_shutdown=clean)
        assert reopened.log_end_offset == 4
        assert [(r.offset, r.value) for r in _read(reopened)] == expected
        reopened.close()


def _read(log: Log):
    data = log.read(0, 1 << 20).read()
    return [r for b in iter_batches(data) for r in b.records()]


def test_a_refused_append_is_answered_again_not_deduplicated(tmp_path, faults):
    """The producer table did not take the refused batch: its retry is written, not answered as a duplicate."""
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=1))
    log.append(batch(0))
    faults.fail("pwrite", ".index")
    with pytest.raises(KafkaStorageError):
        log.append(batch(1))
    faults.clear()
    info = log.append(batch(1))
    assert (info.first_offset, info.duplicate) == (1, False)
    assert log.log_end_offset == 2


def test_when_the_undoing_fails_too_the_log_dir_goes_offline_and_other_dirs_keep_serving(tmp_path, faults):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = LogManager(dirs, LogConfig(index_interval_bytes=1))
    first = manager.get_or_create_log("t", 0)
    second = manager.get_or_create_log("t", 1)
    assert first.dir.parent != second.dir.parent
    for log in (first, second):
        log.append(batch(0))
    faults.fail("pwrite", ".index")  # the append fails after its .log write...
    faults.fail("ftruncate", f"{first.dir.name}/00000000000000000000.log")  # ...which cannot be cut back
    with pytest.raises(KafkaStorageError):
        first.append(batch(1))
    faults.clear()
    assert first.is_offline
    assert manager.failure_channel.offline_dirs == [first.dir.parent]
    for operation in (lambda: first.append(batch(1)), lambda: first.read(0, 1000), lambda: first.fetch_offset_by_timestamp(0)):
        with pytest.raises(KafkaStorageError) as raised:
            operation()
        assert raised.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert second.append(batch(1)).first_offset == 1
    # New logs go to the dirs still online.
    assert manager.get_or_create_log("t", 2).dir.parent == second.dir.parent
    manager.shutdown()
    # The offline dir is not marked clean: the next start recovers it. The refused batch's .log
    # write had completed, so recovery finds it whole and in sequence and keeps it, as Kafka would.
    assert not (first.dir.parent / ".kafka_cleanshutdown").exists()
    assert (second.dir.parent / ".kafka_cleanshutdown").exists()
    reopened = LogManager(dirs, LogConfig(index_interval_bytes=1))
    assert reopened.get_log("t", 0).log_end_offset == 2
    assert [r.offset for r in _read(reopened.get_log("t", 0))] == [0, 1]
    assert reopened.get_log("t", 1).log_end_offset == 2
    reopened.shutdown()


def test_a_failed_fsync_takes_the_dir_offline(tmp_path, faults):
    log = Log.open(tmp_path / "t-0", LogConfig())
    log.append(batch(0))
    faults.fail("fsync", ".log")
    with pytest.raises(KafkaStorageError):
        log.flush()
    assert log.is_offline


def test_a_checkpoint_the_disk_refuses_keeps_the_previous_one_and_leaves_no_temporary_file(tmp_path, faults):
    manager = LogManager([tmp_path / "a"], LogConfig())
    log = manager.get_or_create_log("t", 0)
    log.append(batch(0))
    assert manager.checkpoint_recovery_points()
    checkpoint = tmp_path / "a" / "recovery-point-offset-checkpoint"
    previous = checkpoint.read_bytes()
    log.flush()
    faults.fail("fsync", "recovery-point-offset-checkpoint.tmp")
    assert not manager.checkpoint_recovery_points()
    assert checkpoint.read_bytes() == previous
    assert not list((tmp_path / "a").glob("*.tmp"))
    assert not log.is_offline
    faults.clear()
    manager.shutdown()


def test_a_shutdown_that_cannot_write_leaves_no_clean_shutdown_marker(tmp_path, faults):
    manager = LogManager([tmp_path / "a"], LogConfig())
    log = manager.get_or_create_log("t", 0)
    log.append(batch(0))
    faults.fail("fsync", ".snapshot.tmp")  # the producer snapshot a clean close writes
    manager.shutdown()
    assert not (tmp_path / "a" / ".kafka_cleanshutdown").exists()
    faults.clear()
    reopened = LogManager([tmp_path / "a"], LogConfig())
    assert reopened.get_log("t", 0).log_end_offset == 1
    reopened.shutdown()


def test_a_cleaning_the_disk_refuses_leaves_the_log_and_no_cleaned_file(tmp_path, faults):
    from kcli.storage.log_cleaner import Cleaner, Throttler
    from kcli.storage.log_cleaner_manager import LogToClean, cleanable_offsets
    from kcli.storage.offset_map import OffsetMap

    log = Log.open(tmp_path / "t-0", LogConfig(cleanup_policy=("compact",), segment_bytes=1024))
    for i in range(40):  # every record but the first is its key's latest: each group has records to keep
        log.append(build_batch([NewRecord(b"key-%d" % (i % 39), b"value-%d" % i, 1_000)]))
    log.update_high_watermark(log.log_end_offset)
    log.roll()
    before = state_of(log)
    faults.fail("pwrite", ".log.cleaned")
    offsets = cleanable_offsets(log, None, 10_000)
    cleaner = Cleaner(0, OffsetMap(1 << 20), 64 * 1024, 1 << 20, 0.9, Throttler(1e300))
    with pytest.raises(OSError):
        cleaner.clean(LogToClean((log.topic, log.partition), log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset))
    assert faults.hits
    assert not list(log.dir.glob("*.cleaned"))
    assert state_of(log) == before


def test_producer_snapshots_the_disk_refuses_while_loading_do_not_stop_the_load(tmp_path, faults):
    log = Log.open(tmp_path / "t-0", LogConfig())
    for sequence in range(3):
        log.append(batch(sequence))
    log.close_handlers()  # a crash: no snapshot at the end
    faults.fail("fsync", ".snapshot.tmp")
    reopened = Log.open(tmp_path / "t-0", LogConfig(), had_clean_shutdown=False)
    assert faults.hits
    assert reopened.log_end_offset == 3
    assert reopened.producer_state.producers[PRODUCER_ID].last_seq == 2
    assert not list(reopened.dir.glob("*.tmp"))
