"""Batches a truncation takes out of a log, kept aside in the partition's directory.

A follower truncates what its leader's log does not have (by leader epoch, KIP-101/KIP-279).
Kafka deletes those batches. After an unclean leader election they may be records producers were
told were written, so kcli keeps them, readable, where the log never loads them again::

    <topic>-<partition>/
      00000000000000000000.log ...                   the log (the loader reads files only)
      truncated-<leader epoch>-<first offset>/       one directory per truncation
        <base offset>.log                            the batches removed, byte for byte,
        ...                                          segment-shaped: dump-log-segments reads them

``<leader epoch>`` is the follower's leader epoch when it truncated: the records are those the
leader of that epoch did not have; ``<first offset>`` is where the log now ends. A segment wholly
past that offset is kept whole (a hard link of its ``.log``: no copy); the tail of the segment
holding the offset is copied. Indexes are not kept (``dump-log-segments --files`` reads ``.log``
files without them).

Bounded: a partition keeps its last ``MAX_KEPT_TRUNCATIONS`` directories (ordered by leader epoch,
then by offset, higher first: a follower's leader epoch only grows, and the steps of one
truncation go down), older ones are removed with an INFO line. Deleting the partition removes them
with it; nothing else does: retention and the cleaner see only the log. Keeping aside is best
effort: when the disk refuses (full, failing), the truncation goes on and the line says so.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from kcli.storage.checkpoints import fsync_path
from kcli.storage.file_records import FileRecords
from kcli.storage.segment import LOG_FILE_SUFFIX, filename_prefix_from_offset

log = logging.getLogger(__name__)

TRUNCATED_DIR_PREFIX = "truncated-"
MAX_KEPT_TRUNCATIONS = 5
_DIR_NAME = re.compile(r"^truncated-(\d+)-(\d+)(?:\.(\d+))?$")
_COPY_CHUNK = 1 << 20

# A v2 batch header, as far as the record count (see records.py for the whole layout).
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_MAGIC_POSITION = 16


class TruncatedRecords(NamedTuple):
    """What a truncation took out of a log: offsets ``first_offset`` to ``last_offset``, in
    ``batches`` batches holding ``records`` records of ``leader_epochs`` (ascending; -1 for batches
    older than magic 2), kept in ``kept_in`` (None: not kept, ``keep_error`` says why, or not asked)."""

    first_offset: int
    last_offset: int
    batches: int
    records: int
    leader_epochs: tuple[int, ...]
    kept_in: Path | None = None
    keep_error: str | None = None


def kept_dir_name(leader_epoch: int, first_offset: int) -> str:
    return f"{TRUNCATED_DIR_PREFIX}{leader_epoch}-{first_offset}"


def kept_dir_order(path: Path) -> tuple[int, int, int] | None:
    """Sort key of a kept-aside directory (older first), None for any other name."""
    match = _DIR_NAME.match(path.name)
    if match is None:
        return None
    return int(match[1]), -int(match[2]), int(match[3] or 0)


def is_kept_aside_dir(path: Path) -> bool:
    return path.is_dir() and kept_dir_order(path) is not None


def kept_aside_dirs(partition_dir: Path) -> list[Path]:
    """The partition's kept-aside directories, older first."""
    try:
        children = list(partition_dir.iterdir())
    except OSError:
        return []
    found = [(order, child) for child in children if (order := kept_dir_order(child)) is not None and child.is_dir()]
    return [child for _, child in sorted(found)]


def summarize(pieces: Iterable[tuple[FileRecords, int]]) -> tuple[int, int, int, int, tuple[int, ...]]:
    """``(first offset, last offset, batches, records, leader epochs)`` of the batches in each
    ``(file, start position)``, from their headers only."""
    first = last = -1
    batches = records = 0
    epochs: set[int] = set()
    for records_file, start in pieces:
        fd = records_file.fileno()
        for position, last_offset, size in records_file.headers(start):
            header = os.pread(fd, _V2_HEADER.size, position)
            base_offset = struct.unpack_from(">q", header, 0)[0]
            if len(header) > _MAGIC_POSITION and header[_MAGIC_POSITION] >= 2 and len(header) == _V2_HEADER.size:
                fields = _V2_HEADER.unpack(header)
                epochs.add(fields[2])
                records += fields[12]
            else:
                epochs.add(-1)
                records += 1
                base_offset = last_offset
            if first < 0:
                first = base_offset
            last = last_offset
            batches += 1
    return first, last, batches, records, tuple(sorted(epochs))


def keep_aside(
    partition_dir: Path, leader_epoch: int, truncation_offset: int, first_batch_offset: int, pieces: list[tuple[FileRecords, int]]
) -> Path:
    """Keep the batches of each ``(file, start position)`` in a new kept-aside directory: a
    whole file (start 0) as a hard link (a copy where links are refused), a tail as a copy named
    by its first batch's base offset, ``first_batch_offset`` (only the first piece can be a
    tail). Synced to disk; older directories past the bound removed. Raises OSError (the
    directory made so far removed)."""
    target = partition_dir / kept_dir_name(leader_epoch, truncation_offset)
    n = 0
    while target.exists():
        n += 1
        target = partition_dir / f"{kept_dir_name(leader_epoch, truncation_offset)}.{n}"
    target.mkdir()
    try:
        for records_file, start in pieces:
            if start >= records_file.size:
                continue
            if start == 0:
                kept = target / records_file.path.name
                try:
                    os.link(records_file.path, kept)
                except OSError:
                    _copy(records_file, 0, kept)
            else:
                kept = target / (filename_prefix_from_offset(first_batch_offset) + LOG_FILE_SUFFIX)
                _copy(records_file, start, kept)
            fsync_path(kept)
        fsync_path(target)
        fsync_path(partition_dir)
    except OSError:
        shutil.rmtree(target, ignore_errors=True)
        raise
    _prune(partition_dir)
    return target


def _copy(records_file: FileRecords, start: int, path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        position = start
        while position < records_file.size:
            data = records_file.read(position, min(_COPY_CHUNK, records_file.size - position))
            if not data:
                break
            written = 0
            while written < len(data):
                written += os.write(fd, memoryview(data)[written:])
            position += len(data)
    finally:
        os.close(fd)




def _prune(partition_dir: Path) -> None:
    kept = kept_aside_dirs(partition_dir)
    for old in kept[: max(0, len(kept) - MAX_KEPT_TRUNCATIONS)]:
        shutil.rmtree(old, ignore_errors=True)
        log.info("Removed %s: a partition keeps the batches of its last %d truncations", old, MAX_KEPT_TRUNCATIONS)
