"""LogManager: several log dirs, placement, checkpoints, clean shutdown, periodic work."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kcli.errors import KcliError
from kcli.storage.checkpoints import has_clean_shutdown_marker, read_offset_checkpoint
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.records import NewRecord, build_batch


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def batch(*timestamps: int) -> bytes:
    return build_batch([NewRecord(None, b"value", ts) for ts in timestamps])


def dirs(tmp_path: Path) -> list[Path]:
    return [tmp_path / "d1", tmp_path / "d2"]


def test_new_logs_go_to_the_dir_with_fewest_partitions(tmp_path):
    manager = LogManager(dirs(tmp_path))
    placed = [manager.get_or_create_log("t", p).dir.parent.name for p in range(4)]
    assert placed == ["d1", "d2", "d1", "d2"]
    assert manager.get_or_create_log("t", 0) is manager.get_log("t", 0)
    assert len(manager.all_logs()) == 4
    manager.shutdown()


def test_shutdown_writes_checkpoints_and_marker_and_a_restart_loads_every_dir(tmp_path):
    manager = LogManager(dirs(tmp_path))
    a = manager.get_or_create_log("orders", 0)
    b = manager.get_or_create_log("orders", 1)
    a.append(batch(1, 2, 3))
    b.append(batch(1))
    b.roll()
    b.append(batch(2))
    b.high_watermark = 2
    b.maybe_increment_log_start_offset(1)
    manager.shutdown(broker_epoch=12)
    d1, d2 = dirs(tmp_path)
    assert (d1 / "recovery-point-offset-checkpoint").read_text() == "0\n1\norders 0 3\n"
    assert (d2 / "recovery-point-offset-checkpoint").read_text() == "0\n1\norders 1 2\n"
    assert (d1 / "log-start-offset-checkpoint").read_text() == "0\n0\n"  # only starts above the first segment
    assert (d2 / "log-start-offset-checkpoint").read_text() == "0\n1\norders 1 1\n"
    assert (d1 / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":12}'

    again = LogManager(dirs(tmp_path))
    assert not (d1 / ".kafka_cleanshutdown").exists() and not (d2 / ".kafka_cleanshutdown").exists()
    loaded_a, loaded_b = again.get_log("orders", 0), again.get_log("orders", 1)
    assert (loaded_a.log_end_offset, loaded_a.recovery_point) == (3, 3)
    assert (loaded_b.log_start_offset, loaded_b.log_end_offset, loaded_b.dir.parent) == (1, 2, d2)
    again.shutdown()


def test_the_marker_decides_whether_logs_are_recovered(tmp_path):
    config = LogConfig(index_interval_bytes=1)
    manager = LogManager(dirs(tmp_path), config)
    log = manager.get_or_create_log("t", 0)
    log.append(batch(1))
    log.append(batch(2))
    manager.shutdown()
    segment = log.dir / "00000000000000000000.log"
    # A flipped byte in the first batch, before the last index entry: a clean restart's cheap
    # check of the tail does not read it, a recovery does.
    data = bytearray(segment.read_bytes())
    data[len(batch(1)) - 1] ^= 0xFF
    segment.write_bytes(bytes(data))
    LogManager(dirs(tmp_path), config).shutdown()  # clean: taken as it is
    assert segment.stat().st_size == 2 * len(batch(1))
    (tmp_path / "d1" / ".kafka_cleanshutdown").unlink()
    restarted = LogManager(dirs(tmp_path), config)  # unclean: recovered
    assert segment.stat().st_size == 0
    assert restarted.get_log("t", 0).log_end_offset == 0
    restarted.shutdown()


def test_a_clean_marker_is_not_trusted_over_a_tail_that_is_no_whole_batch(tmp_path):
    manager = LogManager(dirs(tmp_path))
    log = manager.get_or_create_log("t", 0)
    log.append(batch(1))
    manager.shutdown()
    segment = log.dir / "00000000000000000000.log"
    with open(segment, "ab") as f:
        f.write(b"\x00" * 10)
    restarted = LogManager(dirs(tmp_path))
    assert segment.stat().st_size == len(batch(1))
    assert restarted.get_log("t", 0).log_end_offset == 1
    restarted.shutdown()


def test_recovery_points_from_the_checkpoint_limit_recovery(tmp_path):
    manager = LogManager(dirs(tmp_path))
    log = manager.get_or_create_log("t", 0)
    log.append(batch(1))
    log.roll()
    log.append(batch(2))
    log.flush(1)
    manager.checkpoint_recovery_points()
    assert read_offset_checkpoint(tmp_path / "d1" / "recovery-point-offset-checkpoint") == {("t", 0): 1}
    for segment in log.segments:
        segment.close_handlers()  # a crash: nothing more written
    manager._release_locks()
    first = log.dir / "00000000000000000000.log"
    with open(first, "ab") as f:
        f.write(b"\x00" * 10)
    restarted = LogManager(dirs(tmp_path))
    assert first.stat().st_size == len(batch(1)) + 10  # below the recovery point: not checked
    assert restarted.get_log("t", 0).recovery_point == 1
    restarted.shutdown()


def test_periodic_flush_and_retention(tmp_path):
    clock = Clock(0)
    config = LogConfig(flush_ms=1000, retention_ms=500, file_delete_delay_ms=0)
    manager = LogManager(dirs(tmp_path), config, clock=clock)
    log = manager.get_or_create_log("t", 0)
    log.append(batch(100))
    log.roll()
    log.append(batch(2000))
    assert manager.flush_dirty_logs(now=500) == 1  # the rolled segment only
    assert log.recovery_point == 1
    assert manager.flush_dirty_logs(now=1499) == 0  # the flush at 500 restarted flush.ms
    assert manager.flush_dirty_logs(now=1500) == 1
    assert log.recovery_point == 2
    log.high_watermark = 2
    assert manager.cleanup_logs(now=1000) == 1  # 1000 - 100 > 500; 1000 - 2000 is not
    assert log.log_start_offset == 1
    manager.checkpoint_log_start_offsets()
    assert read_offset_checkpoint(tmp_path / "d1" / "log-start-offset-checkpoint") == {}  # start equals the first segment now
    manager.shutdown()


def test_topic_configs_by_dict_or_callable(tmp_path):
    special = LogConfig(segment_bytes=1000)
    by_dict = LogManager([tmp_path / "a"], LogConfig(), {"big": special})
    assert by_dict.get_or_create_log("big", 0).config is special
    assert by_dict.get_or_create_log("other", 0).config == LogConfig()
    by_dict.shutdown()
    by_call = LogManager([tmp_path / "b"], LogConfig(), lambda topic: special if topic.startswith("b") else None)
    assert by_call.get_or_create_log("big", 0).config is special
    assert by_call.get_or_create_log("small", 0).config == LogConfig()
    explicit = LogConfig(segment_bytes=5000)
    assert by_call.get_or_create_log("big", 1, config=explicit).config is explicit
    by_call.shutdown()


def test_delete_log_and_leftover_delete_dirs(tmp_path):
    manager = LogManager(dirs(tmp_path))
    log = manager.get_or_create_log("gone", 3, topic_id=uuid.uuid4())
    log.append(batch(1))
    assert manager.delete_log("gone", 3)
    assert not manager.delete_log("gone", 3)
    assert manager.get_log("gone", 3) is None
    assert [p.name for p in (tmp_path / "d1").iterdir() if p.is_dir()] == []
    manager.shutdown()
    leftover = tmp_path / "d2" / f"old-0.{uuid.uuid4().hex}-delete"
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"x")
    LogManager(dirs(tmp_path)).shutdown()
    assert not leftover.exists()


def test_dirs_that_are_not_partitions(tmp_path):
    metadata = tmp_path / "d1" / "__cluster_metadata-0"
    metadata.mkdir(parents=True)
    (metadata / "00000000000000000000.log").write_bytes(b"")
    manager = LogManager(dirs(tmp_path))
    assert manager.all_logs() == []
    manager.shutdown()
    (tmp_path / "d1" / "not-a-partition").mkdir()
    with pytest.raises(KcliError, match="'not-a-partition' is not in the form of topic-partition"):
        LogManager(dirs(tmp_path))


def test_tiered_storages_index_cache_is_skipped_and_any_other_foreign_dir_is_named_by_its_path(tmp_path):
    # Kafka 3.9's LogManager.loadLogs skips remote-log-index-cache and fails on any other
    # directory that is no partition's, naming its full path (LocalLog.parseTopicPartitionName).
    (tmp_path / "d1" / "remote-log-index-cache").mkdir(parents=True)
    manager = LogManager(dirs(tmp_path))
    assert manager.all_logs() == []
    manager.shutdown()
    foreign = tmp_path / "d2" / ".hypothesis"
    foreign.mkdir(parents=True)
    with pytest.raises(KcliError) as failure:
        LogManager(dirs(tmp_path))
    assert str(failure.value).startswith(f"Found directory {foreign.resolve()}, '.hypothesis' is not in the form of topic-partition")
    assert "\n" not in str(failure.value)


def test_a_log_dir_is_locked_while_in_use(tmp_path):
    manager = LogManager(dirs(tmp_path))
    with pytest.raises(KcliError, match=r"Failed to acquire lock on file \.lock in .*d1"):
        LogManager(dirs(tmp_path))
    manager.shutdown()
    LogManager(dirs(tmp_path)).shutdown()


def test_a_manager_that_never_loaded_leaves_no_marker_and_frees_its_dirs(tmp_path):
    unloaded = LogManager([tmp_path], load=False)
    assert unloaded.all_logs() == []
    unloaded.abandon()
    assert not has_clean_shutdown_marker(tmp_path)
    again = LogManager([tmp_path])  # the lock was released
    again.shutdown()
    assert has_clean_shutdown_marker(tmp_path)


def test_a_dir_that_fails_to_load_goes_offline_and_the_others_are_served(tmp_path, monkeypatch):
    import errno

    from kcli.errors import ErrorCode, KafkaStorageError
    from kcli.storage import log_manager as log_manager_module

    manager = LogManager(dirs(tmp_path))
    in_d1, in_d2 = manager.get_or_create_log("t", 0), manager.get_or_create_log("t", 1)
    assert (in_d1.dir.parent.name, in_d2.dir.parent.name) == ("d1", "d2")
    in_d1.append(batch(1))
    in_d2.append(batch(1))
    manager.shutdown()

    real_open = log_manager_module.Log.open

    def failing_open(directory, *args, **kwargs):
        if Path(directory).parent.name == "d1":
            raise OSError(errno.EIO, "Input/output error")
        return real_open(directory, *args, **kwargs)

    monkeypatch.setattr(log_manager_module.Log, "open", failing_open)
    restarted = LogManager(dirs(tmp_path))
    assert restarted.failure_channel.offline_dirs == [tmp_path / "d1"]
    assert restarted.get_log("t", 0) is None
    assert restarted.get_log("t", 1).log_end_offset == 1
    # The partition of the offline dir is not created again, empty, in the other dir.
    with pytest.raises(KafkaStorageError) as raised:
        restarted.get_or_create_log("t", 0)
    assert raised.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert restarted.get_or_create_log("t", 2).dir.parent.name == "d2"
    restarted.shutdown()
    assert not (tmp_path / "d1" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "d2" / ".kafka_cleanshutdown").exists()

    monkeypatch.setattr(log_manager_module.Log, "open", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EIO, "Input/output error")))
    with pytest.raises(KcliError, match="No log dir could be loaded"):
        LogManager(dirs(tmp_path))
    monkeypatch.undo()
    again = LogManager(dirs(tmp_path))  # the dirs were released
    assert again.get_log("t", 0).log_end_offset == 1
    again.shutdown()


def test_high_watermarks_are_checkpointed_as_kafka_writes_them_and_read_at_the_next_start(tmp_path):
    """replication-offset-checkpoint: Kafka's offset checkpoint framing, one line per partition of
    the dir, written periodically and at shutdown, read back at load (within the log's offsets)."""
    d1 = dirs(tmp_path)[0]
    manager = LogManager([d1])
    a = manager.get_or_create_log("orders", 0)
    b = manager.get_or_create_log("orders", 1)
    a.append(batch(1, 2, 3, 4))
    b.append(batch(1, 2))
    a.high_watermark, b.high_watermark = 3, 2
    assert manager.checkpoint_high_watermarks()
    assert (d1 / "replication-offset-checkpoint").read_text() == "0\n2\norders 0 3\norders 1 2\n"
    a.high_watermark = 4
    manager.shutdown()
    assert read_offset_checkpoint(d1 / "replication-offset-checkpoint") == {("orders", 0): 4, ("orders", 1): 2}

    (d1 / "replication-offset-checkpoint").write_text("0\n2\norders 0 2\norders 1 9\n")
    again = LogManager([d1])
    assert again.get_log("orders", 0).high_watermark == 2
    assert again.get_log("orders", 1).high_watermark == 2  # never above the log end offset
    again.shutdown()
