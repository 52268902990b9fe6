"""An answer that comes through a callback, now or later.

The coordinators finish a step in the callback of their acks=-1 append (Kafka's
``responseCallback``): when the leader is the whole ISR the callback runs within the call,
otherwise once the followers have the records. A handler passes a ``Completion`` as that
callback and answers with ``answer(completions, build)``: the response at once when every
completion is done, else a coroutine the server awaits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

_UNSET = object()


class Completion:
    """A callback that keeps the first value it is called with."""

    __slots__ = ("_value", "_waiter")

    def __init__(self) -> None:
        self._value: Any = _UNSET
        self._waiter: asyncio.Future | None = None

    def __call__(self, *value: Any) -> None:
        if self._value is not _UNSET:
            return
        self._value = value[0] if len(value) == 1 else value
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    @property
    def done(self) -> bool:
        return self._value is not _UNSET

    def result(self) -> Any:
        if self._value is _UNSET:
            raise RuntimeError("not answered yet")
        return self._value

    async def wait(self) -> Any:
        if self._value is _UNSET:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self._value


def answer(completions: Completion | Sequence[Completion], build: Callable[..., Any]) -> Any:
    """``build(result)`` of one completion, ``build([result, ...])`` of several: at once when
    all are done, else a coroutine giving it once they are."""
    several = not isinstance(completions, Completion)
    items = list(completions) if several else [completions]
    if all(c.done for c in items):
        return build([c.result() for c in items]) if several else build(items[0].result())

    async def later() -> Any:
        results = [await c.wait() for c in items]
        return build(results) if several else build(results[0])

    return later()
