"""One ``.log`` file: Kafka's FileRecords.

The file is a plain concatenation of batches (magic 2 RecordBatches or legacy messages), each
starting with ``offset int64, size int32``. Every read is an ``os.pread`` on the file descriptor,
so concurrent readers never race on a file position, and iteration reads the file in large chunks
so that memory stays constant however big the file is. A trailing partial batch (a crash in the
middle of an append) ends iteration silently, as it does in Kafka; a size field that cannot be
right raises CorruptRecordError.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kcli.errors import CorruptRecordError, KcliError
from kcli.storage.records import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_PARTITION_LEADER_EPOCH,
    RECORD_BATCH_OVERHEAD,
    Batch,
    check_batch_size,
    peek_batch_header,
    read_batch,
)

INT32_MAX = 2**31 - 1
CHUNK_SIZE = 1 << 20
# Searches start at an index entry, at most index.interval.bytes before the batch they want.
_SCAN_WINDOW = 8192
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_POSITION = 23
_V2_PREFIX = _LAST_OFFSET_DELTA_POSITION + 4


class LogOffsetPosition(NamedTuple):
    """A batch found by offset: its last offset, file position and size (Kafka's LogOffsetPosition)."""

    offset: int
    position: int
    size: int


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int
    leader_epoch: int | None = None


class FileSlice:
    """A byte range of one ``.log`` file, for ``os.sendfile`` or ``read``."""

    __slots__ = ("records", "position", "size")

    def __init__(self, records: FileRecords, position: int, size: int) -> None:
        self.records = records
        self.position = position
        self.size = size

    @property
    def fileno(self) -> int:
        return self.records.fileno()

    def read(self) -> bytes:
        return self.records.read(self.position, self.size)

    def __repr__(self) -> str:
        return f"FileSlice({self.records.path.name}, position={self.position}, size={self.size})"


class FileRecords:
    """The batches of one ``.log`` file, appended at its end and read by position."""

    def __init__(self, path: Path, fd: int, size: int, writable: bool) -> None:
        self.path = path
        self._fd = fd
        self._size = size
        self.writable = writable

    @classmethod
    def open(cls, path: Path | str, *, writable: bool = False) -> FileRecords:
        """Open ``path``; a writable file is created when missing."""
        path = Path(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY, 0o644)
        try:
            size = os.fstat(fd).st_size
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, size, writable)

    @property
    def size(self) -> int:
        return self._size

    def fileno(self) -> int:
        if self._fd < 0:
            raise ValueError(f"{self.path} is closed")
        return self._fd

    def __enter__(self) -> FileRecords:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end of the file; returns the position it was written at."""
        position = self._size
        n = len(data)
        if n > INT32_MAX - position:
            raise KcliError(f"Append of size {n} bytes is too large for segment {self.path} with current file position at {position}")
        written = os.pwrite(self._fd, data, position)
        while written < n:
            written += os.pwrite(self._fd, memoryview(data)[written:], position + written)
        self._size = position + n
        return position

    def flush(self) -> None:
        os.fsync(self._fd)

    def truncate_to(self, size: int) -> int:
        """Cut the file to ``size`` bytes; returns how many bytes were removed."""
        original = self._size
        if size > original or size < 0:
            raise KcliError(f"Attempt to truncate log segment {self.path} to {size} bytes failed, size of this log segment is {original} bytes.")
        if size < os.fstat(self._fd).st_size:
            os.ftruncate(self._fd, size)
        self._size = size
        return original - size

    # -- reading -----------------------------------------------------------------------------------

    def read(self, position: int, size: int) -> bytes:
        """``size`` bytes from ``position`` (fewer at the end of the file)."""
        size = min(size, self._size - position)
        if size <= 0:
            return b""
        data = os.pread(self._fd, size, position)
        if len(data) < size:
            parts = [data]
            got = len(data)
            while got < size:
                more = os.pread(self._fd, size - got, position + got)
                if not more:
                    break
                parts.append(more)
                got += len(more)
            data = b"".join(parts)
        return data

    def slice(self, position: int, size: int) -> FileSlice:
        return FileSlice(self, position, max(0, min(size, self._size - position)))

    def batches(
        self, start: int = 0, end: int | None = None, max_batch_size: int = INT32_MAX, chunk_size: int = CHUNK_SIZE
    ) -> Iterator[tuple[int, Batch]]:
        """``(position, batch)`` for every whole batch in ``[start, end)``.

        The batches are views over chunks of ``chunk_size`` bytes (a bigger batch is read on its
        own). Sizes are checked as Kafka's FileLogInputStream does; CRCs are not: call ``validate``.
        """
        end = self._size if end is None else min(end, self._size)
        fd = self._fd
        position = start
        buf = b""
        buf_start = start
        while end - position >= HEADER_SIZE_UP_TO_MAGIC:
            rel = position - buf_start
            if len(buf) - rel < HEADER_SIZE_UP_TO_MAGIC:
                buf = os.pread(fd, min(chunk_size, end - position), position)
                buf_start = position
                rel = 0
                if len(buf) < HEADER_SIZE_UP_TO_MAGIC:
                    return
            _, size, _ = peek_batch_header(buf, rel)
            check_batch_size(size - LOG_OVERHEAD, position, max_batch_size)
            if position + size > end:
                return
            if rel + size > len(buf):
                if size > chunk_size:
                    data = self.read(position, size)
                    if len(data) < size:
                        return
                    yield position, read_batch(data, 0)
                    position += size
                    continue
                buf = self.read(position, min(chunk_size, end - position))
                buf_start = position
                rel = 0
                if len(buf) < size:
                    return
            yield position, read_batch(buf, rel)
            position += size

    def headers(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int]]:
        """``(position, last_offset, size)`` of every whole batch in ``[start, end)``.

        Only batch headers are read, through small windows: this is what offset searches use.
        """
        end = self._size if end is None else min(end, self._size)
        fd = self._fd
        position = start
        buf = b""
        buf_start = start
        unpack_delta = _LAST_OFFSET_DELTA.unpack_from
        while end - position >= HEADER_SIZE_UP_TO_MAGIC:
            rel = position - buf_start
            if len(buf) - rel < _V2_PREFIX:
                buf = os.pread(fd, min(_SCAN_WINDOW, end - position), position)
                buf_start = position
                rel = 0
                if len(buf) < HEADER_SIZE_UP_TO_MAGIC:
                    return
            offset, size, _ = peek_batch_header(buf, rel)
            check_batch_size(size - LOG_OVERHEAD, position, INT32_MAX)
            if position + size > end:
                return
            if buf[rel + MAGIC_OFFSET] >= 2:
                if size < RECORD_BATCH_OVERHEAD:
                    raise CorruptRecordError(f"record batch at position {position} has size {size}, below the minimum {RECORD_BATCH_OVERHEAD}", position)
                offset += unpack_delta(buf, rel + _LAST_OFFSET_DELTA_POSITION)[0]
            yield position, offset, size
            position += size

    def search_for_offset_with_size(self, target_offset: int, starting_position: int) -> LogOffsetPosition | None:
        """The first batch at or after ``starting_position`` whose last offset is >= ``target_offset``."""
        for position, last_offset, size in self.headers(starting_position):
            if last_offset >= target_offset:
                return LogOffsetPosition(last_offset, position, size)
        return None

    def search_for_timestamp(self, target_timestamp: int, starting_position: int, starting_offset: int) -> TimestampAndOffset | None:
        """The first record at or after ``starting_position`` with timestamp >= target and offset >= ``starting_offset``."""
        for _, batch in self.batches(starting_position, chunk_size=_SCAN_WINDOW * 8):
            if batch.max_timestamp >= target_timestamp:
                for record in batch.records():
                    if record.timestamp >= target_timestamp and record.offset >= starting_offset:
                        epoch = batch.partition_leader_epoch
                        return TimestampAndOffset(record.timestamp, record.offset, None if epoch == NO_PARTITION_LEADER_EPOCH else epoch)
        return None

    def largest_timestamp_after(self, starting_position: int) -> TimestampAndOffset:
        """The largest batch max timestamp from ``starting_position`` on, with that batch's last offset."""
        max_timestamp, offset = -1, -1
        for _, batch in self.batches(starting_position):
            if batch.max_timestamp > max_timestamp:
                max_timestamp, offset = batch.max_timestamp, batch.last_offset
        return TimestampAndOffset(max_timestamp, offset)

    # -- the file ----------------------------------------------------------------------------------

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"FileRecords({self.path}, size={self._size})"
