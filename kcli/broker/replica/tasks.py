"""Stopping the replica package's background tasks (fetchers, the ISR change sender, the ISR
expiration check) the same way."""

from __future__ import annotations

import asyncio

# How long a broker that stops waits for one of its background tasks to end.
SHUTDOWN_WAIT_S = 5.0


async def cancel_and_wait(task: asyncio.Task | None) -> None:
    """Cancel ``task`` and wait for it, ``SHUTDOWN_WAIT_S`` at most: a cancellation that an await
    inside it lost (asyncio.wait_for can, when what it waits for completes at the same time) must
    not hold a broker's shutdown; the tasks also check a stop flag at each turn."""
    if task is not None:
        task.cancel()
        await asyncio.wait({task}, timeout=SHUTDOWN_WAIT_S)
