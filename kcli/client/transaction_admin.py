"""Transactions as an operator sees them: the admin calls behind kafka-transactions.sh.

``TransactionAdmin`` wraps a ``NetworkClient`` (``cluster.call``, ``coordinator``, ``leader``,
``retrying``) with the calls Kafka's Admin client makes for TransactionsCommand:

- ``list_transactions``: ListTransactions at every broker (each coordinator holds its own ids),
  answered per broker id as ``listTransactions(...).allByBrokerId()``; state, producer id and
  (v1) duration filters are sent as Kafka's ListTransactionsHandler sends them.
- ``describe_transactions``: DescribeTransactions at each id's transaction coordinator
  (FindCoordinator key type 1).
- ``describe_producers``: DescribeProducers at each partition's leader, or at one given broker.
- ``abort_transaction``: an ABORT marker written with WriteTxnMarkers at the partition's leader,
  as ``Admin.abortTransaction`` does for a hanging transaction.

Per-item failures are ``KafkaError``s whose messages are the ones Kafka's admin handlers give
their exceptions, so the tool prints Kafka's lines. Retriable errors (a moved leader or
coordinator, a coordinator still loading) are retried with the cluster's backoff.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar

from kcli.client.connection import error_code
from kcli.client.network_client import NetworkClient
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError

WRITE_TXN_MARKERS = 27
DESCRIBE_PRODUCERS = 61
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
TRANSACTION_KEY = 1  # FindCoordinator key type of a transactional id
T = TypeVar("T")

# Kafka's admin TransactionState names; anything else a broker says is "Unknown".
TRANSACTION_STATES = ("Ongoing", "PrepareAbort", "PrepareCommit", "CompleteAbort", "CompleteCommit", "Empty", "PrepareEpochFence")
_COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


def transaction_state(name: str) -> str:
    """Kafka's ``TransactionState.parse(name).toString()``."""
    return name if name in TRANSACTION_STATES else "Unknown"


@dataclasses.dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclasses.dataclass(frozen=True)
class TransactionDescription:
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None  # None: no transaction open
    topic_partitions: tuple[TopicPartition, ...]  # in the order the broker answered them


@dataclasses.dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None  # None when the broker says -1
    current_transaction_start_offset: int | None  # None when no transaction is open


@dataclasses.dataclass(frozen=True)
class AbortTransactionSpec:
    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        return (
            f"AbortTransactionSpec(topicPartition={self.topic_partition}, producerId={self.producer_id}, "
            f"producerEpoch={self.producer_epoch}, coordinatorEpoch={self.coordinator_epoch})"
        )


class TransactionAdmin:
    """Transaction calls over one ``NetworkClient``."""

    def __init__(self, cluster: NetworkClient) -> None:
        self.cluster = cluster

    # -- ListTransactions ----------------------------------------------------------------------------

    async def list_transactions(
        self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = (), duration_ms: int | None = None
    ) -> dict[int, list[TransactionListing]]:
        """Every broker's transactions, by broker id (ascending)."""
        await self.cluster.refresh([])
        nodes = sorted(self.cluster.metadata.brokers)
        if not nodes:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, "the cluster's metadata names no broker")
        fields = {"state_filters": list(states), "producer_id_filters": list(producer_ids), "duration_filter": -1 if duration_ms is None else duration_ms}
        at_least = 1 if duration_ms is not None and duration_ms >= 0 else 0
        answers = await asyncio.gather(*(self.cluster.retrying(lambda n=n: self._list_at(n, fields, at_least)) for n in nodes))
        return dict(zip(nodes, answers))

    async def _list_at(self, node: int, fields: dict[str, Any], at_least: int) -> list[TransactionListing]:
        answer = await self.cluster.call(node, LIST_TRANSACTIONS, fields, at_least=at_least)
        code = error_code(answer.error_code)
        if code == ErrorCode.COORDINATOR_NOT_AVAILABLE:
            raise KafkaError(
                ErrorCode.COORDINATOR_NOT_AVAILABLE, f"ListTransactions request sent to broker {node} failed because the coordinator is shutting down"
            )
        if code:
            error = ErrorCode.for_code(code)
            raise KafkaError(error, f"ListTransactions request sent to broker {node} failed with an unexpected exception")
        return [TransactionListing(s.transactional_id, int(s.producer_id), transaction_state(s.transaction_state)) for s in answer.transaction_states]

    # -- DescribeTransactions ------------------------------------------------------------------------

    async def describe_transactions(self, transactional_ids: Iterable[str]) -> dict[str, TransactionDescription | KafkaError]:
        """Each id's description, or the KafkaError describing it failed with."""
        ids = list(dict.fromkeys(transactional_ids))
        answers = await asyncio.gather(*(_caught(self._describe_one(i)) for i in ids))
        return dict(zip(ids, answers))

    async def _describe_one(self, transactional_id: str) -> TransactionDescription:
        async def attempt() -> TransactionDescription:
            node = await self.cluster.coordinator(transactional_id, TRANSACTION_KEY)
            try:
                answer = await self.cluster.call(node, DESCRIBE_TRANSACTIONS, {"transactional_ids": [transactional_id]})
                return _description(node, transactional_id, answer)
            except KafkaError as exc:
                if exc.error_code in _COORDINATOR_MOVED:
                    self.cluster.forget_coordinator(transactional_id, TRANSACTION_KEY)
                raise

        return await self.cluster.retrying(attempt)

    # -- DescribeProducers ---------------------------------------------------------------------------

    async def describe_producers(self, partitions: Iterable[TopicPartition], *, broker_id: int | None = None) -> dict[TopicPartition, list[ProducerState] | KafkaError]:
        """Each partition's active producers (at its leader, or at ``broker_id``), or the
        KafkaError describing them failed with."""
        wanted = list(dict.fromkeys(partitions))
        answers = await asyncio.gather(*(_caught(self._producers_of(tp, broker_id)) for tp in wanted))
        return dict(zip(wanted, answers))

    async def _producers_of(self, tp: TopicPartition, broker_id: int | None) -> list[ProducerState]:
        async def attempt() -> list[ProducerState]:
            node = broker_id if broker_id is not None else await self.cluster.leader(tp.topic, tp.partition)
            answer = await self.cluster.call(node, DESCRIBE_PRODUCERS, {"topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}]})
            found = [(t, p) for t in answer.topics for p in t.partitions if t.name == tp.topic and int(p.partition_index) == tp.partition]
            if not found:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"DescribeProducers response did not answer for partition {tp}")
            _topic, p = found[0]
            _raise_producers_error(tp, error_code(p.error_code), p.error_message, broker_id)
            return [
                ProducerState(
                    int(s.producer_id), int(s.producer_epoch), int(s.last_sequence), int(s.last_timestamp),
                    None if s.coordinator_epoch < 0 else int(s.coordinator_epoch),
                    None if s.current_txn_start_offset < 0 else int(s.current_txn_start_offset),
                )
                for s in p.active_producers
            ]

        return await self.cluster.retrying(attempt, on_stale=lambda: self.cluster.forget(tp.topic))

    # -- WriteTxnMarkers (abort) ---------------------------------------------------------------------

    async def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """Write an ABORT marker for ``spec`` at its partition's leader."""
        tp = spec.topic_partition
        marker = {
            "producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch, "transaction_result": False,
            "coordinator_epoch": spec.coordinator_epoch, "topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}],
        }

        async def attempt() -> None:
            node = await self.cluster.leader(tp.topic, tp.partition)
            answer = await self.cluster.call(node, WRITE_TXN_MARKERS, {"markers": [marker]})
            results = [
                error_code(p.error_code)
                for m in answer.markers if int(m.producer_id) == spec.producer_id
                for t in m.topics if t.name == tp.topic
                for p in t.partitions if int(p.partition_index) == tp.partition
            ]
            if len(results) != 1:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"WriteTxnMarkers response did not answer exactly once for {tp}")
            _raise_marker_error(spec, results[0])

        await self.cluster.retrying(attempt, on_stale=lambda: self.cluster.forget(tp.topic))


async def _caught(work: Awaitable[T]) -> T | KafkaError:
    try:
        return await work
    except KafkaError as exc:
        return exc


def _description(node: int, transactional_id: str, answer: Any) -> TransactionDescription:
    state = next((s for s in answer.transaction_states if s.transactional_id == transactional_id), None)
    if state is None:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"DescribeTransactions response did not answer for transactionalId `{transactional_id}`")
    code = error_code(state.error_code)
    what = f"DescribeTransactions request for transactionalId `{transactional_id}`"
    if code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
        raise KafkaError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, f"{what} failed because the ID could not be found")
    if code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        raise KafkaError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, f"{what} failed due to authorization failure")
    if code in _COORDINATOR_MOVED or code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        raise KafkaError(ErrorCode.for_code(code))  # retried (at the coordinator found again)
    if code:
        raise KafkaError(ErrorCode.for_code(code), f"{what} failed due to unexpected error")
    start = _millis(state.transaction_start_time)
    return TransactionDescription(
        coordinator_id=node,
        state=transaction_state(state.transaction_state),
        producer_id=int(state.producer_id),
        producer_epoch=int(state.producer_epoch),
        transaction_timeout_ms=_millis(state.transaction_timeout),
        transaction_start_time_ms=None if start < 0 else start,
        topic_partitions=tuple(TopicPartition(t.topic, int(p)) for t in state.topics for p in t.partitions),
    )


def _millis(value: Any) -> int:
    """A millisecond field as an int: kio reads some as datetimes (since the epoch) or timedeltas."""
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def _raise_producers_error(tp: TopicPartition, code: int, message: str | None, broker_id: int | None) -> None:
    """Kafka's DescribeProducersHandler.handlePartitionError, as exceptions."""
    if not code:
        return
    error = ErrorCode.for_code(code)
    if error is ErrorCode.NOT_LEADER_OR_FOLLOWER and broker_id is not None:
        raise KafkaError(_final(error), f"Failed to describe active producers for partition {tp} on brokerId {broker_id}")
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        raise KafkaError(error, f"{error.message} ({tp})")  # retriable: the leader is looked up again
    if error is ErrorCode.INVALID_TOPIC_EXCEPTION:
        raise KafkaError(error, f"Failed to fetch metadata for partition {tp} due to invalid topic error: {message or error.message}")
    if error is ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        raise KafkaError(error, f"Failed to describe active producers for partition {tp} due to authorization failure on topic `{tp.topic}`")
    raise KafkaError(_final(error), f"Failed to describe active producers for partition {tp} due to unexpected error")


def _raise_marker_error(spec: AbortTransactionSpec, code: int) -> None:
    """Kafka's AbortTransactionHandler.handleError, as exceptions."""
    if not code:
        return
    error = ErrorCode.for_code(code)
    what = f"WriteTxnMarkers request with {spec}"
    if error is ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        raise KafkaError(error, f"{what} failed due to cluster authorization error")
    if error is ErrorCode.INVALID_PRODUCER_EPOCH:
        raise KafkaError(error, f"{what} failed due an invalid producer epoch")
    if error is ErrorCode.TRANSACTION_COORDINATOR_FENCED:
        raise KafkaError(error, f"{what} failed since the provided coordinator epoch {spec.coordinator_epoch} has been fenced by the active coordinator")
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        raise KafkaError(error, f"{error.message} ({spec.topic_partition})")  # retried at the leader found again
    raise KafkaError(_final(error), f"{what} failed due to unexpected error: {error.message}")


def _final(error: ErrorCode) -> ErrorCode:
    """An error the admin handlers fail with at once, retriable or not: kept as its code when
    that cannot be retried, else named as an unexpected server error so no retry loop runs."""
    return error if not error.retriable else ErrorCode.UNKNOWN_SERVER_ERROR

