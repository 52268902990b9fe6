"""Where metadata work runs: tree I/O on one thread, cache changes on the event loop.

A ZooKeeper round trip must never block the broker's event loop, and the broker's state
(hosted partitions, coordinators) must only change on it. So the broker has one metadata thread:
every read and write of the tree runs there (``call`` from the loop, ``submit`` from a store's
watch callback), and what it found is handed back to the loop (``to_loop``) to be applied. One
thread keeps the order: work is done, and its results reach the loop, in the order it was asked
for, so a newer read of a node is never applied before an older one.

``InlineMetadataThread`` runs everything at once on the caller's thread: the tools and the unit
tests, which have no loop to protect.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

log = logging.getLogger("kcli.broker.metadata")

T = TypeVar("T")


class InlineMetadataThread:
    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)

    def submit(self, fn: Callable[[], None]) -> None:
        fn()

    def to_loop(self, fn: Callable[..., None], *args: Any) -> None:
        fn(*args)

    def close(self) -> None:
        pass


class MetadataThread(InlineMetadataThread):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata")
        self._loop_thread = threading.get_ident()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the metadata thread and return its result to the awaiting coroutine."""
        return await self._loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def submit(self, fn: Callable[[], None]) -> None:
        """Queue ``fn`` on the metadata thread (from any thread); failures are logged."""

        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("Metadata work failed")

        try:
            self._executor.submit(run)
        except RuntimeError:
            pass  # shut down: the broker is stopping

    def to_loop(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on the event loop: now when called there, else as soon as it can."""
        if threading.get_ident() == self._loop_thread:
            fn(*args)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
