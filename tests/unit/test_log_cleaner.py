"""Log compaction (Kafka's Cleaner): what a cleaning keeps, tombstones, producer state, grouping,
codecs, bounded offset maps, transactions and crash safety of the swap."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import pytest

from kcli.errors import KcliError
from kcli.storage.file_records import FileRecords
from kcli.storage.log import Log
from kcli.storage.log_cleaner import Cleaner, Throttler
from kcli.storage.log_cleaner_manager import LogToClean, cleanable_offsets
from kcli.storage.log_config import LogConfig
from kcli.storage.offset_map import BYTES_PER_ENTRY, OffsetMap
from kcli.storage.records import (
    CompressionType,
    ControlType,
    NewRecord,
    RecordBatch,
    TimestampType,
    build_batch,
    control_record,
    end_txn_marker_value,
)
from kcli.storage.transaction_index import AbortedTxn

NOW = 1_700_000_000_000
DAY = 86_400_000


class Clock:
    def __init__(self, now: int = NOW) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class SimulatedCrash(Exception):
    pass


def open_log(tmp_path: Path, clock: Clock, name: str = "topic-0", **config) -> Log:
    config.setdefault("cleanup_policy", ("compact",))
    return Log.open(tmp_path / name, LogConfig(**config), clock=clock)


def produce(log: Log, pairs: list[tuple[bytes, bytes | None]], timestamp: int = NOW, **batch_kwargs) -> None:
    """Append one batch holding ``pairs``, then move the high watermark to the log end."""
    log.append(build_batch([NewRecord(k, v, timestamp) for k, v in pairs], **batch_kwargs))
    log.update_high_watermark(log.log_end_offset)


def batches(log: Log) -> list[RecordBatch]:
    out = []
    for segment in log.segments:
        with FileRecords.open(segment.log.path) as records:
            out.extend(batch for _, batch in records.batches())
    return out


def records(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in batches(log) for r in b.records()]


def cleaner(clock: Clock, memory: int = 1 << 20, hook=None, io_buffer_size: int = 64 * 1024) -> Cleaner:
    return Cleaner(0, OffsetMap(memory), io_buffer_size, 1 << 20, 0.9, Throttler(1e300), clock=clock, step_hook=hook)


def to_clean(log: Log, first_dirty: int | None = None, now: int = NOW) -> LogToClean:
    offsets = cleanable_offsets(log, first_dirty, now)
    return LogToClean((log.topic, log.partition), log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset)


def latest_per_key(written: list[tuple[int, bytes | None, bytes | None]], below: int) -> dict[bytes, tuple[int, bytes | None]]:
    latest = {}
    for offset, key, value in written:
        if offset < below:
            latest[key] = (offset, value)
    return latest


def fill(log: Log, rounds: int, keys: int, *, start: int = 0, per_batch: int = 1) -> list[tuple[int, bytes, bytes]]:
    """Append ``rounds`` updates of ``keys`` keys; returns (offset, key, value) of each record."""
    written = []
    pending: list[tuple[bytes, bytes]] = []
    total = rounds * keys
    for i in range(start, start + total):
        pending.append((b"key-%d" % (i % keys), b"value-%d" % i))
        if len(pending) == per_batch or i == start + total - 1:
            first = log.log_end_offset
            produce(log, pending)
            written.extend((first + j, k, v) for j, (k, v) in enumerate(pending))
            pending = []
    return written


# -- what a cleaning keeps -------------------------------------------------------------------------


def test_only_the_last_record_of_each_key_stays_and_offsets_do_not_change(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=2048)
    written = fill(log, rounds=10, keys=7, per_batch=3)
    log.roll()
    end, stats = cleaner(clock).clean(to_clean(log))
    assert end == log.log_end_offset == 70
    expected = latest_per_key(written, 70)
    assert records(log) == sorted((offset, key, value) for key, (offset, value) in expected.items())
    assert (stats.messages_read, stats.messages_written) == (70, 7)
    for b in batches(log):
        b.validate()
    # A read from the log start finds the first record kept, wherever it now is.
    data = log.read(0, 1 << 20).read()
    assert RecordBatch(data).records()[0].offset == min(offset for offset, _ in expected.values())


def test_the_active_segment_and_offsets_past_the_high_watermark_are_not_cleaned(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=1024)
    written = fill(log, rounds=6, keys=3)
    log.update_high_watermark(9)
    cleanable = to_clean(log)
    # The high watermark (9) lies in a segment: cleaning stops at that segment's base.
    assert cleanable.first_uncleanable_offset == max(s.base_offset for s in log.segments if s.base_offset <= 9)
    end, _ = cleaner(clock).clean(cleanable)
    assert end == cleanable.first_uncleanable_offset
    kept = records(log)
    assert [r for r in kept if r[0] >= end] == [r for r in written if r[0] >= end]
    # Below it, each key's last record below it stays: later records beyond were not mapped.
    assert [r for r in kept if r[0] < end] == sorted((o, k, v) for k, (o, v) in latest_per_key(written, end).items())


def test_keys_whose_latest_record_is_in_the_dirty_section_win_over_the_clean_section(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=4096)
    fill(log, rounds=2, keys=4)
    log.roll()
    c = cleaner(clock)
    first_end, _ = c.clean(to_clean(log))
    produce(log, [(b"key-1", b"newest")])
    log.roll()
    end, _ = c.clean(to_clean(log, first_end))
    assert end == 9
    assert [(k, v) for _, k, v in records(log)] == [(b"key-0", b"value-4"), (b"key-2", b"value-6"), (b"key-3", b"value-7"), (b"key-1", b"newest")]


# -- tombstones ------------------------------------------------------------------------------------


def test_tombstones_stay_until_delete_retention_ms_after_the_cleaning_that_kept_them(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=4096, delete_retention_ms=DAY)
    produce(log, [(b"a", b"1"), (b"b", b"2")])
    produce(log, [(b"a", None)])
    log.roll()
    c = cleaner(clock)
    end, _ = c.clean(to_clean(log))
    assert records(log) == [(1, b"b", b"2"), (2, b"a", None)]
    tombstone_batch = batches(log)[-1]
    # Kafka 3.x stamps the batch: base timestamp = cleaning time + delete.retention.ms, bit 6 set.
    assert tombstone_batch.delete_horizon_ms == NOW + DAY
    assert tombstone_batch.attributes & 0x40
    assert tombstone_batch.records()[0].timestamp == NOW  # record timestamps are unchanged

    def clean_again(at: int) -> None:
        nonlocal end
        clock.now = at
        produce(log, [(b"c", b"%d" % at)], timestamp=at)
        log.roll()
        end, _ = c.clean(to_clean(log, end, now=at), now=at)

    clean_again(NOW + DAY - 1)
    assert (2, b"a", None) in records(log)
    clean_again(NOW + DAY)
    assert all(key != b"a" for _, key, _ in records(log))
    assert [(k, v) for _, k, v in records(log)] == [(b"b", b"2"), (b"c", b"%d" % (NOW + DAY))]


def test_a_batch_with_only_live_records_is_copied_byte_for_byte(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock)
    produce(log, [(b"x", b"1"), (b"y", b"2")])
    produce(log, [(b"x", b"3")])
    log.roll()
    before = batches(log)[1]
    original = bytes(before.buffer[before.position : before.position + before.size_in_bytes])
    cleaner(clock).clean(to_clean(log))
    after = batches(log)
    assert bytes(after[1].buffer[after[1].position : after[1].position + after[1].size_in_bytes]) == original
    rebuilt = after[0]
    assert (rebuilt.base_offset, rebuilt.last_offset, rebuilt.record_count) == (0, 1, 1)  # last offset kept
    assert [(r.offset, r.key) for r in rebuilt.records()] == [(1, b"y")]


# -- which records may be cleaned ------------------------------------------------------------------


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, min_compaction_lag_ms=60_000)
    produce(log, [(b"k", b"old")], timestamp=NOW - 120_000)
    log.roll()
    produce(log, [(b"k", b"young")], timestamp=NOW - 30_000)
    log.roll()
    produce(log, [(b"k", b"active")], timestamp=NOW)
    offsets = cleanable_offsets(log, None, NOW)
    assert (offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset) == (0, 1)
    cleaner(clock).clean(to_clean(log))
    assert records(log) == [(0, b"k", b"old"), (1, b"k", b"young"), (2, b"k", b"active")]
    # Once the second segment is old enough, it is cleanable and supersedes the first.
    later = NOW + 60_000
    offsets = cleanable_offsets(log, None, later)
    assert offsets.first_uncleanable_dirty_offset == 2
    cleaner(clock).clean(to_clean(log, now=later), now=later)
    assert records(log) == [(1, b"k", b"young"), (2, b"k", b"active")]


def test_a_checkpoint_outside_the_log_resets_to_the_log_start(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock)
    produce(log, [(b"k", b"v")])
    log.roll()
    assert cleanable_offsets(log, 50, NOW) == (0, 1, True)
    assert cleanable_offsets(log, 1, NOW) == (1, 1, False)


# -- grouping --------------------------------------------------------------------------------------


def test_small_cleaned_segments_are_merged_up_to_segment_bytes(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=600)
    written = fill(log, rounds=20, keys=2)
    log.roll()
    assert len(log.segments) > 5
    c = cleaner(clock)

    def check_groups(segments: list) -> list[list]:
        groups = c.group_segments_by_size(log, segments, 600, 10 << 20, log.log_end_offset)
        assert [s for g in groups for s in g] == segments
        sizes = [sum(s.size for s in g) for g in groups]
        assert all(size <= 600 for size in sizes)
        # Greedy: no group could have taken the next segment in.
        assert all(sizes[i] + groups[i + 1][0].size > 600 for i in range(len(groups) - 1))
        return groups

    assert len(check_groups(log.segments[:-1])) == len(log.segments) - 1  # full segments stay apart
    end, _ = c.clean(to_clean(log))
    # Two records are left, in the last of the cleaned segments; the emptied ones are kept empty.
    assert records(log) == sorted((o, k, v) for k, (o, v) in latest_per_key(written, end).items())
    assert len(check_groups(log.segments[:-1])) == 1
    produce(log, [(b"key-0", b"late")])
    log.roll()
    c.clean(to_clean(log, end))
    assert len(log.segments) == 2  # the merged cleaned segment and the active one
    assert log.segments[0].base_offset == 0
    assert [(k, v) for _, k, v in records(log)] == [(b"key-1", b"value-39"), (b"key-0", b"late")]


def test_groups_keep_offsets_within_the_index_relative_range(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=1 << 20)
    produce(log, [(b"a", b"1")])
    log.roll()
    produce(log, [(b"b", b"2")])
    far = 2**31 + 100
    log.append_as_follower(build_batch([NewRecord(b"c", b"3", NOW)], base_offset=far))
    assert [s.base_offset for s in log.segments] == [0, 1, far]
    groups = cleaner(clock).group_segments_by_size(log, log.segments, 1 << 20, 10 << 20, far + 1)
    # Segment 1 may hold offsets up to far - 1, too far from base 0; segment far, from base 1.
    assert [[s.base_offset for s in g] for g in groups] == [[0], [1], [far]]


# -- codecs and batch fields -----------------------------------------------------------------------


@pytest.mark.parametrize("codec", [CompressionType.GZIP, CompressionType.LZ4, CompressionType.ZSTD])
def test_compressed_batches_are_rebuilt_with_their_codec(tmp_path, codec):
    clock = Clock()
    log = open_log(tmp_path, clock)
    produce(log, [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], compression=codec, partition_leader_epoch=4)
    produce(log, [(b"a", b"4")], compression=codec)
    log.roll()
    cleaner(clock).clean(to_clean(log))
    first = batches(log)[0]
    first.validate()
    assert first.compression == codec
    assert (first.base_offset, first.last_offset, first.partition_leader_epoch) == (0, 2, 0)
    assert [(r.offset, r.key, r.value) for r in first.records()] == [(1, b"b", b"2"), (2, b"c", b"3")]


def test_log_append_time_batches_keep_their_timestamp_type(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    log.append(build_batch([NewRecord(b"a", b"1", 5), NewRecord(b"b", b"2", 6)]), log_append_time=777)
    log.append(build_batch([NewRecord(b"a", b"3", 7)]), log_append_time=888)
    log.update_high_watermark(log.log_end_offset)
    log.roll()
    cleaner(clock).clean(to_clean(log))
    first = batches(log)[0]
    assert (first.timestamp_type, first.max_timestamp) == (TimestampType.LOG_APPEND_TIME, 777)
    assert [(r.offset, r.timestamp) for r in first.records()] == [(1, 777)]


# -- producer state --------------------------------------------------------------------------------


def test_the_last_batch_of_an_active_producer_is_kept_empty_and_the_state_survives_a_restart(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock)
    produce(log, [(b"k", b"p0")], producer_id=7, producer_epoch=2, base_sequence=0)
    produce(log, [(b"k", b"p1"), (b"j", b"p2")], producer_id=7, producer_epoch=2, base_sequence=1)
    produce(log, [(b"k", b"plain"), (b"j", b"plain")])
    log.roll()
    cleaner(clock).clean(to_clean(log))
    kept = batches(log)
    assert [(b.base_offset, b.last_offset, b.record_count) for b in kept] == [(1, 2, 0), (3, 4, 2)]
    empty = kept[0]
    empty.validate()
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence, empty.last_sequence) == (7, 2, 1, 2)
    assert empty.size_in_bytes == 61 and empty.compression == CompressionType.NONE
    # A restart without snapshots rebuilds the producer from the batches left.
    for segment in log.segments:
        segment.close_handlers()
    for snapshot in (tmp_path / "topic-0").glob("*.snapshot"):
        snapshot.unlink()
    reopened = open_log(tmp_path, clock)
    [producer] = reopened.active_producers()
    assert (producer.producer_id, producer.producer_epoch, producer.last_sequence) == (7, 2, 2)
    duplicate = reopened.append(build_batch([NewRecord(b"k", b"p1", NOW), NewRecord(b"j", b"p2", NOW)], producer_id=7, producer_epoch=2, base_sequence=1))
    assert duplicate.duplicate and (duplicate.first_offset, duplicate.last_offset) == (1, 2)
    reopened.close()


def test_batches_of_producers_no_longer_active_go_when_emptied(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock)
    produce(log, [(b"k", b"p0")], producer_id=7, producer_epoch=0, base_sequence=0)
    produce(log, [(b"k", b"plain")])
    log.update_high_watermark(log.log_end_offset)
    log.roll()
    clock.now += log.producer_state.producer_id_expiration_ms + 1
    assert log.remove_expired_producers() == 1
    cleaner(clock).clean(to_clean(log, now=clock.now), now=clock.now)
    assert [(b.base_offset, b.record_count) for b in batches(log)] == [(1, 1)]


# -- transactions ----------------------------------------------------------------------------------


def test_aborted_transaction_data_goes_and_its_marker_stays_with_the_txn_index(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock)
    produce(log, [(b"k", b"committed")])
    log.append(build_batch([NewRecord(b"k", b"aborted", NOW)], producer_id=3, producer_epoch=0, base_sequence=0, transactional=True))
    log.append(
        build_batch([control_record(ControlType.ABORT, end_txn_marker_value(5), NOW)], producer_id=3, producer_epoch=0, transactional=True, control=True),
        origin="coordinator",
    )
    produce(log, [(b"other", b"x")])
    log.roll()
    # The log indexed the aborted transaction itself when the marker was appended.
    assert log.segments[0].txn_index_path.read_bytes() == AbortedTxn(3, 1, 2, 3).encode()
    cleaner(clock).clean(to_clean(log))
    kept = batches(log)
    # The aborted batch is emptied; its header stays, being the producer's last (Kafka keeps it
    # for the producer's sequence), and so does the marker, whose transaction had data here.
    assert [(b.base_offset, b.is_control, b.record_count) for b in kept] == [(0, False, 1), (1, False, 0), (2, True, 1), (3, False, 1)]
    assert records(log)[0] == (0, b"k", b"committed")  # the aborted write did not replace it
    assert b"aborted" not in [value for _, _, value in records(log)]
    assert log.segments[0].txn_index_path.read_bytes() == AbortedTxn(3, 1, 2, 3).encode()


# -- bounded offset map ----------------------------------------------------------------------------


def test_a_dirty_section_larger_than_the_offset_map_is_cleaned_in_several_passes(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=1024)
    written = fill(log, rounds=4, keys=12)
    log.roll()
    memory = BYTES_PER_ENTRY * 6  # room for 6 slots: 5 keys at load factor 0.9
    c = cleaner(clock, memory=memory)
    first_dirty = 0
    passes = 0
    while first_dirty < log.log_end_offset:
        end, stats = c.clean(to_clean(log, first_dirty))
        assert end > first_dirty and stats.buffer_utilization <= 1.0
        assert len(c.offset_map) <= 5
        first_dirty = end
        passes += 1
    assert passes >= 10
    expected = latest_per_key(written, log.log_end_offset)
    assert records(log) == sorted((offset, key, value) for key, (offset, value) in expected.items())


def test_an_offset_map_without_room_for_one_key_is_refused():
    with pytest.raises(KcliError, match="log.cleaner.dedupe.buffer.size"):
        Cleaner(0, OffsetMap(BYTES_PER_ENTRY), 4096, 4096, 0.9, Throttler(1e300))


# -- crash safety ----------------------------------------------------------------------------------


def crash(log: Log) -> None:
    """Drop the log as a process kill would: release file handles, write nothing."""
    for segment in log.segments:
        segment.close_handlers()
    for _, segment in log._pending_deletes:
        segment.close_handlers()


@pytest.mark.parametrize("step, occurrence", [("cleaned", 1), ("swap", 1), ("deleted", 1), ("deleted", 2), ("replaced", 1), ("cleaned", 2), ("replaced", 2)])
def test_a_crash_at_any_step_of_a_swap_leaves_a_log_that_loads_correctly(tmp_path, step, occurrence):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=700, file_delete_delay_ms=60_000)
    written = fill(log, rounds=6, keys=4)
    log.roll()
    seen = {}

    def hook(name: str) -> None:
        seen[name] = seen.get(name, 0) + 1
        if name == step and seen[name] == occurrence:
            raise SimulatedCrash(name)

    with pytest.raises(SimulatedCrash):
        cleaner(clock, hook=hook).clean(to_clean(log))
    crash(log)
    reopened = open_log(tmp_path, clock, segment_bytes=700)
    names = [p.name for p in (tmp_path / "topic-0").iterdir()]
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    kept = records(reopened)
    offsets = [offset for offset, _, _ in kept]
    assert offsets == sorted(set(offsets))  # nothing duplicated, in order
    assert set(kept) <= set(written)  # nothing invented
    expected = latest_per_key(written, len(written))
    latest_seen = {}
    for offset, key, value in kept:
        latest_seen[key] = (offset, value)
    assert latest_seen == expected  # every key's last record is there
    assert reopened.log_end_offset == len(written)
    # And a new cleaning finishes the job.
    reopened.update_high_watermark(reopened.log_end_offset)
    cleaner(clock).clean(to_clean(reopened))
    assert records(reopened) == sorted((o, k, v) for k, (o, v) in expected.items())
    reopened.close()


def test_an_aborted_cleaning_removes_its_cleaned_files(tmp_path):
    from kcli.storage.log_cleaner_manager import LogCleaningAbortedError

    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=700)
    written = fill(log, rounds=6, keys=4)
    log.roll()
    calls = []
    mapped_segments = len(log.segments) - 1

    def check_done(partition):
        calls.append(partition)
        # One check per chunk: abort while recopying the second segment, the first one swapped in.
        if len(calls) == mapped_segments + 2:
            raise LogCleaningAbortedError("aborted")

    c = Cleaner(0, OffsetMap(1 << 20), 4096, 4096, 0.9, Throttler(1e300), clock=clock, check_done=check_done)
    with pytest.raises(LogCleaningAbortedError):
        c.clean(to_clean(log))
    assert calls[0] == ("topic", 0)
    assert not list((tmp_path / "topic-0").glob("*.cleaned"))
    kept = records(log)
    assert {k: (o, v) for o, k, v in kept} == latest_per_key(written, len(written))


# -- magic 0 and 1 ---------------------------------------------------------------------------------


def legacy_message(offset: int, key: bytes | None, value: bytes | None, attributes: int = 0, timestamp: int = NOW) -> bytes:
    """A magic-1 message, built by hand from the layout."""
    body = struct.pack(">bbq", 1, attributes, timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def test_magic_1_messages_are_cleaned_and_their_tombstones_follow_the_segment_age_rule(tmp_path):
    clock = Clock()
    directory = tmp_path / "topic-0"
    directory.mkdir()
    wrapper_inner = legacy_message(0, b"w", b"old") + legacy_message(1, b"z", b"kept")
    segment = (
        legacy_message(0, b"a", b"1")
        + legacy_message(1, b"a", b"2")
        + legacy_message(2, b"b", None)
        + legacy_message(4, None, gzip.compress(wrapper_inner), attributes=1)  # offsets 3 and 4
        + legacy_message(5, b"w", b"new")
    )
    (directory / "00000000000000000000.log").write_bytes(segment)
    log = open_log(tmp_path, clock, segment_bytes=200, delete_retention_ms=DAY)
    log.update_high_watermark(log.log_end_offset)
    log.roll()
    end, _ = cleaner(clock).clean(to_clean(log))
    assert end == 6
    # A plain message goes or stays; a wrapper with one live record stays whole.
    assert records(log) == [(1, b"a", b"2"), (2, b"b", None), (3, b"w", b"old"), (4, b"z", b"kept"), (5, b"w", b"new")]
    assert all(b.magic == 1 for b in batches(log))
    # A magic-1 tombstone goes once its segment is delete.retention.ms older than the last
    # segment of the clean section.
    c = cleaner(clock)
    log.segments[0].set_last_modified(NOW - DAY - 10)
    produce(log, [(b"c", b"x")])
    log.roll()
    log.segments[1].set_last_modified(NOW)
    end, _ = c.clean(to_clean(log, end))  # clean section: segment 0 only, so its tombstone stays
    assert (2, b"b", None) in records(log)
    produce(log, [(b"d", b"y")])
    log.roll()
    c.clean(to_clean(log, end))  # clean section ends with segment 1, a day newer than segment 0
    assert [(o, k) for o, k, _ in records(log)] == [(1, b"a"), (3, b"w"), (4, b"z"), (5, b"w"), (6, b"c"), (7, b"d")]


def test_a_swap_is_refused_when_the_segments_left_the_log_meanwhile(tmp_path):
    from kcli.storage.log_cleaner_manager import LogCleaningAbortedError

    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=700)
    fill(log, rounds=6, keys=4)
    log.roll()

    def truncate_first(step: str) -> None:
        if step == "cleaned" and log.log_end_offset > 3:
            log.truncate_to(3)  # a truncation that did not pause the cleaner (LogManager's does)

    with pytest.raises(LogCleaningAbortedError, match="changed meanwhile"):
        cleaner(clock, hook=truncate_first).clean(to_clean(log))
    assert not list((tmp_path / "topic-0").glob("*.cleaned"))
    assert [o for o, _, _ in records(log)] == [0, 1, 2]
