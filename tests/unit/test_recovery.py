"""Opening a partition directory after a crash: recovery, leftovers of interrupted operations, indexes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcli.storage.file_records import FileRecords
from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.records import NewRecord, RecordBatch, build_batch, iter_batches
from kcli.storage.segment import LogSegment

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"
LOG0 = "00000000000000000000.log"
CONFIG = LogConfig(index_interval_bytes=0)


def make_batches(count: int, first_offset: int = 0) -> list[bytes]:
    """Batches of 1 to 3 records with consecutive offsets and rising timestamps."""
    out = []
    offset = first_offset
    for i in range(count):
        n = i % 3 + 1
        out.append(build_batch([NewRecord(b"k%d" % i, b"v" * (i % 5 + 1), 1000 + 10 * i + j) for j in range(n)], base_offset=offset, partition_leader_epoch=i // 4))
        offset += n
    return out


def next_offset_after(batches: list[bytes]) -> int:
    return RecordBatch(batches[-1]).next_offset if batches else 0


def write_log(directory: Path, batches: list[bytes], roll_before: tuple[int, ...] = ()) -> Path:
    """A log holding ``batches`` (rolling before the given batch numbers), closed cleanly."""
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    for i, data in enumerate(batches):
        if i in roll_before:
            log.roll()
        log.append_as_follower(data)
    log.close()
    return directory


def recover(directory: Path, recovery_point: int = 0) -> Log:
    return Log.open(directory, CONFIG, had_clean_shutdown=False, recovery_point=recovery_point)


def contents(log: Log) -> list[bytes]:
    """Every batch of the log, as bytes, read back through Log.read."""
    info = log.read(log.log_start_offset, 1 << 30)
    data = info.read()
    return [bytes(data[b.position : b.position + b.size_in_bytes]) for b in iter_batches(data)]


def assert_indexes_point_at_batches(log: Log) -> None:
    for segment in log.segments:
        segment.offset_index.sanity_check()
        segment.time_index.sanity_check()
        for i in range(segment.offset_index.entries):
            offset, position = segment.offset_index.entry(i)
            found = segment.log.search_for_offset_with_size(offset, position)
            assert found is not None and (found.offset, found.position) == (offset, position)


# -- a lost or damaged tail ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_batches() -> list[bytes]:
    return make_batches(3)


def test_a_cut_last_batch_is_removed_at_every_byte_position(tmp_path, three_batches):
    template = write_log(tmp_path / "template" / "t-0", three_batches)
    prefix = len(three_batches[0]) + len(three_batches[1])
    full = (template / LOG0).read_bytes()
    for cut in range(len(three_batches[2])):
        directory = tmp_path / f"cut{cut}" / "t-0"
        shutil.copytree(template, directory)  # with the indexes written for the whole log
        (directory / LOG0).write_bytes(full[: prefix + cut])
        log = recover(directory)
        assert (log.log_end_offset, (directory / LOG0).stat().st_size) == (next_offset_after(three_batches[:2]), prefix), cut
        assert contents(log) == three_batches[:2]
        assert_indexes_point_at_batches(log)
        next_offset = log.log_end_offset
        assert log.append(build_batch([NewRecord(None, b"x", 5)])).first_offset == next_offset
        log.close()


@pytest.mark.parametrize(
    "garbage",
    [bytes(40), b"\xff" * 40, bytes.fromhex("00000000000000070000002c") + bytes(44), bytes.fromhex("0000000000000007000fffff") + bytes(100)],
    ids=["zeros", "ones", "bad-crc", "size-past-the-end"],
)
def test_garbage_after_the_last_batch_is_removed(tmp_path, three_batches, garbage):
    directory = write_log(tmp_path / "t-0", three_batches)
    with open(directory / LOG0, "ab") as f:
        f.write(garbage)
    log = recover(directory)
    assert contents(log) == three_batches
    assert (directory / LOG0).stat().st_size == sum(map(len, three_batches))


def test_a_valid_batch_with_offsets_going_back_ends_the_log(tmp_path, three_batches):
    directory = write_log(tmp_path / "t-0", three_batches)
    with open(directory / LOG0, "ab") as f:
        f.write(three_batches[1])  # well-formed, CRC right, but offsets already used
    assert contents(recover(directory)) == three_batches


def test_a_flipped_byte_in_the_middle_truncates_at_that_batch(tmp_path):
    batches = make_batches(5)
    template = write_log(tmp_path / "template" / "t-0", batches)
    start = sum(map(len, batches[:2]))
    full = (template / LOG0).read_bytes()
    # Every byte the CRC or the length covers; the base offset and leader epoch are outside both.
    for i in [*range(8, 12), *range(16, len(batches[2]))]:
        directory = tmp_path / f"flip{i}" / "t-0"
        shutil.copytree(template, directory)
        damaged = bytearray(full)
        damaged[start + i] ^= 0x10
        (directory / LOG0).write_bytes(bytes(damaged))
        log = recover(directory)
        assert contents(log) == batches[:2], i
        assert log.log_end_offset == RecordBatch(batches[2]).base_offset
        log.close()


def test_corruption_deletes_the_segments_after_it(tmp_path):
    batches = make_batches(6)
    directory = write_log(tmp_path / "t-0", batches, roll_before=(2, 4))
    bases = [RecordBatch(batches[i]).base_offset for i in (0, 2, 4)]
    segment1 = directory / f"{bases[1]:020d}.log"
    data = bytearray(segment1.read_bytes())
    data[-1] ^= 0xFF  # the last batch of the middle segment
    segment1.write_bytes(bytes(data))
    log = recover(directory)
    assert contents(log) == batches[:3]
    assert [s.base_offset for s in log.segments] == bases[:2]
    assert not (directory / f"{bases[2]:020d}.log").exists()


def test_recovery_starts_at_the_segment_holding_the_recovery_point(tmp_path):
    batches = make_batches(6)
    directory = write_log(tmp_path / "t-0", batches, roll_before=(2, 4))
    bases = [RecordBatch(batches[i]).base_offset for i in (0, 2, 4)]
    for base in (bases[0], bases[2]):
        with open(directory / f"{base:020d}.log", "ab") as f:
            f.write(b"\x00" * 30)
    log = recover(directory, recovery_point=bases[2] + 1)
    # The first segment lies below the recovery point: taken as it is, tail and all.
    assert (directory / LOG0).stat().st_size == sum(map(len, batches[:2])) + 30
    assert (directory / f"{bases[2]:020d}.log").stat().st_size == sum(map(len, batches[4:]))
    assert (log.log_end_offset, log.recovery_point) == (next_offset_after(batches), bases[2] + 1)


def test_a_clean_shutdown_skips_recovery(tmp_path, three_batches):
    directory = write_log(tmp_path / "t-0", three_batches)
    # A flipped byte in the first batch: before the last index entry, so a clean start's check of
    # the tail does not read it; a recovery does.
    data = bytearray((directory / LOG0).read_bytes())
    data[len(three_batches[0]) - 1] ^= 0xFF
    (directory / LOG0).write_bytes(bytes(data))
    size = len(data)
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    assert (directory / LOG0).stat().st_size == size
    assert (log.log_end_offset, log.recovery_point) == (next_offset_after(three_batches), next_offset_after(three_batches))
    log.close()
    assert (recover(directory).log_end_offset, (directory / LOG0).stat().st_size) == (0, 0)


def test_a_clean_shutdown_is_not_trusted_over_a_partial_last_batch(tmp_path, three_batches):
    directory = write_log(tmp_path / "t-0", three_batches)
    with open(directory / LOG0, "ab") as f:
        f.write(three_batches[0][:20])
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    assert (directory / LOG0).stat().st_size == sum(map(len, three_batches))
    assert contents(log) == three_batches


def test_a_corrupt_tail_despite_a_clean_shutdown_is_recovered_rather_than_failing(tmp_path, three_batches):
    directory = write_log(tmp_path / "t-0", three_batches)
    with open(directory / LOG0, "ab") as f:
        f.write(bytes(4096))  # zero-filled blocks: a size field of 0
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    assert contents(log) == three_batches
    assert (directory / LOG0).stat().st_size == sum(map(len, three_batches))


def test_recovery_rebuilds_the_leader_epoch_cache(tmp_path):
    batches = make_batches(9)  # epochs 0, 0, 0, 0, 1, 1, 1, 1, 2
    directory = write_log(tmp_path / "t-0", batches)
    (directory / "leader-epoch-checkpoint").unlink()
    log = recover(directory)
    assert log.leader_epoch_cache.entries == [(0, 0), (1, RecordBatch(batches[4]).base_offset), (2, RecordBatch(batches[8]).base_offset)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(min_value=1, max_value=8),
    damage=st.sampled_from(["cut", "flip", "garbage"]),
    where=st.floats(min_value=0, max_value=0.999),
    garbage=st.binary(min_size=1, max_size=80),
)
def test_recovery_keeps_exactly_the_valid_batches_before_the_damage(tmp_path_factory, count, damage, where, garbage):
    batches = make_batches(count)
    directory = write_log(tmp_path_factory.mktemp("log") / "t-0", batches)
    data = bytearray((directory / LOG0).read_bytes())
    starts = [sum(map(len, batches[:i])) for i in range(count + 1)]
    if damage == "cut":
        point = int(where * len(data))
        data = data[:point]
        expected = [b for b, end in zip(batches, starts[1:]) if end <= point]
    elif damage == "flip":
        k = int(where * count)
        covered = [*range(8, 12), *range(16, len(batches[k]))]
        data[starts[k] + covered[int(where * 1000) % len(covered)]] ^= 0x04
        expected = batches[:k]
    else:
        data += garbage
        expected = batches
    (directory / LOG0).write_bytes(bytes(data))
    log = recover(directory)
    assert contents(log) == expected
    assert log.log_end_offset == next_offset_after(expected)
    assert_indexes_point_at_batches(log)
    log.close()


# -- leftovers of interrupted operations -----------------------------------------------------------


def test_deleted_and_cleaned_leftovers_are_removed(tmp_path, three_batches):
    directory = write_log(tmp_path / "t-0", three_batches)
    for name in ("00000000000000000000.log.deleted", "00000000000000000000.index.deleted", "00000000000000000005.log.cleaned",
                 "00000000000000000005.index.cleaned", "00000000000000000007.log.swap", "00000000000000000099.index",
                 "00000000000000000020-00000001.checkpoint.deleted"):
        (directory / name).write_bytes(b"junk")
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    names = sorted(os.listdir(directory))
    assert names == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000020-00000001.checkpoint.deleted",  # a KRaft snapshot: its own log removes it
        "leader-epoch-checkpoint",
    ]
    assert contents(log) == three_batches


def test_a_swap_file_replaces_the_segments_it_covers(tmp_path):
    batches = make_batches(6)
    directory = write_log(tmp_path / "t-0", batches, roll_before=(3,))
    kept = [batches[1], batches[4], batches[5]]  # what a compaction kept of both segments
    swap = LogSegment.open(directory, 0, max_index_size=1024, index_interval_bytes=0, suffix=".swap")
    for data in kept:
        b = RecordBatch(data)
        swap.should_roll(1 << 30, 1 << 62, len(data), b.max_timestamp, b.last_offset, 0)
        swap.append(b.last_offset, b.max_timestamp, b.last_offset, data)
    swap.close()
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    assert [s.base_offset for s in log.segments] == [0]
    assert sorted(p.name for p in directory.iterdir() if p.name[0] == "0") == [f"00000000000000000000{s}" for s in (".index", ".log", ".timeindex")]
    assert contents(log) == kept
    assert log.log_end_offset == next_offset_after(batches)


def test_a_swap_at_or_above_a_cleaned_file_belongs_to_an_unfinished_split(tmp_path, three_batches):
    directory = write_log(tmp_path / "t-0", three_batches)
    (directory / "00000000000000000001.log.cleaned").write_bytes(b"")
    (directory / "00000000000000000001.log.swap").write_bytes(three_batches[1])
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    assert not any(p.name.endswith((".swap", ".cleaned")) for p in directory.iterdir())
    assert [s.base_offset for s in log.segments] == [0]
    assert contents(log) == three_batches


# -- indexes at load -------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["missing", "odd-length", "below-base"])
def test_a_missing_or_corrupt_offset_index_is_rebuilt(tmp_path, damage):
    batches = make_batches(8)
    directory = write_log(tmp_path / "t-0", batches, roll_before=(4,))
    index = directory / "00000000000000000000.index"
    good = index.read_bytes()
    assert good  # interval 0: an entry for every batch after the first
    if damage == "missing":
        index.unlink()
    elif damage == "odd-length":
        index.write_bytes(good + b"\x01\x02\x03")
    else:
        index.write_bytes(good[:-8] + bytes.fromhex("ffffffff00000010"))
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    log.segments[0].offset_index  # load it
    assert index.read_bytes() == good
    assert contents(log) == batches


def test_a_missing_time_index_is_created_empty_without_recovery(tmp_path):
    batches = make_batches(8)
    directory = write_log(tmp_path / "t-0", batches, roll_before=(4,))
    (directory / "00000000000000000000.timeindex").unlink()
    log = Log.open(directory, CONFIG, had_clean_shutdown=True)
    assert (directory / "00000000000000000000.timeindex").stat().st_size == 0
    assert log.segments[0].time_index.entries == 0


@pytest.mark.skipif(not SEGMENTS.is_dir(), reason="../shared/kafka-segments (real Kafka data) is not present")
def test_rebuilt_indexes_of_a_kafka_segment_are_kafkas(tmp_path):
    source = SEGMENTS / "kraft-cleanshutdown-nomanazeem" / "kafka-logs" / "__consumer_offsets-15"
    with FileRecords.open(source / LOG0) as records:
        batches = [records.read(p, b.size_in_bytes) for p, b in records.batches()]
    directory = tmp_path / "__consumer_offsets-15"
    log = Log.open(directory, LogConfig(), had_clean_shutdown=True)
    for data in batches:
        log.append_as_follower(data)
    log.close()
    for suffix in (".index", ".timeindex"):
        (directory / f"00000000000000000000{suffix}").unlink()
    (directory / "leader-epoch-checkpoint").unlink()
    Log.open(directory, LogConfig(), had_clean_shutdown=False).close()
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex", "leader-epoch-checkpoint"):
        assert (directory / name).read_bytes() == (source / name).read_bytes(), name
