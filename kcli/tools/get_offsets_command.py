"""The work of ``kcli get-offsets --count`` (declared in ``get_offsets.py``): the records really
in each partition, counted from batch headers (``record_counts``), read through Fetch from the
leaders or from the segment files of a broker's log dirs.

Through Fetch: each partition from its log start offset (ListOffsets earliest) to its high
watermark (ListOffsets latest, read_uncommitted), the end as it was when the count began; one
Fetch per leader at a time for all its partitions, read_uncommitted, so markers and aborted
records are seen and sorted by ``record_counts``.

From files: every ``topic-partition`` directory of the given log dirs (``-delete``, ``-future`` and
``-stray`` ones left out), its ``.log`` segments in offset order, mapped and walked header by
header, from the log start offset ``log-start-offset-checkpoint`` holds (a running broker writes
it once a minute and at shutdown) to the end of the last segment (which may be past the high
watermark on a broker that lost leadership).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from kcli.common import TopicPartition
from kcli.errors import CorruptRecordError, KafkaError, KcliError
from kcli.tools.record_counts import RecordCount

EARLIEST = -2
LATEST = -1


def count_online(session, wanted: list[TopicPartition]) -> dict[TopicPartition, RecordCount | KafkaError]:
    """Each partition counted through Fetch at its leader, or the error that stopped it."""
    starts = session.run(session.admin.list_offsets({tp: EARLIEST for tp in wanted}))
    ends = session.run(session.admin.list_offsets({tp: LATEST for tp in wanted}))
    results: dict[TopicPartition, RecordCount | KafkaError] = {}
    fetching: dict[TopicPartition, int] = {}
    for tp in wanted:
        error = starts[tp].error or ends[tp].error
        if error is not None:
            results[tp] = error
            continue
        results[tp] = RecordCount(starts[tp].offset, ends[tp].offset)
        if starts[tp].offset < ends[tp].offset:
            fetching[tp] = starts[tp].offset
    while fetching:
        answers = session.run(session.admin.fetch_records(fetching))
        for tp, answer in answers.items():
            tally = results[tp]
            if answer.error is not None:
                results[tp] = answer.error
                del fetching[tp]
                continue
            tally.feed(answer.records)
            if tally.next_offset >= ends[tp].offset or not answer.records:
                del fetching[tp]
            elif tally.next_offset <= fetching[tp]:
                raise KcliError(f"the answer for {tp} at offset {fetching[tp]} held no whole batch")
            else:
                fetching[tp] = tally.next_offset
    return results


def partition_dirs(log_dirs: Iterable[str], allows: Callable[[str, int], bool]) -> dict[TopicPartition, Path]:
    """The partition directories of one broker's log dirs that ``allows`` keeps."""
    from kcli.storage.log import parse_topic_partition_name

    found: dict[TopicPartition, Path] = {}
    for text in log_dirs:
        log_dir = Path(text)
        if not log_dir.is_dir():
            raise KcliError(f"{text} is not a directory")
        for child in sorted(log_dir.iterdir()):
            if not child.is_dir() or child.name.endswith(("-delete", "-future", "-stray")):
                continue
            try:
                topic, partition = parse_topic_partition_name(child.name)
            except KcliError:
                continue  # not a partition (remote-log-index-cache, a user's own directory)
            if not allows(topic, partition):
                continue
            tp = TopicPartition(topic, partition)
            if tp in found:
                raise KcliError(f"partition {tp} is in both {found[tp].parent} and {log_dir}: give the log dirs of one broker")
            found[tp] = child
    return found


def count_files(dirs: dict[TopicPartition, Path]) -> dict[TopicPartition, RecordCount]:
    from kcli.storage.checkpoints import LOG_START_OFFSET_CHECKPOINT, read_offset_checkpoint

    starts: dict[Path, dict[tuple[str, int], int]] = {}
    results = {}
    for tp, path in dirs.items():
        log_dir = path.parent
        if log_dir not in starts:
            checkpoint = log_dir / LOG_START_OFFSET_CHECKPOINT
            starts[log_dir] = read_offset_checkpoint(checkpoint) if checkpoint.exists() else {}
        tally = RecordCount(starts[log_dir].get((tp.topic, tp.partition), 0))
        for segment in sorted(f for f in path.iterdir() if f.name.endswith(".log")):
            count_segment(tally, segment)
        results[tp] = tally
    return results


def count_segment(tally: RecordCount, segment: Path) -> None:
    """Feed one ``.log`` file to ``tally``, mapped, its headers read in place."""
    with open(segment, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mapped:
            try:
                tally.feed(mapped)
            except CorruptRecordError as exc:
                raise CorruptRecordError(f"{segment}: {exc}", exc.position) from None


def print_counts(out, counts: dict[TopicPartition, RecordCount | KafkaError], read_committed: bool) -> bool:
    """Kafka's ``topic:partition:N`` lines in GetOffsetShell's order, then ``total:N``; with
    ``--output json`` an object per partition, then one with the totals. False when a partition
    failed (its line on stderr)."""
    ok = True
    total = aborted = open_ = 0
    for tp in sorted(counts, key=str):
        tally = counts[tp]
        if isinstance(tally, Exception):
            out.diag(f"Skip counting records for topic-partition {tp} due to error: {tally}")
            ok = False
            continue
        count = tally.count(read_committed)
        total += count
        aborted += tally.aborted
        open_ += tally.open
        if out.json:
            out.obj(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "count": count,
                    "committed": tally.records,
                    "aborted": tally.aborted,
                    "open": tally.open,
                    "start_offset": tally.start,
                    "end_offset": max(tally.next_offset, tally.start),
                    "batches": tally.batches,
                    "control_batches": tally.control_batches,
                }
            )
        else:
            out.line(f"{tp.topic}:{tp.partition}:{count}")
    if out.json:
        out.obj({"total": total, "aborted": aborted, "open": open_})
    else:
        out.line(f"total:{total}")
    return ok
