"""Fetching for the consumer: Fetch requests per leader, record batches decoded into records.

One ``Fetcher`` keeps the state of every assigned partition (the position handed to the user,
the offset the next fetch asks for, pauses, pending offset resets) and a background task that
keeps one Fetch request in flight to each leader with fetchable partitions. When an answer
arrives its batch headers are scanned for the next fetch offsets and the next request goes on
the wire at once; the records are decoded later, a batch at a time, when ``poll`` asks for them,
so the broker prepares the next answer while Python decodes the previous one. At most
``MAX_BUFFERED`` undecoded answers wait per leader.

Decoding handles RecordBatch v2 and legacy magic 0/1 message sets (through
``kcli.storage.records``), checks CRCs when asked, drops control batches, and with
read_committed drops the batches of aborted transactions (the answer's aborted list, as Kafka's
consumer does). OFFSET_OUT_OF_RANGE resets the position by ``auto.offset.reset``; leadership
errors refresh metadata and the partition is fetched from its new leader.

A batch that fails its CRC or cannot be decoded raises ``CorruptConsumerRecordError`` from
``poll`` (after any records before it were returned), naming the partition and offset; it is
raised again on every poll until the caller seeks, or calls ``skip`` to resume after the batch.

Every Fetch is a full one (no KIP-227 session: session epoch -1), which every broker serves.
``TopicPartition`` and ``ConsumerRecord`` live here, where records are made; ``consumer.py``
exports them.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import deque
from collections.abc import Iterable
from itertools import repeat
from typing import Any, NamedTuple

from kcli.client.connection import error_code
from kcli.client.fetch_request import FetchPosition, fetch_request
from kcli.client.network_client import NetworkClient
from kcli.common import TopicPartition
from kcli.errors import CorruptRecordError, ErrorCode, KafkaError
from kcli.storage import records as rec

log = logging.getLogger(__name__)

FETCH = 1
LIST_OFFSETS = 2
EARLIEST = -2
LATEST = -1
MAX_BUFFERED = 2  # undecoded answers waiting per leader before the next fetch waits for poll
RETRY_BACKOFF = 0.1

_LAST_OFFSET_DELTA = 23
_INT32 = struct.Struct(">i")
_peek = rec.peek_batch_header
_new_tuple = tuple.__new__

_LEADERSHIP_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)


class ConsumerRecord(NamedTuple):
    """One record as the consumer returns it.

    ``timestamp_type`` is 0 (CreateTime), 1 (LogAppendTime), or -1 for magic-0 messages, which
    have no timestamp. ``leader_epoch`` is the batch's partition leader epoch (-1 when unknown).
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    leader_epoch: int


class CorruptConsumerRecordError(CorruptRecordError):
    """A fetched batch failed its CRC or could not be decoded.

    ``topic_partition`` and ``offset`` say where; ``Consumer.skip(topic_partition)`` moves the
    position past the bad batch (or record) so consumption can go on.
    """

    def __init__(self, topic_partition: TopicPartition, offset: int, cause: str) -> None:
        super().__init__(
            f"Received exception when fetching the next record from {topic_partition}. If needed, please seek past the record to "
            f"continue consumption. (Record batch for partition {topic_partition} at offset {offset} is invalid, cause: {cause})"
        )
        self.topic_partition = topic_partition
        self.offset = offset


class NoOffsetForPartitionError(KafkaError):
    """A partition has no committed offset and auto.offset.reset is none."""

    def __init__(self, tps: Iterable[TopicPartition]) -> None:
        names = ", ".join(sorted(str(tp) for tp in tps))
        super().__init__(ErrorCode.OFFSET_OUT_OF_RANGE, f"Undefined offset with no reset policy for partitions: [{names}]")


class PartitionState:
    """What the consumer knows of one assigned partition."""

    __slots__ = (
        "tp", "position", "fetch_offset", "version", "paused", "reset", "leader_epoch", "high_watermark",
        "last_stable_offset", "log_start_offset", "error", "skip_to",
    )

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.position: int | None = None  # the next offset poll hands out
        self.fetch_offset: int | None = None  # the next offset a fetch asks for (ahead of position)
        self.version = 0  # bumped by every seek: answers to older fetches are dropped
        self.paused = False
        self.reset: str | None = None  # a pending reset: "earliest", "latest" or "none"
        self.leader_epoch = -1
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.error: Exception | None = None  # raised from poll until the position moves
        self.skip_to: int | None = None  # where skip() resumes after a corrupt batch

    def seek(self, offset: int) -> None:
        self.position = offset
        self.fetch_offset = offset
        self.version += 1
        self.reset = None
        self.error = None
        self.skip_to = None

    @property
    def fetchable(self) -> bool:
        return self.position is not None and not self.paused and self.error is None


class _Response:
    """The partitions of one Fetch answer still waiting for poll; the answer counts against its
    leader's ``MAX_BUFFERED`` until every one is used up or dropped."""

    __slots__ = ("node", "remaining")

    def __init__(self, node: int) -> None:
        self.node = node
        self.remaining = 0


class _Answer:
    """One partition's records from one Fetch answer, decoded batch by batch as poll takes them."""

    __slots__ = ("state", "version", "response", "data", "pos", "pending", "index", "skip_to", "aborted", "aborted_pids", "read_committed", "check_crcs")

    def __init__(self, state: PartitionState, response: _Response, data: bytes, aborted: list[tuple[int, int]] | None, read_committed: bool, check_crcs: bool) -> None:
        self.state = state
        self.version = state.version
        self.response = response
        response.remaining += 1
        self.data = data
        self.pos = 0
        self.pending: list[ConsumerRecord] = []
        self.index = 0
        self.skip_to: int | None = None  # the next offset after the batch in ``pending``
        self.aborted = sorted(aborted or (), key=lambda a: a[1])  # (producer id, first offset)
        self.aborted_pids: set[int] = set()
        self.read_committed = read_committed
        self.check_crcs = check_crcs

    @property
    def stale(self) -> bool:
        return self.version != self.state.version

    def take(self, out: list[ConsumerRecord], limit: int) -> bool:
        """Move up to ``limit`` records into ``out``; True when this answer is used up."""
        state = self.state
        while limit > 0:
            pending = self.pending
            index = self.index
            if index < len(pending):
                end = min(len(pending), index + limit)
                if index == 0 and end == len(pending):
                    out += pending
                else:
                    out += pending[index:end]
                limit -= end - index
                self.index = end
                state.position = pending[end - 1].offset + 1
                if end == len(pending):
                    self.pending = []
                    self.index = 0
                    # Offsets a compaction removed at the end of the batch are passed too.
                    if self.skip_to is not None and self.skip_to > state.position:
                        state.position = self.skip_to
                continue
            if not self._next_batch():
                return True
        return self.index >= len(self.pending) and self.pos >= len(self.data)

    def _next_batch(self) -> bool:
        """Decode the next batch into ``pending``; False when no batch is left."""
        data = self.data
        state = self.state
        tp = state.tp
        while True:
            pos = self.pos
            if len(data) - pos < rec.HEADER_SIZE_UP_TO_MAGIC:
                return False
            offset, size, magic = _peek(data, pos)
            if pos + size > len(data):
                return False  # a partial batch ends the answer
            position = state.position if state.position is not None else 0
            next_offset: int | None = None
            try:
                if size - rec.LOG_OVERHEAD < rec.LEGACY_OVERHEAD_V0:
                    raise CorruptRecordError(f"batch size {size - rec.LOG_OVERHEAD} is below the minimum")
                batch = rec.read_batch(data, pos)
                next_offset = batch.last_offset + 1
                if self.check_crcs and not batch.is_valid():
                    raise CorruptRecordError(f"Record is corrupt (stored crc = {batch.crc}, computed crc = {batch.compute_checksum()})")
                records = self._decode(batch, tp, position) if next_offset > position else []
            except CorruptRecordError as exc:
                state.skip_to = next_offset if next_offset is not None and next_offset > position else position + 1
                error = CorruptConsumerRecordError(tp, max(position, offset), str(exc))
                state.error = error
                raise error from None
            self.pos = pos + size
            if records:
                self.pending = records
                self.index = 0
                self.skip_to = next_offset
                return True
            if next_offset > position:
                state.position = next_offset

    def _decode(self, batch: rec.Batch, tp: TopicPartition, position: int) -> list[ConsumerRecord]:
        if batch.magic < 2:
            return self._decode_legacy(batch, tp, position)  # type: ignore[arg-type]
        if self.read_committed:
            aborted = self.aborted
            while aborted and aborted[0][1] <= batch.last_offset:
                self.aborted_pids.add(aborted.pop(0)[0])
            if batch.is_control:
                if batch.producer_id in self.aborted_pids:
                    fields = batch.record_fields()
                    if fields:
                        control_type, _epoch = rec.parse_control_record(fields[0][2], fields[0][3], batch.base_offset)
                        if control_type == rec.ControlType.ABORT:
                            self.aborted_pids.discard(batch.producer_id)
                return []
            if batch.is_transactional and batch.producer_id in self.aborted_pids:
                return []
        elif batch.is_control:
            return []
        columns = batch.record_columns()
        base_offset = batch.base_offset
        offsets = [base_offset + od for od in columns.offset_deltas]
        if batch.timestamp_type == rec.TimestampType.LOG_APPEND_TIME:
            timestamps, timestamp_type = repeat(batch.max_timestamp), 1
        else:
            base_ts = batch.base_timestamp
            timestamps, timestamp_type = [base_ts + tsd for tsd in columns.timestamp_deltas], 0
        headers = map(list, columns.headers)
        epoch = repeat(batch.partition_leader_epoch)
        rows = zip(repeat(tp.topic), repeat(tp.partition), offsets, timestamps, repeat(timestamp_type), columns.keys, columns.values, headers, epoch)
        out = list(map(_new_tuple, repeat(ConsumerRecord), rows))
        if out and out[0].offset < position:
            out = [r for r in out if r.offset >= position]
        return out

    def _decode_legacy(self, batch: rec.LegacyBatch, tp: TopicPartition, position: int) -> list[ConsumerRecord]:
        ts_type = int(batch.timestamp_type)
        out = []
        for r in batch.records():
            if r.offset < position:
                continue
            if self.check_crcs and not r.valid:
                raise CorruptRecordError(f"Record for partition {tp} at offset {r.offset} is invalid")
            out.append(ConsumerRecord(tp.topic, tp.partition, r.offset, r.timestamp, ts_type, r.key, r.value, [], -1))
        return out


class Fetcher:
    """Positions of the assigned partitions and the fetches that fill them."""

    def __init__(
        self,
        cluster: NetworkClient,
        *,
        isolation_level: str = "read_uncommitted",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52428800,
        max_partition_fetch_bytes: int = 1048576,
        check_crcs: bool = True,
        auto_offset_reset: str = "latest",
    ) -> None:
        self.cluster = cluster
        cluster.allow_answers_of(max(fetch_max_bytes, max_partition_fetch_bytes))
        self.read_committed = isolation_level == "read_committed"
        self.fetch_min_bytes = fetch_min_bytes
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.fetch_max_bytes = fetch_max_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.check_crcs = check_crcs
        self.auto_offset_reset = auto_offset_reset
        self.states: dict[TopicPartition, PartitionState] = {}
        self._answers: deque[_Answer] = deque()
        self._buffered: dict[int, int] = {}
        self._inflight: dict[int, asyncio.Task[None]] = {}
        self._wake = asyncio.Event()
        self._data = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._need_metadata = False
        self._resetting: asyncio.Task[None] | None = None
        self._failure: Exception | None = None
        self._backoff_until: dict[int, float] = {}
        # Counters behind Consumer.metrics().
        self.fetch_count = 0
        self.fetch_latency_total = 0.0
        self.fetch_latency_max = 0.0
        self.bytes_fetched = 0
        self.records_consumed = 0

    # -- assignment and positions --------------------------------------------------------------------

    def assign(self, tps: Iterable[TopicPartition]) -> None:
        wanted = set(tps)
        self.states = {tp: self.states.get(tp) or PartitionState(tp) for tp in sorted(wanted)}
        self._answers = deque(a for a in self._answers if a.state.tp in wanted and self.states[a.state.tp] is a.state)
        self._recount()
        self._wake.set()

    def state(self, tp: TopicPartition) -> PartitionState:
        state = self.states.get(tp)
        if state is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No current assignment for partition {tp}")
        return state

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"seek offset must not be negative: {offset}")
        self.state(tp).seek(offset)
        self._drop_answers(tp)
        self._wake.set()

    def request_reset(self, tp: TopicPartition, strategy: str) -> None:
        state = self.state(tp)
        state.seek(0)
        state.position = None
        state.fetch_offset = None
        state.reset = strategy
        self._drop_answers(tp)
        self._wake.set()

    def skip(self, tp: TopicPartition) -> None:
        """Resume after the corrupt batch that stopped ``tp``."""
        state = self.state(tp)
        if state.skip_to is None:
            return
        self.seek(tp, state.skip_to)

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self.state(tp).paused = True

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self.state(tp).paused = False
        self._wake.set()

    def missing_positions(self) -> list[TopicPartition]:
        return [tp for tp, s in self.states.items() if s.position is None and s.reset is None]

    def _drop_answers(self, tp: TopicPartition) -> None:
        if any(a.state.tp == tp for a in self._answers):
            self._answers = deque(a for a in self._answers if a.state.tp != tp)
            self._recount()

    def _recount(self) -> None:
        responses: dict[int, _Response] = {}
        for answer in self._answers:
            responses[id(answer.response)] = answer.response
            answer.response.remaining = 0
        for answer in self._answers:
            answer.response.remaining += 1
        counts: dict[int, int] = {}
        for response in responses.values():
            counts[response.node] = counts.get(response.node, 0) + 1
        self._buffered = counts

    def _used_up(self, answer: _Answer) -> None:
        response = answer.response
        response.remaining -= 1
        if response.remaining == 0:
            self._buffered[response.node] -= 1

    # -- offsets by time -----------------------------------------------------------------------------

    async def list_offsets(self, timestamps: dict[TopicPartition, int], *, read_committed: bool | None = None) -> dict[TopicPartition, tuple[int, int]]:
        """ListOffsets per leader: ``{tp: (offset, timestamp)}``; offset -1 when none qualifies."""
        isolation = int(self.read_committed if read_committed is None else read_committed)
        remaining = dict(timestamps)
        result: dict[TopicPartition, tuple[int, int]] = {}

        async def attempt() -> None:
            by_node: dict[int, list[TopicPartition]] = {}
            for tp in remaining:
                by_node.setdefault(await self.cluster.leader(tp.topic, tp.partition), []).append(tp)
            answers = await asyncio.gather(*(self._list_offsets_at(node, tps, remaining, isolation) for node, tps in by_node.items()))
            stale: KafkaError | None = None
            for answer in answers:
                for tp, (code, offset, timestamp) in answer.items():
                    if code == 0:
                        result[tp] = (offset, timestamp)
                        remaining.pop(tp, None)
                    else:
                        error = ErrorCode.for_code(code)
                        if not error.retriable:
                            raise KafkaError(error, f"ListOffsets for {tp}: {error.message}")
                        stale = KafkaError(error, f"ListOffsets for {tp}: {error.name}")
            if stale is not None:
                raise stale

        await self.cluster.retrying(attempt)
        return result

    async def _list_offsets_at(self, node: int, tps: list[TopicPartition], timestamps: dict[TopicPartition, int], isolation: int) -> dict[TopicPartition, tuple[int, int, int]]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": timestamps[tp]})
        answer = await self.cluster.call(
            node, LIST_OFFSETS,
            {"replica_id": -1, "isolation_level": isolation, "topics": [{"name": t, "partitions": p} for t, p in topics.items()]},
        )
        out = {}
        for topic in answer.topics:
            for p in topic.partitions:
                out[TopicPartition(topic.name, int(p.partition_index))] = (error_code(p.error_code), int(p.offset), int(p.timestamp))
        return out

    async def reset_positions(self, *, strict: bool = True) -> None:
        """Resolve pending resets with ListOffsets. A partition whose policy is ``none`` raises
        NoOffsetForPartitionError when ``strict``, and is left alone otherwise."""
        pending = {tp: s for tp, s in self.states.items() if s.reset is not None}
        undefined = [tp for tp, s in pending.items() if s.reset not in ("earliest", "latest")]
        if undefined and strict:
            raise NoOffsetForPartitionError(undefined)
        pending = {tp: s for tp, s in pending.items() if s.reset in ("earliest", "latest")}
        if not pending:
            return
        versions = {tp: s.version for tp, s in pending.items()}
        found = await self.list_offsets({tp: EARLIEST if s.reset == "earliest" else LATEST for tp, s in pending.items()})
        for tp, (offset, _ts) in found.items():
            state = self.states.get(tp)
            if state is None or state.version != versions[tp] or state.reset is None:
                continue  # sought or unassigned meanwhile
            state.seek(max(offset, 0))
        self._wake.set()

    # -- the fetch loop ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        # A fetch in flight is let finish (it answers within fetch.max.wait.ms): cancelled, its
        # answer would arrive after the cluster closed and fail a future nobody reads.
        inflight = list(self._inflight.values())
        if inflight:
            _done, pending = await asyncio.wait(inflight, timeout=self.fetch_max_wait_ms / 1000 + 1.0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*inflight, return_exceptions=True)
        self._inflight.clear()

    async def _run(self) -> None:
        metadata_backoff = RETRY_BACKOFF
        while True:
            self._wake.clear()
            try:
                await self.reset_positions(strict=False)
                if self._need_metadata:
                    self._need_metadata = False
                    topics = {tp.topic for tp in self.states}
                    if topics:
                        await self.cluster.refresh(topics)
            except asyncio.CancelledError:
                raise
            except KafkaError as exc:
                log.debug("fetcher: %s", exc)
                if not exc.error_code.retriable:
                    self._failure = exc
                    self._data.set()
                await asyncio.sleep(RETRY_BACKOFF)
                continue
            except Exception as exc:  # never let the loop die silently: poll raises it
                self._failure = exc
                self._data.set()
                await asyncio.sleep(RETRY_BACKOFF)
                continue
            now = time.monotonic()
            wait: float | None = None
            by_node, leaderless = self._fetchable_by_node()
            if leaderless:
                self._need_metadata = True
                wait = metadata_backoff
                metadata_backoff = min(metadata_backoff * 2, 1.0)
            else:
                metadata_backoff = RETRY_BACKOFF
            for node, states in by_node.items():
                if node in self._inflight or self._buffered.get(node, 0) >= MAX_BUFFERED:
                    continue
                until = self._backoff_until.get(node, 0.0)
                if until > now:
                    wait = until - now if wait is None else min(wait, until - now)
                    continue
                self._inflight[node] = asyncio.get_running_loop().create_task(self._fetch(node, states))
            if wait is None:
                await self._wake.wait()
            else:
                try:
                    await asyncio.wait_for(self._wake.wait(), wait)
                except asyncio.TimeoutError:
                    pass

    def _fetchable_by_node(self) -> tuple[dict[int, list[PartitionState]], bool]:
        """Fetchable partitions by leader, and whether some partition's leader is unknown."""
        by_node: dict[int, list[PartitionState]] = {}
        leaderless = False
        topics = self.cluster.metadata.topics
        for tp, state in self.states.items():
            if not state.fetchable:
                continue
            info = topics.get(tp.topic)
            part = info.partitions.get(tp.partition) if info is not None else None
            if part is None or part.leader < 0:
                leaderless = True
                continue
            by_node.setdefault(part.leader, []).append(state)
        return by_node, leaderless

    async def _fetch(self, node: int, states: list[PartitionState]) -> None:
        asked = [(s, s.version, s.fetch_offset) for s in states]
        request = fetch_request(
            {state.tp: FetchPosition(offset, -1, self.max_partition_fetch_bytes) for state, _version, offset in asked},
            max_wait_ms=self.fetch_max_wait_ms, min_bytes=self.fetch_min_bytes, max_bytes=self.fetch_max_bytes,
            isolation_level=int(self.read_committed),
        )
        try:
            connection = await self.cluster.connection(node)
            sent = time.monotonic()
            answer = await connection.call(FETCH, request, timeout=self.cluster.request_timeout + self.fetch_max_wait_ms / 1000)
            latency = time.monotonic() - sent
            self.fetch_count += 1
            self.fetch_latency_total += latency
            self.fetch_latency_max = max(self.fetch_latency_max, latency)
            self._handle(node, asked, answer)
        except asyncio.CancelledError:
            raise
        except KafkaError as exc:
            log.debug("fetch from node %d failed: %s", node, exc)
            self._need_metadata = True
            self._backoff_until[node] = time.monotonic() + RETRY_BACKOFF
        finally:
            self._inflight.pop(node, None)
            self._wake.set()

    def _handle(self, node: int, asked: list[tuple[PartitionState, int, int | None]], answer: Any) -> None:
        code = error_code(answer.error_code)
        if code:
            error = ErrorCode.for_code(code)
            raise KafkaError(error, f"Fetch from node {node}: {error.name}")
        sent = {(s.tp.topic, s.tp.partition): (s, version, offset) for s, version, offset in asked}
        got_data = False
        response = _Response(node)
        for topic in answer.responses:
            for p in topic.partitions:
                entry = sent.get((topic.topic, int(p.partition_index)))
                if entry is None:
                    continue
                state, version, offset = entry
                if state.version != version or state.fetch_offset != offset or self.states.get(state.tp) is not state:
                    continue  # sought, reset or unassigned while the fetch was out
                code = error_code(p.error_code)
                if code == 0:
                    state.high_watermark = int(p.high_watermark)
                    state.last_stable_offset = int(p.last_stable_offset)
                    state.log_start_offset = int(p.log_start_offset)
                    data = p.records
                    if not data:
                        continue
                    next_offset = _next_fetch_offset(data)
                    if next_offset is None:
                        if len(data) >= self.max_partition_fetch_bytes:
                            state.error = KafkaError(
                                ErrorCode.MESSAGE_TOO_LARGE,
                                f"There are some messages at [Partition=Offset]: {{{state.tp}={offset}}} whose size is larger than the fetch size "
                                f"{self.max_partition_fetch_bytes} and hence cannot be returned.",
                            )
                            got_data = True
                        continue
                    state.fetch_offset = max(next_offset, offset or 0)
                    self.bytes_fetched += len(data)
                    aborted = [(int(a.producer_id), int(a.first_offset)) for a in p.aborted_transactions] if self.read_committed and p.aborted_transactions else None
                    self._answers.append(_Answer(state, response, data, aborted, self.read_committed, self.check_crcs))
                    got_data = True
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    if state.position == offset:
                        if self.auto_offset_reset in ("earliest", "latest"):
                            log.info("fetch offset %s is out of range for partition %s, resetting offset", offset, state.tp)
                            self.request_reset(state.tp, self.auto_offset_reset)
                        else:
                            state.error = KafkaError(
                                ErrorCode.OFFSET_OUT_OF_RANGE, f"Fetch position FetchPosition{{offset={offset}}} is out of range for partition {state.tp}"
                            )
                            got_data = True
                elif ErrorCode.for_code(code) in _LEADERSHIP_ERRORS:
                    self._need_metadata = True
                    self._backoff_until[node] = time.monotonic() + RETRY_BACKOFF
                else:
                    error = ErrorCode.for_code(code)
                    state.error = KafkaError(error, f"Fetch of {state.tp}: {error.message}")
                    got_data = True
        if response.remaining:
            self._buffered[node] = self._buffered.get(node, 0) + 1
        if got_data:
            self._data.set()

    # -- handing records out -------------------------------------------------------------------------

    def take(self, max_records: int) -> list[ConsumerRecord]:
        """Decoded records from the buffered answers, up to ``max_records``; raises a partition's error."""
        out: list[ConsumerRecord] = []
        answers = self._answers
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        for state in self.states.values():
            if state.error is not None and not any(a.state is state and not a.stale for a in answers):
                raise state.error
        consumed = False
        while answers and len(out) < max_records:
            answer = answers[0]
            if answer.stale or answer.state.paused or answer.state.error is not None:
                if answer.state.error is not None and not answer.stale:
                    if out:
                        break
                    raise answer.state.error
                if answer.state.paused and not answer.stale:
                    answers.rotate(-1)
                    if all(a.state.paused for a in answers):
                        break
                    continue
                answers.popleft()
                self._used_up(answer)
                consumed = True
                continue
            try:
                done = answer.take(out, max_records - len(out))
            except CorruptConsumerRecordError:
                if out:
                    break
                raise
            if done:
                answers.popleft()
                self._used_up(answer)
                consumed = True
        if not answers:
            self._data.clear()
        if consumed:
            self._wake.set()
        self.records_consumed += len(out)
        return out

    def has_data(self) -> bool:
        return bool(self._answers) or self._failure is not None or any(s.error is not None for s in self.states.values())

    async def wait_for_data(self, timeout: float) -> None:
        if self.has_data():
            return
        self._data.clear()
        try:
            await asyncio.wait_for(self._data.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    def wake(self) -> None:
        self._wake.set()


def _next_fetch_offset(data: bytes) -> int | None:
    """The offset after the last whole batch in ``data``, from batch headers only."""
    pos = 0
    end = len(data)
    last: int | None = None
    while end - pos >= rec.HEADER_SIZE_UP_TO_MAGIC:
        offset, size, magic = _peek(data, pos)
        if size < rec.LOG_OVERHEAD + rec.LEGACY_OVERHEAD_V0 or pos + size > end:
            break
        if magic >= 2:
            if pos + rec.RECORD_BATCH_OVERHEAD > end:
                break
            last = offset + _INT32.unpack_from(data, pos + _LAST_OFFSET_DELTA)[0] + 1
        else:
            last = offset + 1
        pos += size
    if last is None and end - pos >= rec.HEADER_SIZE_UP_TO_MAGIC:
        _offset, size, _magic = _peek(data, pos)
        if size < rec.LOG_OVERHEAD + rec.LEGACY_OVERHEAD_V0:
            # A corrupt size field: hand the bytes to the decoder, which reports the offset.
            return _offset + 1
    return last

