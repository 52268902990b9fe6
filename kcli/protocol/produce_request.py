"""Produce requests (v3-11) read with each partition's records left where they arrived.

kio's native reader hands a Produce request's ``records`` back as ``bytes``: a copy of every
payload, which the log had to copy once more to patch offsets into it. This reader gives the
fields of kio's entities, under the same names and with the same values, except that
``records`` is a view of the request's own buffer: the broker checks, patches and writes the
records where the kernel put them (a writable frame, ``network.frame_stream``).

It reads a body ``request_check`` has walked (``messages.decode_request`` always checks first):
every length is known to fit, so nothing here bounds-checks again.
"""

from __future__ import annotations

import datetime
import struct
from typing import NamedTuple

from kcli.protocol.request_check import tagged_section_end
from kcli.storage.varint import decode_unsigned_varint

API_KEY = 0
VERSIONS = range(3, 12)  # v12 (KIP-890's) and v13 (topic ids) are kio's to read
FIRST_FLEXIBLE_VERSION = 9

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")


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
    end = len(view)
    if version >= FIRST_FLEXIBLE_VERSION:
        return _read_flexible(view, offset, end)
    return _read_classic(view, offset)


def _read_classic(view: memoryview, position: int) -> ProduceRequest:
    length = _INT16.unpack_from(view, position)[0]
    position += 2
    transactional_id = None
    if length >= 0:
        transactional_id = str(view[position : position + length], "utf-8")
        position += length
    acks, timeout = _ACKS_TIMEOUT.unpack_from(view, position)
    position += 6
    topics = []
    (topic_count,) = _INT32.unpack_from(view, position)
    position += 4
    for _ in range(topic_count):
        length = _INT16.unpack_from(view, position)[0]
        name = str(view[position + 2 : position + 2 + length], "utf-8")
        position += 2 + length
        (partition_count,) = _INT32.unpack_from(view, position)
        position += 4
        partitions = []
        for _ in range(partition_count):
            index, size = _INT32.unpack_from(view, position)[0], _INT32.unpack_from(view, position + 4)[0]
            position += 8
            records = None
            if size >= 0:
                records = view[position : position + size]
                position += size
            partitions.append(PartitionProduceData(index, records))
        topics.append(TopicProduceData(name, tuple(partitions)))
    return ProduceRequest(transactional_id, acks, datetime.timedelta(milliseconds=timeout), tuple(topics))


def _read_flexible(view: memoryview, position: int, end: int) -> ProduceRequest:
    length, position = _uvarint(view, position)
    transactional_id = None
    if length:
        transactional_id = str(view[position : position + length - 1], "utf-8")
        position += length - 1
    acks, timeout = _ACKS_TIMEOUT.unpack_from(view, position)
    position += 6
    topics = []
    topic_count, position = _uvarint(view, position)
    for _ in range(topic_count - 1):
        length, position = _uvarint(view, position)
        name = str(view[position : position + length - 1], "utf-8")
        position += length - 1
        partitions = []
        partition_count, position = _uvarint(view, position)
        for _ in range(partition_count - 1):
            index = _INT32.unpack_from(view, position)[0]
            size, position = _uvarint(view, position + 4)
            records = None
            if size:
                records = view[position : position + size - 1]
                position += size - 1
            position = _tagged_fields_end(view, position, end)
            partitions.append(PartitionProduceData(index, records))
        position = _tagged_fields_end(view, position, end)
        topics.append(TopicProduceData(name, tuple(partitions)))
    return ProduceRequest(transactional_id, acks, datetime.timedelta(milliseconds=timeout), tuple(topics))


def _tagged_fields_end(view: memoryview, position: int, end: int) -> int:
    """Past a tagged-field section; Produce v9-11 defines no tagged fields, so any are skipped."""
    if view[position] == 0:
        return position + 1
    return tagged_section_end(view, position, end)


def _uvarint(view: memoryview, position: int) -> tuple[int, int]:
    byte = view[position]
    if byte < 0x80:  # lengths and counts below 127: nearly all of them
        return byte, position + 1
    return decode_unsigned_varint(view, position)
