"""Record formats against the layout facts (Kafka's RecordBatch v2 and legacy messages)."""

from __future__ import annotations

import gzip
import struct
import zlib

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.errors import CorruptRecordError
from kcli.storage.compression import CompressionType
from kcli.storage.records import (
    ControlType,
    LegacyBatch,
    NewRecord,
    RecordBatch,
    TimestampType,
    build_batch,
    control_record,
    end_txn_marker_value,
    iter_batches,
    parse_control_record,
    read_batch,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)
from kcli.storage.varint import decode_unsigned_varint, decode_varint, encode_unsigned_varint, encode_varint, varint_size

# -- varints --------------------------------------------------------------------------------------

# Zig-zag mapping and base-128 groups, from the protobuf encoding Kafka adopted (KIP-98).
VARINT_GOLDEN = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (2**31 - 1, "feffffff0f"),
    (-(2**31), "ffffffff0f"),
    (2**63 - 1, "feffffffffffffffff01"),
    (-(2**63), "ffffffffffffffffff01"),
]


@pytest.mark.parametrize(("value", "hexbytes"), VARINT_GOLDEN)
def test_varint_golden_bytes(value, hexbytes):
    assert encode_varint(value).hex() == hexbytes
    assert decode_varint(bytes.fromhex(hexbytes), 0) == (value, len(hexbytes) // 2)
    assert varint_size(value) == len(hexbytes) // 2


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trip(value):
    data = b"\xaa" + encode_varint(value) + b"\xbb"
    assert decode_varint(data, 1) == (value, len(data) - 1)


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_unsigned_varint_round_trip(value):
    data = encode_unsigned_varint(value)
    assert decode_unsigned_varint(data, 0) == (value, len(data))


def test_varint_errors():
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\xff" * 11, 0)


# -- RecordBatch v2: golden facts -------------------------------------------------------------------


def test_crc_matches_a_batch_printed_by_kafka():
    """Kafka 2.x printed: CreateTime: 1599887411245 size: 84 magic: 2 crc: 3888717251, record
    offset 0, key DemoKey, payload DemoValue, sequence -1 (reference section 3.4)."""
    data = build_batch([NewRecord(b"DemoKey", b"DemoValue", 1599887411245)])
    batch = RecordBatch(data)
    assert batch.size_in_bytes == 84
    assert batch.crc == 3888717251
    assert batch.is_valid()
    (record,) = batch.records()
    assert (record.offset, record.timestamp, record.key, record.value, record.sequence) == (0, 1599887411245, b"DemoKey", b"DemoValue", -1)


def test_header_layout_positions():
    data = build_batch(
        [NewRecord(b"k", b"v", 1000), NewRecord(None, b"w", 1005)],
        base_offset=42, producer_id=7, producer_epoch=3, base_sequence=11, partition_leader_epoch=5,
        compression=CompressionType.NONE,
    )
    assert struct.unpack_from(">q", data, 0)[0] == 42
    assert struct.unpack_from(">i", data, 8)[0] == len(data) - 12
    assert struct.unpack_from(">i", data, 12)[0] == 5
    assert data[16] == 2
    assert struct.unpack_from(">I", data, 17)[0] == crc32c(data[21:])
    assert struct.unpack_from(">h", data, 21)[0] == 0
    assert struct.unpack_from(">i", data, 23)[0] == 1  # lastOffsetDelta
    assert struct.unpack_from(">qq", data, 27) == (1000, 1005)
    assert struct.unpack_from(">qhii", data, 43) == (7, 3, 11, 2)
    # First record: length 8 (zig-zag 0x10), attributes 0, timestampDelta 0, offsetDelta 0,
    # key length 1 (0x02) "k", value length 1 "v", 0 headers.
    assert data[61:70] == bytes.fromhex("10 00 00 00 02") + b"k" + bytes.fromhex("02") + b"v" + bytes.fromhex("00")
    batch = RecordBatch(data)
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (42, 43, 2)
    assert (batch.base_sequence, batch.last_sequence) == (11, 12)


@pytest.mark.parametrize(
    ("kwargs", "bits"),
    [
        ({"compression": CompressionType.GZIP}, 0x01),
        ({"compression": CompressionType.ZSTD}, 0x04),
        ({"timestamp_type": TimestampType.LOG_APPEND_TIME, "log_append_time": 9}, 0x08),
        ({"transactional": True}, 0x10),
        ({"control": True}, 0x20),
        ({"delete_horizon_ms": 123}, 0x40),
    ],
)
def test_attribute_bits(kwargs, bits):
    data = build_batch([NewRecord(b"k", b"v", 5)], **kwargs)
    assert struct.unpack_from(">h", data, 21)[0] == bits
    batch = RecordBatch(data)
    batch.validate()
    assert batch.is_transactional == bool(bits & 0x10)
    assert batch.is_control == bool(bits & 0x20)
    assert batch.delete_horizon_ms == (123 if bits & 0x40 else None)


def test_delete_horizon_is_the_base_timestamp_and_records_keep_their_timestamps():
    data = build_batch([NewRecord(b"k", None, 500), NewRecord(b"j", b"x", 700)], delete_horizon_ms=1000)
    batch = RecordBatch(data)
    assert batch.base_timestamp == 1000
    assert [r.timestamp for r in batch.records()] == [500, 700]
    assert batch.records()[0].value is None


def test_log_append_time_overrides_record_timestamps():
    data = build_batch([NewRecord(b"a", b"1", 10), NewRecord(b"b", b"2", 20)],
                       timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=99)
    batch = RecordBatch(data)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 99
    assert [r.timestamp for r in batch.records()] == [99, 99]


def test_sequence_wraps_at_int32_max():
    data = build_batch([NewRecord(None, b"a", 1), NewRecord(None, b"b", 1), NewRecord(None, b"c", 1)], producer_id=1, base_sequence=2**31 - 2)
    batch = RecordBatch(data)
    assert batch.last_sequence == 0
    assert [r.sequence for r in batch.records()] == [2**31 - 2, 2**31 - 1, 0]


def test_headers_round_trip():
    headers = (("trace", b"abc"), ("empty", b""), ("nothing", None), ("ünï", b"\x00\xff"))
    batch = RecordBatch(build_batch([NewRecord(b"k", b"v", 1, headers)]))
    assert batch.records()[0].headers == headers


def test_commit_marker_control_record():
    marker = control_record(ControlType.COMMIT, end_txn_marker_value(17), 55)
    data = build_batch([marker], producer_id=4, producer_epoch=0, control=True, transactional=True)
    # Key: version 0, type 1 (COMMIT); value: version 0, coordinator epoch 17.
    record = RecordBatch(data).records()[0]
    assert record.key == bytes.fromhex("0000 0001")
    assert record.value == bytes.fromhex("0000 00000011")
    assert parse_control_record(record.key, record.value, record.offset) == (ControlType.COMMIT, 17)


def test_patches_outside_the_crc_keep_the_batch_valid():
    data = bytearray(build_batch([NewRecord(b"k", b"v", 1)]))
    set_base_offset(data, 0, 1234)
    set_partition_leader_epoch(data, 0, 9)
    batch = RecordBatch(data)
    assert (batch.base_offset, batch.partition_leader_epoch) == (1234, 9)
    assert batch.is_valid()
    set_log_append_time(data, 0, 777)
    batch = RecordBatch(data)
    assert batch.is_valid() and batch.max_timestamp == 777 and batch.timestamp_type is TimestampType.LOG_APPEND_TIME


# -- round trips --------------------------------------------------------------------------------------

maybe_bytes = st.none() | st.binary(max_size=64)
new_records = st.lists(
    st.builds(
        NewRecord,
        key=maybe_bytes,
        value=maybe_bytes,
        timestamp=st.integers(min_value=0, max_value=2**45),
        headers=st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3).map(tuple),
        offset_delta=st.none(),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(new_records, st.sampled_from(list(CompressionType)), st.integers(min_value=0, max_value=2**40))
def test_batch_round_trip(records, codec, base_offset):
    data = build_batch(records, base_offset=base_offset, compression=codec)
    batch = RecordBatch(data)
    batch.validate()
    assert batch.compression is codec
    assert batch.max_timestamp == max(r.timestamp for r in records)
    decoded = batch.records()
    assert [r.offset for r in decoded] == list(range(base_offset, base_offset + len(records)))
    assert [(r.key, r.value, r.timestamp, r.headers) for r in decoded] == [
        (r.key, r.value, r.timestamp, tuple(r.headers)) for r in records
    ]


def test_explicit_offset_deltas_leave_gaps_as_compaction_does():
    records = [NewRecord(b"a", b"1", 1, offset_delta=0), NewRecord(b"b", b"2", 2, offset_delta=3)]
    batch = RecordBatch(build_batch(records, base_offset=10, last_offset_delta=4))
    assert [r.offset for r in batch.records()] == [10, 13]
    assert (batch.last_offset, batch.record_count) == (14, 2)


# -- corruption -----------------------------------------------------------------------------------------


def _sample_batch() -> bytes:
    return build_batch([NewRecord(b"key-%d" % i, b"value-%d" % i, 1000 + i) for i in range(5)])


@pytest.mark.parametrize("position", [21, 30, 61, 70, 100])
def test_flipped_byte_fails_the_crc(position):
    data = bytearray(_sample_batch())
    data[position] ^= 0x01
    batch = RecordBatch(data)
    assert not batch.is_valid()
    with pytest.raises(CorruptRecordError, match="crc"):
        batch.validate()


def test_truncated_batch_is_an_error():
    data = _sample_batch()
    with pytest.raises(CorruptRecordError):
        RecordBatch(data[:40])
    with pytest.raises(CorruptRecordError, match="past the end"):
        RecordBatch(data[:-1]).validate()


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=61, max_value=150), st.integers(min_value=1, max_value=255))
def test_garbled_records_raise_only_corrupt_record_error(position, xor):
    data = bytearray(_sample_batch())
    position = min(position, len(data) - 1)
    data[position] ^= xor
    try:
        RecordBatch(data).records()
    except CorruptRecordError:
        pass


def test_iter_batches_skips_a_partial_tail_and_rejects_a_tiny_size():
    one = _sample_batch()
    two = build_batch([NewRecord(None, b"x", 1)], base_offset=5)
    buf = one + two + two[:30]
    assert [b.base_offset for b in iter_batches(buf)] == [0, 5]
    bad = one + struct.pack(">qib", 5, 3, 2) + b"\x00" * 20
    with pytest.raises(CorruptRecordError, match="smaller than minimum record overhead"):
        list(iter_batches(bad))


def test_unknown_magic():
    data = bytearray(_sample_batch())
    data[16] = 7
    with pytest.raises(CorruptRecordError, match="magic 7"):
        read_batch(data)


# -- legacy messages (magic 0 and 1), built by hand from the layout -----------------------------------------


def legacy_message(offset: int, magic: int, key: bytes | None, value: bytes | None, attributes: int = 0, timestamp: int = -1) -> bytes:
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    crc = zlib.crc32(body)
    message = struct.pack(">I", crc) + body
    return struct.pack(">qi", offset, len(message)) + message


def test_legacy_v0_plain_message():
    data = legacy_message(3, 0, b"k", b"hello")
    batch = read_batch(data)
    assert isinstance(batch, LegacyBatch)
    assert (batch.magic, batch.last_offset, batch.size_in_bytes) == (0, 3, 12 + 14 + 1 + 5)
    assert batch.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE and batch.max_timestamp == -1
    assert batch.is_valid()
    (record,) = batch.records()
    assert (record.offset, record.key, record.value, record.crc, record.valid) == (3, b"k", b"hello", batch.crc, True)


def test_legacy_v1_gzip_wrapper_has_relative_inner_offsets():
    inner = b"".join(legacy_message(i, 1, None, b"v%d" % i, timestamp=100 + i) for i in range(3))
    wrapper = legacy_message(12, 1, None, gzip.compress(inner), attributes=1, timestamp=102)
    batch = read_batch(wrapper)
    assert batch.compression is CompressionType.GZIP
    assert batch.is_valid()
    records = batch.records()
    assert [r.offset for r in records] == [10, 11, 12]
    assert [r.value for r in records] == [b"v0", b"v1", b"v2"]
    assert [r.timestamp for r in records] == [100, 101, 102]
    assert batch.base_offset == 10 and batch.last_offset == 12


def test_legacy_v1_log_append_time_wrapper_stamps_inner_messages():
    inner = b"".join(legacy_message(i, 1, None, b"x", timestamp=5) for i in range(2))
    wrapper = legacy_message(1, 1, None, gzip.compress(inner), attributes=1 | 0x08, timestamp=900)
    assert [r.timestamp for r in read_batch(wrapper).records()] == [900, 900]


def test_legacy_v0_gzip_wrapper_has_absolute_inner_offsets():
    inner = b"".join(legacy_message(20 + i, 0, None, b"v") for i in range(2))
    wrapper = legacy_message(21, 0, None, gzip.compress(inner), attributes=1)
    assert [r.offset for r in read_batch(wrapper).records()] == [20, 21]


def test_legacy_crc_mismatch():
    data = bytearray(legacy_message(0, 1, b"k", b"v", timestamp=1))
    data[-1] ^= 0xFF
    batch = read_batch(data)
    assert not batch.is_valid()
    assert batch.records()[0].valid is False
    with pytest.raises(CorruptRecordError):
        batch.validate()


def test_mixed_magic_message_set():
    buf = legacy_message(0, 0, None, b"a") + legacy_message(1, 1, None, b"b", timestamp=3) + build_batch([NewRecord(None, b"c", 4)], base_offset=2)
    assert [(b.magic, b.last_offset) for b in iter_batches(buf)] == [(0, 0), (1, 1), (2, 2)]


def test_peek_batch_header_reads_magic_at_byte_16():
    from kcli.storage.records import peek_batch_header

    data = build_batch([NewRecord(None, b"x", 1)], base_offset=9, partition_leader_epoch=0x7F000000)
    assert peek_batch_header(data, 0) == (9, len(data), 2)
