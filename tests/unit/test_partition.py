"""Partition (Kafka's kafka.cluster.Partition): one object through leader and follower roles, the
high watermark moved by one rule over the leader's log and the remote replicas."""

from __future__ import annotations

import pytest

from kcli.broker.replica.partition import NO_LEADER, Partition
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata.topics import PartitionState
from kcli.storage.log import Log
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import NewRecord, build_batch

NOW = 1_700_000_000_000
LAG = 30_000


def _batch(count: int) -> bytes:
    return build_batch([NewRecord(key=None, value=b"v", timestamp=NOW) for _ in range(count)])


def _state(leader: int, leader_epoch: int, isr=(0, 1), replicas=(0, 1, 2), partition_epoch: int = 4) -> PartitionState:
    return PartitionState(replicas=replicas, isr=isr, leader=leader, leader_epoch=leader_epoch, partition_epoch=partition_epoch, controller_epoch=2)


@pytest.fixture
def clock():
    return [NOW]


@pytest.fixture
def partition(tmp_path, clock):
    return Partition("orders", 0, None, Log.open(tmp_path / "orders-0"), local_broker_id=0, replica_lag_time_max_ms=LAG, clock=lambda: clock[0])


def test_leader_and_follower_roles_update_the_same_object(partition):
    assert partition.leader_id == NO_LEADER and not partition.is_leader
    assert partition.make_follower(_state(leader=1, leader_epoch=3))
    assert (partition.leader_id, partition.leader_epoch, partition.partition_epoch, partition.isr) == (1, 3, 4, ())
    assert sorted(partition.remote_replicas) == [1, 2]  # the assignment, as on any replica
    assert not partition.make_follower(_state(leader=1, leader_epoch=3))  # nothing changed
    assert partition.make_leader(_state(leader=0, leader_epoch=4, partition_epoch=5))
    assert (partition.is_leader, partition.leader_epoch, partition.partition_epoch, partition.isr) == (True, 4, 5, (0, 1))
    assert sorted(partition.remote_replicas) == [1, 2]
    assert not partition.make_leader(_state(leader=0, leader_epoch=5))  # already the leader
    assert partition.make_follower(_state(leader=2, leader_epoch=6))
    assert partition.leader_id == 2 and not partition.is_leader


def test_a_follower_refuses_appends(partition):
    partition.make_follower(_state(leader=1, leader_epoch=3))
    with pytest.raises(KafkaError) as refused:
        partition.append_records_to_leader(_batch(1), AppendOrigin.CLIENT, 1)
    assert refused.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert partition.log.log_end_offset == 0


def test_the_high_watermark_follows_the_isr_alone_leader(partition):
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0,)))
    partition.append_records_to_leader(_batch(3), AppendOrigin.CLIENT, -1)
    assert partition.log.log_end_offset == partition.high_watermark == 3
    assert partition.check_enough_replicas_reach_offset(3) == (True, ErrorCode.NONE)


def test_a_follower_in_the_isr_holds_the_high_watermark_at_its_log_end_offset(partition, clock):
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0, 1)))
    partition.append_records_to_leader(_batch(5), AppendOrigin.CLIENT, 1)
    assert partition.high_watermark == 0  # replica 1 in the ISR has not been heard from
    assert partition.check_enough_replicas_reach_offset(5) == (False, ErrorCode.NONE)
    partition.remote_replicas[1].log_end_offset = 2
    assert partition.maybe_increment_leader_hw()
    assert partition.high_watermark == 2
    partition.remote_replicas[1].log_end_offset = 1  # never backwards
    assert not partition.maybe_increment_leader_hw() and partition.high_watermark == 2
    partition.remote_replicas[1].log_end_offset = 5
    assert partition.maybe_increment_leader_hw() and partition.high_watermark == 5


def test_a_replica_out_of_the_isr_counts_only_while_recently_caught_up(partition, clock):
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0,)))
    partition.append_records_to_leader(_batch(4), AppendOrigin.CLIENT, 1)
    assert partition.high_watermark == 4  # replica 2, out of the ISR, never caught up: it does not count
    partition.append_records_to_leader(_batch(2), AppendOrigin.CLIENT, 1)
    replica = partition.remote_replicas[2]
    replica.log_end_offset, replica.last_caught_up_time_ms = 5, clock[0]
    partition.append_records_to_leader(_batch(1), AppendOrigin.CLIENT, 1)
    assert partition.high_watermark == 6  # held at 6: replica 2 (at 5) counts, and it never goes back
    clock[0] += LAG + 1
    partition.append_records_to_leader(_batch(1), AppendOrigin.CLIENT, 1)
    assert partition.high_watermark == 8  # the lagging replica no longer counts


def test_acks_all_needs_min_insync_replicas(tmp_path, clock):
    from kcli.storage.log_config import LogConfig

    log = Log.open(tmp_path / "orders-1", LogConfig(min_insync_replicas=2))
    partition = Partition("orders", 1, None, log, local_broker_id=0, clock=lambda: clock[0])
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0,)))
    with pytest.raises(KafkaError) as refused:
        partition.append_records_to_leader(_batch(1), AppendOrigin.CLIENT, -1)
    assert refused.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS and log.log_end_offset == 0
    partition.append_records_to_leader(_batch(1), AppendOrigin.CLIENT, 1)
    assert partition.check_enough_replicas_reach_offset(1) == (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
