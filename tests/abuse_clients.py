"""Abusive peers for soak tests and the abuse benchmark: decompression bombs, announced but unsent
frames, half-sent frames and idle connections, all over plain sockets to 127.0.0.1."""

from __future__ import annotations

import socket
import struct
import time
import zlib
from pathlib import Path

import lz4.frame
import zstandard
from crc32c import crc32c

from kcli.storage.compression import CompressionType
from tests.wire_client import encode_request, request_entity

_HEADER = struct.Struct(">qiibIhiqqqhii")
PRODUCE_KEY = 0


def bomb_batch(codec: CompressionType, inflated_size: int = 128 << 20, record_count: int = 1) -> bytes:
    """A batch claiming ``record_count`` records whose records section inflates to
    ``inflated_size`` zero bytes: a few KiB on the wire."""
    zeros = bytes(inflated_size)
    if codec is CompressionType.ZSTD:
        payload = zstandard.ZstdCompressor(level=19).compress(zeros)
    elif codec is CompressionType.LZ4:  # Kafka's frame: independent 64 KiB blocks
        payload = lz4.frame.compress(zeros, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
    else:
        deflater = zlib.compressobj(9, wbits=31)
        payload = deflater.compress(zeros) + deflater.flush()
    now = int(time.time() * 1000)
    header = bytearray(_HEADER.pack(0, 61 - 12 + len(payload), -1, 2, 0, int(codec), record_count - 1, now, now, -1, -1, -1, record_count))
    batch = header + payload
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
    return bytes(batch)


def produce_frame(topic: str, partition: int, batches: list[bytes], correlation_id: int, acks: int = 1) -> bytes:
    """One Produce v9 request carrying each batch as its own partition entry (the same partition)."""
    request = request_entity(
        PRODUCE_KEY,
        9,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch} for batch in batches]}],
        },
    )
    return encode_request(request, correlation_id)


def connect(port: int, timeout: float = 10.0, source: str = "127.0.0.1") -> socket.socket:
    """A connection to the broker on 127.0.0.1 from ``source`` (any 127.x address is local)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def announce(port: int, size: int, sent: bytes = b"", source: str = "127.0.0.1") -> socket.socket:
    """A connection that announces a frame of ``size`` bytes and sends only ``sent`` of it."""
    sock = connect(port, source=source)
    sock.sendall(struct.pack(">i", size) + sent)
    return sock


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")
