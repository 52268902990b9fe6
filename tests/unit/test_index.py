"""Offset and time indexes against the format facts (reference section 7.3) and Kafka's index rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcli.errors import CorruptIndexError, InvalidOffsetError
from kcli.storage.index import (
    OffsetIndex,
    TimeIndex,
    decode_offset_index_entries,
    read_offset_index_entries,
    read_time_index_entries,
)

BASE = 100


def offset_index(tmp_path: Path, max_size: int = 10485760, base: int = BASE) -> OffsetIndex:
    return OffsetIndex(tmp_path / f"{base:020d}.index", base, max_size)


def time_index(tmp_path: Path, max_size: int = 10485760, base: int = BASE) -> TimeIndex:
    return TimeIndex(tmp_path / f"{base:020d}.timeindex", base, max_size)


# -- files and bytes ----------------------------------------------------------------------------------


def test_new_indexes_are_preallocated_to_whole_entries_with_a_zero_tail(tmp_path):
    oi, ti = offset_index(tmp_path), time_index(tmp_path)
    assert (oi.path.stat().st_size, ti.path.stat().st_size) == (10485760, 10485756)
    assert (oi.max_entries, ti.max_entries) == (1310720, 873813)
    assert (oi.entries, ti.entries) == (0, 0)
    oi.close_handler()
    ti.close_handler()
    assert oi.path.read_bytes() == bytes(10485760)
    assert offset_index(tmp_path, 100, base=7).path.stat().st_size == 96
    assert time_index(tmp_path, 100, base=7).path.stat().st_size == 96


def test_offset_index_entry_bytes_are_relative_offset_and_position_big_endian(tmp_path):
    oi = offset_index(tmp_path)
    oi.append(150, 4096)
    oi.append(BASE + 0x01020304, 0x7FFFFFFF)
    oi.close()
    assert oi.path.read_bytes() == bytes.fromhex("00000032 00001000 01020304 7fffffff")


def test_time_index_entry_bytes_are_timestamp_int64_and_relative_offset_int32(tmp_path):
    ti = time_index(tmp_path)
    ti.maybe_append(1700000000000, 150)  # 0x18bcfe56800
    ti.close()
    assert ti.path.read_bytes() == bytes.fromhex("0000018bcfe56800 00000032")


def test_close_trims_and_reopen_counts_length_over_entry_size(tmp_path):
    oi, ti = offset_index(tmp_path), time_index(tmp_path)
    for i in range(3):
        oi.append(BASE + 10 * i, 1000 * i)
        ti.maybe_append(5000 + i, BASE + 10 * i)
    oi.close()
    ti.close()
    assert (oi.path.stat().st_size, ti.path.stat().st_size) == (24, 36)
    again, tagain = offset_index(tmp_path), time_index(tmp_path)
    assert again.entries == 3 and again.last_offset == BASE + 20
    assert tagain.entries == 3 and tuple(tagain.last_entry) == (5002, BASE + 20)
    assert [tuple(again.entry(i)) for i in range(3)] == [(100, 0), (110, 1000), (120, 2000)]


def test_an_untrimmed_file_counts_its_zero_tail_as_entries(tmp_path):
    oi = offset_index(tmp_path, 80)
    oi.append(105, 0)
    oi.close_handler()  # a crash: no trim
    reopened = offset_index(tmp_path, 80)
    assert reopened.entries == 10
    assert tuple(reopened.entry(1)) == (BASE, 0)
    reopened.sanity_check()  # zero entries have offset == base offset: not corrupt


def test_resize_keeps_entries(tmp_path):
    oi = offset_index(tmp_path, 80)
    oi.append(101, 7)
    oi.trim_to_valid_size()
    assert oi.path.stat().st_size == 8 and oi.is_full
    assert oi.resize(80) and oi.path.stat().st_size == 80 and not oi.is_full
    assert not oi.resize(85)  # rounds down to 80: unchanged
    oi.append(102, 9)
    assert [tuple(oi.entry(i)) for i in range(oi.entries)] == [(101, 7), (102, 9)]


# -- appending ----------------------------------------------------------------------------------------


def test_offset_index_rejects_offsets_not_above_the_last(tmp_path):
    oi = offset_index(tmp_path)
    oi.append(110, 0)
    with pytest.raises(InvalidOffsetError, match=r"Attempt to append an offset \(110\) to position 1 no larger than the last offset appended \(110\)"):
        oi.append(110, 10)
    with pytest.raises(InvalidOffsetError):
        oi.append(109, 10)
    with pytest.raises(InvalidOffsetError, match="Integer overflow for offset"):
        oi.append(BASE + 2**31, 10)


def test_offset_index_is_full_at_max_entries_and_time_index_one_earlier(tmp_path):
    oi, ti = offset_index(tmp_path, 24), time_index(tmp_path, 36)
    for i in range(3):
        assert not oi.is_full
        oi.append(BASE + i, i)
    assert oi.is_full
    with pytest.raises(ValueError, match=r"Attempt to append to a full index \(size = 3\)"):
        oi.append(BASE + 3, 3)
    ti.maybe_append(1, BASE)
    ti.maybe_append(2, BASE + 1)
    assert ti.is_full
    with pytest.raises(ValueError, match="full time index"):
        ti.maybe_append(3, BASE + 2)
    ti.maybe_append(3, BASE + 2, skip_full_check=True)  # the slot kept for the roll entry
    assert ti.entries == 3


def test_time_index_appends_only_greater_timestamps_and_rejects_going_back(tmp_path):
    ti = time_index(tmp_path)
    ti.maybe_append(-1, BASE)  # NoTimestamp (v0 data): never indexed
    assert ti.entries == 0
    ti.maybe_append(1000, 105)
    ti.maybe_append(1000, 105)  # the same entry again (close after roll): ignored
    ti.maybe_append(1000, 107)  # same timestamp: ignored
    assert ti.entries == 1
    with pytest.raises(InvalidOffsetError, match=r"Attempt to append an offset \(104\) to slot 1"):
        ti.maybe_append(2000, 104)
    with pytest.raises(ValueError, match=r"Attempt to append a timestamp \(999\) to slot 1"):
        ti.maybe_append(999, 110)
    ti.maybe_append(1001, 110)
    assert [tuple(ti.entry(i)) for i in range(2)] == [(1000, 105), (1001, 110)]


# -- lookups ------------------------------------------------------------------------------------------


def test_lookups_find_the_largest_entry_at_or_below_the_target(tmp_path):
    oi, ti = offset_index(tmp_path), time_index(tmp_path)
    for offset, position, timestamp in [(110, 500, 1000), (120, 900, 1500), (130, 1400, 2500)]:
        oi.append(offset, position)
        ti.maybe_append(timestamp, offset)
    assert tuple(oi.lookup(99)) == (BASE, 0)
    assert tuple(oi.lookup(109)) == (BASE, 0)
    assert tuple(oi.lookup(110)) == (110, 500)
    assert tuple(oi.lookup(129)) == (120, 900)
    assert tuple(oi.lookup(10**12)) == (130, 1400)
    assert tuple(oi.lookup_by_position(899)) == (110, 500)
    assert tuple(oi.lookup_by_position(900)) == (120, 900)
    assert tuple(ti.lookup(999)) == (-1, BASE)
    assert tuple(ti.lookup(1499)) == (1000, 110)
    assert tuple(ti.lookup(2500)) == (2500, 130)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    gaps=st.lists(st.integers(min_value=1, max_value=50), min_size=0, max_size=2500),
    targets=st.lists(st.integers(min_value=-10, max_value=130000), min_size=1, max_size=30),
)
def test_lookup_agrees_with_a_linear_scan(tmp_path_factory, gaps, targets):
    oi = OffsetIndex(tmp_path_factory.mktemp("idx") / "00000000000000000000.index", 0, 1 << 20)
    entries = []
    offset = 0
    for i, gap in enumerate(gaps):
        offset += gap
        oi.append(offset, i * 10)
        entries.append((offset, i * 10))
    for target in targets:
        below = [e for e in entries if e[0] <= target]
        assert tuple(oi.lookup(target)) == (below[-1] if below else (0, 0))
    oi.close_handler()


# -- truncation ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "remaining"),
    [(120, [110]), (125, [110, 120]), (105, []), (131, [110, 120, 130]), (110, [])],
)
def test_truncate_to_removes_entries_at_and_above_the_offset(tmp_path, target, remaining):
    oi, ti = offset_index(tmp_path), time_index(tmp_path)
    for offset, timestamp in [(110, 1000), (120, 1500), (130, 2500)]:
        oi.append(offset, offset * 10)
        ti.maybe_append(timestamp, offset)
    oi.truncate_to(target)
    ti.truncate_to(target)
    assert [oi.entry(i).offset for i in range(oi.entries)] == remaining
    assert [ti.entry(i).offset for i in range(ti.entries)] == remaining
    assert oi.last_offset == (remaining[-1] if remaining else BASE)
    assert ti.last_entry.offset == (remaining[-1] if remaining else BASE)


# -- sanity checks ------------------------------------------------------------------------------------


def write(path: Path, hexbytes: str) -> Path:
    path.write_bytes(bytes.fromhex(hexbytes))
    return path


def test_offset_index_sanity_messages(tmp_path):
    path = write(tmp_path / f"{BASE:020d}.index", "00000001 00000000 000000")
    with pytest.raises(CorruptIndexError) as exc:
        OffsetIndex.open_readonly(path, BASE).sanity_check()
    assert str(exc.value) == f"Index file {path.absolute()} is corrupt, found 11 bytes which is neither positive nor a multiple of 8."
    write(path, "00000001 00000000 ffffffff 00000010")
    with pytest.raises(CorruptIndexError) as exc:
        OffsetIndex.open_readonly(path, BASE).sanity_check()
    assert str(exc.value) == (
        f"Corrupt index found, index file ({path.absolute()}) has non-zero size but the last offset is 99 which is less than the base offset 100."
    )


def test_time_index_sanity_messages(tmp_path):
    path = write(tmp_path / f"{BASE:020d}.timeindex", "0000000000000064 00000001 0000000000000032 00000002")
    with pytest.raises(CorruptIndexError) as exc:
        TimeIndex.open_readonly(path, BASE).sanity_check()
    assert str(exc.value) == (
        f"Corrupt time index found, time index file ({path.absolute()}) has non-zero size but the last timestamp is 50 which is less than the first timestamp 100"
    )
    write(path, "0000000000000064 00000001 00000000000000c8 fffffffe")
    with pytest.raises(CorruptIndexError) as exc:
        TimeIndex.open_readonly(path, BASE).sanity_check()
    assert str(exc.value) == (
        f"Corrupt time index found, time index file ({path.absolute()}) has non-zero size but the last offset is 98 which is less than the first offset 100"
    )
    write(path, "0000000000000064 00000001 00")
    with pytest.raises(CorruptIndexError) as exc:
        TimeIndex.open_readonly(path, BASE).sanity_check()
    assert str(exc.value) == f"Time index file {path.absolute()} is corrupt, found 13 bytes which is neither positive nor a multiple of 12."


def test_empty_file_opens_readonly_with_no_entries(tmp_path):
    path = write(tmp_path / f"{BASE:020d}.index", "")
    oi = OffsetIndex.open_readonly(path, BASE)
    assert oi.entries == 0 and tuple(oi.lookup(500)) == (BASE, 0)
    oi.sanity_check()
    oi.close()
    assert path.stat().st_size == 0


# -- raw entries for tools ----------------------------------------------------------------------------


def test_raw_entry_readers_take_the_base_offset_from_the_file_name(tmp_path):
    index = write(tmp_path / "00000000000000000042.index", "00000001 00000000 00000005 0000012c 0000")
    timeindex = write(tmp_path / "00000000000000000042.timeindex", "0000018bcfe56800 00000005")
    assert read_offset_index_entries(index) == [(43, 0), (47, 300)]
    assert read_time_index_entries(timeindex) == [(1700000000000, 47)]
    assert decode_offset_index_entries(bytes(16), 7) == [(7, 0), (7, 0)]
