"""The broker's frame reader (server.Connection on network.frame_stream): frames cut out of a byte stream however it is split."""

from __future__ import annotations

import asyncio
import random
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.broker.network import server
from kcli.broker.network.server import CloseConnection, Connection
from kcli.network import frame_stream


class FakeTransport:
    def __init__(self) -> None:
        self.paused = False
        self.pause_calls = 0
        self.written: list[bytes] = []
        self.closed = False

    def get_extra_info(self, name: str):
        return ("127.0.0.1", 5555) if name == "peername" else None

    def pause_reading(self) -> None:
        self.paused = True
        self.pause_calls += 1

    def resume_reading(self) -> None:
        self.paused = False

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


class FakeServer:
    def __init__(self, max_request_size: int = 100 << 20, queued_max_request_bytes: int = -1) -> None:
        self.max_request_size = max_request_size
        self.memory = server.RequestMemory(queued_max_request_bytes)
        self._open: set[Connection] = set()

    def _connection_closed(self, listener: str, address: str) -> None:
        pass

    async def serve(self, connection: Connection) -> None:
        pass

    def answer_now(self, connection: Connection, frame: bytes) -> bool:
        return False  # every frame goes to the queue these tests read


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def feed(connection: Connection, data: bytes) -> None:
    """Deliver ``data`` as the event loop would: into the buffers the protocol hands out."""
    while data:
        buffer = connection.get_buffer(len(data))
        n = min(len(buffer), len(data))
        buffer[:n] = data[:n]
        connection.buffer_updated(n)
        data = data[n:]


async def open_connection(max_request_size: int = 100 << 20) -> tuple[Connection, FakeTransport]:
    connection = Connection(FakeServer(max_request_size))
    transport = FakeTransport()
    connection.connection_made(transport)
    await asyncio.sleep(0)
    return connection, transport


async def read_all(connection: Connection, count: int) -> list[bytes]:
    return [bytes(await connection.next_frame()) for _ in range(count)]


def random_body(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


# Small frames and frames larger than half the receive buffer (received into their own buffers).
sizes = st.one_of(st.integers(0, 300), st.integers(frame_stream.RECEIVE_BUFFER_BYTES // 2, frame_stream.RECEIVE_BUFFER_BYTES * 3))
bodies = st.lists(st.builds(random_body, sizes, st.integers(0, 2**32)), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(bodies=bodies, cuts=st.lists(st.integers(min_value=1, max_value=200_000), max_size=20))
def test_frames_come_out_whole_and_in_order_however_the_stream_is_split(bodies, cuts):
    async def scenario() -> list[bytes]:
        connection, transport = await open_connection()
        stream = b"".join(framed(body) for body in bodies)
        positions = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
        received: list[bytes] = []
        for start, end in zip(positions, positions[1:]):
            feed(connection, stream[start:end])
            while connection._frames:  # what the serving task would take as the loop runs
                received.append(bytes(await connection.next_frame()))
            assert not transport.paused
        return received

    assert asyncio.run(scenario()) == bodies


def allocated(stream: frame_stream.FrameStream) -> int:
    """The bytes a large frame's chunks hold so far, filled or not."""
    return sum(len(chunk) for chunk in stream._large)


def test_a_large_frame_is_received_into_its_own_chunks_added_as_its_bytes_arrive():
    async def scenario():
        connection, _ = await open_connection()
        body = bytes(range(256)) * 1024  # 256 KiB, larger than the receive buffer
        stream = framed(body)
        feed(connection, stream[:1000])
        sizes = [allocated(connection)]
        for start in range(1000, len(stream), 50_000):
            feed(connection, stream[start : start + 50_000])
            if connection._large is not None:
                sizes.append((connection._large_received, allocated(connection)))
        frame = await connection.next_frame()
        return frame, body, sizes

    frame, body, sizes = asyncio.run(scenario())
    # The broker's frames are its own to patch (a produce request's records are checked and
    # given their offsets where they arrived).
    assert isinstance(frame, memoryview) and not frame.readonly
    assert bytes(frame) == body
    assert sizes[0] <= frame_stream.INITIAL_LARGE_BUFFER_BYTES
    assert len(sizes) > 3  # the frame came in several reads, each looked at
    # The chunks never hold more than twice what arrived (or the first chunk's size).
    assert all(size <= max(2 * filled, frame_stream.INITIAL_LARGE_BUFFER_BYTES) for filled, size in sizes[1:])


def test_an_announced_size_costs_nothing_until_its_bytes_arrive():
    async def scenario():
        connection, _ = await open_connection()
        feed(connection, struct.pack(">i", 100_000_000) + b"x" * 10)  # a 100 MB frame announced, 10 bytes sent
        return allocated(connection), len(connection._buffer)

    large, receive = asyncio.run(scenario())
    assert large <= frame_stream.INITIAL_LARGE_BUFFER_BYTES
    assert receive <= frame_stream.RECEIVE_BUFFER_BYTES


def test_a_client_stream_takes_an_answer_whole_up_to_its_own_limit():
    """The client trusts the broker it reached, bounded by its limit: one buffer of the announced
    size, no growing copies; past the limit the size is refused before anything is allocated."""

    class Answers(frame_stream.FrameStream):
        def __init__(self, limit: int) -> None:
            super().__init__(limit, trust_announced_sizes=True)
            self.frames: list[bytes] = []
            self.refused_sizes: list[int] = []

        def frame_received(self, body) -> None:
            assert isinstance(body, bytes) or body.readonly  # a client's answers are not written to
            self.frames.append(bytes(body))

        def size_refused(self, size: int) -> None:
            self.refused_sizes.append(size)

    class Transport:
        def pause_reading(self) -> None:
            pass

    def receive(stream: Answers, data: bytes) -> None:
        buffer = stream.get_buffer(-1)
        buffer[: len(data)] = data
        del buffer
        stream.buffer_updated(len(data))

    body = bytes(range(256)) * 1024
    stream = Answers(1_000_000)
    stream.transport = Transport()
    receive(stream, framed(body)[:1000])
    assert [len(chunk) for chunk in stream._large] == [len(body)]
    for start in range(1000, len(body) + 4, 60_000):
        receive(stream, framed(body)[start : start + 60_000])
    assert stream.frames == [body]

    refusing = Answers(1_000_000)
    refusing.transport = Transport()
    receive(refusing, struct.pack(">i", 1_213_486_160) + b"TTP/1.1 400")  # "HTTP" read as a size
    assert refusing.refused_sizes == [1_213_486_160] and refusing._large is None


def test_the_receive_buffer_starts_small_and_grows_while_reads_fill_it():
    async def scenario():
        connection, _ = await open_connection()
        first = len(connection._buffer)
        feed(connection, b"".join(framed(b"y" * 2000) for _ in range(3)))  # 3 of the 4 queued frames the queue allows
        return first, len(connection._buffer), await read_all(connection, 3)

    first, grown, frames = asyncio.run(scenario())
    assert first == frame_stream.INITIAL_RECEIVE_BUFFER_BYTES
    assert first < grown <= frame_stream.RECEIVE_BUFFER_BYTES
    assert frames == [b"y" * 2000] * 3


def test_queued_max_request_bytes_holds_the_next_request_until_memory_is_given_back():
    async def scenario():
        shared = FakeServer(queued_max_request_bytes=150)
        first = Connection(shared)
        first_transport = FakeTransport()
        first.connection_made(first_transport)
        second = Connection(shared)
        second_transport = FakeTransport()
        second.connection_made(second_transport)
        await asyncio.sleep(0)
        feed(first, framed(b"a" * 200))  # admitted while any memory is left, as Kafka's pool does
        held = await first.next_frame()
        feed(second, framed(b"b" * 10))
        second_waits = not second._frames and second_transport.paused
        first.request_done(held)  # answered: its 200 bytes go back
        return second_waits, second_transport.paused, bytes(await second.next_frame()), shared.memory.available

    second_waits, still_paused, frame, available = asyncio.run(scenario())
    assert second_waits
    assert not still_paused
    assert frame == b"b" * 10
    assert available == 150 - 10


def test_a_closed_connection_gives_its_request_memory_back():
    async def scenario():
        shared = FakeServer(queued_max_request_bytes=1000)
        connection, _ = Connection(shared), None
        connection.connection_made(FakeTransport())
        await asyncio.sleep(0)
        feed(connection, framed(b"c" * 300) + struct.pack(">i", 500) + b"partial")
        before = shared.memory.available
        connection.release_memory()
        return before, shared.memory.available

    assert asyncio.run(scenario()) == (1000 - 300 - 500, 1000)


def test_a_size_prefix_over_the_limit_closes_after_the_earlier_frames():
    async def scenario():
        connection, transport = await open_connection(max_request_size=1000)
        feed(connection, framed(b"first") + struct.pack(">i", 1001) + b"rest")
        first = bytes(await connection.next_frame())
        try:
            await connection.next_frame()
        except CloseConnection as e:
            return first, str(e), transport.paused
        raise AssertionError("no CloseConnection")

    first, message, paused = asyncio.run(scenario())
    assert first == b"first"
    assert "request size 1001 is outside 0..1000" in message
    assert paused


def test_a_negative_size_prefix_closes():
    async def scenario():
        connection, _ = await open_connection()
        feed(connection, struct.pack(">i", -1))
        await connection.next_frame()

    try:
        asyncio.run(scenario())
    except CloseConnection as e:
        assert "request size -1" in str(e)
    else:
        raise AssertionError("no CloseConnection")


def test_reading_pauses_while_frames_wait_and_resumes_as_they_are_taken():
    async def scenario():
        connection, transport = await open_connection()
        feed(connection, b"".join(framed(b"x%d" % i) for i in range(server.MAX_QUEUED_FRAMES)))
        paused_when_full = transport.paused
        await connection.next_frame()
        return paused_when_full, transport.paused

    assert asyncio.run(scenario()) == (True, False)


def test_end_of_stream_ends_the_frames():
    async def scenario():
        connection, _ = await open_connection()
        feed(connection, framed(b"last") + b"\x00\x00")  # a partial size prefix at the end
        connection.eof_received()
        return bytes(await connection.next_frame()), await connection.next_frame()

    assert asyncio.run(scenario()) == (b"last", None)


def test_drain_waits_while_the_transport_is_full_and_fails_once_the_connection_is_lost():
    async def scenario():
        connection, _ = await open_connection()
        connection.pause_writing()
        waiting = asyncio.ensure_future(connection.drain())
        await asyncio.sleep(0)
        blocked = not waiting.done()
        connection.resume_writing()
        await waiting
        connection.pause_writing()
        lost = asyncio.ensure_future(connection.drain())
        await asyncio.sleep(0)
        connection.connection_lost(None)
        try:
            await lost
        except ConnectionResetError:
            return blocked, True
        return blocked, False

    assert asyncio.run(scenario()) == (True, True)


def test_a_refused_frame_size_says_what_the_peer_looks_like():
    from kcli.client.connection import refused_frame_message

    # A TLS alert record (content type 21, version 3.x) read as a size prefix.
    tls = int.from_bytes(b"\x15\x03\x03\x00", "big")
    assert refused_frame_message("h:1", tls, 100) == (
        f"h:1 is not a Kafka broker: it answered a frame of {tls} bytes, larger than the 100 the client accepts; "
        "its first bytes are a TLS record: is it an SSL listener? (security.protocol=SSL)"
    )
    assert refused_frame_message("h:1", -1, 100) == "h:1 is not a Kafka broker: it answered a frame of -1 bytes (a Kafka answer is 0 to 100 bytes here)"


def test_running_out_of_descriptors_pauses_accepting_instead_of_spinning(monkeypatch):
    import errno
    import socket as socket_module

    class ExhaustedSocket:
        def __init__(self) -> None:
            self.accepts = 0
            self._real = socket_module.socket()

        def fileno(self) -> int:
            return self._real.fileno()

        def accept(self):
            self.accepts += 1
            raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(server, "_ACCEPT_RETRY_SECONDS", 0.05)

    async def scenario():
        broker_server = server.Server(None, {})
        sock = ExhaustedSocket()
        listener = server._Listener("PLAINTEXT", sock)
        broker_server._listeners.append(listener)
        broker_server._accept(listener)
        paused = not listener.accepting
        attempts = sock.accepts
        await asyncio.sleep(0.2)  # about four retry delays
        retried = sock.accepts
        asyncio.get_running_loop().remove_reader(sock.fileno())
        sock._real.close()
        return paused, attempts, retried

    paused, attempts, retried = asyncio.run(scenario())
    assert paused and attempts == 1
    assert 2 <= retried <= 10  # tried again after each delay, not thousands of times
