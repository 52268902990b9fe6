"""Rebuilding the ``.txnindex`` files of a log recovered after a crash (what Kafka's
``LogSegment.recover`` does with the producer state as it replays each batch).

An unclean shutdown may have lost an index entry written after its ABORT marker, or left
entries for markers recovery cut away. So the segments from the one holding the recovery point
to the end are replayed: the transactions open where the replay starts come from the producer
snapshot at that segment's base (the newest such snapshot at or below it; none at the log
start), each transactional batch opens its producer's transaction, each marker closes it, and
an ABORT gives the entry ``(producer id, first offset, marker offset, last stable offset)`` with
the stable offset as the marker left it (the first offset of another open transaction, else the
offset after the marker). Each replayed segment's ``.txnindex`` is then written again from what
the replay found (removed when it found nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kcli.storage.producer_state import read_end_txn_marker, read_producer_snapshot, snapshot_file_name
from kcli.storage.records import ControlType
from kcli.storage.transaction_index import AbortedTxn


def rebuild_transaction_indexes(
    directory: Path,
    segments: list[Any],
    snapshot_offsets: list[int],
    recovery_point: int,
    producer_batches: Callable[[Any, int, int], Iterator[Any]],
) -> None:
    """Rewrite the ``.txnindex`` of every segment from the one holding ``recovery_point``;
    ``producer_batches(file_records, start, end)`` yields the batches with a producer id."""
    if not segments:
        return
    bases = [s.base_offset for s in segments]
    first = max((i for i, base in enumerate(bases) if base <= recovery_point), default=0)
    usable = [offset for offset in snapshot_offsets if offset in bases[: first + 1]]
    open_txns: dict[int, int] = {}
    if usable:
        start_offset = max(usable)
        for entry in read_producer_snapshot(Path(directory) / snapshot_file_name(start_offset)):
            if entry.current_txn_first_offset >= 0:
                open_txns[entry.producer_id] = entry.current_txn_first_offset
        start = bases.index(start_offset)
    else:
        start = 0
    for segment in segments[start:]:
        entries = []
        for batch in producer_batches(segment.log, 0, segment.size):
            producer_id = batch.producer_id
            if not batch.is_control:
                if batch.is_transactional and producer_id not in open_txns:
                    open_txns[producer_id] = batch.base_offset
                continue
            marker = read_end_txn_marker(batch)
            if marker is None:
                continue
            first_offset = open_txns.pop(producer_id, None)
            if first_offset is not None and marker[0] == ControlType.ABORT:
                last_stable = min(open_txns.values(), default=batch.base_offset + 1)
                entries.append(AbortedTxn(producer_id, first_offset, batch.base_offset, last_stable))
        path = segment.txn_index_path
        if entries:
            path.write_bytes(b"".join(txn.encode() for txn in entries))
        else:
            path.unlink(missing_ok=True)
