"""Decoding members' consumer-protocol bytes, built here field by field from Kafka's schemas
(ConsumerProtocolSubscription / ConsumerProtocolAssignment, non-flexible, int16 version prefix)."""

from __future__ import annotations

import struct

from kcli.client.group_admin import TopicPartition, decode_assignment, decode_subscription


def string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def nbytes(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def topic_partitions(entries: list[tuple[str, list[int]]]) -> bytes:
    out = struct.pack(">i", len(entries))
    for topic, partitions in entries:
        out += string(topic) + struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return out


def subscription(version: int, topics: list[str], user_data: bytes | None, owned=(), generation=-1, rack=None) -> bytes:
    out = struct.pack(">h", version) + struct.pack(">i", len(topics)) + b"".join(string(t) for t in topics) + nbytes(user_data)
    if version >= 1:
        out += topic_partitions(list(owned))
    if version >= 2:
        out += struct.pack(">i", generation)
    if version >= 3:
        out += string(rack)
    return out


def assignment(version: int, entries: list[tuple[str, list[int]]], user_data: bytes | None) -> bytes:
    return struct.pack(">h", version) + topic_partitions(entries) + nbytes(user_data)


def test_subscription_v0():
    decoded = decode_subscription(subscription(0, ["a", "b"], None))
    assert decoded.version == 0
    assert decoded.topics == ("a", "b")
    assert decoded.user_data is None
    assert decoded.owned_partitions == ()
    assert decoded.generation_id == -1
    assert decoded.rack_id is None


def test_subscription_v3_has_every_field():
    data = subscription(3, ["orders"], b"\x01\x02", owned=[("orders", [1, 0])], generation=7, rack="r1")
    decoded = decode_subscription(data)
    assert decoded.version == 3
    assert decoded.topics == ("orders",)
    assert decoded.user_data == b"\x01\x02"
    assert decoded.owned_partitions == (TopicPartition("orders", 1), TopicPartition("orders", 0))
    assert decoded.generation_id == 7
    assert decoded.rack_id == "r1"


def test_newer_subscription_versions_read_with_the_v3_layout():
    data = subscription(3, ["t"], None, generation=2, rack="x")
    newer = struct.pack(">h", 9) + data[2:] + b"future fields"
    decoded = decode_subscription(newer)
    assert decoded.version == 9
    assert decoded.topics == ("t",)
    assert decoded.rack_id == "x"


def test_assignment_v0_and_v3():
    entries = [("orders", [0, 2]), ("users", [1])]
    for version in (0, 1, 2, 3):
        decoded = decode_assignment(assignment(version, entries, b"ud"))
        assert decoded.version == version
        assert decoded.partitions == (TopicPartition("orders", 0), TopicPartition("orders", 2), TopicPartition("users", 1))
        assert decoded.user_data == b"ud"


def test_empty_or_broken_bytes_decode_to_none():
    assert decode_assignment(b"") is None
    assert decode_subscription(b"") is None
    assert decode_assignment(struct.pack(">h", 0) + struct.pack(">i", 5)) is None  # 5 topics announced, none there
    assert decode_assignment(assignment(-1, [], None)) is None


def test_topic_partition_prints_as_kafka_does():
    assert str(TopicPartition("orders", 3)) == "orders-3"
