"""Which ``__consumer_offsets`` partition holds a group: Kafka's ``partitionFor``.

Kafka takes Java's ``String.hashCode`` of the group id (a 32-bit wrapping sum over the UTF-16
code units, ``h = 31 * h + c``), its ``Utils.abs`` (which maps ``Integer.MIN_VALUE`` to 0 rather
than leaving it negative, as ``Math.abs`` would) and the remainder by the partition count.
"""

from __future__ import annotations

_INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: signed 32-bit, over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``n & 0x7fffffff`` for MIN_VALUE, so the result is never negative."""
    return 0 if n == _INT32_MIN else abs(n)


def partition_for(group_id: str, partition_count: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % partition_count
