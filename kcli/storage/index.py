"""A segment's sparse indexes: ``.index`` (offset -> position) and ``.timeindex`` (timestamp -> offset).

    .index      8-byte entries: relative offset int32, position int32        (big-endian)
    .timeindex 12-byte entries: timestamp int64, relative offset int32

A relative offset is the offset minus the segment's base offset, which is the file name
(``00000000000000000000.index``). An index is memory-mapped. A new one is preallocated to
``segment.index.bytes`` rounded down to a multiple of the entry size (10485760 and 10485756 bytes
by default) with a zero tail; rolling or closing the segment trims it to its entries. An existing
file is taken as it is: ``length / entry size`` entries, so the zero tail of a file left untrimmed
by a crash counts too (recovery rebuilds such indexes). The time index keeps its last slot for the
entry written when the segment is rolled, so it is full one entry early.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import NamedTuple

from kcli.errors import CorruptIndexError, InvalidOffsetError
from kcli.storage.mapped_file import map_readonly

DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
NO_TIMESTAMP = -1
_INT32_MAX = 2**31 - 1
# Lookups near the end of an index (the tail that consumers read) first search its last 8 KiB,
# the pages that stay in memory (Kafka's warm section).
_WARM_SECTION_BYTES = 8192
_BASE_OFFSET_NAME = re.compile(r"(\d+)\.")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


def _round_down(size: int, multiple: int) -> int:
    return size // multiple * multiple


def _slots_before_first_hole(fd: int, length: int, entry_size: int) -> int:
    """The slots of an index file up to its first hole (all of them when it has none).

    A crash leaves the active segment's index at its preallocated size, ending in a hole that
    Kafka counts as zero entries until recovery resets the index. Reading a hole through the
    mapping faults in a new page on tmpfs, and on a full disk that fault is SIGBUS, which would
    kill the broker at every start. Entries are written from the start with no gaps, so nothing
    past the first hole is an entry: counting up to it reads only written pages."""
    try:
        written = os.lseek(fd, 0, os.SEEK_HOLE)
    except OSError:  # no SEEK_HOLE on this filesystem: every slot counts, as in Kafka
        written = length
    return min(written, length) // entry_size


class AbstractIndex:
    """What both indexes share: the mapping, the entry count, searches, trimming and resizing."""

    ENTRY: struct.Struct
    ENTRY_SIZE: int
    # Which field of an entry is the search key and which the value (IndexSearchType KEY/VALUE).
    KEY = 0
    VALUE = 1

    def __init__(self, path: Path | str, base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE, writable: bool = True) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        # Entries are written with pwrite, not through the mapping: a store into a fresh page of
        # a sparse mapped file faults and allocates a block on the spot (2 ms median, 12 ms p90
        # on ext4 here); pwrite leaves that to writeback (2 us). The mapping, which shares the
        # page cache, serves the lookups and holds no descriptor (mapped_file). The one
        # descriptor writes need is opened by the first write and closed when the index is
        # trimmed (the segment stops being the active one) or closed, so an index that is only
        # read holds none, as Kafka's do.
        self._writer_fd = -1
        self._unsynced = False
        newly_created = False
        if writable:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                newly_created = True
            except FileExistsError:
                fd = os.open(self.path, os.O_RDONLY)
        else:
            fd = os.open(self.path, os.O_RDONLY)
        try:
            if newly_created:
                if max_index_size < self.ENTRY_SIZE:
                    raise ValueError(f"Invalid max index size: {max_index_size}")
                os.ftruncate(fd, _round_down(max_index_size, self.ENTRY_SIZE))
            self._map(fd)
        except BaseException:
            os.close(fd)
            raise
        if newly_created:
            # A new index is the active segment's: its entries follow at once.
            self._writer_fd = fd
            self._unsynced = True
            self._entries = 0
        else:
            try:
                self._entries = _slots_before_first_hole(fd, self._length, self.ENTRY_SIZE) if writable else self._max_entries
            finally:
                os.close(fd)
        self._entries_changed()

    @property
    def _fd(self) -> int:
        """The descriptor to write through, opened on first use (see ``__init__``)."""
        self._unsynced = True
        if self._writer_fd < 0:
            if not self.writable:
                raise ValueError(f"{self.path} was opened read-only")
            self._writer_fd = os.open(self.path, os.O_RDWR)
        return self._writer_fd

    def release_descriptor(self) -> None:
        """Close the write descriptor (the mapping stays); the next write opens one again."""
        if self._writer_fd >= 0:
            os.close(self._writer_fd)
            self._writer_fd = -1

    @classmethod
    def open_readonly(cls, path: Path | str, base_offset: int):
        """An existing index file, mapped read-only: what tools use to inspect one."""
        return cls(path, base_offset, writable=False)

    def _map(self, fd: int) -> None:
        self._length = os.fstat(fd).st_size
        self._mmap: memoryview | None = map_readonly(fd, self._length) if self._length else None
        self._max_entries = self._length // self.ENTRY_SIZE

    def _entries_changed(self) -> None:
        """Refresh what a subclass caches about the last entry."""

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def length(self) -> int:
        return self._length

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries

    def _relative_offset(self, offset: int) -> int:
        relative = offset - self.base_offset
        if relative < 0 or relative > _INT32_MAX:
            raise InvalidOffsetError(f"Integer overflow for offset: {offset} ({self.path.absolute()})")
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def _raw(self, slot: int) -> tuple:
        return self.ENTRY.unpack_from(self._mmap, slot * self.ENTRY_SIZE)

    def _largest_lower_bound_slot(self, target: int, field: int) -> int:
        """The last slot whose ``field`` is <= ``target``, or -1."""
        n = self._entries
        if n == 0:
            return -1
        mm = self._mmap
        unpack = self.ENTRY.unpack_from
        size = self.ENTRY_SIZE
        if unpack(mm, 0)[field] > target:
            return -1
        first_hot = max(0, n - 1 - _WARM_SECTION_BYTES // size)
        if unpack(mm, first_hot * size)[field] <= target:
            lo, hi = first_hot, n - 1
        else:
            lo, hi = 0, first_hot
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if unpack(mm, mid * size)[field] > target:
                hi = mid - 1
            else:
                lo = mid
        return lo

    def _truncate_to_entries(self, entries: int) -> None:
        self._entries = entries
        self._entries_changed()

    def truncate_to_entries(self, entries: int) -> None:
        """Keep the first ``entries`` entries: how an append that failed takes back its entry.

        The slots given up are zeroed (with pwrite, like every entry: their blocks are already
        allocated), so no entry of an undone append is left in the file for a later load to find."""
        if entries < self._entries:
            start, end = entries * self.ENTRY_SIZE, min(self._entries * self.ENTRY_SIZE, self._length)
            if end > start:
                os.pwrite(self._fd, bytes(end - start), start)
            self._truncate_to_entries(entries)

    def truncate(self) -> None:
        """Remove every entry."""
        self._truncate_to_entries(0)

    def reset(self) -> None:
        """Remove every entry and give the file its full preallocated size again."""
        self.truncate()
        self.resize(self.max_index_size)

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to whole entries; False if unchanged."""
        rounded = _round_down(new_size, self.ENTRY_SIZE)
        if rounded == self._length:
            return False
        fd = self._fd
        self._mmap = None
        try:
            os.ftruncate(fd, rounded)
        finally:
            # Mapped again even when the length could not change, so lookups keep working.
            self._map(fd)
        if self._entries > self._max_entries:
            self._entries = self._max_entries
        self._entries_changed()
        return True

    def trim_to_valid_size(self) -> None:
        """Cut the preallocated tail: the index is complete (its segment is no longer written)."""
        self.resize(self._entries * self.ENTRY_SIZE)
        self.release_descriptor()

    def flush(self) -> None:
        """fsync what was written since the last flush, reopening the file if it was released."""
        if self._writer_fd >= 0:
            os.fsync(self._writer_fd)
        elif self._unsynced:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._unsynced = False

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def close_handler(self) -> None:
        """Unmap and close without trimming (the pages go when no lookup holds them)."""
        self._mmap = None
        self.release_descriptor()

    def close(self) -> None:
        """Trim a writable index to its entries and unmap it."""
        if self.writable and self._mmap is not None:
            self.trim_to_valid_size()
        self.close_handler()

    def delete(self) -> None:
        self.close_handler()
        self.path.unlink(missing_ok=True)

    def _length_check(self, what: str) -> None:
        if self._length % self.ENTRY_SIZE:
            raise CorruptIndexError(
                f"{what} {self.path.absolute()} is corrupt, found {self._length} bytes which is neither positive nor a multiple of {self.ENTRY_SIZE}."
            )


class OffsetIndex(AbstractIndex):
    """Offset -> file position of the batch holding it, every ``index.interval.bytes`` or so."""

    ENTRY = struct.Struct(">ii")
    ENTRY_SIZE = 8

    def _entries_changed(self) -> None:
        n = self._entries
        self._last_offset = self.base_offset + self._raw(n - 1)[0] if n else self.base_offset

    @property
    def last_offset(self) -> int:
        return self._last_offset

    def entry(self, n: int) -> OffsetPosition:
        """The ``n``-th entry as an absolute offset and a position."""
        if n >= self._entries or n < 0:
            raise IndexError(f"Attempt to fetch the {n}th entry from index {self.path.absolute()}, which has size {self._entries}.")
        relative, position = self._raw(n)
        return OffsetPosition(self.base_offset + relative, position)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the largest offset <= ``target_offset``; ``(base offset, 0)`` if none."""
        slot = self._largest_lower_bound_slot(target_offset - self.base_offset, self.KEY)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        relative, position = self._raw(slot)
        return OffsetPosition(self.base_offset + relative, position)

    def lookup_by_position(self, target_position: int) -> OffsetPosition:
        """The entry with the largest position <= ``target_position``; ``(base offset, 0)`` if none."""
        slot = self._largest_lower_bound_slot(target_position, self.VALUE)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        relative, position = self._raw(slot)
        return OffsetPosition(self.base_offset + relative, position)

    def append(self, offset: int, position: int) -> None:
        n = self._entries
        if n >= self._max_entries:
            raise ValueError(f"Attempt to append to a full index (size = {n}).")
        if n and offset <= self._last_offset:
            raise InvalidOffsetError(
                f"Attempt to append an offset ({offset}) to position {n} no larger than the last offset appended ({self._last_offset}) to {self.path.absolute()}."
            )
        relative = offset - self.base_offset
        if relative > _INT32_MAX or relative < 0:
            relative = self._relative_offset(offset)
        os.pwrite(self._fd, self.ENTRY.pack(relative, position), n * 8)
        self._entries = n + 1
        self._last_offset = offset

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= ``offset``."""
        relative = offset - self.base_offset
        slot = self._largest_lower_bound_slot(relative, self.KEY)
        if slot < 0:
            entries = 0
        elif self._raw(slot)[0] == relative:
            entries = slot
        else:
            entries = slot + 1
        self._truncate_to_entries(entries)

    def sanity_check(self) -> None:
        if self._entries and self._last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file ({self.path.absolute()}) has non-zero size but the last offset "
                f"is {self._last_offset} which is less than the base offset {self.base_offset}."
            )
        self._length_check("Index file")

    def __repr__(self) -> str:
        return f"OffsetIndex({self.path}, entries={self._entries}, last_offset={self._last_offset})"


class TimeIndex(AbstractIndex):
    """Timestamp -> offset: each entry is the largest timestamp seen before that offset."""

    ENTRY = struct.Struct(">qi")
    ENTRY_SIZE = 12

    def _entries_changed(self) -> None:
        n = self._entries
        if n:
            self._last_timestamp, relative = self._raw(n - 1)
            self._last_offset = self.base_offset + relative
        else:
            self._last_timestamp, self._last_offset = NO_TIMESTAMP, self.base_offset

    @property
    def is_full(self) -> bool:
        return self._entries >= self._max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        return TimestampOffset(self._last_timestamp, self._last_offset)

    def entry(self, n: int) -> TimestampOffset:
        if n >= self._entries or n < 0:
            raise IndexError(f"Attempt to fetch the {n}th entry from time index {self.path.absolute()} which has size {self._entries}")
        timestamp, relative = self._raw(n)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= ``target_timestamp``; ``(-1, base offset)`` if none."""
        slot = self._largest_lower_bound_slot(target_timestamp, self.KEY)
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        timestamp, relative = self._raw(slot)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append ``(timestamp, offset)`` if the timestamp is greater than the last entry's."""
        n = self._entries
        if not skip_full_check and n >= self._max_entries - 1:
            raise ValueError(f"Attempt to append to a full time index (size = {n}).")
        if n and offset < self._last_offset:
            raise InvalidOffsetError(
                f"Attempt to append an offset ({offset}) to slot {n} no larger than the last offset appended ({self._last_offset}) to {self.path.absolute()}."
            )
        if n and timestamp < self._last_timestamp:
            raise ValueError(
                f"Attempt to append a timestamp ({timestamp}) to slot {n} no larger than the last timestamp appended ({self._last_timestamp}) to {self.path.absolute()}."
            )
        if timestamp > self._last_timestamp:
            os.pwrite(self._fd, self.ENTRY.pack(timestamp, self._relative_offset(offset)), n * 12)
            self._entries = n + 1
            self._last_timestamp = timestamp
            self._last_offset = offset

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= ``offset``."""
        relative = offset - self.base_offset
        slot = self._largest_lower_bound_slot(relative, self.VALUE)
        if slot < 0:
            entries = 0
        elif self._raw(slot)[1] == relative:
            entries = slot
        else:
            entries = slot + 1
        self._truncate_to_entries(entries)

    def sanity_check(self) -> None:
        last_timestamp, last_offset = self._last_timestamp, self._last_offset
        if self._entries:
            first_timestamp = self._raw(0)[0]
            if last_timestamp < first_timestamp:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path.absolute()}) has non-zero size but the last "
                    f"timestamp is {last_timestamp} which is less than the first timestamp {first_timestamp}"
                )
            if last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path.absolute()}) has non-zero size but the last "
                    f"offset is {last_offset} which is less than the first offset {self.base_offset}"
                )
        self._length_check("Time index file")

    def __repr__(self) -> str:
        return f"TimeIndex({self.path}, entries={self._entries}, last_entry={(self._last_timestamp, self._last_offset)})"


# -- raw files, for tools ----------------------------------------------------------------------------


def base_offset_from_file_name(path: Path | str) -> int:
    """The base offset a segment file is named by (``00000000000000000042.index`` -> 42)."""
    name = Path(path).name
    match = _BASE_OFFSET_NAME.match(name)
    if not match:
        raise ValueError(f"{name} is not named by a base offset (like 00000000000000000000.index)")
    return int(match.group(1))


def decode_offset_index_entries(data: bytes, base_offset: int) -> list[OffsetPosition]:
    """Every whole 8-byte entry of ``.index`` bytes as an absolute ``(offset, position)``."""
    usable = _round_down(len(data), OffsetIndex.ENTRY_SIZE)
    return [OffsetPosition(base_offset + relative, position) for relative, position in OffsetIndex.ENTRY.iter_unpack(data[:usable])]


def decode_time_index_entries(data: bytes, base_offset: int) -> list[TimestampOffset]:
    """Every whole 12-byte entry of ``.timeindex`` bytes as an absolute ``(timestamp, offset)``."""
    usable = _round_down(len(data), TimeIndex.ENTRY_SIZE)
    return [TimestampOffset(timestamp, base_offset + relative) for timestamp, relative in TimeIndex.ENTRY.iter_unpack(data[:usable])]


def read_offset_index_entries(path: Path | str) -> list[OffsetPosition]:
    return decode_offset_index_entries(Path(path).read_bytes(), base_offset_from_file_name(path))


def read_time_index_entries(path: Path | str) -> list[TimestampOffset]:
    return decode_time_index_entries(Path(path).read_bytes(), base_offset_from_file_name(path))
