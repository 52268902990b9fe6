"""The spliced Fetch response encoder, checked against kio's reader for every served version."""

from __future__ import annotations

import uuid

import pytest

from kcli.broker.handlers import fetch
from kcli.protocol import messages
from kcli.protocol.fetch_response import PartitionResult, TopicResult, encode_fetch_response
from kcli.storage.file_records import FileRecords
from kcli.storage.records import NewRecord, build_batch

TOPIC_ID = uuid.UUID("6b1f2f4c-9a1e-4c52-8d3e-2f7f1c1d0a55")


def _materialise(chunks) -> bytes:
    return b"".join(c if isinstance(c, bytes) else c.read() for c in chunks)


@pytest.fixture
def log_file(tmp_path):
    records = FileRecords.open(tmp_path / "00000000000000000000.log", writable=True)
    batch = build_batch([NewRecord(key=b"k", value=b"v" * 100, timestamp=1)], base_offset=0)
    records.append(batch)
    yield records, batch
    records.close()


SERVED = range(fetch.VERSIONS[0], fetch.VERSIONS[1] + 1)


@pytest.mark.parametrize("version", SERVED)
def test_every_version_reads_back_with_kio(version, log_file):
    records, batch = log_file
    slices = [records.slice(0, len(batch))]
    topics = [
        TopicResult(
            "orders",
            TOPIC_ID,
            [
                PartitionResult(0, high_watermark=1, last_stable_offset=1, log_start_offset=0, records=slices),
                PartitionResult(1, error_code=1, high_watermark=5, last_stable_offset=5, log_start_offset=2, records=b""),
                PartitionResult(2, high_watermark=0, last_stable_offset=0, log_start_offset=0, aborted_transactions=[(7, 3)], records=None),
            ],
        )
    ]
    chunks, size = encode_fetch_response(version, topics, throttle_time_ms=5, error_code=0, session_id=42)
    body = _materialise(chunks)
    assert len(body) == size
    from kio.serial import entity_reader

    decoded, used = entity_reader(messages.response_type(1, version))(body, 0)
    assert used == len(body)
    assert decoded.throttle_time.total_seconds() == 0.005
    if version >= 7:
        assert decoded.session_id == 42
    (topic,) = decoded.responses
    if version >= 13:
        assert topic.topic_id == TOPIC_ID
    else:
        assert topic.topic == "orders"
    first, second, third = topic.partitions
    assert bytes(first.records) == bytes(batch)
    assert (second.error_code, second.high_watermark) == (1, 5)
    assert bytes(second.records) == b""
    assert third.records is None
    assert [(a.producer_id, a.first_offset) for a in third.aborted_transactions] == [(7, 3)]
    if version >= 5:
        assert second.log_start_offset == 2


@pytest.mark.parametrize("version", [v for v in SERVED if v >= 12])
def test_a_diverging_epoch_reads_back_with_kio(version):
    """KIP-320: a follower whose log diverges is told the leader's (epoch, end offset) in the
    partition's tagged field 0; a partition without one reads back as kio's default (-1, -1)."""
    topics = [
        TopicResult("orders", TOPIC_ID, [
            PartitionResult(0, high_watermark=9, last_stable_offset=9, log_start_offset=0, records=b"", diverging_epoch=(4, 17)),
            PartitionResult(1, high_watermark=9, last_stable_offset=9, log_start_offset=0, records=b""),
        ])
    ]
    chunks, size = encode_fetch_response(version, topics)
    body = _materialise(chunks)
    assert len(body) == size
    from kio.serial import entity_reader

    decoded, used = entity_reader(messages.response_type(1, version))(body, 0)
    assert used == len(body)
    diverging, plain = decoded.responses[0].partitions
    assert (diverging.diverging_epoch.epoch, diverging.diverging_epoch.end_offset) == (4, 17)
    assert (plain.diverging_epoch.epoch, plain.diverging_epoch.end_offset) == (-1, -1)
    assert diverging.high_watermark == plain.high_watermark == 9
