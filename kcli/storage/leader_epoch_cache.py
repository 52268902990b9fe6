"""A partition's leader epochs and the offset each began at (Kafka's LeaderEpochFileCache).

The entries live in memory and in ``leader-epoch-checkpoint``, rewritten atomically on every
change; the entries in memory change only once the file is written, so a failed write (a full
disk) leaves the cache as it was. Epochs and start offsets both strictly increase from one entry
to the next.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import NamedTuple

from kcli.storage.checkpoints import LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint, write_leader_epoch_checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries = [EpochEntry(epoch, offset) for epoch, offset in read_leader_epoch_checkpoint(path)]

    @classmethod
    def for_dir(cls, log_dir: Path) -> LeaderEpochFileCache:
        return cls(log_dir / LEADER_EPOCH_CHECKPOINT)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` began at ``start_offset``; True when the cache changed.

        Entries with an epoch >= ``epoch`` or a start offset >= ``start_offset`` are dropped first,
        so that the cache stays monotonic.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry EpochEntry(epoch={epoch}, startOffset={start_offset})")
        latest = self.latest_entry
        if latest is not None and epoch == latest.epoch and start_offset >= latest.start_offset:
            return False
        entries = list(self._entries)
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        self._replace(entries)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries of epochs that start at or after ``end_offset``."""
        entries = list(self._entries)
        if end_offset >= 0 and entries and entries[-1].start_offset >= end_offset:
            while entries and entries[-1].start_offset >= end_offset:
                entries.pop()
            self._replace(entries)

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop the entries before ``start_offset``; the epoch in force there now starts at it."""
        entries = self._entries
        if start_offset < 0 or not entries or entries[0].start_offset >= start_offset:
            return
        removed = 0
        while removed < len(entries) and entries[removed].start_offset <= start_offset:
            removed += 1
        first = EpochEntry(entries[removed - 1].epoch, start_offset)
        self._replace([first, *entries[removed:]])

    def clear_and_flush(self) -> None:
        self._replace([])

    def restore(self, entries: list[EpochEntry]) -> None:
        """Put back ``entries`` (taken from ``entries`` before a change an append is undoing)."""
        if entries != self._entries:
            self._replace(list(entries))

    def _replace(self, entries: list[EpochEntry]) -> None:
        write_leader_epoch_checkpoint(self.path, entries)
        self._entries = entries

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch in which ``offset`` was written, if the cache knows it."""
        i = bisect.bisect_right([e.start_offset for e in self._entries], offset)
        return self._entries[i - 1].epoch if i else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` for OffsetForLeaderEpoch: where ``requested_epoch`` ended.

        The latest epoch ends at the log end offset. For an older one the answer is the largest
        known epoch <= the requested one and the start offset of the first epoch above it.
        """
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH or not entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        epochs = [e.epoch for e in entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, entries[0].start_offset
        return entries[higher - 1].epoch, entries[higher].start_offset

    def flush(self) -> None:
        write_leader_epoch_checkpoint(self.path, self._entries)

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({[tuple(e) for e in self._entries]})"
