"""Produce requests read with their records left in the request's buffer: the same fields and
values as kio's reader gives, for every version kcli serves, and records that are views, not copies."""

from __future__ import annotations

import dataclasses
import datetime
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.protocol import mapping_encoder, messages, produce_request
from kcli.protocol.request_check import MalformedRequest, check_body

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
records = st.one_of(st.none(), st.binary(max_size=300))
partitions = st.lists(st.fixed_dictionaries({"index": st.integers(-(2**31), 2**31 - 1), "records": records}), max_size=4)
topics = st.lists(st.fixed_dictionaries({"name": names, "partition_data": partitions}), max_size=4)
requests = st.fixed_dictionaries({
    "transactional_id": st.one_of(st.none(), names),
    "acks": st.integers(-(2**15), 2**15 - 1),
    "timeout": st.integers(-(2**31), 2**31 - 1),
    "topic_data": topics,
})


def _plain(value):
    """kio's entities and this reader's tuples as comparable plain values."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _kio(version: int, body: bytes):
    entity, size = messages.request_reader(0, version)(body, 0)
    assert size == len(body)
    return entity


@settings(max_examples=60, deadline=None)
@given(request=requests, version=st.sampled_from(list(produce_request.VERSIONS)), prefix=st.binary(max_size=5))
def test_fields_equal_kios_for_every_served_version(request, version, prefix):
    body = mapping_encoder.encode_request(0, version, request)
    buffer = bytearray(prefix + body)
    decoded = messages.decode_request(0, version, buffer, len(prefix))
    assert isinstance(decoded, produce_request.ProduceRequest)
    assert _plain(decoded) == _plain(_kio(version, body))
    assert decoded.timeout == datetime.timedelta(milliseconds=request["timeout"])


def test_records_are_views_of_the_request_buffer_and_writable_in_place():
    payload = bytes(range(100))
    body = mapping_encoder.encode_request(0, 9, {"acks": 1, "timeout": 100, "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": payload}]}]})
    buffer = bytearray(body)
    [topic] = messages.decode_request(0, 9, buffer, 0).topic_data
    records = topic.partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is buffer and not records.readonly
    assert bytes(records) == payload
    records[0] = 0xAB  # a patch lands in the request's own bytes
    assert buffer[body.index(payload)] == 0xAB


@pytest.mark.parametrize("version", [9, 10, 11])
def test_unknown_tagged_fields_are_skipped(version):
    request = {"transactional_id": "tx", "acks": -1, "timeout": 5, "topic_data": [{"name": "a", "partition_data": [{"index": 3, "records": b"xyz"}]}]}
    body = bytearray(mapping_encoder.encode_request(0, version, request))
    # The last three bytes are the empty tagged sections of the partition, the topic and the request.
    assert body[-3:] == b"\0\0\0"
    tagged = b"\x01\x07\x02hi"  # one field, tag 7, two bytes
    patched = body[:-3] + tagged + tagged + tagged
    decoded = messages.decode_request(0, version, patched, 0)
    # Kafka's readers keep unknown tagged fields aside and read on (kio refuses them): the request
    # reads as it does without them.
    assert _plain(decoded) == _plain(_kio(version, bytes(body)))
    assert bytes(decoded.topic_data[0].partition_data[0].records) == b"xyz"


def test_a_malformed_body_is_refused_before_it_is_read():
    body = bytearray(mapping_encoder.encode_request(0, 8, {"acks": 1, "timeout": 1, "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"abc"}]}]}))
    with pytest.raises(MalformedRequest):
        messages.decode_request(0, 8, body[:-1], 0)
    rng = random.Random(3)
    for _ in range(200):
        cut = bytearray(body[: rng.randrange(len(body))])
        with pytest.raises(MalformedRequest):
            messages.decode_request(0, 8, cut, 0)


@pytest.mark.parametrize(("api_key", "version", "request_fields"), [(18, 3, {"client_software_name": "x", "client_software_version": "1"}), (3, 12, {"topics": [{"name": "t"}]})])
def test_other_requests_decode_from_a_writable_frame_too(api_key, version, request_fields):
    # The broker's frames are writable (for Produce); kio's reader takes read-only buffers only.
    body = mapping_encoder.encode_request(api_key, version, request_fields)
    expected = messages.request_reader(api_key, version)(body, 0)[0]
    assert messages.decode_request(api_key, version, bytearray(body), 0) == expected
    assert messages.decode_request(api_key, version, memoryview(bytearray(b"??" + body)), 2) == expected


def _outcome(read):
    try:
        return read()
    except MalformedRequest:
        return "malformed"
    except UnicodeDecodeError:
        return "not utf-8"


@settings(max_examples=300, deadline=None)
@given(
    request=requests,
    version=st.sampled_from(list(produce_request.VERSIONS)),
    cut=st.integers(0, 400),
    flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
)
def test_damaged_bodies_are_refused_as_the_structural_check_refuses_them(request, version, cut, flips):
    """The reader checks as it reads: whatever request_check refuses, it refuses; whatever the
    check accepts, it reads as kio does (kio refuses unknown tagged fields, which it skips)."""
    body = bytearray(mapping_encoder.encode_request(0, version, request))
    for at, value in flips:
        if body:
            body[at % len(body)] = value
    body = body[: len(body) - cut % (len(body) + 1)] if cut % 3 == 0 else body
    checked = _outcome(lambda: check_body(messages.request_type(0, version), bytes(body), 0))
    decoded = _outcome(lambda: produce_request.read(body, 0, version))
    if checked == "malformed":
        assert decoded in ("malformed", "not utf-8")  # refused, whichever fault is met first
        return
    assert decoded != "malformed"
    try:
        expected = messages.request_reader(0, version)(bytes(body), 0)[0]
    except Exception:  # kio's own errors: an unknown tag, bad UTF-8
        assert decoded == "not utf-8" or bytes(body) != mapping_encoder.encode_request(0, version, _plain(decoded))
        return
    assert _plain(decoded) == _plain(expected)
