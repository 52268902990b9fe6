"""``kcli producer-perf-test``: Kafka's kafka-producer-perf-test.sh (Kafka 3.9's ProducerPerformance).

Sends ``--num-records`` records to ``--topic`` and prints Kafka's lines: every 5 seconds (checked
as records are acknowledged)::

    N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency.

and at the end::

    N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency, A ms 50th, B ms 95th, C ms 99th, D ms 99.9th.

Latency is the time from a record's send to its acknowledgement, in milliseconds; percentiles
come from every ``num-records / min(num-records, 500000)``-th acknowledged record, as in Kafka. MB
is 2^20 bytes. ``--throughput`` caps records/s the way Kafka's ThroughputThrottler does (sleeping
off the deficit once it reaches 2 ms); -1 sends as fast as possible.

Payloads: ``--record-size`` bytes of random upper-case letters (drawn from a pool of distinct
payloads made up front, rather than new letters for every record as Kafka's loop draws them),
``--payload-file`` (split at the ``--payload-delimiter`` regular expression, one chosen at random
per record; prints Kafka's "Reading payloads from" and "Number of messages read" lines), or
``--payload-monotonic`` (the record's number as text).

Settings: ``--producer-props k=v ...`` (which take precedence) and ``--producer.config``, with the
Java producer's property names; ``client.id`` defaults to ``perf-producer-client``.
``--print-metrics`` prints the producer's counters after the summary in Kafka's ``Metric Name``
table.

Transactions, as Kafka 3.9 runs them: ``--transaction-duration-ms`` > 0 turns them on, with
``--transactional-id`` (default ``performance-producer-default-transactional-id``) as the
producer's ``transactional.id``, taking precedence over one in the properties. A transaction
begins with the first record after a commit and is committed after the send of the first record
``--transaction-duration-ms`` or more after it began; the last one after the loop. (Kafka 4.0
turns transactions on for a transactional id alone and generates an id for a duration alone;
3.9 does neither.)

Errors: the first failed send is reported as one line and the test stops (exit 1) after printing
the summary of what was acknowledged.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.java_compat import format_fixed
from kcli.output import Output
from kcli.tools.int_options import INT32, INT64

ABOUT = "This tool is used to verify the producer performance."
REPORTING_INTERVAL_MS = 5000
MAX_SAMPLES = 500000


def register(app: typer.Typer) -> None:
    app.command("producer-perf-test", help=ABOUT, no_args_is_help=True)(producer_perf_test)


def producer_perf_test(
    # The values after the first one of --producer-props (argparse's nargs="+"), which click
    # hands over as arguments.
    values: Annotated[Optional[list[str]], typer.Argument(hidden=True, show_default=False)] = None,
    topic: Annotated[Optional[str], typer.Option("--topic", metavar="TOPIC", help="produce messages to this topic")] = None,
    num_records: Annotated[Optional[int], typer.Option("--num-records", click_type=INT64, metavar="NUM-RECORDS", help="number of messages to produce")] = None,
    record_size: Annotated[Optional[int], typer.Option("--record-size", click_type=INT32, metavar="RECORD-SIZE", help="message size in bytes. Note that you must provide exactly one of --record-size or --payload-file or --payload-monotonic.")] = None,
    payload_file: Annotated[Optional[str], typer.Option("--payload-file", metavar="PAYLOAD-FILE", help="file to read the message payloads from. This works only for UTF-8 encoded text files. Payloads will be read from this file and a payload will be randomly selected when sending messages. Note that you must provide exactly one of --record-size or --payload-file or --payload-monotonic.")] = None,
    payload_monotonic: Annotated[bool, typer.Option("--payload-monotonic", help="payload is monotonically increasing integer. Note that you must provide exactly one of --record-size or --payload-file or --payload-monotonic.")] = False,
    payload_delimiter: Annotated[str, typer.Option("--payload-delimiter", metavar="PAYLOAD-DELIMITER", help="provides delimiter to be used when --payload-file is provided. Defaults to new line. Note that this parameter will be ignored if --payload-file is not provided.")] = "\\n",
    throughput: Annotated[Optional[float], typer.Option("--throughput", metavar="THROUGHPUT", help="throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. Set this to -1 to disable throttling.")] = None,
    producer_props: Annotated[Optional[list[str]], typer.Option("--producer-props", metavar="PROP-NAME=PROP-VALUE", help="kafka producer related configuration properties like bootstrap.servers,client.id etc. These configs take precedence over those passed via --producer.config. Several may follow one --producer-props.")] = None,
    producer_config: Annotated[Optional[str], typer.Option("--producer.config", metavar="CONFIG-FILE", help="producer config properties file.")] = None,
    print_metrics: Annotated[bool, typer.Option("--print-metrics", help="print out metrics at the end of the test.")] = False,
    transactional_id: Annotated[str, typer.Option("--transactional-id", metavar="TRANSACTIONAL-ID", help="The transactionalId to use if transaction-duration-ms is > 0. Useful when testing the performance of concurrent transactions.")] = "performance-producer-default-transactional-id",
    transaction_duration_ms: Annotated[int, typer.Option("--transaction-duration-ms", click_type=INT64, metavar="TRANSACTION-DURATION", help="The max age of each transaction. The commitTransaction will be called after this time has elapsed. Transactions are only enabled if this value is positive.")] = 0,
) -> None:
    from kcli.errors import KcliError, UsageError

    for name, value in (("--topic", topic), ("--num-records", num_records), ("--throughput", throughput)):
        if value is None:
            raise UsageError(f"argument {name} is required")
    chosen = [n for n, v in (("--record-size", record_size), ("--payload-file", payload_file), ("--payload-monotonic", payload_monotonic or None)) if v is not None]
    if not chosen:
        raise UsageError("one of the arguments --record-size --payload-file --payload-monotonic is required")
    if len(chosen) > 1:
        raise UsageError(f"argument {chosen[1]}: not allowed with argument {chosen[0]}")
    if values and producer_props is None:
        raise UsageError(f"unrecognized arguments: '{' '.join(values)}'")
    if producer_props is None and producer_config is None:
        raise UsageError("Either --producer-props or --producer.config must be specified.")
    if record_size is not None and record_size < 0:
        raise UsageError(f"argument --record-size: invalid size {record_size}")
    delimiter = "\n" if payload_delimiter == "\\n" else payload_delimiter
    transactions = transaction_duration_ms > 0
    props = read_props([*(producer_props or []), *(values or [])], producer_config, transactional_id if transactions else None)
    run(topic, num_records, record_size, payload_file, delimiter, payload_monotonic, throughput, props, print_metrics,
        transaction_duration_ms if transactions else 0)


def read_props(items: list[str], producer_config: str | None, transactional_id: str | None = None) -> dict[str, str]:
    """ProducerPerformance.readProps: the file, then ``k=v`` items (exactly one ``=`` each), then
    the transactional id when transactions are on."""
    from kcli.config import read_properties
    from kcli.errors import UsageError

    props = dict(read_properties(producer_config)) if producer_config else {}
    for item in items:
        pieces = item.split("=")
        while len(pieces) > 1 and pieces[-1] == "":
            pieces.pop()  # Java's String.split drops trailing empty pieces
        if len(pieces) != 2:
            raise UsageError(f"Invalid property: {item}")
        props[pieces[0]] = pieces[1]
    props["key.serializer"] = props["value.serializer"] = "org.apache.kafka.common.serialization.ByteArraySerializer"
    if transactional_id is not None:
        props["transactional.id"] = transactional_id
    props.setdefault("client.id", "perf-producer-client")
    return props


def read_payloads(path: str, delimiter: str) -> list[bytes]:
    import os
    import re

    from kcli.errors import KcliError

    absolute = os.path.abspath(path)
    Output().now(f"Reading payloads from: {absolute}")
    if not os.path.isfile(absolute) or os.path.getsize(absolute) == 0:
        raise KcliError("File does not exist or empty file provided.")
    from kcli.input_files import PAYLOADS, read_bytes
    from kcli.java_compat import split

    text = read_bytes(absolute, "payload file", PAYLOADS).decode("utf-8", "replace")

    try:
        pieces = split(text, re.compile(delimiter))
    except re.error as exc:
        raise KcliError(f"--payload-delimiter is not a valid regular expression: {exc}") from None
    Output().now(f"Number of messages read: {len(pieces)}")
    return [piece.encode("utf-8") for piece in pieces]


def random_payloads(size: int, count: int) -> list[bytes]:
    """``count`` distinct payloads of ``size`` random letters A-Z."""
    import os

    letters = bytes(65 + i % 26 for i in range(256))
    block = os.urandom(size * count).translate(letters)
    return [block[i * size : (i + 1) * size] for i in range(count)]


# -- measuring ---------------------------------------------------------------------------------------


class Stats:
    """Kafka's ProducerPerformance.Stats: totals, a window printed every interval, samples."""

    def __init__(self, num_records: int, reporting_interval_ms: int, now_ms: int, write) -> None:  # type: ignore[no-untyped-def]
        self.start = now_ms
        self.window_start = now_ms
        self.sampling = num_records // min(num_records, MAX_SAMPLES) if num_records > 0 else 1
        self.latencies: list[int] = []
        self.iteration = 0
        self.count = 0
        self.bytes = 0
        self.max_latency = 0
        self.total_latency = 0
        self.window_count = 0
        self.window_max_latency = 0
        self.window_total_latency = 0
        self.window_bytes = 0
        self.reporting_interval = reporting_interval_ms
        self._write = write

    def record(self, latency: int, size: int, now_ms: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency
        if latency > self.max_latency:
            self.max_latency = latency
        self.window_count += 1
        self.window_bytes += size
        self.window_total_latency += latency
        if latency > self.window_max_latency:
            self.window_max_latency = latency
        if self.iteration % self.sampling == 0:
            self.latencies.append(latency)
        self.iteration += 1
        if now_ms - self.window_start >= self.reporting_interval:
            self.print_window(now_ms)
            self.new_window(now_ms)

    def print_window(self, now_ms: int) -> None:
        elapsed = now_ms - self.window_start
        records_per_sec = 1000.0 * self.window_count / elapsed if elapsed else _ratio(self.window_count)
        mb_per_sec = 1000.0 * self.window_bytes / elapsed / (1024.0 * 1024.0) if elapsed else _ratio(self.window_bytes)
        average = self.window_total_latency / self.window_count if self.window_count else float("nan")
        self._write(
            f"{self.window_count} records sent, {format_fixed(records_per_sec, 1)} records/sec ({format_fixed(mb_per_sec, 2)} MB/sec), "
            f"{format_fixed(average, 1)} ms avg latency, {format_fixed(float(self.window_max_latency), 1)} ms max latency."
        )

    def new_window(self, now_ms: int) -> None:
        self.window_start = now_ms
        self.window_count = 0
        self.window_max_latency = 0
        self.window_total_latency = 0
        self.window_bytes = 0

    def total_line(self, now_ms: int) -> str:
        elapsed = now_ms - self.start
        records_per_sec = 1000.0 * self.count / elapsed if elapsed else _ratio(self.count)
        mb_per_sec = 1000.0 * self.bytes / elapsed / (1024.0 * 1024.0) if elapsed else _ratio(self.bytes)
        average = self.total_latency / self.count if self.count else float("nan")
        p50, p95, p99, p999 = percentiles(self.latencies, 0.5, 0.95, 0.99, 0.999)
        return (
            f"{self.count} records sent, {format_fixed(records_per_sec, 6)} records/sec ({format_fixed(mb_per_sec, 2)} MB/sec), "
            f"{format_fixed(average, 2)} ms avg latency, {format_fixed(float(self.max_latency), 2)} ms max latency, "
            f"{p50} ms 50th, {p95} ms 95th, {p99} ms 99th, {p999} ms 99.9th."
        )


def _ratio(amount: float) -> float:
    """Java's ``x / 0.0``."""
    return float("nan") if amount == 0 else float("inf")


def percentiles(latencies: list[int], *fractions: float) -> list[int]:
    """Kafka's pick: the sorted sample at index ``int(p * size)`` (0 when there is no sample,
    where Java's zero-filled array answers 0 too)."""
    values = sorted(latencies)
    size = len(values)
    return [values[int(p * size)] if size else 0 for p in fractions]


class Throttler:
    """Kafka's ThroughputThrottler, for records/s."""

    MIN_SLEEP_NS = 2_000_000

    def __init__(self, target: float, start_ms: int) -> None:
        self.start_ms = start_ms
        self.target = target
        self.sleep_time_ns = int(1_000_000_000 / target) if target > 0 else None
        self.deficit_ns = 0

    def should_throttle(self, amount_so_far: int, send_start_ms: int) -> bool:
        if self.target < 0:
            return False
        elapsed = (send_start_ms - self.start_ms) / 1000.0
        return elapsed > 0 and amount_so_far / elapsed > self.target

    async def throttle(self) -> None:
        import asyncio

        if self.sleep_time_ns is None:  # a target of 0: Kafka waits forever
            await asyncio.Event().wait()
            return
        self.deficit_ns += self.sleep_time_ns
        if self.deficit_ns >= self.MIN_SLEEP_NS:
            await asyncio.sleep(self.deficit_ns / 1e9)
            self.deficit_ns = 0


# -- running -----------------------------------------------------------------------------------------


def run(
    topic: str, num_records: int, record_size: int | None, payload_file: str | None, delimiter: str,
    monotonic: bool, throughput: float, props: dict[str, str], print_metrics: bool, transaction_duration_ms: int = 0,
) -> None:
    from kcli.client.sync import SyncRunner

    payloads = read_payloads(payload_file, delimiter) if payload_file is not None else None
    with SyncRunner() as runner:
        runner.run(_perf(topic, num_records, record_size, payloads, monotonic, throughput, props, print_metrics, transaction_duration_ms))


async def _perf(
    topic: str, num_records: int, record_size: int | None, file_payloads: list[bytes] | None,
    monotonic: bool, throughput: float, props: dict[str, str], print_metrics: bool, transaction_duration_ms: int,
) -> None:
    import random
    import time

    from kcli.client.producer import Producer
    from kcli.errors import KafkaError, KcliError
    from kcli.tools.console_producer import producer_config_warning

    def write(line: str) -> None:
        Output().now(line)

    producer = Producer.from_properties(None, props, warn=producer_config_warning)
    max_request_size = producer.config.max_request_size
    if record_size is not None and record_size > max_request_size:
        # Checked before the payloads are made: a 2 GiB --record-size would otherwise be allocated
        # only for the producer to refuse every record.
        raise KcliError(f"--record-size {record_size} is larger than {max_request_size}, the value of the max.request.size "
                        "configuration: the producer would refuse every record")
    if record_size is not None:
        payloads = random_payloads(record_size, max(1, min(num_records, 16384, (64 << 20) // max(record_size, 1))))
    else:
        payloads = file_payloads or []
    rng = random.Random(0)
    failure: list[str] = []
    transactions = transaction_duration_ms > 0
    try:
        await producer.start()
        if transactions:
            await producer.init_transactions()
        now_ms = time.time_ns() // 1_000_000
        stats = Stats(num_records, REPORTING_INTERVAL_MS, now_ms, write)
        throttler = Throttler(throughput, now_ms)
        record = stats.record
        clock = time.time_ns

        def acknowledged(future, start_ms: int, size: int) -> None:  # type: ignore[no-untyped-def]
            if future.exception() is None:
                now = clock() // 1_000_000
                record(now - start_ms, size, now)
            elif not failure:
                failure.append(str(future.exception()))

        send = producer.send
        count = len(payloads)
        throttled = throughput >= 0
        in_transaction = 0  # records sent in the open transaction
        transaction_start = 0
        for i in range(num_records):
            if monotonic:
                payload = str(i).encode()
            elif record_size is not None:
                payload = payloads[i % count]
            else:
                payload = payloads[rng.randrange(count)]
            if transactions and not in_transaction:
                producer.begin_transaction()
                transaction_start = clock() // 1_000_000
            start_ms = clock() // 1_000_000
            try:
                future = await send(topic, payload)
            except KafkaError as exc:
                failure.append(str(exc))
                break
            future.add_done_callback(acknowledged, start_ms, len(payload))
            if failure:
                break
            in_transaction += 1
            if transactions and transaction_duration_ms <= start_ms - transaction_start:
                await producer.commit_transaction()
                in_transaction = 0
            if throttled and throttler.should_throttle(i, start_ms):
                await throttler.throttle()
        if transactions and in_transaction and not failure:
            await producer.commit_transaction()
        await producer.flush()
        write(stats.total_line(clock() // 1_000_000))
        if print_metrics:
            print_metric_table(producer, write)
    finally:
        await producer.close()
    if failure:
        raise KcliError(failure[0])


def print_metric_table(producer, write) -> None:  # type: ignore[no-untyped-def]
    """ToolsUtils.printMetrics: ``group:name:{tags}`` sorted, doubles with three decimals."""
    tags = "{client-id=" + producer.cluster.client_id + "}"
    rows = sorted((f"producer-metrics:{name}:{tags}", value) for name, value in producer.metrics.as_dict().items())
    width = max(len(name) for name, _ in rows)
    write("")
    write(f"{'Metric Name':<{width}}   Value")
    for name, value in rows:
        write(f"{name:<{width}} : {format_fixed(value, 3)}")
