"""The idempotent producer's state (Kafka's TransactionManager): the producer id and epoch, and
per partition the next sequence number and the batches sent with a sequence, not yet answered.

An idempotent producer takes its producer id from InitProducerId at start. Each batch gets its
partition's next sequence number when it is first sent (``assign_sequence``); a batch sent under
an older producer id is numbered again. After a failure that leaves a gap in a partition's
sequence (a batch that will never be written, an unknown producer id, a fenced epoch) the
producer takes a new producer id and every partition is numbered afresh from 0
(``reset_producer_id``). The Sender asks this state how an answer's error is handled
(``retriable_after``).
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kcli.client.connection import error_code
from kcli.client.producer_config import INT32_MAX
from kcli.client.record_accumulator import batch_order
from kcli.errors import ErrorCode, KafkaError
from kcli.storage.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

if TYPE_CHECKING:
    from kcli.client.network_client import NetworkClient
    from kcli.client.record_accumulator import PartitionQueue, ProducerBatch

log = logging.getLogger(__name__)

INIT_PRODUCER_ID = 22


class _PartitionSequences:
    """One partition's sequence state (Kafka's TxnPartitionEntry)."""

    __slots__ = ("next_sequence", "in_flight")

    def __init__(self) -> None:
        self.next_sequence = 0
        self.in_flight: list[ProducerBatch] = []  # sent with a sequence number, not yet answered; by batch id


class TransactionManager:
    """Producer id, epoch and sequence numbers of one idempotent producer."""

    def __init__(self, cluster: NetworkClient) -> None:
        self.cluster = cluster
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.reset_needed = False  # a new producer id is to be taken
        self._reset_task: asyncio.Task[None] | None = None
        self._partitions: dict[PartitionQueue, _PartitionSequences] = {}

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
        when it is over (a failure asks for another reset)."""
        if self._reset_task is not None:
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
            return code == ErrorCode.UNKNOWN_PRODUCER_ID
        return retriable

    def undeliverable(self, batch: ProducerBatch) -> None:
        """The batch will never be written: the batches after it would wait for its sequence
        forever, so the producer takes a new id."""
        if batch.base_sequence >= 0 and batch.producer_id == self.producer_id:
            self.reset_needed = True
