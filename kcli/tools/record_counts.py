"""Records counted from batch headers: what ``kcli get-offsets --count`` adds up.

A magic-2 batch header holds its record count (``recordsCount``, position 57), so counting walks
the headers and jumps from batch to batch by ``batchLength``: the records are never read, and a
compressed batch is never decompressed. Offsets are no count: compaction leaves gaps, a
DeleteRecords or retention moves the log start offset, and every transaction marker takes an
offset of its own; so ``end - start`` is only an upper bound.

What is counted, per partition, from ``start`` (the log start offset) on:

- ``records``: records of non-transactional batches and of committed transactions, the records a
  ``read_committed`` consumer reads;
- ``aborted``: records of aborted transactions (a ``read_uncommitted`` consumer reads them too;
  the cleaner drops them first);
- ``open``: records of transactions with no marker yet (a ``read_committed`` consumer waits at
  the last stable offset before them).

Control batches (transaction markers, KRaft's records) are not records a consumer sees and are
counted apart (``control_batches``). A transaction ends at the marker of its producer id: the
marker's one control record is read (markers are written uncompressed) to tell COMMIT from ABORT,
so the walk needs no aborted-transactions list and reads files and Fetch answers alike.

Decoding is needed in two places only, and both are bounded: a batch that straddles ``start``
with non-contiguous offsets (compacted) has its record offsets read to keep those at or past
``start``; a legacy (magic 0/1) compressed wrapper carries no count and is decompressed. CRCs are
not checked (``dump-log-segments --deep-iteration`` does that).
"""

from __future__ import annotations

import struct

from kcli.errors import CorruptRecordError
from kcli.storage import records as rec

# baseOffset, batchLength, magic, attributes, lastOffsetDelta, producerId, recordsCount
_HEADER = struct.Struct(">qi4xb4xhi16xq6xi")
_PREFIX = struct.Struct(">qi4xb")  # baseOffset, batchLength, magic
_TRANSACTIONAL_OR_CONTROL = rec.TRANSACTIONAL_FLAG | 0x20
_CONTROL = 0x20
_MIN_BATCH_LENGTH = rec.RECORD_BATCH_OVERHEAD - rec.LOG_OVERHEAD
_HEADER_SIZE = rec.RECORD_BATCH_OVERHEAD
_LOG_OVERHEAD = rec.LOG_OVERHEAD
_NO_STOP = 2**63


class RecordCount:
    """One partition's tally, fed its batches in offset order (``feed``), from ``start`` on and,
    with ``stop``, up to the batches that begin before it (a high watermark read when the count
    began, so records written since do not count)."""

    __slots__ = ("start", "stop", "records", "aborted", "batches", "control_batches", "next_offset", "_pending")

    def __init__(self, start: int = 0, stop: int | None = None) -> None:
        self.start = start
        self.stop = _NO_STOP if stop is None else stop
        self.records = 0
        self.aborted = 0
        self.batches = 0
        self.control_batches = 0
        self.next_offset = start  # the offset after the last batch fed
        self._pending: dict[int, int] = {}  # producer id -> records of its open transaction

    @property
    def open(self) -> int:
        return sum(self._pending.values())

    def count(self, read_committed: bool = True) -> int:
        """The records a consumer of that isolation level reads."""
        return self.records if read_committed else self.records + self.aborted + self.open

    def feed(self, buffer: bytes | bytearray | memoryview, position: int = 0, end: int | None = None) -> int:
        """Count the whole batches in ``buffer[position:end]``; the position after the last one (a
        trailing partial batch, as a Fetch answer or a file being appended ends, is left)."""
        end = len(buffer) if end is None else end
        header = _HEADER.unpack_from
        start, stop = self.start, self.stop
        records = batches = 0
        last_offset = -1
        pos = position
        try:
            while end - pos >= _HEADER_SIZE:
                base_offset, length, magic, attributes, last_delta, producer_id, count = header(buffer, pos)
                size = length + _LOG_OVERHEAD
                if pos + size > end:
                    break
                if base_offset >= stop:
                    break
                if magic != 2 or length < _MIN_BATCH_LENGTH:
                    self.records += records
                    records = 0
                    if magic != 2:
                        legacy_last = self._legacy(buffer, pos, end)
                        if legacy_last is None:
                            break
                        last_offset = legacy_last
                        pos += _PREFIX.unpack_from(buffer, pos)[1] + _LOG_OVERHEAD
                        batches += 1
                        continue
                    raise CorruptRecordError(f"record batch at position {pos} has a batchLength of {length}, below the header's", pos)
                last_offset = base_offset + last_delta
                batches += 1
                if attributes & _TRANSACTIONAL_OR_CONTROL == 0 and base_offset >= start:
                    records += count
                elif last_offset >= start:
                    self.records += records
                    records = 0
                    self._slow(buffer, pos, size, base_offset, attributes, last_delta, producer_id, count)
                pos += size
            # A legacy message at the end, shorter than a v2 header, is still a whole message.
            while end - pos >= rec.HEADER_SIZE_UP_TO_MAGIC and buffer[pos + rec.MAGIC_OFFSET] != 2 and _PREFIX.unpack_from(buffer, pos)[0] < stop:
                legacy_last = self._legacy(buffer, pos, end)
                if legacy_last is None:
                    break
                last_offset = legacy_last
                pos += _PREFIX.unpack_from(buffer, pos)[1] + _LOG_OVERHEAD
                batches += 1
        finally:
            self.records += records
            self.batches += batches
        if last_offset >= 0:
            self.next_offset = max(self.next_offset, last_offset + 1)
        if end - pos >= rec.HEADER_SIZE_UP_TO_MAGIC and _PREFIX.unpack_from(buffer, pos)[0] >= stop:
            self.next_offset = max(self.next_offset, stop)  # the rest began after the stop: done
        return pos

    def _slow(self, buffer, pos: int, size: int, base_offset: int, attributes: int, last_delta: int, producer_id: int, count: int) -> None:
        """A transactional or control batch, or one that starts before ``start``."""
        if attributes & _CONTROL:
            self.control_batches += 1
            if base_offset < self.start:
                return
            batch = rec.RecordBatch(bytes(buffer[pos : pos + size]))
            marker = batch.records()
            if not marker:
                return
            control_type, _epoch = rec.parse_control_record(marker[0].key, marker[0].value, marker[0].offset)
            pending = self._pending.pop(producer_id, 0)
            if control_type == rec.ControlType.COMMIT:
                self.records += pending
            elif control_type == rec.ControlType.ABORT:
                self.aborted += pending
            else:
                self._pending[producer_id] = pending
                if pending == 0:
                    del self._pending[producer_id]
            return
        if base_offset < self.start:
            if count == last_delta + 1:
                count = base_offset + last_delta - self.start + 1  # contiguous offsets
            else:
                batch = rec.RecordBatch(bytes(buffer[pos : pos + size]))
                count = sum(1 for record in batch.records() if record.offset >= self.start)
        if attributes & rec.TRANSACTIONAL_FLAG:
            self._pending[producer_id] = self._pending.get(producer_id, 0) + count
        else:
            self.records += count

    def _legacy(self, buffer, pos: int, end: int) -> int | None:
        """Count a magic 0/1 message (a wrapper: its inner messages); its last offset, or None
        when it is cut off at ``end``."""
        _offset, length, magic = _PREFIX.unpack_from(buffer, pos)
        if magic not in (0, 1):
            raise CorruptRecordError(f"batch at position {pos} has unknown magic {magic}", pos)
        if pos + length + _LOG_OVERHEAD > end:
            return None
        message = rec.LegacyBatch(bytes(buffer[pos : pos + length + _LOG_OVERHEAD]))
        if message.last_offset >= self.start:
            if message.compression == rec.CompressionType.NONE:
                self.records += 1
            else:
                self.records += sum(1 for record in message.records() if record.offset >= self.start)
        return message.last_offset
