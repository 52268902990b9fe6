"""Checks on the batches a leader is about to append, and their offsets (Kafka's LogValidator).

What a Produce request (or a coordinator) hands to ``Log.append`` for one partition goes through
``validate_and_assign_offsets`` before a byte is written:

1. each batch's frame: size fields, magic 2, base offset 0 from a client, size within
   ``max.message.bytes``, CRC-32C;
2. from a client, the header's promises: a positive record count matching the offset range, no
   control batch, a sequence when there is a producer id;
3. the records: length prefixes that lead from the first record exactly to the end of the batch,
   offset deltas 0..n-1 in order and, where the topic asks for it, a key on every record of a
   compacted topic and CreateTime timestamps within ``message.timestamp.before/after.max.ms``;
4. offsets from the log end, the partition leader epoch and, on a LogAppendTime topic, the append
   time are written into the batch in place; a batch whose codec differs from the topic's
   ``compression.type`` is rebuilt with the topic's codec instead.

Step 3 is the only one that reads past the 61-byte header. Unless keys or timestamps must be
seen, an uncompressed batch is walked from length prefix to length prefix, and a compressed one is
walked the same way while it inflates, its offset deltas compared as bytes with their expected
encoding (runs of same-shaped records a column at a time); otherwise the batch is decompressed
once and decoded.

Decompression is bounded by what the batch can legitimately hold (``inflate_records``): it is
inflated in growing steps while the records' length prefixes are followed, so it stops as soon as
the framing is wrong (a decompression bomb of zeros costs one step), the records' declared
lengths may not add up to more than ``record count x max.message.bytes`` (MESSAGE_TOO_LARGE,
found from the prefixes before those bytes are inflated), nor past
``compression.DEFAULT_MAX_DECOMPRESSED_BYTES`` (CORRUPT_MESSAGE), and nothing may follow the
last record (INVALID_RECORD, as Kafka's "records still remaining").

A batch the broker built itself (``records.MemoryRecordsBuilder``: the group coordinator's writes) carries
what steps 1-3 would find out, so ``assign_offsets_to_built_batch`` checks those facts against the
topic's rules and only does step 4. When a rule would need more than the facts (a null key on a
compacted topic, a timestamp out of bounds, another codec, LogAppendTime, a batch over
``max.message.bytes``) it declines and the batch takes the full path, which gives the exact error.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import NamedTuple

from kcli.errors import CorruptRecordError, ErrorCode, InvalidRecordError, KcliError
from kcli.storage.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, CompressionType, open_stream
from kcli.storage.log_config import COMPACT, LOG_APPEND_TIME, LogConfig
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.record_runs import MIN_RUN, find_run, offset_deltas_run_from
from kcli.storage.records import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    MemoryRecordsBuilder,
    NewRecord,
    RecordBatch,
    RecordFields,
    TimestampType,
    build_batch,
    check_batch_size,
    decode_record_fields,
    peek_batch_header,
    set_base_offset,
    set_partition_leader_epoch,
)
from kcli.storage.varint import decode_varint, encode_varint

LONG_MAX = 2**63 - 1
# A record's body holds at least attributes, timestamp delta, offset delta, key length, value
# length and header count: one byte each.
_MIN_RECORD_BODY = 6


# -- errors ------------------------------------------------------------------------------------------


class RecordTooLargeError(InvalidRecordError):
    """A batch larger than ``max.message.bytes`` (Kafka's RecordTooLargeException)."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class RecordBatchTooLargeError(InvalidRecordError):
    """A record set larger than a whole segment (Kafka's RecordBatchTooLargeException)."""

    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class UnsupportedMagicError(InvalidRecordError, CorruptRecordError):
    """A batch that is not a magic-2 RecordBatch, which a leader no longer accepts.

    It answers INVALID_RECORD as Kafka's request check does, and is also a CorruptRecordError:
    for the log these bytes are not a batch it can store.
    """

    error_code = ErrorCode.INVALID_RECORD


class RecordError(NamedTuple):
    """One rejected record: its index in its batch and why (a Produce response's RecordError)."""

    batch_index: int
    message: str


class InvalidRecordsError(InvalidRecordError):
    """Records of a batch that break a topic rule; ``record_errors`` lists each of them."""

    def __init__(self, message: str, record_errors: Sequence[RecordError] = ()) -> None:
        super().__init__(message)
        self.record_errors = tuple(record_errors)


class InvalidTimestampError(KcliError):
    """Records whose timestamps the topic does not accept; ``record_errors`` lists each of them."""

    error_code = ErrorCode.INVALID_TIMESTAMP

    def __init__(self, message: str, record_errors: Sequence[RecordError] = ()) -> None:
        super().__init__(message)
        self.record_errors = tuple(record_errors)


# -- the rules a topic sets --------------------------------------------------------------------------


class RecordRules(NamedTuple):
    """The record-level rules of a topic at one moment ``now``."""

    compacted: bool
    log_append_time: bool
    before_max_ms: int
    after_max_ms: int
    now: int

    @classmethod
    def for_config(cls, config: LogConfig, now: int) -> RecordRules:
        # message.timestamp.difference.max.ms still applies to whichever bound is left at its default.
        difference = getattr(config, "message_timestamp_difference_max_ms", LONG_MAX)
        before = getattr(config, "message_timestamp_before_max_ms", LONG_MAX)
        after = getattr(config, "message_timestamp_after_max_ms", LONG_MAX)
        return cls(
            compacted=COMPACT in config.cleanup_policy,
            log_append_time=config.message_timestamp_type == LOG_APPEND_TIME,
            before_max_ms=difference if before == LONG_MAX else before,
            after_max_ms=difference if after == LONG_MAX else after,
            now=now,
        )

    @property
    def checks_timestamps(self) -> bool:
        return not self.log_append_time and (self.before_max_ms < LONG_MAX or self.after_max_ms < LONG_MAX)

    def needs_records(self, batch: RecordBatch) -> bool:
        """Whether the batch's keys or timestamps must be read, not just its framing."""
        return self.compacted or self.checks_timestamps or batch.timestamp_type == TimestampType.LOG_APPEND_TIME


def target_compression(topic_compression: str, source: CompressionType) -> CompressionType:
    """The codec a batch is stored with: the producer's for ``producer``, else the topic's."""
    if topic_compression == "producer":
        return source
    if topic_compression == "uncompressed":
        return CompressionType.NONE
    return CompressionType.from_name(topic_compression)


# -- validation and offset assignment ----------------------------------------------------------------


class ValidationResult(NamedTuple):
    """What the leader appends: the records (the input patched in place, or rebuilt) and their offsets.

    ``producer_batches`` are the headers of the stored batches that carry a producer id (views
    over the bytes appended, their offsets assigned).
    ``offset_of_max_timestamp`` is the last offset of the batch holding the max timestamp.
    """

    records: bytes | bytearray | memoryview
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    shallow_count: int
    record_count: int
    producer_batches: list[RecordBatch]
    recompressed: bool


def validate_and_assign_offsets(
    buffer: bytearray | memoryview,
    *,
    first_offset: int,
    config: LogConfig,
    partition: str,
    now: int,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    leader_epoch: int = -1,
    log_append_time: int = -1,
    header: RecordBatch | None = None,
) -> ValidationResult:
    """Check every batch of a leader's append and give it offsets from ``first_offset``.

    ``buffer`` must be writable: batches kept as they are get their base offset, leader epoch and
    (``log_append_time`` >= 0) append time written in place. ``header`` is the first batch's
    header already read over ``buffer`` (a produce request's, ``records.single_batch_header``):
    it is checked and patched as it is, not read again. Raises a KcliError whose ``error_code``
    is the answer for the whole append when anything is wrong.
    """
    view = memoryview(buffer)
    n = len(view)
    if n == 0:
        raise CorruptRecordError("an append must hold at least one record batch")
    data, data_start = _walkable(view)
    append = _Append(view, data, data_start, config, RecordRules.for_config(config, now), partition, origin, leader_epoch, log_append_time)
    next_offset = first_offset
    max_timestamp = offset_of_max_timestamp = NO_TIMESTAMP
    shallow_count = record_count = 0
    pieces: list[bytes | memoryview] = []
    producer_batches: list[RecordBatch] = []
    rebuilt = False
    position = 0
    while position < n:
        batch = _read_batch(view, position, n, origin, partition, config.max_message_bytes, header if position == 0 else None)
        piece, stored = append.place(batch, next_offset)
        pieces.append(piece)
        rebuilt = rebuilt or isinstance(piece, bytes)
        last_offset = stored.last_offset
        if stored.max_timestamp > max_timestamp:
            max_timestamp, offset_of_max_timestamp = stored.max_timestamp, last_offset
        if stored.producer_id >= 0:
            producer_batches.append(stored)
        next_offset = last_offset + 1
        shallow_count += 1
        record_count += batch.record_count
        position += batch.size_in_bytes
    if log_append_time >= 0:
        max_timestamp, offset_of_max_timestamp = log_append_time, next_offset - 1
    records: bytes | bytearray | memoryview = b"".join(pieces) if rebuilt else buffer
    return ValidationResult(
        records, first_offset, next_offset - 1, max_timestamp, offset_of_max_timestamp, log_append_time,
        shallow_count, record_count, producer_batches, rebuilt,
    )


def assign_offsets_to_built_batch(
    batch: MemoryRecordsBuilder,
    *,
    first_offset: int,
    config: LogConfig,
    now: int,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    leader_epoch: int = -1,
) -> ValidationResult | None:
    """``validate_and_assign_offsets`` for a batch kcli built, from its facts instead of its records.

    Writes ``first_offset`` and ``leader_epoch`` into the batch and returns what the full path
    would; returns None, touching nothing, when the full path must decide (see the module
    docstring), including whenever that path could fail.
    """
    count = batch.record_count
    if count <= 0 or len(batch) > config.max_message_bytes:
        return None
    if origin == AppendOrigin.CLIENT and batch[:8] != _ZERO_OFFSET:
        return None
    codec = batch.compression
    if config.compression_type != "producer" and target_compression(config.compression_type, codec) != codec:
        return None
    rules = RecordRules.for_config(config, now)
    if rules.log_append_time or (rules.compacted and batch.null_keys):
        return None
    if rules.checks_timestamps and not (now - rules.before_max_ms <= batch.timestamp <= now + rules.after_max_ms):
        return None
    set_base_offset(batch, 0, first_offset)
    set_partition_leader_epoch(batch, 0, leader_epoch)
    last_offset = first_offset + count - 1
    # As the full path sums up an append: a batch's max timestamp counts from above NO_TIMESTAMP.
    if batch.timestamp > NO_TIMESTAMP:
        max_timestamp, offset_of_max_timestamp = batch.timestamp, last_offset
    else:
        max_timestamp = offset_of_max_timestamp = NO_TIMESTAMP
    return ValidationResult(batch, first_offset, last_offset, max_timestamp, offset_of_max_timestamp, -1, 1, count, [], False)


_ZERO_OFFSET = bytes(8)


class _Append(NamedTuple):
    """One append's buffer and settings, for the per-batch steps."""

    view: memoryview
    data: bytes | bytearray  # the bytes under the view, for the record walk ...
    data_start: int  # ... and where the view starts in them
    config: LogConfig
    rules: RecordRules
    partition: str
    origin: AppendOrigin
    leader_epoch: int
    log_append_time: int

    def place(self, batch: RecordBatch, base_offset: int) -> tuple[bytes | memoryview, RecordBatch]:
        """Check the batch's header and records and give it ``base_offset``: patched in place (a
        view is returned) or rebuilt with the topic's codec (bytes are returned). Also returns the
        header of what is stored: ``batch`` itself, patched, or the rebuilt batch's."""
        if self.origin == AppendOrigin.CLIENT:
            _check_client_batch(batch, self.partition)
        codec = batch.compression
        target = codec if batch.is_control else target_compression(self.config.compression_type, codec)
        position, size = batch.position, batch.size_in_bytes
        if target == codec and not self.rules.needs_records(batch):
            if codec == CompressionType.NONE:
                start = self.data_start + position
                walk_records(self.data, start + RECORD_BATCH_OVERHEAD, start + size, batch.record_count)
            else:
                inflate_records(batch, self.partition, self.config.max_message_bytes, check_offset_deltas=True)
            fields = None
        else:
            fields = _decode_records(batch, self.partition, self.config.max_message_bytes)
            _check_records(batch, fields, self.rules, self.partition)
        if fields is not None and target != codec:
            rebuilt = _rebuild(batch, fields, target, base_offset, self.leader_epoch, self.log_append_time)
            if len(rebuilt) > self.config.max_message_bytes:
                raise RecordTooLargeError(
                    f"Message batch size is {len(rebuilt)} bytes in append to partition {self.partition} which exceeds the "
                    f"maximum configured size of {self.config.max_message_bytes}."
                )
            return rebuilt, RecordBatch(rebuilt)
        batch.assign(base_offset, self.leader_epoch, self.log_append_time)
        return self.view[position : position + size], batch


# Below this size a copy of the records costs less than finding where they sit (two ctypes lookups).
_LOCATE_MIN_BYTES = 16 * 1024


def _walkable(view: memoryview) -> tuple[bytes | bytearray, int]:
    """The bytes object under ``view``, which the record walk takes strided slices of (a memoryview
    would copy each column slowly), and where ``view`` starts in it. A large writable view into a
    larger bytearray (a produce request's records in their frame) is located in it by address:
    no copy. Anything else that does not cover its whole object is copied."""
    base = view.obj
    if isinstance(base, (bytes, bytearray)) and len(base) == view.nbytes:
        return base, 0
    if view.nbytes >= _LOCATE_MIN_BYTES and isinstance(base, bytearray) and not view.readonly and view.c_contiguous:
        return base, ctypes.addressof(ctypes.c_char.from_buffer(view)) - ctypes.addressof(ctypes.c_char.from_buffer(base))
    return view.tobytes(), 0


def _read_batch(
    view: memoryview, position: int, n: int, origin: AppendOrigin, partition: str, max_message_bytes: int, header: RecordBatch | None = None
) -> RecordBatch:
    """The batch at ``position`` once its frame, magic, base offset, size and CRC are checked, in
    Kafka's order; ``header`` is its magic-2 header when the caller has read it already."""
    if header is not None:
        base_offset, size, magic = header.base_offset, header.size_in_bytes, view[position + MAGIC_OFFSET]
    elif n - position < HEADER_SIZE_UP_TO_MAGIC:
        raise CorruptRecordError(f"batch header at position {position} of the append to {partition} is truncated", position)
    else:
        base_offset, size, magic = peek_batch_header(view, position)
    check_batch_size(size - LOG_OVERHEAD, position)
    if position + size > n:
        raise CorruptRecordError(f"record batch at position {position} of size {size} runs past the end of the append to {partition}", position)
    if magic != 2:
        raise UnsupportedMagicError(
            f"Produce requests are only allowed to contain record batches with magic version 2, "
            f"but the batch at position {position} in the append to {partition} has magic {magic}",
            position,
        )
    if size < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(f"record batch at position {position} has size {size}, below the minimum {RECORD_BATCH_OVERHEAD}", position)
    if origin == AppendOrigin.CLIENT and base_offset != 0:
        raise InvalidRecordError(f"The baseOffset of the record batch in the append to {partition} should be 0, but it is {base_offset}")
    if size > max_message_bytes:
        raise RecordTooLargeError(
            f"The record batch size in the append to {partition} is {size} bytes which exceeds the maximum configured value "
            f"of {max_message_bytes} (max.message.bytes)."
        )
    batch = header if header is not None else RecordBatch(view, position)
    if batch.compute_checksum() != batch.crc:
        raise CorruptRecordError(f"Record is corrupt (stored crc = {batch.crc}) in topic partition {partition}.", position)
    if batch.record_count < 0:
        raise CorruptRecordError(f"record batch at position {position} has a negative record count {batch.record_count}", position)
    return batch


def _check_client_batch(batch: RecordBatch, partition: str) -> None:
    """What a client's batch header must say (Kafka's validateBatch for client appends)."""
    count = batch.record_count
    count_from_offsets = batch.last_offset_delta + 1
    base, last = batch.base_offset, batch.last_offset
    if count_from_offsets <= 0:
        raise InvalidRecordError(f"Batch has an invalid offset range: [{base}, {last}] in topic partition {partition}")
    if count <= 0:
        raise InvalidRecordError(f"Invalid reported count for record batch: {count} in topic partition {partition}")
    if count_from_offsets != count:
        raise InvalidRecordError(f"Inconsistent batch offset range [{base}, {last}] and count of records {count} in topic partition {partition}")
    if batch.is_control:
        raise InvalidRecordError(f"Clients are not allowed to write control records in topic partition {partition}")
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        raise InvalidRecordError(
            f"Invalid sequence number {batch.base_sequence} in record batch with producerId {batch.producer_id} in topic partition {partition}"
        )


# -- the records ------------------------------------------------------------------------------------

_offset_delta_encodings: list[bytes] = []


def _encoded_offset_deltas(count: int) -> list[bytes]:
    """The varint encodings of 0..count-1, grown as larger batches come."""
    table = _offset_delta_encodings
    if len(table) < count:
        table.extend(encode_varint(i) for i in range(len(table), max(count, 2 * len(table), 1024)))
    return table


def walk_records(data: bytes | bytearray, start: int, end: int, count: int, *, check_offset_deltas: bool = False) -> None:
    """Check the framing of a records section without decoding the records.

    Each record's length prefix must lead to the next, and the ``count`` records must end exactly
    at ``end``. With ``check_offset_deltas`` record i must also have offset delta i: kcli asks that
    of compressed batches (whose inner offsets Kafka validates); like Kafka it does not ask it of
    uncompressed ones, whose consumers take offsets from the header and the deltas. Runs of
    records of one shape are checked a column at a time (``record_runs``), the rest one by one.
    Raises InvalidRecordError.
    """
    runs = isinstance(data, (bytes, bytearray))
    pos = start
    i = 0
    one_by_one = 1  # records walked one by one before the next run is looked for; doubles while none is found
    while i < count:
        if runs and count - i >= MIN_RUN:
            run = find_run(data, pos, end, count - i)
            if run is not None and (not check_offset_deltas or offset_deltas_run_from(data, run, i)):
                pos = run.end
                i += run.count
                one_by_one = 1
                continue
        n = min(count - i, one_by_one)
        pos = _walk(data, pos, end, i, n, count, check_offset_deltas)
        i += n
        one_by_one = min(2 * one_by_one, 256)
    if pos != end:
        raise InvalidRecordError(f"Incorrect declared batch size, {end - pos} bytes remain after the {count} records of the batch")


def _walk(data: bytes | bytearray, pos: int, end: int, first: int, n: int, count: int, check_offset_deltas: bool) -> int:
    """Records ``first`` .. ``first + n - 1`` of ``count``, one by one, from ``pos``; the position after them."""
    # Varints are inlined for their one- and two-byte forms: records of varying shape take this
    # loop on the produce path.
    deltas = _encoded_offset_deltas(count) if check_offset_deltas else None
    i = first
    try:
        for i in range(first, first + n):
            b = data[pos]
            if b < 0x80:
                p = pos + 1
                length = (b >> 1) ^ -(b & 1)
            elif data[pos + 1] < 0x80:
                p = pos + 2
                b = (b & 0x7F) | (data[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
            else:
                length, p = decode_varint(data, pos)
            pos = p + length
            if length < _MIN_RECORD_BODY or pos > end:
                raise InvalidRecordError(f"record {i} of length {length} at position {p} does not fit in its batch")
            if deltas is not None:  # inlined: the attributes byte, the timestamp delta, then the offset delta
                p += 1
                b = data[p]
                if b < 0x80:
                    p += 1
                elif data[p + 1] < 0x80:
                    p += 2
                else:
                    _, p = decode_varint(data, p)
                if not data.startswith(deltas[i], p):
                    offset_delta, _ = decode_varint(data, p)
                    raise InvalidRecordError(f"record {i} of the batch has offset delta {offset_delta}; the deltas must run 0..{count - 1} in order")
    except (IndexError, CorruptRecordError):
        raise InvalidRecordError(f"record {i} runs past the end of its batch") from None
    return pos


# Bytes inflated first while following the records' length prefixes; each later step inflates
# INFLATE_GROWTH times as much as was inflated before, up to INFLATE_STEP_MAX: few calls into the
# codec for a batch of any size, and inflation never more than INFLATE_GROWTH times as far ahead
# of the checked prefixes as they reach (a batch of 1 MiB of records takes four steps).
INFLATE_STEP = 16 * 1024
INFLATE_STEP_MAX = 1024 * 1024
INFLATE_GROWTH = 3
_MAX_VARINT_BYTES = 10


def inflate_records(batch: RecordBatch, partition: str, max_message_bytes: int, *, check_offset_deltas: bool = False) -> bytearray:
    """The records section of a compressed batch, inflated no further than its records lead.

    Record i's length prefix says where record i + 1 starts; inflation goes a step past what the
    prefixes read so far require (INFLATE_GROWTH times what was inflated before, from INFLATE_STEP
    to INFLATE_STEP_MAX), and stops at the first prefix that cannot be right: too short
    a record (INVALID_RECORD), declared lengths adding up past ``record count x max_message_bytes``
    (MESSAGE_TOO_LARGE) or past DEFAULT_MAX_DECOMPRESSED_BYTES (CORRUPT_MESSAGE), bytes after the
    last record, or a stream that ends early (INVALID_RECORD). A codec failure is CORRUPT_MESSAGE.
    Runs of same-shaped records are followed a column at a time (``find_run``), the rest one by one.
    Following the prefixes is the walk of the section: with ``check_offset_deltas`` record i must
    also have offset delta i (INVALID_RECORD otherwise), as ``walk_records`` asks of compressed
    batches, so that a batch kept as it is needs no second walk.
    """
    count = batch.record_count
    start = batch.position + RECORD_BATCH_OVERHEAD
    payload = memoryview(batch.buffer)[start : batch.position + batch.size_in_bytes]
    by_count = count * max_message_bytes
    limit = min(by_count, DEFAULT_MAX_DECOMPRESSED_BYTES)
    stream = open_stream(batch.compression, payload, limit + INFLATE_STEP)
    data = bytearray()
    i = 0  # records whose length prefix was read
    end = 0  # where record i starts; once i == count, where the records end
    singles: list[tuple[int, int]] = []  # (index, body position) of records read one by one, their deltas checked at the end
    while True:
        while i < count and end < len(data):
            if count - i >= MIN_RUN:
                run = find_run(data, end, len(data), count - i)
                if run is not None:  # whole records, each prefix leading to the next
                    if check_offset_deltas and not offset_deltas_run_from(data, run, i):
                        raise InvalidRecordError(f"the offset deltas of records {i} to {i + run.count - 1} of the batch in topic partition {partition} "
                                                 f"are not {i} to {i + run.count - 1} in order")
                    i += run.count
                    end = run.end
                    continue
            try:
                length, p = decode_varint(data, end)
            except CorruptRecordError:
                if len(data) - end >= _MAX_VARINT_BYTES:
                    raise InvalidRecordError(f"record {i} of the batch in topic partition {partition} has a malformed length") from None
                break  # the prefix is not all inflated yet
            if length < _MIN_RECORD_BODY:
                raise InvalidRecordError(f"record {i} of length {length} does not fit in its batch in topic partition {partition}")
            if check_offset_deltas:
                singles.append((i, p))
            end = p + length
            i += 1
            if end > limit:
                if limit == by_count:
                    raise RecordTooLargeError(
                        f"The records of the batch in the append to {partition} declare more than {limit} bytes decompressed, "
                        f"more than its {count} record(s) may hold under the maximum configured size of {max_message_bytes} (max.message.bytes)."
                    )
                raise CorruptRecordError(f"{batch.compression.label} data of the batch in topic partition {partition} decompresses to more than {limit} bytes")
        if i == count and len(data) > end:
            raise InvalidRecordError(f"Incorrect declared batch size, bytes remain after the {count} records of the batch in topic partition {partition}")
        if i < count:  # the records' prefixes lead to end; a step past it, the stream's limit not passed
            step = min(max(INFLATE_STEP, INFLATE_GROWTH * len(data)), INFLATE_STEP_MAX)
            want = min(max(end - len(data), 0) + step, max(limit + INFLATE_STEP - len(data), 1))
        else:
            want = max(end - len(data), 1)
        part = stream.read(want)
        if not part:
            if i < count or len(data) != end:
                raise InvalidRecordError(f"the records of the batch in topic partition {partition} end before its {count} records")
            if singles:
                deltas = _encoded_offset_deltas(count)
                for index, body in singles:
                    _check_offset_delta(data, body, index, deltas[index], partition)
            return data
        data += part


def _check_offset_delta(data: bytes | bytearray, body: int, index: int, expected: bytes, partition: str) -> None:
    """Record ``index``, whose body starts at ``body`` (its attributes byte), must have offset delta
    ``index``, whose encoding is ``expected`` (``_encoded_offset_deltas``, as the walk compares it)."""
    try:
        _, p = decode_varint(data, body + 1)  # past the attributes, the timestamp delta
        if data.startswith(expected, p):
            return
        offset_delta, _ = decode_varint(data, p)
    except CorruptRecordError:
        raise InvalidRecordError(f"record {index} of the batch in topic partition {partition} has a malformed timestamp or offset delta") from None
    raise InvalidRecordError(f"record {index} of the batch has offset delta {offset_delta}; the deltas must run in order from 0 in topic partition {partition}")


def _decode_records(batch: RecordBatch, partition: str, max_message_bytes: int) -> list[RecordFields]:
    """Every record of the batch, decompressed once; offset deltas must run 0..n-1."""
    if batch.compression == CompressionType.NONE:
        section = batch.records_bytes()
    else:
        section = inflate_records(batch, partition, max_message_bytes)
    try:
        fields = decode_record_fields(section, batch.record_count)
    except CorruptRecordError as exc:
        raise InvalidRecordError(f"{exc} in topic partition {partition}") from None
    for i, record in enumerate(fields):
        if record[0] != i:
            raise InvalidRecordError(
                f"record {i} of the batch has offset delta {record[0]}; the deltas must run 0..{len(fields) - 1} in order "
                f"in topic partition {partition}"
            )
    return fields


def _check_records(batch: RecordBatch, fields: list[RecordFields], rules: RecordRules, partition: str) -> None:
    """Keys on a compacted topic, then timestamps, record by record; all errors of the batch are
    raised together, as INVALID_TIMESTAMP when any is a timestamp error."""
    key_errors = rules.compacted
    range_check = rules.checks_timestamps
    producer_set_append_time = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    if not (key_errors or range_check or producer_set_append_time):
        return
    create_time_topic = not rules.log_append_time
    errors: list[RecordError] = []
    timestamp_error = False
    base_offset, base_timestamp = batch.base_offset, batch.base_timestamp
    earliest, latest = rules.now - rules.before_max_ms, rules.now + rules.after_max_ms
    for index, (offset_delta, timestamp_delta, key, _, _) in enumerate(fields):
        if key_errors and key is None:
            errors.append(RecordError(index, f"Compacted topic cannot accept message without key in topic partition {partition}."))
            continue
        timestamp = batch.max_timestamp if producer_set_append_time else base_timestamp + timestamp_delta
        if create_time_topic and timestamp != NO_TIMESTAMP:
            if range_check and (timestamp < earliest or timestamp > latest):
                timestamp_error = True
                errors.append(RecordError(
                    index,
                    f"Timestamp {timestamp} of message with offset {base_offset + offset_delta} is out of range. "
                    f"The timestamp should be within [{earliest}, {latest}]",
                ))
        elif producer_set_append_time:
            timestamp_error = True
            errors.append(RecordError(
                index,
                f"Invalid timestamp type in message with offset {base_offset + offset_delta}. Producer should not set timestamp type to LogAppendTime.",
            ))
    if not errors:
        return
    if timestamp_error:
        raise InvalidTimestampError("One or more records have been rejected due to invalid timestamp", errors)
    shown = ", ".join(f"RecordError(batchIndex={e.batch_index}, message='{e.message}')" for e in errors[:3])
    raise InvalidRecordsError(
        f"One or more records have been rejected due to {len(errors)} record errors in total, and only showing the first three errors at most: [{shown}]",
        errors,
    )


def _rebuild(
    batch: RecordBatch, fields: list[RecordFields], codec: CompressionType, base_offset: int, leader_epoch: int, log_append_time: int
) -> bytes:
    """The batch rewritten with ``codec``: same producer, sequence, transaction flag and records."""
    producer_set_append_time = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    base_timestamp = batch.base_timestamp
    records = [
        NewRecord(key, value, batch.max_timestamp if producer_set_append_time else base_timestamp + timestamp_delta, headers, offset_delta)
        for offset_delta, timestamp_delta, key, value, headers in fields
    ]
    return build_batch(
        records,
        base_offset=base_offset,
        compression=codec,
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append_time >= 0 else TimestampType.CREATE_TIME,
        log_append_time=log_append_time if log_append_time >= 0 else None,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        partition_leader_epoch=leader_epoch,
        transactional=batch.is_transactional,
    )
