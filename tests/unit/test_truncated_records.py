"""A follower's truncation keeps the batches it removes aside (storage/truncated.py): byte for
byte, segment-shaped, outside the log, bounded, readable with dump-log-segments."""

from __future__ import annotations

from pathlib import Path

from kcli.storage import truncated
from kcli.storage.file_records import FileRecords
from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.records import NewRecord, build_batch


def batch(count: int, value: bytes = b"value") -> bytes:
    return build_batch([NewRecord(b"k", value + bytes([48 + i]), 1_000 + i) for i in range(count)])


def three_segments(tmp_path: Path) -> Log:
    """Offsets 0-1 (epoch 0) | 2-3, 4-5 (epoch 1) | 6 (epoch 2), one segment each."""
    log = Log.open(tmp_path / "orders-0", LogConfig())
    log.append(batch(2), leader_epoch=0)
    log.roll()
    log.append(batch(2), leader_epoch=1)
    log.append(batch(2, b"lost"), leader_epoch=1)
    log.roll()
    log.append(batch(1, b"lost"), leader_epoch=2)
    log.high_watermark = 7
    return log


def file_bytes(path: Path) -> bytes:
    with FileRecords.open(path) as records:
        return records.read(0, records.size)


def test_the_removed_batches_are_kept_aside_byte_for_byte_and_summarized(tmp_path):
    log = three_segments(tmp_path)
    second, third = log.segments[1], log.segments[2]
    tail = file_bytes(second.log.path)[second.translate_offset(4).position:]
    last = file_bytes(third.log.path)
    removed = log.truncate_to(4, keep_aside_epoch=7)
    assert removed[:5] == (4, 6, 2, 3, (1, 2))
    kept = tmp_path / "orders-0" / "truncated-7-4"
    assert removed.kept_in == kept and removed.keep_error is None
    assert sorted(p.name for p in kept.iterdir()) == ["00000000000000000004.log", "00000000000000000006.log"]
    assert file_bytes(kept / "00000000000000000004.log") == tail
    assert file_bytes(kept / "00000000000000000006.log") == last
    assert (log.log_end_offset, log.high_watermark, [s.base_offset for s in log.segments]) == (4, 4, [0, 2])


def test_kept_aside_batches_are_never_loaded_as_part_of_the_log(tmp_path):
    log = three_segments(tmp_path)
    log.truncate_to(4, keep_aside_epoch=7)
    log.close()
    again = Log.open(tmp_path / "orders-0", LogConfig())
    assert again.log_end_offset == 4
    assert [s.base_offset for s in again.segments] == [0, 2]
    assert (tmp_path / "orders-0" / "truncated-7-4" / "00000000000000000006.log").exists()
    again.append(batch(1), leader_epoch=7)  # the log goes on from 4 as the leader's did
    assert again.log_end_offset == 5
    again.close()


def test_a_log_manager_truncation_keeps_aside_and_a_restart_loads_only_the_log(tmp_path):
    manager = LogManager([tmp_path], LogConfig())
    log = manager.get_or_create_log("orders", 0)
    for _ in range(3):
        log.append(batch(1), leader_epoch=0)
    removed = manager.truncate_to("orders", 0, 1, keep_aside_epoch=2)
    assert removed.kept_in == log.dir / "truncated-2-1"
    manager.shutdown()
    manager = LogManager([tmp_path], LogConfig())
    assert manager.get_log("orders", 0).log_end_offset == 1
    manager.shutdown()


def test_a_truncation_below_the_first_segment_keeps_every_segment(tmp_path):
    log = Log.open(tmp_path / "orders-0", LogConfig())
    log.truncate_fully_and_start_at(2)
    log.append(batch(2), leader_epoch=1)
    log.roll()
    log.append(batch(1), leader_epoch=2)
    removed = log.truncate_to(1, keep_aside_epoch=9)
    assert removed[:5] == (1, 4, 2, 3, (1, 2))
    assert sorted(p.name for p in removed.kept_in.iterdir()) == ["00000000000000000002.log", "00000000000000000004.log"]
    assert (log.log_start_offset, log.log_end_offset) == (1, 1)


def test_without_an_epoch_nothing_is_kept(tmp_path):
    log = three_segments(tmp_path)
    removed = log.truncate_to(4)
    assert removed.kept_in is None and removed.batches == 2
    assert not [p for p in log.dir.iterdir() if p.is_dir()]


def test_a_partition_keeps_its_last_truncations_only(tmp_path, caplog):
    caplog.set_level("INFO")
    log = Log.open(tmp_path / "orders-0", LogConfig())
    for epoch in range(truncated.MAX_KEPT_TRUNCATIONS + 2):
        log.append(batch(2), leader_epoch=epoch)
        log.truncate_to(log.log_end_offset - 1, keep_aside_epoch=epoch + 1)
    names = [p.name for p in truncated.kept_aside_dirs(log.dir)]
    assert len(names) == truncated.MAX_KEPT_TRUNCATIONS
    assert names[0] == "truncated-3-3" and names[-1] == "truncated-7-7"
    assert "Removed" in caplog.text and "truncated-1-1" in caplog.text


def test_the_steps_of_one_epoch_are_ordered_newest_last(tmp_path):
    for name in ("truncated-3-10", "truncated-3-8", "truncated-2-20", "truncated-3-8.1", "not-kept"):
        (tmp_path / name).mkdir()
    assert [p.name for p in truncated.kept_aside_dirs(tmp_path)] == ["truncated-2-20", "truncated-3-10", "truncated-3-8", "truncated-3-8.1"]


def test_when_the_disk_refuses_the_truncation_goes_on_and_says_so(tmp_path, monkeypatch):
    log = three_segments(tmp_path)

    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(truncated, "keep_aside", refuse)
    removed = log.truncate_to(4, keep_aside_epoch=7)
    assert removed.kept_in is None and "No space left on device" in removed.keep_error
    assert log.log_end_offset == 4 and not log.is_offline


def test_dump_log_segments_reads_a_kept_aside_directory(tmp_path, kcli_run):
    log = three_segments(tmp_path)
    kept = log.truncate_to(4, keep_aside_epoch=7).kept_in
    code, out, err = kcli_run("dump-log-segments", "--files", str(kept), "--print-data-log")
    assert code == 0 and err == []
    assert out[0] == f"Dumping {kept / '00000000000000000004.log'}"
    assert out[1] == "Log starting offset: 4"
    payloads = [line.rsplit("payload: ", 1)[1] for line in out if line.startswith("| offset:")]
    assert payloads == ["lost0", "lost1", "lost0"]
    assert f"Dumping {kept / '00000000000000000006.log'}" in out
    code, out, err = kcli_run("dump-log-segments", "--files", str(kept / "00000000000000000006.log"))
    assert code == 0 and "baseOffset: 6 lastOffset: 6" in out[2]
