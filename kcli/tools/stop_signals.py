"""SIGINT and SIGTERM as a request to stop, for the tools that run until they are stopped (Kafka's
shutdown hooks): the work in progress is cancelled, the tool finishes cleanly, and the exit status
is the JVM's after that signal (130, 143). A second signal ends the process at once."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable
from typing import Any, TypeVar

from kcli.errors import EXIT_SIGINT, EXIT_SIGTERM

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(Exception):
    """A signal asked the tool to stop (Kafka's WakeupException)."""


class StopSignals:
    """``with StopSignals() as stop:`` inside a running event loop; ``await stop.until(work)``."""

    def __init__(self) -> None:
        self.exit_code = 0
        self._event = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def __enter__(self) -> StopSignals:
        for s in SIGNALS:
            self._loop.add_signal_handler(s, self._on_signal, s)
        return self

    def __exit__(self, *exc: object) -> None:
        self._remove()

    def _remove(self) -> None:
        for s in SIGNALS:
            self._loop.remove_signal_handler(s)

    def _on_signal(self, signum: int) -> None:
        self.exit_code = EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM
        self._event.set()
        self._remove()

    async def until(self, awaitable: Awaitable[T]) -> T:
        """``awaitable``'s result, unless a signal comes first: then it is cancelled and Stopped raised."""
        if self._event.is_set():
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise Stopped
        work: asyncio.Future[Any] = asyncio.ensure_future(awaitable)
        stopped = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if work.done():
            return work.result()
        work.cancel()
        try:
            await work
        except BaseException:  # whatever the cancelled call was doing no longer matters
            pass
        raise Stopped
