"""One transactional id's state and the transitions Kafka allows (Kafka's TransactionMetadata).

States (ids as ``__transaction_state`` stores them): Empty 0, Ongoing 1, PrepareCommit 2,
PrepareAbort 3, CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7. A transition is
prepared as a new ``TransactionMetadata`` (``transit``), written to the log, and only then
installed, so a failed write leaves the state as it was.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field

from kcli.common import TopicPartition
from kcli.protocol.coordinator_records import TRANSACTION_STATES
from kcli.storage.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID


# An epoch at Short.MaxValue - 1 cannot be bumped again: the producer gets a new producer id.
MAX_EPOCH = 2**15 - 1


class TransactionState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return TRANSACTION_STATES[self.value]


_S = TransactionState
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


class IllegalTransitionError(Exception):
    pass


def is_epoch_exhausted(epoch: int) -> bool:
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60_000
    state: TransactionState = TransactionState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH

    def transit(self, state: TransactionState, **changes) -> TransactionMetadata:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalTransitionError(
                f"TransactionalId {self.transactional_id} failed transition to state {state.kafka_name} "
                f"due to unexpected previous state {self.state.kafka_name}"
            )
        return dataclasses.replace(self, state=state, **changes)

    # -- the transitions of Kafka's TransactionMetadata ----------------------------------------

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None, now: int) -> TransactionMetadata | None:
        """The Empty state of a re-initialised producer: epoch + 1, or the same epoch again for a
        retry of the last bump; None when ``expected_epoch`` is stale (the caller is fenced)."""
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last_epoch = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self.transit(
            TransactionState.EMPTY, producer_epoch=epoch, last_producer_epoch=last_epoch, txn_timeout_ms=timeout_ms,
            partitions=frozenset(), txn_start_timestamp=-1, txn_last_update_timestamp=now,
        )

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now: int, retain_last: bool) -> TransactionMetadata:
        return self.transit(
            TransactionState.EMPTY, producer_id=new_producer_id, producer_epoch=0,
            last_producer_id=self.producer_id if retain_last else NO_PRODUCER_ID,
            last_producer_epoch=self.producer_epoch if retain_last else NO_PRODUCER_EPOCH,
            txn_timeout_ms=timeout_ms, partitions=frozenset(), txn_start_timestamp=-1, txn_last_update_timestamp=now,
        )

    def prepare_fence_producer_epoch(self) -> TransactionMetadata:
        """Ongoing -> PrepareEpochFence with the epoch bumped: the open transaction is then aborted
        under that epoch, which fences the producer that began it."""
        return self.transit(TransactionState.PREPARE_EPOCH_FENCE, producer_epoch=self.producer_epoch + 1, last_producer_epoch=NO_PRODUCER_EPOCH)

    def prepare_add_partitions(self, added: set[TopicPartition], now: int) -> TransactionMetadata:
        start = now if self.state in (TransactionState.EMPTY, TransactionState.COMPLETE_ABORT, TransactionState.COMPLETE_COMMIT) else self.txn_start_timestamp
        return self.transit(TransactionState.ONGOING, partitions=self.partitions | frozenset(added), txn_start_timestamp=start, txn_last_update_timestamp=now)

    def prepare_abort_or_commit(self, state: TransactionState, now: int) -> TransactionMetadata:
        return self.transit(state, txn_last_update_timestamp=now)

    def prepare_complete(self, now: int) -> TransactionMetadata:
        target = TransactionState.COMPLETE_COMMIT if self.state == TransactionState.PREPARE_COMMIT else TransactionState.COMPLETE_ABORT
        return self.transit(target, partitions=frozenset(), txn_last_update_timestamp=now)

    def prepare_dead(self) -> TransactionMetadata:
        return self.transit(TransactionState.DEAD, partitions=frozenset())
