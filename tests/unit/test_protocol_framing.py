"""Request/response headers and kio-backed message building."""

from __future__ import annotations

import struct

import pytest

from kcli.errors import ErrorCode
from kcli.protocol import framing, messages


def _header_v1(api_key, version, correlation_id, client_id: bytes | None) -> bytes:
    head = struct.pack(">hhi", api_key, version, correlation_id)
    if client_id is None:
        return head + struct.pack(">h", -1)
    return head + struct.pack(">h", len(client_id)) + client_id


def test_request_header_v1_and_body_offset():
    frame = _header_v1(3, 9, 77, b"rdkafka") + b"BODY"
    header, offset = framing.decode_request_header(frame, flexible=False)
    assert header == framing.RequestHeader(3, 9, 77, "rdkafka")
    assert frame[offset:] == b"BODY"


def test_request_header_v2_skips_tagged_fields():
    tagged = bytes([2, 0, 1, 0xAA, 5, 2, 0xBB, 0xCC])  # two tagged fields
    frame = _header_v1(1, 12, 5, None) + tagged + b"X"
    header, offset = framing.decode_request_header(frame, flexible=True)
    assert header.client_id is None
    assert frame[offset:] == b"X"


@pytest.mark.parametrize(
    "frame",
    [
        b"\x00\x03",  # shorter than a header
        _header_v1(3, 1, 1, b"abc")[:-1],  # client id cut short
        struct.pack(">hhih", 3, 1, 1, -7),  # negative length other than -1
        _header_v1(3, 12, 1, b"a") + bytes([1, 0, 9]),  # tagged field past the end
        _header_v1(3, 12, 1, b"a") + bytes([0xFF] * 6),  # varint that never ends
    ],
)
def test_malformed_headers_raise_invalid_request(frame):
    with pytest.raises(framing.InvalidRequest) as info:
        framing.decode_request_header(frame, flexible=True)
    assert info.value.error_code == ErrorCode.INVALID_REQUEST


def test_response_headers():
    assert framing.response_header(9, False) == struct.pack(">i", 9)
    assert framing.response_header(9, True) == struct.pack(">i", 9) + b"\0"


def test_build_keeps_only_the_fields_a_version_has():
    data = {
        "brokers": [{"node_id": 0, "host": "localhost", "port": 9092, "rack": None}],
        "cluster_id": "abc",
        "controller_id": 0,
        "topics": [{"name": "t", "topic_id": None, "partitions": [{"partition_index": 0, "leader_id": 0, "leader_epoch": 3, "replica_nodes": [0], "isr_nodes": [0]}]}],
    }
    old = messages.build_response(3, 1, data)
    new = messages.build_response(3, 12, data)
    assert not hasattr(old.topics[0].partitions[0], "leader_epoch")
    assert new.topics[0].partitions[0].leader_epoch == 3
    assert new.cluster_id == "abc"
    from kio.serial import entity_reader

    for entity, version in ((old, 1), (new, 12)):
        decoded, _ = entity_reader(messages.response_type(3, version))(messages.encode(entity), 0)
        assert decoded.brokers[0].host == "localhost"


def test_build_fills_missing_required_fields_with_zero_values():
    response = messages.build_response(0, 9, {"responses": [{"name": "t", "partition_responses": [{"index": 2, "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER}]}]})
    partition = response.responses[0].partition_responses[0]
    assert (partition.index, partition.base_offset, partition.record_errors, partition.error_message) == (2, 0, (), None)
    from kio.serial import entity_reader

    decoded, _ = entity_reader(type(response))(messages.encode(response), 0)
    assert decoded.responses[0].partition_responses[0].error_code == 6


def test_is_flexible_follows_kafka_versions():
    assert not messages.is_flexible(3, 8)
    assert messages.is_flexible(3, 9)
    assert messages.is_flexible(18, 3)
    assert not messages.has_version(0, 2)
