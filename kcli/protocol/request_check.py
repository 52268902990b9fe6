"""A structural check of a request body before kio decodes it.

kio's native reader trusts the length prefixes it reads: an array that claims 2^32 entries makes
it reserve memory for all of them first, and a failed allocation aborts the whole process. So
every request body is walked once, by the same schema kio would use, and refused unless every
array count, string and bytes length fits in the bytes that remain, every null is allowed where
it appears, and nothing runs past the end. The walker is compiled once per entity type into a
list of small step functions; it builds no objects.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
import types
import typing
from collections.abc import Callable

Step = Callable[[bytes | memoryview, int, int], int]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}


class MalformedRequest(ValueError):
    """The body does not follow its schema; the message says where."""


def check_body(entity_type: type, buffer: bytes | memoryview, offset: int) -> None:
    """Raise MalformedRequest unless ``buffer[offset:]`` is one well-formed ``entity_type``."""
    _compiled(entity_type)(buffer, offset, len(buffer))


@functools.cache
def _compiled(entity_type: type) -> Step:
    flexible = bool(getattr(entity_type, "__flexible__", False))
    hints = typing.get_type_hints(entity_type)
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    fixed, fixed_names = 0, []  # fixed-size fields since the last step, checked as one
    for field in dataclasses.fields(entity_type):
        kafka_type = field.metadata.get("kafka_type")
        tag = field.metadata.get("tag")
        if tag is None and kafka_type in _FIXED_SIZES and typing.get_origin(hints[field.name]) is not tuple:
            fixed += _FIXED_SIZES[kafka_type]
            fixed_names.append(field.name)
            continue
        step = _field_step(hints[field.name], kafka_type, flexible, field.name)
        if tag is None:
            if fixed:
                steps.append(_fixed_step(fixed, ", ".join(fixed_names)))
                fixed, fixed_names = 0, []
            steps.append(step)
        else:
            tagged[tag] = step
    if fixed:
        steps.append(_fixed_step(fixed, ", ".join(fixed_names)))

    def walk(buffer: bytes | memoryview, position: int, end: int) -> int:
        for step in steps:
            position = step(buffer, position, end)
        if flexible:
            if position < end and buffer[position] == 0:
                return position + 1  # no tagged fields: the common case
            position = _tagged_section(buffer, position, end, tagged)
        return position

    return walk


def _field_step(field_type, kafka_type: str | None, flexible: bool, name: str) -> Step:
    nullable = False
    if typing.get_origin(field_type) in (types.UnionType, typing.Union):
        nullable = True
        field_type = next(a for a in typing.get_args(field_type) if a is not type(None))
    if typing.get_origin(field_type) is tuple:
        item = typing.get_args(field_type)[0]
        item_step = _compiled(item) if dataclasses.is_dataclass(item) else _scalar_step(kafka_type, False, flexible, name)
        return _array_step(item_step, nullable, flexible, name)
    if dataclasses.is_dataclass(field_type):
        inner = _compiled(field_type)
        return _nullable_entity_step(inner, name) if nullable else inner
    return _scalar_step(kafka_type, nullable, flexible, name)


def _fixed_step(size: int, name: str) -> Step:
    def fixed(buffer: bytes | memoryview, position: int, end: int) -> int:
        position += size
        if position > end:
            raise MalformedRequest(f"{name} runs past the end of the request")
        return position

    return fixed


def _scalar_step(kafka_type: str | None, nullable: bool, flexible: bool, name: str) -> Step:
    size = _FIXED_SIZES.get(kafka_type or "")
    if size is not None:
        return _fixed_step(size, name)
    if kafka_type == "string":
        return _length_prefixed(name, nullable, flexible, _INT16)
    if kafka_type in ("bytes", "records"):
        return _length_prefixed(name, nullable, flexible, _INT32)
    raise TypeError(f"no structural check for kafka type {kafka_type!r} of {name}")


def _length_prefixed(name: str, nullable: bool, flexible: bool, width: struct.Struct) -> Step:
    def step(buffer: bytes | memoryview, position: int, end: int) -> int:
        length, position = _length(buffer, position, end, flexible, width, name)
        if length < 0:
            if length == -1 and nullable:
                return position
            raise MalformedRequest(f"{name} has invalid length {length}")
        position += length
        if position > end:
            raise MalformedRequest(f"{name} of {length} bytes runs past the end of the request")
        return position

    return step


def _array_step(item: Step, nullable: bool, flexible: bool, name: str) -> Step:
    def step(buffer: bytes | memoryview, position: int, end: int) -> int:
        count, position = _length(buffer, position, end, flexible, _INT32, name)
        if count < 0:
            if count == -1 and nullable:
                return position
            raise MalformedRequest(f"{name} has invalid array length {count}")
        if count > end - position:  # every entry takes at least one byte
            raise MalformedRequest(f"{name} claims {count} entries in {end - position} bytes")
        for _ in range(count):
            position = item(buffer, position, end)
        return position

    return step


def _nullable_entity_step(inner: Step, name: str) -> Step:
    def step(buffer: bytes | memoryview, position: int, end: int) -> int:
        if position >= end:
            raise MalformedRequest(f"{name} runs past the end of the request")
        marker = buffer[position]
        if marker == 0xFF:
            return position + 1
        if marker != 1:
            raise MalformedRequest(f"{name} has invalid null marker {marker}")
        return inner(buffer, position + 1, end)

    return step


def _length(buffer, position: int, end: int, flexible: bool, width: struct.Struct, name: str) -> tuple[int, int]:
    """A length prefix: unsigned varint of length + 1 when flexible, else signed int16/int32."""
    if flexible:
        if position < end and buffer[position] < 0x80:
            return buffer[position] - 1, position + 1
        value, position = _uvarint(buffer, position, end, name)
        return value - 1, position
    if position + width.size > end:
        raise MalformedRequest(f"{name} length runs past the end of the request")
    return width.unpack_from(buffer, position)[0], position + width.size


def _uvarint(buffer, position: int, end: int, name: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= end or shift > 28:
            raise MalformedRequest(f"{name} has a malformed unsigned varint")
        byte = buffer[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def tagged_section_end(buffer, position: int, end: int) -> int:
    """Where a tagged-field section starting at ``position`` ends, its fields unread."""
    return _tagged_section(buffer, position, end, {})


def _tagged_section(buffer, position: int, end: int, tagged: dict[int, Step]) -> int:
    count, position = _uvarint(buffer, position, end, "tagged fields")
    if count > end - position:
        raise MalformedRequest(f"{count} tagged fields claimed in {end - position} bytes")
    for _ in range(count):
        tag, position = _uvarint(buffer, position, end, "tagged field")
        size, position = _uvarint(buffer, position, end, "tagged field")
        field_end = position + size
        if field_end > end:
            raise MalformedRequest(f"tagged field {tag} of {size} bytes runs past the end of the request")
        step = tagged.get(tag)
        if step is not None and step(buffer, position, field_end) != field_end:
            raise MalformedRequest(f"tagged field {tag} does not fill its {size} bytes")
        position = field_end
    return position
