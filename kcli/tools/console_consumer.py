"""``kcli console-consumer``: Kafka's kafka-console-consumer.sh, with Kafka 3.9's flags, checks and output.

Records go to stdout through a message formatter (``message_formatters.py``; the default one prints
values, and keys, timestamps, partitions, offsets and headers on request with ``--property``). The
consumer subscribes to ``--topic`` or to the topics matching ``--include`` (2.x: ``--whitelist``),
or, with ``--partition``, is assigned that one partition and starts at ``--offset``. Without
``--group`` it joins a group named ``console-consumer-<random>`` and commits nothing, as Kafka does;
with ``--group`` it commits its positions when it stops (and every ``auto.commit.interval.ms``)
unless ``enable.auto.commit=false``.

It stops after ``--max-messages``, after ``--timeout-ms`` without a record (logging Kafka's ERROR
line about the TimeoutException), or on SIGINT/SIGTERM. In every case it puts records fetched but
not printed back (so a commit does not skip them), commits when the group does, leaves the group,
and prints ``Processed a total of N messages`` on stderr. Exit status: 0 after max-messages or a
timeout; 130 after SIGINT and 143 after SIGTERM, as the JVM exits on those signals; 1 after an
error (Kafka logs a failed fetch and exits 0; kcli prints ``Error: ...`` and exits 1). A record
the formatter cannot write (a failing deserializer) stops the consumer, or with
``--skip-message-on-error`` is logged and skipped; that flag also skips a corrupt record batch
(logged), which Kafka's consumer cannot get past.

Formatter bytes go to stdout unchanged (Kafka writes them with no charset conversion), so this
tool writes stdout as bytes rather than through ``kcli.output.Output``'s text lines.

``--output json`` (beyond Kafka) prints one JSON object per record instead of the formatter's
output, in the shape of ``kcli.tools.record_json`` (which ``console-producer --input json`` reads
back, so a consume -> produce round trip loses nothing)::

    {"topic":"orders","partition":0,"offset":42,"timestamp":1700000000000,"timestampType":"CreateTime",
     "key":"k1","value":"v1","headers":[{"key":"h","value":"x"}]}

Keys, values and header values are ``null``, a UTF-8 string, or ``{"base64": "..."}``.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Mapping
from typing import Annotated, Any, Optional

import typer

from kcli.output import BytesOutput, Format, Output
from kcli.tools.int_options import INT32, NON_NEGATIVE_INT32
from kcli.tools.options import BootstrapServerOpt

DEFAULT_FORMATTER = "org.apache.kafka.tools.consumer.DefaultMessageFormatter"
EARLIEST = -2  # ListOffsetsRequest.EARLIEST_TIMESTAMP, as Kafka's options hold it
LATEST = -1
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
LONG_MAX = 2**63 - 1
# How long one poll waits when no --timeout-ms bounds it; any value works, a signal ends it early.
POLL_SLICE = 1.0
# With --timeout-ms, a poll still running this long after its timeout is given up.
POLL_GRACE = 0.5

PROPERTY_HELP = (
    "The properties to initialize the message formatter. Default properties include: \n"
    " print.timestamp=true|false\n print.key=true|false\n print.offset=true|false\n"
    " print.partition=true|false\n print.headers=true|false\n print.value=true|false\n"
    " key.separator=<key.separator>\n line.separator=<line.separator>\n"
    " headers.separator=<line.separator>\n null.literal=<null.literal>\n"
    " key.deserializer=<key.deserializer>\n value.deserializer=<value.deserializer>\n"
    " header.deserializer=<header.deserializer>\n\n"
    "Users can also pass in customized properties for their formatter; more specifically, users can pass in "
    "properties keyed with 'key.deserializer.', 'value.deserializer.' and 'headers.deserializer.' prefixes to "
    "configure their deserializers."
)


def register(app: typer.Typer) -> None:
    app.command(
        "console-consumer",
        help="This tool helps to read data from Kafka topics and outputs it to standard output.",
        no_args_is_help=True,
    )(console_consumer)


def console_consumer(
    bootstrap_server: BootstrapServerOpt = None,
    topic: Annotated[Optional[str], typer.Option("--topic", help="The topic to consume on.")] = None,
    whitelist: Annotated[Optional[str], typer.Option("--whitelist", help="DEPRECATED, use --include instead; ignored if --include specified. Regular expression specifying list of topics to include for consumption.")] = None,
    include: Annotated[Optional[str], typer.Option("--include", help="Regular expression specifying list of topics to include for consumption.")] = None,
    partition: Annotated[Optional[int], typer.Option("--partition", click_type=NON_NEGATIVE_INT32, help="The partition to consume from. Consumption starts from the end of the partition unless '--offset' is specified.")] = None,
    offset: Annotated[Optional[str], typer.Option("--offset", help="The offset to consume from (a non-negative number), or 'earliest' which means from beginning, or 'latest' which means from end (default: latest)")] = None,
    consumer_property: Annotated[Optional[list[str]], typer.Option("--consumer-property", help="A mechanism to pass user-defined properties in the form key=value to the consumer.")] = None,
    consumer_config: Annotated[Optional[str], typer.Option("--consumer.config", help="Consumer config properties file. Note that --consumer-property takes precedence over this config.")] = None,
    formatter: Annotated[Optional[str], typer.Option("--formatter", help=f"The name of a class to use for formatting kafka messages for display. (default: {DEFAULT_FORMATTER})")] = None,
    formatter_property: Annotated[Optional[list[str]], typer.Option("--property", help=PROPERTY_HELP)] = None,
    formatter_config: Annotated[Optional[str], typer.Option("--formatter-config", help="Config properties file to initialize the message formatter. Note that --property takes precedence over this config.")] = None,
    from_beginning: Annotated[bool, typer.Option("--from-beginning", help="If the consumer does not already have an established offset to consume from, start with the earliest message present in the log rather than the latest message.")] = False,
    max_messages: Annotated[Optional[int], typer.Option("--max-messages", click_type=INT32, help="The maximum number of messages to consume before exiting. If not set, consumption is continual.")] = None,
    timeout_ms: Annotated[Optional[int], typer.Option("--timeout-ms", click_type=INT32, help="If specified, exit if no message is available for consumption for the specified interval.")] = None,
    skip_message_on_error: Annotated[bool, typer.Option("--skip-message-on-error", help="If there is an error when processing a message, skip it instead of halt.")] = False,
    key_deserializer: Annotated[Optional[str], typer.Option("--key-deserializer", help="deserializer for key")] = None,
    value_deserializer: Annotated[Optional[str], typer.Option("--value-deserializer", help="deserializer for values")] = None,
    enable_systest_events: Annotated[bool, typer.Option("--enable-systest-events", help="Log lifecycle events of the consumer in addition to logging consumed messages. (This is specific for system tests.)")] = False,
    isolation_level: Annotated[Optional[str], typer.Option("--isolation-level", help="Set to read_committed in order to filter out transactional messages which are not committed. Set to read_uncommitted to read all messages. (default: read_uncommitted)")] = None,
    group: Annotated[Optional[str], typer.Option("--group", help="The consumer group id of the consumer.")] = None,
    output: Annotated[Format, typer.Option("--output", help="plain: the formatter's output, as Kafka prints it; json: one JSON object per record (the shape console-producer --input json reads).")] = Format.plain,
) -> None:
    options = parse_options(
        bootstrap_server=bootstrap_server, topic=topic, whitelist=whitelist, include=include, partition=partition,
        offset=offset, consumer_property=consumer_property or [], consumer_config=consumer_config,
        formatter=formatter, formatter_property=formatter_property or [], formatter_config=formatter_config,
        from_beginning=from_beginning, max_messages=max_messages, timeout_ms=timeout_ms,
        skip_message_on_error=skip_message_on_error, key_deserializer=key_deserializer,
        value_deserializer=value_deserializer, enable_systest_events=enable_systest_events,
        isolation_level=isolation_level, group=group, output=output,
    )
    code = run(options)
    if code:
        raise typer.Exit(code)


# -- options ----------------------------------------------------------------------------------------


@dataclasses.dataclass
class ConsumerOptions:
    """The checked command line, as Kafka 3.9's ConsoleConsumerOptions holds it."""

    bootstrap_server: str
    topic: str | None
    include: str | None
    partition: int | None
    offset: int  # EARLIEST, LATEST or an offset; used with a partition only
    consumer_props: dict[str, str]
    formatter: str
    formatter_props: dict[str, str]
    max_messages: int  # -1: no limit
    timeout_ms: int  # LONG_MAX: none
    skip_message_on_error: bool
    enable_systest_events: bool
    json: bool


def parse_key_values(arguments: list[str]) -> dict[str, str]:
    """Kafka's ``CommandLineUtils.parseKeyValueArgs``: split at the first ``=``; no value is ``""``."""
    props: dict[str, str] = {}
    for argument in arguments:
        key, _, value = argument.partition("=")
        props[key] = value
    return props


def parse_options(
    *, bootstrap_server: str | None, topic: str | None, whitelist: str | None, include: str | None,
    partition: int | None, offset: str | None, consumer_property: list[str], consumer_config: str | None,
    formatter: str | None, formatter_property: list[str], formatter_config: str | None, from_beginning: bool,
    max_messages: int | None, timeout_ms: int | None, skip_message_on_error: bool, key_deserializer: str | None,
    value_deserializer: str | None, enable_systest_events: bool, isolation_level: str | None, group: str | None,
    output: Format = Format.plain,
) -> ConsumerOptions:
    """Kafka 3.9's checks, in Kafka's order and with its messages; raises UsageError (or KcliError
    for the auto.offset.reset conflict, which Kafka reports with exit status 1, not as usage)."""
    from kcli.config import read_properties
    from kcli.errors import KcliError, UsageError

    included = include if include is not None else whitelist
    if (topic is None) == (included is None):
        hint = " --whitelist is DEPRECATED use --include instead; ignored if --include specified." if whitelist is not None else ""
        raise UsageError("Exactly one of --include/--topic is required." + hint)
    if partition is not None:
        if topic is None:
            raise UsageError("The topic is required when partition is specified.")
        if from_beginning and offset is not None:
            raise UsageError("Options from-beginning and offset cannot be specified together.")
    elif offset is not None:
        raise UsageError("The partition is required when offset is specified.")
    if bootstrap_server is None:
        raise UsageError('Missing required argument "[bootstrap-server]"')

    from_file = read_properties(consumer_config) if consumer_config is not None else {}
    extra = parse_key_values(consumer_property)
    group_ids: list[str] = []
    for candidate in (group, from_file.get("group.id"), extra.get("group.id")):
        if candidate is not None and candidate not in group_ids:
            group_ids.append(candidate)
    if len(group_ids) > 1:
        from kcli.java_compat import hash_map_order

        # Kafka lists them from a java.util.HashSet, in its iteration order.
        detected = ", ".join(f"'{g}'" for g in hash_map_order(group_ids))
        raise UsageError(
            "The group ids provided in different places (directly using '--group', via '--consumer-property', "
            f"or via '--consumer.config') do not match. Detected group ids: {detected}"
        )
    if group_ids and partition is not None:
        raise UsageError("Options group and partition cannot be specified together.")

    props = {**from_file, **extra}
    if "auto.offset.reset" in props:
        if from_beginning and props["auto.offset.reset"] != "earliest":
            raise KcliError(f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={props['auto.offset.reset']}', please remove one option")
    else:
        props["auto.offset.reset"] = "earliest" if from_beginning else "latest"
    props["bootstrap.servers"] = bootstrap_server
    props.setdefault("client.id", "console-consumer")
    if isolation_level is not None:
        props["isolation.level"] = isolation_level
    else:
        props.setdefault("isolation.level", "read_uncommitted")
    if group_ids:
        props["group.id"] = group_ids[0]
    else:
        props["group.id"] = f"console-consumer-{random.randrange(100000)}"
        # The generated group is not meant to be used again: no commits unless asked for.
        props.setdefault("enable.auto.commit", "false")

    formatter_props = read_properties(formatter_config) if formatter_config is not None else {}
    if key_deserializer:
        formatter_props["key.deserializer"] = key_deserializer
    if value_deserializer:
        formatter_props["value.deserializer"] = value_deserializer
    formatter_props.update(parse_key_values(formatter_property))

    json_output = output is Format.json
    if json_output:
        given = [flag for flag, value in (("--formatter", formatter), ("--property", formatter_property),
                                           ("--formatter-config", formatter_config), ("--key-deserializer", key_deserializer),
                                           ("--value-deserializer", value_deserializer)) if value]
        if given:
            raise UsageError(f"--output json writes every record field as it is and cannot be used with {', '.join(given)}")

    return ConsumerOptions(
        bootstrap_server=bootstrap_server,
        topic=topic,
        include=None if topic is not None else included,
        partition=partition,
        offset=parse_offset(offset, from_beginning),
        consumer_props=props,
        formatter=formatter or DEFAULT_FORMATTER,
        formatter_props=formatter_props,
        max_messages=max_messages if max_messages is not None else -1,
        timeout_ms=timeout_ms if timeout_ms is not None and timeout_ms >= 0 else LONG_MAX,
        skip_message_on_error=skip_message_on_error,
        enable_systest_events=enable_systest_events,
        json=json_output,
    )


_LONG = re.compile(r"[+-]?[0-9]+")


def parse_offset(text: str | None, from_beginning: bool) -> int:
    from kcli.errors import UsageError

    if text is None:
        return EARLIEST if from_beginning else LATEST
    lowered = text.lower()
    if lowered == "earliest":
        return EARLIEST
    if lowered == "latest":
        return LATEST
    if _LONG.fullmatch(text):
        value = int(text)
        if 0 <= value <= LONG_MAX:
            return value
    raise UsageError(f"The provided offset value '{text}' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long.")


# -- running -----------------------------------------------------------------------------------------


def _stderr(text: str) -> None:
    Output().diag(text)


def run(options: ConsumerOptions) -> int:
    """Consume until done; returns the exit status (errors propagate as KcliError)."""
    from kcli.client.network_client import parse_bootstrap
    from kcli.client.sync import SyncRunner
    from kcli.tools.message_formatters import formatter_for

    # Kafka's KafkaConsumer constructor refuses bad addresses before the loop whose end reports
    # the count: an address error is the one line.
    parse_bootstrap(options.consumer_props["bootstrap.servers"])
    formatter = None if options.json else formatter_for(options.formatter, options.formatter_props, warn=_stderr, log=_stderr)
    session = ConsoleConsumerSession(options, formatter, BytesOutput())
    try:
        with SyncRunner() as runner:
            runner.run(session.consume())
    finally:
        _stderr(f"Processed a total of {session.count} messages")
        if options.enable_systest_events:
            session.sink.write(b"shutdown_complete\n")
    return session.exit_code


class ConsoleConsumerSession:
    """Kafka's ConsoleConsumer.process loop on kcli's consumer."""

    def __init__(self, options: ConsumerOptions, formatter: Any, sink: BytesOutput) -> None:
        self.options = options
        self.formatter = formatter
        self.sink = sink
        self.count = 0
        self.exit_code = 0
        self.pending: list[Any] = []  # records polled and not yet handed to the formatter
        self._stop: Any = None

    async def consume(self) -> None:
        import asyncio

        from kcli.client.consumer import Consumer
        from kcli.client.network_client import NetworkClient
        from kcli.tools.stop_signals import Stopped, StopSignals

        asyncio.get_running_loop().set_exception_handler(_ignore_orphaned_answers)
        props = self.options.consumer_props
        from kcli.client.security_config import client_security

        cluster = NetworkClient(
            props["bootstrap.servers"], client_id=props["client.id"], request_timeout=_request_timeout(props), security=client_security(props)
        )
        try:
            with StopSignals() as stop:
                self._stop = stop
                try:
                    # The settings are checked before any connection, as Kafka's ConsumerConfig is.
                    consumer = Consumer.from_properties(cluster, props, warn=_config_warning)
                    timeout_ms = self.options.timeout_ms
                    bounded = None if timeout_ms == LONG_MAX else timeout_ms / 1000
                    try:
                        await stop.until(cluster.any_connection(timeout=bounded, timeout_setting="--timeout-ms"))
                    except BaseException:
                        await consumer.close(commit=False)  # never subscribed: nothing to commit or leave
                        raise
                    await self._consume_on(consumer)
                except Stopped:
                    pass
                finally:
                    self.exit_code = stop.exit_code
        finally:
            await cluster.close()

    async def _consume_on(self, consumer: Any) -> None:
        try:
            await self._stop.until(self._start(consumer))
            await self._process(consumer)
        finally:
            self._reset_unconsumed(consumer)
            await consumer.close(commit=True)

    async def _start(self, consumer: Any) -> None:
        from kcli.client.consumer import TopicPartition

        options = self.options
        if options.topic is not None and options.partition is not None:
            tp = TopicPartition(options.topic, options.partition)
            consumer.assign([tp])
            if options.offset == EARLIEST:
                await consumer.seek_to_beginning([tp])
            elif options.offset == LATEST:
                await consumer.seek_to_end([tp])
            else:
                consumer.seek(tp, options.offset)
        elif options.topic is not None:
            await consumer.subscribe(topics=[options.topic])
        else:
            await consumer.subscribe(pattern=options.include)

    async def _receive(self, consumer: Any) -> None:
        """Fill ``pending`` (Kafka's ConsumerWrapper.receive); raises TimeoutError after --timeout-ms
        without a record."""
        import asyncio
        import time

        from kcli.client.consumer import CorruptConsumerRecordError

        timeout_ms = self.options.timeout_ms
        bounded = timeout_ms != LONG_MAX
        wait = timeout_ms / 1000 if bounded else POLL_SLICE
        started = time.monotonic()
        while not self.pending:
            try:
                poll = consumer.poll(wait)
                if bounded:
                    # Kafka's poll returns empty when the timeout passes during a group join too.
                    poll = asyncio.wait_for(poll, wait + POLL_GRACE)
                self.pending = list(reversed(await self._stop.until(poll)))
            except asyncio.TimeoutError:
                self.pending = []
            except CorruptConsumerRecordError as exc:
                if not self.options.skip_message_on_error:
                    raise
                _log_error("Error processing message, skipping this message: ", f"org.apache.kafka.common.KafkaException: {exc}")
                consumer.skip(exc.topic_partition)
                continue
            if not self.pending and (time.monotonic() - started) * 1000 > timeout_ms:
                raise TimeoutError

    async def _process(self, consumer: Any) -> None:
        from kcli.tools.message_formatters import FormatterError

        options = self.options
        out = bytearray()
        while options.max_messages == -1 or self.count < options.max_messages:
            if not self.pending:
                if not self._write(out):
                    return
                try:
                    await self._receive(consumer)
                except TimeoutError:
                    _log_error("Error processing message, terminating consumer process: ", "org.apache.kafka.common.errors.TimeoutException")
                    return
            record = self.pending.pop()
            self.count += 1
            try:
                self._format(record, out)
            except FormatterError as exc:
                if not options.skip_message_on_error:
                    self._write(out)
                    raise
                _log_error("Error processing message, skipping this message: ", exc.java_text())
        self._write(out)

    def _format(self, record: Any, out: bytearray) -> None:
        if self.formatter is not None:
            self.formatter.write_to(record, out)
            return
        import json

        from kcli.tools.record_json import record_to_json

        obj = record_to_json(record.topic, record.partition, record.offset, record.timestamp, record.timestamp_type,
                             record.key, record.value, record.headers)
        out += json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        out += b"\n"

    def _write(self, out: bytearray) -> bool:
        ok = self.sink.write(out)
        out.clear()
        if not ok:
            _stderr("Unable to write to standard out, closing consumer.")
        return ok

    def _reset_unconsumed(self, consumer: Any) -> None:
        """Seek each partition back to its first record not handed to the formatter, so the commit
        at close does not pass over records never printed."""
        from kcli.client.consumer import TopicPartition

        first: dict[Any, int] = {}
        for record in reversed(self.pending):
            first.setdefault(TopicPartition(record.topic, record.partition), record.offset)
        assigned = consumer.assignment()
        for tp, offset in first.items():
            if tp in assigned:
                consumer.seek(tp, offset)
        self.pending = []


def _ignore_orphaned_answers(loop: Any, context: dict[str, Any]) -> None:
    """Drops the report of an answer nobody waits for any more.

    A request cancelled while in flight (the consumer's fetch, at close) leaves its answer future
    in the connection; closing the connection then fails that future with BrokerUnreachable, and
    asyncio reports "Future exception was never retrieved" on stderr. Everything else goes to the
    default handler.
    """
    from kcli.client.connection import BrokerUnreachable

    if isinstance(context.get("exception"), BrokerUnreachable) and "never retrieved" in context.get("message", ""):
        return
    loop.default_exception_handler(context)


def _request_timeout(props: Mapping[str, str]) -> float:
    from kcli.tools._admin_common import number_setting

    return number_setting({"request.timeout.ms": "30000", **props}, "request.timeout.ms", "INT") / 1000


def _log_error(message: str, exception: str) -> None:
    from kcli.tools.message_formatters import log4j_line

    _stderr(log4j_line("ERROR", message, CONSOLE_CONSUMER))
    _stderr(exception)


def _config_warning(message: str) -> None:
    from kcli.tools.message_formatters import log4j_line

    _stderr(log4j_line("WARN", message, "org.apache.kafka.clients.consumer.ConsumerConfig"))
