"""Log (Kafka's UnifiedLog): appends, reads, rolling, retention, truncation, flushing, leader epochs; LogConfig."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kcli.errors import CorruptRecordError, ErrorCode, InvalidOffsetError, KcliError, OffsetOutOfRangeError
from kcli.storage.checkpoints import read_partition_metadata
from kcli.storage.file_records import FileRecords
from kcli.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, Log, RecordBatchTooLargeError, RecordTooLargeError
from kcli.storage.log_config import LogConfig, topic_properties_from_broker
from kcli.storage.records import NewRecord, RecordBatch, TimestampType, build_batch, iter_batches


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def batch(timestamps: list[int], base_offset: int = 0, epoch: int = -1, value: bytes = b"value") -> bytes:
    return build_batch([NewRecord(b"k", value, ts) for ts in timestamps], base_offset=base_offset, partition_leader_epoch=epoch)


def open_log(tmp_path: Path, clock: Clock | None = None, name: str = "topic-0", **config) -> Log:
    return Log.open(tmp_path / name, LogConfig(**config), clock=clock or Clock())


def log_batches(log: Log) -> list[RecordBatch]:
    out = []
    for segment in log.segments:
        with FileRecords.open(segment.log.path) as records:
            data = records.read(0, records.size)
        out.extend(iter_batches(data))
    return out


# -- appending ---------------------------------------------------------------------------------------


def test_append_assigns_offsets_from_the_log_end_and_stamps_the_leader_epoch(tmp_path):
    log = open_log(tmp_path)
    info = log.append(batch([10, 30, 20]) + batch([40, 15]), leader_epoch=3)
    assert (info.first_offset, info.last_offset, info.max_timestamp, info.offset_of_max_timestamp) == (0, 4, 40, 4)
    assert (info.shallow_count, info.record_count, info.log_append_time) == (2, 5, -1)
    info = log.append(batch([50]), leader_epoch=3)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (5, 5, 6)
    written = log_batches(log)
    assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in written] == [(0, 2, 3), (3, 4, 3), (5, 5, 3)]
    for b in written:
        b.validate()  # base offset and epoch sit outside the CRC


def test_a_writable_buffer_is_patched_in_place_and_bytes_are_left_alone(tmp_path):
    log = open_log(tmp_path)
    log.append(batch([1]))
    buffer = bytearray(batch([2, 3]))
    log.append(buffer, leader_epoch=7)
    assert buffer[:8] == bytes.fromhex("0000000000000001") and buffer[12:16] == bytes.fromhex("00000007")
    original = batch([4])
    log.append(original, leader_epoch=7)
    assert original == batch([4])


def test_invalid_batches_are_rejected_and_nothing_is_appended(tmp_path):
    log = open_log(tmp_path)
    good = batch([1, 2])
    flipped = bytearray(good)
    flipped[-1] ^= 0x01
    for bad in (good + bytes(flipped), good + good[:30], good[:-1], b"", good + bytes(70)):
        with pytest.raises(CorruptRecordError):
            log.append(bad)
    assert (log.log_end_offset, log.size) == (0, 0)
    legacy = bytearray(good)
    legacy[16] = 1
    with pytest.raises(CorruptRecordError):
        log.append(legacy)


def test_a_batch_over_max_message_bytes_is_too_large(tmp_path):
    data = batch([1], value=b"x" * 100)
    log = open_log(tmp_path, max_message_bytes=len(data) - 1)
    with pytest.raises(RecordTooLargeError, match="max.message.bytes"):
        log.append(data)
    open_log(tmp_path, name="topic-1", max_message_bytes=len(data)).append(data)


def test_log_append_time_topics_stamp_each_batch(tmp_path):
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    info = log.append(batch([10, 20]) + batch([30]), log_append_time=777)
    assert (info.log_append_time, info.max_timestamp, info.offset_of_max_timestamp) == (777, 777, 2)
    for b in log_batches(log):
        b.validate()
        assert (b.timestamp_type, b.max_timestamp) == (TimestampType.LOG_APPEND_TIME, 777)
        assert {r.timestamp for r in b.records()} == {777}


def test_follower_appends_keep_offsets_and_epochs(tmp_path):
    log = open_log(tmp_path)
    info = log.append_as_follower(batch([1, 2], base_offset=0, epoch=4) + batch([3], base_offset=10, epoch=6))
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (0, 10, 11)
    assert [(b.base_offset, b.partition_leader_epoch) for b in log_batches(log)] == [(0, 4), (10, 6)]
    assert log.leader_epoch_cache.entries == [(4, 0), (6, 10)]
    with pytest.raises(InvalidOffsetError, match="Unexpected offset in append to topic-0. First offset 10 is less than the next offset 11"):
        log.append_as_follower(batch([4], base_offset=10))
    with pytest.raises(InvalidOffsetError, match="Out of order offsets"):
        log.append_as_follower(batch([4], base_offset=20) + batch([5], base_offset=15))
    assert log.log_end_offset == 11


def test_append_errors_answer_with_kafkas_error_codes(tmp_path):
    data = batch([1], value=b"x" * 100)
    with pytest.raises(RecordTooLargeError) as too_large:
        open_log(tmp_path, max_message_bytes=len(data) - 1).append(data)
    assert too_large.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    with pytest.raises(RecordBatchTooLargeError) as too_large_for_a_segment:
        open_log(tmp_path, name="topic-1", segment_bytes=2 * len(data) - 1).append(data + data)
    assert too_large_for_a_segment.value.error_code == ErrorCode.RECORD_LIST_TOO_LARGE
    flipped = bytearray(data)
    flipped[-1] ^= 1
    with pytest.raises(CorruptRecordError) as corrupt:
        open_log(tmp_path, name="topic-2").append(flipped)
    assert corrupt.value.error_code == ErrorCode.CORRUPT_MESSAGE


def test_the_replication_origin_is_a_follower_append(tmp_path):
    log = open_log(tmp_path)
    info = log.append(batch([1, 2], base_offset=5, epoch=4), origin="replication", leader_epoch=9)
    assert (info.first_offset, info.last_offset, info.duplicate, log.log_end_offset) == (5, 6, False, 7)
    assert [(b.base_offset, b.partition_leader_epoch) for b in log_batches(log)] == [(5, 4)]
    with pytest.raises(ValueError):
        log.append(batch([3]), origin="somewhere")


def test_a_client_append_must_start_at_offset_0_but_the_coordinators_need_not(tmp_path):
    log = open_log(tmp_path)
    with pytest.raises(KcliError, match="should be 0, but it is 3") as caught:
        log.append(batch([1], base_offset=3))
    assert caught.value.error_code == ErrorCode.INVALID_RECORD
    assert log.append(batch([1], base_offset=3), origin="coordinator").first_offset == 0


# -- reading -------------------------------------------------------------------------------------------


def test_read_returns_whole_batches_from_the_one_holding_the_offset(tmp_path):
    log = open_log(tmp_path)
    sizes = []
    for n in (3, 2, 4):
        data = batch(list(range(n)))
        sizes.append(len(data))
        log.append(data)
    info = log.read(4, 10_000)
    assert info.size == sizes[1] + sizes[2]
    assert [b.base_offset for b in iter_batches(info.read())] == [3, 5]
    assert info.fetch_offset_metadata == (4, 0, sizes[0])
    assert log.read(0, sizes[0] + sizes[1] - 1).size == sizes[0]
    big_first = log.read(5, 1)
    assert (big_first.size, big_first.first_entry_incomplete) == (sizes[2], False)
    none = log.read(5, 1, min_one_message=False)
    assert (none.size, none.first_entry_incomplete) == (0, True)


def test_read_stops_at_max_offset_and_errors_out_of_range(tmp_path):
    log = open_log(tmp_path)
    log.append(batch([1, 2]))
    log.append(batch([3]))
    assert [b.last_offset for b in iter_batches(log.read(0, 10_000, max_offset=2).read())] == [1]
    assert log.read(2, 10_000, max_offset=2).size == 0
    assert log.read(3, 10_000).size == 0  # at the log end: nothing yet
    with pytest.raises(OffsetOutOfRangeError, match="Received request for offset 4 for partition topic-0, but we only have log segments upto 3."):
        log.read(4, 100)
    log.high_watermark = 3
    log.maybe_increment_log_start_offset(2)
    with pytest.raises(OffsetOutOfRangeError, match="but we only have log segments starting from offset: 2."):
        log.read(1, 100)


def test_read_continues_into_the_next_segments(tmp_path):
    log = open_log(tmp_path)
    for i in range(3):
        log.append(batch([i]))
        log.roll()
    info = log.read(0, 10_000)
    assert len(info.slices) == 3
    assert [b.base_offset for b in iter_batches(info.read())] == [0, 1, 2]
    assert [b.base_offset for b in iter_batches(log.read(0, 10_000, max_offset=2).read())] == [0, 1]


# -- rolling -------------------------------------------------------------------------------------------


def test_roll_on_segment_bytes_starts_segments_at_batch_boundaries(tmp_path):
    size = len(batch([0, 0]))
    log = open_log(tmp_path, segment_bytes=2 * size)
    for _ in range(5):
        log.append(batch([0, 0]))
    assert [s.base_offset for s in log.segments] == [0, 4, 8]
    assert sorted(p.name for p in log.dir.glob("*.log")) == [f"{o:020d}.log" for o in (0, 4, 8)]
    assert [s.size for s in log.segments] == [2 * size, 2 * size, size]
    # The rolled segments' indexes were trimmed to their entries.
    assert (log.dir / "00000000000000000000.index").stat().st_size % 8 == 0
    assert (log.dir / "00000000000000000000.index").stat().st_size < 10485760


def test_roll_on_segment_ms_uses_record_timestamps(tmp_path):
    log = open_log(tmp_path, segment_ms=1000)
    log.append(batch([10_000]))
    log.append(batch([11_000]))
    assert len(log.segments) == 1
    log.append(batch([11_001]))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_when_an_index_is_full(tmp_path):
    # 36 bytes: 4 offset-index slots, 3 time-index slots, the last kept for the roll entry.
    log = open_log(tmp_path, segment_index_bytes=36, index_interval_bytes=0)
    for _ in range(6):
        log.append(batch([7]))  # one timestamp: one time-index entry, the offset index fills up
    assert [s.base_offset for s in log.segments] == [0, 5]
    rising = open_log(tmp_path, name="topic-1", segment_index_bytes=36, index_interval_bytes=0)
    for i in range(4):
        rising.append(batch([i + 1]))  # new maximum each time: the time index fills first
    assert [s.base_offset for s in rising.segments] == [0, 3]


# -- retention and the log start offset ---------------------------------------------------------------


def segmented_log(tmp_path: Path, clock: Clock, **config) -> Log:
    """Four one-batch segments with timestamps 1000, 2000, 3000 and 4000, high watermark at the end."""
    log = open_log(tmp_path, clock, file_delete_delay_ms=0, **config)
    for i in range(4):
        log.append(batch([1000 * (i + 1)]))
        if i < 3:
            log.roll()
    log.high_watermark = log.log_end_offset
    return log


def test_retention_by_time_uses_each_segments_largest_timestamp(tmp_path):
    clock = Clock()
    log = segmented_log(tmp_path, clock, retention_ms=1500)
    assert log.delete_old_segments(now=3500) == 1  # 3500 - 2000 is not > 1500
    assert [s.base_offset for s in log.segments] == [1, 2, 3]
    assert log.log_start_offset == 1
    assert log.delete_old_segments(now=10_000) == 3
    # Everything expired: a new empty active segment keeps the log end offset.
    assert [(s.base_offset, s.size) for s in log.segments] == [(4, 0)]
    assert (log.log_start_offset, log.log_end_offset) == (4, 4)
    assert sorted(p.name for p in log.dir.glob("*.log")) == ["00000000000000000004.log"]


def test_retention_by_bytes_deletes_while_the_rest_stays_at_least_retention_bytes(tmp_path):
    size = len(batch([1000]))
    log = segmented_log(tmp_path, Clock(), retention_bytes=2 * size)
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [2, 3]
    assert log.delete_old_segments() == 0
    other = segmented_log(tmp_path / "other", Clock(), retention_bytes=2 * size + 1)
    assert other.delete_old_segments() == 1  # deleting two would leave less than retention.bytes
    assert other.size == 3 * size


def test_retention_never_deletes_past_the_high_watermark(tmp_path):
    clock = Clock()
    log = segmented_log(tmp_path, clock, retention_ms=0)
    log.high_watermark = 2
    assert log.delete_old_segments(now=10**9) == 2
    assert log.log_start_offset == 2


def test_delete_records_moves_the_start_offset_and_drops_segments_below_it(tmp_path):
    log = segmented_log(tmp_path, Clock(), retention_ms=-1)
    with pytest.raises(OffsetOutOfRangeError, match="larger than the high watermark 4"):
        log.maybe_increment_log_start_offset(5)
    assert log.maybe_increment_log_start_offset(2)
    assert not log.maybe_increment_log_start_offset(1)
    assert log.delete_old_segments() == 2  # segments 0 and 1 lie wholly below offset 2
    assert [s.base_offset for s in log.segments] == [2, 3]


def test_deleted_segments_wait_for_file_delete_delay(tmp_path):
    clock = Clock(1_000_000)
    log = open_log(tmp_path, clock, retention_ms=10, file_delete_delay_ms=60_000)
    log.append(batch([5]))
    log.roll()
    log.append(batch([5]))
    log.high_watermark = 2
    assert log.delete_old_segments(now=1_000_000) == 2
    names = sorted(p.name for p in log.dir.iterdir() if p.name.startswith("00000000000000000000"))
    assert names == ["00000000000000000000.index.deleted", "00000000000000000000.log.deleted", "00000000000000000000.timeindex.deleted"]
    assert log.delete_pending_segments(now=1_059_999) == 0
    assert log.delete_pending_segments(now=1_060_000) == 2
    assert not list(log.dir.glob("*.deleted"))


# -- truncation ----------------------------------------------------------------------------------------


def test_truncate_to_removes_later_offsets_segments_and_epochs(tmp_path):
    log = open_log(tmp_path)
    log.append(batch([1, 2]), leader_epoch=0)
    log.roll()
    log.append(batch([3, 4]), leader_epoch=1)
    log.roll()
    log.append(batch([5]), leader_epoch=2)
    log.high_watermark = 5
    assert log.truncate_to(2)
    assert (log.log_end_offset, log.high_watermark) == (2, 2)
    assert [(s.base_offset, s.size) for s in log.segments] == [(0, len(batch([1, 2]))), (2, 0)]
    assert sorted(p.name for p in log.dir.glob("00000000000000000004.*")) == [
        f"00000000000000000004{suffix}.deleted" for suffix in (".index", ".log", ".timeindex")
    ]
    assert log.leader_epoch_cache.entries == [(0, 0)]
    assert not log.truncate_to(10)
    log.append(batch([6]), leader_epoch=3)
    assert [b.base_offset for b in log_batches(log)] == [0, 2]
    assert log.leader_epoch_cache.entries == [(0, 0), (3, 2)]


def test_truncating_inside_a_batch_removes_the_whole_batch(tmp_path):
    log = open_log(tmp_path)
    log.append(batch([1, 2]))
    log.append(batch([3, 4, 5]))
    log.truncate_to(3)
    # As in Kafka the log end offset is the target even though offset 2 went with its batch.
    assert log.log_end_offset == 3
    assert [b.last_offset for b in log_batches(log)] == [1]


def test_truncate_fully_and_start_at(tmp_path):
    log = open_log(tmp_path)
    log.append(batch([1, 2]))
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark, log.recovery_point) == (50, 50, 50, 50)
    assert log.append(batch([3])).first_offset == 50
    assert log.leader_epoch_cache.entries == [(0, 50)]


# -- flushing ------------------------------------------------------------------------------------------


def test_flush_messages_moves_the_recovery_point(tmp_path):
    log = open_log(tmp_path, flush_messages=3)
    log.append(batch([1, 2]))
    assert log.recovery_point == 0
    log.append(batch([3]))
    assert log.recovery_point == 3


def test_flush_ms_and_rolled_segments_are_flushed_by_maybe_flush(tmp_path):
    clock = Clock(0)
    log = open_log(tmp_path, clock, flush_ms=1000)
    log.append(batch([1]))
    assert not log.maybe_flush(now=999)
    assert log.maybe_flush(now=1000) and log.recovery_point == 1 and log.last_flush_time == 1000
    log.append(batch([2]))
    log.roll()
    log.append(batch([3]))
    assert log.maybe_flush(now=1500) and log.recovery_point == 2  # flush.ms not over: up to the rolled segment
    clock.now = 1500
    log.flush(offset=3)
    assert log.recovery_point == 3 and log.last_flush_time == 1500


# -- timestamps ----------------------------------------------------------------------------------------


def test_fetch_offset_by_timestamp(tmp_path):
    log = open_log(tmp_path)
    log.append(batch([100, 300]), leader_epoch=1)
    log.roll()
    log.append(batch([200, 500]), leader_epoch=2)
    assert tuple(log.fetch_offset_by_timestamp(250)) == (300, 1, 1)
    assert tuple(log.fetch_offset_by_timestamp(301)) == (500, 3, 2)
    assert log.fetch_offset_by_timestamp(501) is None
    assert tuple(log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)) == (-1, 0, 1)
    assert tuple(log.fetch_offset_by_timestamp(LATEST_TIMESTAMP)) == (-1, 4, 2)
    assert tuple(log.fetch_offset_by_timestamp(MAX_TIMESTAMP)) == (500, 3, 2)


def test_max_timestamp_is_the_first_record_holding_it(tmp_path):
    """Kafka 3.9 answers MAX_TIMESTAMP with RecordBatch.offsetOfMaxTimestamp: the first record of
    the batch whose timestamp is the largest, not the batch's last offset."""
    log = open_log(tmp_path)
    log.append(batch([1000, 5000, 3000, 5000]), leader_epoch=1)
    log.append(batch([2000]), leader_epoch=1)
    assert tuple(log.fetch_offset_by_timestamp(MAX_TIMESTAMP)) == (5000, 1, 1)


# -- leader epochs and partition metadata --------------------------------------------------------------


def test_new_leader_epochs_are_checkpointed(tmp_path):
    log = open_log(tmp_path)
    log.append(batch([1]), leader_epoch=0)
    log.append(batch([2]), leader_epoch=0)
    log.append(batch([3, 4]), leader_epoch=5)
    assert (log.dir / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n5 2\n"
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(5) == (5, 4)
    log.truncate_to(2)
    assert (log.dir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"


def test_topic_id_is_kept_in_partition_metadata(tmp_path):
    topic_id = uuid.UUID("0123456789abcdef0123456789abcdef")
    log = Log.open(tmp_path / "orders-2", topic_id=topic_id)
    assert (log.topic, log.partition) == ("orders", 2)
    assert read_partition_metadata(log.dir / "partition.metadata") == topic_id
    log.close()
    assert Log.open(tmp_path / "orders-2").topic_id == topic_id
    with pytest.raises(KcliError, match="already contained topic ID"):
        Log.open(tmp_path / "orders-2", topic_id=uuid.uuid4())


def test_close_trims_indexes_and_a_clean_reopen_keeps_the_offsets(tmp_path):
    size = len(batch([10]))
    log = open_log(tmp_path, index_interval_bytes=size + size // 2)
    for i in range(4):
        log.append(batch([i + 10]))
    log.close()
    # Only the third batch was indexed; the close adds the time entry of the fourth.
    assert (log.dir / "00000000000000000000.index").read_bytes() == bytes.fromhex("00000002") + (2 * size).to_bytes(4, "big")
    assert (log.dir / "00000000000000000000.timeindex").read_bytes() == bytes.fromhex("000000000000000c 00000002 000000000000000d 00000003")
    again = Log.open(log.dir, LogConfig(), had_clean_shutdown=True)
    assert (again.log_end_offset, again.recovery_point) == (4, 4)
    assert again.append(batch([20])).first_offset == 4


def test_an_empty_active_segment_gets_its_index_files_at_close_as_kafka_leaves_them(tmp_path, caplog):
    log = open_log(tmp_path)
    log.append(batch([1]))
    log.roll()
    log.close()
    # Kafka leaves empty .index and .timeindex files beside an empty active segment.
    assert (log.dir / "00000000000000000001.index").read_bytes() == b""
    assert (log.dir / "00000000000000000001.timeindex").read_bytes() == b""
    with caplog.at_level("INFO"):
        again = Log.open(log.dir, LogConfig(), had_clean_shutdown=True)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert again.log_end_offset == 1


def test_delete_removes_the_directory(tmp_path):
    log = open_log(tmp_path)
    log.append(batch([1]))
    log.delete()
    assert list(tmp_path.iterdir()) == []


# -- LogConfig -----------------------------------------------------------------------------------------


def test_log_config_defaults_are_kafkas():
    props = LogConfig().to_properties()
    assert {k: props[k] for k in ("segment.bytes", "segment.ms", "segment.index.bytes", "index.interval.bytes", "retention.ms")} == {
        "segment.bytes": "1073741824",
        "segment.ms": "604800000",
        "segment.index.bytes": "10485760",
        "index.interval.bytes": "4096",
        "retention.ms": "604800000",
    }
    assert (props["retention.bytes"], props["flush.messages"], props["flush.ms"]) == ("-1", str(2**63 - 1), str(2**63 - 1))
    assert (props["max.message.bytes"], props["cleanup.policy"], props["message.timestamp.type"]) == ("1048588", "delete", "CreateTime")
    assert (props["min.insync.replicas"], props["compression.type"], props["file.delete.delay.ms"]) == ("1", "producer", "60000")
    assert (props["min.cleanable.dirty.ratio"], props["delete.retention.ms"], props["max.compaction.lag.ms"]) == ("0.5", "86400000", str(2**63 - 1))


def test_log_config_from_properties_parses_and_validates():
    config = LogConfig.from_properties({"segment.bytes": " 1024 ", "cleanup.policy": "compact, delete", "preallocate": "TRUE"})
    assert (config.segment_bytes, config.cleanup_policy, config.preallocate) == (1024, ("compact", "delete"), True)
    assert config.compact and config.delete
    bad = [
        ({"segment.bytes": "1GB"}, "Invalid value 1GB for configuration segment.bytes: Not a number of type INT"),
        ({"segment.bytes": "3000000000"}, "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT"),
        ({"segment.bytes": "13"}, "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
        ({"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
        ({"cleanup.policy": "keep"}, "Invalid value keep for configuration cleanup.policy: String must be one of: compact, delete"),
        ({"message.timestamp.type": "Now"}, "Invalid value Now for configuration message.timestamp.type"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "Value must be no more than 1"),
        ({"preallocate": "yes"}, "Expected value to be either true or false"),
        ({"segment.size": "1"}, "Unknown topic config name: segment.size"),
    ]
    for props, message in bad:
        with pytest.raises(KcliError) as exc:
            LogConfig.from_properties(props)
        assert message in str(exc.value)


def test_broker_keys_map_to_topic_keys_with_kafkas_precedence():
    assert topic_properties_from_broker({"log.retention.hours": "1", "log.retention.minutes": "2"})["retention.ms"] == "120000"
    assert topic_properties_from_broker({"log.retention.hours": "1", "log.retention.ms": "5"})["retention.ms"] == "5"
    assert topic_properties_from_broker({"log.retention.hours": "-1"})["retention.ms"] == "-1"
    assert topic_properties_from_broker({"log.roll.hours": "2"})["segment.ms"] == str(2 * 3600 * 1000)
    assert topic_properties_from_broker({"log.flush.scheduler.interval.ms": "9"})["flush.ms"] == "9"
    config = LogConfig.from_broker_properties(
        {"log.segment.bytes": "2048", "log.index.size.max.bytes": "4096", "log.index.interval.bytes": "10", "message.max.bytes": "99",
         "log.flush.interval.messages": "5", "log.cleanup.policy": "compact", "broker.id": "1"}
    )
    assert (config.segment_bytes, config.segment_index_bytes, config.index_interval_bytes, config.max_message_bytes) == (2048, 4096, 10, 99)
    assert (config.flush_messages, config.cleanup_policy) == (5, ("compact",))
    with pytest.raises(KcliError, match="Invalid value x for configuration log.retention.hours: Not a number of type INT"):
        topic_properties_from_broker({"log.retention.hours": "x"})

