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


def test_min_insync_replicas_above_the_replication_factor_refuses_every_acks_all_append(tmp_path, clock):
    """Kafka accepts min.insync.replicas larger than the replication factor on a topic, and then
    refuses every acks=all produce with NOT_ENOUGH_REPLICAS, however healthy the ISR; acks=1 writes."""
    from kcli.storage.log_config import LogConfig

    log = Log.open(tmp_path / "orders-2", LogConfig(min_insync_replicas=3))
    partition = Partition("orders", 2, None, log, local_broker_id=0, clock=lambda: clock[0])
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0, 1), replicas=(0, 1)))
    with pytest.raises(KafkaError) as refused:
        partition.append_records_to_leader(_batch(1), AppendOrigin.CLIENT, -1)
    assert refused.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS and log.log_end_offset == 0
    assert partition.append_records_to_leader(_batch(1), AppendOrigin.CLIENT, 1).last_offset == 0


# -- replication: the leader records its followers' fetches, the follower appends what it fetched ------


def test_a_follower_fetch_records_its_position_and_moves_the_high_watermark(partition, clock):
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0, 1)))
    partition.append_records_to_leader(_batch(5), AppendOrigin.CLIENT, 1)
    assert partition.high_watermark == 0
    assert partition.update_follower_fetch_state(1, 3, 0, clock[0], partition.log.log_end_offset)
    replica = partition.remote_replicas[1]
    assert (replica.log_end_offset, replica.log_start_offset, replica.last_fetch_time_ms) == (3, 0, clock[0])
    assert partition.high_watermark == 3
    clock[0] += 10
    assert partition.update_follower_fetch_state(1, 5, 0, clock[0], 5)
    assert partition.high_watermark == 5 and replica.last_caught_up_time_ms == clock[0]


def test_a_fetch_from_a_broker_that_is_no_replica_is_not_recorded(partition, clock):
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0, 1)))
    partition.append_records_to_leader(_batch(2), AppendOrigin.CLIENT, 1)
    assert not partition.update_follower_fetch_state(7, 2, 0, clock[0], 2)
    assert 7 not in partition.remote_replicas and partition.high_watermark == 0


def test_a_follower_is_caught_up_as_of_its_previous_fetch_when_it_reached_the_log_end_of_then(partition, clock):
    """Kafka's Replica.updateFetchState: a follower that asks for what the leader's log ended at
    on its previous fetch was caught up at that fetch's time, though the log grew since."""
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0,)))  # at NOW, its log empty
    replica = partition.remote_replicas[1]
    clock[0] += 1000
    partition.update_follower_fetch_state(1, 0, 0, clock[0], 4)  # the leader's log end of NOW: caught up then
    assert replica.last_caught_up_time_ms == NOW
    previous = clock[0]
    clock[0] += 1000
    partition.update_follower_fetch_state(1, 2, 0, clock[0], 9)  # behind the 4 of its previous fetch
    assert replica.last_caught_up_time_ms == NOW
    clock[0] += 1000
    partition.update_follower_fetch_state(1, 9, 0, clock[0], 12)  # reached the 9 of then, not the 12 of now
    assert replica.last_caught_up_time_ms == previous + 1000
    clock[0] += 1000
    partition.update_follower_fetch_state(1, 12, 0, clock[0], 12)
    assert replica.last_caught_up_time_ms == clock[0]


def test_a_follower_appends_the_leaders_batches_unchanged(tmp_path, clock):
    leader = Partition("orders", 0, None, Log.open(tmp_path / "a" / "orders-0"), local_broker_id=0, clock=lambda: clock[0])
    follower = Partition("orders", 0, None, Log.open(tmp_path / "b" / "orders-0"), local_broker_id=1, clock=lambda: clock[0])
    leader.make_leader(_state(leader=0, leader_epoch=3, isr=(0,)))
    follower.make_follower(_state(leader=0, leader_epoch=3, isr=(0,)))
    leader.append_records_to_leader(_batch(2), AppendOrigin.CLIENT, 1)
    leader.append_records_to_leader(_batch(3), AppendOrigin.CLIENT, 1)
    data = b"".join(piece.read() for piece in leader.log.read(0, 1 << 20).slices)
    info = follower.append_records_to_follower(data)
    assert (info.first_offset, info.last_offset) == (0, 4)
    assert follower.log.log_end_offset == 5 and follower.log.latest_epoch == 3
    assert follower.log.active_segment.log.path.read_bytes() == leader.log.active_segment.log.path.read_bytes() == data
    assert follower.update_follower_high_watermark(4) == 4
    assert follower.update_follower_high_watermark(9) == 5  # never above its own log end


# -- truncation by leader epoch (KIP-101, KIP-279, KIP-320) --------------------------------------------


def _led_through_epochs(partition, epochs_and_counts) -> None:
    """Lead ``partition`` through each (leader epoch, records appended in it)."""
    for epoch, count in epochs_and_counts:
        partition.make_leader(_state(leader=0, leader_epoch=epoch, isr=(0,)))
        if count:
            partition.append_records_to_leader(_batch(count), AppendOrigin.CLIENT, 1)


def test_the_leader_tells_a_diverging_follower_where_its_epoch_ends(partition):
    _led_through_epochs(partition, [(0, 5), (2, 3)])  # epoch 0 at 0-4, epoch 2 at 5-7
    assert partition.diverging_epoch(2, 8) is None  # the follower holds what the leader holds
    assert partition.diverging_epoch(0, 5) is None  # behind, on the same history
    assert partition.diverging_epoch(0, 7) == (0, 5)  # epoch 0 ended at 5 here, the follower has more of it
    assert partition.diverging_epoch(1, 6) == (0, 5)  # an epoch the leader never had: go back to epoch 0's end
    partition.log.maybe_increment_log_start_offset(partition.high_watermark)
    with pytest.raises(KafkaError) as behind:
        partition.diverging_epoch(0, 2)  # below the log start offset
    assert behind.value.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_follower_truncates_to_where_both_logs_agree(tmp_path, clock):
    follower = Partition("orders", 0, None, Log.open(tmp_path / "orders-0"), local_broker_id=0, clock=lambda: clock[0])
    _led_through_epochs(follower, [(0, 5), (2, 4)])  # its own history: epoch 0 at 0-4, epoch 2 at 5-8
    follower.make_follower(_state(leader=1, leader_epoch=3))
    follower.update_follower_high_watermark(0)  # the new leader has committed nothing yet
    assert follower.truncation_offset(2, 7) == (7, True)  # the same epoch, shorter at the leader
    assert follower.truncation_offset(2, 20) == (9, True)  # never past its own log end
    assert follower.truncation_offset(1, 6) == (5, False)  # epoch 1 unknown here: back to its epoch 0's end, checked again
    assert follower.truncate_to(5) == 5
    assert follower.log.log_end_offset == 5 and follower.log.latest_epoch == 0


def test_after_an_unclean_election_a_follower_truncates_below_its_high_watermark_and_reports_the_loss(tmp_path, clock, caplog):
    """Kafka's ReplicaFetcherThread.truncate goes below the high watermark: an uncleanly elected
    leader's log is the partition's. kcli reports what goes in one WARN line and keeps it aside."""
    follower = Partition("orders", 0, None, Log.open(tmp_path / "orders-0"), local_broker_id=0, clock=lambda: clock[0])
    _led_through_epochs(follower, [(0, 3), (2, 5)])  # epoch 0 at 0-2, epoch 2 at 3-7, all committed (ISR of one)
    assert follower.high_watermark == 8
    follower.make_follower(_state(leader=1, leader_epoch=4))
    assert follower.truncate_to(3) == 3
    assert follower.log.log_end_offset == 3 and follower.high_watermark == 3
    (line,) = [r for r in caplog.records if r.levelname == "WARNING"]
    message = line.getMessage()
    assert message.startswith("Truncated orders-0 to offset 3: offsets 3 to 7 (5 records in 1 batch of leader epochs 2) "
                              "are not in the log of leader 1 at leader epoch 4 and are lost, offsets 3 to 7 of them below "
                              "the high watermark 8 (committed: the leader was elected uncleanly); kept aside in ")
    kept = tmp_path / "orders-0" / "truncated-4-3"
    assert str(kept) in message
    assert [p.name for p in kept.iterdir()] == ["00000000000000000003.log"]


def test_a_truncation_that_removes_nothing_reports_nothing(tmp_path, clock, caplog):
    follower = Partition("orders", 0, None, Log.open(tmp_path / "orders-0"), local_broker_id=0, clock=lambda: clock[0])
    _led_through_epochs(follower, [(0, 3)])
    follower.make_follower(_state(leader=1, leader_epoch=1))
    assert follower.truncate_to(3) == 3
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    assert not [p for p in (tmp_path / "orders-0").iterdir() if p.is_dir()]


# -- the ISR: shrink, expand (KAFKA-7128), pending changes and the maximal ISR (KAFKA-13091) -------------


def _recording(partition):
    proposals = []
    partition._alter_isr = lambda p, proposal: proposals.append(proposal)
    return proposals


def test_a_follower_joins_the_isr_only_from_the_start_of_the_leaders_epoch(partition, clock):
    """KAFKA-7128: caught up to the high watermark is not enough while the high watermark is
    below where this leader's epoch started."""
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0,)))
    partition.append_records_to_leader(_batch(5), AppendOrigin.CLIENT, 1)
    partition.log.update_high_watermark(3)  # a leader elected with a high watermark behind its log
    partition.make_leader(_state(leader=0, leader_epoch=2, isr=(0, 1)))
    assert partition.leader_epoch_start_offset == 5 and partition.high_watermark == 3
    proposals = _recording(partition)
    partition.update_follower_fetch_state(2, 3, 0, clock[0], 5)  # at the high watermark, before the epoch's start
    assert proposals == [] and partition.pending_isr is None
    partition.update_follower_fetch_state(2, 5, 0, clock[0], 5)
    assert [p.isr for p in proposals] == [(0, 1, 2)] and proposals[0].is_expansion
    assert (proposals[0].leader_epoch, proposals[0].partition_epoch) == (2, 4)
    assert partition.isr == (0, 1)  # committed only once the controller answers
    assert partition.maximal_isr == (0, 1, 2)


def test_a_lagging_follower_leaves_the_isr_and_the_leader_never_does(partition, clock):
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0, 1, 2)))
    proposals = _recording(partition)
    partition.append_records_to_leader(_batch(4), AppendOrigin.CLIENT, 1)
    partition.update_follower_fetch_state(1, 4, 0, clock[0], 4)
    partition.update_follower_fetch_state(2, 2, 0, clock[0], 4)
    clock[0] += LAG  # not yet past replica.lag.time.max.ms
    assert partition.maybe_shrink_isr() is None
    clock[0] += 1
    shrink = partition.maybe_shrink_isr()
    assert shrink is not None and shrink.isr == (0, 1) and not shrink.is_expansion and proposals == [shrink]
    assert partition.maybe_shrink_isr() is None  # one change at a time
    assert partition.maximal_isr == (0, 1, 2)  # replica 2 still counts until the controller answers
    # A leader alone stays in its ISR, whatever its followers do.
    partition.make_leader(_state(leader=0, leader_epoch=2, isr=(0,)))
    assert partition.pending_isr is None  # the controller's state replaced the proposal
    clock[0] += 10 * LAG
    assert partition.maybe_shrink_isr() is None and partition.isr == (0,)


def test_the_high_watermark_waits_for_the_maximal_isr_and_moves_when_a_shrink_is_committed(partition, clock):
    """KAFKA-13091: while a shrink is pending the outgoing replica still holds the high
    watermark; once the controller commits it the high watermark moves at once."""
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0, 1, 2)))
    proposals = _recording(partition)
    partition.append_records_to_leader(_batch(6), AppendOrigin.CLIENT, 1)
    partition.update_follower_fetch_state(1, 6, 0, clock[0], 6)
    partition.update_follower_fetch_state(2, 2, 0, clock[0], 6)
    assert partition.high_watermark == 2
    clock[0] += LAG + 1
    shrink = partition.maybe_shrink_isr()
    assert not partition.maybe_increment_leader_hw() and partition.high_watermark == 2
    assert partition.check_enough_replicas_reach_offset(6) == (False, ErrorCode.NONE)
    # An answer for another proposal, or of an older partition epoch, changes nothing.
    assert not partition.isr_change_answered(proposals[0].__class__((0,), 1, 4), (0,), 1, 5)
    assert not partition.isr_change_answered(shrink, (0, 1), 1, 3)
    assert partition.pending_isr is shrink
    assert partition.isr_change_answered(shrink, (0, 1), 1, 5)
    assert (partition.isr, partition.partition_epoch, partition.pending_isr) == ((0, 1), 5, None)
    assert partition.high_watermark == 6
    assert partition.check_enough_replicas_reach_offset(6) == (True, ErrorCode.NONE)


def test_a_refused_isr_change_stays_pending_until_the_controllers_next_state(partition, clock):
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0,)))
    proposals = _recording(partition)
    partition.update_follower_fetch_state(1, 0, 0, clock[0], 0)
    (expand,) = proposals
    partition.isr_change_refused(expand, ErrorCode.INVALID_UPDATE_VERSION)
    assert partition.pending_isr is expand and partition.isr == (0,)
    partition.update_follower_fetch_state(2, 0, 0, clock[0], 0)
    assert proposals == [expand]  # nothing more proposed meanwhile
    partition.make_leader(_state(leader=0, leader_epoch=2, isr=(0, 1), partition_epoch=5))
    assert partition.pending_isr is None and partition.isr == (0, 1)


def test_a_former_leader_forgets_the_epoch_it_led_without_appending(tmp_path, clock):
    """Kafka's Log.truncateTo: a broker elected (its epoch given a start offset) that appended
    nothing before it followed again must not keep reporting that epoch as its last fetched one,
    or its new leader, which never had it, would tell it to truncate again and again."""
    former = Partition("orders", 0, None, Log.open(tmp_path / "orders-0"), local_broker_id=0, clock=lambda: clock[0])
    _led_through_epochs(former, [(0, 4), (2, 0)])  # epoch 2 starts at 4 and holds nothing
    former.make_follower(_state(leader=1, leader_epoch=3))
    former.update_follower_high_watermark(0)
    assert former.log.latest_epoch == 2
    assert former.truncation_offset(0, 4) == (4, True)  # the new leader's epoch 0 ends at 4 too
    assert former.truncate_to(4) == 4
    assert former.log.latest_epoch == 0 and former.log.log_end_offset == 4


def test_a_replica_the_controller_took_out_of_the_isr_no_longer_holds_the_high_watermark(partition, clock):
    """Kafka 2.8's makeLeader resets every remote replica at each new leader epoch: a follower
    removed from the ISR (its broker stopped) is not counted as recently caught up any more."""
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0, 1, 2)))
    partition.append_records_to_leader(_batch(2), AppendOrigin.CLIENT, 1)
    partition.update_follower_fetch_state(1, 2, 0, clock[0], 2)
    partition.update_follower_fetch_state(2, 2, 0, clock[0], 2)
    assert partition.high_watermark == 2
    partition.make_leader(_state(leader=0, leader_epoch=2, isr=(0, 2), partition_epoch=5))  # broker 1 stopped
    partition.append_records_to_leader(_batch(3), AppendOrigin.CLIENT, -1)
    partition.update_follower_fetch_state(2, 5, 0, clock[0], 5)
    assert partition.high_watermark == 5


def test_isr_changes_are_logged_in_kafka_2_8s_words(partition, clock, caplog):
    """Kafka 2.8's Partition: a shrink's INFO line (out-of-sync replicas separated by spaces), each
    proposal's DEBUG line with its LeaderAndIsr and IsrState, "ISR updated to" once committed, the
    DEBUG line of a proposal given up and the WARN of one retried; no "Expanding ISR" line (2.6's)."""
    import logging

    caplog.set_level(logging.DEBUG, logger="kcli.broker.replica.partition")
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0, 1, 2), partition_epoch=4))
    _recording(partition)
    partition.append_records_to_leader(_batch(4), AppendOrigin.CLIENT, 1)
    clock[0] += LAG + 1
    shrink = partition.maybe_shrink_isr()
    partition.isr_change_retried(shrink, ErrorCode.NOT_CONTROLLER)
    partition.isr_change_answered(shrink, (0,), 1, 5)
    partition.update_follower_fetch_state(2, 4, 0, clock[0], 4)
    expand = partition.pending_isr
    partition.isr_change_refused(expand, ErrorCode.INVALID_UPDATE_VERSION)
    ident = "[Partition orders-0 broker=0] "
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", ident + "Shrinking ISR from 0,1,2 to 0. Leader: (highWatermark: 0, endOffset: 4). "
                 "Out of sync replicas: (brokerId: 1, endOffset: -1) (brokerId: 2, endOffset: -1)."),
        ("DEBUG", ident + "Enqueued ISR change to state LeaderAndIsr(leader=0, leaderEpoch=1, isr=List(0), zkVersion=4) "
                  "after transition to PendingShrinkIsr(isr=Set(0, 1, 2), outOfSyncReplicaIds=Set(1, 2))"),
        ("WARNING", ident + "Failed to update ISR to PendingShrinkIsr(isr=Set(0, 1, 2), outOfSyncReplicaIds=Set(1, 2)) "
                    "due to unexpected NOT_CONTROLLER. Retrying."),
        ("INFO", ident + "ISR updated to 0 and version updated to [5]"),
        ("DEBUG", ident + "Enqueued ISR change to state LeaderAndIsr(leader=0, leaderEpoch=1, isr=List(0, 2), zkVersion=5) "
                  "after transition to PendingExpandIsr(isr=Set(0), newInSyncReplicaId=2)"),
        ("DEBUG", ident + "Failed to update ISR to PendingExpandIsr(isr=Set(0), newInSyncReplicaId=2) due to invalid version. Giving up."),
    ]


def test_the_log_end_offset_lag_describe_log_dirs_reports(partition, tmp_path):
    """Kafka's ReplicaManager.getLogEndOffsetLag: high watermark minus log end offset, never below
    0, for a leader and for a follower, however far behind its leader (a follower's high watermark
    is the leader's clamped to its own log end offset); -1 for a partition not hosted."""
    from kcli.broker.handlers.describe_log_dirs import INVALID_OFFSET_LAG, log_end_offset_lag

    assert log_end_offset_lag(None, 12) == INVALID_OFFSET_LAG == -1
    assert log_end_offset_lag(5, 9) == 0 and log_end_offset_lag(9, 9) == 0 and log_end_offset_lag(9, 5) == 4
    partition.make_follower(_state(leader=1, leader_epoch=3))
    partition.append_records_to_follower(_batch(3))  # offsets 0-2, copied from the leader
    partition.update_follower_high_watermark(10)  # the leader's: 7 records ahead
    assert (partition.high_watermark, partition.log.log_end_offset) == (3, 3)
    assert log_end_offset_lag(partition.high_watermark, partition.log.log_end_offset) == 0
    partition.make_leader(_state(leader=0, leader_epoch=4, isr=(0,)))
    partition.append_records_to_leader(_batch(2), AppendOrigin.CLIENT, 1)
    assert log_end_offset_lag(partition.high_watermark, partition.log.log_end_offset) == 0


def test_an_expansion_refused_as_ineligible_is_proposed_again_at_the_next_fetch(partition, clock):
    """INELIGIBLE_REPLICA (the controller does not count the follower alive yet, as after its
    session expired while it was frozen) changes no state, so no LeaderAndIsr will follow: the
    leader keeps its committed ISR and proposes again, rather than waiting forever."""
    partition.make_leader(_state(leader=0, leader_epoch=1, isr=(0,)))
    proposals = _recording(partition)
    partition.update_follower_fetch_state(1, 0, 0, clock[0], 0)
    (expand,) = proposals
    partition.isr_change_refused(expand, ErrorCode.INELIGIBLE_REPLICA)
    assert partition.pending_isr is None and partition.isr == (0,)
    partition.update_follower_fetch_state(2, 0, 0, clock[0], 0)
    assert [p.isr for p in proposals] == [(0, 1), (0, 2)]
