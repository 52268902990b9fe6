"""The network layer: requests answered as they are read, or by the connection's task, in order.

Like Kafka's SocketServer, a connection's requests are processed one at a time and answered in
the order they came (a client pipelines; the broker does not reorder). A request whose handler
never waits is answered inside the read callback when nothing is queued ahead of it; the others
(Fetch, JoinGroup, SyncGroup), and every request behind them, go to the connection's task.

A frame larger than ``socket.request.max.bytes``, a header or body that does not parse, an
unknown API key or a version the registry does not serve closes that connection with one log
line, and nothing read after it is served; ApiVersions is the exception, answered in v0 with
UNSUPPORTED_VERSION and the served ranges, as Kafka does, so a newer client can fall back. Any
other failure inside a handler is logged with its traceback and closes only that connection.
Fetch responses send large file ranges with ``sendfile``.

Frames are read by a buffered protocol (``Connection``, on ``kcli.protocol.frame_stream``): a
large frame (a produce request) is received straight into a buffer of its own, so its bytes are
copied once, by the kernel, on their way in.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kcli.broker.handlers import Api, RawResponse
from kcli.errors import ErrorCode
from kcli.protocol import framing, mapping_encoder, messages
from kcli.protocol.frame_stream import FrameStream

log = logging.getLogger("kcli.broker.network")

# Ranges smaller than this are read and written with the response: a sendfile call costs a
# transport flush and a system call, more than copying a small range.
SENDFILE_MIN_BYTES = 64 * 1024
# A connection stops reading once this many frames, or this many bytes, wait to be handled.
MAX_QUEUED_FRAMES = 4
MAX_QUEUED_BYTES = 16 << 20


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request besides its body."""

    broker: Any
    header: framing.RequestHeader
    peer: str
    close_connection: bool = False

    @property
    def api_version(self) -> int:
        return self.header.api_version


class CloseConnection(Exception):
    """Raised inside the network layer to drop a connection after logging why."""


class _FileRange:
    """The file object ``loop.sendfile`` wants, over a descriptor another object owns."""

    mode = "rb"

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def seek(self, offset: int, whence: int = 0) -> int:
        return offset


class Server:
    def __init__(self, broker: Any, registry: Mapping[int, Api], *, max_request_size: int = framing.DEFAULT_MAX_REQUEST_SIZE) -> None:
        self.broker = broker
        self.registry = registry
        self.max_request_size = max_request_size
        self._servers: list[asyncio.base_events.Server] = []
        self._connections: set[asyncio.Task] = set()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def listen(self, host: str, port: int) -> tuple[str, int]:
        """Start accepting on (host, port); returns the bound address (port 0 picks a free one)."""
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: Connection(self), host or None, port, reuse_address=True)
        self._servers.append(server)
        bound = server.sockets[0].getsockname()
        return bound[0], bound[1]

    def stop_accepting(self) -> None:
        for server in self._servers:
            server.close()

    async def drain_and_close(self, timeout: float) -> None:
        """Wait (bounded) for in-flight requests to finish, then drop every connection."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            log.warning("Closing connections with %d requests still in flight", self._in_flight)
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=timeout)

    # -- one connection ----------------------------------------------------------------------------

    async def serve(self, connection: Connection) -> None:
        """Answer the requests ``answer_now`` left to the connection's task, in order, until the
        connection closes or must be closed."""
        task = asyncio.current_task()
        self._connections.add(task)
        try:
            while (frame := await connection.next_frame()) is not None:
                self._begin()
                try:
                    response = self._handle(frame, connection.peer)
                    if asyncio.iscoroutine(response):
                        response = await response
                    if response is not None:
                        await self._write(connection, response)
                finally:
                    self._end()
        except asyncio.CancelledError:
            pass
        except Exception as e:
            _log_failure(connection, e)
        finally:
            self._connections.discard(task)
            connection.close()

    def answer_now(self, connection: Connection, frame: bytes | memoryview) -> bool:
        """Answer ``frame`` within this call when its API answers without waiting (every API but
        Fetch, JoinGroup and SyncGroup): no task switch between reading a request and writing its
        answer. False leaves the frame to the connection's task."""
        api = self.registry.get(framing.peek_api_key(frame))
        if api is None or api.waits:
            return False
        try:
            response = self._handle(frame, connection.peer)
            if response is not None:
                connection.write(response[0] if len(response) == 1 else b"".join(map(_inline, response)))
        except Exception as e:
            _log_failure(connection, e)
            connection.close()
        return True

    def _begin(self) -> None:
        self._in_flight += 1
        self._idle.clear()

    def _end(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0:
            self._idle.set()

    def _handle(self, frame: bytes | memoryview, peer: str) -> Any:
        """The response frame's chunks (size first), None when nothing is to be sent, or, for a
        handler that waits, a coroutine giving one of those."""
        try:
            api_key, api_version, correlation_id = framing.peek_api(frame)
            api = self.registry.get(api_key)
            if api is None:
                raise CloseConnection(f"unknown API key {api_key}")
            if not api.serves(api_version):
                if api_key == framing.API_VERSIONS_KEY:
                    return self._unsupported_api_versions(correlation_id)
                raise CloseConnection(f"{api.name} version {api_version} is not served (versions {api.min_version}-{api.max_version})")
            flexible = messages.is_flexible(api_key, api_version)
            header, body_offset = framing.decode_request_header(frame, flexible)
        except framing.InvalidRequest as e:
            raise CloseConnection(str(e)) from None
        try:
            request = messages.decode_request(api_key, api_version, frame, body_offset)
        except Exception as e:
            raise CloseConnection(f"malformed {api.name} v{api_version} request: {e}") from None
        ctx = RequestContext(self.broker, header, peer)
        result = api.handle(ctx, request)
        if api.waits:
            return self._respond_later(api, ctx, result)
        return self._respond(api, ctx, result)

    async def _respond_later(self, api: Api, ctx: RequestContext, pending: Any) -> list[Any] | None:
        return self._respond(api, ctx, await pending)

    def _respond(self, api: Api, ctx: RequestContext, result: Any) -> list[Any] | None:
        if ctx.close_connection:
            raise CloseConnection(f"{api.name} with acks=0 failed")
        if result is None:
            return None
        header = ctx.header
        response_flexible = messages.is_flexible(api.key, header.api_version) and api.key != framing.API_VERSIONS_KEY
        head = framing.response_header(header.correlation_id, response_flexible)
        if isinstance(result, RawResponse):
            return [framing.frame_size(len(head) + result.size), head, *result.chunks]
        body = mapping_encoder.encode_response(api.key, header.api_version, result)
        return [framing.frame_size(len(head) + len(body)) + head + body]

    def _unsupported_api_versions(self, correlation_id: int) -> list[Any]:
        body = mapping_encoder.encode_response(
            framing.API_VERSIONS_KEY, 0, {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": api_ranges(self.registry)}
        )
        head = framing.response_header(correlation_id, False)
        return [framing.frame_size(len(head) + len(body)) + head + body]

    async def _write(self, connection: Connection, chunks: list[Any]) -> None:
        pending: list[bytes] = []
        for chunk in chunks:
            if isinstance(chunk, bytes):
                pending.append(chunk)
            elif chunk.size < SENDFILE_MIN_BYTES:
                pending.append(_inline(chunk))
            else:
                if pending:
                    connection.write(b"".join(pending))
                    pending = []
                await connection.send_range(chunk)
        if pending:
            connection.write(b"".join(pending) if len(pending) > 1 else pending[0])
        await connection.drain()


class Connection(FrameStream):
    """One client connection: queues the request frames it reads (``FrameStream``) for the
    connection's task (``Server.serve``); writes responses with flow control.

    A size prefix outside 0..``socket.request.max.bytes`` closes the connection once the frames
    before it are answered. Reading pauses while ``MAX_QUEUED_FRAMES`` or ``MAX_QUEUED_BYTES``
    wait, so a client that pipelines without reading its answers is held back by TCP, not by the
    broker's memory."""

    def __init__(self, server: Server) -> None:
        super().__init__(server.max_request_size)
        self._server = server
        self.peer = "?"
        self._frames: collections.deque[bytes | memoryview | CloseConnection | None] = collections.deque()
        self._queued_bytes = 0
        self._frame_waiter: asyncio.Future | None = None
        self._reading_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.peer = _peer_name(transport.get_extra_info("peername"))
        asyncio.get_running_loop().create_task(self._server.serve(self))

    # -- frames ------------------------------------------------------------------------------------

    def frame_received(self, body: bytes | memoryview) -> None:
        if self.transport.is_closing():
            return  # a request before it closed the connection: the rest of the read is not served
        # Answered at once only while the task waits for work and the answers drain: otherwise
        # it would overtake the requests before it, or write past the transport's high-water mark.
        idle = self._frame_waiter is not None and not self._frames and not self._writing_paused
        if idle and self._server.answer_now(self, body):
            return
        self._push(body, len(body))

    def size_refused(self, size: int) -> None:
        self._push(CloseConnection(f"request size {size} is outside 0..{self.max_frame_size} (socket.request.max.bytes)"), 0)

    def stream_ended(self, exc: Exception | None) -> None:
        self._push(None, 0)

    def _push(self, item: bytes | memoryview | CloseConnection | None, size: int) -> None:
        self._frames.append(item)
        self._queued_bytes += size
        if not self._reading_paused and not self.lost and not self.refused and (len(self._frames) >= MAX_QUEUED_FRAMES or self._queued_bytes >= MAX_QUEUED_BYTES):
            self._reading_paused = True
            self.transport.pause_reading()
        if self._frame_waiter is not None and not self._frame_waiter.done():
            self._frame_waiter.set_result(None)

    async def next_frame(self) -> bytes | memoryview | None:
        """The next request frame's body, or None once the peer is gone; raises CloseConnection
        where a bad size prefix was read."""
        while not self._frames:
            self._frame_waiter = asyncio.get_running_loop().create_future()
            try:
                await self._frame_waiter
            finally:
                self._frame_waiter = None
        item = self._frames.popleft()
        if isinstance(item, CloseConnection):
            raise item
        if item is not None:
            self._queued_bytes -= len(item)
            if self._reading_paused and not self.lost and not self.refused and len(self._frames) < MAX_QUEUED_FRAMES and self._queued_bytes < MAX_QUEUED_BYTES:
                self._reading_paused = False
                self.transport.resume_reading()
        return item

    # -- writing -----------------------------------------------------------------------------------

    async def send_range(self, piece: Any) -> None:
        await self.drain()
        await asyncio.get_running_loop().sendfile(self.transport, _FileRange(piece.fileno), piece.position, piece.size)


def api_ranges(registry: Mapping[int, Api]) -> list[dict[str, int]]:
    return [{"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version} for api in registry.values()]


def _inline(chunk: Any) -> bytes:
    """A response chunk as bytes: a file range is read."""
    return chunk if isinstance(chunk, bytes) else chunk.read()


def _log_failure(connection: Connection, exc: Exception) -> None:
    """Why a connection is being closed, as Kafka logs it: a lost peer says nothing."""
    if isinstance(exc, ConnectionError):
        return
    if isinstance(exc, CloseConnection):
        log.info("Closing connection from %s: %s", connection.peer, exc)
    else:
        log.error("Closing connection from %s after an unexpected error", connection.peer, exc_info=exc)


def _peer_name(peer: Any) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)
