"""A synchronous facade for the tools: one event loop, driven call by call.

The tools are plain blocking programs. ``SyncRunner`` owns a private event loop and runs each
coroutine to completion on it, so connections opened by one call (a ``NetworkClient``) are reused by
the next without a background thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class SyncRunner:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coroutine)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    def __enter__(self) -> SyncRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
