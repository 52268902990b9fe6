"""Frames and connections under abuse, against a real broker process: announced sizes cost only
the bytes sent, and max.connections (with the inter-broker exemption), max.connections.per.ip
(with its overrides) and connections.max.idle.ms are honoured as Kafka honours them."""

from __future__ import annotations

import re
import socket
import struct
import time

import pytest

from tests.abuse_clients import announce, rss_bytes
from tests.broker_process import BrokerProcess
from tests.wire_client import encode_request, request_entity

MB = 1 << 20
API_VERSIONS = encode_request(request_entity(18, 0, {}), 7)


def _connect(port: int, source: str = "127.0.0.1", timeout: float = 10.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))


def _answered(sock: socket.socket, timeout: float = 10.0) -> bool:
    """Whether an ApiVersions request on ``sock`` is answered within ``timeout`` (False when the
    broker closes the connection or says nothing)."""
    sock.settimeout(timeout)
    try:
        sock.sendall(API_VERSIONS)
        head = _recv_exactly(sock, 4)
        if head is None:
            return False
        return _recv_exactly(sock, struct.unpack(">i", head)[0]) is not None
    except (TimeoutError, ConnectionError):
        return False


def _recv_exactly(sock: socket.socket, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _closed_by_broker(sock: socket.socket, timeout: float = 10.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionError:
        return True
    except TimeoutError:
        return False


def _ports(broker: BrokerProcess) -> list[int]:
    return broker.listener_ports


@pytest.fixture
def start(tmp_path):
    brokers = []

    def make(overrides: dict[str, str]) -> BrokerProcess:
        broker = BrokerProcess(tmp_path / f"b{len(brokers)}", {"broker.id": "0", **overrides}).start()
        brokers.append(broker)
        return broker

    yield make
    for broker in brokers:
        broker.stop()


def test_frames_announced_but_not_sent_cost_the_broker_only_the_bytes_sent(start):
    broker = start({})
    pid = broker.process.pid
    before = rss_bytes(pid)
    flood = [announce(broker.port, 100_000_000, b"x" * 1024) for _ in range(10)]
    try:
        with _connect(broker.port) as probe:
            assert _answered(probe)  # the broker has read what was sent before the probe
        peak = max(rss_bytes(pid) for _ in range(20) if time.sleep(0.05) is None)
    finally:
        for sock in flood:
            sock.close()
    # Ten 100 MB announcements used to cost 1 GB before a byte of them arrived.
    assert peak - before < 64 * MB, f"RSS grew by {(peak - before) / MB:.0f} MiB"


def test_max_connections_per_ip_closes_the_connection_past_it_and_overrides_apply(start):
    broker = start({"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "127.0.0.2:3"})
    local = [_connect(broker.port) for _ in range(2)]
    other = [_connect(broker.port, "127.0.0.2") for _ in range(3)]
    try:
        assert all(_answered(sock) for sock in local + other)
        with _connect(broker.port) as third_local, _connect(broker.port, "127.0.0.2") as fourth_other:
            assert _closed_by_broker(third_local)
            assert _closed_by_broker(fourth_other)
        # The broker's log is read by another thread: wait for the lines rather than race it.
        broker.wait_for(re.escape("Rejected connection from 127.0.0.1, address already has the configured maximum of 2 connections."))
        broker.wait_for(re.escape("Rejected connection from 127.0.0.2, address already has the configured maximum of 3 connections."))
        local.pop().close()  # a slot is free again
        deadline = time.monotonic() + 10
        while True:
            with _connect(broker.port) as again:
                if _answered(again, timeout=2):
                    break
            assert time.monotonic() < deadline, "no connection accepted after one closed"
    finally:
        for sock in local + other:
            sock.close()


def test_max_connections_holds_new_connections_in_the_backlog_until_one_closes(start):
    broker = start({"max.connections": "2"})
    first, second = _connect(broker.port), _connect(broker.port)
    try:
        assert _answered(first) and _answered(second)
        with _connect(broker.port) as waiting:  # the kernel completes the handshake; the broker does not accept it
            waiting.sendall(API_VERSIONS)
            waiting.settimeout(1.0)
            with pytest.raises(TimeoutError):
                waiting.recv(1)
            first.close()
            waiting.settimeout(10.0)
            head = _recv_exactly(waiting, 4)
            assert head is not None and _recv_exactly(waiting, struct.unpack(">i", head)[0]) is not None
    finally:
        first.close()
        second.close()


def test_the_inter_broker_listener_is_exempt_and_closes_a_connection_of_another_listener(start):
    broker = start(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "max.connections": "1",
        }
    )
    client_port, internal_port = _ports(broker)
    client = _connect(client_port)
    try:
        assert _answered(client)
        with _connect(internal_port) as internal:
            assert _answered(internal)  # past max.connections: the inter-broker listener is exempt
            assert _closed_by_broker(client)  # and the client listener gives up its connection
    finally:
        client.close()


def test_idle_connections_and_half_sent_frames_are_closed_after_connections_max_idle_ms(start):
    broker = start({"connections.max.idle.ms": "1000"})
    silent = _connect(broker.port)
    half_frame = announce(broker.port, 100, b"\x00\x12")  # a slowloris: 6 of 104 bytes, then nothing
    busy = _connect(broker.port)
    try:
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:  # a connection in use is not idle
            assert _answered(busy)
            time.sleep(0.2)
        assert _closed_by_broker(silent)
        assert _closed_by_broker(half_frame)
        assert _answered(busy)
    finally:
        for sock in (silent, half_frame, busy):
            sock.close()


def test_queued_max_request_bytes_holds_requests_while_announced_ones_use_it_up(start):
    broker = start({"queued.max.request.bytes": "104857600"})
    hog = announce(broker.port, 104_857_600, b"x" * 1024)  # takes the whole pool, as in Kafka
    try:
        with _connect(broker.port) as waiting:
            waiting.sendall(API_VERSIONS)
            waiting.settimeout(1.0)
            with pytest.raises(TimeoutError):
                waiting.recv(1)
            hog.close()  # its memory goes back: the waiting request is read and answered
            waiting.settimeout(10.0)
            head = _recv_exactly(waiting, 4)
            assert head is not None and _recv_exactly(waiting, struct.unpack(">i", head)[0]) is not None
    finally:
        hog.close()
