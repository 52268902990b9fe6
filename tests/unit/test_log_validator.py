"""The leader's checks on appended batches (Kafka's LogValidator), offset assignment and recompression."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.errors import CorruptRecordError, ErrorCode, InvalidRecordError
from kcli.storage import log_validator
from kcli.storage.compression import CompressionType
from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.log_validator import (
    InvalidRecordsError,
    InvalidTimestampError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnsupportedMagicError,
    validate_and_assign_offsets,
    walk_records,
)
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import (
    ControlType,
    NewRecord,
    RecordBatch,
    TimestampType,
    build_batch,
    control_record,
    encode_record,
    end_txn_marker_value,
    iter_batches,
)

NOW = 1_700_000_000_000
PARTITION = "topic-0"


def records(n: int, *, timestamp: int = NOW, key: bytes | None = b"k") -> list[NewRecord]:
    return [NewRecord(None if key is None else key + b"%d" % i, b"value-%d" % i, timestamp + i, (("h", b"%d" % i),)) for i in range(n)]


def with_field(data: bytes, fmt: str, position: int, value: int) -> bytes:
    """``data`` with one header field changed and its CRC made right again."""
    buf = bytearray(data)
    struct.pack_into(fmt, buf, position, value)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def validate(data: bytes, config: LogConfig | None = None, *, first_offset: int = 0, **kwargs):
    return validate_and_assign_offsets(bytearray(data), first_offset=first_offset, config=config or LogConfig(), partition=PARTITION, now=NOW, **kwargs)


def stored_batches(result) -> list[RecordBatch]:
    return list(iter_batches(bytes(result.records)))


# -- the frame -----------------------------------------------------------------------------------------


def test_offsets_epoch_and_summary_are_assigned_in_place_and_the_crc_still_holds():
    buffer = bytearray(build_batch(records(3)) + build_batch(records(2, timestamp=NOW + 50)))
    result = validate_and_assign_offsets(buffer, first_offset=100, config=LogConfig(), partition=PARTITION, now=NOW, leader_epoch=7)
    assert result.records is buffer and not result.recompressed
    assert (result.first_offset, result.last_offset, result.shallow_count, result.record_count) == (100, 104, 2, 5)
    assert (result.max_timestamp, result.offset_of_max_timestamp, result.log_append_time) == (NOW + 51, 104, -1)
    batches = stored_batches(result)
    assert [(b.base_offset, b.partition_leader_epoch) for b in batches] == [(100, 7), (103, 7)]
    for b in batches:
        b.validate()
    assert result.producer_batches == []


def test_a_batch_that_is_not_magic_2_is_an_invalid_record():
    legacy = bytearray(build_batch(records(1)))
    legacy[16] = 1
    with pytest.raises(UnsupportedMagicError, match="only allowed to contain record batches with magic version 2") as caught:
        validate(bytes(legacy))
    assert caught.value.error_code == ErrorCode.INVALID_RECORD
    assert isinstance(caught.value, CorruptRecordError)  # and bytes the log cannot store


def test_a_flipped_byte_fails_the_crc_as_a_corrupt_message():
    data = bytearray(build_batch(records(2)))
    data[-3] ^= 0x40
    with pytest.raises(CorruptRecordError, match=r"Record is corrupt \(stored crc = \d+\) in topic partition topic-0") as caught:
        validate(bytes(data))
    assert caught.value.error_code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("damage", ["cut", "size-too-large", "size-too-small", "trailing-bytes", "empty"])
def test_batch_lengths_must_match_the_bytes(damage):
    data = build_batch(records(2))
    if damage == "cut":
        bad = data[:-1]
    elif damage == "size-too-large":
        bad = bytes(data[:8]) + struct.pack(">i", len(data)) + data[12:]
    elif damage == "size-too-small":
        bad = bytes(data[:8]) + struct.pack(">i", 10) + data[12:]
    elif damage == "trailing-bytes":
        bad = data + data[:40]
    else:
        bad = b""
    with pytest.raises(CorruptRecordError):
        validate(bad)


def test_a_client_batch_must_start_at_offset_0_but_a_coordinators_need_not():
    data = build_batch(records(1), base_offset=5)
    with pytest.raises(InvalidRecordError, match="should be 0, but it is 5") as caught:
        validate(data)
    assert caught.value.error_code == ErrorCode.INVALID_RECORD
    assert validate(data, origin=AppendOrigin.COORDINATOR, first_offset=40).first_offset == 40


@pytest.mark.parametrize(
    ("fmt", "position", "value", "message"),
    [
        (">i", 57, 0, "Invalid reported count for record batch: 0"),
        (">i", 23, -1, r"invalid offset range: \[0, -1\]"),
        (">i", 23, 5, r"Inconsistent batch offset range \[0, 5\] and count of records 3"),
        (">i", 57, 4, r"Inconsistent batch offset range \[0, 2\] and count of records 4"),
    ],
)
def test_a_client_batch_header_must_agree_with_its_record_count(fmt, position, value, message):
    with pytest.raises(InvalidRecordError, match=message):
        validate(with_field(build_batch(records(3)), fmt, position, value))


def test_clients_cannot_write_control_batches_but_the_coordinator_can():
    marker = build_batch(
        [control_record(ControlType.COMMIT, end_txn_marker_value(3), NOW)], control=True, transactional=True, producer_id=9, producer_epoch=0
    )
    with pytest.raises(InvalidRecordError, match="Clients are not allowed to write control records"):
        validate(marker)
    result = validate(marker, origin=AppendOrigin.COORDINATOR, config=LogConfig(compression_type="gzip"))
    # A control batch is never recompressed.
    assert stored_batches(result)[0].compression == CompressionType.NONE


def test_a_producer_id_needs_a_sequence():
    data = build_batch(records(1), producer_id=4, producer_epoch=0, base_sequence=-1)
    with pytest.raises(InvalidRecordError, match="Invalid sequence number -1 in record batch with producerId 4"):
        validate(data)


def test_max_message_bytes_answers_message_too_large():
    data = build_batch(records(3))
    with pytest.raises(RecordTooLargeError, match="exceeds the maximum configured value") as caught:
        validate(data, LogConfig(max_message_bytes=len(data) - 1))
    assert caught.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    validate(data, LogConfig(max_message_bytes=len(data)))


def test_a_recompressed_batch_is_checked_against_max_message_bytes_again():
    # Incompressible values: gzip makes the batch larger than the producer's uncompressed one.
    data = build_batch([NewRecord(b"k", random.Random(1).randbytes(600), NOW)])
    with pytest.raises(RecordTooLargeError, match="Message batch size is"):
        validate(data, LogConfig(max_message_bytes=len(data), compression_type="gzip"))


def test_an_append_larger_than_a_segment_answers_record_list_too_large(tmp_path: Path):
    data = build_batch(records(1)) * 3
    log = Log.open(tmp_path / "topic-0", LogConfig(segment_bytes=len(data) - 1), clock=lambda: NOW)
    with pytest.raises(RecordBatchTooLargeError, match="exceeds the maximum configured segment size") as caught:
        log.append(data)
    assert caught.value.error_code == ErrorCode.RECORD_LIST_TOO_LARGE
    assert (log.log_end_offset, log.size) == (0, 0)


# -- the records ---------------------------------------------------------------------------------------


def test_offset_deltas_of_a_compressed_batch_must_run_from_0_in_order():
    shuffled = [r._replace(offset_delta=d) for r, d in zip(records(3), (0, 2, 1))]
    data = build_batch(shuffled, compression=CompressionType.LZ4, last_offset_delta=2)
    with pytest.raises(InvalidRecordError, match="record 1 of the batch has offset delta 2") as caught:
        validate(data)
    assert caught.value.error_code == ErrorCode.INVALID_RECORD


def test_offset_deltas_of_an_uncompressed_batch_are_kept_as_kafka_keeps_them(tmp_path):
    # Kafka's LogValidator does not compare an uncompressed record's delta with its place.
    shuffled = [r._replace(offset_delta=d) for r, d in zip(records(3), (0, 2, 1))]
    data = build_batch(shuffled, last_offset_delta=2)
    log = Log.open(tmp_path / "t-0")
    info = log.append(data)
    assert (info.first_offset, info.last_offset) == (0, 2)
    stored = log.read(0, 1 << 20).read()
    assert stored[61:] == data[61:]  # the records are stored as they came
    log.close()


def test_the_records_must_fill_exactly_the_batch():
    three = build_batch(records(3))
    # The header claims two records (consistently), but three are there.
    two = with_field(with_field(three, ">i", 57, 2), ">i", 23, 1)
    with pytest.raises(InvalidRecordError, match="bytes remain after the 2 records"):
        validate(two)
    # A record length that runs past the batch.
    body = bytearray(build_batch(records(1)))
    body[61] = 0x7E  # length prefix 63: more than the record holds
    with pytest.raises(InvalidRecordError, match="does not fit in its batch"):
        validate(with_field(bytes(body), ">i", 57, 1))


def test_walk_records_follows_length_prefixes():
    data = build_batch(records(70))
    walk_records(data, 61, len(data), 70)
    with pytest.raises(InvalidRecordError, match="bytes remain after the 69 records"):
        walk_records(data, 61, len(data), 69)
    with pytest.raises(InvalidRecordError, match="record 70 runs past the end"):
        walk_records(data, 61, len(data), 71)
    big = build_batch([NewRecord(key=None, value=b"v" * 200, timestamp=1)] * 3)  # two-byte length prefixes
    walk_records(big, 61, len(big), 3)
    with pytest.raises(InvalidRecordError, match="does not fit in its batch"):
        walk_records(big[:-1], 61, len(big) - 1, 3)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD])
def test_a_batch_no_rule_needs_is_walked_not_decoded(monkeypatch, codec):
    def no_decoding(*args, **kwargs):
        raise AssertionError("records were decoded")

    monkeypatch.setattr(log_validator, "decode_record_fields", no_decoding)
    result = validate(build_batch(records(5), compression=codec))
    assert result.record_count == 5
    with pytest.raises(AssertionError, match="records were decoded"):
        validate(build_batch(records(5), compression=codec), LogConfig(cleanup_policy=("compact",)))


def test_a_compressed_batch_whose_records_do_not_fill_it_is_refused():
    from kcli.storage.compression import compress

    section = bytes(build_batch(records(3)))[61:]
    shorter = bytearray(build_batch(records(2), compression=CompressionType.LZ4))
    # The same header (count 2) over a compressed section holding 3 records.
    data = bytes(shorter[:61]) + compress(CompressionType.LZ4, section)
    data = with_field(data, ">i", 8, len(data) - 12)
    with pytest.raises(InvalidRecordError, match="bytes remain after the 2 records"):
        validate(data)


def test_a_compacted_topic_rejects_records_without_keys_and_names_each():
    data = build_batch([NewRecord(b"a", b"1", NOW), NewRecord(None, b"2", NOW), NewRecord(None, b"3", NOW)])
    config = LogConfig(cleanup_policy=("compact", "delete"))
    with pytest.raises(InvalidRecordsError, match="rejected due to 2 record errors") as caught:
        validate(data, config)
    assert caught.value.error_code == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in caught.value.record_errors] == [1, 2]
    assert all(e.message == "Compacted topic cannot accept message without key in topic partition topic-0." for e in caught.value.record_errors)
    validate(data)  # a delete-only topic takes them
    validate(build_batch(records(3), compression=CompressionType.SNAPPY), config)


def test_create_time_timestamps_must_fall_within_before_and_after_max_ms():
    config = LogConfig(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=10)
    ok = [NewRecord(b"a", b"", NOW - 1000), NewRecord(b"b", b"", NOW + 10), NewRecord(b"c", b"", -1)]
    validate(build_batch(ok), config)
    bad = [NewRecord(b"a", b"", NOW - 1001), NewRecord(b"b", b"", NOW), NewRecord(b"c", b"", NOW + 11)]
    with pytest.raises(InvalidTimestampError, match="rejected due to invalid timestamp") as caught:
        validate(build_batch(bad), config)
    assert caught.value.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in caught.value.record_errors] == [0, 2]
    assert caught.value.record_errors[0].message == (
        f"Timestamp {NOW - 1001} of message with offset 0 is out of range. The timestamp should be within [{NOW - 1000}, {NOW + 10}]"
    )
    # A LogAppendTime topic does not look at the producer's timestamps.
    validate(build_batch(bad), LogConfig(message_timestamp_type="LogAppendTime", message_timestamp_before_max_ms=1000), log_append_time=NOW)


def test_the_old_difference_max_ms_still_bounds_both_sides():
    config = LogConfig(message_timestamp_difference_max_ms=100, message_timestamp_after_max_ms=5)
    validate(build_batch([NewRecord(b"a", b"", NOW - 100), NewRecord(b"b", b"", NOW + 5)]), config)
    for timestamp in (NOW - 101, NOW + 6):
        with pytest.raises(InvalidTimestampError):
            validate(build_batch([NewRecord(b"a", b"", timestamp)]), config)


def test_a_producer_may_not_stamp_log_append_time():
    data = build_batch(records(2), timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=NOW)
    with pytest.raises(InvalidTimestampError) as caught:
        validate(data, LogConfig(message_timestamp_type="LogAppendTime"), log_append_time=NOW)
    assert [e.batch_index for e in caught.value.record_errors] == [0, 1]
    assert "Producer should not set timestamp type to LogAppendTime" in caught.value.record_errors[0].message
    validate(data)  # on a CreateTime topic its timestamp is range-checked instead, and accepted


def test_log_append_time_is_stamped_and_reported():
    result = validate(build_batch(records(2)) + build_batch(records(1)), LogConfig(message_timestamp_type="LogAppendTime"), log_append_time=777)
    assert (result.max_timestamp, result.offset_of_max_timestamp, result.log_append_time) == (777, 2, 777)
    for b in stored_batches(result):
        b.validate()
        assert (b.timestamp_type, b.max_timestamp) == (TimestampType.LOG_APPEND_TIME, 777)


# -- recompression -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "topic", "stored"),
    [
        (CompressionType.NONE, "gzip", CompressionType.GZIP),
        (CompressionType.NONE, "zstd", CompressionType.ZSTD),
        (CompressionType.LZ4, "uncompressed", CompressionType.NONE),
        (CompressionType.SNAPPY, "lz4", CompressionType.LZ4),
        (CompressionType.GZIP, "producer", CompressionType.GZIP),
        (CompressionType.ZSTD, "zstd", CompressionType.ZSTD),
    ],
)
def test_the_topic_codec_is_applied_and_the_content_kept(source, topic, stored):
    originals = records(4) + [NewRecord(None, None, NOW + 9, (("empty", None),))]
    data = build_batch(originals, compression=source, producer_id=42, producer_epoch=3, base_sequence=17, transactional=True)
    result = validate(data, LogConfig(compression_type=topic), first_offset=500, leader_epoch=6)
    assert result.recompressed == (source != stored)
    (batch,) = stored_batches(result)
    batch.validate()
    assert batch.compression == stored
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (500, 504, 6)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (42, 3, 17, True)
    assert (batch.timestamp_type, batch.max_timestamp) == (TimestampType.CREATE_TIME, NOW + 9)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records()] == [
        (500 + i, r.timestamp, r.key, r.value, tuple(r.headers)) for i, r in enumerate(originals)
    ]
    assert [(b.producer_id, b.base_offset) for b in result.producer_batches] == [(42, 500)]
    assert (result.first_offset, result.last_offset, result.max_timestamp, result.offset_of_max_timestamp) == (500, 504, NOW + 9, 504)


def test_a_recompressed_batch_on_a_log_append_time_topic_carries_the_append_time():
    data = build_batch(records(3), compression=CompressionType.NONE)
    result = validate(data, LogConfig(compression_type="lz4", message_timestamp_type="LogAppendTime"), log_append_time=4242)
    (batch,) = stored_batches(result)
    assert (batch.compression, batch.timestamp_type, batch.max_timestamp) == (CompressionType.LZ4, TimestampType.LOG_APPEND_TIME, 4242)
    assert {r.timestamp for r in batch.records()} == {4242}
    assert result.max_timestamp == 4242


def test_log_append_rewrites_with_the_topic_codec(tmp_path: Path):
    log = Log.open(tmp_path / "topic-0", LogConfig(compression_type="gzip"), clock=lambda: NOW)
    info = log.append(build_batch(records(3)), leader_epoch=2)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 2, 3)
    (batch,) = list(iter_batches(log.read(0, 1 << 20).read()))
    assert (batch.compression, [r.value for r in batch.records()]) == (CompressionType.GZIP, [b"value-0", b"value-1", b"value-2"])
    assert log.append(build_batch(records(1))).first_offset == 3


def walk_one_by_one(data: bytes, start: int, end: int, count: int, check_offset_deltas: bool) -> None:
    pos = log_validator._walk(data, start, end, 0, count, count, check_offset_deltas)
    if pos != end:
        raise InvalidRecordError(f"{end - pos} bytes remain")


def uniform_section(count: int, value_size: int, deltas: list[int] | None = None) -> bytes:
    deltas = deltas or list(range(count))
    return b"".join(encode_record(NewRecord(None, b"v" * value_size, 1000 + i // 50), d, 1000) for i, d in enumerate(deltas))


@pytest.mark.parametrize("count", [5, 300, 9000])
def test_runs_of_one_shape_are_walked_as_one_by_one_walks_them(count):
    section = uniform_section(count, 100)
    walk_records(section, 0, len(section), count, check_offset_deltas=True)
    followed = section + section  # a batch inside a larger buffer: records past its end are not its own
    walk_records(followed, 0, len(section), count)
    with pytest.raises(InvalidRecordError, match=f"record {count} "):
        walk_records(followed, 0, len(section), count + 1)
    swapped = list(range(count))
    swapped[count // 2], swapped[count // 2 + 1] = swapped[count // 2 + 1], swapped[count // 2]
    bad = uniform_section(count, 100, swapped)
    walk_records(bad, 0, len(bad), count)  # uncompressed batches keep their deltas
    with pytest.raises(InvalidRecordError, match=f"record {count // 2} of the batch has offset delta {count // 2 + 1}"):
        walk_records(bad, 0, len(bad), count, check_offset_deltas=True)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_damaged_section_is_walked_as_one_by_one_walks_it(data):
    count = data.draw(st.integers(4, 120))
    buffer = bytearray(uniform_section(count, data.draw(st.sampled_from([0, 7, 100]))))
    for _ in range(data.draw(st.integers(1, 3))):
        buffer[data.draw(st.integers(0, len(buffer) - 1))] = data.draw(st.integers(0, 255))
    section = bytes(buffer[: len(buffer) - data.draw(st.integers(0, 2))])
    claimed = count + data.draw(st.integers(-1, 1))
    for check in (False, True):
        try:
            walk_one_by_one(section, 0, len(section), claimed, check)
        except InvalidRecordError:
            with pytest.raises(InvalidRecordError):
                walk_records(section, 0, len(section), claimed, check_offset_deltas=check)
        else:
            walk_records(section, 0, len(section), claimed, check_offset_deltas=check)


# -- decompression bounded by what the batch can hold -------------------------------------------------


class _CountingStreams:
    """open_stream, counting the bytes every stream gives out."""

    def __init__(self, monkeypatch) -> None:
        self.produced = 0
        real = log_validator.open_stream

        def counting(*args, **kwargs):
            stream = real(*args, **kwargs)
            read = stream.read

            def counted(n):
                part = read(n)
                self.produced += len(part)
                return part

            stream.read = counted
            return stream

        monkeypatch.setattr(log_validator, "open_stream", counting)


@pytest.mark.parametrize("codec", [CompressionType.ZSTD, CompressionType.GZIP, CompressionType.LZ4])
def test_a_decompression_bomb_is_refused_after_inflating_a_step_not_the_whole_bomb(monkeypatch, codec):
    from kcli.storage.compression import LZ4_WHOLE_BLOCKS
    from tests.abuse_clients import bomb_batch

    streams = _CountingStreams(monkeypatch)
    bomb = bomb_batch(codec, 128 << 20)  # 128 MiB of zeros: record 0 would have length 0
    with pytest.raises(InvalidRecordError, match="record 0 of length 0"):
        validate(bomb)
    # An LZ4 stream inflates whole blocks: the first step is one block.
    assert streams.produced <= (LZ4_WHOLE_BLOCKS if codec is CompressionType.LZ4 else 2 * log_validator.INFLATE_STEP)


def test_runs_of_records_are_followed_as_they_inflate_and_a_bad_record_after_them_stops_the_inflation(monkeypatch):
    """Same-shaped records are followed a run at a time: the first bad prefix after them (a record
    of length 0, the start of 64 MiB of zeros) is still found, and inflation has not run further
    ahead of the checked records than INFLATE_GROWTH times as far as they reach."""
    from kcli.storage.compression import compress

    streams = _CountingStreams(monkeypatch)
    good = [NewRecord(None, b"value-%06d" % i, NOW) for i in range(4000)]
    section = build_batch(good)[61:]
    template = build_batch(good[:1], compression=CompressionType.LZ4)
    data = template[:61] + compress(CompressionType.LZ4, section + bytes(64 << 20))
    data = with_field(data, ">i", 8, len(data) - 12)  # the batch's length
    data = with_field(data, ">i", 23, 4000)  # its last offset delta
    data = with_field(data, ">i", 57, 4001)  # its record count: one more than the good ones
    with pytest.raises(InvalidRecordError, match="record 4000 of length 0"):
        validate(data)
    assert streams.produced <= (1 + log_validator.INFLATE_GROWTH) * len(section) + 2 * log_validator.INFLATE_STEP


def test_records_declaring_more_than_their_count_may_hold_are_too_large_before_they_are_inflated(monkeypatch):
    from kcli.storage.compression import compress
    from kcli.storage.varint import encode_varint

    streams = _CountingStreams(monkeypatch)
    # One record declaring 10 MB, followed by 10 MB of zeros: a 10 KB payload.
    section = encode_varint(10_000_000) + bytes(10_000_000)
    template = bytearray(build_batch(records(1), compression=CompressionType.ZSTD))
    data = bytes(template[:61]) + compress(CompressionType.ZSTD, section)
    data = with_field(data, ">i", 8, len(data) - 12)
    with pytest.raises(log_validator.RecordTooLargeError, match="max.message.bytes") as raised:
        validate(data, LogConfig(max_message_bytes=1_000_000))
    assert raised.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert streams.produced <= 2 * log_validator.INFLATE_STEP


def test_a_compressed_batch_larger_than_max_message_bytes_once_inflated_is_accepted_within_its_record_count():
    # Three records of 600 KB each: 1.8 MB inflated, a few KB compressed, under 3 x max.message.bytes.
    batch = build_batch([NewRecord(b"k", bytes(600_000), NOW) for _ in range(3)], compression=CompressionType.ZSTD)
    assert len(batch) < 1_000_000
    result = validate(batch, LogConfig(max_message_bytes=1_000_000))
    assert result.record_count == 3


@pytest.mark.parametrize("codec", [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD])
def test_a_compressed_section_that_ends_before_its_records_is_invalid(codec):
    from kcli.storage.compression import compress

    section = bytes(build_batch(records(2)))[61:]
    template = bytearray(build_batch(records(3), compression=codec))  # count 3 over a section of 2 records
    data = bytes(template[:61]) + compress(codec, section)
    data = with_field(data, ">i", 8, len(data) - 12)
    with pytest.raises(InvalidRecordError, match="end before its 3 records"):
        validate(data)


@pytest.mark.parametrize("swapped", [1, 40, 63, 64, 200, 299])
def test_a_run_of_compressed_records_whose_offset_deltas_are_out_of_order_is_invalid(swapped):
    """Same-shaped records are checked a run at a time while the batch inflates: two offset
    deltas swapped anywhere in the run (within one varint width, or across 63/64) are found."""
    deltas = list(range(300))
    deltas[swapped], deltas[swapped - 1] = deltas[swapped - 1], deltas[swapped]
    shuffled = [NewRecord(None, b"value-%06d" % i, NOW, offset_delta=d) for i, d in enumerate(deltas)]
    data = build_batch(shuffled, compression=CompressionType.LZ4, last_offset_delta=299)
    with pytest.raises(InvalidRecordError, match="offset delta") as caught:
        validate(data)
    assert caught.value.error_code == ErrorCode.INVALID_RECORD
    validate(build_batch([r._replace(offset_delta=i) for i, r in enumerate(shuffled)], compression=CompressionType.LZ4))
