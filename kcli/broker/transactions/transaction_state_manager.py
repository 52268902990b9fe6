"""The records of ``__transaction_state``: one per state change, replayed at load (Kafka's
TransactionStateManager, with TransactionLog's record encoding; the transactional ids in memory
are the ``TransactionCoordinator``'s).

Kafka 3.9 (transaction.version 0) writes, as version-prefixed key and value
(``protocol/coordinator_records``):

    TransactionLogKey v0 (transactional id) -> TransactionLogValue v0 (producer id, epoch,
    timeout, state id, partitions grouped by topic (null in Empty), last update and start
    timestamps); a null value (tombstone) when the transactional id expires.

Each write is one uncompressed magic-2 batch without producer id, appended through the partition
with acks=all (``min.insync.replicas`` = ``transaction.state.log.min.isr`` applies). Replay keeps
each transactional id's last record; a tombstone forgets it. Producer ids and epochs given out
come back from the records, so a restarted coordinator never hands out an epoch twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from kcli.metadata.topic_names import TRANSACTION_STATE_TOPIC_NAME
from kcli.broker.transactions.metadata import TransactionMetadata, TransactionState
from kcli.errors import ErrorCode, KcliError
from kcli.protocol import coordinator_records as schema
from kcli.storage.compression import CompressionType
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import MemoryRecordsBuilder

log = logging.getLogger(__name__)


def transaction_record(metadata: TransactionMetadata) -> tuple[bytes, bytes]:
    """The key and value Kafka writes for ``metadata``."""
    if metadata.state == TransactionState.EMPTY:
        partitions = None
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(metadata.partitions):
            by_topic.setdefault(topic, []).append(partition)
        partitions = [{"Topic": topic, "PartitionIds": ids} for topic, ids in by_topic.items()]
    value = {
        "ProducerId": metadata.producer_id,
        "ProducerEpoch": metadata.producer_epoch,
        "TransactionTimeoutMs": metadata.txn_timeout_ms,
        "TransactionStatus": int(metadata.state),
        "TransactionPartitions": partitions,
        "TransactionLastUpdateTimestampMs": metadata.txn_last_update_timestamp,
        "TransactionStartTimestampMs": metadata.txn_start_timestamp,
    }
    return schema.encode_transaction_log_key(metadata.transactional_id), schema.encode_transaction_log_value(value)


def transaction_batch(metadata: TransactionMetadata, timestamp: int) -> MemoryRecordsBuilder:
    return MemoryRecordsBuilder([transaction_record(metadata)], timestamp, CompressionType.NONE)


def tombstone_batch(transactional_id: str, timestamp: int) -> MemoryRecordsBuilder:
    return MemoryRecordsBuilder([(schema.encode_transaction_log_key(transactional_id), None)], timestamp, CompressionType.NONE)


def metadata_from_record(transactional_id: str, value: dict[str, Any]) -> TransactionMetadata:
    partitions = frozenset((g["Topic"], p) for g in (value["TransactionPartitions"] or ()) for p in g["PartitionIds"])
    return TransactionMetadata(
        transactional_id,
        producer_id=value["ProducerId"],
        producer_epoch=value["ProducerEpoch"],
        txn_timeout_ms=value["TransactionTimeoutMs"],
        state=TransactionState(value["TransactionStatus"]),
        partitions=partitions,
        txn_start_timestamp=value["TransactionStartTimestampMs"],
        txn_last_update_timestamp=value["TransactionLastUpdateTimestampMs"],
    )


def replay(batches: Iterable[Any], partition_name: str) -> dict[str, TransactionMetadata]:
    """Every transactional id of one ``__transaction_state`` partition, as its last record left it."""
    found: dict[str, TransactionMetadata] = {}
    for batch in batches:
        if getattr(batch, "is_control", False):
            continue
        for record in batch.records():
            try:
                if record.key is None:
                    raise KcliError("a record without a key")
                version, key = schema.decode_transaction_log_key(record.key)
                if key is None:
                    log.warning("Unknown key version %d at offset %d of %s; ignoring it", version, record.offset, partition_name)
                    continue
                transactional_id = key["TransactionalId"]
                if record.value is None:
                    found.pop(transactional_id, None)
                    continue
                _, value = schema.decode_transaction_log_value(record.value)
                found[transactional_id] = metadata_from_record(transactional_id, value)
            except (KcliError, ValueError) as e:
                log.warning("Skipping the record at offset %d of %s while loading transactions: %s", record.offset, partition_name, e)
    return found


class TransactionStateManager:
    """Appends to the ``__transaction_state`` partitions this broker leads (Kafka's
    TransactionStateManager.appendTransactionToLog)."""

    def __init__(self, replica_manager: Any) -> None:
        self.replica_manager = replica_manager

    def partition(self, index: int) -> Any:
        return self.replica_manager.get(TRANSACTION_STATE_TOPIC_NAME, index)

    def append(self, index: int, batch: MemoryRecordsBuilder, appended: Callable[[Any], None]) -> None:
        """Append one batch through the replica manager with acks=-1 (Kafka's
        appendTransactionToLog); ``appended`` gets the partition's answer once its in-sync
        replicas have it, or at once when the append fails."""
        self.replica_manager.append_for_coordinator((TRANSACTION_STATE_TOPIC_NAME, index), batch, AppendOrigin.CLIENT, appended)


def append_error(error_code: int) -> ErrorCode:
    """The error a failed ``__transaction_state`` write answers with (Kafka's conversions)."""
    code = ErrorCode(error_code)
    if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code
