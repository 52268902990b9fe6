"""The producer's buffer (Kafka's RecordAccumulator) and what it holds: batches per partition.

``RecordAccumulator.append`` picks the record's partition (``partitioner.py``: murmur2 of the key,
sticky for null keys), encodes the record at once into the partition's open ``ProducerBatch`` (its
offset and timestamp deltas are known then) and returns a ``RecordFuture``. A batch is closed
when the next record would take it past ``batch.size`` (for a compressed batch, past the size its
estimated compression ratio allows). Appending waits elsewhere (the producer) while
``buffer.memory`` bytes are unsent; the Sender takes batches when they are ready and gives their
memory back once answered. A batch's RecordBatch bytes are written when it is first sent
(``ProducerBatch.build``, through ``records.write_header``); a retry resends the same bytes.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import logging
import time
import weakref
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from kcli.client.partitioner import StickyPartitioner, partition_for_key
from kcli.client.producer_config import INT32_MAX, ProducerConfig
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.storage.compression import CompressionType, compress
from kcli.storage.records import NO_PARTITION_LEADER_EPOCH, RECORD_BATCH_OVERHEAD, TRANSACTIONAL_FLAG, decode_record_fields, encode_record_fields, write_header
from kcli.storage.varint import encode_varint

if TYPE_CHECKING:
    from kcli.client.sender import Sender

log = logging.getLogger(__name__)

_time_ns = time.time_ns
_monotonic = time.monotonic
_new_tuple = tuple.__new__
_HEADER_SPACE = bytes(RECORD_BATCH_OVERHEAD)
_EMPTY = bytearray()

# Zig-zag varints of the small non-negative numbers a record is mostly made of (lengths, deltas).
_VARINT = [encode_varint(i) for i in range(1 << 14)]


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int


class BufferFull(KcliError):
    """``send_nowait`` found ``buffer.memory`` bytes waiting to be sent."""


class TopicQueues:
    """A topic's partitions as the accumulator knows them: batch queues, leaders, partitioners."""

    __slots__ = ("name", "count", "queues", "leaders", "available", "sticky", "round_robin", "ratio")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.queues: list[PartitionQueue] = []
        self.leaders: list[int] = []
        self.available: list[int] = []
        self.sticky = StickyPartitioner()
        self.round_robin = itertools.count()
        self.ratio = 1.0  # estimated compressed / uncompressed size of this topic's batches


class PartitionQueue:
    """One partition's batches (Kafka's per-partition deque): the open one, closed ones waiting,
    and ones back for a retry; how many of its batches are in flight."""

    __slots__ = ("topic", "partition", "open", "closed", "retries", "in_flight")

    def __init__(self, topic: TopicQueues, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.open: ProducerBatch | None = None
        self.closed: list[ProducerBatch] = []
        self.retries: list[ProducerBatch] = []  # kept in batch id order
        self.in_flight = 0

    def label(self) -> str:
        return f"{self.topic.name}-{self.partition}"


_batch_ids = itertools.count()


class ProducerBatch:
    """Records of one partition sent together (Kafka's ProducerBatch): encoded as they are
    appended, built into a RecordBatch when first sent (``build``), answered as one."""

    __slots__ = (
        "queue", "id", "parts", "count", "size", "limit", "base_timestamp", "max_timestamp", "created", "future",
        "callbacks", "payload", "producer_id", "producer_epoch", "base_sequence", "attempts", "retry_at", "done",
        "base_offset", "log_append_time", "error", "children", "pending",
    )

    def __init__(self, queue: PartitionQueue, timestamp: int, limit: int, future: asyncio.Future[None], now: float) -> None:
        self.queue = queue
        self.id = next(_batch_ids)
        self.parts: list[bytes] = []
        self.count = 0
        self.size = RECORD_BATCH_OVERHEAD
        self.limit = limit
        self.base_timestamp = timestamp
        self.max_timestamp = timestamp
        self.created = now
        self.future = future
        self.callbacks: list[tuple[Callable[..., Any], RecordFuture, tuple[Any, ...]]] | None = None
        self.payload: bytearray | None = None
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.attempts = 0
        self.retry_at = 0.0
        self.done = False
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self.children: list[tuple[int, ProducerBatch]] | None = None  # (first index, batch) after a split
        self.pending = 0

    def leaf(self, index: int) -> tuple[ProducerBatch, int]:
        """The batch that carried record ``index`` (itself, or a part it was split into)."""
        batch = self
        while batch.children is not None:
            for start, child in reversed(batch.children):
                if index >= start:
                    index -= start
                    batch = child
                    break
        return batch, index

    def build(self, codec: CompressionType, transactional: bool = False) -> int:
        """Write the batch's RecordBatch bytes (``payload``; again after its producer fields
        changed): records joined, compressed, the header written by ``records.write_header``
        (with the transactional attribute for a batch of a transaction). Returns the records'
        uncompressed size."""
        parts = self.parts
        if codec:
            body = b"".join(parts)
            raw_size = len(body)
            body = compress(codec, body)
            if raw_size:
                observed = len(body) / raw_size
                topic = self.queue.topic
                # Kafka's estimator: slow to trust a better ratio, quick to take a worse one.
                if observed > topic.ratio:
                    topic.ratio = max(topic.ratio + 0.05, observed)
                elif observed < topic.ratio:
                    topic.ratio = max(topic.ratio - 0.005, observed)
            payload = bytearray(RECORD_BATCH_OVERHEAD + len(body))
            payload[RECORD_BATCH_OVERHEAD:] = body
        else:
            parts.insert(0, _HEADER_SPACE)
            payload = _EMPTY.join(parts)
            del parts[0]
            raw_size = len(payload) - RECORD_BATCH_OVERHEAD
        count = self.count
        write_header(
            payload, 0, NO_PARTITION_LEADER_EPOCH, int(codec) | (TRANSACTIONAL_FLAG if transactional else 0), count - 1, self.base_timestamp, self.max_timestamp,
            self.producer_id, self.producer_epoch, self.base_sequence, count,
        )
        self.payload = payload
        return raw_size


class RecordFuture(tuple):
    """The outcome of one ``send``: await it for ``RecordMetadata``, or add a callback.

    It follows asyncio's Future protocol (``done``, ``result``, ``exception``,
    ``add_done_callback``, ``get_loop``; a record cannot be cancelled once it is in a batch), so
    ``asyncio.gather`` and ``asyncio.wait`` take it as it is. Callbacks run in the event loop when
    the record's batch is answered, as ``callback(future, *args)``; ``future.result()`` returns the
    metadata or raises the delivery error.
    """

    __slots__ = ()
    _asyncio_future_blocking = False  # asyncio.isfuture() is true: no task is wrapped around it

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        batch = self[0]
        if not batch.done:
            yield from batch.future.__await__()
        return self.result()

    def done(self) -> bool:
        return self[0].done

    def cancelled(self) -> bool:
        return False

    def cancel(self, msg: Any = None) -> bool:
        return False

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self[0].future.get_loop()

    def result(self) -> RecordMetadata:
        batch, index, timestamp = self
        if not batch.done:
            raise asyncio.InvalidStateError("the record has not been answered yet")
        if batch.children is not None:
            batch, index = batch.leaf(index)
        if batch.error is not None:
            raise batch.error
        queue = batch.queue
        base = batch.base_offset
        return _new_tuple(RecordMetadata, (
            queue.topic.name, queue.partition, base + index if base >= 0 else -1,
            timestamp if batch.log_append_time < 0 else batch.log_append_time,
        ))

    def exception(self) -> BaseException | None:
        batch = self[0]
        if not batch.done:
            raise asyncio.InvalidStateError("the record has not been answered yet")
        if batch.children is not None:
            batch = batch.leaf(self[1])[0]
        return batch.error

    def add_done_callback(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> None:
        """Call ``callback(future, *args)`` once the record is answered (soon, if it is)."""
        batch = self[0]
        if batch.done:
            _call_soon(batch.future.get_loop(), callback, self, args)
        elif batch.callbacks is None:
            batch.callbacks = [(callback, self, args)]
        else:
            batch.callbacks.append((callback, self, args))

    def remove_done_callback(self, callback: Callable[..., Any]) -> int:
        batch = self[0]
        if not batch.callbacks:
            return 0
        kept = [entry for entry in batch.callbacks if not (entry[0] == callback and entry[1] is self)]
        removed = len(batch.callbacks) - len(kept)
        batch.callbacks = kept
        return removed

    @property
    def timestamp(self) -> int:
        return self[2]



class RecordAccumulator:
    """The producer's buffer (Kafka's RecordAccumulator): a queue of batches per partition,
    records appended to the open batch, ``buffer.memory`` accounted, batches handed to the
    Sender (``take``), and the memory of answered ones given back (``deallocate``)."""

    def __init__(self, config: ProducerConfig) -> None:
        self.config = config
        self._codec = config.compression_type
        self._linger = config.linger_ms / 1000
        self._batch_size = max(config.batch_size, 1)
        self._max_record = config.max_request_size - RECORD_BATCH_OVERHEAD
        self.buffer_memory = config.buffer_memory
        self._ignore_keys = config.partitioner_ignore_keys or config.partitioner != "default"
        self._round_robin = config.partitioner == "round_robin"
        self.topics: dict[str, TopicQueues] = {}
        self.active: dict[PartitionQueue, None] = {}  # queues holding batches, in insertion order
        self.incomplete: set[ProducerBatch] = set()
        self.buffered = 0
        self.memory_waiters: list[asyncio.Future[None]] = []
        self.flushes = 0  # flushes in progress: every batch is ready
        self.closed = False  # closing: every batch is ready
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by the producer's start
        self.sender: Sender = None  # type: ignore[assignment]  # woken when a batch is opened or closed

    def append(
        self,
        state: TopicQueues,
        value: bytes | None,
        key: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        partition: int | None,
        timestamp: int | None,
    ) -> RecordFuture:
        """Encode a record into its partition's open batch (the topic's metadata is known, memory
        was waited for); a future for it, failed at once for a bad partition or a record too large."""
        # The hot path: a few dozen operations per record, the record encoded once, here.
        if partition is None:
            if key is None or self._ignore_keys:
                partition = state.sticky.partition
                if partition < 0:
                    partition = self._choose(state)
            else:
                partition = partition_for_key(key, state.count)
        elif not 0 <= partition < state.count:
            return self.failed(state, partition, timestamp, KafkaError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Invalid partition given with record: {partition} is not in the range [0...{state.count})."))
        queue = state.queues[partition]
        if timestamp is None:
            timestamp = _time_ns() // 1_000_000
        batch = queue.open
        if batch is None:
            batch = self.open_batch(queue, timestamp)
        index = batch.count
        delta = timestamp - batch.base_timestamp
        if not headers and value is not None and 0 <= delta < 16384:
            try:
                size = len(value)
                td = _VARINT[delta]
                od = _VARINT[index]
                vl = _VARINT[size]
                if key is None:
                    record = b"".join((_VARINT[len(td) + len(od) + len(vl) + size + 3], b"\x00", td, od, b"\x01", vl, value, b"\x00"))
                else:
                    kl = _VARINT[len(key)]
                    record = b"".join((
                        _VARINT[len(td) + len(od) + len(kl) + len(key) + len(vl) + size + 2], b"\x00", td, od, kl, key, vl, value, b"\x00",
                    ))
            except IndexError:  # a number past the table: the general encoder
                record = encode_record_fields(delta, index, key, value, headers)
        else:
            record = encode_record_fields(delta, index, key, value, headers)
        size = len(record)
        if batch.size + size > batch.limit:
            if index:
                self.close_batch(queue, batch)
                batch = self.open_batch(queue, timestamp)
                index = 0
                record = encode_record_fields(0, 0, key, value, headers)
                size = len(record)
            if size > self._max_record or size + RECORD_BATCH_OVERHEAD > self.buffer_memory:
                self.drop_if_empty(queue, batch)
                return self.failed(state, partition, timestamp, self._too_large(size + RECORD_BATCH_OVERHEAD))
        batch.parts.append(record)
        batch.count = index + 1
        batch.size += size
        if timestamp > batch.max_timestamp:
            batch.max_timestamp = timestamp
        self.buffered += size
        if batch.size >= batch.limit:
            self.close_batch(queue, batch)
        return _new_tuple(RecordFuture, (batch, index, timestamp))

    def _too_large(self, size: int) -> KafkaError:
        if size > self.config.max_request_size:
            return KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"The message is {size} bytes when serialized which is larger than "
                              f"{self.config.max_request_size}, which is the value of the max.request.size configuration.")
        return KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"The message is {size} bytes when serialized which is larger than the total "
                          "memory buffer you have configured with the buffer.memory configuration.")

    def _choose(self, state: TopicQueues) -> int:
        """The partition for a record whose key does not choose one."""
        if self._round_robin:
            available = state.available or range(state.count)
            return available[next(state.round_robin) % len(available)]
        return state.sticky.current(state.available, state.count)

    def open_batch(self, queue: PartitionQueue, timestamp: int) -> ProducerBatch:
        topic = queue.topic
        limit = self._batch_size
        if self._codec and topic.ratio < 1.0:
            limit = RECORD_BATCH_OVERHEAD + int((limit - RECORD_BATCH_OVERHEAD) / max(topic.ratio, 0.05))
        # Never past max.request.size: a record too large for it then always takes the branch of
        # append that checks records against it.
        limit = min(limit, self.config.max_request_size)
        now = _monotonic()
        batch = ProducerBatch(queue, timestamp, limit, self.loop.create_future(), now)
        queue.open = batch
        self.buffered += RECORD_BATCH_OVERHEAD
        self.incomplete.add(batch)
        if queue not in self.active:
            self.active[queue] = None
        sender = self.sender
        if not sender.woken and now + self._linger < sender.sleep_until:
            sender.wake()  # the sender sleeps past this batch's linger
        return batch

    def close_batch(self, queue: PartitionQueue, batch: ProducerBatch) -> None:
        queue.open = None
        queue.closed.append(batch)
        sticky = queue.topic.sticky
        if sticky.partition == queue.partition:
            sticky.batch_full()
        self.sender.wake()

    def drop_if_empty(self, queue: PartitionQueue, batch: ProducerBatch) -> None:
        if batch.count == 0 and queue.open is batch:
            queue.open = None
            self.buffered -= batch.size
            self.incomplete.discard(batch)
            batch.future.cancel()

    def failed(self, state: TopicQueues, partition: int, timestamp: int | None, error: KafkaError) -> RecordFuture:
        queue = state.queues[partition] if 0 <= partition < state.count else PartitionQueue(state, partition)
        batch = ProducerBatch(queue, timestamp or 0, 0, self.loop.create_future(), _monotonic())
        batch.count = 1
        batch.error = error
        batch.done = True
        batch.future.set_result(None)
        return _new_tuple(RecordFuture, (batch, 0, timestamp if timestamp is not None else -1))

    def apply_metadata(self, info: Any) -> None:
        """A topic's partitions and leaders from a metadata answer."""
        state = self.topics.get(info.name)
        if state is None:
            state = self.topics[info.name] = TopicQueues(info.name)
        if info.error or not info.partitions:
            return
        count = max(max(info.partitions) + 1, state.count)
        while len(state.queues) < count:
            state.queues.append(PartitionQueue(state, len(state.queues)))
        leaders = [-1] * count
        for number, part in info.partitions.items():
            leaders[number] = part.leader
        state.leaders = leaders
        state.available = [p for p in range(count) if leaders[p] >= 0]
        state.count = count

    def take(self, queue: PartitionQueue, batch: ProducerBatch) -> None:
        """Take the partition's first batch out of its queue, to be sent or expired."""
        if queue.retries and queue.retries[0] is batch:
            queue.retries.pop(0)
        elif queue.closed and queue.closed[0] is batch:
            queue.closed.pop(0)
        elif queue.open is batch:
            queue.open = None

    def undrained(self) -> list[ProducerBatch]:
        """Take every batch not in flight out of its queue (Kafka's abortUndrainedBatches: the
        batches of an aborted or failed transaction that were not sent)."""
        taken = []
        for queue in list(self.active):
            if queue.open is not None:
                queue.closed.append(queue.open)
                queue.open = None
            taken.extend(queue.retries)
            taken.extend(queue.closed)
            queue.retries = []
            queue.closed = []
        return taken

    def reenqueue(self, batch: ProducerBatch) -> None:
        """Put a batch back for a retry, in its place by batch id."""
        queue = batch.queue
        bisect.insort(queue.retries, batch, key=batch_order)
        self.active[queue] = None

    def estimated_size(self, batch: ProducerBatch) -> int:
        """The batch's size on the wire before it is built: compressed by its topic's observed ratio."""
        if not self._codec:
            return batch.size
        return RECORD_BATCH_OVERHEAD + int((batch.size - RECORD_BATCH_OVERHEAD) * batch.queue.topic.ratio)

    def split_and_reenqueue(self, batch: ProducerBatch) -> list[ProducerBatch]:
        """The records of a batch the broker found too large as two batches, queued for a retry
        in its place; they keep its producer fields, the second half's sequence following on."""
        queue = batch.queue
        records = decode_record_fields(b"".join(batch.parts), batch.count)
        half = len(records) // 2
        batch.children = []
        batch.pending = 2
        self.buffered -= batch.size
        halves = []
        for start, part in ((0, records[:half]), (half, records[half:])):
            first_ts = batch.base_timestamp + part[0][1]
            child = ProducerBatch(queue, first_ts, 0, self.loop.create_future(), batch.created)
            child.id = batch.id  # keeps the place of the batch it replaces
            for i, (_od, ts_delta, key, value, headers) in enumerate(part):
                timestamp = batch.base_timestamp + ts_delta
                child.parts.append(encode_record_fields(timestamp - first_ts, i, key, value, headers))
                child.max_timestamp = max(child.max_timestamp, timestamp)
            child.count = len(part)
            child.size = RECORD_BATCH_OVERHEAD + sum(map(len, child.parts))
            child.attempts = batch.attempts
            if batch.base_sequence >= 0:
                child.producer_id, child.producer_epoch = batch.producer_id, batch.producer_epoch
                child.base_sequence = (batch.base_sequence + start) & INT32_MAX
            batch.children.append((start, child))
            halves.append(child)
        for child in halves:
            self.incomplete.add(child)
            self.buffered += child.size
        queue.retries[:0] = halves
        queue.retries.sort(key=batch_order)
        self.active[queue] = None
        return halves

    def deallocate(self, batch: ProducerBatch, release: bool) -> None:
        """An answered batch leaves the buffer; its memory (unless ``release`` is false: a split
        batch gave its memory to its halves) goes back to whoever waits for memory."""
        self.incomplete.discard(batch)
        if release and batch.children is None:
            self.buffered -= batch.size
        if self.memory_waiters and self.buffered < self.buffer_memory:
            self.release_memory_waiters()

    def release_memory_waiters(self) -> None:
        waiters, self.memory_waiters = self.memory_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


def batch_order(batch: ProducerBatch) -> int:
    return batch.id



# Callbacks added to records already answered, per event loop, run by one handle: a caller
# gathering a million records (asyncio.gather adds a callback to each) would otherwise schedule a
# million handles.
_DEFERRED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[tuple[Callable[..., Any], RecordFuture, tuple[Any, ...]]]] = weakref.WeakKeyDictionary()


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[..., Any], future: RecordFuture, args: tuple[Any, ...]) -> None:
    pending = _DEFERRED.get(loop)
    if pending is None:
        _DEFERRED[loop] = pending = []
        loop.call_soon(_run_deferred, loop)
    pending.append((callback, future, args))


def _run_deferred(loop: asyncio.AbstractEventLoop) -> None:
    for callback, future, args in _DEFERRED.pop(loop, ()):
        try:
            callback(future, *args)
        except Exception:
            log.exception("a producer callback failed")

