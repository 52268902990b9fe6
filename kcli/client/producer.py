"""The producer: records batched per partition, sent to each partition's leader.

``Producer`` runs on a ``NetworkClient`` and takes the Java producer's settings by their property names
(``Producer.from_properties(cluster_or_bootstrap, {"acks": "all", "linger.ms": "5"})``)::

    async with Producer.from_properties("127.0.0.1:9092", {"compression.type": "lz4"}) as producer:
        future = await producer.send("orders", b"value", key=b"k1")
        metadata = await future          # RecordMetadata(topic, partition, offset, timestamp)

How a record travels:

- ``send`` picks the partition (``partitioner.py``: murmur2 of the key, sticky for null keys),
  encodes the record at once into the partition's open batch (its offset and timestamp deltas
  are known then) and returns a ``RecordFuture``. A batch is closed when the next record would
  take it past ``batch.size`` (for a compressed batch, past the size its estimated compression
  ratio allows); ``send`` waits while ``buffer.memory`` bytes are unsent, up to ``max.block.ms``.
- The sender task takes a partition's first batch when it is closed, ``linger.ms`` passed since
  its first record (and, while its broker is busy with an earlier request, that answer came or
  5 ms more passed), or a flush or close is under way. It writes one Produce request per leader
  carrying one batch of every partition that is ready (up to ``max.request.size``), keeps up to
  ``max.in.flight.requests.per.connection`` requests in flight per broker, and handles each
  answer in a callback, which sends what became ready meanwhile.
- A batch is written (RecordBatch v2, the layout ``kcli.storage.records`` reads and writes) when
  it is first sent: records joined, compressed, header packed with the producer id, epoch and
  base sequence, CRC-32C. A retry resends the same bytes.
- Retriable errors are retried with exponential backoff from ``retry.backoff.ms`` to
  ``retry.backoff.max.ms`` while ``delivery.timeout.ms`` has not passed since the batch was
  created; errors that mean stale metadata (NOT_LEADER_OR_FOLLOWER, ...) refresh it first.
  MESSAGE_TOO_LARGE for a batch of several records splits it in two and sends both halves.
- Idempotence (``enable.idempotence``, on by default as in Java 3.x when ``acks=all``): a
  producer id from InitProducerId, and per partition a sequence number given to each batch when
  it is first sent. A partition whose batch came back for a retry sends nothing new until that
  batch went again, so records keep their order; after a failure that leaves a gap in the
  sequence, the producer takes a new producer id and numbers the partitions afresh.

``flush()`` sends everything buffered and waits for it; ``close()`` flushes and stops.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import datetime
import itertools
import logging
import math
import random
import struct
import time
import weakref
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from crc32c import crc32c

from kcli.client.connection import BrokerConnection, error_code
from kcli.client.metadata import STALE_METADATA
from kcli.client.network_client import NetworkClient
from kcli.client.partitioner import StickyPartitioner, partition_for_key
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol import messages
from kcli.storage.compression import CompressionType, compress
from kcli.storage.records import ATTRIBUTES_OFFSET, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, decode_record_fields
from kcli.storage.varint import encode_unsigned_varint, encode_varint

__all__ = ["Producer", "ProducerConfig", "RecordMetadata", "RecordFuture", "BufferFull", "PRODUCER_PROPERTIES"]

log = logging.getLogger(__name__)

PRODUCE = 0
INIT_PRODUCER_ID = 22
INT32_MAX = 2**31 - 1
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5

# How long a batch whose linger passed may wait for its broker's earlier request to be answered
# before it is sent anyway. In one thread, sending each record as soon as a request slot frees
# would make a request per record or two under load; waiting for the answer (about a network
# round trip) lets batches fill, as the Java client's separate sender thread lets them.
_HOLD = 0.005

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC = struct.Struct(">I")
_time_ns = time.time_ns
_monotonic = time.monotonic
_new_tuple = tuple.__new__

# Zig-zag varints of the small non-negative numbers a record is mostly made of (lengths, deltas).
_VARINT = [encode_varint(i) for i in range(1 << 14)]
_VARINT_LIMIT = len(_VARINT)
_NULL = encode_varint(-1)


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int


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


class BufferFull(KcliError):
    """``send_nowait`` found ``buffer.memory`` bytes waiting to be sent."""


# -- configuration ---------------------------------------------------------------------------------


PARTITIONER_CLASSES = {
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": "default",
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": "sticky",
    "org.apache.kafka.clients.producer.RoundRobinPartitioner": "round_robin",
}


@dataclasses.dataclass
class ProducerConfig:
    """The producer's settings, named after the Java properties they come from."""

    bootstrap_servers: str | None = None
    client_id: str = ""
    acks: int = -1
    batch_size: int = 16384
    linger_ms: int = 0
    compression_type: CompressionType = CompressionType.NONE
    max_request_size: int = 1048576
    buffer_memory: int = 33554432
    max_block_ms: int = 60000
    retries: int = INT32_MAX
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    request_timeout_ms: int = 30000
    delivery_timeout_ms: int = 120000
    enable_idempotence: bool = True
    max_in_flight: int = 5
    metadata_max_age_ms: int = 300000
    partitioner: str = "default"  # default, sticky (keys ignored), round_robin
    partitioner_ignore_keys: bool = False
    transactional_id: str | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, warn: Callable[[str], None] | None = None) -> ProducerConfig:
        """The settings of Java producer ``props``; unknown names are warned about as Kafka does.

        Raises ``KcliError`` with Kafka's ConfigException wording for a bad value.
        """
        say = warn or _warn
        config = cls()
        given: set[str] = set()
        for name, raw in props.items():
            spec = PRODUCER_PROPERTIES.get(name)
            if spec is not None:
                attribute, convert = spec
                setattr(config, attribute, convert(name, str(raw)))
                given.add(name)
            elif name == "security.protocol":
                if str(raw).strip().upper() != "PLAINTEXT":
                    raise KcliError(f"security.protocol {raw} is not supported: kcli speaks PLAINTEXT only")
            elif name not in ACCEPTED_PROPERTIES:
                say(f"The configuration '{name}' was supplied but isn't a known config.")
        config._check(given)
        return config

    def _check(self, given: set[str]) -> None:
        explicit = "enable.idempotence" in given
        if self.enable_idempotence:
            reason = None
            if self.retries == 0:
                reason = "Must set retries to non-zero when using the idempotent producer."
            elif self.acks != -1:
                reason = "Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence."
            elif self.max_in_flight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
                reason = "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer."
            if reason is not None:
                if explicit:
                    raise KcliError(reason)
                self.enable_idempotence = False
        if self.transactional_id is not None:
            raise KcliError("transactional.id is not supported: kcli's producer has no transactions")
        minimum = self.linger_ms + self.request_timeout_ms
        if self.delivery_timeout_ms < minimum:
            if "delivery.timeout.ms" in given:
                raise KcliError("delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms")
            self.delivery_timeout_ms = minimum


def _int(minimum: int | None = 0, maximum: int = INT32_MAX, kind: str = "INT") -> Callable[[str, str], int]:
    def convert(name: str, value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise KcliError(f"Invalid value {value} for configuration {name}: Not a number of type {kind}") from None
        if minimum is not None and number < minimum:
            raise KcliError(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")
        if number > maximum:
            raise KcliError(f"Invalid value {value} for configuration {name}: Value must be no more than {maximum}")
        return number

    return convert


def _long(minimum: int | None = 0) -> Callable[[str, str], int]:
    return _int(minimum, 2**63 - 1, "LONG")


def _bool(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise KcliError(f"Invalid value {value} for configuration {name}: Expected value to be either true or false")
    return text == "true"


def _acks(name: str, value: str) -> int:
    text = value.strip()
    if text not in ("all", "-1", "0", "1"):
        raise KcliError(f"Invalid value {value} for configuration {name}: String must be one of: all, -1, 0, 1")
    return -1 if text == "all" else int(text)


def _compression(name: str, value: str) -> CompressionType:
    text = value.strip()
    names = [c.label for c in CompressionType]
    if text not in names:
        raise KcliError(f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(names)}")
    return CompressionType.from_name(text)


def _partitioner(name: str, value: str) -> str:
    text = value.strip()
    if not text:
        return "default"
    if text not in PARTITIONER_CLASSES:
        raise KcliError(f"Invalid value {value} for configuration {name}: Class {text} could not be found.")
    return PARTITIONER_CLASSES[text]


def _string(_name: str, value: str) -> str:
    return value.strip()


def _optional_string(_name: str, value: str) -> str | None:
    return value.strip() or None


# Java producer property -> (ProducerConfig attribute, converter).
PRODUCER_PROPERTIES: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "bootstrap.servers": ("bootstrap_servers", _string),
    "client.id": ("client_id", _string),
    "acks": ("acks", _acks),
    "batch.size": ("batch_size", _int()),
    "linger.ms": ("linger_ms", _long()),
    "compression.type": ("compression_type", _compression),
    "max.request.size": ("max_request_size", _int()),
    "buffer.memory": ("buffer_memory", _long()),
    "max.block.ms": ("max_block_ms", _long()),
    "retries": ("retries", _int()),
    "retry.backoff.ms": ("retry_backoff_ms", _long()),
    "retry.backoff.max.ms": ("retry_backoff_max_ms", _long()),
    "request.timeout.ms": ("request_timeout_ms", _int()),
    "delivery.timeout.ms": ("delivery_timeout_ms", _int()),
    "enable.idempotence": ("enable_idempotence", _bool),
    "max.in.flight.requests.per.connection": ("max_in_flight", _int(1)),
    "metadata.max.age.ms": ("metadata_max_age_ms", _long()),
    "partitioner.class": ("partitioner", _partitioner),
    "partitioner.ignore.keys": ("partitioner_ignore_keys", _bool),
    "transactional.id": ("transactional_id", _optional_string),
}

# Known Java producer settings taken without effect: connection-level ones, the serializers
# (records are bytes), metrics, and tuning kcli does not have.
ACCEPTED_PROPERTIES = frozenset(
    {
        "key.serializer", "value.serializer", "send.buffer.bytes", "receive.buffer.bytes", "reconnect.backoff.ms",
        "reconnect.backoff.max.ms", "connections.max.idle.ms", "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms", "client.dns.lookup", "metadata.max.idle.ms", "metric.reporters",
        "metrics.num.samples", "metrics.sample.window.ms", "metrics.recording.level", "auto.include.jmx.reporter",
        "enable.metrics.push", "interceptor.classes", "partitioner.adaptive.partitioning.enable",
        "partitioner.availability.timeout.ms", "compression.gzip.level", "compression.lz4.level",
        "compression.zstd.level", "transaction.timeout.ms", "security.providers", "metadata.recovery.strategy",
    }
)


def _warn(message: str) -> None:
    # A library logs; the tool that gave no ``warn`` decides where its logs go.
    log.warning(message)


# -- records and batches ---------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    return _VARINT[n] if 0 <= n < _VARINT_LIMIT else encode_varint(n)


def encode_record(
    timestamp_delta: int, offset_delta: int, key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]] = ()
) -> bytes:
    """One v2 record with its length prefix (the layout in ``kcli.storage.records``)."""
    key_part = _NULL if key is None else _varint(len(key)) + key
    value_part = _NULL if value is None else _varint(len(value)) + value
    if headers:
        pieces = [_varint(len(headers))]
        for header_key, header_value in headers:
            name = header_key.encode("utf-8")
            pieces.append(_varint(len(name)))
            pieces.append(name)
            pieces.append(_NULL if header_value is None else _varint(len(header_value)) + header_value)
        header_part = b"".join(pieces)
    else:
        header_part = b"\x00"
    td = _varint(timestamp_delta)
    od = _varint(offset_delta)
    size = 1 + len(td) + len(od) + len(key_part) + len(value_part) + len(header_part)
    return b"".join((_varint(size), b"\x00", td, od, key_part, value_part, header_part))


class _Topic:
    __slots__ = ("name", "count", "queues", "leaders", "available", "sticky", "round_robin", "ratio")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.queues: list[_Queue] = []
        self.leaders: list[int] = []
        self.available: list[int] = []
        self.sticky = StickyPartitioner()
        self.round_robin = itertools.count()
        self.ratio = 1.0  # estimated compressed / uncompressed size of this topic's batches


class _Queue:
    """One partition's batches: the open one, closed ones waiting, and ones back for a retry."""

    __slots__ = ("topic", "partition", "open", "closed", "retries", "in_flight", "unacked", "next_sequence")

    def __init__(self, topic: _Topic, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.open: _Batch | None = None
        self.closed: list[_Batch] = []
        self.retries: list[_Batch] = []  # kept in batch id order
        self.in_flight = 0
        self.unacked: list[_Batch] = []  # sent with a sequence number, not yet answered
        self.next_sequence = 0

    def label(self) -> str:
        return f"{self.topic.name}-{self.partition}"


_batch_ids = itertools.count()


class _Batch:
    __slots__ = (
        "queue", "id", "parts", "count", "size", "limit", "base_timestamp", "max_timestamp", "created", "future",
        "callbacks", "payload", "producer_id", "producer_epoch", "base_sequence", "attempts", "retry_at", "done",
        "base_offset", "log_append_time", "error", "children", "pending",
    )

    def __init__(self, queue: _Queue, timestamp: int, limit: int, future: asyncio.Future[None], now: float) -> None:
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
        self.payload: bytes | None = None
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.attempts = 0
        self.retry_at = 0.0
        self.done = False
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self.children: list[tuple[int, _Batch]] | None = None  # (first index, batch) after a split
        self.pending = 0

    def leaf(self, index: int) -> tuple[_Batch, int]:
        """The batch that carried record ``index`` (itself, or a part it was split into)."""
        batch = self
        while batch.children is not None:
            for start, child in reversed(batch.children):
                if index >= start:
                    index -= start
                    batch = child
                    break
        return batch, index


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


# -- the producer ----------------------------------------------------------------------------------


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
            )
            self._owns_cluster = True
        self._acks = config.acks
        self._codec = config.compression_type
        self._linger = config.linger_ms / 1000
        self._batch_size = max(config.batch_size, 1)
        self._max_record = config.max_request_size - RECORD_BATCH_OVERHEAD
        self._buffer_memory = config.buffer_memory
        self._max_block = config.max_block_ms / 1000
        self._request_timeout = config.request_timeout_ms / 1000
        self._delivery_timeout = config.delivery_timeout_ms / 1000
        self._max_in_flight = config.max_in_flight
        self._idempotent = config.enable_idempotence and config.acks == -1
        self._ignore_keys = config.partitioner_ignore_keys or config.partitioner != "default"
        self._round_robin = config.partitioner == "round_robin"
        self._topics: dict[str, _Topic] = {}
        self._active: dict[_Queue, None] = {}  # queues holding batches, in insertion order
        self._incomplete: set[_Batch] = set()
        self._in_flight: dict[int, int] = {}
        self._buffered = 0
        self._memory_waiters: list[asyncio.Future[None]] = []
        self._sends = 0
        self._flushes = 0
        self._closing = False
        self._closed = False
        self._started = False
        self._accepting = False  # started and not closing
        self._woken = False
        self._waiter: asyncio.Future[None] | None = None
        self._sleep_until = 0.0  # when the sleeping sender wakes by itself; 0 while it runs
        self._sender: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._producer_id = -1
        self._producer_epoch = -1
        self._reset_producer_id = False
        self._need_metadata = False
        self._metadata_task: asyncio.Task[None] | None = None
        self._metadata_at = 0.0
        self._metadata_retry_at = 0.0
        self._pid_task: asyncio.Task[None] | None = None
        self._connections: dict[int, BrokerConnection] = {}
        self._connecting: dict[int, asyncio.Task[None]] = {}
        self._produce_versions: dict[BrokerConnection, int] = {}
        self.metrics = ProducerMetrics()

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
        return self._idempotent

    @property
    def producer_id(self) -> int:
        return self._producer_id

    # -- life cycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect, and take a producer id when idempotent. Fails when no broker answers."""
        if self._started:
            return
        self._loop = asyncio.get_running_loop()
        await self.cluster.any_connection()
        if self._idempotent:
            await self._init_producer_id()
        self._started = True
        self._accepting = True
        self._sender = self._loop.create_task(self._run_sender())

    async def flush(self) -> None:
        """Send every buffered record now and wait until each one is answered."""
        if not self._incomplete:
            return
        self._flushes += 1
        try:
            self._wake()
            waiting = [b.future for b in self._incomplete]
            await asyncio.wait(waiting)
        finally:
            self._flushes -= 1

    async def close(self) -> None:
        """Flush, stop the sender and close the connections this producer opened."""
        if self._closed:
            return
        try:
            if self._started:
                await self.flush()
        finally:
            self._closing = True
            self._accepting = False
            self._closed = True
            if self._sender is not None:
                self._wake()
                try:
                    await self._sender
                except Exception:  # the sender failed its batches already
                    pass
            for task in list(self._connecting.values()):
                task.cancel()
            if self._metadata_task is not None:
                self._metadata_task.cancel()
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
        if state is None or not self._accepting or self._buffered >= self._buffer_memory or (partition is not None and partition >= state.count):
            await self._ready_for(topic, partition)
            state = self._topics[topic]
        future = self._append(state, value, key, headers, partition, timestamp)
        self._sends += 1
        if self._woken or not self._sends & 255:
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
            if self._closing:
                raise KcliError("Cannot perform operation after producer has been closed")
            if not self._started:
                raise KcliError("the producer has not been started")
            raise KcliError(f"topic '{topic}' has no metadata yet: use send() or wait_for_topic() first")
        if self._buffered >= self._buffer_memory:
            raise BufferFull(f"the producer's buffer.memory ({self._buffer_memory} bytes) is full")
        return self._append(state, value, key, headers, partition, timestamp)

    @property
    def needs_yield(self) -> bool:
        """Whether the sender has work waiting for the event loop (a caller of ``send_nowait``
        should ``await asyncio.sleep(0)`` now and then, and at least when this is true)."""
        return self._woken

    def _append(
        self,
        state: _Topic,
        value: bytes | None,
        key: bytes | None,
        headers: Sequence[tuple[str, bytes | None]],
        partition: int | None,
        timestamp: int | None,
    ) -> RecordFuture:
        # The hot path: a few dozen operations per record, the record encoded once, here.
        if partition is None:
            if key is None or self._ignore_keys:
                partition = state.sticky.partition
                if partition < 0:
                    partition = self._choose(state)
            else:
                partition = partition_for_key(key, state.count)
        elif not 0 <= partition < state.count:
            return self._failed(state, partition, timestamp, KafkaError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Invalid partition given with record: {partition} is not in the range [0...{state.count})."))
        queue = state.queues[partition]
        if timestamp is None:
            timestamp = _time_ns() // 1_000_000
        batch = queue.open
        if batch is None:
            batch = self._open_batch(queue, timestamp)
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
                record = encode_record(delta, index, key, value, headers)
        else:
            record = encode_record(delta, index, key, value, headers)
        size = len(record)
        if batch.size + size > batch.limit:
            if index:
                self._close_batch(queue, batch)
                batch = self._open_batch(queue, timestamp)
                index = 0
                record = encode_record(0, 0, key, value, headers)
                size = len(record)
            if size > self._max_record or size + RECORD_BATCH_OVERHEAD > self._buffer_memory:
                self._drop_if_empty(queue, batch)
                return self._failed(state, partition, timestamp, self._too_large(size + RECORD_BATCH_OVERHEAD))
        batch.parts.append(record)
        batch.count = index + 1
        batch.size += size
        if timestamp > batch.max_timestamp:
            batch.max_timestamp = timestamp
        self._buffered += size
        if batch.size >= batch.limit:
            self._close_batch(queue, batch)
        return _new_tuple(RecordFuture, (batch, index, timestamp))

    def _too_large(self, size: int) -> KafkaError:
        if size > self.config.max_request_size:
            return KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"The message is {size} bytes when serialized which is larger than "
                              f"{self.config.max_request_size}, which is the value of the max.request.size configuration.")
        return KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"The message is {size} bytes when serialized which is larger than the total "
                          "memory buffer you have configured with the buffer.memory configuration.")

    def _choose(self, state: _Topic) -> int:
        """The partition for a record whose key does not choose one."""
        if self._round_robin:
            available = state.available or range(state.count)
            return available[next(state.round_robin) % len(available)]
        return state.sticky.current(state.available, state.count)

    def _open_batch(self, queue: _Queue, timestamp: int) -> _Batch:
        topic = queue.topic
        limit = self._batch_size
        if self._codec and topic.ratio < 1.0:
            limit = RECORD_BATCH_OVERHEAD + int((limit - RECORD_BATCH_OVERHEAD) / max(topic.ratio, 0.05))
        # Never past max.request.size: a record too large for it then always takes the branch of
        # _append that checks records against it.
        limit = min(limit, self.config.max_request_size)
        now = _monotonic()
        batch = _Batch(queue, timestamp, limit, self._loop.create_future(), now)
        queue.open = batch
        self._buffered += RECORD_BATCH_OVERHEAD
        self._incomplete.add(batch)
        if queue not in self._active:
            self._active[queue] = None
        if not self._woken and now + self._linger < self._sleep_until:
            self._wake()  # the sender sleeps past this batch's linger
        return batch

    def _close_batch(self, queue: _Queue, batch: _Batch) -> None:
        queue.open = None
        queue.closed.append(batch)
        sticky = queue.topic.sticky
        if sticky.partition == queue.partition:
            sticky.batch_full()
        self._wake()

    def _drop_if_empty(self, queue: _Queue, batch: _Batch) -> None:
        if batch.count == 0 and queue.open is batch:
            queue.open = None
            self._buffered -= batch.size
            self._incomplete.discard(batch)
            batch.future.cancel()

    def _failed(self, state: _Topic, partition: int, timestamp: int | None, error: KafkaError) -> RecordFuture:
        queue = state.queues[partition] if 0 <= partition < state.count else _Queue(state, partition)
        batch = _Batch(queue, timestamp or 0, 0, self._loop.create_future(), _monotonic())
        batch.count = 1
        batch.error = error
        batch.done = True
        batch.future.set_result(None)
        return _new_tuple(RecordFuture, (batch, 0, timestamp if timestamp is not None else -1))

    async def wait_for_topic(self, topic: str) -> int:
        """Wait (up to ``max.block.ms``) until the topic's partitions are known; their count."""
        await self._ready_for(topic, None)
        return self._topics[topic].count

    async def _ready_for(self, topic: str, partition: int | None) -> None:
        if not self._started:
            await self.start()
        if self._closing:
            raise KcliError("Cannot perform operation after producer has been closed")
        deadline = _monotonic() + self._max_block
        state = self._topics.get(topic)
        if state is None or (partition is not None and partition >= state.count):
            await self._wait_metadata(topic, partition, deadline)
        while self._buffered >= self._buffer_memory:
            waiter = self._loop.create_future()
            self._memory_waiters.append(waiter)
            self._wake()
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
                self._apply_metadata(info)
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

    def _apply_metadata(self, info: Any) -> None:
        state = self._topics.get(info.name)
        if state is None:
            state = self._topics[info.name] = _Topic(info.name)
        if info.error or not info.partitions:
            return
        count = max(max(info.partitions) + 1, state.count)
        while len(state.queues) < count:
            state.queues.append(_Queue(state, len(state.queues)))
        leaders = [-1] * count
        for number, part in info.partitions.items():
            leaders[number] = part.leader
        state.leaders = leaders
        state.available = [p for p in range(count) if leaders[p] >= 0]
        state.count = count
        self._metadata_at = _monotonic()

    async def _init_producer_id(self) -> None:
        async def attempt() -> Any:
            answer = await self.cluster.call(None, INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1})
            code = error_code(answer.error_code)
            if code:
                error = ErrorCode.for_code(code)
                raise KafkaError(error, f"InitProducerId failed: {error.message}")
            return answer

        answer = await self.cluster.retrying(attempt)
        self._producer_id = int(answer.producer_id)
        self._producer_epoch = int(answer.producer_epoch)
        self._reset_producer_id = False

    # -- the sender ----------------------------------------------------------------------------------

    def _wake(self) -> None:
        self._woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _run_sender(self) -> None:
        loop = self._loop
        try:
            while True:
                self._woken = False
                timeout = self._run_once()
                if self._closing and not self._active and not any(self._in_flight.values()) and not self._incomplete:
                    return
                if self._woken:
                    await asyncio.sleep(0)
                    continue
                self._waiter = waiter = loop.create_future()
                timer = None
                self._sleep_until = math.inf
                if timeout is not None:
                    timer = loop.call_later(timeout, _resolve, waiter)
                    self._sleep_until = _monotonic() + timeout
                try:
                    await waiter
                finally:
                    self._waiter = None
                    self._sleep_until = 0.0
                    if timer is not None:
                        timer.cancel()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            log.exception("the producer's sender failed")
            error = exc if isinstance(exc, KcliError) else KcliError(f"the producer's sender failed: {exc!r}")
            for batch in list(self._incomplete):
                self._complete(batch, -1, -1, error)
            raise

    def _run_once(self) -> float | None:
        """Send what is ready; return the seconds until something else will be (None: nothing)."""
        now = _monotonic()
        if self._reset_producer_id:
            self._start_producer_id_reset()
        if self._need_metadata or (self._metadata_at and now - self._metadata_at > self.config.metadata_max_age_ms / 1000):
            self._start_metadata_refresh(now)
        wake_at: float | None = None
        while True:
            by_node, wake_at = self._collect(now)
            if not by_node:
                break
            for node, queues in by_node.items():
                self._send_to(node, queues, now)
        if self._memory_waiters and self._buffered < self._buffer_memory:
            self._release_memory_waiters()
        if self._need_metadata:
            retry = self._metadata_retry_at
            if retry > now and (wake_at is None or retry < wake_at):
                wake_at = retry
        return None if wake_at is None else max(0.0, wake_at - now)

    def _collect(self, now: float) -> tuple[dict[int, list[_Queue]], float | None]:
        force = self._flushes > 0 or self._closing or bool(self._memory_waiters)
        linger = self._linger
        delivery = self._delivery_timeout
        max_in_flight = self._max_in_flight
        in_flight = self._in_flight
        connections = self._connections
        in_flight_nodes = {node for node, count in in_flight.items() if count}
        by_node: dict[int, list[_Queue]] = {}
        wake_at: float | None = None
        idle = []
        for queue in self._active:
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
                self._active.pop(queue, None)
        return by_node, wake_at

    def _expire(self, queue: _Queue, batch: _Batch, now: float) -> None:
        self._take(queue, batch)
        if self._idempotent and batch.base_sequence >= 0 and batch.producer_id == self._producer_id:
            self._reset_producer_id = True  # the batches after it would wait for its sequence forever
        error = KafkaError(
            ErrorCode.REQUEST_TIMED_OUT,
            f"Expiring {batch.count} record(s) for {queue.label()}:{int((now - batch.created) * 1000)} ms has passed since batch creation",
        )
        self._complete(batch, -1, -1, error)

    def _take(self, queue: _Queue, batch: _Batch) -> None:
        if queue.retries and queue.retries[0] is batch:
            queue.retries.pop(0)
        elif queue.closed and queue.closed[0] is batch:
            queue.closed.pop(0)
        elif queue.open is batch:
            queue.open = None

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
                self._wake()

        self._connecting[node] = self._loop.create_task(connect())

    def _send_to(self, node: int, queues: list[_Queue], now: float) -> None:
        connection = self._connections[node]
        batches: list[_Batch] = []
        total = 0
        limit = self.config.max_request_size
        for queue in queues:
            batch = queue.retries[0] if queue.retries else queue.closed[0] if queue.closed else queue.open
            if batch is None:
                continue
            rewrite = batch.payload is None or (self._idempotent and batch.producer_id != self._producer_id)
            # A batch is built only once taken: one left open here still takes records.
            if batches and total + (self._estimated_size(batch) if rewrite else len(batch.payload)) > limit:
                break
            self._take(queue, batch)
            total += self._write(batch) if rewrite else len(batch.payload)
            batches.append(batch)
            queue.in_flight += 1
            batch.attempts += 1
            if self._idempotent and batch.base_sequence >= 0 and batch not in queue.unacked:
                bisect.insort(queue.unacked, batch, key=_batch_order)
        if batches:
            self._produce(node, connection, batches)

    def _estimated_size(self, batch: _Batch) -> int:
        """The batch's size on the wire before it is built: compressed by its topic's observed ratio."""
        if not self._codec:
            return batch.size
        return RECORD_BATCH_OVERHEAD + int((batch.size - RECORD_BATCH_OVERHEAD) * batch.queue.topic.ratio)

    def _write(self, batch: _Batch) -> int:
        """Build the batch's bytes (again, after a producer id change) and return their size."""
        queue = batch.queue
        if self._idempotent:
            if batch.producer_id != self._producer_id or batch.base_sequence < 0:
                batch.producer_id = self._producer_id
                batch.producer_epoch = self._producer_epoch
                batch.base_sequence = queue.next_sequence
                queue.next_sequence = (queue.next_sequence + batch.count) & INT32_MAX
        body = b"".join(batch.parts)
        metrics = self.metrics
        metrics.batch_total += 1
        metrics.uncompressed_bytes_total += len(body)
        codec = self._codec
        if codec:
            raw_size = len(body)
            body = compress(codec, body)
            if raw_size:
                observed = len(body) / raw_size
                topic = queue.topic
                # Kafka's estimator: slow to trust a better ratio, quick to take a worse one.
                if observed > topic.ratio:
                    topic.ratio = max(topic.ratio + 0.05, observed)
                elif observed < topic.ratio:
                    topic.ratio = max(topic.ratio - 0.005, observed)
        header = _HEADER.pack(
            0, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(body), -1, 2, 0, int(codec), batch.count - 1,
            batch.base_timestamp, batch.max_timestamp, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.count,
        )
        metrics.batch_bytes_total += len(body)
        crc = crc32c(body, crc32c(memoryview(header)[ATTRIBUTES_OFFSET:]))
        batch.payload = b"".join((header[:17], _CRC.pack(crc), header[ATTRIBUTES_OFFSET:], body))
        return len(batch.payload)

    def _produce(self, node: int, connection: BrokerConnection, batches: list[_Batch]) -> None:
        """Write one Produce request for ``batches``; its answer comes to ``_on_answer``."""
        acks = self._acks
        self._in_flight[node] = self._in_flight.get(node, 0) + 1
        try:
            version = self._produce_versions.get(connection)
            if version is None:
                version = self._produce_versions[connection] = connection.version_for(PRODUCE, at_least=3)
            body = encode_produce_request(version, acks, self.config.request_timeout_ms, batches)
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
        timer = self._loop.call_later(self._request_timeout, _time_out, answer, connection.address, self.config.request_timeout_ms)
        answer.add_done_callback(lambda future: self._on_answer(node, batches, future, timer))

    def _request_failed(self, node: int, batches: list[_Batch], exc: KafkaError) -> None:
        self._in_flight[node] -= 1
        now = _monotonic()
        for batch in batches:
            self._answered(batch)
            self._failed_batch(batch, exc.error_code, str(exc), now)
        self._wake()

    def _on_answer(self, node: int, batches: list[_Batch], future: asyncio.Future[Any], timer: asyncio.TimerHandle) -> None:
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
        if self._waiter is None or self._closing:
            self._wake()
            return
        timeout = self._run_once()
        if timeout is not None and _monotonic() + timeout < self._sleep_until:
            self._wake()

    def _answered(self, batch: _Batch) -> None:
        batch.queue.in_flight -= 1

    def _failed_batch(self, batch: _Batch, code: ErrorCode, message: str | None, now: float) -> None:
        queue = batch.queue
        if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE) and batch.count > 1:
            self._split(batch)
            return
        retriable = code.retriable
        if self._idempotent and batch.base_sequence >= 0:
            if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
                # Out of order behind an earlier batch that is being retried, or sent under an
                # older producer id: it goes again in its turn. Otherwise the sequence has a gap.
                earlier = queue.unacked and queue.unacked[0] is not batch
                if earlier or batch.producer_id != self._producer_id:
                    retriable = True
                else:
                    self._reset_producer_id = True
            elif code in (ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.INVALID_PRODUCER_EPOCH):
                self._reset_producer_id = True
                retriable = code == ErrorCode.UNKNOWN_PRODUCER_ID
        if retriable and self._acks != 0 and batch.attempts <= self.config.retries and now - batch.created < self._delivery_timeout:
            if code in STALE_METADATA:
                self._need_metadata = True
            backoff = self.config.retry_backoff_ms * 2 ** min(batch.attempts - 1, 30)
            backoff = min(backoff, max(self.config.retry_backoff_ms, self.config.retry_backoff_max_ms)) / 1000
            batch.retry_at = now + backoff * (0.8 + 0.4 * random.random())
            bisect.insort(queue.retries, batch, key=_batch_order)
            self._active[queue] = None
            self.metrics.record_retry_total += batch.count
            return
        if batch.base_sequence >= 0 and batch.producer_id == self._producer_id and self._idempotent:
            self._reset_producer_id = True  # the batches after it would wait for its sequence forever
        self._complete(batch, -1, -1, KafkaError(code, message or code.message))

    def _split(self, batch: _Batch) -> None:
        """Send the records of a batch the broker found too large as two batches."""
        queue = batch.queue
        records = decode_record_fields(b"".join(batch.parts), batch.count)
        half = len(records) // 2
        batch.children = []
        batch.pending = 2
        self._buffered -= batch.size
        if batch in queue.unacked:
            queue.unacked.remove(batch)
        halves = []
        for start, part in ((0, records[:half]), (half, records[half:])):
            first_ts = batch.base_timestamp + part[0][1]
            child = _Batch(queue, first_ts, 0, self._loop.create_future(), batch.created)
            child.id = batch.id  # keeps the place of the batch it replaces
            for i, (_od, ts_delta, key, value, headers) in enumerate(part):
                timestamp = batch.base_timestamp + ts_delta
                child.parts.append(encode_record(timestamp - first_ts, i, key, value, headers))
                child.max_timestamp = max(child.max_timestamp, timestamp)
            child.count = len(part)
            child.size = RECORD_BATCH_OVERHEAD + sum(map(len, child.parts))
            child.attempts = batch.attempts
            if batch.base_sequence >= 0:
                child.producer_id, child.producer_epoch = batch.producer_id, batch.producer_epoch
                child.base_sequence = (batch.base_sequence + start) & INT32_MAX
            child.future.add_done_callback(lambda _f, parent=batch: self._child_done(parent))
            batch.children.append((start, child))
            halves.append(child)
        for child in halves:
            if child.base_sequence >= 0:
                self._write(child)
            self._incomplete.add(child)
            self._buffered += child.size
        queue.retries[:0] = halves
        queue.retries.sort(key=_batch_order)
        self._active[queue] = None

    def _child_done(self, parent: _Batch) -> None:
        parent.pending -= 1
        if parent.pending == 0:
            self._complete(parent, -1, -1, None, release=False)

    def _complete(self, batch: _Batch, base_offset: int, log_append_time: int, error: BaseException | None, *, release: bool = True) -> None:
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
        queue = batch.queue
        if batch in queue.unacked:
            queue.unacked.remove(batch)
        self._incomplete.discard(batch)
        if release and batch.children is None:
            self._buffered -= batch.size
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
        if self._memory_waiters and self._buffered < self._buffer_memory:
            self._release_memory_waiters()

    def _release_memory_waiters(self) -> None:
        waiters, self._memory_waiters = self._memory_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- metadata and producer id ----------------------------------------------------------------------

    def _start_metadata_refresh(self, now: float) -> None:
        if self._metadata_task is not None or now < self._metadata_retry_at or not self._topics:
            return
        self._metadata_task = self._loop.create_task(self._refresh_metadata())

    async def _refresh_metadata(self) -> None:
        try:
            await self.cluster.refresh(list(self._topics), allow_auto_create=True)
            for name in self._topics:
                info = self.cluster.metadata.topics.get(name)
                if info is not None:
                    self._apply_metadata(info)
            self._need_metadata = any(
                state.leaders[q.partition] < 0 for state in self._topics.values() for q in state.queues if q in self._active
            )
            self._metadata_at = _monotonic()
        except KafkaError as exc:
            log.debug("metadata refresh failed: %s", exc)
        finally:
            self._metadata_retry_at = _monotonic() + self.config.retry_backoff_ms / 1000
            self._metadata_task = None
            self._wake()

    def _start_producer_id_reset(self) -> None:
        if self._pid_task is not None:
            return
        self._reset_producer_id = False

        async def reset() -> None:
            try:
                await self._init_producer_id()
                for state in self._topics.values():
                    for queue in state.queues:
                        queue.next_sequence = 0
                        queue.unacked.clear()
            except KafkaError as exc:
                log.warning("could not take a new producer id: %s", exc)
                self._reset_producer_id = True
            finally:
                self._pid_task = None
                self._wake()

        self._pid_task = self._loop.create_task(reset())


# -- the wire --------------------------------------------------------------------------------------

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PRODUCE_HEAD = struct.Struct(">hhi")  # null transactional id, acks, timeout (v3-8)
_FLEXIBLE_PRODUCE_HEAD = struct.Struct(">Bhi")  # v9+: compact null transactional id


def encode_produce_request(version: int, acks: int, timeout_ms: int, batches: Sequence[_Batch]) -> list[bytes]:
    """The body of a Produce request (v3+) carrying one batch per partition, as byte pieces.

    Written directly rather than through kio's entities: the records are most of the request,
    and this keeps them out of the per-field writer. A test decodes it with kio's reader.
    """
    topics: dict[str, list[_Batch]] = {}
    for batch in batches:
        name = batch.queue.topic.name
        group = topics.get(name)
        if group is None:
            topics[name] = [batch]
        else:
            group.append(batch)
    flexible = messages.is_flexible(PRODUCE, version)
    if flexible:
        parts = [_FLEXIBLE_PRODUCE_HEAD.pack(0, acks, timeout_ms), encode_unsigned_varint(len(topics) + 1)]
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
        parts = [_PRODUCE_HEAD.pack(-1, acks, timeout_ms), _INT32.pack(len(topics))]
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


def _batch_order(batch: _Batch) -> int:
    return batch.id


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _millis(value: Any) -> int:
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(value)


_client_ids = itertools.count(1)


def _next_client_id() -> str:
    return f"producer-{next(_client_ids)}"


def parse_properties(items: Iterable[str]) -> dict[str, str]:
    """``key=value`` strings as Kafka's tools read them: split at the first ``=``."""
    props = {}
    for item in items:
        key, _sep, value = item.partition("=")
        props[key] = value
    return props
