"""Which ``__consumer_offsets`` partition holds a group: Kafka's ``partitionFor``.

Kafka takes Java's ``String.hashCode`` of the group id (a 32-bit wrapping sum over the UTF-16
code units, ``h = 31 * h + c``), its ``Utils.abs`` (which maps ``Integer.MIN_VALUE`` to 0 rather
than leaving it negative, as ``Math.abs`` would) and the remainder by the partition count.
"""

from __future__ import annotations

from kcli.java_compat import string_hash, utils_abs


def partition_for(group_id: str, partition_count: int) -> int:
    return utils_abs(string_hash(group_id)) % partition_count
