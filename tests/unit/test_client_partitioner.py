"""The producer's partitioner: Kafka's murmur2 (vectors from Kafka's UtilsTest), the Java
client's key -> partition rule, and sticky partitions for records without a key.

The same keys are checked against librdkafka's ``murmur2_random`` partitioner, an independent
implementation, in tests/tools/test_console_producer.py."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcli.client.partitioner import StickyPartitioner, murmur2, partition_for_key, to_positive

# Kafka's UtilsTest.testMurmur2.
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS)
def test_murmur2_matches_kafka(data: bytes, expected: int):
    assert murmur2(data) == expected


def reference_murmur2(data: bytes) -> int:
    """MurmurHash2 written out byte by byte with Java's 32-bit int arithmetic."""

    def i32(x: int) -> int:
        x &= 0xFFFFFFFF
        return x - (1 << 32) if x & 0x80000000 else x

    def mul(a: int, b: int) -> int:
        return i32(a * b)

    def ushr(x: int, n: int) -> int:
        return i32((x & 0xFFFFFFFF) >> n)

    m = 0x5BD1E995
    h = i32(0x9747B28C ^ len(data))
    for i in range(0, len(data) - len(data) % 4, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = mul(k, m)
        k ^= ushr(k, 24)
        k = mul(k, m)
        h = mul(h, m)
        h = i32(h ^ k)
    rest = len(data) % 4
    base = len(data) - rest
    if rest >= 3:
        h = i32(h ^ data[base + 2] << 16)
    if rest >= 2:
        h = i32(h ^ data[base + 1] << 8)
    if rest >= 1:
        h = i32(h ^ data[base])
        h = mul(h, m)
    h = i32(h ^ ushr(h, 13))
    h = mul(h, m)
    h = i32(h ^ ushr(h, 15))
    return h


@given(st.binary(max_size=64))
def test_murmur2_agrees_with_a_bytewise_implementation(data: bytes):
    assert murmur2(data) == reference_murmur2(data)


def test_to_positive_masks_the_sign_bit_rather_than_negating():
    assert to_positive(-973932308) == -973932308 & 0x7FFFFFFF == 1173551340
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(479470107) == 479470107


def test_partition_for_key():
    for data, hashed in KAFKA_VECTORS:
        for partitions in (1, 3, 4, 7, 100):
            assert partition_for_key(data, partitions) == (hashed & 0x7FFFFFFF) % partitions
    assert partition_for_key(b"21", 4) == 0  # 1173551340 % 4
    assert partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7


def test_empty_key_is_hashed_not_treated_as_null():
    assert murmur2(b"") == reference_murmur2(b"")
    assert 0 <= partition_for_key(b"", 5) < 5


def test_sticky_partition_holds_until_the_batch_is_full():
    sticky = StickyPartitioner(random.Random(7))
    first = sticky.current([0, 1, 2, 3], 4)
    assert all(sticky.current([0, 1, 2, 3], 4) == first for _ in range(100))
    seen = {first}
    for _ in range(200):
        sticky.batch_full()
        seen.add(sticky.current([0, 1, 2, 3], 4))
    assert seen == {0, 1, 2, 3}


def test_sticky_partition_prefers_partitions_with_a_leader():
    sticky = StickyPartitioner(random.Random(1))
    chosen = set()
    for _ in range(100):
        sticky.batch_full()
        chosen.add(sticky.current([2, 5], 8))
    assert chosen == {2, 5}
    sticky.batch_full()
    assert 0 <= sticky.current([], 3) < 3  # none has a leader: any partition


def test_sticky_partition_moves_when_the_topic_shrinks_below_it():
    sticky = StickyPartitioner(random.Random(3))
    sticky.partition = 9
    assert sticky.current([0, 1], 2) in (0, 1)
