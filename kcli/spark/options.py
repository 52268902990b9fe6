"""The option surface of Spark's Kafka source and sink, parsed without Spark.

Option names, defaults, precedence and error messages follow Spark's ``KafkaSourceProvider``:
keys are case-insensitive; exactly one of ``assign``, ``subscribe``, ``subscribePattern``; where
to start is ``startingTimestamp`` > ``startingOffsetsByTimestamp`` > ``startingOffsets`` (and the
same for the end); offsets JSON is ``{"topic":{"0":23}}`` with -2 for earliest and -1 for latest.
kcli adds ``path`` (one or more Kafka ``log.dirs``, read without a broker) and ``includeCorrupt``.

The offset arithmetic the readers share lives here too: the proportional split of
``maxOffsetsPerTrigger`` across partitions and the ``minPartitions`` splitting of offset ranges,
both as Spark computes them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from kcli.common import TopicPartition
from kcli.errors import KcliError, UsageError

EARLIEST = -2  # in offsets JSON: the first offset of the partition
LATEST = -1  # in offsets JSON: the log end offset

PartitionOffsets = dict[TopicPartition, int]

ASSIGN = "assign"
SUBSCRIBE = "subscribe"
SUBSCRIBE_PATTERN = "subscribepattern"
_STRATEGY_NAMES = {ASSIGN: "assign", SUBSCRIBE: "subscribe", SUBSCRIBE_PATTERN: "subscribePattern"}

# Consumer and producer configs the source and sink refuse, with Spark's reasons.
_REJECTED_SOURCE_PARAMS = {
    "auto.offset.reset": (
        "Kafka option 'auto.offset.reset' is not supported. Instead set the source option 'startingOffsets' to 'earliest' "
        "or 'latest' to specify where to start."
    ),
    "key.deserializer": (
        "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays with ByteArrayDeserializer. "
        "Use DataFrame operations to explicitly deserialize the keys."
    ),
    "value.deserializer": (
        "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays with "
        "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values."
    ),
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}
_REJECTED_SINK_PARAMS = {
    "key.serializer": "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer.",
    "value.serializer": "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer.",
}

_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_TIME_STRING = re.compile(r"(-?[0-9]+)\s*([a-z]+)?")


class DataLossError(KcliError):
    """Offsets asked for that the log or the broker no longer holds, or bytes that are not record batches."""


class OptionError(UsageError):
    """A data source option that is missing, malformed or not allowed (Spark's IllegalArgumentException)."""


# -- offsets JSON -------------------------------------------------------------------------------------


def parse_partition_offsets(text: str, option: str = "startingOffsets") -> PartitionOffsets:
    """``{"t":{"0":23,"1":-2}}`` -> ``{("t", 0): 23, ("t", 1): -2}``."""
    example = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict):
            raise ValueError
        out: PartitionOffsets = {}
        for topic, partitions in parsed.items():
            if not isinstance(partitions, dict):
                raise ValueError
            for partition, offset in partitions.items():
                if isinstance(offset, bool) or not isinstance(offset, int):
                    raise ValueError
                out[(topic, int(partition))] = offset
        return out
    except ValueError:
        raise OptionError(f"{option}: expected e.g. {example}, got {text}") from None


def parse_assign(text: str) -> tuple[TopicPartition, ...]:
    """``{"topicA":[0,1],"topicB":[2,4]}`` -> ``(("topicA", 0), ("topicA", 1), ...)``."""
    if not text.strip().startswith("{"):
        raise OptionError(f"No topicpartitions to assign as specified value for option 'assign' is '{text}'")
    try:
        parsed = json.loads(text)
        out = []
        for topic, partitions in parsed.items():
            if not isinstance(partitions, list):
                raise ValueError
            for partition in partitions:
                if isinstance(partition, bool) or not isinstance(partition, int):
                    raise ValueError
                out.append((topic, partition))
        return tuple(out)
    except (ValueError, AttributeError):
        raise OptionError(f'assign: expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {text}') from None


def format_partition_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The offsets as Spark writes them: topics and partitions in order, partitions as strings."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def offsets_from_json(value: Mapping[str, Mapping[str, int]]) -> PartitionOffsets:
    """The inverse of ``format_partition_offsets``: what a streaming checkpoint hands back."""
    return {(topic, int(p)): int(o) for topic, partitions in value.items() for p, o in partitions.items()}


def describe_partitions(partitions: Iterable[TopicPartition]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(partitions)) or "(none)"


# -- what to read ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subscription:
    """Which topic-partitions a query reads: ``assign``, ``subscribe`` or ``subscribePattern``."""

    kind: Literal["assign", "subscribe", "subscribePattern"]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def selects_topic(self, topic: str, *, internal: bool = False) -> bool:
        """Whether partitions of ``topic`` belong to the query.

        A pattern is matched against the whole name (Java's ``Matcher.matches``) and, like the Java
        consumer's ``exclude.internal.topics``, never selects internal topics.
        """
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return not internal and re.fullmatch(self.pattern or "", topic) is not None
        return any(t == topic for t, _ in self.assigned)

    def selects(self, topic: str, partition: int, *, internal: bool = False) -> bool:
        if self.kind == "assign":
            return (topic, partition) in self.assigned
        return self.selects_topic(topic, internal=internal)


@dataclass(frozen=True)
class OffsetLimit:
    """Where a read starts or ends before it is resolved against a log (Spark's KafkaOffsetRangeLimit).

    ``kind`` is ``earliest``, ``latest``, ``offsets`` (per partition, -2/-1 allowed), ``timestamps``
    (per partition) or ``timestamp`` (one for every partition). ``strategy`` says what a starting
    timestamp with no offset at or after it gives: an error, or the latest offset.
    """

    kind: Literal["earliest", "latest", "offsets", "timestamps", "timestamp"]
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int | None = None
    strategy: Literal["error", "latest"] = "error"


EARLIEST_LIMIT = OffsetLimit("earliest")
LATEST_LIMIT = OffsetLimit("latest")


@dataclass(frozen=True)
class SourceOptions:
    """Every option of a Kafka source read, checked and typed."""

    subscription: Subscription
    starting: OffsetLimit
    ending: OffsetLimit | None  # None for a stream
    bootstrap_servers: str | None = None
    paths: tuple[str, ...] = ()
    fail_on_data_loss: bool = True
    include_headers: bool = False
    include_corrupt: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    group_id_prefix: str | None = None
    kafka_params: Mapping[str, str] = field(default_factory=dict)
    poll_timeout_ms: int = 120_000
    initial_offsets_path: str | None = None

    @property
    def offline(self) -> bool:
        return bool(self.paths)


@dataclass(frozen=True)
class SinkOptions:
    """The options of a Kafka sink write."""

    topic: str | None
    bootstrap_servers: str | None = None
    paths: tuple[str, ...] = ()
    include_headers: bool = False
    kafka_params: Mapping[str, str] = field(default_factory=dict)
    include_timestamp: bool = False


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def parse_bool(options: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise OptionError(f"Option '{name}' must be true or false, got '{value}'")
    return lowered == "true"


def _parse_int(options: Mapping[str, str], key: str, name: str, *, positive: bool = False) -> int | None:
    value = options.get(key)
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        raise OptionError(f"Option '{name}' must be an integer, got '{value}'") from None
    if positive and number <= 0:
        raise OptionError(f"{name} must be positive")
    return number


def parse_time_ms(value: str, name: str = "maxTriggerDelay") -> int:
    """A duration as Spark's ``timeStringAsMs`` reads it: ``15m``, ``10s``, ``250ms``; no unit is ms."""
    match = _TIME_STRING.fullmatch(value.strip().lower())
    if not match or (match.group(2) and match.group(2) not in _TIME_UNITS_MS):
        raise OptionError(f"Option '{name}' must be a duration such as 15m, 30s or 500ms, got '{value}'")
    return int(int(match.group(1)) * _TIME_UNITS_MS[match.group(2) or "ms"])


def parse_paths(options: Mapping[str, str]) -> tuple[str, ...]:
    """``path`` as Kafka's ``log.dirs`` (comma-separated), or ``paths`` as ``load([...])`` sets it."""
    found: list[str] = []
    if options.get("path"):
        found += [p.strip() for p in options["path"].split(",") if p.strip()]
    if options.get("paths"):
        try:
            listed = json.loads(options["paths"])
            if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
                raise ValueError
        except ValueError:
            raise OptionError(f"Option 'paths' must be a JSON list of directories, got '{options['paths']}'") from None
        found += [p for p in listed if p]
    return tuple(dict.fromkeys(found))


def parse_subscription(options: Mapping[str, str]) -> Subscription:
    chosen = [key for key in (SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN) if key in options]
    names = ", ".join(_STRATEGY_NAMES[k] for k in (SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN))
    if not chosen:
        raise OptionError(f"One of the following options must be specified for Kafka source: {names}. See the docs for more details.")
    if len(chosen) > 1:
        raise OptionError(f"Only one of the following options can be specified for Kafka source: {names}. See the docs for more details.")
    key = chosen[0]
    value = options[key]
    if key == ASSIGN:
        return Subscription("assign", assigned=parse_assign(value))
    if key == SUBSCRIBE:
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise OptionError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return Subscription("subscribe", topics=topics)
    pattern = value.strip()
    if not pattern:
        raise OptionError(f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise OptionError(f"subscribePattern '{pattern}' is not a valid regular expression: {exc}") from None
    return Subscription("subscribePattern", pattern=pattern)


def _strategy(options: Mapping[str, str]) -> Literal["error", "latest"]:
    value = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if value not in ("error", "latest"):
        raise OptionError(f"Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', got '{value}'")
    return value  # type: ignore[return-value]


def parse_offset_limit(options: Mapping[str, str], which: Literal["starting", "ending"], default: OffsetLimit) -> OffsetLimit:
    """One end of the range, by Spark's precedence: global timestamp, timestamps per partition, offsets."""
    strategy = _strategy(options)
    global_key, by_timestamp_key, offsets_key = f"{which}timestamp", f"{which}offsetsbytimestamp", f"{which}offsets"
    if global_key in options:
        text = options[global_key].strip()
        try:
            return OffsetLimit("timestamp", timestamp=int(text), strategy=strategy)
        except ValueError:
            raise OptionError(f"Expected a single long value, got {text}") from None
    if by_timestamp_key in options:
        name = f"{which}OffsetsByTimestamp"
        return OffsetLimit("timestamps", offsets=parse_partition_offsets(options[by_timestamp_key].strip(), name), strategy=strategy)
    if offsets_key in options:
        text = options[offsets_key].strip()
        if text.lower() == "latest":
            return LATEST_LIMIT
        if text.lower() == "earliest":
            return EARLIEST_LIMIT
        return OffsetLimit("offsets", offsets=parse_partition_offsets(text, f"{which}Offsets"))
    return default


def _check_batch_limits(starting: OffsetLimit, ending: OffsetLimit) -> None:
    if starting.kind == "latest":
        raise OptionError("starting offset can't be latest for batch queries on Kafka")
    if starting.kind == "offsets":
        for (t, p), offset in sorted(starting.offsets.items()):
            if offset == LATEST:
                raise OptionError(f"startingOffsets for {t}-{p} can't be latest for batch queries on Kafka")
    if ending.kind == "earliest":
        raise OptionError("ending offset can't be earliest for batch queries on Kafka")
    if ending.kind == "offsets":
        for (t, p), offset in sorted(ending.offsets.items()):
            if offset == EARLIEST:
                raise OptionError(f"ending offset for {t}-{p} can't be earliest for batch queries on Kafka")
    if starting.kind == ending.kind and starting.kind in ("offsets", "timestamps"):
        if set(starting.offsets) != set(ending.offsets):
            raise OptionError(
                f"The start and end offsets name different topic-partitions: start {describe_partitions(starting.offsets)}, "
                f"end {describe_partitions(ending.offsets)}"
            )
        for tp, start in sorted(starting.offsets.items()):
            end = ending.offsets[tp]
            if start >= 0 and end >= 0 and start > end:
                what = "offset" if starting.kind == "offsets" else "timestamp"
                raise OptionError(f"The starting {what} {start} of {tp[0]}-{tp[1]} is greater than the ending {what} {end}")


def kafka_params(options: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options without their prefix: what goes to the consumer or producer."""
    return {k[len("kafka.") :]: v for k, v in options.items() if k.startswith("kafka.")}


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Check a read's options as Spark's Kafka source does; raises OptionError with Spark's message."""
    opts = _lower(options)
    if streaming:
        if "endingoffsets" in opts:
            raise OptionError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in opts:
            raise OptionError("ending timestamp not valid in streaming queries")
        if "endingtimestamp" in opts:
            raise OptionError("ending timestamp not valid in streaming queries")
    starting = parse_offset_limit(opts, "starting", LATEST_LIMIT if streaming else EARLIEST_LIMIT)
    ending = None if streaming else parse_offset_limit(opts, "ending", LATEST_LIMIT)
    if ending is not None:
        _check_batch_limits(starting, ending)
    subscription = parse_subscription(opts)
    min_partitions = _parse_int(opts, "minpartitions", "minPartitions", positive=True)
    max_records = _parse_int(opts, "maxrecordsperpartition", "maxRecordsPerPartition", positive=True)
    params = kafka_params(opts)
    for key, message in _REJECTED_SOURCE_PARAMS.items():
        if key in params:
            raise OptionError(message)
    paths = parse_paths(opts)
    bootstrap = params.get("bootstrap.servers")
    if not paths and not bootstrap:
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer "
            "(or 'path' naming Kafka log.dirs to read without a broker)"
        )
    if paths and bootstrap:
        raise OptionError("Options 'path' and 'kafka.bootstrap.servers' exclude each other: read log dirs or a broker, not both")
    max_per_trigger = _parse_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger", positive=True)
    min_per_trigger = _parse_int(opts, "minoffsetspertrigger", "minOffsetsPerTrigger", positive=True)
    if max_per_trigger is not None and min_per_trigger is not None and min_per_trigger > max_per_trigger:
        raise OptionError(f"The value of minOffsetPerTrigger({min_per_trigger}) is higher than the maxOffsetsPerTrigger({max_per_trigger}).")
    delay = parse_time_ms(opts["maxtriggerdelay"]) if "maxtriggerdelay" in opts else 15 * 60_000
    return SourceOptions(
        subscription=subscription,
        starting=starting,
        ending=ending,
        bootstrap_servers=bootstrap,
        paths=paths,
        fail_on_data_loss=parse_bool(opts, "failondataloss", "failOnDataLoss", True),
        include_headers=parse_bool(opts, "includeheaders", "includeHeaders", False),
        include_corrupt=parse_bool(opts, "includecorrupt", "includeCorrupt", False),
        min_partitions=min_partitions,
        max_records_per_partition=max_records,
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=delay,
        group_id_prefix=opts.get("groupidprefix"),
        kafka_params=params,
        poll_timeout_ms=_parse_int(opts, "kafkaconsumer.polltimeoutms", "kafkaConsumer.pollTimeoutMs", positive=True) or 120_000,
        initial_offsets_path=opts.get("initialoffsetspath") or None,
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check a write's options as Spark's Kafka sink does."""
    opts = _lower(options)
    params = kafka_params(opts)
    for key, message in _REJECTED_SINK_PARAMS.items():
        if key in params:
            raise OptionError(message)
    paths = parse_paths(opts)
    bootstrap = params.get("bootstrap.servers")
    if not paths and not bootstrap:
        raise OptionError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    topic = opts.get("topic")
    return SinkOptions(
        topic=topic.strip() if topic is not None else None,
        bootstrap_servers=bootstrap,
        paths=paths,
        include_headers=parse_bool(opts, "includeheaders", "includeHeaders", False),
        kafka_params=params,
        include_timestamp=parse_bool(opts, "includetimestamp", "includeTimestamp", False),
    )


# -- offset arithmetic ------------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetRange:
    """``[start, end)`` of one topic-partition (Spark's KafkaOffsetRange)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def rate_limit(limit: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> PartitionOffsets:
    """The end offsets of a trigger capped at ``limit`` records in all, split across partitions in
    proportion to what each has waiting; a partition with anything waiting gets at least one."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if tp in start and end - start[tp] > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        prorate = limit * (size / total)
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, start[tp] + step)
    return out


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None, max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """Spark's KafkaOffsetRangeCalculator: drop empty ranges; with ``minPartitions`` above the number
    of ranges, cut the large ones so that there are about that many, in proportion to their size;
    with ``maxRecordsPerPartition``, cut every range to at most that many offsets."""
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is not None and min_partitions > len(ranges):
        total = sum(r.size for r in ranges)

        def part_count(size: int, total_size: int, parts: int) -> int:
            return max(_round_half_up(size / total_size * parts), 1)

        unsplit = {(r.topic, r.partition, r.start) for r in ranges if part_count(r.size, total, min_partitions) == 1}
        unsplit_size = sum(r.size for r in ranges if (r.topic, r.partition, r.start) in unsplit)
        split_total = total - unsplit_size
        split_min = max(min_partitions - len(unsplit), 1)
        out = []
        for r in ranges:
            parts = 1 if (r.topic, r.partition, r.start) in unsplit else part_count(r.size, split_total, split_min)
            out += _divide(r, parts)
        ranges = out
    if max_records_per_partition is not None:
        ranges = [piece for r in ranges for piece in _divide(r, -(-r.size // max_records_per_partition))]
    return [r for r in ranges if r.size > 0]


def _round_half_up(x: float) -> int:
    """Java's ``Math.round``: halves go up."""
    return math.floor(x + 0.5)


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``parts`` consecutive pieces of ``r``; the last takes the remainder of the integer division."""
    out = []
    remaining = r.size
    start = r.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, r.end)
        out.append(OffsetRange(r.topic, r.partition, start, end))
        start = end
    return out
