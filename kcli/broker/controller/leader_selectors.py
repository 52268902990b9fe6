"""Kafka's partition leader election algorithms (PartitionLeaderElectionAlgorithms), one per
reason to elect, and the ISR each leaves.

Each takes the partition's assignment (replicas in preference order), its ISR and the live
replicas, and returns the election, or None when no replica may lead:

* offline: the first live replica of the assignment that is in the ISR (unclean election, with
  ``unclean.leader.election.enable``, takes the first live replica and makes it the ISR alone); the
  ISR keeps its live members;
* reassigned: the first live, in-sync replica of the reassignment's target replicas; ISR unchanged;
* preferred: the first replica of the assignment, if it is live and in sync; ISR unchanged;
* controlled shutdown: the first live, in-sync replica that is not shutting down; the brokers
  shutting down leave the ISR.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple


class Election(NamedTuple):
    leader: int
    isr: tuple[int, ...]


def offline_partition_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int], *, unclean: bool = False
) -> Election | None:
    leader = next((r for r in assignment if r in live and r in isr), None)
    if leader is not None:
        return Election(leader, tuple(r for r in isr if r in live))
    if unclean:
        leader = next((r for r in assignment if r in live), None)
        if leader is not None:
            return Election(leader, (leader,))
    return None


def reassigned_partition_leader(reassignment: Sequence[int], isr: Sequence[int], live: Collection[int]) -> Election | None:
    leader = next((r for r in reassignment if r in live and r in isr), None)
    return Election(leader, tuple(isr)) if leader is not None else None


def preferred_replica_partition_leader(assignment: Sequence[int], isr: Sequence[int], live: Collection[int]) -> Election | None:
    if assignment and assignment[0] in live and assignment[0] in isr:
        return Election(assignment[0], tuple(isr))
    return None


def controlled_shutdown_partition_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int], shutting_down: Collection[int]
) -> Election | None:
    leader = next((r for r in assignment if r in live and r in isr and r not in shutting_down), None)
    if leader is None:
        return None
    return Election(leader, tuple(r for r in isr if r not in shutting_down))
