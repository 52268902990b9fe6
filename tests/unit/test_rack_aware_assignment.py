"""Kafka's rack-aware replica placement (AdminUtils.assignReplicasToBrokers with racks).

The expected assignment is the one Kafka's own AdminRackAwareTest states for these racks, start
index and partition (Kafka 2.8.2, testGetRackAlternatedBrokerListAndAssignReplicasToBrokers).
"""

from __future__ import annotations

import random

from kcli.metadata.replica_assignment import assign_replicas_rack_aware

RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_kafkas_known_assignment():
    assert assign_replicas_rack_aware(RACKS, 7, 3, start_index=0, start_partition_id=0) == {
        0: (0, 3, 1), 1: (3, 1, 5), 2: (1, 5, 4), 3: (5, 4, 2), 4: (4, 2, 0), 5: (2, 0, 3), 6: (0, 4, 2),
    }


def test_every_partition_spans_as_many_racks_as_it_can():
    assignment = assign_replicas_rack_aware(RACKS, 12, 3, rng=random.Random(7))
    assert sorted(assignment) == list(range(12))
    for replicas in assignment.values():
        assert len(set(replicas)) == 3 and {RACKS[b] for b in replicas} == {"rack1", "rack2", "rack3"}
    # Leaders spread evenly: each broker leads two of the twelve partitions.
    leaders = [replicas[0] for replicas in assignment.values()]
    assert sorted(leaders.count(b) for b in RACKS) == [2] * 6


def test_more_replicas_than_racks_fill_the_racks_then_the_brokers():
    assignment = assign_replicas_rack_aware({0: "a", 1: "a", 2: "b"}, 3, 3, start_index=0, start_partition_id=0)
    assert all(sorted(replicas) == [0, 1, 2] for replicas in assignment.values())
