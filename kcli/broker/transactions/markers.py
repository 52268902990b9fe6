"""Transaction markers: the COMMIT or ABORT control batch that ends a transaction on a partition.

A marker is one control record (key: version 0 and the control type; value: version 0 and the
coordinator epoch) in a transactional control batch carrying the producer id and epoch, written
as the coordinator's append (epochs checked, sequences not), the way a broker handles
WriteTxnMarkers. It closes the producer's open transaction on the partition: the last stable
offset moves past it, and an ABORT adds the transaction to the segment's ``.txnindex``.
"""

from __future__ import annotations

from typing import Any

from kcli.errors import ErrorCode, KcliError
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
    replica_manager: Any, topic: str, index: int, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, timestamp: int
) -> ErrorCode:
    """Append one marker to a partition this broker leads; the error it answers with
    (NOT_LEADER_OR_FOLLOWER for a partition another broker leads, UNKNOWN_TOPIC_OR_PARTITION for
    one the cluster does not have)."""
    try:
        batch = marker_batch(producer_id, producer_epoch, coordinator_epoch, commit, timestamp)
        replica_manager.append_at_once((topic, index), batch, AppendOrigin.COORDINATOR)
    except KcliError as e:
        return ErrorCode(e.error_code)
    return ErrorCode.NONE
