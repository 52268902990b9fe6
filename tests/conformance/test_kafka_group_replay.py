"""``__consumer_offsets`` partitions written by real Kafka brokers, replayed by the coordinator.

Every record must be understood (none skipped), every group must live in the partition Kafka put
it in (abs(hashCode) mod 50), every stored group must load, and the tombstones ORIGIN.md records
must delete what they name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kcli.broker.groups import group_metadata_manager
from kcli.broker.groups.group import GroupState
from kcli.broker.groups.partitioner import partition_for
from kcli.storage.records import iter_batches

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"
# Why this module may skip: its subject is bytes a real Kafka broker wrote, which live in ../shared
# beside the project and may not be copied into it; wherever ../shared is present the module runs.
if not SEGMENTS.is_dir():
    pytest.skip(f"Kafka segment fixtures not found at {SEGMENTS}", allow_module_level=True)

PARTITION_DIRS = sorted(SEGMENTS.glob("*/kafka-logs/__consumer_offsets-*"))


def _replay(directory: Path) -> group_metadata_manager.ReplayedPartition:
    batches = (batch for log in sorted(directory.glob("*.log")) for batch in iter_batches(log.read_bytes()))
    return group_metadata_manager.replay(batches, directory.name)


@pytest.mark.parametrize("directory", PARTITION_DIRS, ids=lambda d: f"{d.parents[1].name}/{d.name}")
def test_kafka_offsets_partition_replays_completely(directory):
    partition = int(directory.name.rsplit("-", 1)[1])
    replayed = _replay(directory)
    assert replayed.skipped == 0 and replayed.records > 0
    groups = {g for g, _, _ in replayed.offsets} | set(replayed.groups) | replayed.removed_groups
    assert groups and all(partition_for(g, 50) == partition for g in groups)
    for group_id, (version, value) in replayed.groups.items():
        group = group_metadata_manager.group_from_record(group_id, version, value)
        assert group.state in (GroupState.EMPTY, GroupState.STABLE)
        assert (group.state is GroupState.STABLE) == bool(value["Members"])


def test_tombstones_delete_the_group_and_its_offset():
    replayed = _replay(SEGMENTS / "kraft-compacted-ronem123" / "kafka-logs" / "__consumer_offsets-44")
    assert replayed.removed_groups == {"rupia-transaction-group"} and not replayed.groups
    assert ("rupia-transaction-group", "topic_transactions", 0) not in replayed.offsets


def test_repeated_commits_keep_the_last():
    replayed = _replay(SEGMENTS / "zk-2.x-iechenyb" / "kafka-logs" / "__consumer_offsets-36")
    assert list(replayed.offsets) == [("flink-group", "test-0921", 0)]
    assert replayed.records == 16
    committed = replayed.offsets[("flink-group", "test-0921", 0)]
    assert committed.record_offset == 15  # the last of the 16 single-record batches
