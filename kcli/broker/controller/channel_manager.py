"""The controller's channel to every live broker: Kafka's ControllerChannelManager.

One queue and one sender per live broker, the controller's own broker included (it is sent to
over the network like the others, as in Kafka). A sender takes its queue's requests in order and
sends each over a ``BrokerConnection`` (``kcli/client/connection.py``, as Kafka's controller uses
the clients' NetworkClient) to the broker's inter-broker endpoint, as registered under
``/brokers/ids``; a request that fails (no connection, a lost connection, no answer in
``controller.socket.timeout.ms``) is sent again after a short pause, on a new connection, until it
is answered or the broker is removed (it died, or this broker is no longer the controller). The
answer goes to the request's callback. A request that cannot be sent at all (it does not encode)
is dropped with one error line, and the sender goes on with the next.

Threads: the controller calls ``add_broker``, ``remove_broker`` and ``send`` from its metadata
thread; everything else, and the callbacks, runs on the broker's event loop, which never waits
on the network: the senders are its tasks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kcli.errors import KcliError

log = logging.getLogger("kcli.broker.controller.channel")

# Kafka's RequestSendThread pause before retrying a request that could not be sent.
RETRY_BACKOFF_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class QueueItem:
    api_key: int
    fields: Mapping[str, Any]
    callback: Callable[[Any], None] | None


class _BrokerChannel:
    """One broker's queue and its sender task, on the loop."""

    def __init__(self, controller_id: int, broker_id: int, host: str, port: int, timeout: float, security: Any = None) -> None:
        self.security = security
        self.controller_id = controller_id
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.timeout = timeout
        self.queue: asyncio.Queue[QueueItem] = asyncio.Queue()
        self.connection = None
        # Set before the task is cancelled: Python 3.11's wait_for can lose a cancellation that
        # meets a failed connection attempt, and the sender must not retry forever after it.
        self.stopped = False
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"controller-to-broker-{broker_id}")

    async def _run(self) -> None:
        while not self.stopped:
            item = await self.queue.get()
            try:
                answer = await self._send_until_answered(item)
            except Exception as e:
                # Not a network failure but a request that can never be sent (it does not encode):
                # sending it again would fail again, and the requests queued behind it must go.
                log.error(
                    "[Controller id=%d, targetBrokerId=%d] Dropped request %d to broker %d that cannot be sent: %s: %s",
                    self.controller_id, self.broker_id, item.api_key, self.broker_id, type(e).__name__, e,
                )
                continue
            if item.callback is not None:
                try:
                    item.callback(answer)
                except Exception:
                    log.exception("[Controller id=%d] The callback of a request to broker %d failed", self.controller_id, self.broker_id)

    async def _send_until_answered(self, item: QueueItem) -> Any:
        from kcli.client.connection import BrokerConnection

        failures = 0
        while True:
            if self.stopped:
                raise asyncio.CancelledError()
            try:
                if self.connection is None or self.connection.closed:
                    self.connection = await BrokerConnection.open(
                        self.host, self.port, client_id=f"controller-{self.controller_id}", timeout=self.timeout, security=self.security
                    )
                return await self.connection.call(item.api_key, item.fields, timeout=self.timeout)
            except (KcliError, OSError) as e:
                failures += 1
                if failures == 1 or failures % 50 == 0:
                    log.warning(
                        "[Controller id=%d, targetBrokerId=%d] Controller %d epoch failed to send request to broker %d "
                        "at %s:%d (%s); trying again",
                        self.controller_id, self.broker_id, self.controller_id, self.broker_id, self.host, self.port, e,
                    )
                await self._close_connection()
                await asyncio.sleep(RETRY_BACKOFF_SECONDS)

    async def _close_connection(self) -> None:
        if self.connection is not None:
            connection, self.connection = self.connection, None
            await connection.close()

    async def stop(self) -> None:
        self.stopped = True
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self._close_connection()


class ControllerChannelManager:
    def __init__(self, loop: asyncio.AbstractEventLoop, controller_id: int, *, timeout_ms: int = 30_000, security: Any = None) -> None:
        """``security``: how to reach the inter-broker listener (``client.security_config.ClientSecurity``)."""
        self._security = security
        self._loop = loop
        self.controller_id = controller_id
        self._timeout = timeout_ms / 1000
        self._channels: dict[int, _BrokerChannel] = {}
        self._stopping: set[asyncio.Task] = set()

    # -- from the controller's thread -------------------------------------------------------------

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        self._on_loop(self._add, broker_id, host, port)

    def remove_broker(self, broker_id: int) -> None:
        self._on_loop(self._remove, broker_id)

    def send(self, broker_id: int, api_key: int, fields: Mapping[str, Any], callback: Callable[[Any], None] | None = None) -> None:
        """Queue a request to ``broker_id``; a broker not added (not live) is skipped, as Kafka's
        controller skips brokers it has no channel to."""
        self._on_loop(self._enqueue, broker_id, QueueItem(api_key, fields, callback))

    def shutdown(self) -> None:
        """Remove every broker's channel (the controller resigned or the broker stops)."""
        self._on_loop(self._remove_all)

    # -- on the loop ------------------------------------------------------------------------------

    def _on_loop(self, fn: Callable[..., None], *args: Any) -> None:
        if self._loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            fn(*args)
        else:
            self._loop.call_soon_threadsafe(fn, *args)

    def _add(self, broker_id: int, host: str, port: int) -> None:
        current = self._channels.get(broker_id)
        if current is not None:
            if (current.host, current.port) == (host, port):
                return
            self._remove(broker_id)
        self._channels[broker_id] = _BrokerChannel(self.controller_id, broker_id, host, port, self._timeout, self._security)

    def _remove(self, broker_id: int) -> None:
        channel = self._channels.pop(broker_id, None)
        if channel is not None:
            task = self._loop.create_task(channel.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    def _remove_all(self) -> None:
        for broker_id in list(self._channels):
            self._remove(broker_id)

    def _enqueue(self, broker_id: int, item: QueueItem) -> None:
        channel = self._channels.get(broker_id)
        if channel is None:
            log.debug("[Controller id=%d] No channel to broker %d: request %d dropped", self.controller_id, broker_id, item.api_key)
            return
        channel.queue.put_nowait(item)

    async def close(self) -> None:
        """Stop every sender, on the loop, and wait for them."""
        channels = list(self._channels.values())
        self._channels.clear()
        await asyncio.gather(*(channel.stop() for channel in channels), *self._stopping, return_exceptions=True)
