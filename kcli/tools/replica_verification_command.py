"""The work behind ``kcli replica-verification``: Kafka's ReplicaVerificationTool over kcli's
client. One Fetch per broker per round, all brokers at once; then the round's answers are
compared (Kafka's ReplicaBuffer.verifyCheckSum) and the next round starts where the replicas
were found equal."""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import typer

from kcli.common import TopicPartition
from kcli.errors import KcliError
from kcli.output import Output
from kcli.storage.records import iter_batches

FETCH = 1
DEBUGGING_CONSUMER_ID = -2  # Kafka's FetchRequest.DEBUGGING_CONSUMER_ID: may read followers
FIRST_FOLLOWER_FETCH_VERSION = 11  # KIP-392: a consumer may read a follower from Fetch v11
LATEST, EARLIEST = -1, -2
TOOL_CLASS = "org.apache.kafka.tools.ReplicaVerificationTool"


def stamp(now_ms: int | None = None) -> str:
    """Kafka's ``yyyy-MM-dd HH:mm:ss,SSS`` in local time."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    moment = datetime.datetime.fromtimestamp(now_ms / 1000)
    return f"{moment:%Y-%m-%d %H:%M:%S},{now_ms % 1000:03d}"


class ReplicasDiverge(KcliError):
    """Two replicas hold batches ending at different offsets: the tool stops (exit 1)."""


@dataclass(slots=True)
class ReplicaData:
    """One replica's answer in a round: its high watermark and the records fetched."""

    high_watermark: int
    records: Any = b""


@dataclass
class ReplicaBuffer:
    """Kafka's ReplicaBuffer: where each partition's replicas were found equal so far, and the
    round's answers."""

    expected_replicas: dict[TopicPartition, int]
    fetch_offsets: dict[TopicPartition, int]
    report_interval_ms: int
    clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000
    last_report_ms: int = 0
    fetched: dict[TopicPartition, dict[int, ReplicaData]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.last_report_ms = self.clock()
        for tp in self.expected_replicas:
            self.fetched.setdefault(tp, {})

    def add_fetched_data(self, tp: TopicPartition, replica_id: int, data: ReplicaData) -> None:
        self.fetched[tp][replica_id] = data

    def verify(self, println: Callable[[str], None]) -> None:
        """Compare the round's answers batch by batch up to each replica's high watermark; move
        each partition's fetch offset past the batches all its replicas hold alike."""
        max_lag, offset_with_max_lag, partition_with_max_lag = -1, -1, None
        for tp, answers in self.fetched.items():
            batches = {replica: iter(_batches(data.records)) for replica, data in sorted(answers.items())}
            max_hw = max((data.high_watermark for data in answers.values()), default=-1)
            in_all = bool(batches)
            while in_all:
                first = None
                for replica, iterator in batches.items():
                    batch = next(iterator, None)
                    if batch is None or batch.last_offset >= answers[replica].high_watermark:
                        in_all = False
                        continue
                    if first is None:
                        first = (replica, batch.last_offset, batch.next_offset, batch.crc)
                        continue
                    if first[1] != batch.last_offset:
                        raise ReplicasDiverge(
                            f"{stamp(self.clock())}: partition {tp}: replica {first[0]}'s offset {first[1]} doesn't match replica {replica}'s offset {batch.last_offset}"
                        )
                    if first[3] != batch.crc:
                        println(
                            f"{stamp(self.clock())}: partition {tp} has unmatched checksum at offset {batch.last_offset}; "
                            f"replica {first[0]}'s checksum {first[3]}; replica {replica}'s checksum {batch.crc}"
                        )
                if in_all:
                    self.fetch_offsets[tp] = first[2] if first is not None else -1
            if max_hw - self.fetch_offsets[tp] > max_lag:
                offset_with_max_lag = self.fetch_offsets[tp]
                max_lag = max_hw - offset_with_max_lag
                partition_with_max_lag = tp
            answers.clear()
        now = self.clock()
        if now - self.last_report_ms > self.report_interval_ms:
            println(
                f"{stamp(now)}: max lag is {max_lag} for partition {partition_with_max_lag if partition_with_max_lag is not None else 'null'} "
                f"at offset {offset_with_max_lag} among {len(self.fetched)} partitions"
            )
            self.last_report_ms = now


def _batches(records: Any):
    if not records:
        return ()
    return iter_batches(memoryview(records) if not isinstance(records, memoryview) else records)


def run(broker_list: str, topics_regex: str, *, fetch_size: int, max_wait_ms: int, initial_time: int, report_interval_ms: int) -> None:
    from kcli.client.sync import SyncRunner

    out = Output()
    code = 0
    try:
        with SyncRunner() as runner:
            code = runner.run(_verify(out, broker_list, topics_regex, fetch_size, max_wait_ms, initial_time, report_interval_ms))
    except ReplicasDiverge as exc:
        out.line(str(exc))
        code = 1
    except KcliError as exc:
        out.flush()
        out.diag(f"Error: {exc}")
        code = exc.exit_code
    finally:
        out.flush()
    if code:
        raise typer.Exit(code)


async def _verify(out: Output, broker_list: str, topics_regex: str, fetch_size: int, max_wait_ms: int, initial_time: int, report_interval_ms: int) -> int:
    from kcli.client.admin import Admin
    from kcli.client.network_client import NetworkClient
    from kcli.tools._admin_common import TopicFilter, client_settings
    from kcli.tools.stop_signals import Stopped, StopSignals

    topic_filter = TopicFilter(topics_regex)
    cluster = NetworkClient(**client_settings({}, bootstrap=broker_list, client_id="ReplicaVerification", warn=lambda _line: None))
    try:
        with StopSignals() as stop:
            try:
                out.log4j("WARN", "This tool is deprecated and may be removed in a future major release.", TOOL_CLASS)
                metadata = await stop.until(cluster.refresh())
                chosen = [info for name, info in sorted(metadata.topics.items()) if topic_filter.allows(name)]
                if not chosen:
                    out.log4j("ERROR", "No topics found. topics-include if specified, is either filtering out all topics or there is no topic.", TOOL_CLASS)
                    return 1
                by_broker: dict[int, list[TopicPartition]] = {}
                expected: dict[TopicPartition, int] = {}
                for info in chosen:
                    for index, partition in sorted(info.partitions.items()):
                        tp = TopicPartition(info.name, index)
                        expected[tp] = len(partition.replicas)
                        for replica in partition.replicas:
                            by_broker.setdefault(replica, []).append(tp)
                missing = sorted(set(by_broker) - set(metadata.brokers))
                if missing:
                    raise KcliError(f"replicas on brokers {', '.join(map(str, missing))}, which are not alive: the tool needs every broker up at its start")
                offsets = await stop.until(_initial_offsets(Admin(cluster), list(expected), initial_time))
                buffer = ReplicaBuffer(expected, offsets, report_interval_ms)
                cluster.allow_answers_of(fetch_size * max(len(tps) for tps in by_broker.values()))
                out.now(f"{stamp()}: verification process is started")
                while True:
                    await stop.until(asyncio.gather(*(
                        _fetch(cluster, broker, tps, buffer, fetch_size, max_wait_ms) for broker, tps in by_broker.items()
                    )))
                    buffer.verify(out.now)
            except Stopped:
                return stop.exit_code
    finally:
        await cluster.close()


async def _initial_offsets(admin: Any, partitions: list[TopicPartition], initial_time: int) -> dict[TopicPartition, int]:
    """Where verification starts (Kafka's initialOffsets): the latest or earliest offsets, or
    those of a timestamp; a partition without a record that new starts at its latest."""
    listed = await admin.list_offsets({tp: initial_time for tp in partitions})
    offsets = {}
    unmatched = []
    for tp in partitions:
        result = listed[tp]
        if result.error is not None:
            raise result.error
        if result.offset < 0:
            unmatched.append(tp)
        offsets[tp] = result.offset
    if unmatched:
        latest = await admin.list_offsets({tp: LATEST for tp in unmatched})
        for tp in unmatched:
            if latest[tp].error is not None:
                raise latest[tp].error
            offsets[tp] = latest[tp].offset
    return offsets


async def _fetch(cluster: Any, broker: int, partitions: list[TopicPartition], buffer: ReplicaBuffer, fetch_size: int, max_wait_ms: int) -> None:
    """One Fetch of ``partitions`` from ``broker`` as the debugging consumer; a failed one counts
    as empty answers (Kafka's ReplicaFetcher.doWork), so those partitions wait for the next round."""
    from kcli.client.fetch_request import FetchPosition, fetch_request

    request = fetch_request(
        {tp: FetchPosition(buffer.fetch_offsets[tp], -1, fetch_size) for tp in partitions},
        replica_id=DEBUGGING_CONSUMER_ID, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=0x7FFFFFFF,
    )
    answered: set[TopicPartition] = set()
    try:
        answer = await cluster.call(broker, FETCH, request, at_least=FIRST_FOLLOWER_FETCH_VERSION, timeout=cluster.request_timeout + max_wait_ms / 1000)
        for topic in answer.responses:
            for data in topic.partitions:
                tp = TopicPartition(topic.topic, int(data.partition_index))
                if tp in buffer.expected_replicas:
                    records = data.records if int(data.error_code) == 0 else b""
                    buffer.add_fetched_data(tp, broker, ReplicaData(int(data.high_watermark), records or b""))
                    answered.add(tp)
    except (KcliError, OSError):
        pass  # as Kafka's fetcher: this round's answers from the broker are empty
    for tp in partitions:
        if tp not in answered:
            buffer.add_fetched_data(tp, broker, ReplicaData(-1))
