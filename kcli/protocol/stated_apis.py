"""APIs whose schemas kcli states itself, served and sent like the APIs kio knows.

kio has entities only for the APIs Kafka 4.x keeps. An API it lacks is stated as schema data
(``inter_broker_messages``, read by ``schema``) and goes through the same doors as kio's:
``messages`` asks this module first for an API's name, versions, flexibility, header version and
for decoding, and ``mapping_encoder`` for encoding. So a handler module declares such an API's key
and versions like any other, the network layer reads and answers it, ApiVersions advertises it,
and the client negotiates, sends and reads it.

Decoded messages have kio's shape: frozen dataclasses, one class per struct and version, named
as Kafka names the struct, holding exactly that version's fields under kio's snake-case names
(``controller_id``, ``is_k_raft_controller``, ``v0_host``); arrays are tuples, error codes and
other integers plain ints, uuids ``uuid.UUID``. A message to encode is a mapping by the same
names (or such a dataclass), written once for every version as ``messages.build`` takes it: a
field the version lacks is left out, a field the mapping lacks takes its default. A name that no
version of the struct has is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from kcli.protocol import inter_broker_messages, zookeeper_offset_messages
from kcli.protocol.schema import (
    MessageSchema,
    StructSchema,
    compile_schema,
    decode,
    default_struct,
    encode,
)

__all__ = [
    "StatedApi",
    "stated",
    "states",
    "older_versions",
    "highest_versions",
    "has_version",
    "is_flexible",
    "request_header_version",
    "request_type",
    "response_type",
    "decode_request",
    "response_reader",
    "encode_request",
    "encode_response",
    "snake_case",
]


class StatedApi(NamedTuple):
    key: int
    name: str  # Kafka's message name in snake case, as kio's api_key_map gives it
    request: MessageSchema
    response: MessageSchema
    header_v0_versions: frozenset[int]  # versions sent with request header v0 (no client id)


def _snake(name: str) -> str:
    # An underscore before a capital that follows a lower-case letter or a digit, and before the
    # last capital of a run that a lower-case letter follows: KRaftVersion -> k_raft_version.
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return re.sub(r"([A-Z])([A-Z][a-z])", r"\1_\2", name).lower()


snake_case = functools.cache(_snake)


def _stated_apis() -> dict[int, StatedApi]:
    apis = {}
    for key, (request, response) in inter_broker_messages.INTER_BROKER_APIS.items():
        name = snake_case(request["name"].removesuffix("Request"))
        v0 = frozenset(version for k, version in inter_broker_messages.REQUEST_HEADER_V0 if k == key)
        apis[key] = StatedApi(key, name, compile_schema(request), compile_schema(response), v0)
    return apis


def _older_versions() -> dict[int, StatedApi]:
    apis = {}
    for key, (request, response) in zookeeper_offset_messages.OLDER_VERSIONS.items():
        name = snake_case(request["name"].removesuffix("Request"))
        apis[key] = StatedApi(key, name, compile_schema(request), compile_schema(response), frozenset())
    return apis


# APIs kio lacks altogether: kcli states every version of them.
STATED_APIS: Mapping[int, StatedApi] = _stated_apis()
stated = STATED_APIS.get
# APIs whose oldest versions kio lacks (removed in Kafka 4.0): kcli states those versions only.
OLDER_VERSIONS: Mapping[int, StatedApi] = _older_versions()


def states(api_key: int, version: int) -> StatedApi | None:
    """The stated API that answers for this version: every version of an API kio lacks, or one of
    the oldest versions of an API kio has from a later version on; None when kio answers."""
    api = STATED_APIS.get(api_key)
    if api is not None:
        return api
    api = OLDER_VERSIONS.get(api_key)
    if api is not None and api.request.valid_versions.contains(version):
        return api
    return None


def older_versions(api_key: int) -> tuple[int, ...]:
    """The versions stated below kio's for ``api_key`` (none for most APIs)."""
    api = OLDER_VERSIONS.get(api_key)
    if api is None:
        return ()
    valid = api.request.valid_versions
    return tuple(range(valid.lowest, valid.highest + 1))


def _api(api_key: int, version: int) -> StatedApi:
    api = states(api_key, version)
    if api is None:
        raise KeyError(f"api key {api_key} v{version} is not stated by kcli")
    return api


def highest_versions() -> dict[int, int]:
    """api key -> the highest version kcli states of it."""
    return {key: api.request.valid_versions.highest for key, api in STATED_APIS.items()}


def has_version(api_key: int, version: int) -> bool:
    api = states(api_key, version)
    return api is not None and api.request.valid_versions.contains(version)


def is_flexible(api_key: int, version: int) -> bool:
    return _api(api_key, version).request.flexible_versions.contains(version)


def request_header_version(api_key: int, version: int) -> int:
    """Kafka's ``ApiMessageType.requestHeaderVersion``: 2 when flexible, else 1, except where 0."""
    if version in _api(api_key, version).header_v0_versions:
        return 0
    return 2 if is_flexible(api_key, version) else 1


def _schema(api_key: int, version: int, response: bool) -> MessageSchema:
    api = _api(api_key, version)
    schema = api.response if response else api.request
    if not schema.valid_versions.contains(version):
        raise ValueError(f"{schema.name} has no version {version} (versions {schema.valid_versions})")
    return schema


def request_type(api_key: int, version: int) -> type:
    """The dataclass a request of this version decodes to."""
    return _entity_plan(_schema(api_key, version, False).struct, version, api_key).cls


def response_type(api_key: int, version: int) -> type:
    return _entity_plan(_schema(api_key, version, True).struct, version, api_key).cls


def decode_request(api_key: int, version: int, buffer: bytes | memoryview, offset: int) -> Any:
    """The request body at ``offset`` as a dataclass; raises ``SchemaDecodeError`` on bad bytes."""
    schema = _schema(api_key, version, False)
    value, _end = decode(schema, version, buffer, offset)
    return _entity(_entity_plan(schema.struct, version, api_key), value)


def response_reader(api_key: int, version: int) -> Callable[[bytes | memoryview, int], tuple[Any, int]]:
    """Reads a response body at an offset: ``(dataclass, offset after it)``, as kio's readers do."""
    schema = _schema(api_key, version, True)
    plan = _entity_plan(schema.struct, version, api_key)

    def read(buffer: bytes | memoryview, offset: int) -> tuple[Any, int]:
        value, end = decode(schema, version, buffer, offset)
        return _entity(plan, value), end

    return read


def encode_request(api_key: int, version: int, data: Any) -> bytes:
    schema = _schema(api_key, version, False)
    return encode(schema, version, _to_schema(schema.struct, version, data))


def encode_response(api_key: int, version: int, data: Any) -> bytes:
    schema = _schema(api_key, version, True)
    return encode(schema, version, _to_schema(schema.struct, version, data))


# -- decoded dicts as dataclasses -----------------------------------------------------------------

_SCALAR, _ARRAY, _STRUCT, _STRUCT_ARRAY = range(4)


def _kind(f: Any) -> tuple[int, StructSchema | None]:
    t = f.type
    if t.kind == "struct":
        return _STRUCT, t.struct
    if t.kind == "array":
        return (_STRUCT_ARRAY, t.element.struct) if t.element.kind == "struct" else (_ARRAY, None)
    return _SCALAR, None


class _EntityPlan(NamedTuple):
    cls: type
    # (snake name, schema key, kind, struct plan or None) of each field of this version
    fields: tuple[tuple[str, str, int, Any], ...]


@functools.cache
def _entity_plan(st: StructSchema, version: int, api_key: int) -> _EntityPlan:
    cv = st.possible.clamp(version)
    defaults = default_struct(st, version)
    specs, fields = [], []
    for f in st.fields:
        if not f.present(cv):
            continue
        name = snake_case(f.name)
        kind, sub = _kind(f)
        plan = _entity_plan(sub, version, api_key) if sub is not None else None
        default = defaults[f.key]
        if default is None:
            spec = dataclasses.field(default=None)
        elif kind == _STRUCT:
            spec = dataclasses.field(default_factory=functools.partial(_entity, plan, default))
        elif kind in (_ARRAY, _STRUCT_ARRAY):
            spec = dataclasses.field(default=())
        else:
            spec = dataclasses.field(default=default)
        specs.append((name, Any, spec))
        fields.append((name, f.key, kind, plan))
    namespace = {"__version__": version, "__flexible__": st.flexible.contains(cv), "__api_key__": api_key}
    cls = dataclasses.make_dataclass(st.name, specs, namespace=namespace, frozen=True, slots=True, kw_only=True)
    cls.__module__ = __name__
    return _EntityPlan(cls, tuple(fields))


def _entity(plan: _EntityPlan, value: Mapping[str, Any]) -> Any:
    kwargs = {}
    for name, key, kind, sub in plan.fields:
        v = value[key]
        if v is not None:
            if kind == _ARRAY:
                v = tuple(v)
            elif kind == _STRUCT_ARRAY:
                v = tuple(_entity(sub, item) for item in v)
            elif kind == _STRUCT:
                v = _entity(sub, v)
        kwargs[name] = v
    return plan.cls(**kwargs)


# -- mappings by snake-case names as schema dicts ---------------------------------------------------


@functools.cache
def _names(st: StructSchema, version: int) -> dict[str, tuple[str, bool, int, StructSchema | None]]:
    """snake name -> (schema key, present in this version, kind, struct) for every field of the struct."""
    cv = st.possible.clamp(version)
    return {snake_case(f.name): (f.key, f.present(cv), *_kind(f)) for f in st.fields}


def _items(st: StructSchema, value: Any) -> Any:
    if isinstance(value, Mapping):
        return value.items()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    raise ValueError(f"{st.name}: expected a mapping, got {type(value).__name__}")


def _to_schema(st: StructSchema, version: int, value: Any) -> dict[str, Any]:
    names = _names(st, version)
    out = {}
    for name, v in _items(st, value):
        entry = names.get(name)
        if entry is None:
            raise ValueError(f"{st.name} has no field {name!r} (fields: {', '.join(names)})")
        key, present, kind, sub = entry
        if not present:
            continue
        if v is not None:
            if kind == _STRUCT_ARRAY:
                v = [_to_schema(sub, version, item) for item in v]
            elif kind == _STRUCT:
                v = _to_schema(sub, version, v)
        out[key] = v
    return out
