"""``kcli.tools.log_dir_sizes``: partition, topic and broker sizes from DescribeLogDirs answers of
three brokers, with a replication factor of 3, a future replica and a broker that failed."""

from __future__ import annotations

from kcli.client.admin import LogDirDescription, ReplicaInfo
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError
from kcli.tools.log_dir_sizes import broker_totals, partition_sizes, total_size

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def replica(size: int, future: bool = False) -> ReplicaInfo:
    return ReplicaInfo(size, 0, future)


ANSWERS = {
    1: {"/d1": LogDirDescription(None, {A0: replica(100), A1: replica(40)}), "/d2": LogDirDescription(None, {A0: replica(90, future=True), B0: replica(7)})},
    2: {"/d1": LogDirDescription(None, {A0: replica(100), A1: replica(41)})},
    3: {"/d1": LogDirDescription(ErrorCode.KAFKA_STORAGE_ERROR, {}), "/d2": LogDirDescription(None, {A0: replica(99), A1: replica(42)})},
}


def test_replicas_sum_every_copy_and_leader_is_the_leaders_own():
    sizes = partition_sizes(ANSWERS, {A0: 1, A1: 3, B0: -1})
    assert (sizes[A0].replicas, sizes[A0].leader) == (389, 100)  # the future copy on broker 1 takes disk, is not the leader's
    assert (sizes[A1].replicas, sizes[A1].leader) == (123, 42)
    assert (sizes[B0].replicas, sizes[B0].leader) == (7, None)  # no leader: unknown
    assert total_size([sizes[A0], sizes[A1]]).as_json() == {"replicas": 512, "leader": 142}
    assert total_size([sizes[B0]]).as_json() == {"replicas": 7, "leader": None}


def test_a_broker_that_failed_is_left_out():
    answers = {**ANSWERS, 3: KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "no")}
    sizes = partition_sizes(answers, {A0: 1, A1: 3, B0: 1})
    assert (sizes[A1].replicas, sizes[A1].leader) == (81, None)
    assert (sizes[B0].replicas, sizes[B0].leader) == (7, 7)


def test_broker_totals_count_dirs_partitions_and_future_replicas_apart():
    totals = broker_totals(ANSWERS, set())
    assert [(t.broker, t.log_dirs, t.offline_log_dirs, t.partitions, t.size, t.future_partitions, t.future_size) for t in totals] == [
        (1, 2, 0, 3, 147, 1, 90),
        (2, 1, 0, 2, 141, 0, 0),
        (3, 2, 1, 2, 141, 0, 0),
    ]
    assert [(t.partitions, t.size) for t in broker_totals(ANSWERS, {"b"})] == [(1, 7), (0, 0), (0, 0)]
