"""Produce requests (v3-11) read with each partition's records left where they arrived.

kio's native reader hands a Produce request's ``records`` back as ``bytes``: a copy of every
payload, which the log had to copy once more to patch offsets into it. This reader gives the
fields of kio's entities, under the same names and with the same values, except that
``records`` is a view of the request's own buffer: the broker checks, patches and writes the
records where the kernel put them (a writable frame, ``network.frame_stream``).

It checks as it reads what ``request_check`` checks before kio reads any other request: every
length and count fits in the bytes left and nulls appear only where the schema allows them
(MalformedRequest otherwise), so a Produce body is walked once. Unknown tagged fields are
skipped, as Kafka's readers skip them (kio refuses them).
"""

from __future__ import annotations

import datetime
import functools
import struct
from typing import NamedTuple

from kcli.errors import CorruptRecordError
from kcli.protocol.api_keys import ApiKey
from kcli.protocol.request_check import MalformedRequest, tagged_section_end
from kcli.storage.varint import decode_unsigned_varint

API_KEY = ApiKey.PRODUCE
VERSIONS = range(3, 12)  # v12 (KIP-890's) and v13 (topic ids) are kio's to read
FIRST_FLEXIBLE_VERSION = 9

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_INDEX_SIZE = struct.Struct(">ii")


class PartitionProduceData(NamedTuple):
    index: int
    records: memoryview | None


class TopicProduceData(NamedTuple):
    name: str
    partition_data: tuple[PartitionProduceData, ...]


class ProduceRequest(NamedTuple):
    transactional_id: str | None
    acks: int
    timeout: datetime.timedelta
    topic_data: tuple[TopicProduceData, ...]


def read(buffer: bytes | bytearray | memoryview, offset: int, version: int) -> ProduceRequest:
    """The Produce request body of ``version`` at ``offset`` of ``buffer``."""
    view = memoryview(buffer)
    try:
        if version >= FIRST_FLEXIBLE_VERSION:
            return _read_flexible(view, offset, len(view))
        return _read_classic(view, offset, len(view))
    except (struct.error, IndexError, CorruptRecordError):  # a fixed field or a varint past the end
        raise MalformedRequest("the Produce request runs past the end of its bytes") from None


# Every request reads a few fields: entities are made with tuple.__new__ (a NamedTuple's own
# constructor parses its arguments in Python), and one-byte varints are read inline.
_new = tuple.__new__


def _read_classic(view: memoryview, position: int, end: int) -> ProduceRequest:
    (length,) = _INT16.unpack_from(view, position)
    position += 2
    transactional_id = None
    if length != -1:
        _check_length(length, position, end, "transactional_id")
        transactional_id = str(view[position : position + length], "utf-8")
        position += length
    acks, timeout = _ACKS_TIMEOUT.unpack_from(view, position)
    (topic_count,) = _INT32.unpack_from(view, position + 6)
    position += 10
    _check_count(topic_count, position, end, "topic_data")
    topics = []
    for _ in range(topic_count):
        (length,) = _INT16.unpack_from(view, position)
        _check_length(length, position + 2, end, "name")
        name = str(view[position + 2 : position + 2 + length], "utf-8")
        (partition_count,) = _INT32.unpack_from(view, position + 2 + length)
        position += 6 + length
        _check_count(partition_count, position, end, "partition_data")
        partitions = []
        for _ in range(partition_count):
            index, size = _INDEX_SIZE.unpack_from(view, position)
            position += 8
            records = None
            if size != -1:
                _check_length(size, position, end, "records")
                records = view[position : position + size]
                position += size
            partitions.append(_new(PartitionProduceData, (index, records)))
        topics.append(_new(TopicProduceData, (name, tuple(partitions))))
    return _new(ProduceRequest, (transactional_id, acks, _timeout(timeout), tuple(topics)))


def _read_flexible(view: memoryview, position: int, end: int) -> ProduceRequest:
    # Compact lengths and counts are unsigned varints of n + 1; 0 is null.
    length = view[position]
    length, position = (length, position + 1) if length < 0x80 else decode_unsigned_varint(view, position)
    transactional_id = None
    if length:
        _check_length(length - 1, position, end, "transactional_id")
        transactional_id = str(view[position : position + length - 1], "utf-8")
        position += length - 1
    acks, timeout = _ACKS_TIMEOUT.unpack_from(view, position)
    position += 6
    count = view[position]
    count, position = (count, position + 1) if count < 0x80 else decode_unsigned_varint(view, position)
    _check_count(count - 1, position, end, "topic_data")
    topics = []
    for _ in range(count - 1):
        length = view[position]
        length, position = (length, position + 1) if length < 0x80 else decode_unsigned_varint(view, position)
        _check_length(length - 1, position, end, "name")
        name = str(view[position : position + length - 1], "utf-8")
        position += length - 1
        partition_count = view[position]
        partition_count, position = (partition_count, position + 1) if partition_count < 0x80 else decode_unsigned_varint(view, position)
        _check_count(partition_count - 1, position, end, "partition_data")
        partitions = []
        for _ in range(partition_count - 1):
            (index,) = _INT32.unpack_from(view, position)
            position += 4
            size = view[position]
            size, position = (size, position + 1) if size < 0x80 else decode_unsigned_varint(view, position)
            records = None
            if size:
                _check_length(size - 1, position, end, "records")
                records = view[position : position + size - 1]
                position += size - 1
            position = _tagged_fields_end(view, position, end)
            partitions.append(_new(PartitionProduceData, (index, records)))
        position = _tagged_fields_end(view, position, end)
        topics.append(_new(TopicProduceData, (name, tuple(partitions))))
    _tagged_fields_end(view, position, end)
    return _new(ProduceRequest, (transactional_id, acks, _timeout(timeout), tuple(topics)))


def _check_length(length: int, position: int, end: int, name: str) -> None:
    if length < 0:
        raise MalformedRequest(f"{name} has invalid length {length}")
    if length > end - position:
        raise MalformedRequest(f"{name} of {length} bytes runs past the end of the request")


def _check_count(count: int, position: int, end: int, name: str) -> None:
    if count < 0:
        raise MalformedRequest(f"{name} has invalid array length {count}")
    if count > end - position:  # every entry takes at least one byte
        raise MalformedRequest(f"{name} claims {count} entries in {end - position} bytes")


def _tagged_fields_end(view: memoryview, position: int, end: int) -> int:
    """Past a tagged-field section; Produce v3-11 defines no tagged fields, so any are skipped."""
    if position < end and view[position] == 0:
        return position + 1
    return tagged_section_end(view, position, end)


@functools.lru_cache(maxsize=64)
def _timeout(milliseconds: int) -> datetime.timedelta:
    """kio's value of the timeout field (producers send the same few)."""
    return datetime.timedelta(milliseconds=milliseconds)
