"""KIP-890's verification of a transactional produce, as Kafka 3.9 runs it by default
(``transaction.partition.verification.enable=true``).

The first transactional batch of a producer epoch on a partition is accepted only when the
transaction coordinator has the partition in that producer's open transaction; later batches of
the same transaction on the partition are not checked again. The coordinator's answer becomes
the produce error Kafka's AddPartitionsToTxnManager and ReplicaManager give clients of Produce
v3-11: a partition not added answers INVALID_TXN_STATE ("Partition was not added to the
transaction"), a fenced producer INVALID_PRODUCER_EPOCH, and the coordinator's retriable errors
NOT_ENOUGH_REPLICAS (which older clients retry without a metadata refresh).

In a cluster the transactional id's coordinator may be another broker (the leader of its
``__transaction_state`` partition): the produce handler then asks it first, for every partition
of the request in one AddPartitionsToTxn v4+ with ``verify_only`` (``AddPartitionsToTxnManager``,
Kafka's name), and the answers are checked as the local coordinator's would be.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kcli.broker.network.broker_connections import BrokerConnections
from kcli.client.connection import error_code
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError
from kcli.storage.records import RecordBatch

log = logging.getLogger("kcli.broker.transactions")

ADD_PARTITIONS_TO_TXN = 24
# The brokers' batched form of AddPartitionsToTxn, with verify_only (v5 may answer TRANSACTION_ABORTABLE).
_VERIFY_VERSIONS = (4, 5)

_RETRIABLE = frozenset({
    ErrorCode.CONCURRENT_TRANSACTIONS,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
})


def needs_verification(broker: Any, transactional_id: str | None, partition: Any, batch: RecordBatch | None) -> bool:
    """Whether the coordinator must confirm that this batch's transaction covers the partition."""
    if transactional_id is None or batch is None:
        return False
    if broker.transaction_coordinator is None or not broker.config.get("transaction.partition.verification.enable"):
        return False
    if not batch.is_transactional or batch.producer_id < 0:
        return False
    entry = partition.log.producer_state.last_entry(batch.producer_id)
    # Not when this transaction already wrote here.
    return not (entry is not None and entry.current_txn_first_offset >= 0 and entry.producer_epoch == batch.producer_epoch)


def coordinator_is_remote(broker: Any, transactional_id: str | None) -> bool:
    """Whether another broker coordinates ``transactional_id`` (verification goes over the wire)."""
    manager = broker.add_partitions_to_txn_manager
    if transactional_id is None or broker.transaction_coordinator is None or manager is None:
        return False
    if not broker.config.get("transaction.partition.verification.enable"):
        return False
    node = manager.coordinator_of(transactional_id)
    return node is not None and node >= 0 and node != broker.id


def verify_transactional_produce(
    broker: Any, transactional_id: str | None, partition: Any, batch: RecordBatch | None, remote: dict[TopicPartition, ErrorCode] | None = None
) -> None:
    """Raise the produce error for a transactional batch the transaction does not cover.

    ``batch`` is the header of the produced batch (``records.single_batch_header``; None when the
    records are not a magic-2 batch, which the log refuses). ``remote`` holds the answers of a
    coordinator on another broker, asked beforehand (``verify_remotely``)."""
    if not needs_verification(broker, transactional_id, partition, batch):
        return
    tp = TopicPartition(partition.topic, partition.index)
    if remote is not None:
        error = remote.get(tp, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    else:
        error = broker.transaction_coordinator.verify_partitions(transactional_id, batch.producer_id, batch.producer_epoch, [tp])[tp]
    raise_for_verification(error)


def raise_for_verification(error: ErrorCode) -> None:
    """The produce error of the coordinator's verification answer (none for NONE)."""
    if error == ErrorCode.NONE:
        return
    if error == ErrorCode.TRANSACTION_ABORTABLE:
        raise KafkaError(ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction")
    if error == ErrorCode.PRODUCER_FENCED:
        raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_PRODUCER_EPOCH.message)
    if error in _RETRIABLE:
        raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS, f"The transaction could not be verified: {error.name}")
    raise KafkaError(error, error.message)


class AddPartitionsToTxnManager:
    """Verification requests to transaction coordinators on other brokers (Kafka's
    AddPartitionsToTxnManager): AddPartitionsToTxn v4+ with ``verify_only``."""

    def __init__(self, connections: BrokerConnections, coordinator_of: Callable[[str], int | None]) -> None:
        self._connections = connections
        self.coordinator_of = coordinator_of  # the broker leading the id's __transaction_state partition

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """The coordinator's error for each partition (NONE: in the open transaction)."""
        node = self.coordinator_of(transactional_id)
        if node is None or node < 0:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(partitions):
            topics.setdefault(topic, []).append(index)
        request = {"transactions": [{
            "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": producer_epoch, "verify_only": True,
            "topics": [{"name": name, "partitions": indexes} for name, indexes in topics.items()],
        }]}
        try:
            answer = await self._connections.call(node, ADD_PARTITIONS_TO_TXN, request, versions=_VERIFY_VERSIONS)
        except KafkaError as exc:
            log.info("Verifying the transaction of %s at broker %d failed: %s", transactional_id, node, exc)
            return dict.fromkeys(partitions, ErrorCode.NETWORK_EXCEPTION)
        top = error_code(answer.error_code)
        if top:
            return dict.fromkeys(partitions, ErrorCode.for_code(top))
        result = dict.fromkeys(partitions, ErrorCode.UNKNOWN_SERVER_ERROR)
        for transaction in answer.results_by_transaction:
            for topic in transaction.topic_results:
                for p in topic.results_by_partition:
                    tp = TopicPartition(topic.name, int(p.partition_index))
                    if tp in result:
                        result[tp] = ErrorCode.for_code(error_code(p.partition_error_code))
        return result

    async def close(self) -> None:
        await self._connections.close()


async def verify_remotely(broker: Any, transactional_id: str, candidates: list[tuple[Any, RecordBatch | None]]) -> dict[TopicPartition, ErrorCode]:
    """Ask the remote coordinator about every (partition, batch header) of a produce request that
    needs verifying, in one request; the answers by partition."""
    wanted = [(partition, batch) for partition, batch in candidates if needs_verification(broker, transactional_id, partition, batch)]
    if not wanted:
        return {}
    first = wanted[0][1]
    partitions = [TopicPartition(p.topic, p.index) for p, _ in wanted]
    return await broker.add_partitions_to_txn_manager.verify(transactional_id, first.producer_id, first.producer_epoch, partitions)


def start_add_partitions_to_txn_manager(broker: Any) -> AddPartitionsToTxnManager:
    from kcli.broker.network.broker_connections import live_broker_address
    from kcli.metadata.topic_names import TRANSACTION_STATE_TOPIC_NAME

    def coordinator_of(transactional_id: str) -> int | None:
        info = broker.metadata.topic(TRANSACTION_STATE_TOPIC_NAME)
        if info is None:
            return None
        state = info.partitions.get(broker.transaction_coordinator.partition_for(transactional_id))
        return None if state is None else state.leader

    connections = BrokerConnections(
        live_broker_address(broker), client_id=f"broker-{broker.id}-add-partitions-to-txn", request_timeout_ms=broker.config.get("request.timeout.ms"),
        security=getattr(broker, "inter_broker_security", None),
    )
    return AddPartitionsToTxnManager(connections, coordinator_of)
