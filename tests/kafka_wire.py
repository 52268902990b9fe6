"""Kafka's primitive encodings, spelled out by hand, to build expected bytes in tests.

Each helper is one rule of Kafka's protocol guide (https://kafka.apache.org/protocol#protocol_types),
written independently of kcli's encoders so that a test compares kcli against the rule itself.
"""

from __future__ import annotations

import struct
import uuid


def i8(value: int) -> bytes:
    return struct.pack(">b", value)


def i16(value: int) -> bytes:
    return struct.pack(">h", value)


def i32(value: int) -> bytes:
    return struct.pack(">i", value)


def i64(value: int) -> bytes:
    return struct.pack(">q", value)


def boolean(value: bool) -> bytes:
    return b"\x01" if value else b"\x00"


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string(text: str | None) -> bytes:
    """STRING / NULLABLE_STRING: int16 length, then UTF-8; -1 is null."""
    if text is None:
        return i16(-1)
    data = text.encode()
    return i16(len(data)) + data


def compact_string(text: str | None) -> bytes:
    """COMPACT_(NULLABLE_)STRING: unsigned varint length + 1, then UTF-8; 0 is null."""
    if text is None:
        return uvarint(0)
    data = text.encode()
    return uvarint(len(data) + 1) + data


def array(items: list[bytes]) -> bytes:
    """ARRAY: int32 count, then the items."""
    return i32(len(items)) + b"".join(items)


def compact_array(items: list[bytes]) -> bytes:
    """COMPACT_ARRAY: unsigned varint count + 1, then the items."""
    return uvarint(len(items) + 1) + b"".join(items)


def uuid_bytes(value: uuid.UUID) -> bytes:
    return value.bytes


NO_TAGS = b"\x00"  # an empty tagged-field section


def tags(*fields: tuple[int, bytes]) -> bytes:
    """A tagged-field section: count, then per field its tag, size and value."""
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(value)) + value for tag, value in fields)
