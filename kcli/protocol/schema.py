"""Kafka message schemas as plain data, and a sans-I/O interpreter for them.

A schema restates one of Apache Kafka's JSON message definitions (``*/src/main/resources/common/
message/*.json``) as a Python dict with the same keys::

    {"name": "OffsetCommitValue", "validVersions": "0-4", "flexibleVersions": "4+",
     "fields": [{"name": "offset", "type": "int64", "versions": "0+"}, ...],
     "commonStructs": [{"name": ..., "versions": "0+", "fields": [...]}]}

Field keys understood: ``name``, ``type``, ``versions``, ``nullableVersions``, ``taggedVersions``,
``tag``, ``default``, ``ignorable``, ``flexibleVersions``, ``zeroCopy`` and ``fields`` (an inline
struct); others (``about``, ``mapKey``, ``entityType``) are allowed and ignored. Types: ``bool``,
``int8``, ``int16``, ``uint16``, ``int32``, ``uint32``, ``int64``, ``float64``, ``uuid``,
``string``, ``bytes``, a struct name, and ``[]T`` arrays of any of these.

Wire format, all integers big-endian:

    fixed width     int8 .. int64, uint16, uint32, float64; bool is one byte (non-zero = true);
                    uuid is 16 bytes (most significant long first)
    string          int16 length + UTF-8; -1 = null      flexible: uvarint length+1, 0 = null
    bytes           int32 length + bytes; -1 = null      flexible: uvarint length+1, 0 = null
    array           int32 count + elements; -1 = null    flexible: uvarint count+1, 0 = null
    nullable struct int8 -1 (null) or 1, then the struct
    tagged fields   flexible versions end every struct with: uvarint count, then per field
                    uvarint tag, uvarint size, value (compact encodings; a nullable struct's
                    value starts with uvarint 1). Tags are written in ascending order.

Decoded messages are dicts keyed by the field name with its first letter upper-cased (Kafka's
generator treats the first letter's case as insignificant: ``offset`` and ``Offset`` both give
the accessor ``offset()`` and the JSON key ``"offset"``). A decoded dict holds exactly the fields
of that version; tagged fields of that version are always present (their default when absent from
the bytes); unknown tags are kept, in order, as ``(tag, bytes)`` pairs under
``UNKNOWN_TAGGED_FIELDS`` so that re-encoding reproduces the input.

Version handling follows Kafka's generated readers. A generated reader does not check the version
it is given: every "is field F present" test is a range test that the generator simplifies
against the message's valid versions, which amounts to testing the version clamped into the
struct's possible versions. An inline struct whose versions are open-ended ("0+") does check, and
rejects a version above its parent's range ("Can't read version 5 of TopicPartition"). ``decode``
rejects versions outside ``validVersions`` unless ``strict=False``, which gives Kafka's behaviour.

The functions take a schema dict or a ``MessageSchema`` from ``compile_schema``; a dict is compiled
once and cached, so schema dicts are treated as immutable.

Errors in the bytes raise ``SchemaDecodeError`` (a ``CorruptRecordError``) whose ``java_message``
is the message Kafka's reader gives for the same bytes (``"null"`` for a buffer underflow, whose
Java exception has no message). Values that cannot be encoded raise ``ValueError``.
"""

from __future__ import annotations

import base64
import math
import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from kcli.common import uuid_from_string, uuid_to_string
from kcli.errors import CorruptRecordError
from kcli.java_compat import double_to_string
from kcli.storage.varint import encode_unsigned_varint

MAX_VERSION = 0x7FFF
UNKNOWN_TAGGED_FIELDS = "_unknown_tagged_fields"

_FIXED = {
    "bool": struct.Struct(">b"),
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_PRIMITIVES = frozenset(_FIXED) | {"uuid", "string", "bytes"}
_VARIABLE = frozenset({"string", "bytes", "array"})
_INT16 = _FIXED["int16"]
_INT32 = _FIXED["int32"]
_STRING_MAX = 0x7FFF
_MISSING = object()


class SchemaDecodeError(CorruptRecordError):
    """Bytes that do not decode under a schema; ``java_message`` is Kafka's reader's message."""

    def __init__(self, message: str, position: int, java_message: str) -> None:
        super().__init__(message, position)
        self.java_message = java_message


class Versions(NamedTuple):
    """An inclusive version range; empty when ``lowest > highest`` (Kafka's ``"none"``)."""

    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str | int | None, default: Versions | None = None) -> Versions:
        if text is None:
            if default is None:
                raise ValueError("a version range is required")
            return default
        text = str(text).strip()
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        low, dash, high = text.partition("-")
        return cls(int(low), int(high) if dash else int(low))

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    def contains(self, version: int) -> bool:
        return self.lowest <= version <= self.highest

    def intersect(self, other: Versions) -> Versions:
        low, high = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return Versions(low, high) if low <= high else NO_VERSIONS

    def clamp(self, version: int) -> int:
        if version < self.lowest:
            return self.lowest
        if version > self.highest:
            return self.highest
        return version

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == MAX_VERSION:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NO_VERSIONS = Versions(0, -1)


def capitalize_first(name: str) -> str:
    return name[:1].upper() + name[1:]


def lower_case_first(name: str) -> str:
    return name[:1].lower() + name[1:]


class FieldType:
    """A field's type: ``kind`` is a primitive name, ``"struct"`` or ``"array"``."""

    __slots__ = ("kind", "element", "struct")

    def __init__(self, kind: str, element: FieldType | None = None, struct_: StructSchema | None = None) -> None:
        self.kind = kind
        self.element = element
        self.struct = struct_

    def __repr__(self) -> str:
        if self.kind == "array":
            return f"[]{self.element!r}"
        if self.kind == "struct":
            return self.struct.name if self.struct else "struct"
        return self.kind


class Field:
    """One compiled field of a struct."""

    __slots__ = (
        "name", "key", "json_name", "type", "versions", "nullable_versions", "tagged_versions",
        "tag", "flexible_versions", "ignorable", "zero_copy", "default_spec",
    )

    def __init__(self, **kwargs: Any) -> None:
        for slot in self.__slots__:
            setattr(self, slot, kwargs[slot])

    def present(self, clamped_version: int) -> bool:
        return self.versions.contains(clamped_version)

    def tagged(self, clamped_version: int) -> bool:
        return self.tagged_versions.contains(clamped_version)

    def nullable(self, clamped_version: int) -> bool:
        return self.nullable_versions.contains(clamped_version)

    def __repr__(self) -> str:
        return f"Field({self.name}: {self.type!r} v{self.versions})"


class StructSchema:
    """A compiled struct: its fields, its tags, and the version rules Kafka's generator applies.

    ``possible`` is the range the generator simplifies presence tests against (so a version is
    clamped into it before testing); ``guard`` is the parent range an inline struct checks a
    version against before reading, or None.
    """

    __slots__ = ("name", "fields", "by_key", "tags", "versions", "possible", "guard_low", "guard_high", "flexible")

    def __init__(self, name: str, versions: Versions, possible: Versions, flexible: Versions) -> None:
        self.name = name
        self.versions = versions
        self.possible = possible
        self.flexible = flexible
        self.fields: tuple[Field, ...] = ()
        self.by_key: dict[str, Field] = {}
        self.tags: dict[int, Field] = {}
        self.guard_low: int | None = None
        self.guard_high: int | None = None

    def __repr__(self) -> str:
        return f"StructSchema({self.name} v{self.versions})"


class MessageSchema:
    """A compiled message schema; ``spec`` is the dict it came from."""

    __slots__ = ("name", "valid_versions", "flexible_versions", "struct", "spec")

    def __init__(self, name: str, valid: Versions, flexible: Versions, struct_: StructSchema, spec: Mapping[str, Any]) -> None:
        self.name = name
        self.valid_versions = valid
        self.flexible_versions = flexible
        self.struct = struct_
        self.spec = spec

    def __repr__(self) -> str:
        return f"MessageSchema({self.name} v{self.valid_versions})"


# -- compiling a schema dict ------------------------------------------------------------------


def compile_schema(spec: Mapping[str, Any]) -> MessageSchema:
    """Check a schema dict and turn it into the structures the codec walks."""
    name = spec["name"]
    valid = Versions.parse(spec["validVersions"])
    if valid.empty:
        raise ValueError(f"{name}: validVersions is empty")
    flexible = Versions.parse(spec.get("flexibleVersions", "none"))
    commons = {c["name"]: c for c in spec.get("commonStructs", ())}
    compiled_commons: dict[str, StructSchema] = {}
    compiler = _Compiler(name, flexible, commons, compiled_commons)
    top = compiler.struct(name, spec["fields"], valid, parent=valid, inline=False)
    return MessageSchema(name, valid, flexible, top, spec)


class _Compiler:
    def __init__(self, message: str, flexible: Versions, commons: Mapping[str, Mapping[str, Any]],
                 compiled_commons: dict[str, StructSchema]) -> None:
        self.message = message
        self.flexible = flexible
        self.commons = commons
        self.compiled_commons = compiled_commons

    def struct(self, name: str, field_specs: Sequence[Mapping[str, Any]], versions: Versions,
               parent: Versions, inline: bool) -> StructSchema:
        possible = parent.intersect(versions)
        st = StructSchema(name, versions, possible, self.flexible)
        if inline:
            if versions.lowest < parent.lowest:
                st.guard_low = parent.lowest
            if versions.highest > parent.highest:
                st.guard_high = parent.highest
        fields = []
        for fs in field_specs:
            f = self.field(fs, child_parent=possible)
            if f.key in st.by_key:
                raise ValueError(f"{self.message}: duplicate field {f.name} in {name}")
            st.by_key[f.key] = f
            if f.tag is not None:
                if f.tag in st.tags:
                    raise ValueError(f"{self.message}: duplicate tag {f.tag} in {name}")
                st.tags[f.tag] = f
            fields.append(f)
        st.fields = tuple(fields)
        return st

    def common(self, type_name: str) -> StructSchema:
        if type_name in self.compiled_commons:
            return self.compiled_commons[type_name]
        spec = self.commons.get(type_name)
        if spec is None:
            raise ValueError(f"{self.message}: unknown type {type_name}")
        versions = Versions.parse(spec["versions"])
        # A common struct's generated class has its own versions as its parent versions.
        placeholder = StructSchema(type_name, versions, versions, self.flexible)
        self.compiled_commons[type_name] = placeholder
        built = self.struct(type_name, spec["fields"], versions, parent=versions, inline=False)
        for slot in StructSchema.__slots__:
            setattr(placeholder, slot, getattr(built, slot))
        return placeholder

    def type(self, type_name: str, fs: Mapping[str, Any], versions: Versions, child_parent: Versions) -> FieldType:
        if type_name.startswith("[]"):
            element = self.type(type_name[2:], fs, versions, child_parent)
            if element.kind == "array":
                raise ValueError(f"{self.message}: nested arrays are not supported ({fs['name']})")
            return FieldType("array", element=element)
        if type_name in _PRIMITIVES:
            return FieldType(type_name)
        if type_name == "records":
            raise ValueError(f"{self.message}: the records type is not supported ({fs['name']})")
        if "fields" in fs:
            return FieldType("struct", struct_=self.struct(type_name, fs["fields"], versions, child_parent, inline=True))
        return FieldType("struct", struct_=self.common(type_name))

    def field(self, fs: Mapping[str, Any], child_parent: Versions) -> Field:
        name = fs["name"]
        versions = Versions.parse(fs["versions"])
        ftype = self.type(fs["type"], fs, versions, child_parent)
        tagged = Versions.parse(fs.get("taggedVersions", "none"))
        tag = fs.get("tag")
        if not tagged.empty and tag is None:
            raise ValueError(f"{self.message}: field {name} has tagged versions but no tag")
        if tag is not None and tagged.empty:
            raise ValueError(f"{self.message}: field {name} has a tag but no tagged versions")
        field_flexible = Versions.parse(fs["flexibleVersions"]) if "flexibleVersions" in fs else self.flexible
        if tagged.intersect(field_flexible) != tagged:
            raise ValueError(f"{self.message}: field {name} is tagged outside the flexible versions")
        nullable = Versions.parse(fs.get("nullableVersions", "none"))
        if not nullable.empty and ftype.kind not in ("string", "bytes", "array", "struct"):
            raise ValueError(f"{self.message}: field {name} of type {ftype!r} cannot be nullable")
        f = Field(
            name=name, key=capitalize_first(name), json_name=lower_case_first(name), type=ftype,
            versions=versions, nullable_versions=nullable, tagged_versions=tagged,
            tag=None if tag is None else int(tag), flexible_versions=field_flexible,
            ignorable=bool(fs.get("ignorable", False)), zero_copy=bool(fs.get("zeroCopy", False)),
            default_spec=None,
        )
        f.default_spec = _parse_default(f, fs.get("default", _MISSING), self.message)
        return f


_NULL = object()  # a default of null
_STRUCT_DEFAULT = object()  # a struct with every field at its default


def _parse_default(f: Field, raw: Any, message: str) -> Any:
    kind = f.type.kind
    if raw is None or raw == "null":
        if f.nullable_versions.empty:
            raise ValueError(f"{message}: field {f.name} has a null default but is not nullable")
        return _NULL
    if kind == "struct":
        return _STRUCT_DEFAULT
    if kind in ("array", "bytes"):
        if raw not in (_MISSING, ""):
            raise ValueError(f"{message}: field {f.name} can only default to empty or null")
        return None
    if raw is _MISSING:
        return {"bool": False, "string": "", "uuid": uuid.UUID(int=0), "float64": 0.0}.get(kind, 0)
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        if str(raw) not in ("true", "false"):
            raise ValueError(f"{message}: default {raw!r} of field {f.name} is not a boolean")
        return str(raw) == "true"
    if kind == "string":
        return str(raw)
    if kind == "uuid":
        return uuid_from_string(str(raw)) if raw != "" else uuid.UUID(int=0)
    if kind == "float64":
        return float(raw)
    value = int(raw, 0) if isinstance(raw, str) else int(raw)
    low, high = _INT_RANGES[kind]
    if not low <= value <= high:
        raise ValueError(f"{message}: default {raw} of field {f.name} is out of range for {kind}")
    return value


def _default_value(f: Field, version: int) -> Any:
    spec = f.default_spec
    if spec is _NULL:
        return None
    kind = f.type.kind
    if spec is _STRUCT_DEFAULT:
        return default_struct(f.type.struct, version)
    if kind == "array":
        return []
    if kind == "bytes":
        return b""
    return spec


def default_struct(st: StructSchema, version: int) -> dict[str, Any]:
    """The dict Kafka's ``new Struct()`` amounts to at ``version``: every field at its default."""
    cv = st.possible.clamp(version)
    return {f.key: _default_value(f, version) for f in st.fields if f.present(cv)}


_COMPILED: dict[int, tuple[Mapping[str, Any], MessageSchema]] = {}


def _compiled(schema: Mapping[str, Any] | MessageSchema) -> MessageSchema:
    if isinstance(schema, MessageSchema):
        return schema
    hit = _COMPILED.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    compiled = compile_schema(schema)
    _COMPILED[id(schema)] = (schema, compiled)  # the dict is kept alive, so its id stays unique
    return compiled


# -- decoding ---------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("buf", "pos", "end", "message", "version")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int, message: str, version: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)
        self.message = message
        self.version = version

    def fail(self, java_message: str, detail: str | None = None) -> SchemaDecodeError:
        text = detail or java_message
        return SchemaDecodeError(f"{self.message} v{self.version}: {text} at byte {self.pos}", self.pos, java_message)

    def underflow(self, size: int, what: str) -> SchemaDecodeError:
        left = self.end - self.pos
        return self.fail("null", f"{what} needs {size} byte(s) but only {max(left, 0)} remain")

    def fixed(self, kind: str, what: str) -> Any:
        st = _FIXED[kind]
        pos = self.pos
        if pos + st.size > self.end or pos < 0:
            raise self.underflow(st.size, what)
        (value,) = st.unpack_from(self.buf, pos)
        self.pos = pos + st.size
        return value

    def uuid(self, what: str) -> uuid.UUID:
        pos = self.pos
        if pos + 16 > self.end:
            raise self.underflow(16, what)
        self.pos = pos + 16
        return uuid.UUID(bytes=bytes(self.buf[pos:pos + 16]))

    def uvarint(self, what: str) -> int:
        """Kafka's ByteUtils.readUnsignedVarint: at most 5 bytes, the result as a Java int."""
        buf, pos, end = self.buf, self.pos, self.end
        result = 0
        for i in range(5):
            if pos >= end:
                self.pos = pos
                raise self.underflow(1, what)
            b = buf[pos]
            pos += 1
            if i < 4:
                result |= (b & 0x7F) << (7 * i)
                if b < 0x80:
                    break
            else:
                # The fifth byte is or-ed in whole, sign-extended and shifted by 28 (32-bit int).
                result = (result | ((b - 256 if b >= 0x80 else b) << 28)) & 0xFFFFFFFF
                if b >= 0x80:
                    self.pos = pos
                    raise self.fail(
                        "Varint is too long, the most significant bit in the 5th byte is set, "
                        f"converted value: {result:x}"
                    )
        self.pos = pos
        return _to_int32(result)

    def byte_array(self, size: int, what: str) -> bytes:
        """Kafka's Readable.readArray."""
        left = self.end - self.pos
        if size > left:
            raise self.fail(
                f"Error reading byte array of {size} byte(s): only {left} byte(s) available",
                f"{what} needs {size} byte(s) but only {left} remain",
            )
        if size < 0:
            raise self.fail(str(size), f"{what} has negative size {size}")
        pos = self.pos
        self.pos = pos + size
        return bytes(self.buf[pos:pos + size])

    def byte_buffer(self, size: int, what: str) -> bytes:
        """Kafka's Readable.readByteBuffer (zero-copy bytes fields)."""
        left = self.end - self.pos
        if size > left:
            raise self.fail(f"newLimit > capacity: ({size} > {left})", f"{what} needs {size} byte(s) but only {left} remain")
        pos = self.pos
        self.pos = pos + size
        return bytes(self.buf[pos:pos + size])


def _to_int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - 0x100000000 if n >= 0x80000000 else n


def decode(schema: Mapping[str, Any] | MessageSchema, version: int, buffer: bytes | bytearray | memoryview,
           offset: int = 0, *, strict: bool = True) -> tuple[dict[str, Any], int]:
    """Decode one message at ``buffer[offset:]``; returns ``(dict, offset after the message)``.

    Bytes after the message are not looked at (Kafka's readers ignore them too).
    """
    s = _compiled(schema)
    if strict and not s.valid_versions.contains(version):
        raise SchemaDecodeError(
            f"{s.name}: version {version} is not one of the valid versions {s.valid_versions}",
            offset, f"Can't read version {version} of {s.name}",
        )
    if isinstance(buffer, memoryview) and buffer.format != "B":
        buffer = buffer.cast("B")
    reader = _Reader(buffer, offset, s.name, version)
    value = _read_struct(reader, s.struct, version)
    return value, reader.pos


def _read_struct(r: _Reader, st: StructSchema, version: int) -> dict[str, Any]:
    if (st.guard_low is not None and version < st.guard_low) or (st.guard_high is not None and version > st.guard_high):
        raise r.fail(f"Can't read version {version} of {st.name}")
    cv = st.possible.clamp(version)
    out: dict[str, Any] = {}
    for f in st.fields:
        if not f.present(cv):
            continue
        if f.tagged(cv):
            out[f.key] = _default_value(f, version)
            continue
        kind = f.type.kind
        if kind in _FIXED:
            value = r.fixed(kind, f.json_name)
            out[f.key] = value != 0 if kind == "bool" else value
        elif kind == "uuid":
            out[f.key] = r.uuid(f.json_name)
        elif kind == "struct":
            if f.nullable(cv) and r.fixed("int8", f.json_name) < 0:
                out[f.key] = None
            else:
                out[f.key] = _read_struct(r, f.type.struct, version)
        else:
            out[f.key] = _read_variable(r, f.type, f.json_name, f.flexible_versions.contains(cv), f.nullable(cv),
                                        f.zero_copy, version)
    if st.flexible.contains(cv):
        unknown: list[tuple[int, bytes]] = []
        count = r.uvarint("the tagged field count")
        for _ in range(count):
            tag = r.uvarint("a tag")
            size = r.uvarint(f"the size of tag {tag}")
            f = st.tags.get(tag)
            if f is None:
                unknown.append((tag, r.byte_array(size, f"tag {tag}")))
            elif f.present(cv) and f.tagged(cv):
                out[f.key] = _read_tagged(r, f, version, cv)
            else:
                raise r.fail(f"Tag {tag} is not valid for version {version}")
        if unknown:
            out[UNKNOWN_TAGGED_FIELDS] = unknown
    return out


def _read_tagged(r: _Reader, f: Field, version: int, cv: int) -> Any:
    kind = f.type.kind
    if kind == "struct":
        if f.nullable(cv) and r.uvarint(f.json_name) <= 0:
            return None
        return _read_struct(r, f.type.struct, version)
    if kind in _VARIABLE:
        return _read_variable(r, f.type, f.json_name, f.flexible_versions.contains(cv), f.nullable(cv), f.zero_copy, version)
    if kind == "uuid":
        return r.uuid(f.json_name)
    value = r.fixed(kind, f.json_name)
    return value != 0 if kind == "bool" else value


def _read_variable(r: _Reader, t: FieldType, name: str, flexible: bool, nullable: bool, zero_copy: bool,
                   version: int) -> Any:
    kind = t.kind
    if flexible:
        length = _to_int32(r.uvarint(f"the length of {name}") - 1)
    elif kind == "string":
        length = r.fixed("int16", f"the length of {name}")
    else:
        length = r.fixed("int32", f"the length of {name}")
    if length < 0:
        if nullable:
            return None
        raise r.fail(f"non-nullable field {name} was serialized as null")
    if kind == "string":
        if length > _STRING_MAX:
            raise r.fail(f"string field {name} had invalid length {length}")
        return r.byte_array(length, name).decode("utf-8", "replace")
    if kind == "bytes":
        return r.byte_buffer(length, name) if zero_copy else r.byte_array(length, name)
    left = r.end - r.pos
    if length > left:
        raise r.fail(f"Tried to allocate a collection of size {length}, but there are only {left} bytes remaining.")
    element = t.element
    ekind = element.kind
    if ekind in ("string", "bytes"):
        ename = name + " element"
        return [_read_variable(r, element, ename, flexible, False, False, version) for _ in range(length)]
    if ekind == "struct":
        return [_read_struct(r, element.struct, version) for _ in range(length)]
    if ekind == "uuid":
        return [r.uuid(name) for _ in range(length)]
    if ekind == "bool":
        return [r.fixed("int8", name) != 0 for _ in range(length)]
    st = _FIXED[ekind]
    end = r.pos + st.size * length
    if end > r.end:
        whole = (r.end - r.pos) // st.size
        r.pos += whole * st.size
        raise r.underflow(st.size, f"element {whole} of {name}")
    values = [v for (v,) in st.iter_unpack(bytes(r.buf[r.pos:end]))]
    r.pos = end
    return values


# -- encoding ---------------------------------------------------------------------------------


def encode(schema: Mapping[str, Any] | MessageSchema, version: int, value: Mapping[str, Any]) -> bytes:
    """Encode ``value`` as ``version`` of the message; fields missing from it take their default."""
    s = _compiled(schema)
    if not s.valid_versions.contains(version):
        raise ValueError(f"{s.name}: version {version} is not one of the valid versions {s.valid_versions}")
    out = bytearray()
    _write_struct(out, s.struct, version, value)
    return bytes(out)


def _encode_uvarint(n: int) -> bytes:
    # Kafka writes these as Java ints: a negative value takes its 32-bit two's complement form.
    return encode_unsigned_varint(n & 0xFFFFFFFF)


def _write_struct(out: bytearray, st: StructSchema, version: int, value: Mapping[str, Any]) -> None:
    if not isinstance(value, Mapping):
        raise ValueError(f"{st.name}: expected a mapping, got {type(value).__name__}")
    cv = st.possible.clamp(version)
    for key in value:
        if key not in st.by_key and key != UNKNOWN_TAGGED_FIELDS:
            raise ValueError(f"{st.name}: no field {key!r}")
    tagged: list[tuple[int, bytes]] = []
    for f in st.fields:
        v = value.get(f.key, _MISSING)
        if not f.present(cv):
            if v is not _MISSING and not f.ignorable and not _is_default(f, v, version):
                raise ValueError(f"{st.name}: attempted to write a non-default {f.json_name} at version {version}")
            continue
        if v is _MISSING:
            v = _default_value(f, version)
        if f.tagged(cv):
            if not _is_default(f, v, version):
                tagged.append((f.tag, _tagged_payload(f, version, cv, v)))
            continue
        _write_value(out, f, version, cv, v)
    raw = value.get(UNKNOWN_TAGGED_FIELDS) or ()
    for entry in raw:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], int)
                and isinstance(entry[1], (bytes, bytearray, memoryview))):
            raise ValueError(f"{st.name}: unknown tagged fields must be (tag, bytes) pairs")
    if st.flexible.contains(cv):
        entries = sorted([*tagged, *((t, bytes(d)) for t, d in raw)], key=lambda e: e[0])
        out += _encode_uvarint(len(entries))
        for tag, payload in entries:
            out += _encode_uvarint(tag)
            out += _encode_uvarint(len(payload))
            out += payload
    elif tagged or raw:
        raise ValueError(f"Tagged fields were set, but version {version} of {st.name} does not support them.")


def _write_value(out: bytearray, f: Field, version: int, cv: int, v: Any) -> None:
    kind = f.type.kind
    if kind == "struct":
        if f.nullable(cv):
            if v is None:
                out.append(0xFF)
                return
            out.append(1)
        elif v is None:
            raise ValueError(f"non-nullable field {f.json_name} is null")
        _write_struct(out, f.type.struct, version, v)
    elif kind in _VARIABLE:
        _write_variable(out, f.type, v, f.json_name, f.flexible_versions.contains(cv), f.nullable(cv), version)
    else:
        _write_fixed(out, kind, v, f.json_name)


def _write_fixed(out: bytearray, kind: str, v: Any, name: str) -> None:
    if kind == "uuid":
        if isinstance(v, uuid.UUID):
            out += v.bytes
        elif isinstance(v, (bytes, bytearray)) and len(v) == 16:
            out += v
        else:
            raise ValueError(f"field {name} needs a uuid.UUID, got {v!r}")
        return
    if kind == "bool":
        if not isinstance(v, bool):
            raise ValueError(f"field {name} needs a bool, got {v!r}")
        out.append(1 if v else 0)
        return
    if kind == "float64":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ValueError(f"field {name} needs a float, got {v!r}")
        out += _FIXED[kind].pack(float(v))
        return
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"field {name} needs an int, got {v!r}")
    low, high = _INT_RANGES[kind]
    if not low <= v <= high:
        raise ValueError(f"field {name}: {v} is out of range for {kind}")
    out += _FIXED[kind].pack(v)


def _write_length(out: bytearray, kind: str, length: int, flexible: bool) -> None:
    if flexible:
        out += _encode_uvarint(length + 1)
    elif kind == "string":
        out += _INT16.pack(length)
    else:
        out += _INT32.pack(length)


def _write_variable(out: bytearray, t: FieldType, v: Any, name: str, flexible: bool, nullable: bool, version: int) -> None:
    kind = t.kind
    if v is None:
        if not nullable:
            raise ValueError(f"non-nullable field {name} is null")
        _write_length(out, kind, -1, flexible)
        return
    if kind == "string":
        if not isinstance(v, str):
            raise ValueError(f"field {name} needs a str, got {type(v).__name__}")
        data = v.encode("utf-8")
        if len(data) > _STRING_MAX:
            raise ValueError(f"'{name}' field is too long to be serialized")
        _write_length(out, kind, len(data), flexible)
        out += data
        return
    if kind == "bytes":
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise ValueError(f"field {name} needs bytes, got {type(v).__name__}")
        _write_length(out, kind, len(v), flexible)
        out += v
        return
    if isinstance(v, (str, bytes, bytearray, Mapping)) or not isinstance(v, Sequence):
        raise ValueError(f"field {name} needs a list, got {type(v).__name__}")
    _write_length(out, kind, len(v), flexible)
    element = t.element
    ekind = element.kind
    if ekind in ("string", "bytes"):
        for item in v:
            _write_variable(out, element, item, name + " element", flexible, False, version)
    elif ekind == "struct":
        for item in v:
            _write_struct(out, element.struct, version, item)
    else:
        for item in v:
            _write_fixed(out, ekind, item, name)


def _tagged_payload(f: Field, version: int, cv: int, v: Any) -> bytes:
    buf = bytearray()
    kind = f.type.kind
    if kind == "struct":
        if v is None:
            raise ValueError(f"non-nullable field {f.json_name} is null")
        if f.nullable(cv):
            buf.append(1)
        _write_struct(buf, f.type.struct, version, v)
    elif kind in _VARIABLE:
        _write_variable(buf, f.type, v, f.json_name, f.flexible_versions.contains(cv), f.nullable(cv), version)
    else:
        _write_fixed(buf, kind, v, f.json_name)
    return bytes(buf)


def _is_default(f: Field, v: Any, version: int) -> bool:
    """Kafka's generated non-default test (which decides whether a tagged field is written)."""
    spec = f.default_spec
    if spec is _NULL:
        return v is None
    if v is None:
        return False
    kind = f.type.kind
    if kind in ("array", "bytes"):
        return len(v) == 0
    if kind == "struct":
        if not isinstance(v, Mapping):
            return False
        st = f.type.struct
        mine, default = bytearray(), bytearray()
        _write_struct(mine, st, version, v)
        _write_struct(default, st, version, default_struct(st, version))
        return mine == default
    return v == spec


# -- JSON in the style of Kafka's generated JsonConverter -------------------------------------


def to_json(schema: Mapping[str, Any] | MessageSchema, version: int, value: Mapping[str, Any]) -> dict[str, Any]:
    """What Kafka's ``<Message>JsonConverter.write(message, version)`` builds, as Python data.

    Keys are the field names with a lower-case first letter, in schema order; only the fields of
    ``version``; tagged fields only when not at their default; bytes as base64 strings; uuids as
    Kafka's URL-safe base64 without padding; unknown tagged fields are not shown.
    """
    return _struct_json(_compiled(schema).struct, version, value)


def _struct_json(st: StructSchema, version: int, value: Mapping[str, Any]) -> dict[str, Any]:
    cv = st.possible.clamp(version)
    node: dict[str, Any] = {}
    for f in st.fields:
        if not f.present(cv):
            continue
        v = value.get(f.key, _MISSING)
        if v is _MISSING:
            v = _default_value(f, version)
        if f.tagged(cv) and _is_default(f, v, version):
            continue
        node[f.json_name] = _value_json(f.type, v, version)
    return node


def _value_json(t: FieldType, v: Any, version: int) -> Any:
    if v is None:
        return None
    kind = t.kind
    if kind == "struct":
        return _struct_json(t.struct, version, v)
    if kind == "array":
        return [_value_json(t.element, item, version) for item in v]
    if kind == "bytes":
        return base64.b64encode(bytes(v)).decode("ascii")
    if kind == "uuid":
        return uuid_to_string(v)
    if kind == "bool":
        return bool(v)
    if kind == "float64":
        return float(v)
    if kind == "string":
        return str(v)
    return int(v)


# Jackson's default escaping: '"', '\\' and the C0 controls; \b \t \n \f \r have short forms,
# the others become \u00XX with upper-case hex. Everything else, non-ASCII included, is literal.
_JSON_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)}
_JSON_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r",
                      ord('"'): '\\"', ord("\\"): "\\\\"})


def kafka_json_dumps(value: Any) -> str:
    """Compact JSON text as Jackson's ``JsonNode.toString()`` writes it."""
    parts: list[str] = []
    _dump_json(value, parts.append)
    return "".join(parts)


def _dump_json(value: Any, emit: Callable[[str], None]) -> None:
    if value is None:
        emit("null")
    elif value is True:
        emit("true")
    elif value is False:
        emit("false")
    elif isinstance(value, str):
        emit('"' + value.translate(_JSON_ESCAPES) + '"')
    elif isinstance(value, int):
        emit(str(value))
    elif isinstance(value, float):
        emit(_java_double(value))
    elif isinstance(value, Mapping):
        emit("{")
        first = True
        for k, v in value.items():
            if not first:
                emit(",")
            first = False
            emit('"' + str(k).translate(_JSON_ESCAPES) + '":')
            _dump_json(v, emit)
        emit("}")
    elif isinstance(value, (list, tuple)):
        emit("[")
        for i, v in enumerate(value):
            if i:
                emit(",")
            _dump_json(v, emit)
        emit("]")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        emit('"' + base64.b64encode(bytes(value)).decode("ascii") + '"')
    else:
        raise TypeError(f"cannot render {type(value).__name__} as JSON")


def _java_double(d: float) -> str:
    """A double as Jackson writes it: Java's ``Double.toString``, NaN and the infinities quoted."""
    if math.isnan(d) or math.isinf(d):
        return f'"{double_to_string(d)}"'
    return double_to_string(d)
