"""Kafka's record formats: RecordBatch (magic 2) read in place and written, legacy messages read.

RecordBatch, magic 2 (all integers big-endian):

    pos  field                 type
    0    baseOffset            int64
    8    batchLength           int32   bytes after this field
    12   partitionLeaderEpoch  int32   not covered by the CRC, so a broker can patch it
    16   magic                 int8    2
    17   crc                   uint32  CRC-32C over attributes .. end of the batch
    21   attributes            int16   bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
                                       4 transactional, 5 control, 6 hasDeleteHorizonMs
    23   lastOffsetDelta       int32
    27   baseTimestamp         int64   the delete horizon when bit 6 is set
    35   maxTimestamp          int64
    43   producerId            int64
    51   producerEpoch         int16
    53   baseSequence          int32
    57   recordsCount          int32
    61   records               compressed as one block unless the codec is none

    Record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
            keyLength varint, key, valueLength varint, value, headerCount varint,
            headers (keyLength varint, key utf-8, valueLength varint, value);
            a length of -1 means null.

Legacy message, magic 0 and 1 (a "batch" of one message, or a compressed wrapper):

    0    offset        int64   wrapper: the absolute offset of its last inner message
    8    messageSize   int32
    12   crc           uint32  CRC-32 (zlib) over magic .. end
    16   magic         int8
    17   attributes    int8    bits 0-2 codec, 3 timestamp type (magic 1)
    18   timestamp     int64   magic 1 only
         key           int32 length + bytes, -1 null
         value         int32 length + bytes, -1 null; a wrapper's value is a compressed
                       message set whose magic-1 inner offsets are relative (0..n-1)
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import NamedTuple

from crc32c import crc32c

from kcli.errors import CorruptRecordError
from kcli.storage.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, compress, decompress
from kcli.storage.record_runs import MIN_RUN, Run, decode_run
from kcli.storage.varint import NULL_VARINT, SMALL_VARINTS, SMALL_VARINTS_LIMIT, decode_varint, encode_varint

LOG_OVERHEAD = 12  # offset + size, in front of every batch and legacy message
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_BATCH_OVERHEAD = 61
LEGACY_OVERHEAD_V0 = 14  # crc + magic + attributes + key length + value length
LEGACY_OVERHEAD_V1 = 22
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_INT32_MAX = 2**31 - 1

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
_CONTROL_FLAG = 0x20
_DELETE_HORIZON_FLAG = 0x40

_HEADER = struct.Struct(">qiibIhiqqqhii")
_SIZE = struct.Struct(">qi4xb")  # offset, size, (leader epoch skipped), magic
_INT16_PAIR = struct.Struct(">hh")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_LEGACY_V0 = struct.Struct(">qiIbb")
_LEGACY_V1 = struct.Struct(">qiIbbq")


class TimestampType(enum.IntEnum):
    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        """The name Kafka prints: ``CreateTime``, ``LogAppendTime`` or ``NoTimestampType``."""
        return _TIMESTAMP_LABELS[self]


_TIMESTAMP_LABELS = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


class ControlType(enum.IntEnum):
    """The type field of a control record's key (Kafka's ControlRecordType)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1


class Record(NamedTuple):
    """One record as read: absolute offset and timestamp, key/value bytes or None."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    sequence: int = NO_SEQUENCE
    # Legacy messages carry their own CRC; v2 records do not (the batch has it).
    crc: int | None = None
    valid: bool = True


_new_record = tuple.__new__


class NewRecord(NamedTuple):
    """A record to be written; ``offset_delta`` defaults to its index in the batch."""

    key: bytes | None
    value: bytes | None
    timestamp: int = NO_TIMESTAMP
    headers: Sequence[tuple[str, bytes | None]] = ()
    offset_delta: int | None = None


def _codec(attributes: int, position: int) -> CompressionType:
    try:
        return CompressionType(attributes & _COMPRESSION_MASK)
    except ValueError:
        raise CorruptRecordError(f"batch at position {position} has unknown compression codec {attributes & _COMPRESSION_MASK}", position) from None


def increment_sequence(sequence: int, increment: int) -> int:
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


class RecordBatch:
    """A magic-2 batch read in place over ``buffer`` at ``position``.

    Header fields come from one ``struct`` unpack; records are decoded only when asked for, so
    validation and offset assignment on the broker's hot path never touch them.
    """

    __slots__ = ("buffer", "position", "_h")
    magic = 2

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        if len(buffer) - position < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"record batch at position {position} is shorter than the {RECORD_BATCH_OVERHEAD}-byte header",
                position,
            )
        self.buffer = buffer
        self.position = position
        self._h = _HEADER.unpack_from(buffer, position)

    @property
    def base_offset(self) -> int:
        return self._h[0]

    @property
    def last_offset_delta(self) -> int:
        return self._h[6]

    @property
    def last_offset(self) -> int:
        return self._h[0] + self._h[6]

    @property
    def next_offset(self) -> int:
        return self._h[0] + self._h[6] + 1

    @property
    def size_in_bytes(self) -> int:
        return self._h[1] + LOG_OVERHEAD

    @property
    def partition_leader_epoch(self) -> int:
        return self._h[2]

    @property
    def crc(self) -> int:
        return self._h[4]

    @property
    def attributes(self) -> int:
        return self._h[5]

    @property
    def compression(self) -> CompressionType:
        return _codec(self._h[5], self.position)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self._h[5] & _TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._h[5] & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self._h[5] & _CONTROL_FLAG)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self._h[7] if self._h[5] & _DELETE_HORIZON_FLAG else None

    @property
    def base_timestamp(self) -> int:
        return self._h[7]

    @property
    def max_timestamp(self) -> int:
        return self._h[8]

    @property
    def producer_id(self) -> int:
        return self._h[9]

    @property
    def producer_epoch(self) -> int:
        return self._h[10]

    @property
    def base_sequence(self) -> int:
        return self._h[11]

    @property
    def last_sequence(self) -> int:
        base = self._h[11]
        return NO_SEQUENCE if base == NO_SEQUENCE else increment_sequence(base, self._h[6])

    @property
    def record_count(self) -> int:
        return self._h[12]

    def compute_checksum(self) -> int:
        start = self.position + ATTRIBUTES_OFFSET
        return crc32c(memoryview(self.buffer)[start : self.position + self.size_in_bytes])

    def is_valid(self) -> bool:
        return self._h[1] + LOG_OVERHEAD >= RECORD_BATCH_OVERHEAD and self._size_fits() and self.compute_checksum() == self._h[4]

    def _size_fits(self) -> bool:
        return self.position + self._h[1] + LOG_OVERHEAD <= len(self.buffer)

    def validate(self) -> None:
        """Raise CorruptRecordError unless sizes, magic and CRC are right."""
        h = self._h
        pos = self.position
        if h[1] + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(f"record batch at position {pos} has size {h[1] + LOG_OVERHEAD}, below the minimum {RECORD_BATCH_OVERHEAD}", pos)
        if not self._size_fits():
            raise CorruptRecordError(f"record batch at position {pos} of size {h[1] + LOG_OVERHEAD} runs past the end of its buffer", pos)
        if h[3] != 2:
            raise CorruptRecordError(f"record batch at position {pos} has magic {h[3]}, expected 2", pos)
        computed = self.compute_checksum()
        if computed != h[4]:
            raise CorruptRecordError(f"record batch at position {pos} is corrupt (stored crc = {h[4]}, computed crc = {computed})", pos)
        if h[12] < 0:
            raise CorruptRecordError(f"record batch at position {pos} has a negative record count {h[12]}", pos)

    def assign(self, base_offset: int, partition_leader_epoch: int, log_append_time: int = -1) -> None:
        """Write a leader's base offset and partition leader epoch (both outside the CRC) and,
        when ``log_append_time`` >= 0, the LogAppendTime (the CRC recomputed) into the batch's
        buffer; this view's header follows, so it is never read again."""
        buffer, position = self.buffer, self.position
        set_base_offset(buffer, position, base_offset)
        set_partition_leader_epoch(buffer, position, partition_leader_epoch)
        if log_append_time >= 0:
            set_log_append_time(buffer, position, log_append_time)
            self._h = _HEADER.unpack_from(buffer, position)
        else:
            h = self._h
            self._h = (base_offset, h[1], partition_leader_epoch, *h[3:])

    def records_bytes(self, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
        """The records section, decompressed."""
        start = self.position + RECORD_BATCH_OVERHEAD
        end = self.position + self.size_in_bytes
        codec = self._h[5] & _COMPRESSION_MASK
        if codec == 0:
            return bytes(self.buffer[start:end])
        return decompress(codec, self.buffer[start:end], max_decompressed)

    def record_fields(self, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> list[RecordFields]:
        """The records as ``(offset_delta, timestamp_delta, key, value, headers)`` tuples.

        The cheapest form for code that walks millions of records (dump-log-segments): plain
        tuples unpack faster than named attributes are read.
        """
        return self._decoded(decode_record_fields, max_decompressed)

    def record_columns(self, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> RecordColumns:
        """The records as columns (``RecordColumns``)."""
        return self._decoded(decode_record_columns, max_decompressed)

    def _decoded(self, decoder, max_decompressed: int):
        try:
            return decoder(self.records_bytes(max_decompressed), self._h[12])
        except CorruptRecordError as exc:
            if exc.position is None:
                exc.position = self.position
            raise

    def records(self, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> list[Record]:
        h = self._h
        base_offset, base_timestamp, base_sequence = h[0], h[7], h[11]
        log_append_time = h[8] if h[5] & _TIMESTAMP_TYPE_MASK else None
        new = _new_record
        return [
            new(Record, (
                base_offset + od,
                base_timestamp + tsd if log_append_time is None else log_append_time,
                key,
                value,
                headers,
                NO_SEQUENCE if base_sequence == NO_SEQUENCE else increment_sequence(base_sequence, od),
                None,
                True,
            ))
            for od, tsd, key, value, headers in self.record_fields(max_decompressed)
        ]

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def __repr__(self) -> str:
        return f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, size={self.size_in_bytes})"


Headers = tuple[tuple[str, bytes | None], ...]
RecordFields = tuple[int, int, bytes | None, bytes | None, Headers]


class RecordColumns(NamedTuple):
    """The records of a section as columns: for consumers that build their own record objects."""

    offset_deltas: list[int]
    timestamp_deltas: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[Headers]


def decode_record_fields(data: bytes, count: int) -> list[RecordFields]:
    """Decode ``count`` v2 records from an uncompressed records section; the one record decoder."""
    out: list[RecordFields] = []
    for piece in _decode_pieces(data, count):
        if type(piece) is Run:
            out += zip(piece.offset_deltas, piece.timestamp_deltas, piece.keys, piece.values, repeat((), piece.count))
        else:
            out += piece
    return out


def decode_record_columns(data: bytes, count: int) -> RecordColumns:
    """``decode_record_fields`` as columns, without a tuple per record."""
    columns = RecordColumns([], [], [], [], [])
    for piece in _decode_pieces(data, count):
        if type(piece) is Run:
            columns.offset_deltas.extend(piece.offset_deltas)
            columns.timestamp_deltas.extend(piece.timestamp_deltas)
            columns.keys.extend(piece.keys)
            columns.values.extend(piece.values)
            columns.headers.extend(repeat((), piece.count))
        else:
            for column, values in zip(columns, zip(*piece)):
                column.extend(values)
    return columns


def _decode_pieces(data: bytes, count: int) -> Iterator[Run | list[RecordFields]]:
    """The records in pieces: runs of same-shaped records read by columns (``record_runs``),
    and between them lists of records read one by one."""
    pos = 0
    remaining = count
    runs = type(data) is bytes
    one_by_one = 1  # records read one by one before the next run is looked for; doubles while none is found
    while remaining:
        if runs and remaining >= MIN_RUN:
            run = decode_run(data, pos, remaining)
            if run is not None:
                yield run
                pos = run.end
                remaining -= run.count
                one_by_one = 1
                continue
        n = min(remaining, one_by_one)
        rows, pos = _decode_rows(data, pos, n)
        yield rows
        remaining -= n
        one_by_one = min(2 * one_by_one, 256)
    if pos != len(data):
        raise CorruptRecordError(f"record batch has {len(data) - pos} bytes after its {count} records")


def _decode_rows(data: bytes, pos: int, count: int) -> tuple[list[RecordFields], int]:
    """``count`` records from ``pos``, one by one; and the position after them."""
    # Varints are inlined for their one- and two-byte forms (lengths under 8 KiB, deltas under
    # 8 s): records of varying shape spend their decoding time in this loop.
    out: list[RecordFields] = []
    append = out.append
    end = len(data)
    dv = decode_varint
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = dv(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptRecordError(f"record of length {length} runs past the end of its batch")
            pos += 1  # attributes: unused
            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                ts_delta, pos = dv(data, pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                offset_delta, pos = dv(data, pos)
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                n = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                n, pos = dv(data, pos)
            if n < 0:
                key = None
            else:
                key = data[pos : pos + n]
                pos += n
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                b = (b & 0x7F) | (data[pos + 1] << 7)
                n = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                n, pos = dv(data, pos)
            if n < 0:
                value = None
            else:
                value = data[pos : pos + n]
                pos += n
            if data[pos] == 0:
                headers: Headers = ()
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, record_end)
            if pos != record_end:
                raise CorruptRecordError(f"record at offset delta {offset_delta} does not end where its length says")
            append((offset_delta, ts_delta, key, value, headers))
    except IndexError:
        raise CorruptRecordError("record runs past the end of its batch") from None
    return out, pos


def _decode_headers(data: bytes, pos: int, record_end: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = decode_varint(data, pos)
    if count < 0:
        raise CorruptRecordError(f"record has a negative header count {count}")
    headers = []
    for _ in range(count):
        n, pos = decode_varint(data, pos)
        if n < 0 or pos + n > record_end:
            raise CorruptRecordError(f"record header key of length {n} is invalid")
        key = data[pos : pos + n].decode("utf-8", "replace")
        pos += n
        n, pos = decode_varint(data, pos)
        if n < 0:
            value = None
        else:
            if pos + n > record_end:
                raise CorruptRecordError(f"record header value of length {n} runs past its record")
            value = data[pos : pos + n]
            pos += n
        headers.append((key, value))
    return tuple(headers), pos


def encode_record(record: NewRecord, offset_delta: int, base_timestamp: int) -> bytes:
    """One record in the v2 format, with its length prefix."""
    return encode_record_fields(record.timestamp - base_timestamp, offset_delta, record.key, record.value, record.headers)


def _varint(n: int) -> bytes:
    return SMALL_VARINTS[n] if 0 <= n < SMALL_VARINTS_LIMIT else encode_varint(n)


def encode_record_fields(
    timestamp_delta: int, offset_delta: int, key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]] = ()
) -> bytes:
    """One v2 record from its fields, with its length prefix: the record writer every builder
    uses (the producer's append and ``MemoryRecordsBuilder`` inline the same layout for records
    without headers)."""
    key_part = NULL_VARINT if key is None else _varint(len(key)) + key
    value_part = NULL_VARINT if value is None else _varint(len(value)) + value
    if headers:
        pieces = [_varint(len(headers))]
        for header_key, header_value in headers:
            name = header_key.encode("utf-8")
            pieces.append(_varint(len(name)))
            pieces.append(name)
            pieces.append(NULL_VARINT if header_value is None else _varint(len(header_value)) + header_value)
        header_part = b"".join(pieces)
    else:
        header_part = b"\x00"
    td = _varint(timestamp_delta)
    od = _varint(offset_delta)
    size = 1 + len(td) + len(od) + len(key_part) + len(value_part) + len(header_part)
    return b"".join((_varint(size), b"\x00", td, od, key_part, value_part, header_part))


def build_batch(
    records: Sequence[NewRecord],
    *,
    base_offset: int = 0,
    compression: CompressionType | int = CompressionType.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    transactional: bool = False,
    control: bool = False,
    delete_horizon_ms: int | None = None,
    last_offset_delta: int | None = None,
) -> bytes:
    """Write a magic-2 batch: lengths, timestamps, offset deltas and CRC are derived here.

    ``last_offset_delta`` may exceed the last record's delta, as for a batch the cleaner emptied
    but kept for its producer state. With ``timestamp_type`` LOG_APPEND_TIME, the batch's max
    timestamp is ``log_append_time``.
    """
    timestamps = [r.timestamp for r in records]
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    else:
        base_timestamp = timestamps[0] if timestamps else NO_TIMESTAMP
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        if log_append_time is None:
            raise ValueError("a LogAppendTime batch needs log_append_time")
        max_timestamp = log_append_time
    else:
        max_timestamp = max(timestamps) if timestamps else NO_TIMESTAMP
    deltas = [i if r.offset_delta is None else r.offset_delta for i, r in enumerate(records)]
    body = b"".join(encode_record(r, d, base_timestamp) for r, d in zip(records, deltas))
    if compression:
        body = compress(compression, body)
    if last_offset_delta is None:
        last_offset_delta = deltas[-1] if deltas else 0
    attributes = batch_attributes(compression, timestamp_type, transactional, control, delete_horizon_ms is not None)
    buf = bytearray(RECORD_BATCH_OVERHEAD + len(body))
    buf[RECORD_BATCH_OVERHEAD:] = body
    write_header(
        buf, base_offset, partition_leader_epoch, attributes, last_offset_delta, base_timestamp, max_timestamp,
        producer_id, producer_epoch, base_sequence, len(records),
    )
    return bytes(buf)


def batch_attributes(
    compression: CompressionType | int,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: bool = False,
) -> int:
    """The attributes field of a magic-2 batch (Kafka's DefaultRecordBatch.computeAttributes)."""
    attributes = int(compression) & _COMPRESSION_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_FLAG
    if control:
        attributes |= _CONTROL_FLAG
    if delete_horizon:
        attributes |= _DELETE_HORIZON_FLAG
    return attributes


def write_header(
    buffer: bytearray,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
) -> None:
    """Write the 61-byte magic-2 header in front of the records ``buffer`` already holds from
    position 61 to its end, and then the CRC-32C over attributes .. end (Kafka's
    DefaultRecordBatch.writeHeader). The one place a batch header is packed: every writer (the
    builders here, the producer, the log cleaner) fills a buffer's records and calls this."""
    _HEADER.pack_into(
        buffer, 0, base_offset, len(buffer) - LOG_OVERHEAD, partition_leader_epoch, 2, 0, attributes,
        last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, record_count,
    )
    _write_crc(buffer, 0, len(buffer))


def _write_crc(buffer: bytearray | memoryview, position: int, end: int) -> None:
    """The CRC-32C of the batch at ``position`` (attributes .. ``end``) into its crc field."""
    _UINT32.pack_into(buffer, position + CRC_OFFSET, crc32c(memoryview(buffer)[position + ATTRIBUTES_OFFSET : end]))


_ZERO = b"\x00"
_ZERO_ZERO = b"\x00\x00"


class MemoryRecordsBuilder(bytearray):
    """Kafka's MemoryRecordsBuilder for the broker's own writes (a coordinator's records): built
    from ``(key, value)`` pairs that all have ``timestamp`` and no headers, byte for byte what
    ``build_batch`` writes, in one pass with table lookups for the varints and no record objects.

    The object is the built batch's bytes, with what the builder knows of them beside (Kafka's
    RecordsInfo): its records have offset deltas 0..n-1 and one CreateTime timestamp; it has no
    producer id, no transactional or control flag, and its CRC covers what was built. The facts
    validation would read back from the records (count, timestamp, whether a key is null, the
    codec) are kept, so ``Log.append`` can give the batch its offsets without reading it again.
    Bytes from the network never have this type. Only the base offset and the partition leader
    epoch, both outside the CRC, may change after building.
    """

    __slots__ = ("record_count", "timestamp", "null_keys", "compression")

    record_count: int
    timestamp: int
    null_keys: bool
    compression: CompressionType

    def __init__(
        self, entries: Sequence[tuple[bytes | None, bytes | None]], timestamp: int, compression: CompressionType | int = CompressionType.NONE
    ) -> None:
        small = SMALL_VARINTS
        limit = SMALL_VARINTS_LIMIT
        parts: list[bytes] = []
        extend = parts.extend
        null_keys = False
        count = 0
        for key, value in entries:
            if key is None:
                key, key_length = b"", NULL_VARINT
                null_keys = True
                n = 0
            else:
                n = len(key)
                key_length = small[n] if n < limit else encode_varint(n)
            if value is None:
                value, value_length = b"", NULL_VARINT
            else:
                m = len(value)
                n += m
                value_length = small[m] if m < limit else encode_varint(m)
            offset = small[count] if count < limit else encode_varint(count)
            # attributes, timestamp delta 0 and header count: one byte each
            size = 3 + len(offset) + len(key_length) + len(value_length) + n
            extend((small[size] if size < limit else encode_varint(size), _ZERO_ZERO, offset, key_length, key, value_length, value, _ZERO))
            count += 1
        if not count:
            timestamp = NO_TIMESTAMP  # as build_batch heads an empty batch
        codec = compression if type(compression) is CompressionType else CompressionType(compression)
        body = b"".join(parts)
        if codec:
            body = compress(codec, body)
        super().__init__(RECORD_BATCH_OVERHEAD + len(body))
        self[RECORD_BATCH_OVERHEAD:] = body
        write_header(
            self, 0, NO_PARTITION_LEADER_EPOCH, int(codec) & _COMPRESSION_MASK, count - 1 if count else 0, timestamp, timestamp,
            NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, count,
        )
        self.record_count = count
        self.timestamp = timestamp
        self.null_keys = null_keys
        self.compression = codec


def control_record(control_type: ControlType, value: bytes | None, timestamp: int) -> NewRecord:
    """A control record: key = version 0 + type, as Kafka's ControlRecordType writes it."""
    return NewRecord(_INT16_PAIR.pack(0, control_type), value, timestamp)


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    """EndTransactionMarker value: version int16 (0) + coordinatorEpoch int32."""
    return _INT16.pack(0) + _INT32.pack(coordinator_epoch)


def parse_control_record(key: bytes | None, value: bytes | None, offset: int) -> tuple[ControlType, int | None]:
    """The control type of a control record and, for commit/abort markers, the coordinator epoch."""
    if key is None or len(key) < 4:
        raise CorruptRecordError(f"control record at offset {offset} has an invalid key")
    _version, raw_type = _INT16_PAIR.unpack_from(key, 0)
    try:
        control_type = ControlType(raw_type)
    except ValueError:
        control_type = ControlType.UNKNOWN
    epoch = None
    if control_type in (ControlType.ABORT, ControlType.COMMIT):
        if value is None or len(value) < 6:
            raise CorruptRecordError(f"transaction marker at offset {offset} has an invalid value")
        epoch = _INT32.unpack_from(value, 2)[0]
    return control_type, epoch


def set_base_offset(buffer: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Patch a batch's base offset; it sits outside the CRC."""
    _INT64.pack_into(buffer, position, base_offset)


def set_partition_leader_epoch(buffer: bytearray | memoryview, position: int, epoch: int) -> None:
    """Patch a batch's partition leader epoch; it sits outside the CRC."""
    _INT32.pack_into(buffer, position + 12, epoch)


def set_log_append_time(buffer: bytearray | memoryview, position: int, timestamp: int) -> None:
    """Turn a batch's timestamp type to LogAppendTime at ``timestamp``; the CRC is recomputed."""
    attributes = _INT16.unpack_from(buffer, position + ATTRIBUTES_OFFSET)[0]
    _INT16.pack_into(buffer, position + ATTRIBUTES_OFFSET, attributes | _TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buffer, position + 35, timestamp)
    size = _INT32.unpack_from(buffer, position + 8)[0] + LOG_OVERHEAD
    _write_crc(buffer, position, position + size)


class LegacyBatch:
    """A magic 0 or 1 message read in place: a plain message, or a compressed wrapper."""

    __slots__ = ("buffer", "position", "offset", "message_size", "crc", "magic", "attributes", "timestamp", "_inner")

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        remaining = len(buffer) - position
        if remaining < LOG_OVERHEAD + LEGACY_OVERHEAD_V0:
            raise CorruptRecordError(f"message at position {position} is shorter than its header", position)
        magic = buffer[position + MAGIC_OFFSET]
        if magic == 0:
            self.offset, self.message_size, self.crc, self.magic, self.attributes = _LEGACY_V0.unpack_from(buffer, position)
            self.timestamp = NO_TIMESTAMP
        elif magic == 1:
            if remaining < LOG_OVERHEAD + LEGACY_OVERHEAD_V1:
                raise CorruptRecordError(f"message at position {position} is shorter than its header", position)
            self.offset, self.message_size, self.crc, self.magic, self.attributes, self.timestamp = _LEGACY_V1.unpack_from(buffer, position)
        else:
            raise CorruptRecordError(f"message at position {position} has magic {magic}, expected 0 or 1", position)
        self.buffer = buffer
        self.position = position
        self._inner: list[Record] | None = None

    @property
    def size_in_bytes(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def base_offset(self) -> int:
        if self.attributes & _COMPRESSION_MASK == 0:
            return self.offset
        inner = self.records()
        return inner[0].offset if inner else self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def compression(self) -> CompressionType:
        return _codec(self.attributes, self.position)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType.LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    # Fields a magic-2 batch has, at the values Kafka reports for legacy messages.
    partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
    producer_id = NO_PRODUCER_ID
    producer_epoch = NO_PRODUCER_EPOCH
    base_sequence = NO_SEQUENCE
    last_sequence = NO_SEQUENCE
    is_transactional = False
    is_control = False
    delete_horizon_ms = None

    @property
    def record_count(self) -> int:
        return len(self.records())

    def compute_checksum(self) -> int:
        return zlib.crc32(self.buffer[self.position + MAGIC_OFFSET : self.position + self.size_in_bytes])

    def is_valid(self) -> bool:
        return (
            self.message_size >= (LEGACY_OVERHEAD_V0 if self.magic == 0 else LEGACY_OVERHEAD_V1)
            and self.position + self.size_in_bytes <= len(self.buffer)
            and self.compute_checksum() == self.crc
        )

    def validate(self) -> None:
        if not self.is_valid():
            raise CorruptRecordError(
                f"message at position {self.position} is corrupt (stored crc = {self.crc}, computed crc = {self.compute_checksum()})",
                self.position,
            )

    def _key_value(self) -> tuple[bytes | None, bytes | None]:
        pos = self.position + (LOG_OVERHEAD + LEGACY_OVERHEAD_V0 - 8 if self.magic == 0 else LOG_OVERHEAD + LEGACY_OVERHEAD_V1 - 8)
        end = self.position + self.size_in_bytes
        buf = self.buffer
        fields: list[bytes | None] = []
        for _ in range(2):
            if pos + 4 > end:
                raise CorruptRecordError(f"message at position {self.position} is truncated", self.position)
            n = _INT32.unpack_from(buf, pos)[0]
            pos += 4
            if n < 0:
                fields.append(None)
            else:
                if pos + n > end:
                    raise CorruptRecordError(f"message at position {self.position} is truncated", self.position)
                fields.append(bytes(buf[pos : pos + n]))
                pos += n
        return fields[0], fields[1]

    def records(self, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> list[Record]:
        if self._inner is not None:
            return self._inner
        key, value = self._key_value()
        codec = self.attributes & _COMPRESSION_MASK
        if codec == 0:
            self._inner = [_new_record(Record, (self.offset, self.timestamp, key, value, (), NO_SEQUENCE, self.crc, self.is_valid()))]
            return self._inner
        if value is None:
            raise CorruptRecordError(f"compressed message at position {self.position} has no value", self.position)
        inner_bytes = decompress(codec, value, max_decompressed, legacy_lz4=self.magic == 0)
        inner: list[LegacyBatch] = []
        pos = 0
        while pos < len(inner_bytes):
            message = LegacyBatch(inner_bytes, pos)
            if message.attributes & _COMPRESSION_MASK:
                raise CorruptRecordError(f"compressed message at position {self.position} nests another compressed message", self.position)
            if pos + message.size_in_bytes > len(inner_bytes):
                raise CorruptRecordError(f"compressed message at position {self.position} holds a truncated inner message", self.position)
            inner.append(message)
            pos += message.size_in_bytes
        if not inner:
            self._inner = []
            return self._inner
        # Magic 1 wrappers number inner messages from 0 and carry the absolute last offset.
        shift = self.offset - inner[-1].offset if self.magic >= 1 else 0
        log_append = self.timestamp_type == TimestampType.LOG_APPEND_TIME
        records = []
        for message in inner:
            k, v = message._key_value()
            ts = self.timestamp if log_append else message.timestamp
            records.append(_new_record(Record, (message.offset + shift, ts, k, v, (), NO_SEQUENCE, message.crc, message.is_valid())))
        self._inner = records
        return records

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())


Batch = RecordBatch | LegacyBatch


def read_batch(buffer: bytes | bytearray | memoryview, position: int = 0) -> Batch:
    """The batch starting at ``position``, of whichever magic it has."""
    if len(buffer) - position < HEADER_SIZE_UP_TO_MAGIC:
        raise CorruptRecordError(f"batch header at position {position} is truncated", position)
    magic = buffer[position + MAGIC_OFFSET]
    if magic == 2:
        return RecordBatch(buffer, position)
    if magic in (0, 1):
        return LegacyBatch(buffer, position)
    raise CorruptRecordError(f"batch at position {position} has unknown magic {magic}", position)


def single_batch_header(buffer: bytes | bytearray | memoryview | None) -> RecordBatch | None:
    """The header of the magic-2 batch at the start of ``buffer`` (a produced partition's records),
    read once for every check the broker makes before and during the append; None when the
    bytes are shorter than a batch header or have another magic. Nothing is validated here."""
    if buffer is None or len(buffer) < RECORD_BATCH_OVERHEAD or buffer[MAGIC_OFFSET] != 2:
        return None
    return RecordBatch(buffer, 0)


def peek_batch_header(buffer: bytes | bytearray | memoryview, position: int) -> tuple[int, int, int]:
    """``(offset, size_in_bytes, magic)`` of the batch at ``position`` without building a view."""
    offset, size, magic = _SIZE.unpack_from(buffer, position)
    return offset, size + LOG_OVERHEAD, magic


def check_batch_size(size_field: int, position: int, max_size: int | None = None) -> None:
    """Kafka's sanity checks on a batch's size field before reading the batch itself.

    A size too large for what remains is not checked here: at the end of a file that is a
    partially written batch, which readers treat as the end of the data.
    """
    if size_field < LEGACY_OVERHEAD_V0:
        raise CorruptRecordError(
            f"Found record size {size_field} smaller than minimum record overhead ({LEGACY_OVERHEAD_V0}) at position {position}.",
            position,
        )
    if max_size is not None and size_field > max_size:
        raise CorruptRecordError(f"Found record size {size_field} larger than max record size ({max_size}) at position {position}.", position)


def iter_batches(buffer: bytes | bytearray | memoryview, position: int = 0, end: int | None = None) -> Iterator[Batch]:
    """Every whole batch in ``buffer[position:end]``; a partial batch at the end is not yielded."""
    if end is None:
        end = len(buffer)
    while end - position >= HEADER_SIZE_UP_TO_MAGIC:
        _, size, _ = peek_batch_header(buffer, position)
        check_batch_size(size - LOG_OVERHEAD, position)
        if position + size > end:
            return
        yield read_batch(buffer, position)
        position += size
