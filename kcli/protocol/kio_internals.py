"""What kcli needs from kio's private modules, behind one small interface.

kio's public surface (``kio.serial.entity_reader``/``entity_writer``, ``kio.index``, the schema
entities) reads and writes whole messages. ``mapping_encoder`` also needs to know, field by
field, how kio sees a schema entity: which fields are tagged, nullable, nested entities or
arrays, and a tagged field's implicit default. kio keeps those in private modules
(``kio.serial._introspect``, ``kio.serial._implicit_defaults``, as of kio 0.6.5); this module is
the only one that imports them, so a kio upgrade that moves them touches this file alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import EntityField, EntityTupleField, classify_field, get_field_tag, get_schema_field_type
from kio.serial._introspect import is_optional as _is_optional


class FieldShape(NamedTuple):
    """How a schema field is encoded: a nested ``entity`` type (None for a primitive), and
    whether it is an array of those entities or primitives."""

    entity: type | None
    is_array: bool


def field_shape(field: dataclasses.Field) -> FieldShape:
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        return FieldShape(kind.type_, True)
    if isinstance(kind, EntityField):
        return FieldShape(kind.type_, False)
    return FieldShape(None, bool(kind.is_array))


def field_tag(field: dataclasses.Field) -> int | None:
    """The field's tag when it is a tagged field of a flexible version, else None."""
    tag = get_field_tag(field)
    return None if tag is None else int(tag)


def is_optional(field: dataclasses.Field) -> bool:
    """Whether the field's type admits None (nullable on the wire, unless it is tagged)."""
    return bool(_is_optional(field))


def kafka_type(field: dataclasses.Field) -> str:
    """The Kafka type name of a primitive field (``int32``, ``string``, ``records``, ...)."""
    return get_schema_field_type(field)


def tagged_field_default(field: dataclasses.Field) -> Any:
    """The value kio leaves off the wire for a tagged field that declares no default."""
    if field.default is not dataclasses.MISSING:
        return field.default
    return get_tagged_field_default(field)
