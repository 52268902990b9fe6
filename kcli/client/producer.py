"""The producer (Kafka's KafkaProducer): records batched per partition, sent to each partition's leader.

``Producer`` runs on a ``NetworkClient`` and takes the Java producer's settings by their property
names (``Producer.from_properties(client_or_bootstrap, {"acks": "all", "linger.ms": "5"})``)::

    async with Producer.from_properties("127.0.0.1:9092", {"compression.type": "lz4"}) as producer:
        future = await producer.send("orders", b"value", key=b"k1")
        metadata = await future          # RecordMetadata(topic, partition, offset, timestamp)

It is a facade over the parts Kafka's producer has:

- ``producer_config.py``: the settings (ProducerConfig), read from Java properties;
- ``record_accumulator.py``: ``send`` encodes the record at once into its partition's open batch
  (RecordAccumulator) and returns a ``RecordFuture``; ``send`` waits while ``buffer.memory`` bytes
  are unsent, up to ``max.block.ms``;
- ``sender.py``: the sender task drains ready batches into one Produce request per leader,
  handles answers, retries and expiry (Sender);
- ``transaction_manager.py``: the producer id, epoch and sequence numbers of an idempotent
  producer (``enable.idempotence``, on by default as in Java 3.x when ``acks=all``), and the
  transactions of a producer with a ``transactional.id``.

``flush()`` sends everything buffered and waits for it; ``close()`` flushes and stops (aborting
an open transaction, as Java's close does).

A transactional producer writes atomically to several partitions, with the offsets of a
consume-transform-produce loop::

    producer = Producer.from_properties("127.0.0.1:9092", {"transactional.id": "orders-enricher"})
    await producer.init_transactions()
    producer.begin_transaction()
    await producer.send("enriched", b"value")
    await producer.send_offsets_to_transaction({TopicPartition("orders", 0): 42}, consumer.group_metadata())
    await producer.commit_transaction()      # or abort_transaction()
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kcli.client.network_client import NetworkClient
from kcli.client.producer_config import ProducerConfig
from kcli.client.record_accumulator import BufferFull, RecordAccumulator, RecordFuture
from kcli.client.sender import ProducerMetrics, Sender
from kcli.client.transaction_manager import IllegalTransactionStateError, TransactionManager, TransactionState
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError, KcliError

__all__ = ["Producer"]

log = logging.getLogger(__name__)

_monotonic = time.monotonic


class Producer:
    """A Kafka producer; see the module docstring. Use ``async with`` or ``start()``/``close()``."""

    def __init__(self, cluster: NetworkClient | str, config: ProducerConfig | None = None) -> None:
        self.config = config = config or ProducerConfig()
        if isinstance(cluster, NetworkClient):
            self.cluster = cluster
            self._owns_cluster = False
        else:
            self.cluster = NetworkClient(
                cluster,
                client_id=config.client_id or _next_client_id(),
                request_timeout=config.request_timeout_ms / 1000,
                retry_backoff=config.retry_backoff_ms / 1000,
                retry_backoff_max=max(config.retry_backoff_ms, config.retry_backoff_max_ms) / 1000,
                security=config.security,
            )
            self._owns_cluster = True
        self._max_block = config.max_block_ms / 1000
        self.metrics = ProducerMetrics()
        self._accumulator = accumulator = RecordAccumulator(config)
        self._topics = accumulator.topics
        self._transactions = transactions = None
        if config.enable_idempotence and config.acks == -1:
            self._transactions = transactions = TransactionManager(
                self.cluster, config.transactional_id, config.transaction_timeout_ms, max_block_ms=config.max_block_ms, retry_backoff_ms=config.retry_backoff_ms,
            )
        self._transactional = transactions is not None and transactions.transactional
        self._sender = Sender(self.cluster, config, accumulator, transactions, self.metrics)
        if transactions is not None:
            transactions.wake = self._sender.wake  # type: ignore[method-assign]
        accumulator.sender = self._sender
        self._sends = 0
        self._closed = False
        self._started = False
        self._accepting = False  # started and not closing
        self._sender_task: asyncio.Task[None] | None = None

    @classmethod
    def from_properties(
        cls, cluster: NetworkClient | str | None, props: Mapping[str, str], *, warn: Callable[[str], None] | None = None
    ) -> Producer:
        """A producer from Java producer properties. ``cluster`` is a NetworkClient to share, or a
        bootstrap list (``None``: the ``bootstrap.servers`` property)."""
        config = ProducerConfig.from_properties(props, warn=warn)
        if cluster is None:
            if not config.bootstrap_servers:
                raise KcliError("Missing required configuration \"bootstrap.servers\" which has no default value.")
            cluster = config.bootstrap_servers
        return cls(cluster, config)

    @property
    def idempotent(self) -> bool:
        return self._transactions is not None

    @property
    def producer_id(self) -> int:
        return -1 if self._transactions is None else self._transactions.producer_id

    @property
    def producer_epoch(self) -> int:
        return -1 if self._transactions is None else self._transactions.producer_epoch

    @property
    def transaction_state(self) -> TransactionState | None:
        """Where a transactional producer is (Kafka's TransactionManager states); None otherwise."""
        return self._transactions.state if self._transactional else None

    # -- life cycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect, and take a producer id when idempotent (a transactional producer takes it in
        ``init_transactions``). Fails when no broker answers."""
        if self._started:
            return
        loop = asyncio.get_running_loop()
        self._accumulator.loop = self._sender.loop = loop
        await self.cluster.any_connection()
        if self._transactions is not None and not self._transactional:
            await self._transactions.init_producer_id()
        self._started = True
        self._accepting = True
        self._sender_task = loop.create_task(self._sender.run())

    async def flush(self) -> None:
        """Send every buffered record now and wait until each one is answered."""
        accumulator = self._accumulator
        if not accumulator.incomplete:
            return
        accumulator.flushes += 1
        try:
            self._sender.wake()
            waiting = [b.future for b in accumulator.incomplete]
            await asyncio.wait(waiting)
        finally:
            accumulator.flushes -= 1

    async def close(self) -> None:
        """Flush, stop the sender and close the connections this producer opened."""
        if self._closed:
            return
        try:
            if self._started:
                await self.flush()
                if self._transactional and self._transactions.state in (TransactionState.IN_TRANSACTION, TransactionState.ABORTABLE_ERROR):
                    log.info("Aborting incomplete transaction due to shutdown")
                    try:
                        await self.abort_transaction()
                    except KcliError as exc:
                        log.warning("could not abort the open transaction: %s", exc)
        finally:
            self._accumulator.closed = True
            self._accepting = False
            self._closed = True
            if self._sender_task is not None:
                self._sender.wake()
                try:
                    await self._sender_task
                except Exception:  # the sender failed its batches already
                    pass
            self._sender.close()
            if self._owns_cluster:
                await self.cluster.close()

    # -- sending -------------------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> RecordFuture:
        """Add a record to its partition's batch; the returned future is answered when it is sent.

        Waits for the topic's metadata and for buffer memory, each up to ``max.block.ms``.
        """
        state = self._topics.get(topic)
        accumulator = self._accumulator
        if state is None or not self._accepting or accumulator.buffered >= accumulator.buffer_memory or (partition is not None and partition >= state.count):
            await self._ready_for(topic, partition)
            state = self._topics[topic]
        if self._transactional:
            future = self._append_in_transaction(state, value, key, headers, partition, timestamp)
        else:
            future = accumulator.append(state, value, key, headers, partition, timestamp)
        self._sends += 1
        if self._sender.woken or not self._sends & 255:
            await asyncio.sleep(0)  # let the sender and the connections run
        return future

    def send_nowait(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> RecordFuture:
        """``send`` without waiting, for callers that yield to the event loop themselves.

        The topic's metadata must be known (after a first ``send`` or ``await
        wait_for_topic(topic)``); raises ``BufferFull`` when ``buffer.memory`` is used up.
        """
        state = self._topics.get(topic)
        if state is None or not self._accepting:
            if self._accumulator.closed:
                raise KcliError("Cannot perform operation after producer has been closed")
            if not self._started:
                raise KcliError("the producer has not been started")
            raise KcliError(f"topic '{topic}' has no metadata yet: use send() or wait_for_topic() first")
        accumulator = self._accumulator
        if accumulator.buffered >= accumulator.buffer_memory:
            raise BufferFull(f"the producer's buffer.memory ({accumulator.buffer_memory} bytes) is full")
        if self._transactional:
            return self._append_in_transaction(state, value, key, headers, partition, timestamp)
        return accumulator.append(state, value, key, headers, partition, timestamp)

    def _append_in_transaction(self, state: Any, value: bytes | None, key: bytes | None, headers: Sequence[tuple[str, bytes | None]], partition: int | None, timestamp: int | None) -> RecordFuture:
        transactions = self._transactions
        transactions.fail_if_not_ready_for_send()
        future = self._accumulator.append(state, value, key, headers, partition, timestamp)
        batch = future[0]
        if not batch.done:  # not refused at once (a bad partition, a record too large)
            transactions.maybe_add_partition(batch.queue)
        return future

    # -- transactions --------------------------------------------------------------------------------

    async def init_transactions(self) -> None:
        """Take the transactional id's producer id and epoch from its coordinator, fencing any
        older producer of the id and completing its open transaction (Java's initTransactions)."""
        transactions = self._require_transactions()
        if not self._started:
            await self.start()
        await transactions.init_transactions()

    def begin_transaction(self) -> None:
        """Start a transaction: the records sent until commit or abort belong to it."""
        self._require_transactions().begin_transaction()

    async def commit_transaction(self) -> None:
        """Send every record of the transaction, then commit it (EndTxn). Raises the error of a
        failed record or request; after an abortable one only ``abort_transaction`` is allowed."""
        await self._require_transactions().commit_transaction(self.flush)

    async def abort_transaction(self) -> None:
        """Drop the records not sent yet, wait for those in flight, then abort the transaction."""
        transactions = self._require_transactions()
        self._sender.wake()
        await transactions.abort_transaction(self.flush)

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, Any], group_metadata: Any) -> None:
        """Commit ``offsets`` (the next offset to read per partition, or OffsetAndMetadata) for the
        consumer group with the transaction: they take effect only if it commits. The group is a
        consumer's ``group_metadata()`` (a ConsumerGroupMetadata: generation and member checked)
        or a group id."""
        transactions = self._require_transactions()
        group = group_metadata
        if isinstance(group_metadata, str):
            from kcli.client.consumer_coordinator import ConsumerGroupMetadata

            group = ConsumerGroupMetadata(group_metadata)
        await transactions.send_offsets_to_transaction(offsets, group)

    def _require_transactions(self) -> TransactionManager:
        transactions = self._transactions
        if transactions is None or not transactions.transactional:
            raise IllegalTransactionStateError(
                "Cannot use transactional methods without enabling transactions by setting the transactional.id configuration property")
        if self._accumulator.closed:
            raise KcliError("Cannot perform operation after producer has been closed")
        return transactions

    @property
    def needs_yield(self) -> bool:
        """Whether the sender has work waiting for the event loop (a caller of ``send_nowait``
        should ``await asyncio.sleep(0)`` now and then, and at least when this is true)."""
        return self._sender.woken

    async def wait_for_topic(self, topic: str) -> int:
        """Wait (up to ``max.block.ms``) until the topic's partitions are known; their count."""
        await self._ready_for(topic, None)
        return self._topics[topic].count

    async def _ready_for(self, topic: str, partition: int | None) -> None:
        if not self._started:
            await self.start()
        if self._accumulator.closed:
            raise KcliError("Cannot perform operation after producer has been closed")
        deadline = _monotonic() + self._max_block
        state = self._topics.get(topic)
        if state is None or (partition is not None and partition >= state.count):
            await self._wait_metadata(topic, partition, deadline)
        accumulator = self._accumulator
        while accumulator.buffered >= accumulator.buffer_memory:
            waiter = accumulator.loop.create_future()
            accumulator.memory_waiters.append(waiter)
            self._sender.wake()
            try:
                await asyncio.wait_for(waiter, max(0.0, deadline - _monotonic()))
            except asyncio.TimeoutError:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Failed to allocate memory within the configured max blocking time {self.config.max_block_ms} ms.") from None

    async def _wait_metadata(self, topic: str, partition: int | None, deadline: float) -> None:
        backoff = self.config.retry_backoff_ms / 1000
        while True:
            try:
                await self.cluster.refresh([topic], allow_auto_create=True)
            except KafkaError as exc:
                if not exc.error_code.retriable:
                    raise
            info = self.cluster.metadata.topics.get(topic)
            if info is not None and info.error in (ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.TOPIC_AUTHORIZATION_FAILED):
                code = ErrorCode.for_code(info.error)
                if code == ErrorCode.INVALID_TOPIC_EXCEPTION:
                    raise KafkaError(code, f"Invalid topics: [{topic}]")
                raise KafkaError(code, f"Not authorized to access topics: [{topic}]")
            if info is not None and not info.error and info.partitions:
                self._accumulator.apply_metadata(info)
                self._sender.metadata_at = _monotonic()
                state = self._topics[topic]
                if partition is None or partition < state.count:
                    return
            now = _monotonic()
            if now >= deadline:
                state = self._topics.get(topic)
                if partition is not None and state is not None:
                    raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Partition {partition} of topic {topic} with partition count {state.count} is not present in metadata after {self.config.max_block_ms} ms.")
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Topic {topic} not present in metadata after {self.config.max_block_ms} ms.")
            await asyncio.sleep(min(backoff, deadline - now))
            backoff = min(backoff * 2, max(self.config.retry_backoff_max_ms, self.config.retry_backoff_ms) / 1000)


_client_ids = itertools.count(1)


def _next_client_id() -> str:
    return f"producer-{next(_client_ids)}"
