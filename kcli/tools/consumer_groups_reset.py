"""The planning half of ``kcli consumer-groups --reset-offsets``: pure functions, no network.

Kafka's ConsumerGroupCommand decides each partition's new offset from one scenario:

    --to-offset N      N, clamped to [log start, log end]
    --to-earliest      the log start offset
    --to-latest        the log end offset
    --to-current       the committed offset, or the log end offset without one
    --shift-by N       committed + N, clamped; a partition without a committed offset is an error
    --to-datetime T    the first offset whose timestamp is at least T; the log end offset when none
    --by-duration D    as --to-datetime with T = now - D
    --from-file F      the offsets the CSV file gives for the group, clamped

Clamping warns as Kafka's logger does ("New offset (N) is higher than latest offset for topic
partition t-0. Value will be set to M"). The CSV files are Kafka's: ``topic,partition,offset``
for one group, ``group,topic,partition,offset`` for several (what ``--export`` writes).
"""

from __future__ import annotations

import calendar
import csv
import dataclasses
import io
import re
from collections.abc import Iterable, Mapping

from kcli.client.group_admin import TopicPartition
from kcli.errors import KcliError, UsageError

TO_OFFSET = "to-offset"
TO_EARLIEST = "to-earliest"
TO_LATEST = "to-latest"
TO_CURRENT = "to-current"
SHIFT_BY = "shift-by"
TO_DATETIME = "to-datetime"
BY_DURATION = "by-duration"
FROM_FILE = "from-file"
# The order Kafka's --reset-offsets help lists them in.
SCENARIOS = (TO_DATETIME, BY_DURATION, TO_EARLIEST, TO_LATEST, SHIFT_BY, FROM_FILE, TO_CURRENT, TO_OFFSET)
TIMESTAMP_SCENARIOS = (TO_DATETIME, BY_DURATION)


@dataclasses.dataclass(frozen=True)
class Plan:
    offsets: dict[TopicPartition, int]
    warnings: list[str]  # Kafka logs these at WARN
    notes: list[str]  # Kafka prints these itself


# -- the command line's values --------------------------------------------------------------------


def parse_topic_arg(arg: str) -> tuple[str, list[int] | None]:
    """``topic`` -> (topic, None); ``topic:0,1,2`` -> (topic, [0, 1, 2]), with Kafka's errors."""
    if ":" not in arg:
        return arg, None
    parts = [p for p in arg.split(":")]
    while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
        parts.pop()
    if len(parts) != 2:
        raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    topic, listed = parts
    partitions = []
    for text in listed.split(","):
        if not re.fullmatch(r"[+-]?\d+", text) or not -(2**31) <= int(text) < 2**31:
            raise UsageError(f"Invalid partition '{text}' specified in topic arg '{arg}'")
        partitions.append(int(text))
    return topic, partitions


_DATETIME = re.compile(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)(Z|[+-]\d{2}:\d{2}|[+-]\d{2})")


def parse_datetime(text: str) -> int:
    """Kafka's ``Utils.getDateTime``: 'yyyy-MM-ddTHH:mm:ss.SSS' with an optional zone (``Z``,
    ``+hh:mm`` or ``+hh``; none means UTC) to epoch milliseconds. The milliseconds are required
    and, as Java's SimpleDateFormat reads them, are a count of milliseconds ('.5' is 5 ms)."""
    parts = text.split("T")
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) < 2:
        raise UsageError("Error parsing timestamp. It does not contain a 'T' according to ISO8601 format")
    if not any(c in parts[1] for c in "+-Z"):
        text += "Z"
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise UsageError(f'Unparseable date: "{text}"')
    year, month, day, hour, minute, second, millis = (int(g) for g in match.groups()[:7])
    zone = match.group(8)
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month) and hour <= 23 and minute <= 59 and second <= 59 and millis <= 999):
        raise UsageError(f'Unparseable date: "{text}"')
    offset_minutes = 0
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        hours, _, minutes = zone[1:].partition(":")
        if int(hours) > 23 or (minutes and int(minutes) > 59):
            raise UsageError(f'Unparseable date: "{text}"')
        offset_minutes = sign * (int(hours) * 60 + int(minutes or 0))
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) - offset_minutes * 60
    return seconds * 1000 + millis


def _days_in_month(year: int, month: int) -> int:
    return calendar.monthrange(year, month)[1]


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """Java's ``Duration.parse`` (PnDTnHnMnS, signs allowed, fractional seconds) in whole
    milliseconds, rounded towards negative infinity as ``Instant.toEpochMilli`` would."""
    match = _DURATION.fullmatch(text)
    if match is None or match.group(3) == "T" or (not any(match.group(i) for i in (2, 4, 5, 6))):
        raise UsageError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, _t, hours, minutes, seconds, fraction = match.groups()
    nanos = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)) * 10**9
    if fraction:
        frac = int(fraction.ljust(9, "0"))
        nanos += -frac if (seconds or "").startswith("-") else frac
    if sign == "-":
        nanos = -nanos
    return nanos // 10**6


# -- CSV -----------------------------------------------------------------------------------------------


def export_csv(plan: Mapping[str, Mapping[TopicPartition, int]], single_group: bool) -> list[str]:
    """Kafka's --export lines: ``topic,partition,offset`` (one group) or with the group first."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for group in sorted(plan):
        for tp in sorted(plan[group]):
            row = [tp.topic, tp.partition, plan[group][tp]]
            writer.writerow(row if single_group else [group, *row])
    return buffer.getvalue().splitlines()


def parse_reset_csv(text: str, groups: list[str], *, source: str = "--from-file") -> dict[str, dict[TopicPartition, int]]:
    """A --from-file plan. With exactly one --group, 3-column lines belong to it; otherwise each
    line names its group (4 columns), as Kafka reads them. Errors name ``source`` and the line."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row and any(cell.strip() for cell in row)]
    single_group = len(groups) == 1
    old_format = bool(rows) and len(rows[0]) == 3 and _is_int(rows[0][1]) and _is_int(rows[0][2])
    plan: dict[str, dict[TopicPartition, int]] = {}
    for number, row in enumerate(rows, 1):
        if single_group and old_format:
            if len(row) != 3:
                raise UsageError(f"{source} line {number}: expected topic,partition,offset, got {','.join(row)!r}")
            group, (topic, partition, offset) = groups[0], row
        else:
            if len(row) != 4:
                raise UsageError(f"{source} line {number}: expected group,topic,partition,offset, got {','.join(row)!r}")
            group, topic, partition, offset = row
        if not _is_int(partition) or not _is_int(offset):
            raise UsageError(f"{source} line {number}: partition and offset must be integers, got {','.join(row)!r}")
        plan.setdefault(group, {})[TopicPartition(topic, int(partition))] = int(offset)
    return plan


def _is_int(text: str) -> bool:
    return re.fullmatch(r"\s*[+-]?\d+\s*", text) is not None


# -- planning -----------------------------------------------------------------------------------------


def clamp(requested: Mapping[TopicPartition, int], log_start: Mapping[TopicPartition, int | None],
          log_end: Mapping[TopicPartition, int | None]) -> tuple[dict[TopicPartition, int], list[str]]:
    """Kafka's checkOffsetsRange: offsets above the log end or below the log start move there."""
    result: dict[TopicPartition, int] = {}
    warnings: list[str] = []
    for tp, offset in requested.items():
        end = log_end.get(tp)
        start = log_start.get(tp)
        if end is not None and offset > end:
            warnings.append(f"New offset ({offset}) is higher than latest offset for topic partition {tp}. Value will be set to {end}")
            result[tp] = end
        elif start is not None and offset < start:
            warnings.append(f"New offset ({offset}) is lower than earliest offset for topic partition {tp}. Value will be set to {start}")
            result[tp] = start
        else:
            result[tp] = offset
    return result, warnings


def plan_offsets(
    scenario: str,
    value: int | None,
    partitions: Iterable[TopicPartition],
    *,
    committed: Mapping[TopicPartition, int],
    log_start: Mapping[TopicPartition, int | None],
    log_end: Mapping[TopicPartition, int | None],
    by_timestamp: Mapping[TopicPartition, int | None] | None = None,
    from_file: Mapping[TopicPartition, int] | None = None,
) -> Plan:
    """The new offset of each partition for ``scenario`` (``value`` is --to-offset's or
    --shift-by's number). ``log_start``/``log_end``/``by_timestamp`` hold None where the broker
    gave no offset; ``by_timestamp`` holds -1 where no record is that recent."""
    partitions = list(partitions)
    notes: list[str] = []
    if scenario == TO_OFFSET:
        assert value is not None
        offsets, warnings = clamp({tp: value for tp in partitions}, log_start, log_end)
        return Plan(offsets, warnings, notes)
    if scenario == TO_EARLIEST:
        return Plan({tp: _known(log_start, tp, "Error getting starting offset of topic partition") for tp in partitions}, [], notes)
    if scenario == TO_LATEST:
        return Plan({tp: _known(log_end, tp, "Error getting ending offset of topic partition") for tp in partitions}, [], notes)
    if scenario == SHIFT_BY:
        assert value is not None
        requested = {}
        for tp in partitions:
            if tp not in committed:
                raise KcliError(f"Cannot shift offset for partition {tp} since there is no current committed offset")
            requested[tp] = committed[tp] + value
        offsets, warnings = clamp(requested, log_start, log_end)
        return Plan(offsets, warnings, notes)
    if scenario in TIMESTAMP_SCENARIOS:
        assert by_timestamp is not None
        offsets = {}
        for tp in partitions:
            found = by_timestamp.get(tp)
            if found == -1:
                notes.append(f"Warn: Partition {tp.partition} from topic {tp.topic} is empty. Falling back to latest known offset.")
                found = _known(log_end, tp, "Error getting offset by timestamp of topic partition")
            elif found is None:
                raise KcliError(f"Error getting offset by timestamp of topic partition: {tp}")
            offsets[tp] = found
        return Plan(offsets, [], notes)
    if scenario == FROM_FILE:
        assert from_file is not None
        offsets, warnings = clamp(dict(from_file), log_start, log_end)
        return Plan(offsets, warnings, notes)
    if scenario == TO_CURRENT:
        offsets = {}
        for tp in partitions:
            offsets[tp] = committed[tp] if tp in committed else _known(log_end, tp, "Error getting ending offset of topic partition")
        return Plan(offsets, [], notes)
    raise ValueError(f"unknown reset scenario {scenario!r}")


def _known(offsets: Mapping[TopicPartition, int | None], tp: TopicPartition, message: str) -> int:
    found = offsets.get(tp)
    if found is None:
        raise KcliError(f"{message}: {tp}")
    return found
