"""KIP-890's verification of a transactional produce, as Kafka 3.9 runs it by default
(``transaction.partition.verification.enable=true``).

The first transactional batch of a producer epoch on a partition is accepted only when the
transaction coordinator has the partition in that producer's open transaction; later batches of
the same transaction on the partition are not checked again. The coordinator's answer becomes
the produce error Kafka's AddPartitionsToTxnManager and ReplicaManager give clients of Produce
v3-11: a partition not added answers INVALID_TXN_STATE ("Partition was not added to the
transaction"), a fenced producer INVALID_PRODUCER_EPOCH, and the coordinator's retriable errors
NOT_ENOUGH_REPLICAS (which older clients retry without a metadata refresh).
"""

from __future__ import annotations

from typing import Any

from kcli.errors import ErrorCode, KafkaError
from kcli.storage.records import RecordBatch

_RETRIABLE = frozenset({
    ErrorCode.CONCURRENT_TRANSACTIONS,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
})


def verify_transactional_produce(broker: Any, transactional_id: str | None, partition: Any, batch: RecordBatch | None) -> None:
    """Raise the produce error for a transactional batch the transaction does not cover.

    ``batch`` is the header of the produced batch (``records.single_batch_header``; None when the
    records are not a magic-2 batch, which the log refuses)."""
    if transactional_id is None or batch is None:
        return
    coordinator = broker.transaction_coordinator
    if coordinator is None or not broker.config.get("transaction.partition.verification.enable"):
        return
    if not batch.is_transactional or batch.producer_id < 0:
        return
    entry = partition.log.producer_state.last_entry(batch.producer_id)
    if entry is not None and entry.current_txn_first_offset >= 0 and entry.producer_epoch == batch.producer_epoch:
        return  # this transaction already wrote here
    tp = (partition.topic, partition.index)
    error = coordinator.verify_partitions(transactional_id, batch.producer_id, batch.producer_epoch, [tp])[tp]
    if error == ErrorCode.NONE:
        return
    if error == ErrorCode.TRANSACTION_ABORTABLE:
        raise KafkaError(ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction")
    if error == ErrorCode.PRODUCER_FENCED:
        raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_PRODUCER_EPOCH.message)
    if error in _RETRIABLE:
        raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS, f"The transaction could not be verified: {error.name}")
    raise KafkaError(error, error.message)
