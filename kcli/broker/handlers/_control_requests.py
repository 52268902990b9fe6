"""What the controller's requests to brokers share (LeaderAndIsr, StopReplica, UpdateMetadata).

Each carries the sender's controller epoch, which the receiving broker checks against the newest
it has seen (a deposed controller is fenced), and from v2/v1/v5 on the receiver's broker epoch,
the czxid of its ``/brokers/ids`` registration when the controller sent it: a request meant for
an older registration of this broker is refused with STALE_BROKER_EPOCH (Kafka's
KafkaApis.isBrokerEpochStale; -1, sent by controllers of before KIP-380, is never stale, nor is
an epoch newer than the broker knows yet).
"""

from __future__ import annotations

import logging

log = logging.getLogger("kcli.broker.state.change")

UNKNOWN_BROKER_EPOCH = -1


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
