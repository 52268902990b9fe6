"""kafka-replica-verification.sh's comparison (ReplicaVerificationTool.ReplicaBuffer.verifyCheckSum):
batches compared in lockstep up to each replica's high watermark, by last offset (a difference
ends the tool) and checksum (a difference is reported); the max lag report. The lines are
Kafka 3.9's."""

from __future__ import annotations

import re

import pytest

from kcli.common import TopicPartition
from kcli.storage.records import NewRecord, build_batch
from kcli.tools.replica_verification_command import ReplicaBuffer, ReplicaData, ReplicasDiverge, stamp

TP = TopicPartition("t", 0)
NOW = 1_700_000_000_000


def log(*values: bytes, base: int = 0, timestamp: int = 1) -> bytes:
    return b"".join(build_batch([NewRecord(None, v, timestamp)], base_offset=base + i) for i, v in enumerate(values))


def buffer(replicas: int = 2, start: int = 0, interval: int = 0) -> ReplicaBuffer:
    clock = iter(range(NOW, NOW + 10**6, 10))
    return ReplicaBuffer({TP: replicas}, {TP: start}, interval, clock=lambda: next(clock))


def test_equal_replicas_move_the_offset_up_to_the_lowest_high_watermark_and_report_the_lag():
    verifier = buffer()
    verifier.add_fetched_data(TP, 0, ReplicaData(3, log(b"a", b"b", b"c")))
    verifier.add_fetched_data(TP, 1, ReplicaData(2, log(b"a", b"b", b"c")))
    lines: list[str] = []
    verifier.verify(lines.append)
    assert verifier.fetch_offsets[TP] == 2  # replica 1's high watermark ends the comparison
    [line] = lines
    assert line.endswith(": max lag is 1 for partition t-0 at offset 2 among 1 partitions")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", line[:23])


def test_a_different_checksum_is_reported_and_verification_goes_on():
    verifier = buffer()
    verifier.add_fetched_data(TP, 0, ReplicaData(2, log(b"a", b"b")))
    verifier.add_fetched_data(TP, 1, ReplicaData(2, log(b"a", b"B")))
    lines: list[str] = []
    verifier.verify(lines.append)
    assert verifier.fetch_offsets[TP] == 2
    mismatch = [line for line in lines if "unmatched checksum" in line]
    assert len(mismatch) == 1 and ": partition t-0 has unmatched checksum at offset 1; replica 0's checksum " in mismatch[0]
    assert "; replica 1's checksum " in mismatch[0]


def test_a_batch_ending_elsewhere_stops_the_tool():
    verifier = buffer()
    verifier.add_fetched_data(TP, 0, ReplicaData(3, log(b"a", b"b", b"c")))
    verifier.add_fetched_data(TP, 1, ReplicaData(3, log(b"a") + build_batch([NewRecord(None, b"b", 1), NewRecord(None, b"c", 1)], base_offset=1)))
    with pytest.raises(ReplicasDiverge, match=r": partition t-0: replica 0's offset 1 doesn't match replica 1's offset 2$"):
        verifier.verify(lambda line: None)


def test_a_replica_without_an_answer_holds_the_partition_where_it_is():
    verifier = buffer(start=1)
    verifier.add_fetched_data(TP, 0, ReplicaData(3, log(b"b", b"c", base=1)))
    verifier.add_fetched_data(TP, 1, ReplicaData(-1))
    lines: list[str] = []
    verifier.verify(lines.append)
    assert verifier.fetch_offsets[TP] == 1
    assert lines[-1].endswith(": max lag is 2 for partition t-0 at offset 1 among 1 partitions")


def test_no_report_before_the_interval():
    verifier = buffer(interval=10**9)
    verifier.add_fetched_data(TP, 0, ReplicaData(0))
    verifier.add_fetched_data(TP, 1, ReplicaData(0))
    lines: list[str] = []
    verifier.verify(lines.append)
    assert lines == []


def test_stamp_is_kafkas_date_format_in_local_time():
    import datetime

    local = datetime.datetime.fromtimestamp((NOW + 7) / 1000)
    assert stamp(NOW + 7) == local.strftime("%Y-%m-%d %H:%M:%S") + ",007"
