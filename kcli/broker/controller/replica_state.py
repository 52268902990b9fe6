"""Kafka's replica states (ReplicaStateMachine), as the controller tracks a replica's deletion.

NewReplica -> OnlineReplica <-> OfflineReplica -> ReplicaDeletionStarted -> ReplicaDeletionSuccessful
-> NonExistentReplica; a deletion that cannot start (the broker is down) or fails goes to
ReplicaDeletionIneligible, and is started again when the broker comes back.
"""

from __future__ import annotations

from enum import Enum


class ReplicaState(Enum):
    NEW_REPLICA = "NewReplica"
    ONLINE_REPLICA = "OnlineReplica"
    OFFLINE_REPLICA = "OfflineReplica"
    REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
    REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT_REPLICA = "NonExistentReplica"
