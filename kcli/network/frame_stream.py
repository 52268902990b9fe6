"""Kafka's size-prefixed frames read off a connection in place, and writes with flow control.

``FrameStream`` is the asyncio buffered protocol under both ends of a connection: the broker's
(``kcli.broker.network.server.Connection``, requests) and the client's (``kcli.client.connection``,
answers). Small frames are cut out of one receive buffer and come out as ``bytes``; a frame larger
than half of ``RECEIVE_BUFFER_BYTES`` is received straight into chunks of its own and comes out as
a read-only view of them joined. With ``writable_frames`` (the broker: a produce request's records
are checked and patched where they arrived) every frame is a buffer of its own that may be
written: a small one a ``bytearray``, a large one a writable view.

Memory follows the bytes that arrived, never the sizes announced: the receive buffer starts small
and grows (to ``RECEIVE_BUFFER_BYTES``) only while reads fill it, and a large frame's chunks are
added as its bytes come, each as large as all before it together, so that they hold at most twice
what arrived and a peer that announces 100 MB and sends nothing costs a few KiB. The chunks are
joined once, when the frame is whole: after the kernel's copy the frame's bytes are copied once
more, where growing one buffer would zero a temporary, copy it in, and move the buffer each time it
doubles. The client, which chose its peer and bounds it by its own ``max_frame_size``, trusts the
announced size instead (``trust_announced_sizes``): one chunk of the whole size, nothing joined.
A size prefix outside 0..``max_frame_size`` stops reading before anything is allocated for it:
nothing after it can be trusted to be a frame. ``frame_started`` lets a subclass hold a frame back
(the broker's ``queued.max.request.bytes``) before its body is read.
"""

from __future__ import annotations

import asyncio
import socket

from kcli.protocol import framing

# The receive buffer small frames are cut from, at its largest; a frame larger than half of it
# gets its own. It starts at INITIAL_RECEIVE_BUFFER_BYTES and doubles while reads fill it.
RECEIVE_BUFFER_BYTES = 64 * 1024
INITIAL_RECEIVE_BUFFER_BYTES = 4 * 1024
LARGE_FRAME_BYTES = RECEIVE_BUFFER_BYTES // 2
# A large frame's first chunk is this size (or the frame's, if smaller); each next one is as large as
# all before it together.
INITIAL_LARGE_BUFFER_BYTES = 64 * 1024


class FrameStream(asyncio.BufferedProtocol):
    """Subclasses take frames in ``frame_received`` and the end of the stream in ``stream_ended``."""

    def __init__(self, max_frame_size: int, *, trust_announced_sizes: bool = False, writable_frames: bool = False) -> None:
        self.max_frame_size = max_frame_size
        self.writable_frames = writable_frames
        # A client trusts the broker it chose to reach as far as its own limit (librdkafka's
        # receive.message.max.bytes): a large answer's buffer is allocated whole at once, not
        # grown, which spares copying a 50 MiB fetch answer several times over.
        self.trust_announced_sizes = trust_announced_sizes
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray(INITIAL_RECEIVE_BUFFER_BYTES)
        self._start = self._end = 0  # the unread bytes of _buffer
        self._large: list[bytearray] | None = None  # the chunks of a frame body being received, the last one filling
        self._large_size = 0  # the size of that frame
        self._large_received = 0  # its bytes in all chunks
        self._chunk_filled = 0  # its bytes in the last chunk
        self._admitted = False  # frame_started accepted the frame whose size prefix is at _start
        self._held = False  # frame_started held the frame at _start back: cutting waits for continue_frames
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future] = []
        self.lost = False
        self.refused = False  # a bad size prefix was read: nothing after it is a frame

    # -- what subclasses handle ----------------------------------------------------------------------

    def frame_received(self, body: bytes | bytearray | memoryview) -> None:
        raise NotImplementedError

    def size_refused(self, size: int) -> None:
        """A size prefix outside 0..max_frame_size was read; reading has stopped."""
        raise NotImplementedError

    def frame_started(self, size: int) -> bool:
        """A valid size prefix was read, before anything is allocated for its body. False holds the
        frame back: no frame is cut until ``continue_frames`` (the subclass pauses reading)."""
        return True

    def stream_ended(self, exc: Exception | None) -> None:
        """The peer closed its side (``exc`` None) or the connection was lost; called once for each."""

    # -- asyncio callbacks ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get_buffer(self, sizehint: int) -> memoryview:
        chunks = self._large
        if chunks is not None:
            if self._chunk_filled == len(chunks[-1]):
                chunks.append(bytearray(min(self._large_received, self._large_size - self._large_received)))
                self._chunk_filled = 0
            return memoryview(chunks[-1])[self._chunk_filled :]
        buffer = self._buffer
        if self._end == len(buffer):
            unread = self._end - self._start
            if len(buffer) < RECEIVE_BUFFER_BYTES:
                # The last read filled the buffer: more is coming, so read more at a time. A small
                # frame (at most half the largest buffer) always fits once the buffer is grown.
                grown = bytearray(min(2 * len(buffer), RECEIVE_BUFFER_BYTES))
                grown[:unread] = buffer[self._start : self._end]
                self._buffer = buffer = grown
            else:
                # The unread bytes are the start of a small frame: move them to the front.
                buffer[:unread] = buffer[self._start : self._end]
            self._start, self._end = 0, unread
        return memoryview(buffer)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self.refused:
            return
        if self._large is None:
            self._end += nbytes
            if not self._held:
                self._cut_frames()
            return
        self._chunk_filled += nbytes
        self._large_received += nbytes
        if self._large_received == self._large_size:
            chunks, self._large = self._large, None
            body = chunks[0] if len(chunks) == 1 else bytearray().join(chunks)
            self.frame_received(memoryview(body) if self.writable_frames else memoryview(body).toreadonly())

    def continue_frames(self) -> None:
        """Cut frames again after ``frame_started`` held one back."""
        if self._held and not self.refused and self._large is None:
            self._held = False
            self._cut_frames()

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
            if not self._admitted:
                if not self.frame_started(size):
                    self._held = True
                    return
                self._admitted = True
            body_start = self._start + 4
            available = self._end - body_start
            if available >= size:
                self._start = body_start + size
                self._admitted = False
                body = buffer[body_start : body_start + size]  # a bytearray of its own
                self.frame_received(body if self.writable_frames else bytes(body))
                if self._held or self.refused:
                    return
                buffer = self._buffer
            elif size > LARGE_FRAME_BYTES:
                initial = size if self.trust_announced_sizes else min(size, max(INITIAL_LARGE_BUFFER_BYTES, available))
                first = bytearray(initial)
                first[:available] = buffer[body_start : self._end]
                self._large = [first]
                self._large_size = size
                self._large_received = self._chunk_filled = available
                self._admitted = False
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
