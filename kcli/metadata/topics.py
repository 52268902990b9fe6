"""Topics and partitions as the cluster's metadata describes them (Kafka's metadata cache entries).

``TopicInfo`` and ``PartitionState`` are values: read from the tree by ``zk_client``, cached by the
broker's ``MetadataCache``, written by ``admin_zk_client`` and the controller.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kcli.common import uuid_to_string
from kcli.metadata import topic_names
from kcli.metadata import zk_paths as zk

ZERO_UUID = uuid.UUID(int=0)
_ONE_UUID = uuid.UUID(int=1)


def random_uuid() -> uuid.UUID:
    """Kafka's Uuid.randomUuid: never the reserved 0 or 1, never one whose string starts with '-'."""
    while True:
        candidate = uuid.uuid4()
        if candidate not in (ZERO_UUID, _ONE_UUID) and not uuid_to_string(candidate).startswith("-"):
            return candidate


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition: replicas in preference order, ISR, leader and the epochs that fence them.

    A partition whose state znode is missing (not yet elected) has leader -1 and epochs -1.
    """

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = zk.LEADER_RECOVERED
    controller_epoch: int = 0

    def out_of_range(self, index: int) -> str | None:
        """The first number of partition ``index`` that the int32 fields of Kafka's requests and
        responses cannot carry (``zk_paths``' ranges), named; None when every one fits."""
        fields = [("partition", index, zk.ID), ("leader", self.leader, zk.INT32), ("leader_epoch", self.leader_epoch, zk.INT32),
                  ("partition_epoch", self.partition_epoch, zk.INT32), ("controller_epoch", self.controller_epoch, zk.INT32)]
        for key, ids in (("replicas", self.replicas), ("isr", self.isr), ("adding_replicas", self.adding_replicas),
                         ("removing_replicas", self.removing_replicas)):
            fields.extend((key, value, zk.ID) for value in ids)
        for key, value, (low, high) in fields:
            if not low <= value <= high:
                return f"{key} {value} is out of range [{low}, {high}]"
        return None


@dataclass(frozen=True, slots=True)
class TopicPartitionState:
    """One partition's state with the partition it is of: what the controller decides, what a
    LeaderAndIsr or UpdateMetadata request carries, and what the replica manager applies. The
    topic id is None where the request names topics by name alone (LeaderAndIsr v0-4)."""

    topic: str
    topic_id: uuid.UUID | None
    index: int
    state: PartitionState


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic as cached: treat ``partitions`` and ``configs`` as read-only."""

    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionState]
    configs: Mapping[str, str]

    @property
    def is_internal(self) -> bool:
        return topic_names.is_internal(self.name)

    @property
    def replication_factor(self) -> int:
        """Replicas of the first partition, minus any being added (what Kafka's describe shows)."""
        first = self.partitions.get(0) or next(iter(self.partitions.values()), None)
        return len(first.replicas) - len(first.adding_replicas) if first is not None else 0


class TopicChangeKind(enum.Enum):
    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class TopicChange:
    kind: TopicChangeKind
    name: str
    topic: TopicInfo | None
    previous: TopicInfo | None


TopicListener = Callable[[TopicChange], None]
ConfigValidator = Callable[[Mapping[str, str]], None]
