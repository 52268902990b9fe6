"""Kafka topics read from a broker: offsets resolved on the driver, ranges fetched on the executors.

Any Kafka-compatible broker will do (kcli's, Apache Kafka's): the driver asks for metadata and
ListOffsets through kcli's asyncio client (``kcli.client``), the executors send Fetch requests.

Driver side (``BrokerOffsets``): the topic-partitions a subscription reads (a pattern never
selects internal topics, as the Java consumer's ``exclude.internal.topics``), and start and end
offsets resolved as Spark's Kafka source resolves them: earliest (-2) and latest (-1) with
ListOffsets, per-partition offsets checked against what the log holds, timestamps as the first
offset whose timestamp is >= the given one (``offsetsForTimes``). With
``kafka.isolation.level=read_committed`` "latest" is the last stable offset.

Executor side (``read_broker_range``): one ``BrokerRange`` ``[start, end)`` of one partition is
fetched from its leader, answer after answer (a fetching thread keeps the next answers coming
while the last is decoded), and each answer's record batches go straight to
``decode.decode_batches`` (the vectorised decoder), so no Python object is built per record. The
range ends at ``end`` exactly, whatever batch boundaries the broker answers with. Offsets that
are gone (OFFSET_OUT_OF_RANGE below the log start, a log end below the range's end) are data
loss: an error with ``failOnDataLoss=true``, skipped otherwise. With read_committed the batches of
aborted transactions are dropped using the answer's aborted-transaction list, as the Java
consumer does.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.spark.options import (
    EARLIEST,
    LATEST,
    DataLossError,
    OffsetLimit,
    OffsetRange,
    PartitionOffsets,
    SourceOptions,
    Subscription,
    TopicPartition,
    describe_partitions,
    split_ranges,
)

FETCH = 1
# One partition's share of a Fetch answer: big enough that a fetch round trip is small next to
# decoding what it brings.
DEFAULT_PARTITION_FETCH_BYTES = 8 * 1024 * 1024
DEFAULT_FETCH_MAX_WAIT_MS = 500
DEFAULT_POLL_TIMEOUT_MS = 120_000
FAIL_ON_DATA_LOSS_HINT = "set failOnDataLoss=false to skip what is missing"


def _report(fail_on_data_loss: bool, message: str) -> None:
    if fail_on_data_loss:
        raise DataLossError(f"{message}; {FAIL_ON_DATA_LOSS_HINT}")


def _cluster(bootstrap: str, params: Mapping[str, str]):
    from kcli.client.network_client import NetworkClient

    timeout = float(params.get("request.timeout.ms", "30000")) / 1000
    return NetworkClient(bootstrap, client_id=params.get("client.id", "kcli-spark"), request_timeout=timeout)


def _read_committed(params: Mapping[str, str]) -> bool:
    level = params.get("isolation.level", "read_uncommitted").strip().lower()
    if level not in ("read_uncommitted", "read_committed"):
        raise KcliError(f"Invalid value {level} for configuration isolation.level: String must be one of: read_committed, read_uncommitted")
    return level == "read_committed"


# -- the driver: partitions and offsets ---------------------------------------------------------------


class BrokerOffsets:
    """Metadata and ListOffsets for one query, on one connection kept between calls."""

    def __init__(self, options: SourceOptions) -> None:
        from kcli.client.sync import SyncRunner

        assert options.bootstrap_servers is not None
        self.options = options
        self.params = dict(options.kafka_params)
        self.isolation = int(_read_committed(self.params))
        self._runner = SyncRunner()
        self._cluster = _cluster(options.bootstrap_servers, self.params)

    def close(self) -> None:
        try:
            self._runner.run(self._cluster.close())
        finally:
            self._runner.close()

    def partitions(self) -> list[TopicPartition]:
        """The topic-partitions the subscription reads now, in order."""
        subscription: Subscription = self.options.subscription
        if subscription.kind == "assign":
            return sorted(subscription.assigned)
        from kcli.client.admin import Admin

        topics = self._runner.run(Admin(self._cluster).list_topics(include_internal=True))
        return sorted(
            (name, partition)
            for name, info in topics.items()
            if not info.error and subscription.selects_topic(name, internal=info.internal)
            for partition in info.partitions
        )

    def list_offsets(self, specs: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """ListOffsets: ``spec`` is -2 (earliest), -1 (latest) or a timestamp; -1 when no record
        has a timestamp at or after it."""
        if not specs:
            return {}
        from kcli.client.admin import Admin
        from kcli.client.admin import TopicPartition as AdminTopicPartition

        asked = {AdminTopicPartition(t, p): spec for (t, p), spec in specs.items()}
        attempts = int(self.params.get("fetchoffset.numretries", "3"))
        for attempt in range(attempts + 1):
            listed = self._runner.run(Admin(self._cluster).list_offsets(asked, isolation_level=self.isolation))
            errors = {tp: r.error for tp, r in listed.items() if r.error is not None}
            missing = [tp for tp in asked if tp not in listed]
            if not errors and not missing:
                return {(tp.topic, tp.partition): listed[tp].offset for tp in asked}
            if attempt == attempts:
                first = next(iter(errors.values()), None)
                what = describe_partitions((tp.topic, tp.partition) for tp in [*errors, *missing])
                raise KcliError(f"could not list offsets of {what}: {first or 'no answer'}")
            time.sleep(0.1 * (attempt + 1))
        raise AssertionError("unreachable")

    def earliest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self.list_offsets({tp: EARLIEST for tp in tps})

    def latest(self, tps: Iterable[TopicPartition]) -> PartitionOffsets:
        return self.list_offsets({tp: LATEST for tp in tps})

    def resolve(self, limit: OffsetLimit, tps: list[TopicPartition], *, starting: bool) -> PartitionOffsets:
        """Concrete offsets for ``tps``, as Spark's KafkaOffsetReader resolves an offset limit."""
        what = "startingOffsets" if starting else "endingOffsets"
        fail = self.options.fail_on_data_loss
        if limit.kind == "earliest":
            return self.earliest(tps)
        if limit.kind == "latest":
            return self.latest(tps)
        if limit.kind in ("offsets", "timestamps") and set(limit.offsets) != set(tps):
            names = f"{what.replace('Offsets', 'OffsetsByTimestamp')}" if limit.kind == "timestamps" else what
            raise KcliError(
                f"{names} must name every partition read: it names {describe_partitions(limit.offsets)}, "
                f"the query reads {describe_partitions(tps)} (use -2 for earliest, -1 for latest)"
            )
        if limit.kind == "offsets":
            earliest, latest = self.earliest(tps), self.latest(tps)
            out: PartitionOffsets = {}
            for tp in tps:
                offset = limit.offsets[tp]
                if offset == EARLIEST:
                    out[tp] = earliest[tp]
                elif offset == LATEST:
                    out[tp] = latest[tp]
                elif offset < 0:
                    raise KcliError(f"{what} for {tp[0]}-{tp[1]} is {offset}: only -2 (earliest) and -1 (latest) may be negative")
                elif offset < earliest[tp]:
                    _report(fail, f"{what} {offset} of {tp[0]}-{tp[1]} is below its earliest offset {earliest[tp]}")
                    out[tp] = earliest[tp]
                elif offset > latest[tp]:
                    _report(fail, f"{what} {offset} of {tp[0]}-{tp[1]} is beyond its latest offset {latest[tp]}")
                    out[tp] = latest[tp]
                else:
                    out[tp] = offset
            return out
        stamps = {tp: (limit.timestamp if limit.kind == "timestamp" else limit.offsets[tp]) for tp in tps}
        found = self.list_offsets(stamps)
        unmatched = [tp for tp in tps if found[tp] < 0]
        if unmatched and starting and limit.strategy == "error":
            tp = unmatched[0]
            raise KcliError(f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} and timestamp {stamps[tp]}.")
        if unmatched:
            found.update(self.latest(unmatched))
        return found


@dataclass(frozen=True)
class BrokerRange:
    """One input partition: offsets ``[start, end)`` of one topic-partition on a broker."""

    topic: str
    partition: int
    start: int
    end: int
    bootstrap: str
    params: tuple[tuple[str, str], ...]


def plan_broker_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int], options: SourceOptions) -> list[BrokerRange]:
    """Offset ranges from resolved offsets, split as Spark splits them (``minPartitions``)."""
    ranges = []
    for tp in sorted(end):
        if tp not in start:
            continue
        if start[tp] > end[tp]:
            _report(options.fail_on_data_loss, f"{tp[0]}-{tp[1]}: the start offset {start[tp]} is beyond the end offset {end[tp]}")
            continue
        ranges.append(OffsetRange(tp[0], tp[1], start[tp], end[tp]))
    params = tuple(sorted(options.kafka_params.items()))
    assert options.bootstrap_servers is not None
    return [
        BrokerRange(r.topic, r.partition, r.start, r.end, options.bootstrap_servers, params)
        for r in split_ranges(ranges, options.min_partitions, options.max_records_per_partition)
    ]


def plan_broker_batch(options: SourceOptions) -> list[BrokerRange]:
    """The input partitions of a batch read from a broker."""
    assert options.ending is not None
    offsets = BrokerOffsets(options)
    try:
        tps = offsets.partitions()
        start = offsets.resolve(options.starting, tps, starting=True)
        end = offsets.resolve(options.ending, tps, starting=False)
    finally:
        offsets.close()
    return plan_broker_ranges(start, end, options)


# -- the executors: fetching a range -------------------------------------------------------------------


def read_broker_range(
    r: BrokerRange,
    *,
    include_headers: bool = False,
    fail_on_data_loss: bool = True,
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS,
) -> Iterator:
    """The records of ``r`` as ``pyarrow.RecordBatch``es in Spark's Kafka schema, in offset order."""
    from kcli.spark.decode import decode_batches

    fetcher = _RangeFetcher(r, dict(r.params), fail_on_data_loss, poll_timeout_ms)
    yield from decode_batches(
        fetcher.batches(),
        r.topic,
        r.partition,
        r.start,
        r.end,
        where=f"{r.topic}-{r.partition} on {r.bootstrap}",
        include_headers=include_headers,
        fail_on_data_loss=fail_on_data_loss,
    )


_END = object()
PREFETCHED_ANSWERS = 2


class _RangeFetcher:
    """Fetch requests for one range, from the partition's leader.

    A thread of its own (with its own event loop and connection) sends them one after the other
    and queues up to ``PREFETCHED_ANSWERS`` answers, so the broker and the network work on the
    next answer while this thread decodes the last one.
    """

    def __init__(self, r: BrokerRange, params: Mapping[str, str], fail_on_data_loss: bool, poll_timeout_ms: int) -> None:
        self.r = r
        self.params = params
        self.read_committed = _read_committed(params)
        self.fail_on_data_loss = fail_on_data_loss
        self.poll_timeout = poll_timeout_ms / 1000
        self.partition_bytes = int(params.get("max.partition.fetch.bytes", DEFAULT_PARTITION_FETCH_BYTES))
        self.max_bytes = max(int(params.get("fetch.max.bytes", 52428800)), self.partition_bytes)
        self.max_wait = int(params.get("fetch.max.wait.ms", DEFAULT_FETCH_MAX_WAIT_MS))
        self.aborted_pids: set[int] = set()
        self.runner = None
        self.cluster = None

    def batches(self) -> Iterator[tuple[int, Any]]:
        """``(position in its answer, batch)`` for every batch from ``start`` until ``end``."""
        import queue
        import threading

        from kcli.storage import records as rec

        answers: queue.Queue = queue.Queue(maxsize=PREFETCHED_ANSWERS)
        stop = threading.Event()
        thread = threading.Thread(target=self._fetch_all, args=(answers, stop), name=f"kcli-fetch-{self.r.topic}-{self.r.partition}", daemon=True)
        thread.start()
        position = self.r.start
        try:
            while True:
                item = answers.get()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                data, aborted = item
                aborted_list = sorted(aborted, key=lambda a: a[1])
                pos = 0
                while len(data) - pos >= rec.HEADER_SIZE_UP_TO_MAGIC:
                    _offset, size, _magic = rec.peek_batch_header(data, pos)
                    if pos + size > len(data):
                        break
                    batch = rec.read_batch(data, pos)
                    pos += size
                    if batch.last_offset < position:
                        continue
                    position = batch.last_offset + 1
                    if self.read_committed and batch.magic >= 2 and self._aborted(batch, aborted_list):
                        continue
                    yield pos - size, batch
        finally:
            stop.set()
            while thread.is_alive():
                try:
                    answers.get(timeout=0.1)
                except queue.Empty:
                    pass
            thread.join()

    def _fetch_all(self, answers, stop) -> None:
        """The fetching thread: answers (or the error that ended it) into ``answers``, then _END."""
        import queue

        from kcli.client.sync import SyncRunner

        def put(item) -> bool:
            while not stop.is_set():
                try:
                    answers.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        self.runner = SyncRunner()
        self.cluster = _cluster(self.r.bootstrap, self.params)
        try:
            position = self.r.start
            waited_since: float | None = None
            while position < self.r.end and not stop.is_set():
                answer = self._fetch(position)
                if answer is None:  # the offsets are gone and that is allowed: skipped
                    break
                data, high_watermark, log_start, aborted = answer
                position = max(position, log_start)
                if not data:
                    if high_watermark <= position:
                        _report(
                            self.fail_on_data_loss,
                            f"{self.r.topic}-{self.r.partition}: offsets {position}..{self.r.end - 1} are not in the log (log end offset {high_watermark})",
                        )
                        break
                    now = time.monotonic()
                    waited_since = waited_since or now
                    if now - waited_since > self.poll_timeout:
                        raise KcliError(
                            f"{self.r.topic}-{self.r.partition}: no records at offset {position} within kafkaConsumer.pollTimeoutMs ({int(self.poll_timeout * 1000)} ms)"
                        )
                    continue
                waited_since = None
                after = _next_offset(data)
                if after is None:
                    raise KcliError(f"{self.r.topic}-{self.r.partition}: the answer at offset {position} holds no whole batch (raise max.partition.fetch.bytes)")
                position = max(position, after)
                if not put((data, aborted)):
                    return
            put(_END)
        except BaseException as exc:  # handed to the reading thread, which raises it
            put(exc)
        finally:
            try:
                self.runner.run(self.cluster.close())
            finally:
                self.runner.close()

    def _aborted(self, batch, aborted: list[tuple[int, int]]) -> bool:
        """Whether ``batch`` belongs to an aborted transaction (the Java consumer's rule)."""
        from kcli.storage import records as rec

        while aborted and aborted[0][1] <= batch.last_offset:
            self.aborted_pids.add(aborted.pop(0)[0])
        if batch.is_control:
            if batch.producer_id in self.aborted_pids:
                fields = batch.record_fields()
                if fields and rec.parse_control_record(fields[0][2], fields[0][3], batch.base_offset)[0] == rec.ControlType.ABORT:
                    self.aborted_pids.discard(batch.producer_id)
            return True
        return batch.is_transactional and batch.producer_id in self.aborted_pids

    def _fetch(self, offset: int) -> tuple[bytes, int, int, list[tuple[int, int]]] | None:
        r = self.r
        for attempt in range(10):
            try:
                return self.runner.run(self._fetch_once(offset))
            except _OutOfRange:
                earliest = self._earliest()
                if offset < earliest:
                    _report(self.fail_on_data_loss, f"{r.topic}-{r.partition}: offsets {offset}..{min(earliest, r.end) - 1} are gone (earliest offset {earliest})")
                    if earliest >= r.end:
                        return None
                    offset = earliest
                    continue
                _report(self.fail_on_data_loss, f"{r.topic}-{r.partition}: offset {offset} is out of range")
                return None
            except KafkaError as exc:
                if not exc.error_code.retriable or attempt == 9:
                    raise KcliError(f"fetching {r.topic}-{r.partition} at offset {offset}: {exc}") from None
                self.cluster.forget(r.topic)
                time.sleep(min(0.1 * 2**attempt, 2.0))
        raise AssertionError("unreachable")

    def _earliest(self) -> int:
        from kcli.client.admin import Admin
        from kcli.client.admin import TopicPartition as AdminTopicPartition

        tp = AdminTopicPartition(self.r.topic, self.r.partition)
        listed = self.runner.run(Admin(self.cluster).list_offsets({tp: EARLIEST}))[tp]
        if listed.error is not None:
            raise KcliError(f"could not list the earliest offset of {tp}: {listed.error}")
        return listed.offset

    async def _fetch_once(self, offset: int) -> tuple[bytes, int, int, list[tuple[int, int]]]:
        from kcli.client.connection import error_code
        from kcli.client.fetch_request import FetchPosition, fetch_request

        r = self.r
        leader = await self.cluster.leader(r.topic, r.partition)
        request = fetch_request(
            {TopicPartition(r.topic, r.partition): FetchPosition(offset, -1, self.partition_bytes)},
            max_wait_ms=self.max_wait, min_bytes=1, max_bytes=self.max_bytes, isolation_level=int(self.read_committed),
        )
        answer = await self.cluster.call(leader, FETCH, request, timeout=self.cluster.request_timeout + self.max_wait / 1000)
        code = error_code(answer.error_code)
        if code:
            raise KafkaError(ErrorCode.for_code(code), f"Fetch: {ErrorCode.for_code(code).name}")
        for topic in answer.responses:
            for p in topic.partitions:
                if int(p.partition_index) != r.partition:
                    continue
                code = error_code(p.error_code)
                if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    raise _OutOfRange()
                if code:
                    raise KafkaError(ErrorCode.for_code(code), f"Fetch of {r.topic}-{r.partition}: {ErrorCode.for_code(code).name}")
                aborted = [(int(a.producer_id), int(a.first_offset)) for a in (p.aborted_transactions or ())] if self.read_committed else []
                return bytes(p.records or b""), int(p.high_watermark), int(p.log_start_offset), aborted
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"the Fetch answer has no {r.topic}-{r.partition}")


class _OutOfRange(Exception):
    pass


def _next_offset(data: bytes) -> int | None:
    """The offset after the last whole batch in a Fetch answer, from batch headers alone."""
    from kcli.storage import records as rec

    pos = 0
    last = None
    while len(data) - pos >= rec.HEADER_SIZE_UP_TO_MAGIC:
        _offset, size, _magic = rec.peek_batch_header(data, pos)
        rec.check_batch_size(size - rec.LOG_OVERHEAD, pos)
        if pos + size > len(data):
            break
        last = rec.read_batch(data, pos).last_offset
        pos += size
    return None if last is None else last + 1
