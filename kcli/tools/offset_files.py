"""The files ``kcli consumer-offsets export`` writes and ``import`` reads: pure functions.

Three formats of the same data (group -> topic-partition -> next offset):

``zk``   Kafka's ExportZkOffsets/ImportZkOffsets file: one line per partition,
         ``/consumers/<group>/offsets/<topic>/<partition>:<offset>``. As ImportZkOffsets, reading
         stops at the end of the file or at the first empty line.
``csv``  kafka-consumer-groups.sh's ``--export`` lines for several groups:
         ``group,topic,partition,offset`` (what ``--reset-offsets --from-file`` reads back).
``json`` one object a line: ``{"group":"g","topic":"t","partition":0,"offset":42}``.

A malformed line is reported with its number and what is wrong with it; ``parse`` raises one
``OffsetFileError`` listing every bad line, so an import writes nothing from a bad file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from kcli.common import TopicPartition
from kcli.errors import KcliError, UsageError
from kcli.metadata import zk_paths as zk
from kcli.tools.consumer_groups_reset import export_csv, parse_reset_csv

FORMATS = ("zk", "csv", "json")
_ZK_PATH = re.compile(r"/consumers/(?P<group>[^/]+)/offsets/(?P<topic>[^/]+)/(?P<partition>[^/]+)")
INT32_MAX = 2**31 - 1

GroupOffsets = dict[str, dict[TopicPartition, int]]


class OffsetFileError(KcliError):
    """A file with malformed lines; ``problems`` holds one ``line N: reason`` text per line."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source}: {len(problems)} malformed line(s), nothing imported")
        self.source = source
        self.problems = problems


def format_lines(offsets: Mapping[str, Mapping[TopicPartition, int]], fmt: str) -> list[str]:
    """The file's lines (without line ends), groups and partitions sorted."""
    if fmt == "csv":
        return export_csv(offsets, single_group=False)
    lines = []
    for group in sorted(offsets):
        for tp in sorted(offsets[group]):
            offset = offsets[group][tp]
            if fmt == "zk":
                lines.append(f"{zk.consumer_offset_path(group, tp.topic, tp.partition)}:{offset}")
            elif fmt == "json":
                lines.append(json.dumps({"group": group, "topic": tp.topic, "partition": tp.partition, "offset": offset},
                                        separators=(",", ":"), ensure_ascii=False))
            else:
                raise UsageError(f"Unknown format '{fmt}': use one of {', '.join(FORMATS)}")
    return lines


def parse(text: str, fmt: str, source: str) -> GroupOffsets:
    """The offsets a file holds; ``OffsetFileError`` when any line is malformed."""
    if fmt == "zk":
        return _parse_zk(text, source)
    if fmt == "json":
        return _parse_json(text, source)
    if fmt == "csv":
        try:
            return parse_reset_csv(text, [], source="")
        except UsageError as exc:
            raise OffsetFileError(source, [str(exc).lstrip()]) from None
    raise UsageError(f"Unknown format '{fmt}': use one of {', '.join(FORMATS)}")


def _parse_zk(text: str, source: str) -> GroupOffsets:
    result: GroupOffsets = {}
    problems: list[str] = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if line == "":
            break  # ImportZkOffsets stops at the first empty line
        path, colon, value = line.rpartition(":")
        if not colon:
            problems.append(f"line {number}: no ':' between the znode path and the offset: {line!r}")
            continue
        match = _ZK_PATH.fullmatch(path)
        if match is None:
            problems.append(f"line {number}: {path!r} is not a /consumers/<group>/offsets/<topic>/<partition> path")
            continue
        partition = match["partition"]
        if not partition.isdigit() or int(partition) > INT32_MAX:
            problems.append(f"line {number}: partition {partition!r} is not a partition number")
            continue
        try:
            offset = zk.decode_consumer_offset(value.encode("utf-8"))
        except zk.ZNodeFormatError:
            problems.append(f"line {number}: offset {value!r} is not a decimal number")
            continue
        result.setdefault(match["group"], {})[TopicPartition(match["topic"], int(partition))] = offset
    if problems:
        raise OffsetFileError(source, problems)
    return result


def _parse_json(text: str, source: str) -> GroupOffsets:
    result: GroupOffsets = {}
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            problems.append(f"line {number}: not JSON ({exc.args[0].split(':')[0]})")
            continue
        if not isinstance(row, dict):
            problems.append(f"line {number}: not a JSON object")
            continue
        group, topic, partition, offset = (row.get(k) for k in ("group", "topic", "partition", "offset"))
        if not isinstance(group, str) or not group or not isinstance(topic, str) or not topic:
            problems.append(f"line {number}: 'group' and 'topic' must be non-empty strings")
        elif not _is_int(partition) or not 0 <= partition <= INT32_MAX:
            problems.append(f"line {number}: 'partition' must be a partition number, got {partition!r}")
        elif not _is_int(offset) or not zk.LONG_MIN <= offset <= zk.LONG_MAX:
            problems.append(f"line {number}: 'offset' must be a 64-bit integer, got {offset!r}")
        else:
            result.setdefault(group, {})[TopicPartition(topic, partition)] = offset
    if problems:
        raise OffsetFileError(source, problems)
    return result


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
