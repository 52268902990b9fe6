"""The controller's channel to brokers (ControllerChannelManager) against a real ``Server`` on
127.0.0.1: requests to one broker go in order, each is answered to its callback, a broker that
is not listening yet is tried again until it answers, and a broker not added is skipped."""

from __future__ import annotations

import asyncio
import socket
import types

from kcli.broker.controller.channel_manager import ControllerChannelManager
from kcli.broker.handlers import Api, api_versions
from kcli.broker.network.server import Server

TIMEOUT = 10.0
UPDATE_METADATA = 6


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def update_metadata_server(seen: list[int]) -> Server:
    def handle(ctx, request):
        seen.append(request.controller_epoch)
        return {"error_code": 0}

    registry = {
        18: Api(18, "api_versions", *api_versions.VERSIONS, api_versions.handle, False),
        UPDATE_METADATA: Api(UPDATE_METADATA, "update_metadata", 0, 8, handle, False),
    }
    return Server(types.SimpleNamespace(registry=registry), registry)


def fields(epoch: int) -> dict:
    return {"controller_id": 0, "controller_epoch": epoch, "broker_epoch": -1, "topic_states": [], "live_brokers": []}


def test_requests_reach_a_broker_in_order_even_when_it_starts_listening_later():
    async def scenario():
        loop = asyncio.get_running_loop()
        seen: list[int] = []
        answers: list[int] = []
        port = free_port()
        channel = ControllerChannelManager(loop, 0, timeout_ms=5000)
        channel.add_broker(1, "127.0.0.1", port)
        for epoch in (1, 2, 3):
            channel.send(1, UPDATE_METADATA, fields(epoch), lambda answer: answers.append(int(answer.error_code)))
        channel.send(2, UPDATE_METADATA, fields(9))  # no channel to broker 2: skipped
        await asyncio.sleep(0.3)  # nobody listens yet: the sender keeps trying
        assert seen == []
        server = update_metadata_server(seen)
        await server.listen("127.0.0.1", port)
        try:
            while len(answers) < 3:
                await asyncio.sleep(0.02)
            channel.remove_broker(1)
            channel.send(1, UPDATE_METADATA, fields(4))  # removed: skipped
            await asyncio.sleep(0.1)
        finally:
            await channel.close()
            server.stop_accepting()
            await server.drain_and_close(TIMEOUT)
        return seen, answers

    seen, answers = run(scenario())
    assert seen == [1, 2, 3]
    assert answers == [0, 0, 0]



def test_closing_stops_a_sender_whose_connection_attempt_swallowed_the_cancellation(monkeypatch):
    # Python 3.11's wait_for can lose a cancellation that meets a connection attempt failing at
    # the same moment: the sender then sees an OSError, not CancelledError. It must stop anyway.
    from kcli.client.connection import BrokerConnection

    async def open_losing_the_cancellation(*args, **kwargs):
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            pass
        raise OSError("Connect call failed")

    monkeypatch.setattr(BrokerConnection, "open", open_losing_the_cancellation)

    async def scenario():
        channel = ControllerChannelManager(asyncio.get_running_loop(), 0, timeout_ms=5000)
        channel.add_broker(1, "127.0.0.1", free_port())
        channel.send(1, UPDATE_METADATA, fields(1))
        await asyncio.sleep(0.1)  # the sender is connecting
        await asyncio.wait_for(channel.close(), TIMEOUT)
        assert [t for t in asyncio.all_tasks() if t.get_name().startswith("controller-to-broker")] == []

    run(scenario())
