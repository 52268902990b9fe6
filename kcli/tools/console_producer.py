"""``kcli console-producer``: Kafka's kafka-console-producer.sh (Kafka 3.9's ConsoleProducer).

Reads standard input to its end, one record per line, sends each line to ``--topic`` and exits 0
once every record is acknowledged. Lines are read as UTF-8 and end at ``\\n``, ``\\r`` or
``\\r\\n``, as Java's ``BufferedReader.readLine`` ends them; an empty line is a record with an
empty value.

Kafka's LineMessageReader (``--property``) splits a line into headers, key and value::

    parse.headers=true, parse.key=true:   h1:v1,h2:v2<headers.delimiter>key<key.separator>value
    parse.key=true:                       key<key.separator>value
    parse.headers=true:                   h1:v1,h2:v2<headers.delimiter>value

Each split uses the first occurrence of its separator (``headers.separator`` is a regular
expression, as in Kafka); a key, value or header value equal to ``null.marker`` is null. A line
without a separator it needs fails with Kafka's message (``No key separator found on line number
N: 'line'``) unless ``ignore.error=true``, which makes the key null and the rest the value.

Producer settings come, by precedence, from the explicit flags, then ``--producer-property`` and
``--producer.config``, then the flags' defaults (Kafka's ``maybeMergeOptions``);
``compression.type`` is always the ``--compression-codec`` (none when absent, gzip when given
without a value), and ``client.id`` defaults to ``console-producer``.

Errors: a malformed line, a bad flag or setting, or an unreachable broker is one line on stderr and
exit 1 (a bad flag: 2). Records before a malformed line are sent first. Where Kafka only logs a
failed send, kcli stops at the first one, prints Kafka's ``Error when sending message to topic T
with key: K, value: V with error: ...`` as its one line and exits 1.

Beyond Kafka: ``--input json`` reads one JSON object per line in the shape
``console-consumer --output json`` writes (``kcli/tools/record_json.py``): ``value`` (required),
``key``, ``headers``, ``partition`` and ``timestamp``; null, UTF-8 text or ``{"base64": ...}``
for bytes. Blank lines are skipped. Each record goes to the partition it names
(``--keep-partitions``, the default: a copy keeps every record in its partition, and a partition
the topic lacks is one line naming it and both ways out), or with ``--no-keep-partitions`` to
the one the partitioner picks from its key, as for plain input.
"""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer
import typer.core

from kcli.java_compat import split
from kcli.tools.int_options import INT32, INT64
from kcli.tools.options import BootstrapServerOpt, BrokerListOpt

LINE_READERS = (
    "kafka.tools.ConsoleProducer$LineMessageReader",  # Kafka 3.x
    "kafka.tools.LineMessageReader",
    "org.apache.kafka.tools.LineMessageReader",  # Kafka 4.x
)
DEFAULT_READER = LINE_READERS[0]
ABOUT = "This tool helps to read data from standard input and publish it to Kafka."
PROPERTY_HELP = (
    "A mechanism to pass user-defined properties in the form key=value to the message reader. This allows custom "
    "configuration for a user-defined message reader. Default properties include: parse.key=false, parse.headers=false, "
    "ignore.error=false, key.separator=\\t, headers.delimiter=\\t, headers.separator=, headers.key.separator=:, "
    "null.marker= (when set, any fields (key, value and headers) equal to this will be replaced by null). "
    "Default parsing pattern when parse.headers=true and parse.key=true: \"h1:v1,h2:v2...\\tkey\\tvalue\"; "
    "parse.key=true: \"key\\tvalue\"; parse.headers=true: \"h1:v1,h2:v2...\\tvalue\""
)


class InputFormat(str, enum.Enum):
    plain = "plain"
    json = "json"


class _Command(typer.core.TyperCommand):
    """``--compression-codec`` takes an optional value (jopt's ``withOptionalArg``): given last or
    before another option, it means gzip. Click options cannot leave their value out, so the
    value is filled in before parsing."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
        filled = []
        for index, arg in enumerate(args):
            filled.append(arg)
            if arg == "--compression-codec" and (index + 1 == len(args) or args[index + 1].startswith("-")):
                filled.append("gzip")
        return super().parse_args(ctx, filled)


def register(app: typer.Typer) -> None:
    app.command("console-producer", help=ABOUT, no_args_is_help=True, cls=_Command)(console_producer)


def console_producer(
    topic: Annotated[Optional[str], typer.Option("--topic", help="REQUIRED: The topic id to produce messages to.")] = None,
    bootstrap_server: BootstrapServerOpt = None,
    broker_list: BrokerListOpt = None,
    sync: Annotated[bool, typer.Option("--sync", help="If set message send requests to the brokers are synchronously, one at a time as they arrive.")] = False,
    compression_codec: Annotated[Optional[str], typer.Option("--compression-codec", metavar="[compression-codec]", help="The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'.If specified without value, then it defaults to 'gzip'")] = None,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", click_type=INT32, help="Number of messages to send in a single batch if they are not being sent synchronously. please note that this option will be replaced if max-partition-memory-bytes is also set (default: 16384)")] = None,
    message_send_max_retries: Annotated[Optional[int], typer.Option("--message-send-max-retries", click_type=INT32, help="Brokers can fail receiving the message for multiple reasons, and being unavailable transiently is just one of them. This property specifies the number of retries before the producer give up and drop this message. This is the option to control `retries` in producer configs. (default: 3)")] = None,
    retry_backoff_ms: Annotated[Optional[int], typer.Option("--retry-backoff-ms", click_type=INT64, help="Before each retry, the producer refreshes the metadata of relevant topics. Since leader election takes a bit of time, this property specifies the amount of time that the producer waits before refreshing the metadata. This is the option to control `retry.backoff.ms` in producer configs. (default: 100)")] = None,
    timeout: Annotated[Optional[int], typer.Option("--timeout", click_type=INT64, help="If set and the producer is running in asynchronous mode, this gives the maximum amount of time a message will queue awaiting sufficient batch size. The value is given in ms. This is the option to control `linger.ms` in producer configs. (default: 1000)")] = None,
    request_required_acks: Annotated[Optional[str], typer.Option("--request-required-acks", help="The required `acks` of the producer requests (default: -1)")] = None,
    request_timeout_ms: Annotated[Optional[int], typer.Option("--request-timeout-ms", click_type=INT32, help="The ack timeout of the producer requests. Value must be non-negative and non-zero. (default: 1500)")] = None,
    metadata_expiry_ms: Annotated[Optional[int], typer.Option("--metadata-expiry-ms", click_type=INT64, help="The period of time in milliseconds after which we force a refresh of metadata even if we haven't seen any leadership changes. This is the option to control `metadata.max.age.ms` in producer configs. (default: 300000)")] = None,
    max_block_ms: Annotated[Optional[int], typer.Option("--max-block-ms", click_type=INT64, help="The max time that the producer will block for during a send request. (default: 60000)")] = None,
    max_memory_bytes: Annotated[Optional[int], typer.Option("--max-memory-bytes", click_type=INT64, help="The total memory used by the producer to buffer records waiting to be sent to the server. This is the option to control `buffer.memory` in producer configs. (default: 33554432)")] = None,
    max_partition_memory_bytes: Annotated[Optional[int], typer.Option("--max-partition-memory-bytes", click_type=INT32, help="The buffer size allocated for a partition. When records are received which are smaller than this size the producer will attempt to optimistically group them together until this size is reached. This is the option to control `batch.size` in producer configs. (default: 16384)")] = None,
    line_reader: Annotated[str, typer.Option("--line-reader", help="The class name of the class to use for reading lines from standard in. By default each line is read as a separate message.")] = DEFAULT_READER,
    socket_buffer_size: Annotated[Optional[int], typer.Option("--socket-buffer-size", click_type=INT32, help="The size of the tcp RECV size. This is the option to control `send.buffer.bytes` in producer configs. (default: 102400)")] = None,
    property: Annotated[Optional[list[str]], typer.Option("--property", help=PROPERTY_HELP)] = None,
    reader_config: Annotated[Optional[str], typer.Option("--reader-config", help="Config properties file for the message reader. Note that [property] takes precedence over this config.")] = None,
    producer_property: Annotated[Optional[list[str]], typer.Option("--producer-property", help="A mechanism to pass user-defined properties in the form key=value to the producer. ")] = None,
    producer_config: Annotated[Optional[str], typer.Option("--producer.config", help="Producer config properties file. Note that [producer-property] takes precedence over this config.")] = None,
    input: Annotated[InputFormat, typer.Option("--input", help="plain: lines as Kafka's LineMessageReader reads them; json: one record per line in the shape console-consumer --output json writes.")] = InputFormat.plain,
    keep_partitions: Annotated[bool, typer.Option("--keep-partitions/--no-keep-partitions", help="With --input json: send each record to the partition it names (an error when the topic lacks it), or let the partitioner choose (by key) as for plain input.")] = True,
) -> None:
    from kcli.errors import UsageError

    if topic is None:
        raise UsageError('Missing required argument "[topic]"')
    servers = bootstrap_server if bootstrap_server is not None else broker_list
    if servers is None:
        raise UsageError("Missing required option(s) [bootstrap-server]")
    if line_reader not in LINE_READERS:
        raise UsageError(f"the line reader {line_reader} is not available: kcli reads lines with Kafka's LineMessageReader ({DEFAULT_READER})")
    flags = {
        "linger.ms": timeout,
        "acks": request_required_acks,
        "request.timeout.ms": request_timeout_ms,
        "retries": message_send_max_retries,
        "retry.backoff.ms": retry_backoff_ms,
        "send.buffer.bytes": socket_buffer_size,
        "buffer.memory": max_memory_bytes,
        "batch.size": max_partition_memory_bytes if max_partition_memory_bytes is not None else batch_size,
        "metadata.max.age.ms": metadata_expiry_ms,
        "max.block.ms": max_block_ms,
    }
    props = producer_properties(servers, compression_codec, flags, producer_property or [], producer_config)
    reader_props = reader_properties(topic, property or [], reader_config)
    _run(topic, props, reader_props, sync, input, keep_partitions)


# Kafka's defaults for the flags that set producer properties (ConsoleProducer's option specs).
FLAG_DEFAULTS = {
    "linger.ms": "1000",
    "acks": "-1",
    "request.timeout.ms": "1500",
    "retries": "3",
    "retry.backoff.ms": "100",
    "send.buffer.bytes": "102400",
    "buffer.memory": "33554432",
    "batch.size": "16384",
    "metadata.max.age.ms": "300000",
    "max.block.ms": "60000",
}


def producer_properties(
    servers: str, compression_codec: str | None, flags: dict[str, object], producer_property: list[str], producer_config: str | None
) -> dict[str, str]:
    """The producer's properties as Kafka's ConsoleProducer.producerProps assembles them."""
    from kcli.client.producer_config import parse_properties
    from kcli.config import read_properties

    props = dict(read_properties(producer_config)) if producer_config else {}
    props.update(parse_properties(producer_property))
    props["bootstrap.servers"] = servers
    props["compression.type"] = compression_codec or ("gzip" if compression_codec == "" else "none")
    props.setdefault("client.id", "console-producer")
    props["key.serializer"] = props["value.serializer"] = "org.apache.kafka.common.serialization.ByteArraySerializer"
    for name, value in flags.items():
        if value is not None:
            props[name] = str(value)
        elif name not in props:
            props[name] = FLAG_DEFAULTS[name]
    return props


def reader_properties(topic: str, prop: list[str], reader_config: str | None) -> dict[str, str]:
    from kcli.client.producer_config import parse_properties
    from kcli.config import read_properties

    props = dict(read_properties(reader_config)) if reader_config else {}
    props["topic"] = topic
    props.update(parse_properties(prop))
    return props


class LineReader:
    """Kafka's LineMessageReader: one line to (key, value, headers)."""

    def __init__(self, props: dict[str, str]) -> None:
        import re

        from kcli.errors import KcliError

        def flag(name: str) -> bool:
            return props.get(name, "false").strip().lower() == "true"

        self.parse_key = flag("parse.key")
        self.key_separator = props.get("key.separator", "\t")
        self.parse_headers = flag("parse.headers")
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_separator = props.get("headers.separator", ",")
        self.headers_key_separator = props.get("headers.key.separator", ":")
        self.ignore_error = flag("ignore.error")
        self.null_marker = props.get("null.marker")
        try:
            self._separator_pattern = re.compile(self.headers_separator)
        except re.error as exc:
            raise KcliError(f"headers.separator is not a valid regular expression: {exc}") from None
        checks = (
            (self.headers_delimiter, self.headers_separator, "headers.delimiter and headers.separator may not be equal"),
            (self.headers_delimiter, self.headers_key_separator, "headers.delimiter and headers.key.separator may not be equal"),
            (self.headers_separator, self.headers_key_separator, "headers.separator and headers.key.separator may not be equal"),
            (self.null_marker, self.key_separator, "null.marker and key.separator may not be equal"),
            (self.null_marker, self.headers_separator, "null.marker and headers.separator may not be equal"),
            (self.null_marker, self.headers_delimiter, "null.marker and headers.delimiter may not be equal"),
            (self.null_marker, self.headers_key_separator, "null.marker and headers.key.separator may not be equal"),
        )
        for first, second, message in checks:
            if first == second:
                raise KcliError(message)

    def read(self, line: str, number: int) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        headers = self._part(self.parse_headers, line, 0, self.headers_delimiter, "headers delimiter", number)
        header_end = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._part(self.parse_key, line, header_end, self.key_separator, "key separator", number)
        key_end = 0 if key is None else len(key) + len(self.key_separator)
        value = line[header_end + key_end :]
        marker = self.null_marker
        record_headers = [] if headers is None or headers == marker else self._split_headers(headers, number)
        return (
            None if key is None or key == marker else key.encode("utf-8"),
            None if value == marker else value.encode("utf-8"),
            record_headers,
        )

    def _part(self, enabled: bool, line: str, start: int, separator: str, what: str, number: int) -> str | None:
        if not enabled:
            return None
        index = line.find(separator, start)
        if index < 0:
            if self.ignore_error:
                return None
            from kcli.errors import KcliError

            raise KcliError(f"No {what} found on line number {number}: '{line}'")
        return line[start:index]

    def _split_headers(self, text: str, number: int) -> list[tuple[str, bytes | None]]:
        from kcli.errors import KcliError

        result = []
        marker = self.null_marker
        separator = self.headers_key_separator
        for pair in split(text, self._separator_pattern):
            index = pair.find(separator)
            if index < 0:
                if not self.ignore_error:
                    raise KcliError(f"No header key separator found in pair '{pair}' on line number {number}")
                result.append((pair, None))
                continue
            key = pair[:index]
            if key == marker:
                raise KcliError(f"Header keys should not be equal to the null marker '{marker}' as they can't be null")
            value = pair[index + len(separator) :]
            result.append((key, None if value == marker else value.encode("utf-8")))
        return result


# -- running -----------------------------------------------------------------------------------------


def _run(topic: str, props: dict[str, str], reader_props: dict[str, str], sync: bool, input_format: InputFormat, keep_partitions: bool = True) -> None:
    from kcli.client.sync import SyncRunner

    reader = LineReader(reader_props) if input_format is InputFormat.plain else None
    with SyncRunner() as runner:
        runner.run(_produce(topic, props, reader, sync, keep_partitions))


def producer_config_warning(message: str) -> None:
    """The producer's word about its settings (an unknown name), on stderr as Kafka's tools log it."""
    from kcli.output import Output

    Output().diag(f"WARN {message}")


async def _produce(topic: str, props: dict[str, str], reader: LineReader | None, sync: bool, keep_partitions: bool = True) -> None:
    import sys

    from kcli.client.producer import Producer
    from kcli.errors import KafkaError, KcliError

    producer = Producer.from_properties(None, props, warn=producer_config_warning)
    failure: list[str] = []
    partition_count = 0  # of the topic, as last looked up; a record's own partition is checked against it

    def describe(key: bytes | None, value: bytes | None) -> str:
        key_text = "null" if key is None else f"{len(key)} bytes"
        value_text = "null" if value is None else f"{len(value)} bytes"
        return f"Error when sending message to topic {topic} with key: {key_text}, value: {value_text} with error: "

    def on_done(future, key: bytes | None, value: bytes | None) -> None:  # type: ignore[no-untyped-def]
        error = future.exception()
        if error is not None and not failure:
            failure.append(describe(key, value) + str(error))

    try:
        await producer.start()
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
        async for number, line in _lines(interactive, _longest_line(props)):
            if failure:
                break
            if reader is not None:
                key, value, headers = reader.read(line, number)
                partition = timestamp = None
            else:
                if not line.strip():
                    continue
                key, value, headers, partition, timestamp = _json_record(line, number)
                if not keep_partitions:
                    partition = None
                elif partition is not None and partition >= partition_count:
                    partition_count = await _partition_count(producer, topic)
                    if partition >= partition_count:
                        raise KcliError(
                            f"The record on line number {number} names partition {partition}, and topic {topic} has {partition_count} "
                            f"partition(s): --keep-partitions (the default) sends each record to its own partition; create {topic} "
                            f"with at least {partition + 1} partitions, or pass --no-keep-partitions to let the partitioner choose"
                        )
            try:
                future = await producer.send(topic, value, key, headers, partition, timestamp)
            except KafkaError as exc:  # no metadata or memory within max.block.ms, an invalid topic
                failure.append(describe(key, value) + str(exc))
                break
            if sync:
                try:
                    await future
                except KcliError as exc:
                    failure.append(describe(key, value) + str(exc))
                    break
            elif future.done():
                on_done(future, key, value)
            else:
                future.add_done_callback(on_done, key, value)
        await producer.flush()
    finally:
        await producer.close()
    if failure:
        raise KcliError(failure[0])


async def _partition_count(producer, topic: str) -> int:  # type: ignore[no-untyped-def]
    """The topic's partition count, asked of the cluster afresh (the topic is created first when
    the broker auto-creates topics, as a send would create it)."""
    await producer.wait_for_topic(topic)
    metadata = await producer.cluster.refresh([topic])
    return len(metadata.topics[topic].partitions)


def _json_record(line: str, number: int):  # type: ignore[no-untyped-def]
    import json

    from kcli.errors import KcliError
    from kcli.tools.record_json import record_from_json

    try:
        record = record_from_json(json.loads(line))
    except ValueError as exc:
        raise KcliError(f"Invalid JSON record on line number {number}: {exc}") from None
    except KcliError as exc:
        raise KcliError(f"Invalid JSON record on line number {number}: {exc}") from None
    return record.key, record.value, record.headers, record.partition, record.timestamp


def _longest_line(props: dict[str, str]) -> int:
    """The longest input line worth holding: twice ``max.request.size`` (a JSON line's base64 or
    escapes may make it longer than its record), since no record made from a longer line fits in
    a produce request."""
    try:
        max_request_size = int(props.get("max.request.size", MAX_REQUEST_SIZE_DEFAULT))
    except ValueError:
        max_request_size = MAX_REQUEST_SIZE_DEFAULT  # the producer's own check names it
    return 2 * max(max_request_size, MAX_REQUEST_SIZE_DEFAULT)


MAX_REQUEST_SIZE_DEFAULT = 1024 * 1024


async def _lines(interactive: bool, longest: int):  # type: ignore[no-untyped-def]
    """Standard input's lines (numbered from 1), as ``BufferedReader.readLine`` splits them. A
    line longer than ``longest`` characters ends the input with one error (standard input may be
    endless, ``/dev/zero``), so memory stays bounded."""
    import asyncio
    import codecs
    import io
    import os
    import sys

    from kcli.output import Output

    loop = asyncio.get_running_loop()
    prompt = Output()
    decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder("utf-8")("replace"), translate=True)
    fd = sys.stdin.fileno()
    number = 0
    pending = ""
    while True:
        if interactive:
            prompt.prompt(">")
        chunk = await loop.run_in_executor(None, os.read, fd, 1 << 16 if interactive else 1 << 20)
        text = decoder.decode(chunk, final=not chunk)
        if text:
            lines = (pending + text).split("\n")
            pending = lines.pop()
            for line in lines:
                number += 1
                yield number, line
            if len(pending) > longest:
                from kcli.errors import KcliError

                raise KcliError(
                    f"Line number {number + 1} of the input is longer than {longest} characters: no record made from it "
                    f"fits in max.request.size"
                )
        if not chunk:
            if pending:
                number += 1
                yield number, pending
            return
