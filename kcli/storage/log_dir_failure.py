"""Disk errors per log dir (Kafka's LogDirFailureChannel).

Two kinds of trouble, each logged once per log dir, not once per failing batch:

- refused writes: an append failed (a full disk, a read-only file system) and was undone, so the
  log is as it was; clients are answered KAFKA_STORAGE_ERROR and may retry. The first refusal in a
  dir logs a warning, the first success after it a line saying writes succeed again.
- offline dirs: an I/O error left a log unlike its files (an append that could not be undone, a
  failed fsync). The dir goes offline for good (until a restart, which recovers its logs): every
  log in it answers KAFKA_STORAGE_ERROR, its periodic work stops, and its shutdown writes no
  checkpoint and no clean-shutdown marker. The broker keeps serving the partitions of other dirs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: dict[Path, str] = {}
        self._refusing: set[Path] = set()
        self._listeners: list[Callable[[Path], None]] = []

    def add_listener(self, listener: Callable[[Path], None]) -> None:
        """Call ``listener(log_dir)`` once for each dir that goes offline."""
        self._listeners.append(listener)

    def is_offline(self, log_dir: Path) -> bool:
        return bool(self._offline) and log_dir in self._offline

    @property
    def offline_dirs(self) -> list[Path]:
        return list(self._offline)

    def offline_reason(self, log_dir: Path) -> str | None:
        return self._offline.get(log_dir)

    def maybe_add_offline_log_dir(self, log_dir: Path, message: str) -> bool:
        """Take ``log_dir`` offline (logged once); False when it already was."""
        with self._lock:
            if log_dir in self._offline:
                return False
            self._offline[log_dir] = message
            self._refusing.discard(log_dir)
        log.error("Log dir %s is offline: %s. Its partitions answer KAFKA_STORAGE_ERROR until the broker is restarted.", log_dir, message)
        for listener in self._listeners:
            listener(log_dir)
        return True

    def write_refused(self, log_dir: Path, message: str) -> None:
        """A write to ``log_dir`` failed and was undone; warned once until writes succeed again."""
        with self._lock:
            if log_dir in self._refusing:
                return
            self._refusing.add(log_dir)
        log.warning("Writes to log dir %s fail and are refused (each one undone): %s", log_dir, message)

    def write_succeeded(self, log_dir: Path) -> None:
        if not self._refusing or log_dir not in self._refusing:
            return
        with self._lock:
            if log_dir not in self._refusing:
                return
            self._refusing.discard(log_dir)
        log.info("Writes to log dir %s succeed again", log_dir)
