"""A group's ``__consumer_offsets`` partition: Java's String.hashCode, Kafka's Utils.abs, mod N
(the two helpers are checked in test_java_compat)."""

from __future__ import annotations

import pytest

from kcli.broker.groups.partitioner import partition_for
from kcli.java_compat import string_hash


def _polynomial_hash(text: str) -> int:
    units = text.encode("utf-16-be", "surrogatepass")
    values = [int.from_bytes(units[i:i + 2], "big") for i in range(0, len(units), 2)]
    n = len(values)
    total = sum(v * pow(31, n - 1 - i, 2**32) for i, v in enumerate(values)) % 2**32
    return total - 2**32 if total >= 2**31 else total


def test_partition_for_uses_the_absolute_hash():
    assert partition_for("polygenelubricants", 50) == 0
    assert string_hash("hello world") % 50 == partition_for("hello world", 50) == 1794106052 % 50
    negative = next(f"group-{i}" for i in range(1000) if _polynomial_hash(f"group-{i}") < 0)
    assert partition_for(negative, 50) == -_polynomial_hash(negative) % 50 == abs(_polynomial_hash(negative)) % 50


@pytest.mark.parametrize(
    ("group", "partition"),
    # Groups and the __consumer_offsets partition real Kafka brokers stored them in (the shared
    # segment fixtures' directory names, 50 partitions).
    [
        ("demo-group", 15),
        ("console-consumer-7889", 31),
        ("rupia-transaction-group", 44),
        ("simple-consumer-example", 16),
        ("flink-group", 36),
        ("console-consumer-14897", 0),
        ("console-consumer-2399", 2),
    ],
)
def test_partition_matches_where_kafka_stored_the_group(group, partition):
    assert partition_for(group, 50) == partition
