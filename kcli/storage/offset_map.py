"""The cleaner's key -> last offset map over a log's dirty section (Kafka's SkimpyOffsetMap).

Kafka stores a 16-byte MD5 digest and an 8-byte offset per slot in one buffer of
``log.cleaner.dedupe.buffer.size / log.cleaner.threads`` bytes, and fills it up to
``log.cleaner.io.buffer.load.factor`` of its slots. Here the map is a dict, so a slot is what an
entry costs in CPython: its key object (the key itself when it is at most 16 bytes, else its MD5
digest), its offset (an int) and the dict's own share (``BYTES_PER_ENTRY``, measured). The
configured size therefore bounds the memory the map takes, as it does in Kafka; a pass holds
fewer keys than Kafka's 24-byte slots would, and a dirty section that does not fit is cleaned up
to where it fits, the rest in later passes.
"""

from __future__ import annotations

import hashlib

# What one entry costs: a bytes object of up to 16 bytes (49), an int offset (32) and the dict's
# entry and index slots with its spare room (about 60), rounded up.
BYTES_PER_ENTRY = 144
_DIGEST_SIZE = 16


def map_key(key: bytes) -> bytes:
    """The key as the map holds it: itself when short, its MD5 digest otherwise."""
    if len(key) <= _DIGEST_SIZE:
        return bytes(key)
    return hashlib.md5(key).digest()


class OffsetMap:
    """Key -> the last offset it was seen at, with the last offset put or declared (``latest_offset``)."""

    def __init__(self, memory: int) -> None:
        if memory < 0:
            raise ValueError(f"invalid offset map size {memory}")
        self.memory = memory
        self.slots = memory // BYTES_PER_ENTRY
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[map_key(key)] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The last offset of ``key``, or -1 when the map does not hold it."""
        return self._offsets.get(map_key(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset

    def clear(self) -> None:
        self._offsets = {}
        self.latest_offset = -1

    @property
    def size(self) -> int:
        return len(self._offsets)

    @property
    def utilization(self) -> float:
        return self.size / self.slots if self.slots else 0.0

    def __len__(self) -> int:
        return len(self._offsets)

    def __repr__(self) -> str:
        return f"OffsetMap(slots={self.slots}, size={self.size}, latest_offset={self.latest_offset})"
