"""Runs of same-shaped v2 records, decoded a column at a time with strided slices.

A producer usually writes the records of a batch alike: the same key and value lengths, no
headers, timestamp and offset deltas of the same varint width. Such a run of records is a table
with a fixed row width (the stride), and any byte column of it is one strided slice,
``data[first:stop:stride]``, taken at C speed. ``decode_run`` finds the longest run from a
position by checking, column by column, that every framing byte (the length prefix, attributes,
key and value length prefixes and the header count) equals the first record's, and that every
delta varint has the first record's width. Rows that pass are a complete, valid parse: each
length prefix leads to the next record and every field sits where the first record's did. Only
the deltas, keys and values are then read, one column each; the general per-record decoder in
``records`` is left with the records where the shape changes.
"""

from __future__ import annotations

import functools
import sys
from array import array
from typing import NamedTuple

MIN_RUN = 4  # shorter runs are cheaper through the general decoder
MAX_VARINT_WIDTH = 3  # deltas up to 2^20 (offsets in a batch, milliseconds within it)

_HIGH = bytes(range(0x80, 0x100))  # a varint byte with more bytes after it
_LOW = bytes(range(0x80))  # the last byte of a varint
_ZIGZAG = [(b >> 1) ^ -(b & 1) for b in range(0x80)]
_LOW_BYTE = 0 if sys.byteorder == "little" else 1  # where a 16-bit word's low byte sits
_MIN_BODY = 6  # attributes, timestamp delta, offset delta, key length, value length, header count


class Run(NamedTuple):
    count: int
    end: int  # the position after the run's last record
    offset_deltas: list[int]
    timestamp_deltas: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]


def _width(data: bytes, pos: int) -> int:
    """Bytes in the varint at ``pos``; 0 beyond ``MAX_VARINT_WIDTH``."""
    for width in range(1, MAX_VARINT_WIDTH + 1):
        if data[pos + width - 1] < 0x80:
            return width
    return 0


def _varint(data: bytes, pos: int, width: int) -> int:
    z = 0
    for i in range(width):
        z |= (data[pos + i] & 0x7F) << (7 * i)
    return (z >> 1) ^ -(z & 1)


def _column(data: bytes, first: int, stop: int, stride: int, width: int) -> list[int]:
    """The varints of ``width`` bytes at ``first``, ``first + stride``, ... before ``stop``."""
    low = data[first:stop:stride]
    if width == 1:
        zigzag = _ZIGZAG
        return [zigzag[b] for b in low]
    # Wider varints (offset deltas from 64, timestamp deltas from 64 ms) pair their first two bytes
    # into 16-bit words at C speed, each looked up in a table of every pair's value.
    pairs = bytearray(2 * len(low))
    pairs[_LOW_BYTE::2] = low
    pairs[1 - _LOW_BYTE :: 2] = data[first + 1 : stop : stride]
    table = _zigzag_pairs()
    if width == 2:
        return [table[w] for w in array("H", pairs)]
    # The third byte adds 2^13 times its value, away from zero: zigzag's low bit is the sign.
    high = data[first + 2 : stop : stride]
    return [table[w] - (c << 13) if w & 1 else table[w] + (c << 13) for w, c in zip(array("H", pairs), high)]


@functools.cache
def _zigzag_pairs() -> list[int]:
    """The zigzag value of the low 14 bits of every varint's first two bytes, indexed by their 16-bit word."""
    return [(((w & 0x7F) | (((w >> 8) & 0x7F) << 7)) >> 1) ^ -(w & 1) for w in range(0x10000)]


def _slices(data: bytes, first: int, stop: int, stride: int, length: int, count: int) -> list[bytes | None]:
    if length < 0:
        return [None] * count
    return [data[p : p + length] for p in range(first, stop, stride)]


class Shape(NamedTuple):
    """A run of records laid out alike: ``count`` records of ``stride`` bytes from ``start``."""

    start: int
    count: int
    stride: int
    timestamp_delta: tuple[int, int]  # (position in the record, varint width)
    offset_delta: tuple[int, int]
    key: tuple[int, int]  # (position of the bytes in the record, length; -1 for null)
    value: tuple[int, int]

    @property
    def end(self) -> int:
        return self.start + self.count * self.stride


def find_run(data: bytes | bytearray, pos: int, end: int, limit: int) -> Shape | None:
    """The longest run of at most ``limit`` records before ``end`` shaped like the one at ``pos``,
    or None when that is shorter than ``MIN_RUN`` or the record has headers, wide deltas or bad
    framing (the general decoder then reads it, and reports what is wrong)."""
    try:
        p = pos
        w_len = _width(data, p)
        if not w_len:
            return None
        length = _varint(data, p, w_len)
        stride = w_len + length
        if length < _MIN_BODY:
            return None
        p += w_len + 1  # the attributes byte
        varints = []  # (position in the record, width) of the two deltas
        for _ in range(2):
            width = _width(data, p)
            if not width:
                return None
            varints.append((p - pos, width))
            p += width
        lengths = []  # (position in the record, width, value) of the key and value lengths
        for _ in range(2):
            width = _width(data, p)
            if not width:
                return None
            n = _varint(data, p, width)
            if n < -1:
                return None
            lengths.append((p - pos, width, n))
            p += width + max(n, 0)
        if p != pos + stride - 1 or data[p] != 0:  # header count 0, and the record ends there
            return None
    except IndexError:
        return None
    count = min(limit, (end - pos) // stride)
    if count < MIN_RUN:
        return None

    framing = list(range(w_len + 1))
    for at, width, _ in lengths:
        framing.extend(range(at, at + width))
    framing.append(stride - 1)
    for at in framing:
        column = data[pos + at : pos + at + count * stride : stride]
        count = len(column) - len(column.lstrip(column[:1]))
    for at, width in varints:
        for i in range(width):
            column = data[pos + at + i : pos + at + i + count * stride : stride]
            count = len(column) - len(column.lstrip(_HIGH if i < width - 1 else _LOW))
    if count < MIN_RUN:
        return None
    (key_at, key_width, key_length), (value_at, value_width, value_length) = lengths
    return Shape(pos, count, stride, varints[0], varints[1], (key_at + key_width, key_length), (value_at + value_width, value_length))


def offset_deltas(data: bytes | bytearray, run: Shape) -> list[int]:
    at, width = run.offset_delta
    return _column(data, run.start + at, run.end, run.stride, width)


# Runs whose offset deltas go past this are compared by value (``offset_deltas``), not as bytes:
# it bounds the tables of expected bytes below (about 0.8 MB at most).
_DELTA_TABLE_LIMIT = 1 << 17


def offset_deltas_run_from(data: bytes | bytearray, run: Shape, first: int) -> bool:
    """Whether the run's offset deltas are ``first``, ``first + 1``, ... in order.

    Each byte column of the deltas is compared, at C speed, with the same column of the expected
    deltas' encodings in the run's varint width (``find_run`` has checked every delta's width):
    a width-w varint has one encoding of each value, so equal bytes mean equal deltas."""
    at, width = run.offset_delta
    last = first + run.count
    if last > _DELTA_TABLE_LIMIT:
        return offset_deltas(data, run) == list(range(first, last))
    start, stop, stride = run.start + at, run.end, run.stride
    return all(data[start + k : stop : stride] == _delta_bytes(width, k, last)[first:last] for k in range(width))


_delta_tables: dict[tuple[int, int], bytes] = {}


def _delta_bytes(width: int, k: int, count: int) -> bytes:
    """Byte ``k`` of the ``width``-byte varint of each offset delta 0..count-1 (at least): the
    zigzag value 2d in 7-bit groups, the high bit set on all but the last byte. A delta too large
    for the width gets 0xFF there, which no valid last byte equals."""
    table = _delta_tables.get((width, k), b"")
    if len(table) < count:
        size = min(max(count, 2 * len(table), 1024), _DELTA_TABLE_LIMIT)
        more = 0x80 if k < width - 1 else 0
        top = 7 * (width - 1)
        table = bytes(((2 * d >> 7 * k) & 0x7F | more) if k < width - 1 or 2 * d >> top < 0x80 else 0xFF for d in range(size))
        _delta_tables[(width, k)] = table
    return table


def decode_run(data: bytes, pos: int, limit: int) -> Run | None:
    """``find_run`` to the end of ``data``, and the run's fields read a column at a time."""
    run = find_run(data, pos, len(data), limit)
    if run is None:
        return None
    stop, stride, count = run.end, run.stride, run.count
    ts_at, ts_width = run.timestamp_delta
    (key_at, key_length), (value_at, value_length) = run.key, run.value
    return Run(
        count,
        stop,
        offset_deltas(data, run),
        _column(data, pos + ts_at, stop, stride, ts_width),
        _slices(data, pos + key_at, stop, stride, key_length, count),
        _slices(data, pos + value_at, stop, stride, value_length, count),
    )
