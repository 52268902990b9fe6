"""Requests that wait for a partition to change: Kafka's ``DelayedOperation`` and
``DelayedOperationPurgatory``.

A delayed operation (a produce waiting for its acknowledgements, a fetch waiting for bytes) is
watched under the keys it waits on, the topic-partitions it touches. Whoever changes a partition
(an append moving the log end offset or the high watermark, a leadership change, a stop) calls
``check_and_complete(key)``, which asks each operation watched there whether it can complete now.
An operation not completed by its delay is expired by a timer of the event loop and completes
with what it has. Everything runs on the broker's event loop, so no lock is needed: an operation
completes exactly once, and on completion it leaves every key it was watched under.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable


class DelayedOperation:
    """One waiting request. Subclasses say when it can complete (``try_complete``, which calls
    ``force_complete`` when it can), what completing does (``on_complete``: answer the request) and
    what expiring adds (``on_expiration``)."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._completed = False
        self._timer: asyncio.TimerHandle | None = None
        self._on_done: list = []

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now, once: True for the call that completed it, False when it was already."""
        if self._completed:
            return False
        self._completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for done in self._on_done:
            done(self)
        self._on_done.clear()
        self.on_complete()
        return True

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called after the timer completed the operation."""

    def run_expiration(self) -> None:
        """The timer's call: complete with what there is."""
        self._timer = None
        if self.force_complete():
            self.on_expiration()


class DelayedOperationPurgatory:
    """Operations of one kind (``name``: Produce, Fetch) watched by key."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}

    def try_complete_else_watch(self, operation: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete the operation now if it can; otherwise watch it under ``keys`` and start its
        timer. True when it completed here."""
        if operation.try_complete():
            return True
        self.watch(operation, keys)
        return False

    def watch(self, operation: DelayedOperation, keys: Iterable[Hashable]) -> None:
        """Watch an operation its caller has just found unable to complete, and start its timer."""
        keys = list(dict.fromkeys(keys))
        for key in keys:
            self._watchers.setdefault(key, []).append(operation)
        operation._on_done.append(lambda op: self._unwatch(op, keys))
        if operation.delay_ms > 0:
            operation._timer = asyncio.get_running_loop().call_later(operation.delay_ms / 1000, operation.run_expiration)
        else:
            operation.run_expiration()

    def check_and_complete(self, key: Hashable) -> int:
        """Ask the operations watched under ``key`` whether they can complete; how many did."""
        watched = self._watchers.get(key)
        if not watched:
            return 0
        completed = 0
        for operation in list(watched):
            if not operation.is_completed and operation.try_complete():
                completed += 1
        return completed

    def complete_all(self) -> None:
        """Complete every watched operation now (the broker is stopping)."""
        for operations in list(self._watchers.values()):
            for operation in list(operations):
                operation.force_complete()

    def watched(self) -> int:
        """How many operations are waiting (Kafka's purgatory size, by operation)."""
        return len({id(op) for ops in self._watchers.values() for op in ops})

    def _unwatch(self, operation: DelayedOperation, keys: list) -> None:
        for key in keys:
            watched = self._watchers.get(key)
            if watched is None:
                continue
            try:
                watched.remove(operation)
            except ValueError:
                pass
            if not watched:
                del self._watchers[key]
