"""What the controller's requests to brokers share (LeaderAndIsr, StopReplica, UpdateMetadata).

A partition state on the wire (LeaderAndIsr's and UpdateMetadata's) becomes the one type the
controller decides with and the replica manager applies, ``metadata.topics.PartitionState``, in
one place (``partition_state``).

Each carries the sender's controller epoch, which the receiving broker checks against the newest
it has seen (a deposed controller is fenced), and from v2/v1/v5 on the receiver's broker epoch,
the czxid of its ``/brokers/ids`` registration when the controller sent it: a request meant for
an older registration of this broker is refused with STALE_BROKER_EPOCH (Kafka's
KafkaApis.isBrokerEpochStale; -1, sent by controllers of before KIP-380, is never stale, nor is
an epoch newer than the broker knows yet).
"""

from __future__ import annotations

import logging

from kcli.metadata.topics import PartitionState

log = logging.getLogger("kcli.broker.state.change")

UNKNOWN_BROKER_EPOCH = -1


def partition_state(p) -> PartitionState:
    """A LeaderAndIsr or UpdateMetadata partition state as a ``PartitionState``. The partition
    epoch is UpdateMetadata's ``zk_version`` (LeaderAndIsr's ``partition_epoch``); fields a request
    or version lacks (adding and removing replicas before LeaderAndIsr v3 and in UpdateMetadata,
    the leader recovery state before v6) take Kafka's defaults."""
    partition_epoch = getattr(p, "partition_epoch", None)
    return PartitionState(
        replicas=tuple(p.replicas),
        isr=tuple(p.isr),
        leader=p.leader,
        leader_epoch=p.leader_epoch,
        partition_epoch=p.zk_version if partition_epoch is None else partition_epoch,
        adding_replicas=tuple(getattr(p, "adding_replicas", None) or ()),
        removing_replicas=tuple(getattr(p, "removing_replicas", None) or ()),
        leader_recovery_state=getattr(p, "leader_recovery_state", 0),
        controller_epoch=p.controller_epoch,
    )


def broker_epoch_is_stale(broker, request) -> bool:
    requested = getattr(request, "broker_epoch", UNKNOWN_BROKER_EPOCH)
    if requested == UNKNOWN_BROKER_EPOCH:
        return False
    if requested < broker.broker_epoch:
        log.info(
            "Received a %s request with broker epoch %d smaller than the current broker epoch %d",
            type(request).__name__, requested, broker.broker_epoch,
        )
        return True
    return False
