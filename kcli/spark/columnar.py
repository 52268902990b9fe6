"""Many v2 record batches decoded at once, column by column, with numpy.

The per-record decoder (``records.decode_record_fields``) builds five Python objects per record;
at the rate Spark consumes Arrow batches that is most of the cost of an offline read. Here only
the record boundaries are found in Python (one length varint per record, or one vectorised check for
a run of records of equal size); every field of every
record in a chunk of ~65,000 is then decoded by vectorised varint arithmetic over the
concatenated records sections. Keys and values of one length (records of one shape) are copied
out of the buffer run by run, each run one strided view; others become Arrow binary-view arrays
over those bytes, cast to plain binary in one pass.

``records.py`` stays the authority on the format: a batch whose records do not frame exactly
(lengths, trailing bytes, varints over 10 bytes, fields past their record) is refused here, and
the caller decodes it with ``decode_record_fields``, which either reads it or raises the
precise CorruptRecordError. Header bytes are skipped by the record length and decoded only when
headers are asked for; a chunk where some record carries headers is then handed back the same
way.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from kcli.errors import CorruptRecordError
from kcli.spark.arrow_rows import MAX_TIMESTAMP_MS, arrow_schema, repeated_string
from kcli.storage.varint import decode_varint

_MAX_BINARY_BYTES = 0x7FFFFFFF  # Arrow binary arrays have 32-bit offsets
_PAD = bytes(16)  # gathers read up to 12 bytes past a position that is at most the data's end
_COLUMNS = np.arange(12)
_SHIFTS = (7 * np.arange(10)).astype(np.uint64)
_INLINE_MASKS = np.where(_COLUMNS[None, :] < np.arange(13)[:, None], 0xFF, 0).astype(np.uint8)  # row n: n bytes kept


class PendingBatch(NamedTuple):
    """A batch waiting in the chunk, with what the caller needs to decode it again another way."""

    batch: Any  # RecordBatch
    position: int
    base_offset: int
    base_timestamp: int
    log_append_time: int | None
    timestamp_type: int
    count: int


class Refused(Exception):
    """The chunk holds something only ``records.py`` may judge; ``pending`` lists its batches.
    ``headers`` says the reason was records with headers, which will likely go on."""

    def __init__(self, pending: list[PendingBatch], headers: bool = False) -> None:
        super().__init__("refused")
        self.pending = pending
        self.headers = headers


class ColumnarChunk:
    """v2 batches of one topic-partition gathered for one vectorised decode into an Arrow batch.

    Rows outside ``[start, end)`` (a batch the range cuts through) are dropped at build time.
    """

    def __init__(self, topic: str, partition: int, start: int, end: int, *, include_headers: bool = False, include_corrupt: bool = False) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self.include_headers = include_headers
        self.include_corrupt = include_corrupt
        self.schema = arrow_schema(include_headers, include_corrupt)
        self._reset()

    def _reset(self) -> None:
        self._sections: list[bytes] = []
        self._size = 0
        self._rows = 0
        self.pending: list[PendingBatch] = []

    def __len__(self) -> int:
        return self._rows

    def add(self, batch, position: int, base_offset: int, base_timestamp: int, log_append_time: int | None, timestamp_type: int) -> None:
        """Take ``batch``'s records; the records section is decompressed here, so a codec error
        raises CorruptRecordError."""
        count = batch.record_count
        section = batch.records_bytes()
        self._sections.append(section)
        self._size += len(section)
        self._rows += count
        self.pending.append(PendingBatch(batch, position, base_offset, base_timestamp, log_append_time, timestamp_type, count))

    def build(self) -> pa.RecordBatch:
        """The chunk as one Arrow batch; raises Refused (and starts over) when it cannot."""
        try:
            return self._build()
        finally:
            self._reset()

    def _build(self) -> pa.RecordBatch:
        data = b"".join(self._sections) + _PAD
        buf = np.frombuffer(data, dtype=np.uint8)
        counts = np.array([b.count for b in self.pending], dtype=np.int64)
        framed = _frame_all(buf, self._sections, counts)
        if framed is None:
            raise Refused(self.pending)
        starts, ends = framed
        # attributes (unused), then: timestamp delta, offset delta, key length + key, value length
        # + value, header count. Positions are held within their record so that every gather
        # stays inside the padded buffer; a field past its record marks the record bad.
        p = starts + 1
        overrun = p > ends
        fields = []
        data_starts = []
        for field in range(5):
            p = np.minimum(p, ends)
            value, width = _varints(buf, p)
            if value is None:
                raise Refused(self.pending)
            p = p + width
            if field in (2, 3):
                data_starts.append(np.minimum(p, ends))
                p = p + np.maximum(value, 0)
            overrun |= p > ends
            fields.append(value)
        ts_deltas, offset_deltas, key_lengths, value_lengths, header_counts = fields
        if ((ts_deltas > MAX_TIMESTAMP_MS) | (ts_deltas < -MAX_TIMESTAMP_MS)).any():
            raise Refused(self.pending)  # so that base + delta cannot wrap around
        key_starts, value_starts = data_starts
        # Without headers a record ends right after its header count; with headers, inside it.
        bad = overrun | (header_counts < 0) | ((header_counts == 0) & (p != ends))
        if bad.any():
            raise Refused(self.pending)
        if self.include_headers and header_counts.any():
            raise Refused(self.pending, headers=True)

        offsets = np.repeat(np.array([b.base_offset for b in self.pending], dtype=np.int64), counts) + offset_deltas
        log_append = [b.log_append_time for b in self.pending]
        if all(t is None for t in log_append):
            timestamps = np.repeat(np.array([b.base_timestamp for b in self.pending], dtype=np.int64), counts) + ts_deltas
        else:
            fixed = np.array([t is not None for t in log_append], dtype=bool)
            base = np.array([b.base_timestamp if t is None else t for b, t in zip(self.pending, log_append)], dtype=np.int64)
            timestamps = np.repeat(base, counts) + np.where(np.repeat(fixed, counts), 0, ts_deltas)
        if ((timestamps > MAX_TIMESTAMP_MS) | (timestamps < -MAX_TIMESTAMP_MS)).any():
            raise Refused(self.pending)
        types = np.repeat(np.array([b.timestamp_type for b in self.pending], dtype=np.int32), counts)

        keep = (offsets >= self.start) & (offsets < self.end)
        if not keep.all():
            offsets, timestamps, types = offsets[keep], timestamps[keep], types[keep]
            key_starts, key_lengths = key_starts[keep], key_lengths[keep]
            value_starts, value_lengths = value_starts[keep], value_lengths[keep]
        n = len(offsets)
        data_buffer = pa.py_buffer(data)
        columns = [
            _binary(buf, data_buffer, key_starts, key_lengths),
            _binary(buf, data_buffer, value_starts, value_lengths),
            repeated_string(self.topic, n),
            pa.array(np.full(n, self.partition, dtype=np.int32)),
            pa.array(offsets, type=pa.int64()),
            pa.array(timestamps * 1000, type=pa.timestamp("us", tz="UTC")),
            pa.array(types, type=pa.int32()),
        ]
        if self.include_headers:
            columns.append(pa.nulls(n, type=self.schema.field("headers").type))
        if self.include_corrupt:
            columns.append(pa.nulls(n, type=pa.string()))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _frame_all(buf: np.ndarray, sections: list[bytes], counts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Where each record's body starts and ends in ``buf`` (the sections joined); None unless
    every section holds exactly its count of records."""
    sizes = np.fromiter(map(len, sections), dtype=np.int64, count=len(sections))
    section_ends = np.cumsum(sizes)
    section_starts = section_ends - sizes
    total = int(counts.sum())
    longest = int(counts.max()) if len(counts) else 0
    # Step through the i-th record of every batch at once while batches are many and short;
    # a chunk of a few long batches is cheaper to walk record by record.
    if longest * 64 <= total:
        return _frame_across_batches(buf, section_starts, section_ends, counts, total, longest)
    start_pieces: list[np.ndarray] = []
    end_pieces: list[np.ndarray] = []
    for section, base, count in zip(sections, section_starts.tolist(), counts.tolist()):
        if not _frame_strided(buf, section, base, count, start_pieces, end_pieces):
            return None
    if not start_pieces:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(start_pieces), np.concatenate(end_pieces)


def _frame_strided(buf: np.ndarray, section: bytes, base: int, count: int, start_pieces: list, end_pieces: list) -> bool:
    """Frame one section, runs of equal-size records at a time: from a record boundary, every
    record one stride apart is checked at once (its length varint must say exactly that stride;
    framing from a boundary is unique, so the run up to the first mismatch is exact). Sections
    whose record sizes keep changing are walked record by record (``_frame``). False unless the
    ``count`` records fill the section exactly."""
    size = len(section)
    pos = done = short_runs = 0
    while done < count:
        if short_runs >= 3:
            starts: list[int] = []
            ends: list[int] = []
            if not _frame(section[pos:], count - done, base + pos, starts.append, ends.append):
                return False
            start_pieces.append(np.array(starts, dtype=np.int64))
            end_pieces.append(np.array(ends, dtype=np.int64))
            return True
        try:
            length, body = decode_varint(section, pos)
        except (IndexError, CorruptRecordError):
            return False
        stride = body - pos + length
        if length < 0 or pos + stride > size:
            return False
        n = min(count - done, (size - pos) // stride)
        positions = base + pos + np.arange(n, dtype=np.int64) * stride
        lengths, widths = _varints(buf, positions)
        if lengths is None:
            short_runs = 3  # an overlong varint past the run: let the record walk judge it
            continue
        ok = (lengths >= 0) & ((lengths + widths) == stride)
        run = n if ok.all() else int(np.argmin(ok))
        start = positions[:run] + (widths[:run] if isinstance(widths, np.ndarray) else widths)
        start_pieces.append(start)
        end_pieces.append(start + lengths[:run])
        pos += run * stride
        done += run
        short_runs = short_runs + 1 if run < 16 else 0
    return pos == size


def _frame_across_batches(
    buf: np.ndarray, section_starts: np.ndarray, section_ends: np.ndarray, counts: np.ndarray, total: int, longest: int
) -> tuple[np.ndarray, np.ndarray] | None:
    order = np.argsort(-counts, kind="stable")  # batches still stepping are then a prefix
    first_rows = (np.cumsum(counts) - counts)[order]
    sorted_counts = counts[order]
    position = section_starts[order].copy()
    limit = section_ends[order]
    starts = np.empty(total, dtype=np.int64)
    ends = np.empty(total, dtype=np.int64)
    active = len(order)
    for step in range(longest):
        while active and sorted_counts[active - 1] <= step:
            active -= 1
        p = position[:active]
        if (p >= limit[:active]).any():
            return None
        lengths, widths = _varints(buf, p)
        if lengths is None or (lengths < 0).any():
            return None
        body = p + widths
        end = body + lengths
        rows = first_rows[:active] + step
        starts[rows] = body
        ends[rows] = end
        position[:active] = end
    if (position != limit).any():
        return None
    return starts, ends


def _frame(section: bytes, count: int, base: int, add_start, add_end) -> bool:
    """Append where each record's body starts and ends (shifted by ``base``); False unless the
    ``count`` records fill ``section`` exactly."""
    pos = 0
    end = len(section)
    try:
        for _ in range(count):
            b = section[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif section[pos + 1] < 0x80:
                b = (b & 0x7F) | (section[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = decode_varint(section, pos)
            if length < 0:
                return False
            add_start(base + pos)
            pos += length
            add_end(base + pos)
    except (IndexError, CorruptRecordError):
        return False
    return pos == end


def _varints(buf: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | int]:
    """Zig-zag varints starting at ``positions``: (values, widths); (None, 0) for one over 10 bytes."""
    first = buf[positions]
    more = first >= 0x80
    if not more.any():
        raw = first.astype(np.int64)
        return (raw >> 1) ^ -(raw & 1), 1
    second = buf[positions + 1]
    longer = more & (second >= 0x80)
    if not longer.any():  # one or two bytes: lengths under 8 KiB, deltas under 8 s
        raw = np.where(more, (first & 0x7F).astype(np.int64) | (second.astype(np.int64) << 7), first)
        return (raw >> 1) ^ -(raw & 1), 1 + more
    third = buf[positions + 2]
    if not (longer & (third >= 0x80)).any():  # up to three bytes: offset deltas of batches over 8,192 records
        low = (first & 0x7F).astype(np.int64) | ((second & 0x7F).astype(np.int64) << 7)
        raw = np.where(longer, low | (third.astype(np.int64) << 14), np.where(more, (first & 0x7F).astype(np.int64) | (second.astype(np.int64) << 7), first))
        return (raw >> 1) ^ -(raw & 1), 1 + more + longer
    grid = buf[positions[:, None] + _COLUMNS[:10]]
    more = grid >= 0x80
    if more.all(axis=1).any():
        return None, 0
    widths = more.argmin(axis=1) + 1
    if ((widths == 10) & (grid[:, 9] > 1)).any():
        return None, 0  # more than 64 bits: only records.py's arbitrary-size ints can say what it is
    used = _COLUMNS[:10] < widths[:, None]
    raw = (((grid & 0x7F).astype(np.uint64) << _SHIFTS) * used).sum(axis=1, dtype=np.uint64)
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return values, widths


def _equal_lengths(buf: np.ndarray, starts: np.ndarray, length: int) -> pa.Array:
    """Values all ``length`` bytes long (records of one shape, the common case) as a binary array:
    each run of evenly spaced values is one strided view of the buffer, copied out in one pass."""
    n = len(starts)
    out = np.empty((n, length), dtype=np.uint8)
    steps = np.diff(starts)
    bounds = [0, *(np.flatnonzero(steps[1:] != steps[:-1]) + 2).tolist(), n]
    for a, b in zip(bounds, bounds[1:]):
        step = int(steps[a]) if b - a > 1 else length
        out[a:b] = np.lib.stride_tricks.as_strided(buf[int(starts[a]) :], shape=(b - a, length), strides=(step, 1))
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(length)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(out)])


def _binary(buf: np.ndarray, data: pa.Buffer, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """``data[start:start+length]`` per row (null for a negative length) as a binary array.

    Built as Arrow binary views over ``data`` (a view holds a short value itself, or a long one's
    length, first four bytes and position), then cast to plain binary in one C++ pass.
    """
    n = len(starts)
    if n and (lengths < 0).all():
        return pa.nulls(n, pa.binary())
    if n and 0 <= lengths[0] and n * int(lengths[0]) <= _MAX_BINARY_BYTES and (lengths == lengths[0]).all():
        return _equal_lengths(buf, starts, int(lengths[0]))
    valid = lengths >= 0
    sizes = np.where(valid, lengths, 0).astype(np.int32)
    views = np.zeros((n, 4), dtype=np.int32)
    views[:, 0] = sizes
    inline = buf[starts[:, None] + _COLUMNS]
    inline &= _INLINE_MASKS[np.minimum(sizes, 12)]  # zero the bytes past a short value
    views.view(np.uint8)[:, 4:16] = inline
    long = sizes > 12
    if long.any():
        views[long, 2] = 0
        views[long, 3] = starts[long]
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), data]).cast(pa.binary())
