"""A Fetch from a broker as a replica (``replica_id`` >= 0), at the leader: only the partition's
replicas read it (Kafka 3.x: NOT_LEADER_OR_FOLLOWER for any other broker), and a replica's read
is recorded as its position."""

from __future__ import annotations

import uuid

from kcli.broker.replica.delayed_fetch import FetchParams
from kcli.broker.replica.fetch_sessions import CachedPartition
from kcli.broker.replica.replica_manager import ReplicaManager
from kcli.errors import ErrorCode
from kcli.metadata.topics import PartitionState, TopicPartitionState
from kcli.storage.log_manager import LogManager
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import NewRecord, build_batch


def fetch(replicas: ReplicaManager, replica_id: int, offset: int = 0) -> list:
    answered: list = []
    params = FetchParams(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20)
    replicas.fetch_messages(params, {("orders", 0): CachedPartition(None, offset, 1 << 20)}, answered.append)
    [reads] = answered
    return [result for _, _, result in reads]


def test_only_the_partitions_replicas_read_it_as_replicas(tmp_path):
    manager = LogManager([tmp_path / "logs"])
    replicas = ReplicaManager(0, manager)
    state = PartitionState(replicas=(0, 1), isr=(0,), leader=0, leader_epoch=3, partition_epoch=0, controller_epoch=1)
    assert replicas.become_leader_or_follower(0, 1, [TopicPartitionState("orders", uuid.uuid4(), 0, state)])[0] == ErrorCode.NONE
    partition = replicas.get("orders", 0)
    partition.append_records_to_leader(build_batch([NewRecord(b"k", b"v", 1700000000000)]), AppendOrigin.CLIENT, 1)
    try:
        [stranger] = fetch(replicas, 2)
        assert stranger.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and not stranger.records
        [follower] = fetch(replicas, 1)
        assert follower.error_code == ErrorCode.NONE and follower.records
        [caught_up] = fetch(replicas, 1, offset=1)  # the follower now has the record
        assert caught_up.error_code == ErrorCode.NONE and caught_up.high_watermark == 1
    finally:
        manager.shutdown()
