"""Kafka's replica states (ReplicaStateMachine) and the transitions between them.

NonExistentReplica -> NewReplica (its partition was created or grew onto the broker) ->
OnlineReplica (its broker is live and was sent the partition's state) <-> OfflineReplica (its
broker died, shut down, or the replica is being deleted) -> ReplicaDeletionStarted (StopReplica
with delete sent) -> ReplicaDeletionSuccessful -> NonExistentReplica; a deletion that cannot start
(the broker is down) or fails goes to ReplicaDeletionIneligible, and from there to
OfflineReplica again when the broker comes back, or OnlineReplica.

A replica is (topic, partition, broker). The controller makes the transitions and their effects
(LeaderAndIsr, StopReplica, ISR writes); this machine holds the states and refuses, with an error
line, a transition Kafka does not allow.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from enum import Enum

log = logging.getLogger("kcli.broker.controller")

Replica = tuple[str, int, int]  # topic, partition, broker


class ReplicaState(Enum):
    NEW_REPLICA = "NewReplica"
    ONLINE_REPLICA = "OnlineReplica"
    OFFLINE_REPLICA = "OfflineReplica"
    REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
    REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT_REPLICA = "NonExistentReplica"


_S = ReplicaState
_VALID_PREVIOUS = {
    _S.NEW_REPLICA: {_S.NON_EXISTENT_REPLICA},
    _S.ONLINE_REPLICA: {_S.NEW_REPLICA, _S.ONLINE_REPLICA, _S.OFFLINE_REPLICA, _S.REPLICA_DELETION_INELIGIBLE},
    _S.OFFLINE_REPLICA: {_S.NEW_REPLICA, _S.ONLINE_REPLICA, _S.OFFLINE_REPLICA, _S.REPLICA_DELETION_INELIGIBLE},
    _S.REPLICA_DELETION_STARTED: {_S.OFFLINE_REPLICA},
    _S.REPLICA_DELETION_SUCCESSFUL: {_S.REPLICA_DELETION_STARTED},
    _S.REPLICA_DELETION_INELIGIBLE: {_S.OFFLINE_REPLICA, _S.REPLICA_DELETION_STARTED},
    _S.NON_EXISTENT_REPLICA: {_S.REPLICA_DELETION_SUCCESSFUL},
}


class ReplicaStateMachine:
    def __init__(self, controller_id: int) -> None:
        self.controller_id = controller_id
        self.states: dict[Replica, ReplicaState] = {}

    def reset(self) -> None:
        self.states.clear()

    def state(self, replica: Replica) -> ReplicaState:
        return self.states.get(replica, ReplicaState.NON_EXISTENT_REPLICA)

    def transition(self, replicas: Iterable[Replica], target: ReplicaState) -> list[Replica]:
        """Move each replica to ``target``; returns those moved (a transition Kafka does not allow
        is logged and not made)."""
        moved = []
        for replica in replicas:
            current = self.state(replica)
            if current not in _VALID_PREVIOUS[target]:
                log.error(
                    "[Controller id=%d] Invalid state transition for replica [Topic=%s,Partition=%d,Replica=%d] from %s to %s",
                    self.controller_id, *replica, current.value, target.value,
                )
                continue
            if target is ReplicaState.NON_EXISTENT_REPLICA:
                self.states.pop(replica, None)
            else:
                self.states[replica] = target
            moved.append(replica)
        return moved

    def replicas_in_state(self, target: ReplicaState, topic: str | None = None) -> list[Replica]:
        return sorted(r for r, s in self.states.items() if s is target and (topic is None or r[0] == topic))

    def topic_replicas(self, topic: str) -> dict[Replica, ReplicaState]:
        return {replica: state for replica, state in self.states.items() if replica[0] == topic}

    def remove_topic(self, topic: str) -> None:
        for replica in [replica for replica in self.states if replica[0] == topic]:
            del self.states[replica]
