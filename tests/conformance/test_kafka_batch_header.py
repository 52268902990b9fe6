"""The one RecordBatch v2 header writer (``records.write_header``) against batches real Kafka
brokers wrote (../shared/kafka-segments, read in place).

Every magic-2 batch of every fixture log is rewritten from its header fields and its records
bytes: the header, lengths and CRC-32C must come out byte for byte as Kafka wrote them. The
fixtures hold plain, compressed, transactional and control batches, so each attribute bit the
writer packs is checked against Kafka's own bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kcli.storage.compression import CompressionType
from kcli.storage.records import RECORD_BATCH_OVERHEAD, RecordBatch, batch_attributes, iter_batches, write_header

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"
pytestmark = pytest.mark.skipif(not SEGMENTS.is_dir(), reason="../shared/kafka-segments (real Kafka data) is not present")


def kafka_batches() -> list[tuple[str, bytes]]:
    found: list[tuple[str, bytes]] = []
    for path in sorted(SEGMENTS.glob("*/kafka-logs/*/*.log")):
        data = path.read_bytes()
        for batch in iter_batches(data):
            if isinstance(batch, RecordBatch):
                raw = bytes(data[batch.position : batch.position + batch.size_in_bytes])
                found.append((f"{path.parent.parent.parent.name}/{path.parent.name}@{batch.position}", raw))
    return found


BATCHES = kafka_batches()


def rewritten(raw: bytes) -> bytes:
    batch = RecordBatch(raw)
    buffer = bytearray(len(raw))
    buffer[RECORD_BATCH_OVERHEAD:] = raw[RECORD_BATCH_OVERHEAD:]
    attributes = batch_attributes(
        batch.compression, batch.timestamp_type, batch.is_transactional, batch.is_control, batch.delete_horizon_ms is not None
    )
    write_header(
        buffer, batch.base_offset, batch.partition_leader_epoch, attributes, batch.last_offset_delta, batch.base_timestamp,
        batch.max_timestamp, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.record_count,
    )
    return bytes(buffer)


def test_the_fixtures_hold_plain_compressed_and_control_batches():
    kinds = [RecordBatch(raw) for _name, raw in BATCHES]
    assert len(kinds) > 100
    assert any(b.compression != CompressionType.NONE for b in kinds)
    assert any(b.compression == CompressionType.NONE for b in kinds)
    assert any(b.is_control for b in kinds)


def test_every_kafka_batch_header_is_written_back_byte_for_byte():
    mismatched = [name for name, raw in BATCHES if rewritten(raw) != raw]
    assert not mismatched, f"{len(mismatched)} of {len(BATCHES)} batches differ, first {mismatched[:3]}"
