"""Zig-zag varints as Kafka's record format uses them (protobuf's encoding).

A signed value v is zig-zag mapped to ``(v << 1) ^ (v >> 63)`` and written seven bits at a time,
least significant group first, with the high bit set on every byte but the last. Kafka's
``varint`` holds 32-bit values (at most 5 bytes), ``varlong`` 64-bit values (at most 10 bytes).
"""

from __future__ import annotations

from kcli.errors import CorruptRecordError

_MAX_VARLONG_BYTES = 10


def encode_varint(value: int) -> bytes:
    """Zig-zag varint encoding of a signed integer (varint and varlong share it)."""
    n = (value << 1) ^ (value >> 63)
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# The encodings of 0 .. SMALL_VARINTS_LIMIT - 1 (one byte up to 63, two above), for writers of
# small records: a lookup instead of a call per length and delta. -1 (a null) is NULL_VARINT.
SMALL_VARINTS_LIMIT = 1024
SMALL_VARINTS: tuple[bytes, ...] = tuple(encode_varint(n) for n in range(SMALL_VARINTS_LIMIT))
NULL_VARINT = encode_varint(-1)


def encode_unsigned_varint(n: int) -> bytes:
    """Plain unsigned varint (no zig-zag), as flexible protocol versions use."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode one zig-zag varint at ``pos``; returns ``(value, next_pos)``."""
    try:
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        n = b & 0x7F
        shift = 7
        end = pos + _MAX_VARLONG_BYTES
        pos += 1
        while True:
            if pos >= end:
                raise CorruptRecordError("varint is longer than 10 bytes")
            b = buf[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return (n >> 1) ^ -(n & 1), pos
            shift += 7
    except IndexError:
        raise CorruptRecordError("varint runs past the end of its buffer") from None


def decode_unsigned_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode one unsigned varint at ``pos``; returns ``(value, next_pos)``."""
    n = 0
    shift = 0
    end = pos + _MAX_VARLONG_BYTES
    try:
        while pos < end:
            b = buf[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n, pos
            shift += 7
    except IndexError:
        raise CorruptRecordError("varint runs past the end of its buffer") from None
    raise CorruptRecordError("varint is longer than 10 bytes")


def varint_size(value: int) -> int:
    """Number of bytes ``encode_varint(value)`` takes."""
    n = (value << 1) ^ (value >> 63)
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size
