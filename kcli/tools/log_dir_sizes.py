"""Sizes on disk from DescribeLogDirs answers, for ``topics --describe --size`` and ``log-dirs
--describe --totals`` (kcli's own flags).

A replica's size is what its broker answers for it: the bytes of its segment files (Kafka's
``UnifiedLog.size``, indexes not included). A partition's ``replicas`` size sums every replica on
every broker asked, future replicas (a move between log dirs in progress) included, since they
take disk too; its ``leader`` size is the current leader's own replica (the data once, as a
consumer reads it), unknown (None) when the leader is unknown or did not describe it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kcli.common import TopicPartition


@dataclasses.dataclass
class Size:
    replicas: int = 0
    leader: int | None = None

    def add(self, other: Size) -> None:
        self.replicas += other.replicas
        self.leader = None if self.leader is None or other.leader is None else self.leader + other.leader

    def as_json(self) -> dict[str, int | None]:
        return {"replicas": self.replicas, "leader": self.leader}


def partition_sizes(answers: Mapping[int, Any], leaders: Mapping[TopicPartition, int]) -> dict[TopicPartition, Size]:
    """Each partition of ``leaders`` (tp -> leader id, -1 when none) sized from the brokers'
    log dirs (``answers``: broker -> {dir: LogDirDescription}; a broker's error is skipped)."""
    sizes = {tp: Size() for tp in leaders}
    for broker, dirs in answers.items():
        if isinstance(dirs, Exception):
            continue
        for description in dirs.values():
            for tp, info in description.replicas.items():
                size = sizes.get(tp)
                if size is None:
                    continue
                size.replicas += info.size
                if broker == leaders[tp] and not info.is_future:
                    size.leader = (size.leader or 0) + info.size
    return sizes


def total_size(sizes: Iterable[Size]) -> Size:
    """A topic's size: its partitions' added up (the leader's unknown if any partition's is)."""
    total = Size(leader=0)
    for size in sizes:
        total.add(size)
    return total


@dataclasses.dataclass
class BrokerTotal:
    """A broker's log dirs added up: partitions (current and future replicas) and their bytes."""

    broker: int
    log_dirs: int = 0
    offline_log_dirs: int = 0
    partitions: int = 0
    size: int = 0
    future_partitions: int = 0
    future_size: int = 0


def broker_totals(answers: Mapping[int, Any], topics: set[str]) -> list[BrokerTotal]:
    """Per broker, sorted by id, over the partitions of ``topics`` (every topic when empty)."""
    totals = []
    for broker in sorted(answers):
        total = BrokerTotal(broker)
        for description in answers[broker].values():
            total.log_dirs += 1
            total.offline_log_dirs += description.error is not None
            for tp, info in description.replicas.items():
                if topics and tp.topic not in topics:
                    continue
                if info.is_future:
                    total.future_partitions += 1
                    total.future_size += info.size
                else:
                    total.partitions += 1
                    total.size += info.size
        totals.append(total)
    return totals
