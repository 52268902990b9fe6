"""The producer's sender (Kafka's Sender): ready batches drained per leader into Produce
requests, answers handled, retries, expiry, and metadata kept fresh for the batches it holds.

The sender task takes a partition's first batch when it is closed, ``linger.ms`` passed since
its first record (and, while its broker is busy with an earlier request, that answer came or
5 ms more passed), or a flush or close is under way. It writes one Produce request per leader
carrying one batch of every partition that is ready (up to ``max.request.size``, judged on the
batches' estimated sizes: a batch is built only once taken, since one left out keeps taking
records), keeps up to ``max.in.flight.requests.per.connection`` requests in flight per broker,
and handles each answer in a callback, which sends what became ready meanwhile.

Retriable errors are retried with exponential backoff from ``retry.backoff.ms`` to
``retry.backoff.max.ms`` while ``delivery.timeout.ms`` has not passed since the batch was
created; errors that mean stale metadata (NOT_LEADER_OR_FOLLOWER, ...) refresh it first.
MESSAGE_TOO_LARGE for a batch of several records splits it in two and sends both halves. An
idempotent producer's sequence numbers and producer id are the ``TransactionManager``'s: a
partition whose batch came back for a retry sends nothing new until that batch went again.

For a transactional producer the sender first has the transaction's new partitions added
(AddPartitionsToTxn, through the ``TransactionManager``) once a batch of one of them is ready: a
partition's batches go only once it is in the transaction. Its Produce requests carry the transactional id and its batches the
transactional attribute. While the transaction is failed or being aborted, the batches not sent
yet are failed (Kafka's abortUndrainedBatches); those in flight are answered as usual.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import math
import random
import struct
import time
from collections.abc import Sequence
from typing import Any

from kcli.client.connection import BrokerConnection, error_code
from kcli.client.metadata import STALE_METADATA
from kcli.client.network_client import NetworkClient
from kcli.client.producer_config import ProducerConfig
from kcli.client.record_accumulator import PartitionQueue, ProducerBatch, RecordAccumulator
from kcli.client.transaction_manager import TransactionAbortedError, TransactionManager
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol import messages
from kcli.storage.records import RECORD_BATCH_OVERHEAD
from kcli.storage.varint import encode_unsigned_varint

log = logging.getLogger(__name__)

PRODUCE = 0

# How long a batch whose linger passed may wait for its broker's earlier request to be answered
# before it is sent anyway. In one thread, sending each record as soon as a request slot frees
# would make a request per record or two under load; waiting for the answer (about a network
# round trip) lets batches fill, as the Java client's separate sender thread lets them.
_HOLD = 0.005

_monotonic = time.monotonic


@dataclasses.dataclass
class ProducerMetrics:
    """Counters kept as batches and requests go out and come back (``Producer.metrics``)."""

    record_send_total: int = 0
    record_error_total: int = 0
    record_retry_total: int = 0
    batch_total: int = 0
    batch_bytes_total: int = 0
    uncompressed_bytes_total: int = 0
    request_total: int = 0
    response_total: int = 0

    def as_dict(self) -> dict[str, float]:
        """Kafka's producer-metrics names for what is counted."""
        batches = self.batch_total or 1
        return {
            "record-send-total": float(self.record_send_total),
            "record-error-total": float(self.record_error_total),
            "record-retry-total": float(self.record_retry_total),
            "batch-size-avg": self.batch_bytes_total / batches if self.batch_total else float("nan"),
            "records-per-request-avg": self.record_send_total / self.request_total if self.request_total else float("nan"),
            "compression-rate-avg": self.batch_bytes_total / self.uncompressed_bytes_total if self.uncompressed_bytes_total else float("nan"),
            "request-total": float(self.request_total),
            "response-total": float(self.response_total),
        }


class Sender:
    """Sends the accumulator's ready batches to their leaders; one task per producer (``run``)."""

    def __init__(
        self,
        cluster: NetworkClient,
        config: ProducerConfig,
        accumulator: RecordAccumulator,
        transactions: TransactionManager | None,
        metrics: ProducerMetrics,
    ) -> None:
        self.cluster = cluster
        self.config = config
        self.accumulator = accumulator
        self.transactions = transactions  # None unless idempotent
        self.metrics = metrics
        self._acks = config.acks
        self._codec = config.compression_type
        self._linger = config.linger_ms / 1000
        self._request_timeout = config.request_timeout_ms / 1000
        self._delivery_timeout = config.delivery_timeout_ms / 1000
        self._max_in_flight = config.max_in_flight
        self._add_wanted = False  # a ready batch waits for its partition to join the transaction
        self._transactional = transactions is not None and transactions.transactional
        self._transactional_id = config.transactional_id if self._transactional else None
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by the producer's start
        self.woken = False
        self.waiter: asyncio.Future[None] | None = None
        self.sleep_until = 0.0  # when the sleeping sender wakes by itself; 0 while it runs
        self._in_flight: dict[int, int] = {}
        self._connections: dict[int, BrokerConnection] = {}
        self._connecting: dict[int, asyncio.Task[None]] = {}
        self._produce_versions: dict[BrokerConnection, int] = {}
        self._need_metadata = False
        self._metadata_task: asyncio.Task[None] | None = None
        self.metadata_at = 0.0
        self._metadata_retry_at = 0.0

    def close(self) -> None:
        """Stop the tasks the sender started (connecting, metadata)."""
        for task in list(self._connecting.values()):
            task.cancel()
        if self._metadata_task is not None:
            self._metadata_task.cancel()

    def wake(self) -> None:
        self.woken = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def run(self) -> None:
        loop = self.loop
        try:
            while True:
                self.woken = False
                timeout = self._run_once()
                if self.accumulator.closed and not self.accumulator.active and not any(self._in_flight.values()) and not self.accumulator.incomplete:
                    return
                if self.woken:
                    await asyncio.sleep(0)
                    continue
                self.waiter = waiter = loop.create_future()
                timer = None
                self.sleep_until = math.inf
                if timeout is not None:
                    timer = loop.call_later(timeout, _resolve, waiter)
                    self.sleep_until = _monotonic() + timeout
                try:
                    await waiter
                finally:
                    self.waiter = None
                    self.sleep_until = 0.0
                    if timer is not None:
                        timer.cancel()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            log.exception("the producer's sender failed")
            error = exc if isinstance(exc, KcliError) else KcliError(f"the producer's sender failed: {exc!r}")
            for batch in list(self.accumulator.incomplete):
                self._complete(batch, -1, -1, error)
            raise

    def _run_once(self) -> float | None:
        """Send what is ready; return the seconds until something else will be (None: nothing)."""
        now = _monotonic()
        transactions = self.transactions
        if transactions is not None:
            if self._transactional:
                if transactions.has_error or transactions.aborting:
                    self._abort_undrained(transactions)
            elif transactions.reset_needed:
                transactions.reset_producer_id(self.loop, self.wake)
        if self._need_metadata or (self.metadata_at and now - self.metadata_at > self.config.metadata_max_age_ms / 1000):
            self._start_metadata_refresh(now)
        wake_at: float | None = None
        self._add_wanted = False
        while True:
            by_node, wake_at = self._collect(now)
            if not by_node:
                break
            for node, queues in by_node.items():
                self._send_to(node, queues, now)
        if self._add_wanted:
            # A batch is ready for a partition new to the transaction: every partition new so far
            # goes in one AddPartitionsToTxn (those that filled meanwhile need no request of their own).
            transactions.add_partitions_if_needed(self.loop, self.wake)
        if self.accumulator.memory_waiters and self.accumulator.buffered < self.accumulator.buffer_memory:
            self.accumulator.release_memory_waiters()
        if self._need_metadata:
            retry = self._metadata_retry_at
            if retry > now and (wake_at is None or retry < wake_at):
                wake_at = retry
        return None if wake_at is None else max(0.0, wake_at - now)

    def _abort_undrained(self, transactions: TransactionManager) -> None:
        """Fail the batches of a failed or aborted transaction that were not sent."""
        batches = self.accumulator.undrained()
        if not batches:
            return
        error = transactions.last_error if transactions.has_error else None
        for batch in batches:
            transactions.abandoned(batch)
            failure = TransactionAbortedError("Failing batch since transaction was aborted" + (f": {error}" if error is not None else ""))
            self._complete(batch, -1, -1, failure)

    def _collect(self, now: float) -> tuple[dict[int, list[PartitionQueue]], float | None]:
        force = self.accumulator.flushes > 0 or self.accumulator.closed or bool(self.accumulator.memory_waiters)
        linger = self._linger
        delivery = self._delivery_timeout
        max_in_flight = self._max_in_flight
        in_flight = self._in_flight
        connections = self._connections
        in_flight_nodes = {node for node, count in in_flight.items() if count}
        transactions = self.transactions if self._transactional else None
        by_node: dict[int, list[PartitionQueue]] = {}
        wake_at: float | None = None
        idle = []
        for queue in self.accumulator.active:
            if queue.retries:
                batch = queue.retries[0]
                if queue.in_flight:
                    continue  # a retry goes out only once the partition's earlier sends are answered
                if batch.retry_at > now:
                    if wake_at is None or batch.retry_at < wake_at:
                        wake_at = batch.retry_at
                    continue
            elif queue.closed:
                batch = queue.closed[0]
            elif queue.open is not None:
                batch = queue.open
                if not force:
                    age = now - batch.created
                    if age < linger:
                        due = batch.created + linger
                        if wake_at is None or due < wake_at:
                            wake_at = due
                        continue
                    if age < linger + _HOLD and queue.topic.leaders[queue.partition] in in_flight_nodes:
                        # Its broker is busy with an earlier request: the batch keeps filling until
                        # that answer comes (which runs this again), for at most _HOLD.
                        due = batch.created + linger + _HOLD
                        if wake_at is None or due < wake_at:
                            wake_at = due
                        continue
            else:
                if not queue.in_flight:
                    idle.append(queue)
                continue
            if now - batch.created >= delivery:
                self._expire(queue, batch, now)
                continue
            if transactions is not None and not transactions.send_to_partition_allowed(queue):
                self._add_wanted = True
                continue  # its partition joins the transaction first; the answer wakes the sender
            leader = queue.topic.leaders[queue.partition] if queue.partition < len(queue.topic.leaders) else -1
            if leader < 0:
                self._need_metadata = True
                expiry = batch.created + delivery
                if wake_at is None or expiry < wake_at:
                    wake_at = expiry
                continue
            if in_flight.get(leader, 0) >= max_in_flight:
                continue
            connection = connections.get(leader)
            if connection is None or connection.closed:
                self._connect(leader)
                continue
            nodes = by_node.get(leader)
            if nodes is None:
                by_node[leader] = [queue]
            else:
                nodes.append(queue)
        for queue in idle:
            if not (queue.open or queue.closed or queue.retries or queue.in_flight):
                self.accumulator.active.pop(queue, None)
        return by_node, wake_at

    def _expire(self, queue: PartitionQueue, batch: ProducerBatch, now: float) -> None:
        self.accumulator.take(queue, batch)
        error = KafkaError(
            ErrorCode.REQUEST_TIMED_OUT,
            f"Expiring {batch.count} record(s) for {queue.label()}:{int((now - batch.created) * 1000)} ms has passed since batch creation",
        )
        if self.transactions is not None:
            self.transactions.undeliverable(batch, error)
        self._complete(batch, -1, -1, error)

    def _connect(self, node: int) -> None:
        if node in self._connecting:
            return

        async def connect() -> None:
            try:
                self._connections[node] = await self.cluster.connection(node)
            except KafkaError as exc:
                # The batches wait (up to delivery.timeout.ms) while metadata is looked up again.
                log.debug("cannot connect to broker %d: %s", node, exc)
                self._need_metadata = True
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
            finally:
                self._connecting.pop(node, None)
                self.wake()

        self._connecting[node] = self.loop.create_task(connect())

    def _send_to(self, node: int, queues: list[PartitionQueue], now: float) -> None:
        connection = self._connections[node]
        batches: list[ProducerBatch] = []
        total = 0
        limit = self.config.max_request_size
        transactions = self.transactions
        for queue in queues:
            batch = queue.retries[0] if queue.retries else queue.closed[0] if queue.closed else queue.open
            if batch is None:
                continue
            rewrite = batch.payload is None or (transactions is not None and batch.producer_id != transactions.producer_id)
            # A batch is built only once taken: one left open here still takes records.
            if batches and total + (self.accumulator.estimated_size(batch) if rewrite else len(batch.payload)) > limit:
                break
            self.accumulator.take(queue, batch)
            total += self._write(batch) if rewrite else len(batch.payload)
            batches.append(batch)
            queue.in_flight += 1
            batch.attempts += 1
            if transactions is not None:
                transactions.sent(batch)
        if batches:
            self._produce(node, connection, batches)

    def _write(self, batch: ProducerBatch) -> int:
        """Build the batch's bytes (again, after a producer id change) and return their size."""
        if self.transactions is not None:
            self.transactions.assign_sequence(batch)
        raw_size = batch.build(self._codec, self._transactional)
        size = len(batch.payload)
        metrics = self.metrics
        metrics.batch_total += 1
        metrics.uncompressed_bytes_total += raw_size
        metrics.batch_bytes_total += size - RECORD_BATCH_OVERHEAD
        return size

    def _produce(self, node: int, connection: BrokerConnection, batches: list[ProducerBatch]) -> None:
        """Write one Produce request for ``batches``; its answer comes to ``_on_answer``."""
        acks = self._acks
        self._in_flight[node] = self._in_flight.get(node, 0) + 1
        try:
            version = self._produce_versions.get(connection)
            if version is None:
                version = self._produce_versions[connection] = connection.version_for(PRODUCE, at_least=3)
            body = encode_produce_request(version, acks, self.config.request_timeout_ms, batches, self._transactional_id)
            answer = connection.write(PRODUCE, version, body, expect_response=acks != 0)
            self.metrics.request_total += 1
        except KafkaError as exc:
            self._request_failed(node, batches, exc)
            return
        if answer is None:  # acks=0: nothing comes back
            self._in_flight[node] -= 1
            for batch in batches:
                self._answered(batch)
                self._complete(batch, -1, -1, None)
            return
        timer = self.loop.call_later(self._request_timeout, _time_out, answer, connection.address, self.config.request_timeout_ms)
        answer.add_done_callback(lambda future: self._on_answer(node, batches, future, timer))

    def _request_failed(self, node: int, batches: list[ProducerBatch], exc: KafkaError) -> None:
        self._in_flight[node] -= 1
        now = _monotonic()
        for batch in batches:
            self._answered(batch)
            self._failed_batch(batch, exc.error_code, str(exc), now)
        self.wake()

    def _on_answer(self, node: int, batches: list[ProducerBatch], future: asyncio.Future[Any], timer: asyncio.TimerHandle) -> None:
        timer.cancel()
        exc = future.exception()
        if exc is not None:
            if isinstance(exc, KafkaError):
                self._request_failed(node, batches, exc)
            else:
                self._request_failed(node, batches, KafkaError(ErrorCode.NETWORK_EXCEPTION, str(exc) or type(exc).__name__))
            return
        self._in_flight[node] -= 1
        self.metrics.response_total += 1
        answer = future.result()
        by_partition = {(b.queue.topic.name, b.queue.partition): b for b in batches}
        now = _monotonic()
        for topic in answer.responses:
            for result in topic.partition_responses:
                batch = by_partition.pop((topic.name, int(result.index)), None)
                if batch is None:
                    continue
                self._answered(batch)
                code = error_code(result.error_code)
                if code == 0 or code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                    self._complete(batch, int(result.base_offset), _millis(getattr(result, "log_append_time", None)), None)
                else:
                    self._failed_batch(batch, ErrorCode.for_code(code), getattr(result, "error_message", None), now)
        for batch in by_partition.values():
            self._answered(batch)
            self._failed_batch(batch, ErrorCode.UNKNOWN_SERVER_ERROR, f"the broker's Produce answer left out {batch.queue.label()}", now)
        self._run_now()

    def _run_now(self) -> None:
        """Send what became ready right away (from an answer's callback), without waiting for
        the sender task's next turn; the sender is woken only when its sleep is now too long."""
        if self.waiter is None or self.accumulator.closed:
            self.wake()
            return
        timeout = self._run_once()
        if timeout is not None and _monotonic() + timeout < self.sleep_until:
            self.wake()

    def _answered(self, batch: ProducerBatch) -> None:
        batch.queue.in_flight -= 1

    def _failed_batch(self, batch: ProducerBatch, code: ErrorCode, message: str | None, now: float) -> None:
        if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE) and batch.count > 1:
            self._split(batch)
            return
        transactions = self.transactions
        retriable = code.retriable if transactions is None else transactions.retriable_after(batch, code)
        if retriable and self._acks != 0 and batch.attempts <= self.config.retries and now - batch.created < self._delivery_timeout:
            if code in STALE_METADATA:
                self._need_metadata = True
            backoff = self.config.retry_backoff_ms * 2 ** min(batch.attempts - 1, 30)
            backoff = min(backoff, max(self.config.retry_backoff_ms, self.config.retry_backoff_max_ms)) / 1000
            batch.retry_at = now + backoff * (0.8 + 0.4 * random.random())
            self.accumulator.reenqueue(batch)
            self.metrics.record_retry_total += batch.count
            return
        error = KafkaError(code, message or code.message)
        if transactions is not None:
            transactions.undeliverable(batch, error)
        self._complete(batch, -1, -1, error)

    def _split(self, batch: ProducerBatch) -> None:
        """Send the records of a batch the broker found too large as two batches."""
        if self.transactions is not None:
            self.transactions.answered(batch)
        for child in self.accumulator.split_and_reenqueue(batch):
            child.future.add_done_callback(lambda _f, parent=batch: self._child_done(parent))
            if child.base_sequence >= 0:
                self._write(child)

    def _child_done(self, parent: ProducerBatch) -> None:
        parent.pending -= 1
        if parent.pending == 0:
            self._complete(parent, -1, -1, None, release=False)

    def _complete(self, batch: ProducerBatch, base_offset: int, log_append_time: int, error: BaseException | None, *, release: bool = True) -> None:
        if batch.done:
            return
        batch.done = True
        batch.parts = batch.payload = None  # type: ignore[assignment]  # futures may outlive the bytes
        if batch.children is None:
            if error is None:
                self.metrics.record_send_total += batch.count
            else:
                self.metrics.record_error_total += batch.count
        batch.base_offset = base_offset
        batch.log_append_time = log_append_time
        batch.error = error
        if self.transactions is not None:
            self.transactions.answered(batch)
        self.accumulator.deallocate(batch, release)
        if not batch.future.done():
            batch.future.set_result(None)
        if batch.children is not None and batch.callbacks is None:
            return
        callbacks = batch.callbacks
        if callbacks:
            batch.callbacks = None
            for callback, future, args in callbacks:
                try:
                    callback(future, *args)
                except Exception:
                    log.exception("a producer callback failed")

    # -- metadata ------------------------------------------------------------------------------------

    def _start_metadata_refresh(self, now: float) -> None:
        if self._metadata_task is not None or now < self._metadata_retry_at or not self.accumulator.topics:
            return
        self._metadata_task = self.loop.create_task(self._refresh_metadata())

    async def _refresh_metadata(self) -> None:
        try:
            await self.cluster.refresh(list(self.accumulator.topics), allow_auto_create=True)
            for name in self.accumulator.topics:
                info = self.cluster.metadata.topics.get(name)
                if info is not None:
                    self.accumulator.apply_metadata(info)
            self._need_metadata = any(
                state.leaders[q.partition] < 0 for state in self.accumulator.topics.values() for q in state.queues if q in self.accumulator.active
            )
            self.metadata_at = _monotonic()
        except KafkaError as exc:
            log.debug("metadata refresh failed: %s", exc)
        finally:
            self._metadata_retry_at = _monotonic() + self.config.retry_backoff_ms / 1000
            self._metadata_task = None
            self.wake()



# -- the wire --------------------------------------------------------------------------------------

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_AND_TIMEOUT = struct.Struct(">hi")


def encode_produce_request(version: int, acks: int, timeout_ms: int, batches: Sequence[ProducerBatch], transactional_id: str | None = None) -> list[bytes]:
    """The body of a Produce request (v3+) carrying one batch per partition, as byte pieces,
    with the transactional id of a transactional producer (null otherwise).

    Written directly rather than through kio's entities: the records are most of the request,
    and this keeps them out of the per-field writer. A test decodes it with kio's reader.
    """
    topics: dict[str, list[ProducerBatch]] = {}
    for batch in batches:
        name = batch.queue.topic.name
        group = topics.get(name)
        if group is None:
            topics[name] = [batch]
        else:
            group.append(batch)
    flexible = messages.is_flexible(PRODUCE, version)
    if flexible:
        if transactional_id is None:
            head = b"\x00"
        else:
            raw = transactional_id.encode("utf-8")
            head = encode_unsigned_varint(len(raw) + 1) + raw
        parts = [head + _ACKS_AND_TIMEOUT.pack(acks, timeout_ms), encode_unsigned_varint(len(topics) + 1)]
        for name, group in topics.items():
            raw = name.encode("utf-8")
            parts.append(encode_unsigned_varint(len(raw) + 1) + raw + encode_unsigned_varint(len(group) + 1))
            for batch in group:
                payload = batch.payload
                parts.append(_INT32.pack(batch.queue.partition) + encode_unsigned_varint(len(payload) + 1))
                parts.append(payload)
                parts.append(b"\x00")  # the partition's tagged fields
            parts.append(b"\x00")  # the topic's tagged fields
        parts.append(b"\x00")
    else:
        if transactional_id is None:
            head = _INT16.pack(-1)
        else:
            raw = transactional_id.encode("utf-8")
            head = _INT16.pack(len(raw)) + raw
        parts = [head + _ACKS_AND_TIMEOUT.pack(acks, timeout_ms), _INT32.pack(len(topics))]
        for name, group in topics.items():
            raw = name.encode("utf-8")
            parts.append(_INT16.pack(len(raw)) + raw + _INT32.pack(len(group)))
            for batch in group:
                payload = batch.payload
                parts.append(_INT32.pack(batch.queue.partition) + _INT32.pack(len(payload)))
                parts.append(payload)
    return parts


def _time_out(future: asyncio.Future[Any], address: str, timeout_ms: int) -> None:
    if not future.done():
        future.set_exception(KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Produce to {address} timed out after {timeout_ms} ms"))


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _millis(value: Any) -> int:
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(value)
