"""LeaderAndIsr against a log of an earlier topic of the same name: Kafka's INCONSISTENT_TOPIC_ID.

A topic deleted while its log stayed on a broker (its znodes removed by hand, say) and created
again has a new topic id; the broker answers INCONSISTENT_TOPIC_ID for that partition and keeps
the old log as it is (its ``partition.metadata`` still names the old id), as Kafka's
ReplicaManager does. Requests without topic ids (LeaderAndIsr v0-4) are not checked.
"""

from __future__ import annotations

import uuid

from kcli.broker.replica.replica_manager import ReplicaManager
from kcli.errors import ErrorCode
from kcli.metadata.topics import PartitionState, TopicPartitionState
from kcli.storage.checkpoints import read_partition_metadata
from kcli.storage.log_manager import LogManager


def update(topic_id, leader_epoch=0, leader=0):
    state = PartitionState(replicas=(0,), isr=(0,), leader=leader, leader_epoch=leader_epoch, partition_epoch=0, controller_epoch=1)
    return TopicPartitionState("orders", topic_id, 0, state)


def test_a_log_of_another_topic_id_is_refused_and_kept(tmp_path):
    manager = LogManager([tmp_path / "logs"])
    replicas = ReplicaManager(0, manager)
    first, second = uuid.uuid4(), uuid.uuid4()
    assert replicas.become_leader_or_follower(0, 1, [update(first)]) == (ErrorCode.NONE, {("orders", 0): ErrorCode.NONE})
    error, errors = replicas.become_leader_or_follower(0, 1, [update(second, leader_epoch=1)])
    assert error == ErrorCode.NONE and errors == {("orders", 0): ErrorCode.INCONSISTENT_TOPIC_ID}
    assert replicas.hosted_leader_epoch("orders", 0) == 0  # still the first topic's partition
    assert read_partition_metadata(tmp_path / "logs" / "orders-0" / "partition.metadata") == first
    manager.shutdown()


def test_the_topic_id_is_checked_before_the_leader_epoch(tmp_path):
    """A topic created again starts its leader epochs again: its first LeaderAndIsr (epoch 0) is
    not newer than the old topic's, and Kafka answers INCONSISTENT_TOPIC_ID, not a stale epoch."""
    manager = LogManager([tmp_path / "logs"])
    replicas = ReplicaManager(0, manager)
    first, second = uuid.uuid4(), uuid.uuid4()
    replicas.become_leader_or_follower(0, 1, [update(first, leader_epoch=3)])
    _, errors = replicas.become_leader_or_follower(0, 1, [update(second, leader_epoch=0)])
    assert errors == {("orders", 0): ErrorCode.INCONSISTENT_TOPIC_ID}
    _, errors = replicas.become_leader_or_follower(0, 1, [update(first, leader_epoch=3)])
    assert errors == {("orders", 0): ErrorCode.STALE_CONTROLLER_EPOCH}  # the same topic: the epoch decides
    assert replicas.hosted_leader_epoch("orders", 0) == 3
    manager.shutdown()


def test_a_log_on_disk_of_another_topic_id_is_refused_when_opened(tmp_path):
    first, second = uuid.uuid4(), uuid.uuid4()
    manager = LogManager([tmp_path / "logs"])
    ReplicaManager(0, manager).become_leader_or_follower(0, 1, [update(first)])
    manager.shutdown()
    reopened = LogManager([tmp_path / "logs"])
    replicas = ReplicaManager(0, reopened)
    _, errors = replicas.become_leader_or_follower(0, 2, [update(second, leader=1)])  # as a follower
    assert errors == {("orders", 0): ErrorCode.INCONSISTENT_TOPIC_ID}
    assert not replicas.is_follower("orders", 0)
    reopened.shutdown()


def test_requests_without_topic_ids_are_not_checked(tmp_path):
    manager = LogManager([tmp_path / "logs"])
    replicas = ReplicaManager(0, manager)
    first = uuid.uuid4()
    replicas.become_leader_or_follower(0, 1, [update(first)])
    _, errors = replicas.become_leader_or_follower(0, 1, [update(uuid.UUID(int=0), leader_epoch=1)])
    assert errors == {("orders", 0): ErrorCode.NONE}
    assert read_partition_metadata(tmp_path / "logs" / "orders-0" / "partition.metadata") == first
    manager.shutdown()
