"""Kafka log dirs read without a broker: planning on the driver, decoding on the executors.

Nothing here writes: partition directories are listed, ``.log`` files opened read-only and
their batch headers scanned; indexes, checkpoints and producer snapshots are not needed (a
copied data directory often lacks or half-holds them). For each selected partition:

- earliest offset: the base offset of its first segment; latest: one past the last offset of
  the last whole batch of its last segment (or that segment's base offset when it is empty);
- a starting or ending timestamp resolves to the first offset whose record timestamp is >= it
  (ListOffsets' rule), found by scanning batch max timestamps, then the records of one batch;
- the offset range ``[start, end)`` is split as Spark splits Kafka ranges (``minPartitions``,
  ``maxRecordsPerPartition``), then cut at segment boundaries: one input partition per
  topic-partition segment range (``SegmentRange``).

Reading a range walks its ``.log`` file's batches in 1 MiB chunks from the batch holding the
start offset, checks each batch (sizes, magic, CRC) and skips control batches (transaction
markers, which consumers never see). v2 batches are decoded many at a time by ``columnar.py``;
what it refuses, and legacy messages, are decoded by ``records.py`` into
``arrow_rows.RowBatchBuilder``. A batch that cannot be read is an error naming the file, the
position and the offsets (``failOnDataLoss=true``, the default), is skipped
(``failOnDataLoss=false``), or becomes one row with its raw bytes as the value and the reason in
the ``corrupt`` column (``includeCorrupt=true``). A partial batch at the end of a file is where
the data ends, as in Kafka.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kcli.common import CLUSTER_METADATA_TOPIC_NAME, is_internal
from kcli.errors import CorruptRecordError, KcliError
from kcli.spark.options import (
    DataLossError,
    EARLIEST,
    LATEST,
    OffsetLimit,
    OffsetRange,
    PartitionOffsets,
    SourceOptions,
    Subscription,
    TopicPartition,
    describe_partitions,
    split_ranges,
)
from kcli.storage.file_records import FileRecords
from kcli.storage.index import OffsetIndex
from kcli.storage.log import parse_topic_partition_name
from kcli.storage.segment import INDEX_FILE_SUFFIX, is_log_file, offset_from_file_name

ROWS_PER_ARROW_BATCH = 65536
_SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")

FAIL_ON_DATA_LOSS_HINT = "set failOnDataLoss=false to skip what is missing"


# -- the files of one partition -------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    base_offset: int
    path: str


class PartitionFiles:
    """One ``<topic>-<partition>`` directory, read-only: its segments and offset bounds."""

    def __init__(self, topic: str, partition: int, directory: Path) -> None:
        self.topic = topic
        self.partition = partition
        self.directory = directory
        segments = []
        for name in os.listdir(directory):
            if is_log_file(name):
                try:
                    segments.append(Segment(offset_from_file_name(name), str(directory / name)))
                except ValueError:
                    continue
        self.segments = sorted(segments, key=lambda s: s.base_offset)
        self._latest: int | None = None

    @property
    def earliest(self) -> int:
        return self.segments[0].base_offset if self.segments else 0

    @property
    def latest(self) -> int:
        if self._latest is None:
            self._latest = self._read_latest()
        return self._latest

    def _read_latest(self) -> int:
        if not self.segments:
            return 0
        segment = self.segments[-1]
        last = None
        with FileRecords.open(segment.path) as records:
            try:
                for _, last_offset, _ in records.headers(_tail_position(segment, records)):
                    last = last_offset
            except CorruptRecordError:
                pass  # the end of what can be framed; reading the range reports the rest
        return segment.base_offset if last is None else max(last + 1, segment.base_offset)

    def segment_end(self, index: int) -> int:
        """The offset where segment ``index`` stops: the next one's base offset, or the log end."""
        if index + 1 < len(self.segments):
            return self.segments[index + 1].base_offset
        return max(self.latest, self.segments[index].base_offset)

    def offset_for_timestamp(self, timestamp: int, from_offset: int = 0) -> int | None:
        """The first offset >= ``from_offset`` whose record timestamp is >= ``timestamp``."""
        for index, segment in enumerate(self.segments):
            if self.segment_end(index) <= from_offset:
                continue
            with FileRecords.open(segment.path) as records:
                found = records.search_for_timestamp(timestamp, 0, from_offset)
            if found is not None:
                return found.offset
        return None


def _tail_position(segment: Segment, records: FileRecords) -> int:
    """A batch start near the end of the segment, from the last entry of its ``.index`` (Kafka
    indexes a batch's last offset at the position where it starts); 0 when there is no index or
    its last entry does not point at that batch."""
    index = Path(segment.path).with_suffix(INDEX_FILE_SUFFIX)
    try:
        size = index.stat().st_size
        if size < 8:
            return 0
        with open(index, "rb") as f:
            f.seek((size // 8 - 1) * 8)
            relative, position = struct.unpack(">ii", f.read(8))
        if not 0 < position < records.size:
            return 0
        for _, last_offset, _ in records.headers(position):
            return position if last_offset == segment.base_offset + relative else 0
    except (OSError, struct.error, CorruptRecordError):
        pass
    return 0


def find_partitions(paths: Iterable[str]) -> dict[TopicPartition, PartitionFiles]:
    """Every topic-partition directory in the given log dirs; a path may also be one partition's
    directory itself. Directories being deleted or moved (``-delete``, ``-future``) are left out."""
    found: dict[TopicPartition, PartitionFiles] = {}
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            raise KcliError(f"{raw}: no such log directory")
        candidates = [path] if _partition_name(path.name) and any(is_log_file(n) for n in os.listdir(path)) else sorted(
            p for p in path.iterdir() if p.is_dir()
        )
        for directory in candidates:
            tp = _partition_name(directory.name)
            if tp is None:
                continue
            if tp in found:
                raise KcliError(f"partition {tp[0]}-{tp[1]} is in two log dirs: {found[tp].directory.parent} and {directory.parent}")
            found[tp] = PartitionFiles(tp[0], tp[1], directory)
    return found


def _partition_name(name: str) -> TopicPartition | None:
    if name.endswith(_SKIPPED_DIR_SUFFIXES):
        return None
    try:
        return parse_topic_partition_name(name)
    except KcliError:
        return None


def _never_by_pattern(topic: str) -> bool:
    """A pattern subscription never selects it: the Java consumer excludes internal topics, and
    the KRaft metadata log is no topic at all."""
    return is_internal(topic) or topic == CLUSTER_METADATA_TOPIC_NAME


def select_partitions(available: Mapping[TopicPartition, PartitionFiles], subscription: Subscription) -> dict[TopicPartition, PartitionFiles]:
    """The partitions a subscription reads. Every assigned partition must be there."""
    if subscription.kind == "assign":
        missing = [tp for tp in subscription.assigned if tp not in available]
        if missing:
            raise KcliError(f"assigned partitions not found in the log dirs: {describe_partitions(missing)}")
        return {tp: available[tp] for tp in sorted(subscription.assigned)}
    return {
        tp: files
        for tp, files in sorted(available.items())
        if subscription.selects(tp[0], tp[1], internal=_never_by_pattern(tp[0]))
    }


# -- resolving offsets ------------------------------------------------------------------------------


def _report(fail_on_data_loss: bool, message: str) -> None:
    if fail_on_data_loss:
        raise DataLossError(f"{message}; {FAIL_ON_DATA_LOSS_HINT}")


def resolve_limit(
    limit: OffsetLimit,
    partitions: Mapping[TopicPartition, PartitionFiles],
    *,
    starting: bool,
    fail_on_data_loss: bool = True,
) -> PartitionOffsets:
    """Concrete offsets for every partition, as the Kafka source resolves them against a broker."""
    what = "startingOffsets" if starting else "endingOffsets"
    if limit.kind in ("offsets", "timestamps") and set(limit.offsets) != set(partitions):
        names = "startingOffsetsByTimestamp/endingOffsetsByTimestamp" if limit.kind == "timestamps" else what
        raise KcliError(
            f"{names} must name every partition read: it names {describe_partitions(limit.offsets)}, "
            f"the query reads {describe_partitions(partitions)} (use -2 for earliest, -1 for latest)"
        )
    out: PartitionOffsets = {}
    for tp, files in partitions.items():
        if limit.kind == "earliest":
            out[tp] = files.earliest
        elif limit.kind == "latest":
            out[tp] = files.latest
        elif limit.kind == "offsets":
            offset = limit.offsets[tp]
            if offset == EARLIEST:
                out[tp] = files.earliest
            elif offset == LATEST:
                out[tp] = files.latest
            else:
                out[tp] = _checked_offset(offset, files, what, fail_on_data_loss)
        else:
            timestamp = limit.timestamp if limit.kind == "timestamp" else limit.offsets[tp]
            found = files.offset_for_timestamp(timestamp)
            if found is None:
                if starting and limit.strategy == "error":
                    raise KcliError(f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} and timestamp {timestamp}.")
                found = files.latest
            out[tp] = found
    return out


def _checked_offset(offset: int, files: PartitionFiles, what: str, fail_on_data_loss: bool) -> int:
    if offset < 0:
        raise KcliError(f"{what} for {files.topic}-{files.partition} is {offset}: only -2 (earliest) and -1 (latest) may be negative")
    earliest, latest = files.earliest, files.latest
    if offset < earliest:
        _report(fail_on_data_loss, f"{what} {offset} of {files.topic}-{files.partition} is below its earliest offset {earliest} in the log dirs")
        return earliest
    if offset > latest:
        _report(fail_on_data_loss, f"{what} {offset} of {files.topic}-{files.partition} is beyond its log end offset {latest} in the log dirs")
        return latest
    return offset


# -- planning ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentRange:
    """One input partition: offsets ``[start, end)`` of one segment file of one topic-partition."""

    topic: str
    partition: int
    path: str
    base_offset: int
    start: int
    end: int


def segment_ranges(ranges: Iterable[OffsetRange], partitions: Mapping[TopicPartition, PartitionFiles]) -> list[SegmentRange]:
    """Each offset range cut at the segment boundaries of its partition."""
    out = []
    for r in ranges:
        files = partitions[(r.topic, r.partition)]
        for index, segment in enumerate(files.segments):
            start = max(r.start, segment.base_offset)
            end = min(r.end, files.segment_end(index))
            if start < end:
                out.append(SegmentRange(r.topic, r.partition, segment.path, segment.base_offset, start, end))
    return out


def plan_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    partitions: Mapping[TopicPartition, PartitionFiles],
    options: SourceOptions,
) -> list[SegmentRange]:
    """Offset ranges from resolved start and end offsets, split and cut into segment ranges."""
    ranges = []
    for tp in sorted(end):
        if tp not in start:
            continue
        if start[tp] > end[tp]:
            _report(options.fail_on_data_loss, f"{tp[0]}-{tp[1]}: the start offset {start[tp]} is beyond the end offset {end[tp]}")
            continue
        ranges.append(OffsetRange(tp[0], tp[1], start[tp], end[tp]))
    ranges = split_ranges(ranges, options.min_partitions, options.max_records_per_partition)
    return segment_ranges(ranges, partitions)


def plan_batch(options: SourceOptions) -> list[SegmentRange]:
    """The input partitions of a batch read of ``options.paths``."""
    partitions = select_partitions(find_partitions(options.paths), options.subscription)
    assert options.ending is not None
    start = resolve_limit(options.starting, partitions, starting=True, fail_on_data_loss=options.fail_on_data_loss)
    end = resolve_limit(options.ending, partitions, starting=False, fail_on_data_loss=options.fail_on_data_loss)
    return plan_ranges(start, end, partitions, options)


# -- reading -------------------------------------------------------------------------------------------


def read_range(
    r: SegmentRange,
    *,
    include_headers: bool = False,
    include_corrupt: bool = False,
    fail_on_data_loss: bool = True,
    rows_per_batch: int = ROWS_PER_ARROW_BATCH,
) -> Iterator:
    """The records of ``r`` as ``pyarrow.RecordBatch``es in Spark's Kafka schema, in offset order
    (decoded by ``decode.decode_batches``)."""
    from kcli.spark.decode import decode_batches

    try:
        records = FileRecords.open(r.path)
    except FileNotFoundError:
        _report(fail_on_data_loss, f"{r.path} is gone (offsets {r.start}..{r.end - 1} of {r.topic}-{r.partition})")
        return
    with records:
        yield from decode_batches(
            records.batches(_start_position(records, r)),
            r.topic,
            r.partition,
            r.start,
            r.end,
            where=r.path,
            size=records.size,
            include_headers=include_headers,
            include_corrupt=include_corrupt,
            fail_on_data_loss=fail_on_data_loss,
            rows_per_batch=rows_per_batch,
        )


def _start_position(records: FileRecords, r: SegmentRange) -> int:
    """Where the batch holding ``r.start`` begins: from the ``.index`` entry at or below it when
    that entry points at a batch ending there, then batch headers alone."""
    if r.start <= r.base_offset:
        return 0
    position = 0
    try:
        index = OffsetIndex.open_readonly(Path(r.path).with_suffix(INDEX_FILE_SUFFIX), r.base_offset)
        try:
            entry = index.lookup(r.start)
        finally:
            index.close_handler()
        if 0 < entry.position < records.size:
            for _, last_offset, _ in records.headers(entry.position):
                position = entry.position if last_offset == entry.offset else 0
                break
    except (OSError, ValueError, KcliError):
        position = 0
    try:
        found = records.search_for_offset_with_size(r.start, position)
    except CorruptRecordError:
        return 0  # reading from the top reports the bad bytes
    return records.size if found is None else found.position
