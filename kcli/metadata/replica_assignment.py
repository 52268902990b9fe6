"""Where a new partition's replicas go, and the checks of an assignment given by hand.

Kafka's ``AdminUtils.assignReplicasToBrokers`` (rack-unaware, and rack-aware as the ZooKeeper-era
tools place a new topic's replicas when the brokers have racks), the KRaft controller's checks of a
manual assignment for CreateTopics, and the ZooKeeper-mode placement and checks of
CreatePartitions, with Kafka's error codes and messages.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from kcli.errors import ErrorCode, KafkaError

# Kafka's controller creates at most this many partitions per CreateTopics or CreatePartitions
# request (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH) and refuses a larger request whole
# with POLICY_VIOLATION. Checked before anything is allocated for the new partitions.
MAX_PARTITIONS_PER_REQUEST = 10_000

# Called with the replicas of the partitions an operation is about to add; raises KafkaError to
# refuse them (the broker checks its open-file budget).
NewPartitionsCheck = Callable[[Mapping[int, Sequence[int]]], None]


def check_partitions_per_request(new_partitions: int) -> None:
    """POLICY_VIOLATION when one request would create more than MAX_PARTITIONS_PER_REQUEST."""
    if new_partitions > MAX_PARTITIONS_PER_REQUEST:
        raise KafkaError(
            ErrorCode.POLICY_VIOLATION,
            f"Excessively large number of partitions per request: {new_partitions} new partitions, "
            f"at most {MAX_PARTITIONS_PER_REQUEST}.",
        )


def assign_replicas_to_brokers(
    brokers: Sequence[int],
    num_partitions: int,
    replication_factor: int,
    *,
    start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Kafka's rack-unaware AdminUtils placement.

    First replicas go round-robin over ``brokers`` from ``start_index`` (random when negative);
    the other replicas follow at a shift that grows by one each time the partition id wraps
    around the broker list, so followers of one broker's partitions spread over the others.
    """
    count = len(brokers)
    chooser = rng if rng is not None else random
    first_index = start_index if start_index >= 0 else chooser.randrange(count)
    shift = start_index if start_index >= 0 else chooser.randrange(count)
    partition = max(0, start_partition_id)
    assignment: dict[int, tuple[int, ...]] = {}
    for _ in range(num_partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        leader_index = (partition + first_index) % count
        followers = (brokers[_follower_index(leader_index, shift, j, count)] for j in range(replication_factor - 1))
        assignment[partition] = (brokers[leader_index], *followers)
        partition += 1
    return assignment


def assign_replicas_rack_aware(
    racks: Mapping[int, str],
    num_partitions: int,
    replication_factor: int,
    *,
    start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Kafka's rack-aware AdminUtils placement over ``racks`` (broker id -> rack).

    The brokers are taken one rack at a time (racks by name, brokers by id within a rack); the
    replicas of a partition then follow as in the rack-unaware placement, at a shift scaled by the
    number of racks, skipping a broker whose rack already holds a replica while a rack holds none,
    or that already holds one while a broker holds none.
    """
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    arranged = [column[row] for row in range(max(map(len, columns))) for column in columns if row < len(column)]
    count, rack_count = len(arranged), len(columns)
    chooser = rng if rng is not None else random
    first_index = start_index if start_index >= 0 else chooser.randrange(count)
    shift = start_index if start_index >= 0 else chooser.randrange(count)
    partition = max(0, start_partition_id)
    assignment: dict[int, tuple[int, ...]] = {}
    for _ in range(num_partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        leader_index = (partition + first_index) % count
        replicas = [arranged[leader_index]]
        racks_used, step = {racks[replicas[0]]}, 0
        while len(replicas) < replication_factor:
            broker = arranged[_follower_index(leader_index, shift * rack_count, step, count)]
            step += 1
            rack = racks[broker]
            if (rack not in racks_used or len(racks_used) == rack_count) and (broker not in replicas or len(replicas) == count):
                replicas.append(broker)
                racks_used.add(rack)
        assignment[partition] = tuple(replicas)
        partition += 1
    return assignment


def _follower_index(leader_index: int, shift: int, replica: int, count: int) -> int:
    return (leader_index + 1 + (shift + replica) % (count - 1)) % count


def check_manual_replicas(replicas: Sequence[int], expected: int | None, registered: set[int]) -> None:
    """The KRaft controller's checks of one manually assigned partition."""
    if not replicas:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        )
    previous = None
    for broker in sorted(replicas):
        if broker not in registered:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker}, but no such broker is registered.",
            )
        if broker == previous:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker} more than once.",
            )
        previous = broker
    if expected is not None and len(replicas) != expected:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is "
            f"not consistent with previous partitions, which have {expected} replica(s).",
        )


def manual_new_partitions(
    assignment: Sequence[Sequence[int]], existing: int, increment: int, replication_factor: int, brokers: Sequence[int]
) -> dict[int, tuple[int, ...]]:
    """The ZooKeeper-mode checks of the replicas given for new partitions."""
    available = set(brokers)
    unknown = list(dict.fromkeys(broker for replicas in assignment for broker in replicas if broker not in available))
    if unknown:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
        )
    if len(assignment) != increment:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Increasing the number of partitions by {increment} but {len(assignment)} assignments provided.",
        )
    added = {existing + index: tuple(replicas) for index, replicas in enumerate(assignment)}
    for partition, replicas in added.items():
        if not replicas:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Cannot have replication factor of 0 for partition id {partition}.",
            )
        if len(set(replicas)) != len(replicas):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} "
                f"for partition id {partition}.",
            )
    mismatched = {
        partition: len(replicas) for partition, replicas in added.items() if len(replicas) != replication_factor
    }
    if mismatched:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Inconsistent replication factor between partitions, partition 0 has {replication_factor} while "
            f"partitions [{', '.join(map(str, mismatched))}] have replication factors "
            f"[{', '.join(map(str, mismatched.values()))}], respectively.",
        )
    return added


def placed_new_partitions(
    brokers: Sequence[int], first_replicas: tuple[int, ...], existing: int, increment: int
) -> dict[int, tuple[int, ...]]:
    """ZooKeeper-mode placement of new partitions: round-robin continuing from partition 0's leader."""
    replication_factor = len(first_replicas)
    if replication_factor > len(brokers):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.",
        )
    start = next((index for index, broker in enumerate(brokers) if broker >= first_replicas[0]), 0)
    return assign_replicas_to_brokers(
        brokers, increment, replication_factor, start_index=start, start_partition_id=existing
    )
