"""The structural check that guards kio's reader against lengths the bytes cannot hold."""

from __future__ import annotations

import io
import struct

import pytest
from kio.serial import entity_writer

from kcli.protocol import messages
from kcli.protocol.request_check import MalformedRequest, check_body


def _encoded(api_key: int, version: int, fields: dict) -> tuple[type, bytes]:
    entity = messages.build(messages.request_type(api_key, version), fields)
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return type(entity), out.getvalue()


PRODUCE = {"acks": 1, "timeout": 1000, "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"r" * 40}]}]}


@pytest.mark.parametrize("version", [3, 8, 9, 11])
def test_well_formed_bodies_pass_and_every_truncation_fails(version):
    entity_type, body = _encoded(0, version, PRODUCE)
    check_body(entity_type, body, 0)
    for cut in range(len(body)):
        with pytest.raises(MalformedRequest):
            check_body(entity_type, body[:cut], 0)


def test_an_array_count_larger_than_the_bytes_left_is_refused():
    entity_type = messages.request_type(19, 7)  # CreateTopics, flexible
    with pytest.raises(MalformedRequest, match="claims 4294967296 entries"):
        check_body(entity_type, bytes([0x81, 0x80, 0x80, 0x80, 0x10]), 0)
    legacy = messages.request_type(19, 4)  # int32 counts
    with pytest.raises(MalformedRequest, match="claims"):
        check_body(legacy, struct.pack(">i", 2**31 - 1), 0)


def test_null_where_the_schema_forbids_it_is_refused():
    entity_type = messages.request_type(3, 8)  # Metadata v8: topics may be null
    check_body(entity_type, struct.pack(">i", -1) + b"\x01\x00\x00", 0)
    create = messages.request_type(19, 4)  # CreateTopics v4: topics may not be null
    with pytest.raises(MalformedRequest, match="invalid array length -1"):
        check_body(create, struct.pack(">i", -1) + struct.pack(">i", 1000) + b"\x00", 0)


def test_tagged_fields_are_checked_within_their_size():
    entity_type, body = _encoded(1, 12, {"max_wait": 0, "min_bytes": 0, "topics": [], "forgotten_topics_data": []})
    check_body(entity_type, body, 0)
    assert body[-1] == 0  # empty tagged section; replace it with a tagged field claiming more bytes than exist
    with pytest.raises(MalformedRequest, match="runs past the end"):
        check_body(entity_type, body[:-1] + bytes([1, 0, 50, 0]), 0)


def test_decode_request_refuses_before_kio_reads():
    with pytest.raises(MalformedRequest):
        messages.decode_request(19, 7, bytes([0x81, 0x80, 0x80, 0x80, 0x10]), 0)
