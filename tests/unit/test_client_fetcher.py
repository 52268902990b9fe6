"""The fetcher's handling of Fetch answers: batches decoded into records at the right positions,
control batches and aborted transactions, LogAppendTime, legacy messages, corrupt batches and
skipping them, out-of-range answers. Answers are built from batch bytes, as a broker sends them."""

from __future__ import annotations

import struct
import zlib
from types import SimpleNamespace
from typing import Any

import pytest

from kcli.client.fetcher import CorruptConsumerRecordError, Fetcher, TopicPartition, _next_fetch_offset
from kcli.client.network_client import NetworkClient
from kcli.storage.records import ControlType, NewRecord, TimestampType, build_batch, control_record, end_txn_marker_value

TP = TopicPartition("t", 0)


def batch(base: int, values: list[bytes], **kwargs: Any) -> bytes:
    records = [NewRecord(b"k%d" % (base + i), v, 1000 + base + i) for i, v in enumerate(values)]
    return build_batch(records, base_offset=base, **kwargs)


def answer(data: bytes, *, error: int = 0, aborted: list[tuple[int, int]] | None = None, hw: int = 100) -> Any:
    partition = SimpleNamespace(
        partition_index=0, error_code=error, high_watermark=hw, last_stable_offset=hw, log_start_offset=0, records=data,
        aborted_transactions=[SimpleNamespace(producer_id=p, first_offset=o) for p, o in aborted] if aborted else None,
    )
    return SimpleNamespace(error_code=0, responses=[SimpleNamespace(topic="t", partitions=[partition])])


def fetcher_at(offset: int, **settings: Any) -> Fetcher:
    fetcher = Fetcher(NetworkClient("127.0.0.1:9092"), **settings)  # never connects: answers are handed in
    fetcher.assign([TP])
    fetcher.seek(TP, offset)
    return fetcher


def deliver(fetcher: Fetcher, data: bytes, **kwargs: Any) -> None:
    state = fetcher.states[TP]
    fetcher._handle(1, [(state, state.version, state.fetch_offset)], answer(data, **kwargs))


def test_records_come_out_in_order_with_positions_and_the_next_fetch_offset():
    fetcher = fetcher_at(0)
    deliver(fetcher, batch(0, [b"a", b"b", b"c"]) + batch(3, [b"d", b"e"]))
    state = fetcher.states[TP]
    assert state.fetch_offset == 5  # from the batch headers, before any decoding
    first = fetcher.take(2)
    assert [(r.offset, r.key, r.value, r.timestamp, r.timestamp_type) for r in first] == [(0, b"k0", b"a", 1000, 0), (1, b"k1", b"b", 1001, 0)]
    assert state.position == 2
    rest = fetcher.take(10)
    assert [r.value for r in rest] == [b"c", b"d", b"e"]
    assert state.position == 5
    assert fetcher.take(10) == []


def test_a_fetch_inside_a_batch_skips_the_records_before_the_position():
    fetcher = fetcher_at(2)
    deliver(fetcher, batch(0, [b"a", b"b", b"c", b"d"]))
    assert [r.offset for r in fetcher.take(10)] == [2, 3]


def test_log_append_time_and_leader_epoch():
    fetcher = fetcher_at(0)
    data = build_batch([NewRecord(None, b"x", 5), NewRecord(None, b"y", 6)], timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=777, partition_leader_epoch=3)
    deliver(fetcher, data)
    assert [(r.timestamp, r.timestamp_type, r.leader_epoch, r.key) for r in fetcher.take(10)] == [(777, 1, 3, None), (777, 1, 3, None)]


def test_headers_are_a_list_of_pairs():
    fetcher = fetcher_at(0)
    deliver(fetcher, build_batch([NewRecord(b"k", None, 1, headers=[("a", b"1"), ("b", None)])]))
    (record,) = fetcher.take(1)
    assert record.headers == [("a", b"1"), ("b", None)] and record.value is None


def marker(offset: int, pid: int, control: ControlType) -> bytes:
    return build_batch([control_record(control, end_txn_marker_value(0), 1)], base_offset=offset, producer_id=pid, producer_epoch=0, control=True, transactional=True)


def transactional(offset: int, pid: int, values: list[bytes]) -> bytes:
    return build_batch([NewRecord(None, v, 1) for v in values], base_offset=offset, producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)


def test_read_committed_drops_aborted_transactions_and_markers():
    data = transactional(0, 7, [b"aborted1", b"aborted2"]) + transactional(2, 8, [b"kept"]) + marker(3, 7, ControlType.ABORT) + marker(4, 8, ControlType.COMMIT) + batch(5, [b"plain"])
    committed = fetcher_at(0, isolation_level="read_committed")
    deliver(committed, data, aborted=[(7, 0)])
    assert [r.value for r in committed.take(10)] == [b"kept", b"plain"]
    assert committed.states[TP].position == 6
    uncommitted = fetcher_at(0)
    deliver(uncommitted, data, aborted=[(7, 0)])
    assert [r.value for r in uncommitted.take(10)] == [b"aborted1", b"aborted2", b"kept", b"plain"]


def test_control_batches_at_the_end_still_move_the_position():
    fetcher = fetcher_at(0, isolation_level="read_committed")
    deliver(fetcher, transactional(0, 9, [b"a"]) + marker(1, 9, ControlType.COMMIT))
    assert [r.value for r in fetcher.take(10)] == [b"a"]
    assert fetcher.states[TP].position == 2


def test_corrupt_batch_raises_after_the_good_records_and_skip_moves_past_it():
    good = batch(0, [b"a", b"b"])
    bad = bytearray(batch(2, [b"c", b"d", b"e"]))
    bad[-1] ^= 0xFF  # inside the CRC's range
    fetcher = fetcher_at(0)
    deliver(fetcher, good + bytes(bad) + batch(5, [b"f"]))
    assert [r.value for r in fetcher.take(10)] == [b"a", b"b"]
    with pytest.raises(CorruptConsumerRecordError) as raised:
        fetcher.take(10)
    assert raised.value.topic_partition == TP and raised.value.offset == 2
    with pytest.raises(CorruptConsumerRecordError):  # again until skipped
        fetcher.take(10)
    fetcher.skip(TP)
    state = fetcher.states[TP]
    assert state.position == 5 and state.fetch_offset == 5 and state.error is None


def test_crc_checks_can_be_turned_off():
    bad = bytearray(batch(0, [b"abc"]))
    bad[-3] ^= 0x01  # the value's "b" (the last byte is the header count): still decodes
    fetcher = fetcher_at(0, check_crcs=False)
    deliver(fetcher, bytes(bad))
    assert [r.value for r in fetcher.take(10)] == [b"acc"]


def legacy_v1(offset: int, key: bytes | None, value: bytes, timestamp: int) -> bytes:
    body = struct.pack(">bbq", 1, 0, timestamp)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", len(value)) + value
    crc = zlib.crc32(body)
    message = struct.pack(">I", crc) + body
    return struct.pack(">qi", offset, len(message)) + message


def test_legacy_magic_1_messages():
    fetcher = fetcher_at(0)
    deliver(fetcher, legacy_v1(0, b"k", b"v0", 100) + legacy_v1(1, None, b"v1", 101))
    records = fetcher.take(10)
    assert [(r.offset, r.key, r.value, r.timestamp, r.timestamp_type, r.headers) for r in records] == [(0, b"k", b"v0", 100, 0, []), (1, None, b"v1", 101, 0, [])]


def test_next_fetch_offset_ignores_a_partial_batch_at_the_end():
    whole = batch(10, [b"a", b"b"])
    assert _next_fetch_offset(whole) == 12
    assert _next_fetch_offset(whole + batch(12, [b"c"])[:30]) == 12
    assert _next_fetch_offset(whole[:40]) is None


def test_out_of_range_requests_a_reset_by_policy():
    fetcher = fetcher_at(50, auto_offset_reset="earliest")
    deliver(fetcher, b"", error=1)
    state = fetcher.states[TP]
    assert state.position is None and state.reset == "earliest"
    strict = fetcher_at(50, auto_offset_reset="none")
    deliver(strict, b"", error=1)
    from kcli.errors import KafkaError

    with pytest.raises(KafkaError, match="out of range"):
        strict.take(10)


def test_a_seek_drops_answers_to_earlier_fetches():
    fetcher = fetcher_at(0)
    state = fetcher.states[TP]
    asked = (state, state.version, state.fetch_offset)
    fetcher.seek(TP, 100)
    fetcher._handle(1, [asked], answer(batch(0, [b"old"])))
    assert fetcher.take(10) == [] and state.position == 100


def test_a_fetch_max_bytes_above_the_answer_limit_raises_the_limit_of_every_connection():
    from kcli.client.connection import ANSWER_OVERHEAD_BYTES, MAX_ANSWER_BYTES

    cluster = NetworkClient("127.0.0.1:9092")
    Fetcher(cluster, fetch_max_bytes=1024)
    assert cluster.max_answer_bytes == MAX_ANSWER_BYTES  # never lowered
    Fetcher(cluster, fetch_max_bytes=200_000_000)
    assert cluster.max_answer_bytes == 200_000_000 + ANSWER_OVERHEAD_BYTES
