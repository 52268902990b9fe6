"""``kcli consumer-perf-test``: Kafka's kafka-consumer-perf-test.sh (Kafka 3.9's ConsumerPerformance).

The consumer joins ``--group`` (default ``perf-consumer-<random>``), subscribes to ``--topic`` (or,
beyond Kafka 3.9, to the topics matching the regex ``--include``) and polls until ``--messages``
records were read or ``--timeout`` ms passed without one. It starts from the earliest offset unless
``--from-latest`` (when the group has no committed offset), reads with ``max.partition.fetch.bytes``
= ``--fetch-size`` and without CRC checks, as Kafka's tool does; ``--consumer.config`` gives further
consumer properties. ``--threads`` and ``--num-fetch-threads`` are accepted and ignored, with
Kafka's warning; ``--socket-buffer-size`` is accepted (kcli leaves socket buffers to the OS).

Output on stdout, as Kafka prints it::

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    2024-01-01 10:00:00:000, 2024-01-01 10:00:03:210, 95.3674, 29.7095, 1000000, 311526.4798, 312, 2898, 32.9080, 345065.5624

MB are MiB of keys plus values; rebalance.time.ms is the time spent joining the group;
fetch.time.ms the rest. With ``--show-detailed-stats`` a line per ``--reporting-interval``
replaces the summary (``time, threadId, ...``). ``--print-metrics`` appends the consumer's metrics
in Kafka's ``Metric Name   Value`` table.

``--output json`` (beyond Kafka) prints JSON objects instead, one per line, and no header; rates
that Kafka prints as NaN or Infinity are null; Kafka's timeout WARNING goes to stderr::

    {"type":"progress","time_ms":int,"thread_id":0,"data_consumed_mb":float,"mb_per_sec":float,"messages":int,
     "messages_per_sec":float,"rebalance_time_ms":int,"fetch_time_ms":int,"fetch_mb_per_sec":float,
     "fetch_messages_per_sec":float}                      (with --show-detailed-stats, per interval)
    {"type":"result","start_time_ms":int,"end_time_ms":int,"data_consumed_mb":float,"mb_per_sec":float,
     "messages":int,"messages_per_sec":float,"rebalance_time_ms":int,"fetch_time_ms":int,
     "fetch_mb_per_sec":float,"fetch_messages_per_sec":float}   (always, last but for metrics)
    {"type":"metrics","metrics":{"group:name:{tags}":float,...}}  (with --print-metrics)
"""

from __future__ import annotations

import datetime
import json
import math
import random
import re
import time
from collections.abc import Mapping
from typing import Annotated, Any, Optional

import typer

from kcli.java_compat import format_fixed
from kcli.output import Format, Output
from kcli.tools.int_options import INT32, INT64
from kcli.tools.options import BootstrapServerOpt, BrokerListOpt

DEFAULT_DATE_FORMAT = "yyyy-MM-dd HH:mm:ss:SSS"
DEFAULT_FETCH_SIZE = 1024 * 1024
DEFAULT_SOCKET_BUFFER = 2 * 1024 * 1024
DEFAULT_TIMEOUT_MS = 10_000
DEFAULT_REPORTING_INTERVAL_MS = 5_000
CLIENT_ID = "perf-consumer-client"
POLL_TIMEOUT = 0.1  # Kafka polls with Duration.ofMillis(100)
HEADER_EXTRA = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"


def register(app: typer.Typer) -> None:
    app.command(
        "consumer-perf-test",
        help="This tool is used to verify the consumer performance.",
        no_args_is_help=True,
    )(consumer_perf_test)


def consumer_perf_test(
    bootstrap_server: BootstrapServerOpt = None,
    broker_list: BrokerListOpt = None,
    topic: Annotated[Optional[str], typer.Option("--topic", help="REQUIRED: The topic to consume from.")] = None,
    include: Annotated[Optional[str], typer.Option("--include", help="Regular expression specifying list of topics to include for consumption (instead of --topic).")] = None,
    group: Annotated[Optional[str], typer.Option("--group", help="The group id to consume on. (default: perf-consumer-<random>)")] = None,
    fetch_size: Annotated[int, typer.Option("--fetch-size", click_type=INT32, help="The amount of data to fetch in a single request.")] = DEFAULT_FETCH_SIZE,
    from_latest: Annotated[bool, typer.Option("--from-latest", help="If the consumer does not already have an established offset to consume from, start with the latest message present in the log rather than the earliest message.")] = False,
    socket_buffer_size: Annotated[int, typer.Option("--socket-buffer-size", click_type=INT32, help="The size of the tcp RECV size.")] = DEFAULT_SOCKET_BUFFER,
    threads: Annotated[Optional[int], typer.Option("--threads", click_type=INT32, help="DEPRECATED AND IGNORED: Number of processing threads. (default: 10)")] = None,
    num_fetch_threads: Annotated[Optional[int], typer.Option("--num-fetch-threads", click_type=INT32, help="DEPRECATED AND IGNORED: Number of fetcher threads. (default: 1)")] = None,
    consumer_config: Annotated[Optional[str], typer.Option("--consumer.config", help="Consumer config properties file.")] = None,
    print_metrics: Annotated[bool, typer.Option("--print-metrics", help="Print out the metrics.")] = False,
    show_detailed_stats: Annotated[bool, typer.Option("--show-detailed-stats", help="If set, stats are reported for each reporting interval as configured by reporting-interval")] = False,
    timeout: Annotated[int, typer.Option("--timeout", click_type=INT64, help="The maximum allowed time in milliseconds between returned records.")] = DEFAULT_TIMEOUT_MS,
    messages: Annotated[Optional[int], typer.Option("--messages", click_type=INT64, help="REQUIRED: The number of messages to send or consume")] = None,
    reporting_interval: Annotated[str, typer.Option("--reporting-interval", help="Interval in milliseconds at which to print progress info.")] = str(DEFAULT_REPORTING_INTERVAL_MS),
    date_format: Annotated[str, typer.Option("--date-format", help="The date format to use for formatting the time field. See java.text.SimpleDateFormat for options.")] = DEFAULT_DATE_FORMAT,
    hide_header: Annotated[bool, typer.Option("--hide-header", help="If set, skips printing the header for the stats")] = False,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's lines; json: one JSON object per report, the result and the metrics.")] = Format.plain,
) -> None:
    from kcli.errors import UsageError

    servers = bootstrap_server if bootstrap_server is not None else broker_list
    if servers is None:
        raise UsageError("Missing required option(s) [bootstrap-server]")
    if not re.fullmatch(r"\d+", reporting_interval):
        raise UsageError(f"Value [{reporting_interval}] did not match regex [^\\d+$]")
    if threads is not None or num_fetch_threads is not None:
        Output().now("WARNING: option [threads] and [num-fetch-threads] have been deprecated and will be ignored by the test")
    if topic is None and include is None:
        raise UsageError('Missing required argument "[topic]"')
    if topic is not None and include is not None:
        raise UsageError("Exactly one of --topic or --include may be given")
    if messages is None:
        raise UsageError('Missing required argument "[messages]"')
    formatter = JavaDateFormat(date_format)
    props = _consumer_props(servers, consumer_config, group, fetch_size, from_latest, socket_buffer_size)
    options = PerfOptions(
        topic=topic, include=include, messages=messages, timeout_ms=timeout, reporting_interval_ms=int(reporting_interval),
        show_detailed_stats=show_detailed_stats, hide_header=hide_header, print_metrics=print_metrics, date_format=formatter,
        json=output is Format.json,
    )
    run(options, props)


def _consumer_props(servers: str, config_file: str | None, group: str | None, fetch_size: int, from_latest: bool, socket_buffer_size: int) -> dict[str, str]:
    """ConsumerPerfOptions.props(): the file's properties, then the tool's own on top."""
    props: dict[str, str] = {}
    if config_file is not None:
        from kcli.config import read_properties

        props.update(read_properties(config_file))
    props["bootstrap.servers"] = servers
    props["group.id"] = group if group is not None else f"perf-consumer-{random.randrange(100_000)}"
    props["receive.buffer.bytes"] = str(socket_buffer_size)
    props["max.partition.fetch.bytes"] = str(fetch_size)
    props["auto.offset.reset"] = "latest" if from_latest else "earliest"
    props["check.crcs"] = "false"
    props.setdefault("client.id", CLIENT_ID)
    return props


class PerfOptions:
    def __init__(self, *, topic: str | None, include: str | None, messages: int, timeout_ms: int, reporting_interval_ms: int,
                 show_detailed_stats: bool, hide_header: bool, print_metrics: bool, date_format: JavaDateFormat, json: bool = False) -> None:
        self.topic = topic
        self.include = include
        self.messages = messages
        self.timeout_ms = timeout_ms
        self.reporting_interval_ms = reporting_interval_ms
        self.show_detailed_stats = show_detailed_stats
        self.hide_header = hide_header
        self.print_metrics = print_metrics
        self.date_format = date_format
        self.json = json


def print_header(show_detailed_stats: bool) -> None:
    if not show_detailed_stats:
        Output().now(f"start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec{HEADER_EXTRA}")
    else:
        Output().now(f"time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec{HEADER_EXTRA}")


def run(options: PerfOptions, props: dict[str, str]) -> None:
    from kcli.client.sync import SyncRunner
    from kcli.errors import KcliError

    if not options.hide_header and not options.json:
        print_header(options.show_detailed_stats)
    if options.reporting_interval_ms <= 0:
        raise KcliError("Reporting interval must be greater than 0.")
    perf = _Perf(options, props)
    with SyncRunner() as runner:
        runner.run(perf.main())


class _Perf:
    """ConsumerPerformance.main and consume, on kcli's consumer."""

    def __init__(self, options: PerfOptions, props: dict[str, str]) -> None:
        self.options = options
        self.props = props
        self.join_time_ms = 0
        self.join_time_single_round = [0]  # Kafka's AtomicLong: the loop swaps its own for a new one
        self.join_start_ms = 0

    async def main(self) -> None:
        from kcli.client.consumer import Consumer
        from kcli.client.network_client import NetworkClient
        from kcli.tools._admin_common import client_settings

        settings = client_settings(self.props, client_id=CLIENT_ID, warn=lambda _line: None)
        start_ms = _now_ms()
        self.join_start_ms = start_ms
        cluster = NetworkClient(**settings)
        try:
            # A server that is down or is not a broker: one line and exit 1, within --timeout.
            await cluster.any_connection(timeout=self.options.timeout_ms / 1000, timeout_setting="--timeout")
            consumer = Consumer.from_properties(cluster, self.props, warn=_config_warning)
            try:
                total_messages, total_bytes = await self.consume(consumer)
                end_ms = _now_ms()
                metrics = consumer.metrics() if self.options.print_metrics else None
            finally:
                await consumer.close()
        finally:
            await cluster.close()
        elapsed_sec = (end_ms - start_ms) / 1000.0
        fetch_time_ms = (end_ms - start_ms) - self.join_time_ms
        total_mb = total_bytes / (1024 * 1024)
        rates = (
            _div(total_mb, elapsed_sec), _div(total_messages, elapsed_sec),
            _div(total_mb, fetch_time_ms / 1000.0), _div(total_messages, fetch_time_ms / 1000.0),
        )
        out = Output()
        if self.options.json:
            out.line(_json({
                "type": "result", "start_time_ms": start_ms, "end_time_ms": end_ms, "data_consumed_mb": total_mb, "mb_per_sec": rates[0],
                "messages": total_messages, "messages_per_sec": rates[1], "rebalance_time_ms": self.join_time_ms,
                "fetch_time_ms": fetch_time_ms, "fetch_mb_per_sec": rates[2], "fetch_messages_per_sec": rates[3],
            }))
            if metrics:
                out.line(_json({"type": "metrics", "metrics": metrics}))
        else:
            if not self.options.show_detailed_stats:
                fmt = self.options.date_format
                out.line(", ".join([
                    fmt.format(start_ms), fmt.format(end_ms), java_f4(total_mb), java_f4(rates[0]), str(total_messages),
                    java_f4(rates[1]), str(self.join_time_ms), str(fetch_time_ms), java_f4(rates[2]), java_f4(rates[3]),
                ]))
            if metrics:
                print_metrics(metrics, out)
        out.flush()

    def _on_revoke(self, _partitions: Any) -> None:
        self.join_start_ms = _now_ms()

    def _on_assign(self, _partitions: Any) -> None:
        elapsed = _now_ms() - self.join_start_ms
        self.join_time_ms += elapsed
        self.join_time_single_round[0] += elapsed

    async def consume(self, consumer: Any) -> tuple[int, int]:
        options = self.options
        if options.topic is not None:
            await consumer.subscribe(topics=[options.topic], on_revoke=self._on_revoke, on_assign=self._on_assign)
        else:
            await consumer.subscribe(pattern=options.include, on_revoke=self._on_revoke, on_assign=self._on_assign)
        bytes_read = messages_read = last_bytes_read = last_messages_read = 0
        single_round = self.join_time_single_round
        current_ms = _now_ms()
        last_report_ms = last_consumed_ms = current_ms
        detailed = options.show_detailed_stats
        interval = options.reporting_interval_ms
        while messages_read < options.messages and current_ms - last_consumed_ms <= options.timeout_ms:
            records = await consumer.poll(POLL_TIMEOUT)
            current_ms = _now_ms()
            if records:
                last_consumed_ms = current_ms
            if current_ms - last_report_ms < interval:
                # No report falls inside this batch: count it without looking at each record's clock.
                messages_read += len(records)
                for record in records:
                    if record.key is not None:
                        bytes_read += len(record.key)
                    if record.value is not None:
                        bytes_read += len(record.value)
                continue
            for record in records:
                messages_read += 1
                if record.key is not None:
                    bytes_read += len(record.key)
                if record.value is not None:
                    bytes_read += len(record.value)
                if current_ms - last_report_ms >= interval:
                    if detailed:
                        print_progress(0, bytes_read, last_bytes_read, messages_read, last_messages_read, last_report_ms, current_ms,
                                       options.date_format, single_round[0], as_json=options.json)
                    single_round = [0]  # as Kafka: the listener keeps adding to the old counter
                    last_report_ms = current_ms
                    last_messages_read = messages_read
                    last_bytes_read = bytes_read
        if messages_read < options.messages:
            warning = (f"WARNING: Exiting before consuming the expected number of messages: timeout ({options.timeout_ms} ms) exceeded. "
                       "You can use the --timeout option to increase the timeout.")
            # Kafka prints it on stdout; with --output json stdout holds JSON objects only.
            if options.json:
                Output().diag(warning)
            else:
                Output().now(warning)
        return messages_read, bytes_read


def print_progress(thread_id: int, bytes_read: int, last_bytes_read: int, messages_read: int, last_messages_read: int,
                   start_ms: int, end_ms: int, date_format: JavaDateFormat, join_time_single_round: int, *, as_json: bool = False) -> None:
    """printConsumerProgress: the basic and the extended part on one line."""
    elapsed_ms = float(end_ms - start_ms)
    total_mb = bytes_read / (1024 * 1024)
    interval_mb = (bytes_read - last_bytes_read) / (1024 * 1024)
    interval_mb_sec = _div(1000.0 * interval_mb, elapsed_ms)
    interval_msg_sec = _div(float(messages_read - last_messages_read), elapsed_ms) * 1000.0
    fetch_time_ms = end_ms - start_ms - join_time_single_round
    fetch_mb_sec = 0.0 if fetch_time_ms <= 0 else 1000.0 * interval_mb / fetch_time_ms
    fetch_msg_sec = 0.0 if fetch_time_ms <= 0 else 1000.0 * (messages_read - last_messages_read) / fetch_time_ms
    if as_json:
        Output().now(_json({
            "type": "progress", "time_ms": end_ms, "thread_id": thread_id, "data_consumed_mb": total_mb, "mb_per_sec": interval_mb_sec,
            "messages": messages_read, "messages_per_sec": interval_msg_sec, "rebalance_time_ms": join_time_single_round,
            "fetch_time_ms": fetch_time_ms, "fetch_mb_per_sec": fetch_mb_sec, "fetch_messages_per_sec": fetch_msg_sec,
        }))
        return
    Output().now(", ".join([
        date_format.format(end_ms), str(thread_id), java_f4(total_mb), java_f4(interval_mb_sec), str(messages_read), java_f4(interval_msg_sec),
        str(join_time_single_round), str(fetch_time_ms), java_f4(fetch_mb_sec), java_f4(fetch_msg_sec),
    ]))


def _json(value: dict[str, Any]) -> str:
    def finite(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        return v

    return json.dumps(finite(value), separators=(",", ":"))


def print_metrics(metrics: Mapping[str, Any], out: Output) -> None:
    """ToolsUtils.printMetrics: names sorted, doubles as %.3f, padded to the longest name."""
    if not metrics:
        return
    width = max(len(name) for name in metrics)
    out.line("")
    out.line(f"{'Metric Name':<{width}}   Value")
    for name in sorted(metrics):
        value = metrics[name]
        text = format_fixed(value, 3) if isinstance(value, float) else str(value)
        out.line(f"{name:<{width}} : {text}")


def _div(a: float, b: float) -> float:
    """Java's double division: x/0 is +-Infinity, 0/0 is NaN."""
    if b == 0:
        if a == 0 or a != a:
            return float("nan")
        return math.copysign(float("inf"), a) * math.copysign(1.0, b)
    return a / b


def java_f4(value: float) -> str:
    return format_fixed(value, 4)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _config_warning(message: str) -> None:
    Output().log4j("WARN", message, "org.apache.kafka.clients.consumer.ConsumerConfig")


# -- java.text.SimpleDateFormat --------------------------------------------------------------------

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_PATTERN_LETTERS = "GyYMLwWDdFEuaHkKhmsSzZX"


class JavaDateFormat:
    """The parts of SimpleDateFormat's patterns a date format needs, in the local time zone.

    Letters: G y Y M L w W D d F E u a H k K h m s S z Z X; text in single quotes ('' is a quote).
    Other ASCII letters are refused, as Java refuses them.
    """

    def __init__(self, pattern: str) -> None:
        from kcli.errors import UsageError

        self.pattern = pattern
        self.tokens: list[tuple[str, int] | str] = []
        i = 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == "'":
                end = i + 1
                text = []
                while True:
                    j = pattern.find("'", end)
                    if j < 0:
                        raise UsageError(f"Unterminated quote in date format {pattern!r}")
                    if j + 1 < len(pattern) and pattern[j + 1] == "'":
                        text.append(pattern[end:j] + "'")
                        end = j + 2
                        continue
                    text.append(pattern[end:j])
                    break
                if j == i + 1:
                    self.tokens.append("'")
                else:
                    self.tokens.append("".join(text))
                i = j + 1
            elif ch.isascii() and ch.isalpha():
                if ch not in _PATTERN_LETTERS:
                    raise UsageError(f"Illegal pattern character '{ch}'")
                n = 1
                while i + n < len(pattern) and pattern[i + n] == ch:
                    n += 1
                self.tokens.append((ch, n))
                i += n
            else:
                self.tokens.append(ch)
                i += 1

    def format(self, epoch_ms: int) -> str:
        moment = datetime.datetime.fromtimestamp(epoch_ms / 1000).astimezone()
        moment = moment.replace(microsecond=(epoch_ms % 1000) * 1000)
        return "".join(t if isinstance(t, str) else _field(moment, *t) for t in self.tokens)


def _num(value: int, width: int) -> str:
    return str(value).zfill(width)


def _field(m: datetime.datetime, letter: str, n: int) -> str:
    if letter == "G":
        return "AD"
    if letter in "yY":
        year = m.isocalendar()[0] if letter == "Y" else m.year
        return _num(year % 100, 2) if n == 2 else _num(year, n)
    if letter in "ML":
        if n >= 4:
            return _MONTHS[m.month - 1]
        if n == 3:
            return _MONTHS[m.month - 1][:3]
        return _num(m.month, n)
    if letter == "w":
        return _num(int(m.strftime("%U")) + 1, n)
    if letter == "W":
        return _num((m.day + m.replace(day=1).weekday()) // 7 + 1, n)
    if letter == "D":
        return _num(m.timetuple().tm_yday, n)
    if letter == "d":
        return _num(m.day, n)
    if letter == "F":
        return _num((m.day - 1) // 7 + 1, n)
    if letter == "E":
        name = _DAYS[m.weekday()]
        return name if n >= 4 else name[:3]
    if letter == "u":
        return _num(m.isoweekday(), n)
    if letter == "a":
        return "AM" if m.hour < 12 else "PM"
    if letter == "H":
        return _num(m.hour, n)
    if letter == "k":
        return _num(m.hour or 24, n)
    if letter == "K":
        return _num(m.hour % 12, n)
    if letter == "h":
        return _num(m.hour % 12 or 12, n)
    if letter == "m":
        return _num(m.minute, n)
    if letter == "s":
        return _num(m.second, n)
    if letter == "S":
        return _num(m.microsecond // 1000, n)
    offset = m.utcoffset() or datetime.timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    hh, mm = divmod(abs(minutes), 60)
    if letter == "z":
        return m.tzname() or f"GMT{sign}{hh:02d}:{mm:02d}"
    if letter == "Z":
        return f"{sign}{hh:02d}{mm:02d}"
    # X: ISO 8601 zone; Z for UTC
    if minutes == 0:
        return "Z"
    if n == 1:
        return f"{sign}{hh:02d}"
    if n == 2:
        return f"{sign}{hh:02d}{mm:02d}"
    return f"{sign}{hh:02d}:{mm:02d}"
