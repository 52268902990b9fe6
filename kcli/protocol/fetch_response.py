"""The Fetch response body (v4-v17) as a list of chunks: bytes, and file ranges sent as they are.

Every other response goes through kio's entities; Fetch is the one whose payload is mostly log
bytes, so its encoder splices the ranges a log read returned (``FileSlice``) between the encoded
fields instead of copying them into a Python buffer. Tests check the output against kio's reader.

    FetchResponse: throttle_time_ms int32, error_code int16 (v7+), session_id int32 (v7+),
      responses [topic string (v4-12) | topic_id uuid (v13+),
        partitions [partition_index int32, error_code int16, high_watermark int64,
          last_stable_offset int64, log_start_offset int64 (v5+),
          aborted_transactions nullable [producer_id int64, first_offset int64],
          preferred_read_replica int32 (v11+), records nullable bytes]]
    v12+ is flexible: compact arrays/strings/bytes (length + 1 as unsigned varint) and a
    tagged-field section closing each structure, empty but for a partition's diverging epoch
    (tag 0: epoch int32, end_offset int64, its own empty tagged fields) when a follower's log
    diverges from the leader's (KIP-320); no current leader, snapshot id or node endpoints are
    sent. v17 is v16 on the wire.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from kcli.storage.varint import encode_unsigned_varint

_TOP_V4 = struct.Struct(">i")
_TOP_V7 = struct.Struct(">ihi")
_PARTITION_V4 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_ABORTED = struct.Struct(">qq")
_EPOCH_END_OFFSET = struct.Struct(">iq")
# A partition's tagged fields holding its diverging epoch: one field, tag 0, 13 bytes.
_DIVERGING_EPOCH_TAG = b"\x01\x00" + encode_unsigned_varint(_EPOCH_END_OFFSET.size + 1)


class Slice(Protocol):
    """A byte range of a file (storage's FileSlice)."""

    size: int


@dataclass(slots=True)
class PartitionResult:
    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: list[tuple[int, int]] | None = None
    preferred_read_replica: int = -1
    records: list[Slice] | bytes | None = None
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset), v12+

    @property
    def records_size(self) -> int:
        if self.records is None:
            return 0
        if isinstance(self.records, bytes):
            return len(self.records)
        return sum(s.size for s in self.records)


@dataclass(slots=True)
class TopicResult:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionResult] = field(default_factory=list)


Chunk = bytes | Slice


def encode_fetch_response(version: int, topics: list[TopicResult], *, throttle_time_ms: int = 0, error_code: int = 0, session_id: int = 0) -> tuple[list[Chunk], int]:
    """The response body as chunks (adjacent bytes joined) and its total size in bytes."""
    flexible = version >= 12
    out = _ChunkWriter()
    if version >= 7:
        out.write(_TOP_V7.pack(throttle_time_ms, error_code, session_id))
    else:
        out.write(_TOP_V4.pack(throttle_time_ms))
    out.write(_array_length(len(topics), flexible))
    for topic in topics:
        if version >= 13:
            out.write(topic.topic_id.bytes)
        else:
            out.write(_string(topic.name, flexible))
        out.write(_array_length(len(topic.partitions), flexible))
        for p in topic.partitions:
            _write_partition(out, version, flexible, p)
        if flexible:
            out.write(b"\0")
    if flexible:
        out.write(b"\0")
    return out.finish()


def _write_partition(out: _ChunkWriter, version: int, flexible: bool, p: PartitionResult) -> None:
    if version >= 5:
        out.write(_PARTITION_V5.pack(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset))
    else:
        out.write(_PARTITION_V4.pack(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset))
    aborted = p.aborted_transactions
    if aborted is None:
        out.write(b"\0" if flexible else b"\xff\xff\xff\xff")
    else:
        out.write(_array_length(len(aborted), flexible))
        for producer_id, first_offset in aborted:
            out.write(_ABORTED.pack(producer_id, first_offset))
            if flexible:
                out.write(b"\0")
    if version >= 11:
        out.write(_INT32.pack(p.preferred_read_replica))
    records = p.records
    if records is None:
        out.write(b"\0" if flexible else b"\xff\xff\xff\xff")
    else:
        size = p.records_size
        out.write(encode_unsigned_varint(size + 1) if flexible else _INT32.pack(size))
        if isinstance(records, bytes):
            out.write(records)
        else:
            for piece in records:
                out.send(piece)
    if flexible:
        if p.diverging_epoch is None:
            out.write(b"\0")
        else:
            out.write(_DIVERGING_EPOCH_TAG + _EPOCH_END_OFFSET.pack(*p.diverging_epoch) + b"\0")


def _array_length(n: int, flexible: bool) -> bytes:
    return encode_unsigned_varint(n + 1) if flexible else _INT32.pack(n)


def _string(value: str, flexible: bool) -> bytes:
    data = value.encode("utf-8")
    prefix = encode_unsigned_varint(len(data) + 1) if flexible else _INT16.pack(len(data))
    return prefix + data


class _ChunkWriter:
    __slots__ = ("_chunks", "_pending", "_size")

    def __init__(self) -> None:
        self._chunks: list[Chunk] = []
        self._pending: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> None:
        self._pending.append(data)
        self._size += len(data)

    def send(self, piece: Slice) -> None:
        self._flush()
        self._chunks.append(piece)
        self._size += piece.size

    def _flush(self) -> None:
        if self._pending:
            self._chunks.append(b"".join(self._pending))
            self._pending = []

    def finish(self) -> tuple[list[Chunk], int]:
        self._flush()
        return self._chunks, self._size
