"""The transaction coordinator (Kafka's TransactionCoordinator and TransactionStateManager).

Every transactional id of the ``__transaction_state`` partitions this broker leads lives here,
in memory, as the last record written for it. Each request and each timer changes one id on the
event loop (the owner that serialises its changes): the new state is prepared, its record
appended with acks=-1, and only installed, and the request answered, in the append's callback,
once the in-sync replicas have it (Kafka's appendTransactionToLog); meanwhile the id answers
CONCURRENT_TRANSACTIONS (Kafka's pendingState). EndTxn writes PrepareCommit or
PrepareAbort, then the markers to every partition of the transaction (``markers``; for
``__consumer_offsets`` the group coordinator then applies or drops the transaction's offsets),
then CompleteCommit or CompleteAbort. A marker that cannot be written yet (a partition still
loading, an append error) leaves the transaction in its Prepare state and is retried on a timer,
as is everything a load finds in a Prepare state: a crash between the decision and its markers
completes the transaction after restart. In a cluster, markers for partitions another broker
leads go to that leader in WriteTxnMarkers (``marker_channel_manager``); the transaction
completes once every leader answered for its partitions.

Transactions open longer than their timeout are aborted every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``, under a bumped epoch, so the
producer that began them is fenced. Ids without an open transaction and idle for
``transactional.id.expiration.ms`` are removed every
``transaction.remove.expired.transaction.cleanup.interval.ms`` (a tombstone, then out of memory).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kcli.broker.groups.partitioner import partition_for
from kcli.broker.transactions import markers, transaction_state_manager
from kcli.broker.transactions.marker_channel_manager import PendingMarkers
from kcli.metadata.topic_names import GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME
from kcli.broker.transactions.metadata import TransactionMetadata, TransactionState, is_epoch_exhausted
from kcli.broker.replica.delayed_produce import PartitionResponse
from kcli.common import TopicPartition
from kcli.errors import ErrorCode
from kcli.storage.records import NO_PRODUCER_EPOCH

log = logging.getLogger("kcli.broker.transactions")

_S = TransactionState
# How soon markers that could not be written are tried again.
MARKER_RETRY_MS = 100


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class TransactionConfig:
    partitions: int = 50
    max_timeout_ms: int = 900_000
    abort_interval_ms: int = 10_000
    load_buffer_size: int = 5 * 1024 * 1024
    id_expiration_ms: int = 604_800_000
    remove_expired_interval_ms: int = 3_600_000

    @classmethod
    def from_broker_config(cls, config: Any) -> TransactionConfig:
        get = config.get
        return cls(
            get("transaction.state.log.num.partitions"),
            get("transaction.max.timeout.ms"),
            get("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            get("transaction.state.log.load.buffer.size"),
            get("transactional.id.expiration.ms"),
            get("transaction.remove.expired.transaction.cleanup.interval.ms"),
        )


class TransactionCoordinator:
    def __init__(
        self,
        config: TransactionConfig,
        writer: transaction_state_manager.TransactionStateManager,
        replica_manager: Any,
        generate_producer_id: Callable[[], int],
        *,
        group_coordinator: Callable[[], Any] = lambda: None,
        time_ms: Callable[[], int] = now_ms,
        leader_of: Callable[[str, int], int | None] = lambda topic, index: None,
        marker_channel: Any = None,
    ) -> None:
        self.config = config
        self._writer = writer
        self._replicas = replica_manager
        self._generate_producer_id = generate_producer_id
        self._group_coordinator = group_coordinator
        self._time_ms = time_ms
        # The broker leading a partition this broker does not host (None: unknown, -1: none now).
        self._leader_of = leader_of
        self._marker_channel = marker_channel  # TransactionMarkerChannelManager, or None on one broker
        self._txns: dict[str, TransactionMetadata] = {}
        self._owned: set[int] = set()
        self._loading: set[int] = set()
        # Prepare{Commit,Abort} transactions whose markers are not all written: id -> partitions left.
        self._pending_markers: dict[str, set[TopicPartition]] = {}
        # Of those, the partitions whose markers are written and not yet answered.
        self._markers_in_flight: dict[str, set[TopicPartition]] = {}
        # Ids whose next record is appended and not yet replicated (Kafka's pendingState).
        self._writes_in_flight: set[str] = set()
        self._active = False
        self._tasks: set[asyncio.Task] = set()
        self._timers: list[asyncio.TimerHandle] = []
        self._retry: asyncio.TimerHandle | None = None

    # -- life cycle ----------------------------------------------------------------------------

    def startup(self, hosted_partitions: Iterable[int] = ()) -> None:
        self._active = True
        for partition in hosted_partitions:
            self.on_election(partition)
        self._schedule_abort_check()

    async def shutdown(self) -> None:
        self._active = False
        for timer in self._timers:
            timer.cancel()
        if self._retry is not None:
            self._retry.cancel()
        if self._marker_channel is not None:
            await self._marker_channel.shutdown()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._owned.clear()
        self._loading.clear()
        self._txns.clear()

    @property
    def active(self) -> bool:
        return self._active

    def now_ms(self) -> int:
        return self._time_ms()

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.partitions)

    def set_partition_count(self, count: int) -> None:
        if count != self.config.partitions and not (self._owned or self._loading):
            self.config = dataclasses.replace(self.config, partitions=count)

    def hosted_partitions(self) -> set[int]:
        return self._owned | self._loading

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        return self._txns.get(transactional_id)

    # -- loading -------------------------------------------------------------------------------

    def on_election(self, partition: int) -> None:
        if partition in self._owned or partition in self._loading:
            return
        hosted = self._writer.partition(partition)
        if hosted is None:
            return
        self._loading.add(partition)
        partition_log = hosted.log
        if partition_log.log_end_offset == partition_log.log_start_offset:
            self._install(partition, {})
            return
        task = asyncio.get_running_loop().create_task(self._load(partition, partition_log))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _load(self, partition: int, partition_log: Any) -> None:
        from kcli.broker.groups.group_metadata_manager import read_batches

        name = f"{TRANSACTION_STATE_TOPIC_NAME}-{partition}"
        started = self._time_ms()
        try:
            loaded = await asyncio.get_running_loop().run_in_executor(
                None, lambda: transaction_state_manager.replay(read_batches(partition_log, self.config.load_buffer_size), name)
            )
        except Exception:
            log.exception("Error loading transactions from %s", name)
            self._loading.discard(partition)
            return
        if partition in self._loading:
            self._install(partition, loaded)
            log.info("Finished loading %d transaction metadata from %s in %d milliseconds", len(loaded), name, self._time_ms() - started)

    def _install(self, partition: int, loaded: dict[str, TransactionMetadata]) -> None:
        self._txns.update(loaded)
        self._loading.discard(partition)
        self._owned.add(partition)
        for metadata in loaded.values():
            if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
                # The decision was written before the markers: finish what was begun.
                log.info("Completing transaction %s (%s) found at load", metadata.transactional_id, metadata.state.kafka_name)
                self._pending_markers[metadata.transactional_id] = set(metadata.partitions)
        if self._pending_markers:
            self._schedule_marker_retry(0)

    def on_resignation(self, partition: int) -> None:
        self._loading.discard(partition)
        self._owned.discard(partition)
        for transactional_id in [t for t in self._txns if self.partition_for(t) == partition]:
            del self._txns[transactional_id]
            self._pending_markers.pop(transactional_id, None)
            self._markers_in_flight.pop(transactional_id, None)

    # -- lookups -------------------------------------------------------------------------------

    def _state_error(self, transactional_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for an id this broker cannot answer yet."""
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def _coordinator_epoch(self, transactional_id: str) -> int:
        hosted = self._writer.partition(self.partition_for(transactional_id))
        return 0 if hosted is None else max(hosted.leader_epoch, 0)

    def _write(self, metadata: TransactionMetadata, then: Callable[[ErrorCode], None]) -> None:
        """Append the record of ``metadata`` with acks=-1; once its in-sync replicas have it,
        install it and call ``then(NONE)``, else ``then`` the error (Kafka's
        appendTransactionToLog and its callback). A coordinator that lost the partition meanwhile
        installs nothing and answers NOT_COORDINATOR."""
        transactional_id = metadata.transactional_id
        partition = self.partition_for(transactional_id)
        self._writes_in_flight.add(transactional_id)

        def appended(response: Any) -> None:
            self._writes_in_flight.discard(transactional_id)
            error = ErrorCode(response.error_code)
            if error != ErrorCode.NONE:
                log.info("Appending %s of %s to the transaction log failed: %s", metadata.state.kafka_name, transactional_id, error.name)
                then(transaction_state_manager.append_error(error))
            elif not self._active or partition not in self._owned:
                then(ErrorCode.NOT_COORDINATOR)
            else:
                self._txns[transactional_id] = metadata
                then(ErrorCode.NONE)

        try:
            self._writer.append(partition, transaction_state_manager.transaction_batch(metadata, self._time_ms()), appended)
        except Exception:
            log.exception("Appending %s of %s to the transaction log failed", metadata.state.kafka_name, transactional_id)
            appended(PartitionResponse(ErrorCode.UNKNOWN_SERVER_ERROR))

    def valid_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.max_timeout_ms

    # -- InitProducerId ------------------------------------------------------------------------

    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None, response_callback: Callable[[tuple[ErrorCode, int, int]], None]
    ) -> None:
        """``response_callback((error, producer id, epoch))`` for a transactional producer starting
        (or restarting), once its new epoch is replicated."""
        answer = self._init_producer_id(transactional_id, timeout_ms, expected, response_callback)
        if answer is not None:
            response_callback(answer)

    def _init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None, response_callback) -> tuple[ErrorCode, int, int] | None:
        """The answer when known at once; None when ``response_callback`` will get it."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, -1, -1
        if not self.valid_timeout(timeout_ms):
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        error = self._state_error(transactional_id)
        if error is not None:
            return error, -1, -1
        if transactional_id in self._pending_markers or transactional_id in self._writes_in_flight:
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        now = self._time_ms()
        metadata = self._txns.get(transactional_id)
        if metadata is None:
            metadata = TransactionMetadata(transactional_id, self._generate_producer_id(), txn_timeout_ms=timeout_ms, txn_last_update_timestamp=now)
            self._txns[transactional_id] = metadata
        if expected is not None and not self._valid_producer_id(metadata, expected):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        state = metadata.state
        if state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        if state == _S.ONGOING:
            # Abort the open transaction under a bumped epoch (fencing its producer); the client
            # retries on CONCURRENT_TRANSACTIONS and gets the epoch bumped once more.
            self._end(
                metadata.prepare_fence_producer_epoch(), False,
                lambda error: response_callback(((ErrorCode.CONCURRENT_TRANSACTIONS if error == ErrorCode.NONE else error), -1, -1)),
            )
            return None
        if state not in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
            return ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1
        if is_epoch_exhausted(metadata.producer_epoch) and (expected is None or expected[1] == metadata.producer_epoch):
            new = metadata.prepare_producer_id_rotation(self._generate_producer_id(), timeout_ms, now, expected is not None)
        else:
            new = metadata.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)
            if new is None:
                return ErrorCode.PRODUCER_FENCED, -1, -1

        def written(error: ErrorCode) -> None:
            if error != ErrorCode.NONE:
                response_callback((error, -1, -1))
                return
            log.info(
                "Initialized transactionalId %s with producerId %d and producer epoch %d on partition %s-%d",
                transactional_id, new.producer_id, new.producer_epoch, TRANSACTION_STATE_TOPIC_NAME, self.partition_for(transactional_id),
            )
            response_callback((ErrorCode.NONE, new.producer_id, new.producer_epoch))

        self._write(new, written)
        return None

    @staticmethod
    def _valid_producer_id(metadata: TransactionMetadata, expected: tuple[int, int]) -> bool:
        producer_id, epoch = expected
        return (
            metadata.producer_epoch == NO_PRODUCER_EPOCH
            or producer_id == metadata.producer_id
            or (producer_id == metadata.last_producer_id and is_epoch_exhausted(epoch))
        )

    # -- AddPartitionsToTxn, AddOffsetsToTxn, verification ----------------------------------------

    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int) -> tuple[ErrorCode | None, TransactionMetadata | None]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        error = self._state_error(transactional_id)
        if error is not None:
            return error, None
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if transactional_id in self._writes_in_flight:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        return None, metadata

    def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[TopicPartition], response_callback: Callable[[ErrorCode], None]
    ) -> None:
        """``response_callback(error)`` once the partitions joined the transaction (replicated)."""
        error, metadata = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error is None:
            if transactional_id in self._pending_markers or metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
                error = ErrorCode.CONCURRENT_TRANSACTIONS
            elif metadata.state == _S.ONGOING and partitions <= metadata.partitions:
                error = ErrorCode.NONE
            elif metadata.state not in (_S.EMPTY, _S.ONGOING, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
                error = ErrorCode.INVALID_TXN_STATE
        if error is not None:
            response_callback(error)
            return
        self._write(metadata.prepare_add_partitions(partitions, self._time_ms()), response_callback)

    def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str, offsets_partitions: int, response_callback: Callable[[ErrorCode], None]
    ) -> None:
        """The group's ``__consumer_offsets`` partition joins the transaction."""
        partition = partition_for(group_id, offsets_partitions)
        self.add_partitions(transactional_id, producer_id, producer_epoch, {(GROUP_METADATA_TOPIC_NAME, partition)}, response_callback)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """KIP-890's check that a transactional write goes to a partition of the open transaction:
        NONE, or TRANSACTION_ABORTABLE for a partition not added (Kafka's
        ``handleVerifyPartitionsInTransaction``)."""
        partitions = list(partitions)
        error, metadata = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error is None and metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error is not None:
            return dict.fromkeys(partitions, error)
        return {tp: ErrorCode.NONE if tp in metadata.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in partitions}

    # -- EndTxn --------------------------------------------------------------------------------

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, response_callback: Callable[[ErrorCode], None]) -> None:
        """``response_callback(error)`` once the decision is replicated (or refused at once)."""
        error, metadata = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error is None and transactional_id in self._pending_markers:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error is None:
            state = metadata.state
            if state == _S.ONGOING:
                self._end(metadata, commit, response_callback)
                return
            if state == _S.COMPLETE_COMMIT:
                error = ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE
            elif state == _S.COMPLETE_ABORT:
                error = ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.NONE
            elif state == _S.PREPARE_COMMIT:
                error = ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
            elif state == _S.PREPARE_ABORT:
                error = ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.CONCURRENT_TRANSACTIONS
            else:
                error = ErrorCode.INVALID_TXN_STATE
        response_callback(error)

    def _end(self, metadata: TransactionMetadata, commit: bool, then: Callable[[ErrorCode], None]) -> None:
        """Write the decision (PrepareCommit/PrepareAbort); once it is replicated, ``then`` is
        answered and the markers are written, then the completion. No marker is written before
        the decision is replicated: a new coordinator always knows what the markers say."""
        prepared = metadata.prepare_abort_or_commit(_S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT, self._time_ms())

        def written(error: ErrorCode) -> None:
            if error == ErrorCode.NONE:
                self._pending_markers[prepared.transactional_id] = set(prepared.partitions)
            then(error)
            if error == ErrorCode.NONE:
                self.send_markers(prepared.transactional_id)

        self._write(prepared, written)

    def send_markers(self, transactional_id: str) -> None:
        """Write the markers still owed by a prepared transaction: here for the partitions this
        broker leads, through WriteTxnMarkers for the others; once every one is answered
        (replicated at its leader), the completion."""
        metadata = self._txns.get(transactional_id)
        remaining = self._pending_markers.get(transactional_id)
        if metadata is None or remaining is None:
            self._pending_markers.pop(transactional_id, None)
            self._markers_in_flight.pop(transactional_id, None)
            return
        if transactional_id in self._writes_in_flight:
            return  # the completion is being written
        commit = metadata.state == _S.PREPARE_COMMIT
        coordinator_epoch = self._coordinator_epoch(transactional_id)
        now = self._time_ms()
        groups = self._group_coordinator()
        in_flight = self._markers_in_flight.setdefault(transactional_id, set())
        local: list[TopicPartition] = []
        remote: dict[int, list[TopicPartition]] = {}
        for topic, index in sorted(remaining):
            if (topic, index) in in_flight:
                continue  # its leader has not answered yet
            if self._marker_channel is not None and self._replicas.get(topic, index) is None:
                leader = self._leader_of(topic, index)
                if leader is not None and leader >= 0 and leader != self._replicas.broker_id:
                    remote.setdefault(leader, []).append(TopicPartition(topic, index))
                    continue
                if leader is not None and leader < 0:
                    continue  # no leader now: tried again on the timer
            if topic == GROUP_METADATA_TOPIC_NAME and groups is not None and index in groups.hosted_partitions() and not groups.is_loaded(index):
                continue  # its groups are loading: the marker waits so their offsets see it
            local.append(TopicPartition(topic, index))
        in_flight.update(local)
        for destination, partitions in remote.items():
            in_flight.update(partitions)
            self._marker_channel.add_markers(destination, PendingMarkers(
                transactional_id, metadata.producer_id, metadata.producer_epoch, coordinator_epoch, commit, partitions,
                lambda results, tid=transactional_id: self._markers_answered(tid, results),
            ))
        for tp in local:
            markers.write_marker(
                self._replicas, groups, tp[0], tp[1], metadata.producer_id, metadata.producer_epoch, coordinator_epoch, commit, now,
                lambda error, tid=transactional_id, tp=tp: self._markers_answered(tid, {tp: error}),
            )
        if not remaining:
            self._complete(transactional_id)  # nothing was owed, or every marker was answered at once
        elif remaining - in_flight:
            self._schedule_marker_retry(MARKER_RETRY_MS)

    def _markers_answered(self, transactional_id: str, results: dict[TopicPartition, ErrorCode]) -> None:
        """A leader (this broker, or another through WriteTxnMarkers) answered markers: written
        partitions are done, the others are tried again (at their leader then) on the timer."""
        in_flight = self._markers_in_flight.get(transactional_id)
        remaining = self._pending_markers.get(transactional_id)
        if in_flight is not None:
            in_flight.difference_update(results)
        if remaining is None or not self._active:
            return  # completed meanwhile, or this broker is no longer its coordinator
        failed = False
        for (topic, index), error in results.items():
            if error in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                # A partition deleted since it joined the transaction has nothing left to mark.
                remaining.discard((topic, index))
            else:
                failed = True
                log.info("The %s marker of %s for %s-%d failed at its leader (%s); retrying", "COMMIT" if self._txns[transactional_id].state == _S.PREPARE_COMMIT else "ABORT",
                         transactional_id, topic, index, error.name)
        if failed:
            self._schedule_marker_retry(MARKER_RETRY_MS)
        elif not remaining:
            self._complete(transactional_id)

    def _complete(self, transactional_id: str) -> None:
        """Every marker is written: CompleteCommit or CompleteAbort, then the id is free again."""
        metadata = self._txns.get(transactional_id)
        if metadata is None or transactional_id not in self._pending_markers or transactional_id in self._writes_in_flight:
            return
        self._markers_in_flight.pop(transactional_id, None)
        commit = metadata.state == _S.PREPARE_COMMIT

        def written(error: ErrorCode) -> None:
            if error != ErrorCode.NONE:
                self._schedule_marker_retry(MARKER_RETRY_MS)
                return
            self._pending_markers.pop(transactional_id, None)
            log.debug("Completed the transaction of %s (%s)", transactional_id, "commit" if commit else "abort")

        self._write(metadata.prepare_complete(self._time_ms()), written)

    def _schedule_marker_retry(self, delay_ms: int) -> None:
        if self._retry is not None or not self._active:
            return
        self._retry = asyncio.get_running_loop().call_later(delay_ms / 1000, self._retry_markers)

    def _retry_markers(self) -> None:
        self._retry = None
        for transactional_id in list(self._pending_markers):
            try:
                self.send_markers(transactional_id)
            except Exception:
                log.exception("Completing the transaction of %s failed", transactional_id)
                self._schedule_marker_retry(MARKER_RETRY_MS)

    # -- DescribeTransactions, ListTransactions --------------------------------------------------

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        error = self._state_error(transactional_id)
        if error is not None:
            return error, None
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.state == _S.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, metadata

    def list_transactions(self, states: Iterable[str], producer_ids: Iterable[int], duration_ms: int) -> tuple[ErrorCode, list[TransactionMetadata], list[str]]:
        """Kafka's ``listTransactionStates``: every id but Dead ones, filtered by state names,
        producer ids and (``duration_ms`` >= 0) open longer than that; names no state has come
        back as unknown filters."""
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, [], []
        if self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [], []
        by_name = {state.kafka_name: state for state in TransactionState}
        states = list(states)
        wanted = {by_name[name] for name in states if name in by_name}
        unknown = [name for name in states if name not in by_name]
        producer_ids = set(producer_ids)
        now = self._time_ms()
        found = [
            m for m in self._txns.values()
            if m.state != _S.DEAD
            and (not producer_ids or m.producer_id in producer_ids)
            and (not states or m.state in wanted)
            and not (duration_ms >= 0 and now - m.txn_start_timestamp <= duration_ms)
        ]
        return ErrorCode.NONE, found, unknown

    # -- timeouts ------------------------------------------------------------------------------

    def _schedule_abort_check(self) -> None:
        self._every(self.config.abort_interval_ms, self.abort_timed_out_transactions)
        self._every(self.config.remove_expired_interval_ms, self.remove_expired_transactional_ids)

    def _every(self, interval_ms: int, work: Callable[[], int]) -> None:
        loop = asyncio.get_running_loop()

        def run() -> None:
            self._timers.remove(handle)
            if not self._active:
                return
            try:
                work()
            except Exception:
                log.exception("%s failed", work.__name__)
            self._every(interval_ms, work)

        handle = loop.call_later(interval_ms / 1000, run)
        self._timers.append(handle)

    def remove_expired_transactional_ids(self) -> int:
        """Forget ids idle (no transaction open) for ``transactional.id.expiration.ms``: a tombstone
        in ``__transaction_state`` (through the Dead state), then out of memory."""
        now = self._time_ms()
        removed = 0
        for metadata in list(self._txns.values()):
            if metadata.state not in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT) or metadata.transactional_id in self._pending_markers:
                continue
            if metadata.transactional_id in self._writes_in_flight:
                continue
            if metadata.txn_last_update_timestamp > now - self.config.id_expiration_ms:
                continue
            partition = self.partition_for(metadata.transactional_id)
            if partition not in self._owned:
                continue
            metadata.prepare_dead()  # Kafka's transition check; the tombstone is the record
            self._writes_in_flight.add(metadata.transactional_id)
            self._writer.append(
                partition, transaction_state_manager.tombstone_batch(metadata.transactional_id, now), functools.partial(self._tombstone_written, metadata)
            )
            removed += 1
        return removed

    def _tombstone_written(self, metadata: TransactionMetadata, response: Any) -> None:
        """Kafka's removeExpiredTransactionalIds callback: the id leaves memory once its
        tombstone is replicated."""
        transactional_id = metadata.transactional_id
        self._writes_in_flight.discard(transactional_id)
        if response.error_code != ErrorCode.NONE:
            log.info("Removing the expired transactional id %s failed: %s", transactional_id, ErrorCode(response.error_code).name)
        elif self._txns.get(transactional_id) is metadata:
            del self._txns[transactional_id]
            log.info("Removed the expired transactional id %s (producerId %d)", transactional_id, metadata.producer_id)

    @staticmethod
    def _timed_out_abort_written(transactional_id: str, error: ErrorCode) -> None:
        if error != ErrorCode.NONE:
            log.info("Aborting the timed-out transaction of %s failed (%s); tried again at the next check", transactional_id, error.name)

    def abort_timed_out_transactions(self) -> int:
        """Abort, under a bumped epoch, every transaction open longer than its timeout."""
        now = self._time_ms()
        aborted = 0
        for metadata in list(self._txns.values()):
            if metadata.state != _S.ONGOING or metadata.transactional_id in self._pending_markers or metadata.transactional_id in self._writes_in_flight:
                continue
            if metadata.txn_start_timestamp + metadata.txn_timeout_ms >= now:
                continue
            if self.partition_for(metadata.transactional_id) not in self._owned:
                continue
            log.info(
                "Aborting the transaction of %s (producerId %d, epoch %d): it has been open longer than its timeout of %d ms",
                metadata.transactional_id, metadata.producer_id, metadata.producer_epoch, metadata.txn_timeout_ms,
            )
            self._end(metadata.prepare_fence_producer_epoch(), False, functools.partial(self._timed_out_abort_written, metadata.transactional_id))
            aborted += 1
        return aborted
