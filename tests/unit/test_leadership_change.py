"""The replica manager's one leadership signal (Kafka's onLeadershipChange): after a LeaderAndIsr,
a StopReplica or single-process hosting, its listeners learn which partitions it now leads and
which it follows or stopped hosting."""

from __future__ import annotations

from kcli.broker.replica.replica_manager import ReplicaManager, StopPartition
from kcli.metadata.topics import PartitionState, TopicPartitionState
from kcli.storage.log_manager import LogManager


def _state(topic: str, index: int, leader: int, leader_epoch: int = 1) -> TopicPartitionState:
    return TopicPartitionState(topic, None, index, PartitionState(replicas=(0, 1), isr=(leader,), leader=leader, leader_epoch=leader_epoch, partition_epoch=0, controller_epoch=1))


def test_listeners_learn_what_is_led_and_what_is_not(tmp_path):
    manager = LogManager([tmp_path / "logs"])
    replicas = ReplicaManager(0, manager)
    told = []
    remove = replicas.on_leadership_change(lambda led, not_led: told.append(([(p.topic, p.index) for p in led], sorted(not_led))))
    replicas.become_leader_or_follower(1, 1, [_state("offsets", 0, leader=0), _state("offsets", 1, leader=1)])
    replicas.become_leader_or_follower(1, 1, [_state("offsets", 0, leader=1, leader_epoch=2), _state("offsets", 1, leader=1)])  # 1: stale epoch
    replicas.stop_replicas_request(1, 1, [StopPartition("offsets", 1, -1, False)])
    replicas.host_leaders([_state("orders", 0, leader=0)])
    remove()
    replicas.stop_replicas("orders", [0], delete=False)
    assert told == [
        ([("offsets", 0)], [("offsets", 1)]),
        ([], [("offsets", 0)]),  # the partition whose epoch was not newer changed nothing
        ([], [("offsets", 1)]),
        ([("orders", 0)], []),
    ]
    manager.shutdown()
