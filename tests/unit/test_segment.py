"""LogSegment: Kafka's sparse indexing rule, reads of whole batches, recovery, truncation and rolling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kcli.errors import InvalidOffsetError
from kcli.storage.file_records import FileRecords
from kcli.storage.records import NewRecord, RecordBatch, build_batch
from kcli.storage.segment import DELETED_FILE_SUFFIX, LogSegment

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"
needs_fixtures = pytest.mark.skipif(not SEGMENTS.is_dir(), reason="../shared/kafka-segments (real Kafka data) is not present")


def batch(base_offset: int, timestamps: list[int], value: bytes = b"v" * 20) -> bytes:
    return build_batch([NewRecord(None, value, ts) for ts in timestamps], base_offset=base_offset)


def open_segment(directory: Path, base_offset: int = 0, interval: int = 4096, max_index_size: int = 10485760, clock=None) -> LogSegment:
    kwargs = {"clock": clock} if clock else {}
    return LogSegment.open(directory, base_offset, max_index_size=max_index_size, index_interval_bytes=interval, **kwargs)


def append(segment: LogSegment, data: bytes) -> None:
    """Append one batch as a log does: ask whether to roll (which opens both indexes), then append
    with the last offset, max timestamp and the last offset of the batch holding it."""
    b = RecordBatch(data)
    segment.should_roll(1 << 31, 1 << 62, len(data), b.max_timestamp, b.last_offset, 0)
    segment.append(b.last_offset, b.max_timestamp, b.last_offset, data)


def index_entries(segment: LogSegment) -> list[tuple[int, int]]:
    return [tuple(segment.offset_index.entry(i)) for i in range(segment.offset_index.entries)]


def time_entries(segment: LogSegment) -> list[tuple[int, int]]:
    return [tuple(segment.time_index.entry(i)) for i in range(segment.time_index.entries)]


# -- conformance with files written by Kafka -----------------------------------------------------------


def reappend_like_kafka(source_logs: list[Path], directory: Path) -> None:
    """Append every batch of Kafka's segments to fresh segments, rolling where Kafka's segments start."""
    for i, source in enumerate(source_logs):
        segment = open_segment(directory, int(source.name[:20]))
        with FileRecords.open(source) as records:
            for position, b in records.batches():
                append(segment, records.read(position, b.size_in_bytes))
        if i < len(source_logs) - 1:
            segment.on_become_inactive_segment()
        segment.close()


@needs_fixtures
def test_reappending_a_kafka_segment_writes_kafkas_index_files_byte_for_byte(tmp_path):
    # Kafka 4.x (KRaft), cleanly shut down: 88 batches, 5 offset-index and 6 time-index entries.
    source = SEGMENTS / "kraft-cleanshutdown-nomanazeem" / "kafka-logs" / "__consumer_offsets-15" / "00000000000000000000.log"
    reappend_like_kafka([source], tmp_path)
    for suffix in (".log", ".index", ".timeindex"):
        assert (tmp_path / source.with_suffix(suffix).name).read_bytes() == source.with_suffix(suffix).read_bytes(), suffix


@needs_fixtures
@pytest.mark.parametrize("partition", ["__consumer_offsets-31", "__consumer_offsets-44"])
def test_rolled_and_closed_segments_match_kafkas_index_files(tmp_path, partition):
    # Two segments each: the first was rolled (its time index holds only the roll entry), the
    # second closed at shutdown (trimmed, with the close entry).
    sources = sorted((SEGMENTS / "kraft-compacted-ronem123" / "kafka-logs" / partition).glob("*.log"))
    reappend_like_kafka(sources, tmp_path)
    for source in sources:
        for suffix in (".index", ".timeindex"):
            assert (tmp_path / source.with_suffix(suffix).name).read_bytes() == source.with_suffix(suffix).read_bytes(), source.name + suffix


# -- the sparse indexing rule ----------------------------------------------------------------------


def same_size_batches(count: int) -> list[bytes]:
    return [batch(3 * i, [1000 + i, 1000 + i, 1000 + i]) for i in range(count)]


def test_index_entry_when_more_than_interval_bytes_were_appended_since_the_last(tmp_path):
    batches = same_size_batches(8)
    size = len(batches[0])
    segment = open_segment(tmp_path, interval=size + size // 2)
    for data in batches:
        append(segment, data)
    # Batches 3, 5 and 7 (1-based) start after 2 batch sizes > 1.5 sizes since the last entry.
    assert index_entries(segment) == [(8, 2 * size), (14, 4 * size), (20, 6 * size)]
    assert time_entries(segment) == [(1002, 8), (1004, 14), (1006, 20)]


def test_index_interval_comparison_is_strict(tmp_path):
    batches = same_size_batches(10)
    size = len(batches[0])
    segment = open_segment(tmp_path, interval=2 * size)
    for data in batches:
        append(segment, data)
    assert index_entries(segment) == [(11, 3 * size), (20, 6 * size), (29, 9 * size)]


def test_time_index_holds_the_max_timestamp_so_far_including_the_indexed_batch(tmp_path):
    segment = open_segment(tmp_path, interval=0)
    for i, timestamps in enumerate([[5000], [9000, 4000], [7000], [9500], [100]]):
        append(segment, batch(10 + 2 * i, timestamps))
    positions = [p for p, _ in segment.log.batches()]
    # Every batch after the first starts more than 0 bytes after the last entry.
    assert index_entries(segment) == [(13, positions[1]), (14, positions[2]), (16, positions[3]), (18, positions[4])]
    # (9000, 13) is not repeated for offsets 14; 9500 at 16 is new; 100 is below the max.
    assert time_entries(segment) == [(9000, 13), (9500, 16)]
    assert (segment.max_timestamp_so_far, segment.offset_of_max_timestamp_so_far) == (9500, 16)


def test_roll_appends_the_last_time_entry_and_trims_both_indexes(tmp_path):
    segment = open_segment(tmp_path, interval=0)
    for i, ts in enumerate([100, 300, 200]):
        append(segment, batch(i, [ts]))
    assert time_entries(segment) == [(300, 1)]
    append(segment, batch(3, [400]))
    segment.on_become_inactive_segment()
    assert time_entries(segment) == [(300, 1), (400, 3)]  # entry for batch 3 comes only from the roll
    assert (tmp_path / "00000000000000000000.index").stat().st_size == 3 * 8
    assert (tmp_path / "00000000000000000000.timeindex").stat().st_size == 2 * 12


def test_recover_rebuilds_the_same_indexes_as_appending(tmp_path):
    segment = open_segment(tmp_path, interval=100)
    for i in range(30):
        append(segment, batch(2 * i, [1000 + (i * 37) % 11, 1000 + i]))
    segment.close()
    written = {s: (tmp_path / f"00000000000000000000{s}").read_bytes() for s in (".index", ".timeindex")}
    for s in written:
        (tmp_path / f"00000000000000000000{s}").unlink()
    recovered = open_segment(tmp_path, interval=100)
    assert recovered.recover() == 0
    recovered.close()
    assert {s: (tmp_path / f"00000000000000000000{s}").read_bytes() for s in written} == written


# -- reads ------------------------------------------------------------------------------------------


def three_batch_segment(tmp_path: Path) -> tuple[LogSegment, list[int], list[int]]:
    segment = open_segment(tmp_path, 100, interval=0)
    data = [batch(100, [1, 2, 3]), batch(103, [4, 5]), batch(105, [6, 7, 8, 9])]
    for d in data:
        append(segment, d)
    sizes = [len(d) for d in data]
    return segment, [0, sizes[0], sizes[0] + sizes[1]], sizes


def test_read_from_an_offset_inside_a_batch_returns_that_whole_batch(tmp_path):
    segment, positions, sizes = three_batch_segment(tmp_path)
    info = segment.read(104, 10_000)
    assert (info.fetch_offset_metadata.relative_position_in_segment, info.size) == (positions[1], sizes[1] + sizes[2])
    assert RecordBatch(info.read()).base_offset == 103


def test_read_returns_whole_batches_within_max_size(tmp_path):
    segment, positions, sizes = three_batch_segment(tmp_path)
    assert segment.read(100, sizes[0] + sizes[1] - 1).size == sizes[0]
    assert segment.read(100, sizes[0] + sizes[1]).size == sizes[0] + sizes[1]
    assert segment.read(100, 10_000, max_position=positions[2]).size == sizes[0] + sizes[1]


def test_first_batch_is_returned_whole_even_when_larger_than_max_size(tmp_path):
    segment, positions, sizes = three_batch_segment(tmp_path)
    info = segment.read(105, 10, min_one_message=True)
    assert (info.slices[0].position, info.size, info.first_entry_incomplete) == (positions[2], sizes[2], False)
    info = segment.read(105, 10)
    assert (info.size, info.first_entry_incomplete) == (0, True)


def test_read_past_the_last_offset_is_none(tmp_path):
    segment, _, _ = three_batch_segment(tmp_path)
    assert segment.read(109, 1000) is None
    assert segment.read_next_offset() == 109


def test_find_offset_by_timestamp_returns_the_first_record_at_or_after_it(tmp_path):
    segment, _, _ = three_batch_segment(tmp_path)
    assert tuple(segment.find_offset_by_timestamp(5))[:2] == (5, 104)
    assert tuple(segment.find_offset_by_timestamp(0))[:2] == (1, 100)
    assert tuple(segment.find_offset_by_timestamp(5, starting_offset=106))[:2] == (7, 106)
    assert segment.find_offset_by_timestamp(10) is None


# -- truncation -----------------------------------------------------------------------------------


def test_truncate_to_an_offset_inside_a_batch_removes_that_batch_and_after(tmp_path):
    segment, positions, sizes = three_batch_segment(tmp_path)
    assert segment.truncate_to(104) == sizes[1] + sizes[2]
    assert segment.size == positions[1]
    assert index_entries(segment) == [] and time_entries(segment) == []  # both entries were at offset 104 or above
    assert segment.offset_index.length == 10485760  # room again for the active segment
    assert (segment.max_timestamp_so_far, segment.offset_of_max_timestamp_so_far) == (3, 102)
    append(segment, batch(103, [50]))
    assert segment.read_next_offset() == 104


def test_truncate_to_keeps_index_entries_below_the_offset(tmp_path):
    segment, positions, _ = three_batch_segment(tmp_path)
    assert index_entries(segment) == [(104, positions[1]), (108, positions[2])]
    segment.truncate_to(105)
    assert index_entries(segment) == [(104, positions[1])]
    assert time_entries(segment) == [(5, 104)]


# -- rolling ----------------------------------------------------------------------------------------


def roll_check(segment: LogSegment, *, size=100, timestamp=0, offset=None, now=0, max_bytes=1 << 30, max_ms=1000) -> bool:
    return segment.should_roll(max_bytes, max_ms, size, timestamp, segment.base_offset if offset is None else offset, now)


def test_should_roll_on_segment_bytes(tmp_path):
    segment = open_segment(tmp_path)
    data = batch(0, [10])
    append(segment, data)
    assert not roll_check(segment, size=100, max_bytes=len(data) + 100)
    assert roll_check(segment, size=101, max_bytes=len(data) + 100)


def test_should_roll_on_segment_ms_by_the_first_batch_timestamp(tmp_path):
    segment = open_segment(tmp_path, clock=lambda: 0)
    assert not roll_check(segment, timestamp=10**9)  # empty segments never roll on time
    append(segment, batch(0, [5000]))
    assert not roll_check(segment, timestamp=6000, now=10**9)  # the wall clock does not count
    assert roll_check(segment, timestamp=6001, now=0)
    segment.close()
    reopened = open_segment(tmp_path, clock=lambda: 0)  # the first timestamp is read back from the file
    assert roll_check(reopened, timestamp=0)  # trimmed indexes are full until resized, as the loader does
    reopened.resize_indexes(10485760)
    assert roll_check(reopened, timestamp=6001) and not roll_check(reopened, timestamp=6000)


def test_should_roll_on_segment_ms_by_creation_time_without_timestamps(tmp_path):
    segment = open_segment(tmp_path, clock=lambda: 50_000)
    append(segment, batch(0, [-1]))
    assert not roll_check(segment, timestamp=-1, now=51_000)
    assert roll_check(segment, timestamp=-1, now=51_001)


def test_should_roll_on_full_indexes_and_offset_overflow(tmp_path):
    # 36 bytes: 4 offset-index slots, 3 time-index slots of which the last is kept for the roll.
    same_timestamps = open_segment(tmp_path, interval=0, max_index_size=36)
    for i in range(4):
        append(same_timestamps, batch(i, [7]))
    assert not roll_check(same_timestamps)
    append(same_timestamps, batch(4, [7]))
    assert (same_timestamps.offset_index.entries, same_timestamps.time_index.entries) == (4, 1)
    assert roll_check(same_timestamps)
    rising = open_segment(tmp_path, base_offset=100, interval=0, max_index_size=36)
    for i in range(2):
        append(rising, batch(100 + i, [i + 1]))
    assert not roll_check(rising)
    append(rising, batch(102, [3]))
    assert (rising.offset_index.entries, rising.time_index.entries) == (2, 2)
    assert roll_check(rising)
    other = open_segment(tmp_path, base_offset=1000)
    assert not roll_check(other, offset=1000 + 2**31 - 1)
    assert roll_check(other, offset=1000 + 2**31)
    with pytest.raises(InvalidOffsetError, match="offset overflow"):
        append(other, batch(1000 + 2**31, [1]))


# -- files ----------------------------------------------------------------------------------------


def test_largest_timestamp_falls_back_to_modification_time(tmp_path):
    segment = open_segment(tmp_path)
    append(segment, batch(0, [-1]))
    segment.set_last_modified(1_600_000_000_000)
    assert segment.largest_record_timestamp is None
    assert segment.largest_timestamp == 1_600_000_000_000
    append(segment, batch(1, [1234]))
    assert segment.largest_timestamp == 1234


def test_change_file_suffixes_then_delete(tmp_path):
    segment, _, _ = three_batch_segment(tmp_path)
    segment.change_file_suffixes("", DELETED_FILE_SUFFIX)
    assert sorted(os.listdir(tmp_path)) == [f"00000000000000000100{s}{DELETED_FILE_SUFFIX}" for s in (".index", ".log", ".timeindex")]
    assert segment.has_suffix(DELETED_FILE_SUFFIX)
    assert RecordBatch(segment.read(100, 1000).read()).base_offset == 100  # open files still read
    segment.delete()
    assert os.listdir(tmp_path) == []
