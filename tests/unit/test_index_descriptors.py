"""The file descriptors indexes and segments hold: a mapped index holds none, the active segment's
indexes one each while written, an inactive segment only its ``.log``."""

from __future__ import annotations

import os
from pathlib import Path

from kcli.storage.index import OffsetIndex, TimeIndex
from kcli.storage.records import NewRecord, build_batch
from kcli.storage.segment import LogSegment


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def open_files_under(directory: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            found.append(Path(target).name)
    return sorted(found)


def written_index(tmp_path: Path, entries: int = 3) -> OffsetIndex:
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 4096)
    for n in range(entries):
        index.append(n * 10, n * 100)
    index.close()
    return OffsetIndex(tmp_path / "00000000000000000000.index", 0, 4096)


def test_an_index_that_is_only_read_holds_no_descriptor(tmp_path):
    written_index(tmp_path).close()
    before = open_descriptors()
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 4096)
    assert index.lookup(25) == (20, 200)
    assert open_files_under(tmp_path) == []
    assert open_descriptors() == before
    index.close()


def test_a_readonly_index_for_tools_holds_no_descriptor(tmp_path):
    written_index(tmp_path).close()
    index = OffsetIndex.open_readonly(tmp_path / "00000000000000000000.index", 0)
    assert index.entry(2) == (20, 200)
    assert open_files_under(tmp_path) == []
    index.close_handler()


def test_writing_opens_one_descriptor_and_trimming_closes_it(tmp_path):
    index = written_index(tmp_path)
    index.resize(4096)
    index.append(30, 300)
    assert open_files_under(tmp_path) == ["00000000000000000000.index"]
    index.trim_to_valid_size()
    assert open_files_under(tmp_path) == []
    # The mapping outlives its descriptor: lookups still see every entry.
    assert [index.entry(n) for n in range(index.entries)] == [(0, 0), (10, 100), (20, 200), (30, 300)]
    assert index.lookup(31) == (30, 300)
    index.flush()
    index.close()
    assert (tmp_path / "00000000000000000000.index").stat().st_size == 32


def test_a_new_time_index_holds_one_descriptor_until_trimmed(tmp_path):
    index = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0, 4096)
    index.maybe_append(1000, 0)
    index.maybe_append(2000, 5)
    assert open_files_under(tmp_path) == ["00000000000000000000.timeindex"]
    index.trim_to_valid_size()
    assert open_files_under(tmp_path) == []
    assert index.lookup(1500) == (1000, 0)
    index.close()


def test_a_lookup_holding_the_pages_survives_the_index_closing(tmp_path):
    index = written_index(tmp_path)
    pages = index._mmap
    index.close_handler()
    assert bytes(pages[8:16]) == (10).to_bytes(4, "big") + (100).to_bytes(4, "big")


def test_an_inactive_segment_holds_only_its_log(tmp_path):
    segment = LogSegment.open(tmp_path, 0, max_index_size=4096, index_interval_bytes=1)
    for offset in range(3):
        data = build_batch([NewRecord(None, b"v" * 50, 1000 + offset)], base_offset=offset)
        segment.append(offset, 1000 + offset, offset, data)
    assert open_files_under(tmp_path) == ["00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex"]
    segment.on_become_inactive_segment()
    assert open_files_under(tmp_path) == ["00000000000000000000.log"]
    assert segment.read(1, 1000).fetch_offset_metadata.message_offset == 1
    assert open_files_under(tmp_path) == ["00000000000000000000.log"]
    segment.close()
    assert open_files_under(tmp_path) == []
