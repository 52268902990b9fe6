"""Checkpoint, metadata and producer-snapshot files written by real Kafka brokers, read in place.

The files live outside the project (see ORIGIN.md in that directory) and are never copied into it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kcli.common import uuid_to_string
from kcli.storage.checkpoints import (
    CLEAN_SHUTDOWN_FILE,
    META_PROPERTIES,
    PARTITION_METADATA,
    read_clean_shutdown_broker_epoch,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
)
from kcli.storage.producer_state import encode_producer_snapshot, offset_from_snapshot_name, read_producer_snapshot

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"

pytestmark = pytest.mark.skipif(not SEGMENTS.is_dir(), reason=f"Kafka-written fixture files not found at {SEGMENTS}")


def files(pattern: str) -> list[Path]:
    found = sorted(SEGMENTS.rglob(pattern)) if SEGMENTS.is_dir() else []
    return found or [pytest.param(None, marks=pytest.mark.skip(reason=f"no {pattern} files under {SEGMENTS}"))]


def ids(path: Path | None) -> str:
    return str(path.relative_to(SEGMENTS)) if path else "none"


def log_dir(name: str) -> Path:
    return SEGMENTS / name / "kafka-logs"


@pytest.mark.parametrize("path", files("*-offset-checkpoint"), ids=ids)
def test_offset_checkpoints_parse(path):
    offsets = read_offset_checkpoint(path)
    assert all(partition >= 0 and offset >= 0 for (_, partition), offset in offsets.items())


def test_cleaner_offset_checkpoint():
    path = log_dir("kraft-compacted-ronem123") / "cleaner-offset-checkpoint"
    assert read_offset_checkpoint(path) == {("__consumer_offsets", 31): 3, ("__consumer_offsets", 44): 9}


def test_replication_offset_checkpoint_of_a_zookeeper_broker():
    offsets = read_offset_checkpoint(log_dir("zk-3.1.0-bheem6005") / "replication-offset-checkpoint")
    assert offsets[("cities", 0)] == 11
    assert sum(topic == "__consumer_offsets" for topic, _ in offsets) == 50


@pytest.mark.parametrize("path", files("leader-epoch-checkpoint"), ids=ids)
def test_leader_epoch_checkpoints_parse(path):
    entries = read_leader_epoch_checkpoint(path)
    assert entries and entries == sorted(entries)


def test_leader_epoch_checkpoint_with_two_epochs():
    path = log_dir("kraft-cleanshutdown-nomanazeem") / "__consumer_offsets-15" / "leader-epoch-checkpoint"
    assert read_leader_epoch_checkpoint(path) == [(0, 0), (2, 159)]


@pytest.mark.parametrize("path", files(PARTITION_METADATA), ids=ids)
def test_partition_metadata_reencodes_identically(path):
    topic_id = read_partition_metadata(path)
    assert f"version: 0\ntopic_id: {uuid_to_string(topic_id)}".encode() == path.read_bytes()


def test_partitions_of_one_topic_share_its_id():
    compacted = log_dir("kraft-compacted-ronem123")
    assert read_partition_metadata(compacted / "__consumer_offsets-31" / PARTITION_METADATA) == read_partition_metadata(
        compacted / "__consumer_offsets-44" / PARTITION_METADATA
    )


@pytest.mark.parametrize("path", files("*.snapshot"), ids=ids)
def test_producer_snapshots_are_empty_and_reencode_identically(path):
    assert read_producer_snapshot(path) == []
    assert encode_producer_snapshot([]) == path.read_bytes()
    assert offset_from_snapshot_name(path.name) >= 0


@pytest.mark.parametrize("path", files(META_PROPERTIES), ids=ids)
def test_meta_properties_parse(path):
    props = read_meta_properties(path)
    assert props["version"] in ("0", "1")


def test_meta_properties_of_each_mode():
    zk = read_meta_properties(log_dir("zk-3.1.0-bheem6005") / META_PROPERTIES)
    assert zk == {"broker.id": "0", "version": "0", "cluster.id": "P4mWrUMKRvm3AylnZYNBaQ"}
    kraft = read_meta_properties(log_dir("kraft-cleanshutdown-nomanazeem") / META_PROPERTIES)
    assert kraft["version"] == "1"
    assert kraft["node.id"] == "1"
    assert "directory.id" in kraft
    old = read_meta_properties(log_dir("zk-2.x-iechenyb") / META_PROPERTIES)
    assert old == {"version": "0", "broker.id": "0"}


@pytest.mark.parametrize("path", files(CLEAN_SHUTDOWN_FILE), ids=ids)
def test_clean_shutdown_markers(path):
    content = json.loads(path.read_bytes())
    assert content["version"] == 0
    assert read_clean_shutdown_broker_epoch(path.parent) == content["brokerEpoch"]
