"""Kafka's partition states (PartitionStateMachine) and the transitions between them.

NonExistentPartition -> NewPartition (the topic or partition was created) -> OnlinePartition (a
leader was elected) <-> OfflinePartition (its leader died and no replica could take over) ->
NonExistentPartition (deleted). The controller records each partition's state as it writes the
partition's leader; a transition Kafka does not allow is logged and not made.
"""

from __future__ import annotations

import logging
from enum import Enum

log = logging.getLogger("kcli.broker.controller")


class PartitionState(Enum):
    NON_EXISTENT_PARTITION = "NonExistentPartition"
    NEW_PARTITION = "NewPartition"
    ONLINE_PARTITION = "OnlinePartition"
    OFFLINE_PARTITION = "OfflinePartition"


_VALID_PREVIOUS = {
    PartitionState.NEW_PARTITION: {PartitionState.NON_EXISTENT_PARTITION},
    PartitionState.ONLINE_PARTITION: {PartitionState.NEW_PARTITION, PartitionState.ONLINE_PARTITION, PartitionState.OFFLINE_PARTITION},
    PartitionState.OFFLINE_PARTITION: {PartitionState.NEW_PARTITION, PartitionState.ONLINE_PARTITION, PartitionState.OFFLINE_PARTITION},
    PartitionState.NON_EXISTENT_PARTITION: {PartitionState.OFFLINE_PARTITION},
}


class PartitionStateMachine:
    def __init__(self, controller_id: int) -> None:
        self.controller_id = controller_id
        self.states: dict[tuple[str, int], PartitionState] = {}

    def reset(self) -> None:
        self.states.clear()

    def state(self, topic: str, index: int) -> PartitionState:
        return self.states.get((topic, index), PartitionState.NON_EXISTENT_PARTITION)

    def transition(self, topic: str, index: int, target: PartitionState) -> bool:
        """Move the partition to ``target``; False (logged) when Kafka does not allow it."""
        current = self.state(topic, index)
        if current not in _VALID_PREVIOUS[target]:
            log.error(
                "[Controller id=%d] Invalid state transition for partition %s-%d from %s to %s",
                self.controller_id, topic, index, current.value, target.value,
            )
            return False
        if target is PartitionState.NON_EXISTENT_PARTITION:
            self.states.pop((topic, index), None)
        else:
            self.states[(topic, index)] = target
        return True

    def observe(self, topic: str, index: int, leader: int | None) -> None:
        """Record a partition's state from its leader as found or written: no state yet (None) is
        NewPartition, leader -1 OfflinePartition, any other OnlinePartition."""
        if leader is None:
            target = PartitionState.NEW_PARTITION
        elif leader < 0:
            target = PartitionState.OFFLINE_PARTITION
        else:
            target = PartitionState.ONLINE_PARTITION
        if self.state(topic, index) is PartitionState.NON_EXISTENT_PARTITION and target is not PartitionState.NEW_PARTITION:
            self.transition(topic, index, PartitionState.NEW_PARTITION)
        if self.state(topic, index) is not target:
            self.transition(topic, index, target)

    def remove_topic(self, topic: str) -> None:
        for key in [key for key in self.states if key[0] == topic]:
            self.states[key] = PartitionState.OFFLINE_PARTITION
            self.transition(*key, PartitionState.NON_EXISTENT_PARTITION)
