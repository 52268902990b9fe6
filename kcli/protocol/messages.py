"""Kafka's request and response messages, through kio's generated entities.

kio gives every API version as frozen dataclasses with a native reader and writer; this module
finds them by (api key, version), caches the reader and writer, and builds a response entity of
any version from one version-independent mapping (``build``), so a handler writes its answer
once and each version keeps only the fields it has. Fields a mapping leaves out take the
entity's default, or the zero of their Kafka type (0, "", empty array, null where nullable).

An API kio lacks (Kafka 3.9's inter-broker requests), or an oldest version of one it has
(OffsetCommit v0-1, OffsetFetch v0), is one kcli states itself: ``stated_apis`` answers for it
wherever an API version is looked up (name, versions, flexibility, header version, decoding).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer

from kcli.protocol import produce_request, stated_apis
from kcli.protocol.request_check import check_body

ZERO_UUID = uuid.UUID(int=0)
_ZERO_DURATION = datetime.timedelta(0)
_EPOCH = datetime.datetime.fromtimestamp(0, tz=datetime.timezone.utc)


class _WireCode(int):
    """An error code as kio's writer takes it (it reads ``.value``), for any int."""

    __slots__ = ()

    @property
    def value(self) -> int:
        return int(self)


_NO_ERROR = _WireCode(0)


def api_name(api_key: int) -> str | None:
    """Kafka's message name in snake case (``produce``), or None for a key kcli does not know."""
    api = stated_apis.stated(api_key)
    return api.name if api is not None else api_key_map.get(api_key)


@functools.cache
def request_type(api_key: int, version: int) -> type:
    if stated_apis.states(api_key, version) is not None:
        return stated_apis.request_type(api_key, version)
    return load_request_schema(api_key, version)


@functools.cache
def response_type(api_key: int, version: int) -> type:
    if stated_apis.states(api_key, version) is not None:
        return stated_apis.response_type(api_key, version)
    return load_response_schema(api_key, version)


@functools.cache
def known_versions(api_key: int) -> tuple[int, ...]:
    """Every version of ``api_key`` kcli can read and write, lowest first; () for an unknown key."""
    api = stated_apis.stated(api_key)
    if api is not None:
        valid = api.request.valid_versions
        return tuple(range(valid.lowest, valid.highest + 1))
    name = api_key_map.get(api_key)
    kio_versions = set(schema_name_map.get(name, {})) if name is not None else set()
    return tuple(sorted(kio_versions | set(stated_apis.older_versions(api_key))))


def has_version(api_key: int, version: int) -> bool:
    if stated_apis.states(api_key, version) is not None:
        return stated_apis.has_version(api_key, version)
    try:
        request_type(api_key, version)
        response_type(api_key, version)
    except Exception:  # kio raises its own index errors for keys and versions it lacks
        return False
    return True


@functools.cache
def is_flexible(api_key: int, version: int) -> bool:
    """Whether this version uses compact encodings and tagged fields (request header v2)."""
    if stated_apis.states(api_key, version) is not None:
        return stated_apis.is_flexible(api_key, version)
    return bool(request_type(api_key, version).__flexible__)


@functools.cache
def request_header_version(api_key: int, version: int) -> int:
    """The request header a request of this version has: 2 when flexible, else 1 (0: no client id)."""
    if stated_apis.states(api_key, version) is not None:
        return stated_apis.request_header_version(api_key, version)
    return 2 if is_flexible(api_key, version) else 1


@functools.cache
def request_reader(api_key: int, version: int) -> Callable[[Any, int], tuple[Any, int]]:
    return entity_reader(request_type(api_key, version))


def response_reader(api_key: int, version: int) -> Callable[[Any, int], tuple[Any, int]]:
    """Reads a response body at an offset: ``(response entity, offset after it)``."""
    if stated_apis.states(api_key, version) is not None:
        return stated_apis.response_reader(api_key, version)
    return entity_reader(response_type(api_key, version))


@functools.cache
def _writer(entity_type: type) -> Callable[[Any, Any], None]:
    return entity_writer(entity_type)


def decode_request(api_key: int, version: int, buffer: bytes | bytearray | memoryview, offset: int) -> Any:
    """The request body at ``offset`` as a kio entity; raises on malformed bytes.

    The body is checked structurally first (``request_check``): kio's reader would trust a huge
    array count and abort the process allocating for it. A Produce request is read by
    ``produce_request``, which makes the same checks as it reads and leaves the records in
    ``buffer`` instead of copying them.
    """
    if stated_apis.states(api_key, version) is not None:
        return stated_apis.decode_request(api_key, version, buffer, offset)
    if api_key == produce_request.API_KEY and version in produce_request.VERSIONS:
        return produce_request.read(buffer, offset, version)
    check_body(request_type(api_key, version), buffer, offset)
    if type(buffer) is not bytes:
        buffer = memoryview(buffer).toreadonly()  # kio's reader takes read-only buffers only
    entity, _size = request_reader(api_key, version)(buffer, offset)
    return entity


def encode(entity: Any) -> bytes:
    out = io.BytesIO()
    _writer(type(entity))(out, entity)
    return out.getvalue()


def build_response(api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    return build(response_type(api_key, version), data)


def build(entity_type: type, data: Mapping[str, Any]) -> Any:
    """An entity of ``entity_type`` from a mapping that may hold fields of other versions too."""
    kwargs = {}
    for name, field_type, default in _fields(entity_type):
        if name in data:
            kwargs[name] = convert(field_type, data[name])
        elif default is dataclasses.MISSING:
            kwargs[name] = zero(field_type)
    return entity_type(**kwargs)


@functools.cache
def _fields(entity_type: type) -> tuple[tuple[str, Any, Any], ...]:
    hints = typing.get_type_hints(entity_type)
    result = []
    for f in dataclasses.fields(entity_type):
        default = f.default
        if default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        result.append((f.name, hints[f.name], default))
    return tuple(result)


def _entity_of(field_type: Any) -> tuple[str, type | None]:
    """How a field's type is built: ('array', item entity or None), ('entity', type), ('plain', type)."""
    nullable = False
    origin = typing.get_origin(field_type)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(field_type) if a is not type(None)]
        nullable = True
        field_type = args[0]
        origin = typing.get_origin(field_type)
    if origin is tuple:
        item = typing.get_args(field_type)[0]
        return ("array", item if dataclasses.is_dataclass(item) else None) if not nullable else ("array?", item if dataclasses.is_dataclass(item) else None)
    if dataclasses.is_dataclass(field_type):
        return ("entity?" if nullable else "entity", field_type)
    return ("plain?" if nullable else "plain", field_type)


_shape = functools.cache(_entity_of)


def convert(field_type: Any, value: Any) -> Any:
    kind, inner = _shape(field_type)
    if value is None:
        return None
    if kind.startswith("array"):
        if inner is None:
            return tuple(value)
        return tuple(v if isinstance(v, inner) else build(inner, v) for v in value)
    if kind.startswith("entity"):
        return value if isinstance(value, inner) else build(inner, value)
    if isinstance(value, int) and isinstance(inner, type):
        if inner is KioErrorCode:
            return value if hasattr(value, "value") else _WireCode(value)
        if issubclass(inner, datetime.timedelta):
            return datetime.timedelta(milliseconds=value)
        if issubclass(inner, datetime.datetime):
            if value < 0 and kind.endswith("?"):
                return None
            return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.timezone.utc)
    return value


def zero(field_type: Any) -> Any:
    kind, inner = _shape(field_type)
    if kind.endswith("?"):
        return None
    if kind == "array":
        return ()
    if kind == "entity":
        return build(inner, {})
    if isinstance(inner, type):
        if inner is KioErrorCode:
            return _NO_ERROR
        if issubclass(inner, datetime.timedelta):
            return _ZERO_DURATION
        if issubclass(inner, datetime.datetime):
            return _EPOCH
        if issubclass(inner, bool):
            return False
        if issubclass(inner, int):
            return 0
        if issubclass(inner, str):
            return ""
        if issubclass(inner, bytes):
            return b""
        if issubclass(inner, uuid.UUID):
            return ZERO_UUID
        if issubclass(inner, float):
            return 0.0
    raise TypeError(f"no zero value for {field_type!r}")
