"""Transaction markers: the COMMIT or ABORT control batch that ends a transaction on a partition.

A marker is one control record (key: version 0 and the control type; value: version 0 and the
coordinator epoch) in a transactional control batch carrying the producer id and epoch, written
as the coordinator's append (epochs checked, sequences not), the way a broker handles
WriteTxnMarkers. It closes the producer's open transaction on the partition: the last stable
offset moves past it, and an ABORT adds the transaction to the segment's ``.txnindex``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcli.errors import ErrorCode
from kcli.metadata.topic_names import GROUP_METADATA_TOPIC_NAME
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import NO_SEQUENCE, ControlType, build_batch, control_record, end_txn_marker_value


def marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, timestamp: int) -> bytes:
    control_type = ControlType.COMMIT if commit else ControlType.ABORT
    return build_batch(
        [control_record(control_type, end_txn_marker_value(coordinator_epoch), timestamp)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        transactional=True,
        control=True,
    )


def write_marker(
    replica_manager: Any,
    group_coordinator: Any,
    topic: str,
    index: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    timestamp: int,
    then: Callable[[ErrorCode], None],
) -> None:
    """Append one marker with acks=-1 to a partition this broker leads; ``then`` gets the error
    once the in-sync replicas have it (NOT_LEADER_OR_FOLLOWER for a partition another broker
    leads, UNKNOWN_TOPIC_OR_PARTITION for one the cluster does not have). A marker replicated on
    ``__consumer_offsets`` commits or drops the producer's pending offsets there first (Kafka's
    scheduleHandleTxnCompletion in the WriteTxnMarkers callback)."""

    def appended(response: Any) -> None:
        error = ErrorCode(response.error_code)
        if error == ErrorCode.NONE and topic == GROUP_METADATA_TOPIC_NAME and group_coordinator is not None:
            group_coordinator.complete_transaction(producer_id, index, commit)
        then(error)

    batch = marker_batch(producer_id, producer_epoch, coordinator_epoch, commit, timestamp)
    replica_manager.append_for_coordinator((topic, index), batch, AppendOrigin.COORDINATOR, appended)
