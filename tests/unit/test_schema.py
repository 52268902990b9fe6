"""The message-schema interpreter against hand-packed bytes from the wire-format facts.

Facts used (Kafka's message format, as its generated code reads and writes it): big-endian fixed
widths; non-flexible string = int16 length, bytes/array = int32 length, -1 = null; flexible
versions use unsigned-varint length+1 (0 = null) and end each struct with a tagged-field section
(count, then tag / size / value, tags ascending); a nullable struct is prefixed by int8 -1 or 1
(uvarint 1 inside a tagged field); uuid = 16 bytes.
"""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcli.errors import CorruptRecordError
from kcli.protocol import coordinator_records as cr
from kcli.protocol.schema import (
    UNKNOWN_TAGGED_FIELDS,
    MessageSchema,
    SchemaDecodeError,
    StructSchema,
    Versions,
    compile_schema,
    decode,
    encode,
    kafka_json_dumps,
    to_json,
)

KITCHEN_SINK = {
    "name": "KitchenSink",
    "validVersions": "0-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "flag", "type": "bool", "versions": "0+"},
        {"name": "Tiny", "type": "int8", "versions": "0+"},
        {"name": "Short", "type": "int16", "versions": "0+"},
        {"name": "Port", "type": "uint16", "versions": "0+"},
        {"name": "Count", "type": "int32", "versions": "0+"},
        {"name": "Big", "type": "uint32", "versions": "1+"},
        {"name": "Long", "type": "int64", "versions": "0+"},
        {"name": "Ratio", "type": "float64", "versions": "1+"},
        {"name": "Id", "type": "uuid", "versions": "1+"},
        {"name": "Name", "type": "string", "versions": "0+"},
        {"name": "Label", "type": "string", "versions": "0+", "nullableVersions": "0+", "default": "null"},
        {"name": "Blob", "type": "bytes", "versions": "0+", "nullableVersions": "0+"},
        {"name": "Ints", "type": "[]int32", "versions": "0+"},
        {"name": "Names", "type": "[]string", "versions": "1+", "nullableVersions": "1+"},
        {"name": "Entries", "type": "[]Entry", "versions": "0+", "fields": [
            {"name": "Key", "type": "string", "versions": "0+"},
            {"name": "Value", "type": "int64", "versions": "0+"},
            {"name": "Note", "type": "string", "versions": "3+", "nullableVersions": "3+", "default": "null",
             "taggedVersions": "3+", "tag": 0},
        ]},
        {"name": "Child", "type": "Nested", "versions": "1+", "nullableVersions": "1+"},
        {"name": "Extra", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 1, "default": 7},
        {"name": "Comment", "type": "string", "versions": "2+", "nullableVersions": "2+", "taggedVersions": "2+",
         "tag": 0, "default": "hi"},
        {"name": "Meta", "type": "Nested", "versions": "3+", "nullableVersions": "3+", "taggedVersions": "3+",
         "tag": 2, "default": None},
        {"name": "Legacy", "type": "int32", "versions": "0", "default": -1},
    ],
    "commonStructs": [
        {"name": "Nested", "versions": "0+", "fields": [{"name": "A", "type": "int32", "versions": "0+"}]},
    ],
}


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


# -- golden bytes ---------------------------------------------------------------------------------

V0_BYTES = (
    b"\x01"  # flag
    + b"\xff"  # Tiny -1
    + b"\x01\x02"  # Short 0x0102
    + b"\xff\xff"  # Port 65535
    + struct.pack(">i", 1)
    + struct.pack(">q", 2)
    + s16("ab")
    + b"\xff\xff"  # Label null
    + struct.pack(">i", 1) + b"\x00"  # Blob
    + struct.pack(">i", 1) + struct.pack(">i", 3)  # Ints
    + struct.pack(">i", 1) + s16("k") + struct.pack(">q", 5)  # Entries
    + struct.pack(">i", -1)  # Legacy
)
V0_VALUE = {
    "Flag": True, "Tiny": -1, "Short": 0x0102, "Port": 65535, "Count": 1, "Long": 2, "Name": "ab",
    "Label": None, "Blob": b"\x00", "Ints": [3], "Entries": [{"Key": "k", "Value": 5}], "Legacy": -1,
}

UUID = uuid.UUID(bytes=bytes(range(1, 17)))
V3_BYTES = (
    b"\x00" + b"\x00" + b"\x00\x00" + b"\x00\x01" + struct.pack(">i", 0)
    + b"\xff\xff\xff\xff"  # Big
    + struct.pack(">q", -1)
    + bytes.fromhex("3ff8000000000000")  # 1.5
    + bytes(range(1, 17))
    + b"\x03" + "é".encode()  # compact string, 2 bytes
    + b"\x00"  # Label null
    + b"\x00"  # Blob null
    + b"\x01"  # Ints []
    + b"\x03" + b"\x02x" + b"\x03yz"  # Names
    + b"\x02" + b"\x02k" + struct.pack(">q", 1) + b"\x01" + b"\x00\x02" + b"\x02n"  # Entries + tag 0
    + b"\x01" + struct.pack(">i", 9) + b"\x00"  # Child, present, with its empty tag section
    + b"\x02" + b"\x00\x01\x00" + b"\x01\x04" + struct.pack(">i", 8)  # Comment=null, Extra=8
)
V3_VALUE = {
    "Flag": False, "Tiny": 0, "Short": 0, "Port": 1, "Count": 0, "Big": 2**32 - 1, "Long": -1, "Ratio": 1.5,
    "Id": UUID, "Name": "é", "Label": None, "Blob": None, "Ints": [], "Names": ["x", "yz"],
    "Entries": [{"Key": "k", "Value": 1, "Note": "n"}], "Child": {"A": 9}, "Extra": 8, "Comment": None,
    "Meta": None,
}


def test_decode_non_flexible_golden():
    value, end = decode(KITCHEN_SINK, 0, V0_BYTES)
    assert value == V0_VALUE
    assert end == len(V0_BYTES)


def test_encode_non_flexible_golden():
    assert encode(KITCHEN_SINK, 0, V0_VALUE) == V0_BYTES


def test_decode_flexible_golden():
    value, end = decode(KITCHEN_SINK, 3, V3_BYTES)
    assert value == V3_VALUE
    assert end == len(V3_BYTES)


def test_encode_flexible_golden():
    assert encode(KITCHEN_SINK, 3, V3_VALUE) == V3_BYTES


def test_decode_at_offset_and_ignores_trailing_bytes():
    value, end = decode(KITCHEN_SINK, 0, b"junk" + V0_BYTES + b"tail", 4)
    assert value == V0_VALUE
    assert end == 4 + len(V0_BYTES)
    assert decode(KITCHEN_SINK, 0, memoryview(V0_BYTES))[0] == V0_VALUE


def test_missing_fields_take_defaults_and_tagged_defaults_are_not_written():
    minimal = encode(KITCHEN_SINK, 2, {"Name": "n", "Id": UUID})
    value, _ = decode(KITCHEN_SINK, 2, minimal)
    assert value["Extra"] == 7 and value["Comment"] == "hi"  # tagged defaults
    assert value["Label"] is None and value["Blob"] == b"" and value["Names"] == [] and value["Child"] == {"A": 0}
    assert minimal.endswith(b"\x00")  # no tagged fields written
    assert "Meta" not in value and "Legacy" not in value  # not fields of version 2


def test_tagged_fields_are_written_in_tag_order_with_unknown_ones_between():
    value = dict(V3_VALUE, Comment="hi", Extra=7, Meta={"A": 1})
    value[UNKNOWN_TAGGED_FIELDS] = [(1000, b"zz")]
    data = encode(KITCHEN_SINK, 3, value)
    # tag 2 = Meta: size 6 (uvarint 1 + int32 + empty tag section), then unknown tag 1000
    assert data.endswith(b"\x02" + b"\x02\x06\x01" + struct.pack(">i", 1) + b"\x00" + b"\xe8\x07\x02zz")
    decoded, _ = decode(KITCHEN_SINK, 3, data)
    assert decoded == value
    assert encode(KITCHEN_SINK, 3, decoded) == data


def test_unknown_tags_are_kept_in_read_order():
    data = V0_BYTES  # not flexible: no tag section
    assert UNKNOWN_TAGGED_FIELDS not in decode(KITCHEN_SINK, 0, data)[0]
    body = V3_BYTES[:-len(b"\x02\x00\x01\x00\x01\x04" + struct.pack(">i", 8))]
    data = body + b"\x03" + b"\x05\x03abc" + b"\x00\x01\x00" + b"\x09\x00"
    value, end = decode(KITCHEN_SINK, 3, data)
    assert end == len(data)
    assert value[UNKNOWN_TAGGED_FIELDS] == [(5, b"abc"), (9, b"")]
    assert value["Comment"] is None and value["Extra"] == 7


def test_to_json_follows_kafka_json_converter():
    node = to_json(KITCHEN_SINK, 3, V3_VALUE)
    assert list(node) == [
        "flag", "tiny", "short", "port", "count", "big", "long", "ratio", "id", "name", "label", "blob", "ints",
        "names", "entries", "child", "extra", "comment",  # Meta is at its default (null): left out
    ]
    assert kafka_json_dumps(node) == (
        '{"flag":false,"tiny":0,"short":0,"port":1,"count":0,"big":4294967295,"long":-1,"ratio":1.5,'
        '"id":"AQIDBAUGBwgJCgsMDQ4PEA","name":"é","label":null,"blob":null,"ints":[],"names":["x","yz"],'
        '"entries":[{"key":"k","value":1,"note":"n"}],"child":{"a":9},"extra":8,"comment":null}'
    )
    node0 = to_json(KITCHEN_SINK, 0, V0_VALUE)
    assert node0["blob"] == "AA==" and node0["legacy"] == -1 and "big" not in node0
    assert "note" not in to_json(KITCHEN_SINK, 3, dict(V3_VALUE, Entries=[{"Key": "k", "Value": 1}]))["entries"][0]


# -- versions -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("0+", Versions(0, 0x7FFF)), ("3", Versions(3, 3)), ("0-4", Versions(0, 4)), ("none", Versions(0, -1)),
])
def test_versions_parse(text, expected):
    parsed = Versions.parse(text)
    assert parsed == expected
    assert str(parsed) == text


def test_strict_decode_rejects_versions_outside_valid_versions():
    with pytest.raises(SchemaDecodeError) as info:
        decode(KITCHEN_SINK, 4, V3_BYTES)
    assert info.value.java_message == "Can't read version 4 of KitchenSink"
    with pytest.raises(ValueError):
        encode(KITCHEN_SINK, 4, V3_VALUE)


def test_lenient_decode_reads_newer_versions_like_kafka():
    # Kafka's readers test field presence against ranges simplified to the valid versions, so a
    # newer version is read with the newest layout; an inline struct checks and refuses it.
    no_entries = encode(KITCHEN_SINK, 3, dict(V3_VALUE, Entries=[]))
    assert decode(KITCHEN_SINK, 9, no_entries, strict=False)[0] == decode(KITCHEN_SINK, 3, no_entries)[0]
    with pytest.raises(SchemaDecodeError) as info:
        decode(KITCHEN_SINK, 9, V3_BYTES, strict=False)
    assert info.value.java_message == "Can't read version 9 of Entry"
    assert decode(KITCHEN_SINK, -1, V0_BYTES, strict=False)[0] == V0_VALUE
    assert to_json(KITCHEN_SINK, 9, V3_VALUE) == to_json(KITCHEN_SINK, 3, V3_VALUE)


# -- errors carry the message Kafka's generated reader gives ----------------------------------------


def java_message(version: int, data: bytes, schema=KITCHEN_SINK) -> str:
    with pytest.raises(SchemaDecodeError) as info:
        decode(schema, version, data)
    assert isinstance(info.value, CorruptRecordError)
    return info.value.java_message


def test_buffer_underflow_reports_null_like_java():
    assert java_message(0, V0_BYTES[:3]) == "null"


def test_non_nullable_null():
    head = V0_BYTES[:18]  # up to Name
    assert java_message(0, head + b"\xff\xff") == "non-nullable field name was serialized as null"


def test_string_longer_than_0x7fff_is_invalid():
    head = V3_BYTES[:46]  # up to Name
    assert java_message(3, head + b"\x81\x80\x02") == "string field name had invalid length 32768"


def test_string_past_the_end():
    assert java_message(0, V0_BYTES[:18] + b"\x00\x05ab") == "Error reading byte array of 5 byte(s): only 2 byte(s) available"


def test_collection_larger_than_the_buffer():
    head = V0_BYTES[:18] + s16("ab") + b"\xff\xff" + struct.pack(">i", 1) + b"\x00"
    assert java_message(0, head + struct.pack(">i", 1000) + b"\x00" * 8) == (
        "Tried to allocate a collection of size 1000, but there are only 8 bytes remaining."
    )


def test_varint_longer_than_five_bytes():
    head = V3_BYTES[:46]
    assert java_message(3, head + b"\xff\xff\xff\xff\xff") == (
        "Varint is too long, the most significant bit in the 5th byte is set, converted value: ffffffff"
    )


def test_known_tag_in_a_version_without_it():
    v2 = {k: v for k, v in V3_VALUE.items() if k != "Meta"} | {"Entries": [], "Extra": 7, "Comment": "hi"}
    v2_bytes = encode(KITCHEN_SINK, 2, v2)
    assert v2_bytes.endswith(b"\x00")  # no tagged fields
    assert java_message(2, v2_bytes[:-1] + b"\x01\x02\x00") == "Tag 2 is not valid for version 2"


def test_zero_copy_bytes_past_the_end():
    data = struct.pack(">h", 0) + struct.pack(">i", 0) + struct.pack(">i", 10) + b"abc"
    with pytest.raises(SchemaDecodeError) as info:
        cr.decode_consumer_protocol_subscription(data)
    assert info.value.java_message.endswith("due to: newLimit > capacity: (10 > 3).")


def test_invalid_utf8_is_replaced_like_java():
    data = V0_BYTES[:18] + b"\x00\x02\xc3\x28" + V0_BYTES[22:]
    assert decode(KITCHEN_SINK, 0, data)[0]["Name"] == "\ufffd("


# -- encoding errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("change", [
    {"Tiny": 128}, {"Port": -1}, {"Count": "1"}, {"Flag": 1}, {"Name": None}, {"Name": "x" * 0x8000},
    {"Nope": 1}, {"Entries": [{"Key": "k", "Value": 1, "Note": "n"}], "Big": 1},  # Big is not in v0
    {"Ints": "abc"}, {"Entries": [{"Key": None, "Value": 1}]},
])
def test_encode_rejects_bad_values(change):
    with pytest.raises(ValueError):
        encode(KITCHEN_SINK, 0, V0_VALUE | change)


def test_encode_rejects_tags_in_non_flexible_versions():
    with pytest.raises(ValueError, match="Tagged fields"):
        encode(KITCHEN_SINK, 1, {UNKNOWN_TAGGED_FIELDS: [(7, b"")]})


def test_encode_drops_ignorable_fields_of_other_versions():
    v3 = cr.OFFSET_COMMIT_VALUE
    with_expiry = {"Offset": 1, "Metadata": "", "CommitTimestamp": 2, "ExpireTimestamp": 99, "LeaderEpoch": 4}
    assert encode(v3, 3, with_expiry) == struct.pack(">qi", 1, 4) + s16("") + struct.pack(">q", 2)
    assert encode(v3, 1, with_expiry) == struct.pack(">q", 1) + s16("") + struct.pack(">qq", 2, 99)


def test_compile_rejects_bad_schemas():
    with pytest.raises(ValueError):
        compile_schema({"name": "X", "validVersions": "0", "fields": [{"name": "r", "type": "records", "versions": "0"}]})
    with pytest.raises(ValueError):
        compile_schema({"name": "X", "validVersions": "0", "fields": [{"name": "s", "type": "Missing", "versions": "0"}]})
    with pytest.raises(ValueError):
        compile_schema({"name": "X", "validVersions": "0", "flexibleVersions": "none", "fields": [
            {"name": "t", "type": "int32", "versions": "0", "taggedVersions": "0", "tag": 0}]})


# -- Jackson's JSON text -------------------------------------------------------------------------------


def test_kafka_json_dumps_escapes_like_jackson():
    text = 'q"b\\s/é\u2028\x7f\x00\x1f\b\t\n\x0c\r'
    assert kafka_json_dumps({"k": text}) == '{"k":"q\\"b\\\\s/é\u2028\x7f\\u0000\\u001F\\b\\t\\n\\f\\r"}'
    assert kafka_json_dumps([None, True, False, -3, [], {}]) == "[null,true,false,-3,[],{}]"


@pytest.mark.parametrize("value,text", [
    (1.0, "1.0"), (1.5, "1.5"), (1e7, "1.0E7"), (0.001, "0.001"), (1e-4, "1.0E-4"), (123456.789, "123456.789"),
    (-2.5e-10, "-2.5E-10"), (0.0, "0.0"), (-0.0, "-0.0"), (1234567.0, "1234567.0"),
])
def test_kafka_json_dumps_doubles_like_java(value, text):
    assert kafka_json_dumps(value) == text


# -- properties over every schema and version -------------------------------------------------------

ALL_SCHEMAS = [
    KITCHEN_SINK,
    cr.OFFSET_COMMIT_KEY, cr.OFFSET_COMMIT_VALUE, cr.GROUP_METADATA_KEY, cr.GROUP_METADATA_VALUE,
    cr.CONSUMER_GROUP_METADATA_KEY, cr.CONSUMER_GROUP_METADATA_VALUE,
    cr.CONSUMER_GROUP_PARTITION_METADATA_KEY, cr.CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    cr.CONSUMER_GROUP_MEMBER_METADATA_KEY, cr.CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    cr.CONSUMER_PROTOCOL_SUBSCRIPTION, cr.CONSUMER_PROTOCOL_ASSIGNMENT,
    cr.TRANSACTION_LOG_KEY, cr.TRANSACTION_LOG_VALUE,
]
SCHEMA_VERSIONS = [
    (compiled, version)
    for compiled in map(compile_schema, ALL_SCHEMAS)
    for version in range(compiled.valid_versions.lowest, compiled.valid_versions.highest + 1)
]
_INTS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def value_strategy(ftype, version: int, nullable: bool) -> st.SearchStrategy:
    kind = ftype.kind
    if kind in _INTS:
        bits = _INTS[kind]
        strategy = st.integers(-(2**bits), 2**bits - 1)
    elif kind == "uint16":
        strategy = st.integers(0, 2**16 - 1)
    elif kind == "uint32":
        strategy = st.integers(0, 2**32 - 1)
    elif kind == "bool":
        strategy = st.booleans()
    elif kind == "float64":
        strategy = st.floats(allow_nan=False)
    elif kind == "uuid":
        strategy = st.uuids()
    elif kind == "string":
        strategy = st.text(max_size=6)
    elif kind == "bytes":
        strategy = st.binary(max_size=6)
    elif kind == "array":
        strategy = st.lists(value_strategy(ftype.element, version, False), max_size=3)
    else:
        strategy = struct_strategy(ftype.struct, version)
    return st.none() | strategy if nullable else strategy


def struct_strategy(schema: StructSchema, version: int) -> st.SearchStrategy:
    cv = schema.possible.clamp(version)
    fields = {f.key: value_strategy(f.type, version, f.nullable(cv)) for f in schema.fields if f.present(cv)}
    base = st.fixed_dictionaries(fields)
    if not schema.flexible.contains(cv):
        return base
    free_tags = st.integers(0, 300).filter(lambda t: t not in schema.tags)
    unknown = st.lists(st.tuples(free_tags, st.binary(max_size=4)), max_size=2, unique_by=lambda e: e[0]).map(
        lambda entries: sorted(entries, key=lambda e: e[0]))
    return st.tuples(base, unknown).map(lambda p: p[0] | ({UNKNOWN_TAGGED_FIELDS: p[1]} if p[1] else {}))


def message_strategy(compiled: MessageSchema, version: int) -> st.SearchStrategy:
    return struct_strategy(compiled.struct, version)


@pytest.mark.parametrize("compiled,version", SCHEMA_VERSIONS, ids=lambda x: getattr(x, "name", str(x)))
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_every_schema_and_version(compiled, version, data):
    value = data.draw(message_strategy(compiled, version))
    encoded = encode(compiled, version, value)
    decoded, end = decode(compiled, version, encoded)
    assert end == len(encoded)
    assert decoded == value
    assert encode(compiled, version, decoded) == encoded
    kafka_json_dumps(to_json(compiled, version, decoded))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_truncation_is_a_corrupt_record(data):
    compiled, version = data.draw(st.sampled_from(SCHEMA_VERSIONS))
    encoded = encode(compiled, version, data.draw(message_strategy(compiled, version)))
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(SchemaDecodeError):
        decode(compiled, version, encoded[:cut])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_bytes_decode_or_raise_corrupt_record(data):
    compiled, version = data.draw(st.sampled_from(SCHEMA_VERSIONS))
    encoded = bytearray(encode(compiled, version, data.draw(message_strategy(compiled, version))))
    for _ in range(data.draw(st.integers(1, 3))):
        encoded[data.draw(st.integers(0, len(encoded) - 1))] = data.draw(st.integers(0, 255))
    try:
        decode(compiled, data.draw(st.integers(-2, 8)), bytes(encoded), strict=False)
    except CorruptRecordError:
        pass


@settings(max_examples=300)
@given(st.sampled_from(SCHEMA_VERSIONS), st.binary(max_size=80))
def test_random_bytes_decode_or_raise_corrupt_record(schema_version, blob):
    compiled, version = schema_version
    try:
        decode(compiled, version, blob)
    except CorruptRecordError:
        pass
