"""Wire bytes of a kio entity type straight from a version-independent mapping.

``messages.build`` followed by kio's writer constructs a frozen dataclass per struct and then
walks it again; a response of eight partitions costs tens of microseconds that way. This module
compiles, once per entity type, a writer that walks the mapping itself and appends to one
``bytearray``, with exactly ``build``'s rules and kio's bytes:

- a field the mapping leaves out takes the entity's default, or the zero of its Kafka type
  (both encoded once, when the writer is compiled);
- ints stand for milliseconds in duration and timestamp fields (a negative timestamp is null
  where the field is nullable), and any int for an error code;
- a value that is already a kio entity, a ``timedelta`` or a ``datetime`` is written as it is;
- in a flexible version, tagged fields are written, in tag order, only when they differ from
  their default, as kio decides.

``tests/unit/test_mapping_encoder.py`` checks the bytes against kio's for every message.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import struct
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kio.serial import entity_writer

from kcli.protocol import messages, stated_apis
from kcli.protocol.kio_internals import field_shape, field_tag, is_optional, kafka_type, tagged_field_default
from kcli.storage.varint import encode_unsigned_varint

Write = Callable[[bytearray, Any], None]

_ZERO_UUID = bytes(16)


def encode(entity_type: type, data: Mapping[str, Any]) -> bytes:
    out = bytearray()
    writer(entity_type)(out, data)
    return bytes(out)


def encode_request(api_key: int, version: int, data: Mapping[str, Any]) -> bytes:
    if stated_apis.states(api_key, version) is not None:  # a version kio lacks, whose schema kcli states
        return stated_apis.encode_request(api_key, version, data)
    return encode(messages.request_type(api_key, version), data)


def encode_response(api_key: int, version: int, data: Mapping[str, Any]) -> bytes:
    if stated_apis.states(api_key, version) is not None:
        return stated_apis.encode_response(api_key, version, data)
    return encode(messages.response_type(api_key, version), data)


@functools.cache
def writer(entity_type: type) -> Write:
    """Appends the bytes of ``entity_type`` built from a mapping (or from an entity)."""
    flexible = bool(entity_type.__flexible__)
    kio_write = _kio_writer(entity_type)
    steps: list[tuple[str, Write, bytes]] = []
    tagged: list[tuple[int, str, Any, Write, Any, bytes | None]] = []
    hints = typing.get_type_hints(entity_type)
    for field in dataclasses.fields(entity_type):
        tag = field_tag(field)
        write = _field_writer(field, flexible, optional=tag is None and is_optional(field))
        default = _default(field, hints[field.name])
        if tag is None:
            steps.append((field.name, write, _bytes_of(write, default)))
        else:
            kio_default = tagged_field_default(field)
            # A field left out still goes on the wire when its zero is not kio's default.
            absent = None if default == kio_default else _tagged_bytes(tag, write, default)
            tagged.append((tag, field.name, hints[field.name], write, kio_default, absent))
    tagged.sort(key=lambda t: t[0])
    steps_tuple = tuple(steps)
    tagged_tuple = tuple(tagged)
    missing = object()

    def write_entity(out: bytearray, data: Any) -> None:
        if isinstance(data, entity_type):
            kio_write(out, data)
            return
        get = data.get
        for name, write, default in steps_tuple:
            value = get(name, missing)
            if value is missing:
                out += default
            else:
                write(out, value)
        if not flexible:
            return
        if not tagged_tuple:
            out.append(0)
            return
        pieces = []
        for tag, name, hint, write, kio_default, absent in tagged_tuple:
            if name in data:
                value = messages.convert(hint, data[name])
                if value != kio_default:
                    pieces.append(_tagged_bytes(tag, write, value))
            elif absent is not None:
                pieces.append(absent)
        out += encode_unsigned_varint(len(pieces))
        for piece in pieces:
            out += piece

    return write_entity


class _BufferWriter:
    """kio's writers take a file-like ``write``; this one appends to a bytearray."""

    __slots__ = ("out",)

    def __init__(self, out: bytearray) -> None:
        self.out = out

    def write(self, data: bytes) -> None:
        self.out += data


def _kio_writer(entity_type: type) -> Write:
    write = entity_writer(entity_type)

    def write_entity(out: bytearray, entity: Any) -> None:
        write(_BufferWriter(out), entity)

    return write_entity


def _default(field: dataclasses.Field, hint: Any) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return messages.zero(hint)


def _bytes_of(write: Write, value: Any) -> bytes:
    out = bytearray()
    write(out, value)
    return bytes(out)


def _tagged_bytes(tag: int, write: Write, value: Any) -> bytes:
    body = _bytes_of(write, value)
    out = bytearray()
    out += encode_unsigned_varint(tag)
    out += encode_unsigned_varint(len(body))
    out += body
    return bytes(out)


# -- fields ------------------------------------------------------------------------------------


def _field_writer(field: dataclasses.Field, flexible: bool, optional: bool) -> Write:
    entity, is_array = field_shape(field)
    if entity is not None:
        if is_array:
            return _array(writer(entity), flexible)
        return _nullable_entity(writer(entity)) if optional else writer(entity)
    write = _primitive(kafka_type(field), flexible, optional and not is_array)
    return _array(write, flexible) if is_array else write


def _array(item: Write, flexible: bool) -> Write:
    if flexible:
        def write_compact_array(out: bytearray, items: Any) -> None:
            if items is None:
                out.append(0)
                return
            if not isinstance(items, (list, tuple)):
                items = tuple(items)
            out += encode_unsigned_varint(len(items) + 1)
            for value in items:
                item(out, value)

        return write_compact_array

    pack_length = struct.Struct(">i").pack

    def write_array(out: bytearray, items: Any) -> None:
        if items is None:
            out += b"\xff\xff\xff\xff"
            return
        if not isinstance(items, (list, tuple)):
            items = tuple(items)
        out += pack_length(len(items))
        for value in items:
            item(out, value)

    return write_array


def _nullable_entity(write: Write) -> Write:
    def write_nullable(out: bytearray, value: Any) -> None:
        if value is None:
            out.append(0xFF)
        else:
            out.append(1)
            write(out, value)

    return write_nullable


_NUMBERS = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint8": ">B", "uint16": ">H", "uint32": ">I", "uint64": ">Q", "float64": ">d", "error_code": ">h"}


def _primitive(kafka_type: str, flexible: bool, nullable: bool) -> Write:
    if kafka_type in _NUMBERS:
        return _number(struct.Struct(_NUMBERS[kafka_type]).pack)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return _duration(struct.Struct(">i" if kafka_type == "timedelta_i32" else ">q").pack)
    if kafka_type == "datetime_i64":
        return _timestamp(nullable)
    if kafka_type == "bool":
        return _boolean
    if kafka_type == "uuid":
        return _uuid
    if kafka_type == "string":
        return _compact_text(nullable) if flexible else _legacy_text(nullable, _pack_i16)
    if kafka_type in ("bytes", "records"):
        return _compact_text(nullable) if flexible else _legacy_text(nullable, _pack_i32)
    raise TypeError(f"no writer for Kafka type {kafka_type!r}")


def _number(pack: Callable[[Any], bytes]) -> Write:
    def write_number(out: bytearray, value: Any) -> None:
        out += pack(value)

    return write_number


def _duration(pack: Callable[[int], bytes]) -> Write:
    def write_duration(out: bytearray, value: Any) -> None:
        if isinstance(value, datetime.timedelta):
            value = round(value.total_seconds() * 1000)
        out += pack(value)

    return write_duration


_pack_i64 = struct.Struct(">q").pack


def _timestamp(nullable: bool) -> Write:
    def write_timestamp(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise TypeError("a timestamp that is not nullable is None")
            value = -1
        elif isinstance(value, datetime.datetime):
            value = round(value.timestamp() * 1000)
        elif value < 0 and nullable:
            value = -1
        out += _pack_i64(value)

    return write_timestamp


def _boolean(out: bytearray, value: Any) -> None:
    out.append(1 if value else 0)


def _uuid(out: bytearray, value: uuid.UUID | None) -> None:
    out += _ZERO_UUID if value is None else value.bytes


def _compact_text(nullable: bool) -> Write:
    """A string or bytes field of a flexible version (unsigned varint length + 1, 0 for null)."""

    def write_compact(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise TypeError("a string that is not nullable is None")
            out.append(0)
            return
        if isinstance(value, str):
            value = value.encode()
        out += encode_unsigned_varint(len(value) + 1)
        out += value

    return write_compact


_pack_i16 = struct.Struct(">h").pack
_pack_i32 = struct.Struct(">i").pack


def _legacy_text(nullable: bool, pack_length: Callable[[int], bytes]) -> Write:
    """A string (int16 length) or bytes (int32 length) of a version that is not flexible."""
    null = pack_length(-1)

    def write_legacy(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise TypeError("a string or bytes field that is not nullable is None")
            out += null
            return
        if isinstance(value, str):
            value = value.encode()
        out += pack_length(len(value))
        out += value

    return write_legacy
