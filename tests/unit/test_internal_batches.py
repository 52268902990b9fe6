"""Batches the broker builds itself (``records.MemoryRecordsBuilder``) and their append without re-validation.

Every check compares with the path a client's bytes take: ``build_batch`` for the bytes, and
``validate_and_assign_offsets`` / ``Log.append`` of plain bytes for what is stored and reported.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.errors import ErrorCode, InvalidRecordError, KcliError
from kcli.storage import log as log_module
from kcli.storage.compression import CompressionType
from kcli.storage.log import Log, RecordBatchTooLargeError, RecordTooLargeError
from kcli.storage.log_config import LogConfig
from kcli.storage.log_validator import (
    InvalidRecordsError,
    InvalidTimestampError,
    assign_offsets_to_built_batch,
    validate_and_assign_offsets,
)
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import (
    MemoryRecordsBuilder,
    NewRecord,
    RecordBatch,
    build_batch,
    iter_batches,
    set_base_offset,
    set_partition_leader_epoch,
)
from kcli.storage.varint import NULL_VARINT, SMALL_VARINTS, SMALL_VARINTS_LIMIT, encode_varint

NOW = 1_700_000_000_000
CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]


def test_the_small_varint_table_holds_each_encoding():
    assert [SMALL_VARINTS[n] for n in range(SMALL_VARINTS_LIMIT)] == [encode_varint(n) for n in range(SMALL_VARINTS_LIMIT)]
    assert (SMALL_VARINTS[63], SMALL_VARINTS[64], NULL_VARINT) == (b"\x7e", b"\x80\x01", b"\x01")


# -- building ------------------------------------------------------------------------------------------

# Lengths and deltas on both sides of the one-byte (64) and table (1024) limits.
_blobs = st.one_of(
    st.none(),
    st.binary(max_size=70),
    st.integers(min_value=1000, max_value=1100).map(lambda n: b"b" * n),
    st.integers(min_value=8190, max_value=8200).map(lambda n: b"c" * n),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_blobs, _blobs), max_size=20), st.sampled_from(CODECS))
def test_pairs_at_one_timestamp_are_byte_for_byte_build_batch(pairs, codec):
    built = MemoryRecordsBuilder(pairs, NOW, codec)
    assert bytes(built) == build_batch([NewRecord(k, v, NOW) for k, v in pairs], compression=codec)
    expected_timestamp = NOW if pairs else -1
    assert (built.record_count, built.timestamp) == (len(pairs), expected_timestamp)
    assert built.null_keys == any(k is None for k, _ in pairs)


def test_offset_deltas_past_the_table_and_the_one_byte_form_are_encoded():
    pairs = [(b"k%d" % i, b"v") for i in range(SMALL_VARINTS_LIMIT + 10)]
    built = MemoryRecordsBuilder(pairs, NOW)
    assert bytes(built) == build_batch([NewRecord(k, v, NOW) for k, v in pairs])
    assert [r.offset for r in RecordBatch(built).records()] == list(range(len(pairs)))


# -- offsets from the facts ----------------------------------------------------------------------------


def _pairs(count: int, key: bytes | None = b"key") -> list[tuple[bytes | None, bytes]]:
    return [(key, b"value-%d" % i) for i in range(count)]


def _both(config: LogConfig, built: MemoryRecordsBuilder, *, first_offset: int = 40, epoch: int = 3, now: int = NOW, origin=AppendOrigin.CLIENT):
    """The fast path's result on ``built`` and the full path's on a plain copy of the same bytes."""
    plain = bytearray(built)
    full = validate_and_assign_offsets(plain, first_offset=first_offset, config=config, partition="p-0", now=now, origin=origin, leader_epoch=epoch)
    fast = assign_offsets_to_built_batch(built, first_offset=first_offset, config=config, now=now, origin=origin, leader_epoch=epoch)
    return fast, full


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("policy", [("delete",), ("compact",)])
def test_the_facts_give_what_validation_gives(codec, policy):
    config = LogConfig(cleanup_policy=policy)
    fast, full = _both(config, MemoryRecordsBuilder(_pairs(8), NOW, codec))
    assert fast is not None
    assert bytes(fast.records) == bytes(full.records)
    assert fast._replace(records=None) == full._replace(records=None)
    stored = RecordBatch(bytes(fast.records))
    stored.validate()
    assert (stored.base_offset, stored.last_offset, stored.partition_leader_epoch) == (40, 47, 3)


@pytest.mark.parametrize("timestamp", [NOW - 1000, NOW + 1000])
def test_timestamps_at_the_bounds_are_accepted_as_validation_accepts_them(timestamp):
    config = LogConfig(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=1000)
    fast, full = _both(config, MemoryRecordsBuilder(_pairs(3), timestamp))
    assert fast is not None and bytes(fast.records) == bytes(full.records)
    assert (fast.max_timestamp, fast.offset_of_max_timestamp) == (full.max_timestamp, full.offset_of_max_timestamp) == (timestamp, 42)


def test_a_batch_without_timestamps_reports_none_as_validation_does():
    fast, full = _both(LogConfig(), MemoryRecordsBuilder(_pairs(2), -1))
    assert fast is not None
    assert fast._replace(records=None) == full._replace(records=None)
    assert (fast.max_timestamp, fast.offset_of_max_timestamp) == (-1, -1)


def _declined_then_full_path_error(config: LogConfig, built: MemoryRecordsBuilder, error: type[Exception], **kwargs) -> None:
    before = bytes(built)
    assert assign_offsets_to_built_batch(built, first_offset=9, config=config, now=NOW, leader_epoch=1, **kwargs) is None
    assert bytes(built) == before  # nothing patched
    with pytest.raises(error):
        validate_and_assign_offsets(bytearray(built), first_offset=9, config=config, partition="p-0", now=NOW, leader_epoch=1, **kwargs)


def test_a_null_key_on_a_compacted_topic_goes_to_the_full_path():
    _declined_then_full_path_error(LogConfig(cleanup_policy=("compact",)), MemoryRecordsBuilder(_pairs(2, key=None), NOW), InvalidRecordsError)
    # The same batch on a topic that is not compacted needs no key.
    assert assign_offsets_to_built_batch(MemoryRecordsBuilder(_pairs(2, key=None), NOW), first_offset=0, config=LogConfig(), now=NOW) is not None


def test_a_timestamp_out_of_bounds_goes_to_the_full_path():
    config = LogConfig(message_timestamp_before_max_ms=1000)
    _declined_then_full_path_error(config, MemoryRecordsBuilder(_pairs(2), NOW - 1001), InvalidTimestampError)
    after = LogConfig(message_timestamp_after_max_ms=10)
    _declined_then_full_path_error(after, MemoryRecordsBuilder(_pairs(1), NOW + 11), InvalidTimestampError)


def test_a_batch_over_max_message_bytes_goes_to_the_full_path():
    built = MemoryRecordsBuilder(_pairs(8), NOW)
    _declined_then_full_path_error(LogConfig(max_message_bytes=len(built) - 1), built, RecordTooLargeError)
    assert assign_offsets_to_built_batch(built, first_offset=0, config=LogConfig(max_message_bytes=len(built)), now=NOW) is not None


def test_an_empty_batch_goes_to_the_full_path():
    _declined_then_full_path_error(LogConfig(), MemoryRecordsBuilder([], NOW), InvalidRecordError)


def test_a_reused_batch_is_no_client_batch_any_more():
    built = MemoryRecordsBuilder(_pairs(2), NOW)
    assert assign_offsets_to_built_batch(built, first_offset=5, config=LogConfig(), now=NOW) is not None
    # Its base offset is 5 now: a client append of it fails as the same bytes from a client would.
    _declined_then_full_path_error(LogConfig(), built, InvalidRecordError)
    assert assign_offsets_to_built_batch(built, first_offset=7, config=LogConfig(), now=NOW, origin=AppendOrigin.COORDINATOR) is not None


@pytest.mark.parametrize("config", [
    LogConfig(message_timestamp_type="LogAppendTime"),
    LogConfig(compression_type="lz4"),
    LogConfig(compression_type="uncompressed"),
])
def test_an_append_time_or_another_codec_goes_to_the_full_path_which_rewrites(config):
    built = MemoryRecordsBuilder(_pairs(3), NOW, CompressionType.GZIP)
    assert assign_offsets_to_built_batch(built, first_offset=0, config=config, now=NOW) is None


def test_a_topic_codec_equal_to_the_batch_codec_takes_the_fast_path():
    built = MemoryRecordsBuilder(_pairs(3), NOW, CompressionType.GZIP)
    assert assign_offsets_to_built_batch(built, first_offset=0, config=LogConfig(compression_type="gzip"), now=NOW) is not None


# -- the log -------------------------------------------------------------------------------------------


class Clock:
    def __init__(self, now: int = NOW) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _files(log: Log) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log.dir.iterdir()) if p.suffix in (".log", ".index", ".timeindex", ".snapshot")}


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4])
def test_a_log_of_built_batches_is_the_log_validation_writes(tmp_path: Path, codec, monkeypatch):
    """Two logs fed the same batches, one as MemoryRecordsBuilder batches and one as plain bytes, end up with the
    same files, offsets, epochs, producer table end and recovery point through many rolls."""
    validated = []
    real_validate = log_module.validate_and_assign_offsets
    monkeypatch.setattr(log_module, "validate_and_assign_offsets", lambda view, **kw: validated.append(kw["partition"]) or real_validate(view, **kw))
    config = LogConfig(cleanup_policy=("compact",), segment_bytes=1500, index_interval_bytes=200, flush_messages=7)
    clock = Clock()
    fast = Log.open(tmp_path / "__consumer_offsets-1", config, clock=clock)
    full = Log.open(tmp_path / "__consumer_offsets-2", config, clock=clock)
    for i in range(120):
        clock.now += 3
        count = 1 + i % 9
        pairs = [(b"group-%d-%d" % (i % 5, p), b"v" * (i % 13) + b"%d" % i) for p in range(count)]
        epoch = 0 if i < 60 else 4
        built = MemoryRecordsBuilder(pairs, clock.now, codec)
        plain = build_batch([NewRecord(k, v, clock.now) for k, v in pairs], compression=codec)
        got = fast.append(built, leader_epoch=epoch)
        expected = full.append(plain, leader_epoch=epoch)
        assert got == expected
        patched = bytearray(plain)
        set_base_offset(patched, 0, expected.first_offset)
        set_partition_leader_epoch(patched, 0, epoch)
        assert bytes(built) == bytes(patched)
    assert validated == ["__consumer_offsets-2"] * 120  # only the log of plain bytes validated
    assert len(fast.segments) > 10
    assert [s.base_offset for s in fast.segments] == [s.base_offset for s in full.segments]
    assert _files(fast) == _files(full)
    assert (fast.log_end_offset, fast.recovery_point) == (full.log_end_offset, full.recovery_point)
    assert fast.producer_state.map_end_offset == full.producer_state.map_end_offset == fast.log_end_offset
    assert fast.leader_epoch_cache.entries == full.leader_epoch_cache.entries
    assert [e.epoch for e in fast.leader_epoch_cache.entries] == [0, 4]
    offsets = [r.offset for segment in fast.segments for b in iter_batches(segment.log.path.read_bytes()) for r in b.records()]
    assert offsets == list(range(fast.log_end_offset))
    fast.close()
    full.close()


def test_log_errors_on_a_built_batch_are_those_of_its_bytes(tmp_path: Path):
    built = MemoryRecordsBuilder(_pairs(20), NOW)
    small_segments = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=len(built) - 1))
    with pytest.raises(RecordBatchTooLargeError) as segment_error:
        small_segments.append(built)
    with pytest.raises(RecordBatchTooLargeError) as plain_error:
        small_segments.append(bytes(build_batch([NewRecord(k, v, NOW) for k, v in _pairs(20)])))
    assert str(segment_error.value) == str(plain_error.value)
    assert small_segments.log_end_offset == 0
    too_large = Log.open(tmp_path / "t-1", LogConfig(max_message_bytes=len(built) - 1))
    with pytest.raises(KcliError) as caught:
        too_large.append(MemoryRecordsBuilder(_pairs(20), NOW))
    assert caught.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    compacted = Log.open(tmp_path / "t-2", LogConfig(cleanup_policy=("compact",)))
    with pytest.raises(InvalidRecordsError):
        compacted.append(MemoryRecordsBuilder(_pairs(2, key=None), NOW))
    assert too_large.log_end_offset == compacted.log_end_offset == 0


def test_a_follower_append_of_a_built_batch_keeps_its_offsets(tmp_path: Path):
    built = MemoryRecordsBuilder(_pairs(3), NOW)
    built[:8] = (5).to_bytes(8, "big")
    log = Log.open(tmp_path / "t-0")
    log.truncate_fully_and_start_at(5)
    info = log.append(built, assign_offsets=False)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (5, 7, 8)
