"""Kafka's size-prefixed frames read off a connection in place, and writes with flow control.

``FrameStream`` is the asyncio buffered protocol under both ends of a connection: the broker's
(``kcli.broker.server.Connection``, requests) and the client's (``kcli.client.connection``,
answers). Small frames are cut out of one receive buffer and come out as ``bytes``; a frame larger
than half that buffer is received straight into a buffer of its own and comes out as a read-only
view of it, so its bytes are copied once, by the kernel, on their way in. A size prefix outside
0..``max_frame_size`` stops reading: nothing after it can be trusted to be a frame.
"""

from __future__ import annotations

import asyncio
import socket

from kcli.protocol import framing

# The receive buffer small frames are cut from; a frame larger than half of it gets its own.
RECEIVE_BUFFER_BYTES = 64 * 1024


class FrameStream(asyncio.BufferedProtocol):
    """Subclasses take frames in ``frame_received`` and the end of the stream in ``stream_ended``."""

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray(RECEIVE_BUFFER_BYTES)
        self._start = self._end = 0  # the unread bytes of _buffer
        self._large: bytearray | None = None  # a frame body being received into its own buffer
        self._large_filled = 0
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future] = []
        self.lost = False
        self.refused = False  # a bad size prefix was read: nothing after it is a frame

    # -- what subclasses handle ----------------------------------------------------------------------

    def frame_received(self, body: bytes | memoryview) -> None:
        raise NotImplementedError

    def size_refused(self, size: int) -> None:
        """A size prefix outside 0..max_frame_size was read; reading has stopped."""
        raise NotImplementedError

    def stream_ended(self, exc: Exception | None) -> None:
        """The peer closed its side (``exc`` None) or the connection was lost; called once for each."""

    # -- asyncio callbacks ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._large is not None:
            return memoryview(self._large)[self._large_filled :]
        if self._end == len(self._buffer):
            # The unread bytes are the start of a frame shorter than half the buffer: move them to the front.
            unread = self._end - self._start
            self._buffer[:unread] = self._buffer[self._start : self._end]
            self._start, self._end = 0, unread
        return memoryview(self._buffer)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self.refused:
            return
        if self._large is None:
            self._end += nbytes
            self._cut_frames()
            return
        self._large_filled += nbytes
        if self._large_filled == len(self._large):
            body, self._large = self._large, None
            self.frame_received(memoryview(body).toreadonly())

    def eof_received(self) -> bool:
        self.stream_ended(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._wake_drain_waiters()
        self.stream_ended(exc or ConnectionResetError("connection lost"))

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._wake_drain_waiters()

    # -- frames --------------------------------------------------------------------------------------

    def _cut_frames(self) -> None:
        buffer, limit = self._buffer, self.max_frame_size
        while self._end - self._start >= 4:
            size = framing.SIZE.unpack_from(buffer, self._start)[0]
            if size < 0 or size > limit:
                self._start = self._end = 0
                self.refused = True
                self.transport.pause_reading()
                self.size_refused(size)
                return
            body_start = self._start + 4
            available = self._end - body_start
            if available >= size:
                self._start = body_start + size
                self.frame_received(bytes(buffer[body_start : body_start + size]))
            elif size > len(buffer) // 2:
                self._large = bytearray(size)
                self._large[:available] = buffer[body_start : self._end]
                self._large_filled = available
                self._start = self._end = 0
                return
            else:
                break
        if self._start == self._end:
            self._start = self._end = 0

    # -- writing -------------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self.lost:
            raise ConnectionResetError("connection lost")
        self.transport.write(data)

    def writelines(self, pieces: list[bytes]) -> None:
        if self.lost:
            raise ConnectionResetError("connection lost")
        self.transport.writelines(pieces)

    async def drain(self) -> None:
        """Wait while the transport's write buffer is over its high-water mark."""
        if self.lost:
            raise ConnectionResetError("connection lost")
        if self._writing_paused:
            waiter = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter
            if self.lost:
                raise ConnectionResetError("connection lost")

    def _wake_drain_waiters(self) -> None:
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
