"""Which partition a record goes to, as the Java client decides it.

A keyed record goes to ``toPositive(murmur2(key)) % partitions``: Kafka's ``Utils.murmur2`` (the
32-bit MurmurHash2 with seed 0x9747b28c, little-endian words) made non-negative by masking the
sign bit, so a key lands where the Java client (and librdkafka's ``murmur2_random``) puts it.

A record without a key sticks to one partition (KIP-480, with Kafka 3.3+'s uniform sticky
switching from KIP-794): the producer keeps sending to the chosen partition until its batch is
full (``batch.size`` bytes went there), then picks another at random among the partitions that
have a leader.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF
_WORDS: dict[int, struct.Struct] = {}


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` of ``data``: a signed 32-bit int, as Java returns it."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    words = length >> 2
    if words:
        unpack = _WORDS.get(words)
        if unpack is None:
            unpack = _WORDS[words] = struct.Struct(f"<{words}I")
        for k in unpack.unpack_from(data):
            k = (k * _M) & _MASK32
            k ^= k >> 24
            k = (k * _M) & _MASK32
            h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    if tail:
        base = length - tail
        if tail == 3:
            h ^= data[base + 2] << 16
        if tail >= 2:
            h ^= data[base + 1] << 8
        h ^= data[base]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Java's ``Utils.toPositive``: the sign bit masked off (not the absolute value)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition the Java client's default partitioner picks for ``key``."""
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """The partition for records without a key, for one topic.

    ``current()`` is the partition to append to. The producer calls ``batch_full()`` when the
    batch of that partition filled up (``batch.size`` bytes went there), and the next
    ``current()`` picks a new partition.
    """

    __slots__ = ("partition", "_random")

    def __init__(self, rng: random.Random | None = None) -> None:
        self.partition = -1
        self._random = rng or random.Random()

    def current(self, available: Sequence[int], num_partitions: int) -> int:
        if self.partition < 0 or self.partition >= num_partitions:
            self.switch(available, num_partitions)
        return self.partition

    def batch_full(self) -> None:
        self.partition = -1

    def switch(self, available: Sequence[int], num_partitions: int) -> None:
        """Move to a random partition: one with a leader when there is any."""
        choice = self._random.getrandbits(31)
        if available:
            self.partition = available[choice % len(available)]
        else:
            self.partition = choice % num_partitions
