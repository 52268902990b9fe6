"""The mapping encoder writes exactly the bytes kio writes for ``messages.build`` of the same
mapping, for every request and response version kio knows."""

from __future__ import annotations

import dataclasses
import datetime
import random
import typing
import uuid

import pytest
from kio.schema.index import api_key_map

from kcli.errors import ErrorCode
from kcli.protocol import mapping_encoder, messages, stated_apis
from kcli.protocol.kio_internals import field_shape, field_tag, is_optional
from kcli.protocol.kio_internals import kafka_type as field_kafka_type

MESSAGE_TYPES = [
    (f"{api_key_map[key]}-v{version}-{side}", entity_type)
    for key in sorted(api_key_map)
    for version in range(20)
    if messages.has_version(key, version) and stated_apis.states(key, version) is None  # kio's entities
    for side, entity_type in (("request", messages.request_type(key, version)), ("response", messages.response_type(key, version)))
]

_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1),
    "error_code": (-1, 130),
    "timedelta_i32": (-(1 << 31), (1 << 31) - 1),
    "timedelta_i64": (-(10**15), 10**15),
    "datetime_i64": (-1000, 1 << 45),
}


def reference(entity_type: type, data: dict) -> bytes:
    return messages.encode(messages.build(entity_type, data))


def random_mapping(entity_type: type, rng: random.Random, depth: int = 0) -> dict:
    """Some of the fields, with values of every shape ``build`` takes: nulls, entities given
    as entities, arrays as generators, durations and timestamps as ints or as objects."""
    data: dict = {}
    hints = typing.get_type_hints(entity_type)
    for field in dataclasses.fields(entity_type):
        if rng.random() < 0.25:
            continue
        data[field.name] = random_value(field, hints[field.name], rng, depth)
    return data


def random_value(field: dataclasses.Field, hint, rng: random.Random, depth: int):
    nullable = is_optional(field) and field_tag(field) is None
    if nullable and rng.random() < 0.2:
        return None
    entity, is_array = field_shape(field)
    if entity is not None:
        def item():
            mapping = random_mapping(entity, rng, depth + 1)
            return messages.build(entity, mapping) if rng.random() < 0.2 else mapping

        if not is_array:
            return item()
        items = [item() for _ in range(rng.randrange(3 if depth < 2 else 2))] if depth < 3 else []
        return iter(items) if rng.random() < 0.2 else items
    kafka_type = field_kafka_type(field)
    if is_array:
        items = [primitive(kafka_type, rng) for _ in range(rng.randrange(4))]
        return (v for v in items) if rng.random() < 0.2 else items
    if field.default is not dataclasses.MISSING and rng.random() < 0.2:
        return field.default
    return primitive(kafka_type, rng)


def primitive(kafka_type: str, rng: random.Random):
    if kafka_type in _RANGES:
        low, high = _RANGES[kafka_type]
        value = rng.choice((0, low, high, rng.randint(low, high), rng.randint(-1, 300)))
        value = max(low, min(high, value))
        if kafka_type == "error_code" and value in ErrorCode._value2member_map_ and rng.random() < 0.5:
            return ErrorCode(value)
        if kafka_type.startswith("timedelta") and rng.random() < 0.2:
            return datetime.timedelta(milliseconds=value)
        if kafka_type == "datetime_i64" and value >= 0 and rng.random() < 0.2:
            return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.timezone.utc)
        return value
    if kafka_type == "float64":
        return rng.choice((0.0, -1.5, rng.random() * 1e9))
    if kafka_type == "bool":
        return rng.random() < 0.5
    if kafka_type == "uuid":
        return uuid.UUID(int=rng.getrandbits(128)) if rng.random() < 0.8 else uuid.UUID(int=0)
    if kafka_type == "string":
        return "".join(rng.choice("abcé漢_-.0") for _ in range(rng.randrange(0, 40)))
    if kafka_type in ("bytes", "records"):
        return rng.randbytes(rng.randrange(0, 300))
    raise AssertionError(f"no generator for {kafka_type}")


def consume_generators(data):
    """The same mapping with generators turned into lists, so both encoders can read it."""
    if isinstance(data, dict):
        return {k: consume_generators(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)) or hasattr(data, "__next__"):
        return [consume_generators(v) for v in data]
    return data


@pytest.mark.parametrize("name,entity_type", MESSAGE_TYPES, ids=[n for n, _ in MESSAGE_TYPES])
def test_bytes_equal_kios_for_random_mappings(name, entity_type):
    rng = random.Random(name)
    assert mapping_encoder.encode(entity_type, {}) == reference(entity_type, {})
    for _ in range(12):
        data = consume_generators(random_mapping(entity_type, rng))
        expected = reference(entity_type, data)
        assert mapping_encoder.encode(entity_type, data) == expected
        # Arrays given as generators are read once, as build reads them.
        regenerated = {k: (iter(v) if isinstance(v, list) else v) for k, v in data.items()}
        assert mapping_encoder.encode(entity_type, regenerated) == expected


def test_a_response_the_broker_sends_matches_field_by_field():
    response = messages.response_type(8, 8)
    data = {"throttle_time": 5, "topics": [{"name": "t", "partitions": [{"partition_index": 3, "error_code": ErrorCode.NOT_COORDINATOR}]}]}
    # throttle (4) | 2 topics+1 | "t" as compact | 2 partitions+1 | index (4) | error (2) | tags
    expected = b"\x00\x00\x00\x05" + b"\x02" + b"\x02t" + b"\x02" + b"\x00\x00\x00\x03" + b"\x00\x10" + b"\x00" + b"\x00" + b"\x00"
    assert mapping_encoder.encode(response, data) == expected


def test_tagged_fields_are_written_only_when_they_differ_from_their_default():
    response = messages.response_type(18, 3)  # ApiVersions v3: tagged features and epochs
    assert mapping_encoder.encode(response, {"finalized_features_epoch": -1}) == reference(response, {})
    with_epoch = mapping_encoder.encode(response, {"finalized_features_epoch": 7})
    assert with_epoch == reference(response, {"finalized_features_epoch": 7})
    assert len(with_epoch) > len(reference(response, {}))


def test_a_value_of_the_wrong_kind_raises():
    response = messages.response_type(8, 8)
    with pytest.raises(Exception):
        mapping_encoder.encode(response, {"topics": [{"name": None}]})
    with pytest.raises(Exception):
        mapping_encoder.encode(response, {"throttle_time": 1 << 40})
