"""Choosing what to clean (Kafka's LogCleanerManager), the cleaner-offset-checkpoint, pausing and
aborting, the throttler, and the cleaner threads run by LogManager."""

from __future__ import annotations

import threading
import time

import pytest

from kcli.errors import KcliError
from kcli.storage.checkpoints import read_offset_checkpoint, write_offset_checkpoint
from kcli.storage.log import Log
from kcli.storage.log_cleaner import CleanerConfig, Throttler
from kcli.storage.log_cleaner_manager import LogCleanerManager, LogCleaningAbortedError
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.records import NewRecord, build_batch

NOW = 1_700_000_000_000
COMPACT = LogConfig(cleanup_policy=("compact",), segment_bytes=400)


class Clock:
    def __init__(self, now: int = NOW) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def produce(log: Log, key: bytes, value: bytes | None, timestamp: int = NOW) -> None:
    log.append(build_batch([NewRecord(key, value, timestamp)]))
    log.update_high_watermark(log.log_end_offset)


def segmented(log: Log, count: int, timestamp: int = NOW) -> Log:
    for i in range(count):
        produce(log, b"k%d" % (i % 3), b"v%d" % i, timestamp)
    log.roll()
    return log


def wait_for(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# -- choosing a log --------------------------------------------------------------------------------


def test_the_dirtiest_log_above_its_min_cleanable_ratio_goes_first(tmp_path):
    clock = Clock()
    logs = [segmented(Log.open(tmp_path / f"t-{p}", COMPACT, clock=clock), 30) for p in range(3)]
    bases = [[s.base_offset for s in l.segments] for l in logs]
    # t-0 is clean up to its 2nd segment, t-1 up to its 3rd, t-2 up to its last non-active one.
    write_offset_checkpoint(tmp_path / "cleaner-offset-checkpoint", {("t", 0): bases[0][1], ("t", 1): bases[1][2], ("t", 2): bases[2][-2]})
    manager = LogCleanerManager([tmp_path], lambda: logs)

    def ratio(l: Log, first_dirty: int) -> float:
        sizes = [s.size for s in l.segments]
        dirty = sum(s.size for s in l.segments[:-1] if s.base_offset >= first_dirty)
        return dirty / sum(sizes)

    expected = sorted(((ratio(l, b[i]), p) for p, (l, b, i) in enumerate(zip(logs, bases, (1, 2, -2)))), reverse=True)
    assert expected[0][0] > expected[1][0] > 0.5 > expected[2][0]
    first = manager.grab_filthiest_compacted_log(NOW)
    assert (first.topic_partition, round(first.cleanable_ratio, 9)) == (("t", expected[0][1]), round(expected[0][0], 9))
    second = manager.grab_filthiest_compacted_log(NOW)  # the first is in progress now
    assert second.topic_partition == ("t", expected[1][1])
    assert manager.grab_filthiest_compacted_log(NOW) is None  # t-2 is under min.cleanable.dirty.ratio
    assert manager.cleaning_state(("t", 0)) == "in progress"


def test_max_compaction_lag_makes_a_log_cleanable_below_the_ratio(tmp_path):
    clock = Clock()
    config = LogConfig(cleanup_policy=("compact",), segment_bytes=400, max_compaction_lag_ms=60_000, min_cleanable_dirty_ratio=0.99)
    log = Log.open(tmp_path / "t-0", config, clock=clock)
    segmented(log, 10, timestamp=NOW - 120_000)
    segmented(log, 10, timestamp=NOW)
    write_offset_checkpoint(tmp_path / "cleaner-offset-checkpoint", {("t", 0): log.segments[1].base_offset})
    manager = LogCleanerManager([tmp_path], lambda: [log])
    chosen = manager.grab_filthiest_compacted_log(NOW)
    assert chosen is not None and chosen.need_compaction_now and chosen.cleanable_ratio < 0.99
    manager.done_cleaning(("t", 0), tmp_path, chosen.first_dirty_offset)
    # Without the lag, the same log is not cleanable.
    log.update_config(LogConfig(cleanup_policy=("compact",), segment_bytes=400, min_cleanable_dirty_ratio=0.99))
    assert manager.grab_filthiest_compacted_log(NOW) is None


def test_logs_without_compact_are_never_cleaned(tmp_path):
    log = segmented(Log.open(tmp_path / "t-0", LogConfig(segment_bytes=400), clock=Clock()), 20)
    assert LogCleanerManager([tmp_path], lambda: [log]).grab_filthiest_compacted_log(NOW) is None


# -- checkpoints -----------------------------------------------------------------------------------


def test_done_cleaning_writes_kafkas_checkpoint_and_the_next_choice_starts_there(tmp_path):
    clock = Clock()
    config = LogConfig(cleanup_policy=("compact",), segment_bytes=400, min_cleanable_dirty_ratio=0.0)
    log = segmented(Log.open(tmp_path / "orders-3", config, clock=clock), 30)
    manager = LogCleanerManager([tmp_path], lambda: [log])
    chosen = manager.grab_filthiest_compacted_log(NOW)
    assert chosen.first_dirty_offset == 0
    manager.done_cleaning(("orders", 3), tmp_path, 17)
    assert (tmp_path / "cleaner-offset-checkpoint").read_text() == "0\n1\norders 3 17\n"
    assert manager.cleaning_state(("orders", 3)) is None
    again = manager.grab_filthiest_compacted_log(NOW)
    assert again.first_dirty_offset == 17


def test_checkpoint_entries_of_deleted_logs_are_dropped_on_update(tmp_path):
    log = segmented(Log.open(tmp_path / "a-0", COMPACT, clock=Clock()), 5)
    write_offset_checkpoint(tmp_path / "cleaner-offset-checkpoint", {("gone", 0): 5, ("a", 0): 2})
    manager = LogCleanerManager([tmp_path], lambda: [log])
    manager.update_checkpoints(tmp_path, update=(("a", 0), 4))
    assert read_offset_checkpoint(tmp_path / "cleaner-offset-checkpoint") == {("a", 0): 4}
    manager.maybe_truncate_checkpoint(tmp_path, ("a", 0), 3)
    manager.maybe_truncate_checkpoint(tmp_path, ("a", 0), 9)
    assert read_offset_checkpoint(tmp_path / "cleaner-offset-checkpoint") == {("a", 0): 3}


# -- pausing and aborting --------------------------------------------------------------------------


def test_abort_and_pause_waits_for_the_cleaner_to_stop_and_resume_undoes_each_pause(tmp_path):
    log = segmented(Log.open(tmp_path / "t-0", COMPACT, clock=Clock()), 30)
    manager = LogCleanerManager([tmp_path], lambda: [log])
    assert manager.grab_filthiest_compacted_log(NOW) is not None
    done = threading.Event()
    pauser = threading.Thread(target=lambda: (manager.abort_and_pause_cleaning(("t", 0), timeout=10), done.set()))
    pauser.start()
    assert wait_for(lambda: manager.cleaning_state(("t", 0)) == "aborted")
    assert not done.is_set()
    with pytest.raises(LogCleaningAbortedError):
        manager.check_cleaning_aborted(("t", 0))
    manager.done_cleaning(("t", 0), tmp_path, 99)  # the cleaner gives up: no checkpoint
    pauser.join(10)
    assert done.is_set() and manager.cleaning_state(("t", 0)) == 1
    assert not (tmp_path / "cleaner-offset-checkpoint").exists()
    assert manager.grab_filthiest_compacted_log(NOW) is None  # paused
    manager.abort_and_pause_cleaning(("t", 0))
    assert manager.cleaning_state(("t", 0)) == 2
    manager.resume_cleaning([("t", 0)])
    manager.resume_cleaning([("t", 0)])
    assert manager.cleaning_state(("t", 0)) is None
    with pytest.raises(KcliError, match="not paused"):
        manager.resume_cleaning([("t", 0)])
    assert manager.grab_filthiest_compacted_log(NOW) is not None


def test_uncleanable_partitions_are_skipped_until_their_log_goes(tmp_path):
    logs = [segmented(Log.open(tmp_path / "t-0", COMPACT, clock=Clock()), 30)]
    manager = LogCleanerManager([tmp_path], lambda: logs)
    manager.mark_partition_uncleanable(tmp_path, ("t", 0))
    assert manager.grab_filthiest_compacted_log(NOW) is None
    logs.clear()
    manager.maintain_uncleanable_partitions()
    assert manager.uncleanable_partitions(tmp_path) == set()


# -- throttling ------------------------------------------------------------------------------------


def test_the_throttler_sleeps_to_bring_the_rate_down():
    now = [0]
    slept = []
    throttler = Throttler(1000.0, 300, nanos=lambda: now[0], sleep=slept.append)
    throttler.maybe_throttle(1000)
    assert slept == []  # within the first check interval
    now[0] = 400_000_000
    throttler.maybe_throttle(1000)
    # 2000 bytes in 0.4 s at 1000 bytes/s: 2 s are due, 0.4 s passed.
    assert slept == [1.6]
    now[0] = 1_000_000_000
    throttler.maybe_throttle(100)  # 100 bytes in 0.6 s: under the rate
    assert slept == [1.6]


# -- the cleaner threads in the log manager --------------------------------------------------------


def compacted_log(manager: LogManager, topic: str = "t", **config) -> Log:
    return manager.get_or_create_log(topic, 0, config=LogConfig(cleanup_policy=("compact",), segment_bytes=400, **config))


def test_the_cleaner_threads_compact_and_checkpoint_and_stop_on_shutdown(tmp_path):
    manager = LogManager([tmp_path / "d1"])
    log = compacted_log(manager)
    segmented(log, 40)
    end = log.active_segment.base_offset
    cleaner = manager.start_cleaner(CleanerConfig(backoff_ms=20, dedupe_buffer_size=1 << 20))
    assert cleaner.await_cleaned(("t", 0), end, timeout=20)
    values = [r.value for s in log.segments for _, b in s.log.batches() for r in b.records()]
    assert sorted(values) == [b"v37", b"v38", b"v39"]
    assert (tmp_path / "d1" / "cleaner-offset-checkpoint").read_text() == f"0\n1\nt 0 {end}\n"
    threads = list(cleaner.threads)
    assert threads and all(t.name.startswith("kafka-log-cleaner-thread-") for t in threads)
    manager.shutdown()
    assert not any(t.is_alive() for t in threads)


def test_a_restarted_cleaner_resumes_from_its_checkpoint(tmp_path):
    manager = LogManager([tmp_path / "d1"])
    log = compacted_log(manager)
    segmented(log, 40)
    end = log.active_segment.base_offset
    manager.start_cleaner(CleanerConfig(backoff_ms=20, dedupe_buffer_size=1 << 20)).await_cleaned(("t", 0), end, timeout=20)
    manager.shutdown()
    again = LogManager([tmp_path / "d1"], topic_configs={"t": LogConfig(cleanup_policy=("compact",), segment_bytes=400)})
    chosen = LogCleanerManager([tmp_path / "d1"], again.all_logs)
    log = again.get_log("t", 0)
    log.update_high_watermark(log.log_end_offset)
    # Everything is clean: nothing to choose, and the dirty section starts at the checkpoint.
    assert chosen.grab_filthiest_compacted_log(NOW) is None
    assert chosen.all_cleaner_checkpoints() == {("t", 0): end}
    again.shutdown()


def test_compact_delete_logs_still_lose_old_segments_to_retention(tmp_path):
    manager = LogManager([tmp_path / "d1"], clock=Clock())
    config = LogConfig(cleanup_policy=("compact", "delete"), segment_bytes=400, retention_ms=1000, min_cleanable_dirty_ratio=1.0)

    def old_log(topic: str) -> Log:
        log = manager.get_or_create_log(topic, 0, config=config)
        segmented(log, 20, timestamp=NOW - 10_000)
        produce(log, b"fresh", b"x", NOW)
        assert log.log_start_offset == 0
        return log

    # Without a cleaner, the retention pass of the log manager runs it.
    first = old_log("a")
    assert manager.cleanup_logs() > 0
    assert first.log_start_offset == first.active_segment.base_offset
    # With one, compacted logs are the cleaner's: it runs their retention between cleanings.
    second = old_log("b")
    manager.start_cleaner(CleanerConfig(backoff_ms=20))
    assert wait_for(lambda: second.log_start_offset == second.active_segment.base_offset, timeout=20)
    manager.shutdown()


def test_deleting_a_log_drops_its_cleaner_checkpoint_and_truncation_lowers_it(tmp_path):
    manager = LogManager([tmp_path / "d1"])
    log = compacted_log(manager)
    segmented(log, 40)
    other = compacted_log(manager, topic="u")
    segmented(other, 40)
    cleaner = manager.start_cleaner(CleanerConfig(backoff_ms=20, dedupe_buffer_size=1 << 20))
    assert cleaner.await_cleaned(("t", 0), log.active_segment.base_offset, timeout=20)
    assert cleaner.await_cleaned(("u", 0), other.active_segment.base_offset, timeout=20)
    assert manager.truncate_to("u", 0, 5)
    assert read_offset_checkpoint(tmp_path / "d1" / "cleaner-offset-checkpoint")[("u", 0)] == other.active_segment.base_offset <= 5
    assert manager.delete_log("t", 0)
    assert ("t", 0) not in read_offset_checkpoint(tmp_path / "d1" / "cleaner-offset-checkpoint")
    assert cleaner.manager.cleaning_state(("u", 0)) in (None, "in progress")
    manager.shutdown()


def test_a_disabled_cleaner_starts_no_threads(tmp_path):
    manager = LogManager([tmp_path / "d1"])
    assert manager.start_cleaner(CleanerConfig(enable_cleaner=False)) is None
    assert manager.cleaner is None
    manager.shutdown()


def test_broker_settings_map_to_the_cleaner_config():
    settings = {
        "log.cleaner.threads": 2,
        "log.cleaner.dedupe.buffer.size": 1 << 20,
        "log.cleaner.io.buffer.load.factor": 0.5,
        "log.cleaner.io.buffer.size": 4096,
        "message.max.bytes": 2000,
        "log.cleaner.io.max.bytes.per.second": 1e6,
        "log.cleaner.backoff.ms": 100,
        "log.cleaner.enable": False,
    }
    config = CleanerConfig.from_broker_config(settings.__getitem__)
    assert config == CleanerConfig(2, 1 << 20, 0.5, 4096, 2000, 1e6, 100, False)
    assert CleanerConfig() == CleanerConfig(1, 128 * 1024 * 1024, 0.9, 512 * 1024, 1048588, 1.7976931348623157e308, 15000, True)


def test_deleting_a_log_while_it_is_being_cleaned_waits_for_the_cleaner_to_let_go(tmp_path):
    reached = threading.Event()
    release = threading.Event()
    steps = []

    def hook(step: str) -> None:
        steps.append(step)
        if step == "cleaned" and not reached.is_set():
            reached.set()
            assert release.wait(10)

    manager = LogManager([tmp_path / "d1"])
    log = compacted_log(manager)
    segmented(log, 60)
    manager.start_cleaner(CleanerConfig(backoff_ms=20, dedupe_buffer_size=1 << 20), step_hook=hook)
    assert reached.wait(10)  # the cleaner is between two groups of the log
    deleted = threading.Event()
    deleter = threading.Thread(target=lambda: (manager.delete_log("t", 0), deleted.set()))
    deleter.start()
    assert wait_for(lambda: manager.cleaner.manager.cleaning_state(("t", 0)) == "aborted")
    assert not deleted.is_set()  # waits for the cleaner
    release.set()
    deleter.join(10)
    assert deleted.is_set()
    assert steps.count("cleaned") == 1  # the cleaner stopped at its next check, after the swap under way
    assert not (tmp_path / "d1" / "t-0").exists()
    assert manager.cleaner.manager.cleaning_state(("t", 0)) is None
    manager.shutdown()
