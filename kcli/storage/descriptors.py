"""The file descriptors partition logs hold, and the process limit they must fit in.

A hosted partition holds one descriptor per segment (its ``.log``, as Kafka keeps them open) and
two more for its active segment's indexes, which write entries with ``pwrite``. Every other
index is mapped and its file closed (``index.py``, ``mapped_file.py``). So a new partition costs
three descriptors, and the logs on disk need ``segments + 2 * partitions``.

The broker raises its soft ``RLIMIT_NOFILE`` to the hard limit at start-up, refuses a topic or
partition creation that would leave less than ``connection_reserve`` descriptors free (for
connections, checkpoints being written, the cleaner), and refuses to start, with one line
naming the limit and the need, when the logs it holds cannot all be opened.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

INDEX_WRITERS_PER_PARTITION = 2
DESCRIPTORS_PER_NEW_PARTITION = 1 + INDEX_WRITERS_PER_PARTITION
# The process's own files beside the logs: the interpreter's, log dir locks, listeners, the
# metadata file and checkpoints while they are written.
PROCESS_HEADROOM = 64
_DELETED_DIR_SUFFIX = "-delete"
_SKIPPED_DIR_SUFFIXES = ("-future", "-stray")
_SEGMENT_SUFFIXES = (".log", ".log.swap")


def descriptors_for(partitions: int, segments: int) -> int:
    """Descriptors held by ``partitions`` logs with ``segments`` segments in all."""
    return segments + INDEX_WRITERS_PER_PARTITION * partitions


def open_file_limit() -> int:
    """The soft limit on open files of this process."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 2**31 - 1


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the soft limit on open files to the hard limit; returns (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
    return soft, open_file_limit()


def connection_reserve(limit: int, max_connections: int) -> int:
    """Descriptors kept free of logs: the process's own, and connections (``max.connections``,
    at most a quarter of the limit)."""
    return PROCESS_HEADROOM + min(max_connections, limit // 4)


class LogsOnDisk(NamedTuple):
    partitions: frozenset[str]  # partition directory names, "<topic>-<partition>"
    segments: int

    @property
    def descriptors(self) -> int:
        return descriptors_for(len(self.partitions), self.segments)


def logs_on_disk(log_dirs: Iterable[Path], skipped_topics: Iterable[str] = ()) -> LogsOnDisk:
    """The partition logs a log manager would load from ``log_dirs``, counted without opening
    any of them."""
    skipped = tuple(f"{topic}-" for topic in skipped_topics)
    partitions: set[str] = set()
    segments = 0
    for log_dir in log_dirs:
        try:
            children = list(os.scandir(log_dir))
        except FileNotFoundError:
            continue
        for child in children:
            name = child.name
            if not child.is_dir() or name.endswith(_DELETED_DIR_SUFFIX) or name.endswith(_SKIPPED_DIR_SUFFIXES) or name.startswith(skipped):
                continue
            partitions.add(name)
            # A partition directory without a segment gets an empty one when it is loaded.
            segments += max(1, sum(1 for f in os.scandir(child.path) if f.name.endswith(_SEGMENT_SUFFIXES)))
    return LogsOnDisk(frozenset(partitions), segments)
