"""The producer's idempotence and transactions (Kafka's TransactionManager): the producer id and
epoch, per partition the next sequence number and the batches in flight, and for a producer with
a ``transactional.id`` the transaction's state and the requests to its coordinator.

An idempotent producer takes its producer id from InitProducerId at start. Each batch gets its
partition's next sequence number when it is first sent (``assign_sequence``); a batch sent under
an older producer id is numbered again. After a failure that leaves a gap in a partition's
sequence (a batch that will never be written, an unknown producer id, a fenced epoch) the
producer takes a new producer id and every partition is numbered afresh from 0
(``reset_producer_id``). The Sender asks this state how an answer's error is handled
(``retriable_after``).

A transactional producer (``transactional.id``, which implies idempotence) takes its id and epoch
from its transaction coordinator (FindCoordinator with key type 1, then InitProducerId with the
transactional id: ``init_transactions``) and moves through Kafka's states:

    UNINITIALIZED -> INITIALIZING -> READY -> IN_TRANSACTION -> COMMITTING_TRANSACTION -> READY
                                                     |  \\-> ABORTING_TRANSACTION -> READY
                                                     \\-> ABORTABLE_ERROR -> ABORTING_TRANSACTION
    (any) -> FATAL_ERROR

A record sent in a transaction makes its partition new to the transaction; the Sender sends the
new partitions in one AddPartitionsToTxn before it sends their first batch
(``send_to_partition_allowed``), and marks batches transactional. ``send_offsets_to_transaction``
sends AddOffsetsToTxn, then TxnOffsetCommit to the group's coordinator. Commit waits for every
batch, then sends EndTxn; abort fails the batches not sent yet (``TransactionAbortedError``),
waits for those in flight, then sends EndTxn, and when the transaction had failed a batch takes a
bumped epoch (KIP-360: InitProducerId with the current id and epoch) where the coordinator
speaks InitProducerId v3. Retriable coordinator errors are retried (NOT_COORDINATOR and
COORDINATOR_NOT_AVAILABLE after a new FindCoordinator) up to ``max.block.ms``; a fenced epoch or
a refused authorization is fatal (every later call raises it); other failures of a transaction
are abortable (only ``abort_transaction`` is allowed). Messages are the Java client's.
"""

from __future__ import annotations

import asyncio
import bisect
import enum
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from kcli.client.connection import error_code
from kcli.client.producer_config import INT32_MAX
from kcli.client.record_accumulator import batch_order
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.storage.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

if TYPE_CHECKING:
    from kcli.client.consumer_coordinator import ConsumerGroupMetadata
    from kcli.client.network_client import NetworkClient
    from kcli.client.record_accumulator import PartitionQueue, ProducerBatch

log = logging.getLogger(__name__)

INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28
TRANSACTION_KEY = 1  # FindCoordinator's key type of a transactional id
GROUP_KEY = 0

# InitProducerId v3 carries the current producer id and epoch: the coordinator bumps the epoch of
# a producer that lost track of its sequences (KIP-360).
_EPOCH_BUMP_VERSION = 3

_COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_TRY_AGAIN = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS})
# Errors after which the producer can do nothing more (Java's fatal errors).
_FATAL = frozenset({
    ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INVALID_TXN_STATE,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.INVALID_TRANSACTION_TIMEOUT, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
})
_FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})
# A failed produce that dooms the producer rather than its transaction.
_FATAL_FOR_BATCH = frozenset({
    ErrorCode.PRODUCER_FENCED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.UNSUPPORTED_VERSION,
})


class TransactionState(enum.Enum):
    """Kafka's TransactionManager.State."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


_S = TransactionState
# Kafka's State.isTransitionValid: the states each state may be entered from.
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.UNINITIALIZED: frozenset(),
    _S.INITIALIZING: frozenset({_S.UNINITIALIZED, _S.ABORTING_TRANSACTION}),
    _S.READY: frozenset({_S.INITIALIZING, _S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION}),
    _S.IN_TRANSACTION: frozenset({_S.READY}),
    _S.COMMITTING_TRANSACTION: frozenset({_S.IN_TRANSACTION}),
    _S.ABORTING_TRANSACTION: frozenset({_S.IN_TRANSACTION, _S.ABORTABLE_ERROR}),
    _S.ABORTABLE_ERROR: frozenset({_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION, _S.ABORTABLE_ERROR, _S.INITIALIZING}),
    _S.FATAL_ERROR: frozenset(_S),
}


class IllegalTransactionStateError(KcliError):
    """A transactional method called in a state that does not allow it (Java's
    IllegalStateException): begin twice, commit without begin, send outside a transaction."""


class TransactionAbortedError(KcliError):
    """A record not sent because its transaction was aborted (Java's TransactionAbortedException)."""


class TransactionError(KafkaError):
    """A transactional call failed: ``fatal`` (the producer can only be closed) or abortable."""

    def __init__(self, error_code: ErrorCode, message: str, *, fatal: bool) -> None:
        super().__init__(error_code, message)
        self.fatal = fatal


class _PartitionSequences:
    """One partition's sequence state (Kafka's TxnPartitionEntry)."""

    __slots__ = ("next_sequence", "in_flight")

    def __init__(self) -> None:
        self.next_sequence = 0
        self.in_flight: list[ProducerBatch] = []  # sent with a sequence number, not yet answered; by batch id


class TransactionManager:
    """Producer id, epoch and sequence numbers of one idempotent producer, and the transactions
    of a transactional one."""

    def __init__(
        self,
        cluster: NetworkClient,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        *,
        max_block_ms: int = 60000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.transactional = transactional_id is not None
        self.transaction_timeout_ms = transaction_timeout_ms
        self._max_block = max_block_ms / 1000
        self._backoff = retry_backoff_ms / 1000
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.reset_needed = False  # a new producer id is to be taken
        self._reset_task: asyncio.Task[None] | None = None
        self._partitions: dict[PartitionQueue, _PartitionSequences] = {}
        # Transactions.
        self.state = _S.UNINITIALIZED
        self.last_error: KafkaError | None = None
        self.in_transaction: set[PartitionQueue] = set()  # added to the transaction
        self.new_partitions: set[PartitionQueue] = set()  # to be added before their first batch goes
        self._pending_add: set[PartitionQueue] = set()  # in the AddPartitionsToTxn under way
        self.adding: asyncio.Task[None] | None = None
        self.transaction_started = False  # the coordinator knows of the transaction (partitions or offsets added)
        self.epoch_bump_required = False
        self._init_version = 0  # the InitProducerId version the coordinator speaks
        self._on_added: Callable[[], None] | None = None

    # -- idempotence -----------------------------------------------------------------------------

    async def init_producer_id(self) -> None:
        """Take a producer id and epoch from InitProducerId (retrying retriable errors)."""

        async def attempt() -> Any:
            answer = await self.cluster.call(None, INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1})
            code = error_code(answer.error_code)
            if code:
                error = ErrorCode.for_code(code)
                raise KafkaError(error, f"InitProducerId failed: {error.message}")
            return answer

        answer = await self.cluster.retrying(attempt)
        self.producer_id = int(answer.producer_id)
        self.producer_epoch = int(answer.producer_epoch)
        self.reset_needed = False

    def reset_producer_id(self, loop: asyncio.AbstractEventLoop, done: Callable[[], None]) -> None:
        """Take a new producer id in a task and number every partition afresh; ``done`` is called
        when it is over (a failure asks for another reset). Not for a transactional producer,
        whose epoch is bumped only when its transaction is aborted."""
        if self._reset_task is not None or self.transactional:
            return
        self.reset_needed = False

        async def reset() -> None:
            try:
                await self.init_producer_id()
                self._partitions.clear()
            except KafkaError as exc:
                log.warning("could not take a new producer id: %s", exc)
                self.reset_needed = True
            finally:
                self._reset_task = None
                done()

        self._reset_task = loop.create_task(reset())

    # -- sequence numbers ------------------------------------------------------------------------

    def _entry(self, queue: PartitionQueue) -> _PartitionSequences:
        entry = self._partitions.get(queue)
        if entry is None:
            entry = self._partitions[queue] = _PartitionSequences()
        return entry

    def needs_sequence(self, batch: ProducerBatch) -> bool:
        """Whether the batch is to be (re)numbered: never sent, or sent under an older producer id."""
        return batch.producer_id != self.producer_id or batch.base_sequence < 0

    def assign_sequence(self, batch: ProducerBatch) -> None:
        """Give the batch this producer's id and epoch and its partition's next sequence number."""
        if self.needs_sequence(batch):
            entry = self._entry(batch.queue)
            batch.producer_id = self.producer_id
            batch.producer_epoch = self.producer_epoch
            batch.base_sequence = entry.next_sequence
            entry.next_sequence = (entry.next_sequence + batch.count) & INT32_MAX

    def sent(self, batch: ProducerBatch) -> None:
        """The batch went out with its sequence number: it is in flight until answered."""
        if batch.base_sequence >= 0:
            in_flight = self._entry(batch.queue).in_flight
            if batch not in in_flight:
                bisect.insort(in_flight, batch, key=batch_order)

    def answered(self, batch: ProducerBatch) -> None:
        """The batch is done (written, failed for good, or replaced by the halves of a split)."""
        entry = self._partitions.get(batch.queue)
        if entry is not None and batch in entry.in_flight:
            entry.in_flight.remove(batch)

    def retriable_after(self, batch: ProducerBatch, code: ErrorCode) -> bool:
        """Whether a batch the broker refused with ``code`` may go again, as far as its sequence
        goes; asks for a new producer id when the sequence cannot continue."""
        retriable = code.retriable
        if batch.base_sequence < 0:
            return retriable
        if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
            # Out of order behind an earlier batch that is being retried, or sent under an
            # older producer id: it goes again in its turn. Otherwise the sequence has a gap.
            entry = self._partitions.get(batch.queue)
            earlier = entry is not None and entry.in_flight and entry.in_flight[0] is not batch
            if earlier or batch.producer_id != self.producer_id:
                return True
            self.reset_needed = True
        elif code in (ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.INVALID_PRODUCER_EPOCH):
            self.reset_needed = True
            # A transactional producer does not take a new id by itself: its transaction fails.
            return code == ErrorCode.UNKNOWN_PRODUCER_ID and not self.transactional
        return retriable

    def undeliverable(self, batch: ProducerBatch, error: BaseException | None = None) -> None:
        """The batch will never be written: the batches after it would wait for its sequence
        forever, so an idempotent producer takes a new id; a transactional one's transaction
        fails (Java's handleFailedBatch)."""
        if self.transactional:
            if error is not None and not isinstance(error, TransactionAbortedError):
                self._batch_failed(error)
            return
        if batch.base_sequence >= 0 and batch.producer_id == self.producer_id:
            self.reset_needed = True

    def abandoned(self, batch: ProducerBatch) -> None:
        """A batch of an aborted transaction is dropped unsent: if it had a sequence number, the
        partition's sequence has a gap, which a bumped epoch closes."""
        if batch.base_sequence >= 0 and batch.producer_id == self.producer_id and self._init_version >= _EPOCH_BUMP_VERSION:
            self.epoch_bump_required = True

    def _batch_failed(self, error: BaseException) -> None:
        code = error.error_code if isinstance(error, KafkaError) else ErrorCode.UNKNOWN_SERVER_ERROR
        if code in _FATAL_FOR_BATCH:
            self._fatal(code, str(error))
            return
        if self.state in (_S.FATAL_ERROR, _S.ABORTING_TRANSACTION):
            return
        # The partitions' sequences may have gaps now: an abort bumps the epoch, where the
        # coordinator can (KIP-360).
        if self._init_version >= _EPOCH_BUMP_VERSION:
            self.epoch_bump_required = True
        self._abortable(code, str(error))

    # -- transactions: state -----------------------------------------------------------------------

    def _transition(self, target: TransactionState) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise IllegalTransactionStateError(
                f"TransactionalId {self.transactional_id}: Invalid transition attempted from state {self.state.name} to state {target.name}")
        log.debug("[TransactionalId %s] Transition from state %s to %s", self.transactional_id, self.state.name, target.name)
        self.state = target

    def _fatal(self, code: ErrorCode, message: str) -> TransactionError:
        if code in _FENCED:
            code = ErrorCode.PRODUCER_FENCED
            message = (f"Producer with transactionalId '{self.transactional_id}' and {self._id_and_epoch()} has been fenced by "
                       "another producer with the same transactionalId")
        error = TransactionError(code, message, fatal=True)
        if self.state != _S.FATAL_ERROR:
            log.error("[TransactionalId %s] Transiting to fatal error state due to %s", self.transactional_id, message)
            self.state = _S.FATAL_ERROR
            self.last_error = error
        self.wake()
        return error

    def _abortable(self, code: ErrorCode, message: str) -> TransactionError:
        error = TransactionError(code, message, fatal=False)
        if self.state == _S.FATAL_ERROR:
            return error
        if self.state != _S.ABORTABLE_ERROR:
            log.warning("[TransactionalId %s] Transiting to abortable error state due to %s", self.transactional_id, message)
            self.state = _S.ABORTABLE_ERROR
            self.last_error = error
        self.wake()
        return error

    def wake(self) -> None:
        """Wake the Sender (set by the producer): undrained batches of a failed transaction go."""

    def _id_and_epoch(self) -> str:
        return f"ProducerIdAndEpoch(producerId={self.producer_id}, epoch={self.producer_epoch})"

    def _require_transactional(self) -> None:
        if not self.transactional:
            raise IllegalTransactionStateError(
                "Cannot use transactional methods without enabling transactions by setting the transactional.id configuration property")

    def maybe_fail_with_error(self) -> None:
        """Raise the error that put the producer in an error state (Java's maybeFailWithError)."""
        error = self.last_error
        if self.state not in (_S.ABORTABLE_ERROR, _S.FATAL_ERROR) or error is None:
            return
        if error.error_code == ErrorCode.PRODUCER_FENCED:
            raise TransactionError(ErrorCode.PRODUCER_FENCED, str(error), fatal=True)
        raise TransactionError(error.error_code, f"Cannot execute transactional method because we are in an error state: {error}", fatal=error.fatal) from error

    def fail_if_not_ready_for_send(self) -> None:
        """Java's failIfNotReadyForSend: a send in a failed state, before init_transactions, or
        outside a transaction is refused."""
        if self.state in (_S.ABORTABLE_ERROR, _S.FATAL_ERROR):
            error = self.last_error
            raise TransactionError(
                error.error_code if error is not None else ErrorCode.UNKNOWN_SERVER_ERROR,
                f"Cannot perform send because at least one previous transactional or idempotent request has failed with errors: {error}",
                fatal=self.state == _S.FATAL_ERROR,
            ) from error
        if self.producer_id < 0:
            raise IllegalTransactionStateError("Cannot perform a 'send' before completing a call to initTransactions when transactions are enabled.")
        if self.state != _S.IN_TRANSACTION:
            raise IllegalTransactionStateError(f"Cannot call send in state {self.state.name}")

    @property
    def has_error(self) -> bool:
        return self.state in (_S.ABORTABLE_ERROR, _S.FATAL_ERROR)

    @property
    def aborting(self) -> bool:
        return self.state == _S.ABORTING_TRANSACTION

    # -- transactions: partitions -------------------------------------------------------------------

    def maybe_add_partition(self, queue: PartitionQueue) -> None:
        """A record went to ``queue``'s partition: it joins the transaction before its first batch goes."""
        if queue not in self.in_transaction and queue not in self._pending_add:
            self.new_partitions.add(queue)

    def send_to_partition_allowed(self, queue: PartitionQueue) -> bool:
        """Whether the partition's batches may go: it was added to the transaction."""
        return queue in self.in_transaction

    def add_partitions_if_needed(self, loop: asyncio.AbstractEventLoop, done: Callable[[], None]) -> None:
        """Send AddPartitionsToTxn for every new partition (one request), unless one is under way."""
        if self.adding is not None or not self.new_partitions or self.state not in (_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION):
            return
        partitions, self.new_partitions = self.new_partitions, set()
        self._pending_add = partitions

        async def add() -> None:
            try:
                await self._add_partitions(partitions)
            except KcliError as exc:
                if not self.has_error:
                    self._abortable(exc.error_code if isinstance(exc, KafkaError) else ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
            finally:
                self._pending_add = set()
                self.adding = None
                done()

        self.adding = loop.create_task(add())

    async def _add_partitions(self, partitions: set[PartitionQueue]) -> None:
        topics: dict[str, list[int]] = {}
        for queue in sorted(partitions, key=lambda q: (q.topic.name, q.partition)):
            topics.setdefault(queue.topic.name, []).append(queue.partition)
        fields = {
            "v3_and_below_transactional_id": self.transactional_id,
            "v3_and_below_producer_id": self.producer_id,
            "v3_and_below_producer_epoch": self.producer_epoch,
            "v3_and_below_topics": [{"name": name, "partitions": numbers} for name, numbers in topics.items()],
        }

        def errors(answer: Any) -> ErrorCode:
            codes = {
                (topic.name, int(p.partition_index)): ErrorCode.for_code(error_code(p.partition_error_code))
                for topic in answer.results_by_topic_v3_and_below for p in topic.results_by_partition
            }
            failed = [c for c in codes.values() if c not in (ErrorCode.NONE, ErrorCode.OPERATION_NOT_ATTEMPTED)]
            return failed[0] if failed else ErrorCode.NONE

        code, _answer = await self._coordinator_call("AddPartitionsToTxn", ADD_PARTITIONS_TO_TXN, fields, errors)
        if code == ErrorCode.NONE:
            self.in_transaction |= partitions
            self.transaction_started = True
            log.debug("[TransactionalId %s] Added partitions %s to transaction", self.transactional_id, sorted(q.label() for q in partitions))
            return
        names = ", ".join(sorted(q.label() for q in partitions))
        if code in _FENCED or code in (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.INVALID_TXN_STATE):
            raise self._fatal(code, f"Could not add partitions [{names}] to the transaction: {code.message}")
        if code in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.INVALID_PRODUCER_ID_MAPPING):
            if code in (ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.INVALID_PRODUCER_ID_MAPPING) and self._init_version >= _EPOCH_BUMP_VERSION:
                self.epoch_bump_required = True
            raise self._abortable(code, f"Could not add partitions [{names}] to the transaction: {code.message}")
        raise self._fatal(code, f"Could not add partitions to transaction due to errors: {code.name}: {code.message}")

    # -- transactions: the coordinator ---------------------------------------------------------------

    async def _coordinator_call(
        self,
        what: str,
        api_key: int,
        fields: Mapping[str, Any],
        errors: Callable[[Any], ErrorCode],
        *,
        key: str | None = None,
        key_type: int = TRANSACTION_KEY,
    ) -> tuple[ErrorCode, Any]:
        """Send a request to the coordinator of the transactional id (or of group ``key``) until its
        answer is not retriable, up to ``max.block.ms``: a moved coordinator is looked up again.
        Returns the answer's error (``errors(answer)``) and the answer."""
        key = self.transactional_id if key is None else key
        deadline = time.monotonic() + self._max_block
        backoff = self._backoff
        while True:
            answer = None
            try:
                node = await self.cluster.coordinator(key, key_type)
                connection = await self.cluster.connection(node)
                if api_key == INIT_PRODUCER_ID:
                    self._init_version = connection.version_for(INIT_PRODUCER_ID)
                answer = await connection.call(api_key, fields, timeout=self.cluster.request_timeout)
                code = errors(answer)
            except KafkaError as exc:
                code = exc.error_code
                if code.retriable:
                    self.cluster.forget_coordinator(key, key_type)  # it may have moved, or gone
            if not code.retriable:
                return code, answer
            if code in _COORDINATOR_MOVED:
                self.cluster.forget_coordinator(key, key_type)
            if time.monotonic() + backoff > deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Timeout expired after {int(self._max_block * 1000)}ms while awaiting {what}")
            log.debug("[TransactionalId %s] %s: %s; retrying", self.transactional_id, what, code.name)
            # CONCURRENT_TRANSACTIONS mostly means the last transaction's markers are being written:
            # the Java client retries it sooner than retry.backoff.ms.
            await asyncio.sleep(min(backoff, 0.02) if code == ErrorCode.CONCURRENT_TRANSACTIONS else backoff * (0.8 + 0.4 * random.random()))

    async def _init_transactional_id(self, bump: bool) -> None:
        """InitProducerId with the transactional id; with ``bump``, the current producer id and
        epoch, to get the epoch bumped (KIP-360)."""
        fields = {
            "transactional_id": self.transactional_id,
            "transaction_timeout": self.transaction_timeout_ms,
            "producer_id": self.producer_id if bump else NO_PRODUCER_ID,
            "producer_epoch": self.producer_epoch if bump else NO_PRODUCER_EPOCH,
        }
        code, answer = await self._coordinator_call("InitProducerId", INIT_PRODUCER_ID, fields, lambda a: ErrorCode.for_code(error_code(a.error_code)))
        if code != ErrorCode.NONE:
            if code == ErrorCode.INVALID_TRANSACTION_TIMEOUT:
                raise self._fatal(code, "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).")
            if code in _FENCED or code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                raise self._fatal(code, f"InitProducerId failed: {code.message}")
            raise self._fatal(code, f"Unexpected error in InitProducerIdResponse; {code.message}")
        self.producer_id = int(answer.producer_id)
        self.producer_epoch = int(answer.producer_epoch)
        self._partitions.clear()  # sequences start again from 0 under the new epoch
        self.epoch_bump_required = False
        log.info("[TransactionalId %s] ProducerId set to %d with epoch %d", self.transactional_id, self.producer_id, self.producer_epoch)

    # -- transactions: the API -----------------------------------------------------------------------

    async def init_transactions(self) -> None:
        self._require_transactional()
        if self.state != _S.INITIALIZING:  # a call that timed out may be repeated
            self.maybe_fail_with_error()
            self._transition(_S.INITIALIZING)
        await self._init_transactional_id(bump=False)
        self._transition(_S.READY)

    def begin_transaction(self) -> None:
        self._require_transactional()
        self.maybe_fail_with_error()
        self._transition(_S.IN_TRANSACTION)

    async def commit_transaction(self, flush: Callable[[], Awaitable[None]]) -> None:
        """Send every record of the transaction (``flush``), then EndTxn(commit)."""
        self._require_transactional()
        if self.state != _S.COMMITTING_TRANSACTION:  # a commit that timed out may be repeated
            self.maybe_fail_with_error()
            self._transition(_S.COMMITTING_TRANSACTION)
        await flush()
        await self._partitions_added()
        self.maybe_fail_with_error()
        await self._end_transaction(commit=True)

    async def abort_transaction(self, flush: Callable[[], Awaitable[None]]) -> None:
        """Fail the records not sent yet, wait for those in flight, then EndTxn(abort)."""
        self._require_transactional()
        if self.state != _S.ABORTING_TRANSACTION:  # an abort that timed out may be repeated
            if self.state != _S.ABORTABLE_ERROR:
                self.maybe_fail_with_error()
            self._transition(_S.ABORTING_TRANSACTION)
            self.new_partitions.clear()
        self.wake()
        await self._partitions_added()
        await flush()
        await self._end_transaction(commit=False)

    async def _partitions_added(self) -> None:
        adding = self.adding
        if adding is not None:
            await asyncio.wait([adding])

    async def _end_transaction(self, commit: bool) -> None:
        if self.transaction_started:
            fields = {"transactional_id": self.transactional_id, "producer_id": self.producer_id, "producer_epoch": self.producer_epoch, "committed": commit}
            code, _answer = await self._coordinator_call(f"EndTxn({str(commit).lower()})", END_TXN, fields, lambda a: ErrorCode.for_code(error_code(a.error_code)))
            if code != ErrorCode.NONE:
                if code == ErrorCode.TRANSACTION_ABORTABLE:
                    raise self._abortable(code, f"EndTxn failed: {code.message}")
                if code in _FENCED or code in (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.INVALID_TXN_STATE):
                    raise self._fatal(code, f"EndTxn failed: {code.message}")
                raise self._fatal(code, f"Unhandled error in EndTxnResponse: {code.message}")
        if not commit and self.epoch_bump_required:
            self._transition(_S.INITIALIZING)
            await self._init_transactional_id(bump=True)
        self._transition(_S.READY)
        self.last_error = None
        self.in_transaction = set()
        self.new_partitions = set()
        self.transaction_started = False

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any], group: ConsumerGroupMetadata) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit of ``offsets`` (next offsets to read, or objects
        with ``offset`` and ``metadata``) to the group's coordinator."""
        self._require_transactional()
        self.maybe_fail_with_error()
        if self.state != _S.IN_TRANSACTION:
            raise IllegalTransactionStateError(f"Cannot send offsets if a transaction is not in progress (currentState= {self.state.name})")
        fields = {"transactional_id": self.transactional_id, "producer_id": self.producer_id, "producer_epoch": self.producer_epoch, "group_id": group.group_id}
        code, _answer = await self._coordinator_call("AddOffsetsToTxn", ADD_OFFSETS_TO_TXN, fields, lambda a: ErrorCode.for_code(error_code(a.error_code)))
        if code != ErrorCode.NONE:
            if code in (ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TRANSACTION_ABORTABLE):
                raise self._abortable(code, f"AddOffsetsToTxn failed: {code.message}")
            if code in _FENCED or code in (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.INVALID_TXN_STATE):
                raise self._fatal(code, f"AddOffsetsToTxn failed: {code.message}")
            raise self._fatal(code, f"Unexpected error in AddOffsetsToTxnResponse: {code.message}")
        self.transaction_started = True
        if not offsets:
            return
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, value in sorted(offsets.items()):
            offset = int(getattr(value, "offset", value))
            metadata = getattr(value, "metadata", "") or ""
            leader_epoch = getattr(value, "leader_epoch", None)
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": offset,
                "committed_leader_epoch": -1 if leader_epoch is None else int(leader_epoch), "committed_metadata": metadata,
            })
        fields = {
            "transactional_id": self.transactional_id, "group_id": group.group_id, "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch, "generation_id": group.generation_id, "member_id": group.member_id,
            "group_instance_id": group.group_instance_id, "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
        }

        def errors(answer: Any) -> ErrorCode:
            failed = [ErrorCode.for_code(error_code(p.error_code)) for t in answer.topics for p in t.partitions if error_code(p.error_code)]
            return failed[0] if failed else ErrorCode.NONE

        code, _answer = await self._coordinator_call("TxnOffsetCommit", TXN_OFFSET_COMMIT, fields, errors, key=group.group_id, key_type=GROUP_KEY)
        if code == ErrorCode.NONE:
            return
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            raise self._abortable(code, f"Transaction offset Commit failed due to consumer group metadata mismatch: {code.message}")
        if code in (ErrorCode.FENCED_INSTANCE_ID, ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TRANSACTION_ABORTABLE):
            raise self._abortable(code, f"TxnOffsetCommit failed: {code.message}")
        if code in _FENCED or code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            raise self._fatal(code, f"TxnOffsetCommit failed: {code.message}")
        raise self._fatal(code, f"Unexpected error in TxnOffsetCommitResponse: {code.message}")
