"""The console consumer's message formatters: Kafka 3.9's ``MessageFormatter`` classes, byte for byte.

A formatter turns one consumed record into the bytes written to stdout. ``formatter_for`` maps the
``--formatter`` class name to one of:

* ``DefaultMessageFormatter`` (also ``kafka.tools.DefaultMessageFormatter``, 2.x's name): the
  fields chosen with ``print.*`` properties, in the order timestamp, partition, offset, headers,
  key, value; each followed by ``key.separator`` when a later field is printed, else by
  ``line.separator``. Keys, values and header values are written as raw bytes (no charset
  conversion), ``null.literal`` for null, or through a ``*.deserializer``.
* ``LoggingMessageFormatter``: the default output, plus an INFO log line per record on stderr.
* ``NoOpMessageFormatter``: nothing.
* ``OffsetsMessageFormatter``, ``GroupMetadataMessageFormatter``, ``TransactionLogMessageFormatter``
  (Kafka 3.8+): ``{"key":{"version":V,"data":{...}},"value":{"version":V,"data":{...}}}`` from the
  message schemas of ``__consumer_offsets`` / ``__transaction_state``; a version outside the schema's
  range gives ``"data":"unknown"``; a record of the other ``__consumer_offsets`` kind prints
  nothing. As in Kafka 3.9 no newline follows the JSON object.
* the pre-3.8 coordinator formatters under their old names
  (``kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter``, ``...$GroupMetadataMessageFormatter``,
  ``kafka.coordinator.transaction.TransactionLog$TransactionLogMessageFormatter``): Kafka 3.9 still
  runs those Scala classes after a deprecation warning, so they print the old text lines, e.g.
  ``[group,topic,0]::OffsetAndMetadata(offset=5, leaderEpoch=Optional[0], metadata=, commitTimestamp=1700000000000, expireTimestamp=None)``.

Deserializers are Kafka's ``org.apache.kafka.common.serialization`` classes whose ``toString`` is
text: String, Integer, Long, Short, Float, Double, Boolean, UUID, Bytes and Void. A failure raises
``FormatterError`` with the Java exception Kafka throws.
"""

from __future__ import annotations

import codecs
import struct
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kcli.errors import KcliError, UsageError
from kcli.java_compat import double_to_string, float_to_string, scala_hash_map_order
from kcli.output import log4j_line

if TYPE_CHECKING:
    from kcli.client.fetcher import ConsumerRecord

DEFAULT_FORMATTER = "org.apache.kafka.tools.consumer.DefaultMessageFormatter"
_TOOLS = "org.apache.kafka.tools.consumer."
_SERIALIZATION = "org.apache.kafka.common.serialization."
_OLD_OFFSETS = "kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter"
_OLD_GROUP_METADATA = "kafka.coordinator.group.GroupMetadataManager$GroupMetadataMessageFormatter"
_OLD_TRANSACTION_LOG = "kafka.coordinator.transaction.TransactionLog$TransactionLogMessageFormatter"
# Kafka 3.9's ConsoleConsumerOptions.convertDeprecatedClass: old name -> the class it runs.
_DEPRECATED = {
    "kafka.tools.DefaultMessageFormatter": (_TOOLS + "DefaultMessageFormatter", _TOOLS + "DefaultMessageFormatter"),
    "kafka.tools.LoggingMessageFormatter": (_TOOLS + "LoggingMessageFormatter", _TOOLS + "LoggingMessageFormatter"),
    "kafka.tools.NoOpMessageFormatter": (_TOOLS + "NoOpMessageFormatter", _TOOLS + "NoOpMessageFormatter"),
    _OLD_TRANSACTION_LOG: (_OLD_TRANSACTION_LOG, _TOOLS + "TransactionLogMessageFormatter"),
    _OLD_OFFSETS: (_OLD_OFFSETS, _TOOLS + "OffsetsMessageFormatter"),
    _OLD_GROUP_METADATA: (_OLD_GROUP_METADATA, _TOOLS + "GroupMetadataMessageFormatter"),
}
TIMESTAMP_TYPE_NAMES = {0: "CreateTime", 1: "LogAppendTime"}


class FormatterError(KcliError):
    """A record a formatter cannot write; ``java_class`` is the exception Kafka throws for it."""

    def __init__(self, java_class: str, message: str | None = None) -> None:
        super().__init__(message or java_class)
        self.java_class = java_class
        self.java_message = message

    def java_text(self) -> str:
        """The exception as Java's ``Throwable.toString`` prints it."""
        return self.java_class if self.java_message is None else f"{self.java_class}: {self.java_message}"


class MessageFormatter(Protocol):
    def write_to(self, record: ConsumerRecord, out: bytearray) -> None: ...


def formatter_for(class_name: str, props: Mapping[str, str], *, warn: Callable[[str], None],
                  log: Callable[[str], None]) -> MessageFormatter:
    """The formatter ``--formatter class_name`` names, configured with ``props``.

    ``warn`` gets Kafka's deprecation warning for an old class name; ``log`` gets the lines the
    LoggingMessageFormatter logs. Raises UsageError for a class kcli does not have.
    """
    runs = class_name
    if class_name in _DEPRECATED:
        runs, replacement = _DEPRECATED[class_name]
        warn(f"WARNING: {class_name} is deprecated and will be removed in the next major release. "
             f"Please use {replacement} instead")
    if runs == _TOOLS + "DefaultMessageFormatter":
        return DefaultMessageFormatter(props)
    if runs == _TOOLS + "LoggingMessageFormatter":
        return LoggingMessageFormatter(props, log)
    if runs == _TOOLS + "NoOpMessageFormatter":
        return NoOpMessageFormatter()
    if runs == _TOOLS + "OffsetsMessageFormatter":
        return OffsetsMessageFormatter()
    if runs == _TOOLS + "GroupMetadataMessageFormatter":
        return GroupMetadataMessageFormatter()
    if runs == _TOOLS + "TransactionLogMessageFormatter":
        return TransactionLogMessageFormatter()
    if runs == _OLD_OFFSETS:
        return LegacyOffsetsMessageFormatter()
    if runs == _OLD_GROUP_METADATA:
        return LegacyGroupMetadataMessageFormatter()
    if runs == _OLD_TRANSACTION_LOG:
        return LegacyTransactionLogMessageFormatter()
    known = ", ".join(FORMATTER_NAMES)
    raise UsageError(f"Unknown formatter class '{class_name}'; kcli has {known}")


FORMATTER_NAMES = (
    DEFAULT_FORMATTER,
    _TOOLS + "LoggingMessageFormatter",
    _TOOLS + "NoOpMessageFormatter",
    _TOOLS + "OffsetsMessageFormatter",
    _TOOLS + "GroupMetadataMessageFormatter",
    _TOOLS + "TransactionLogMessageFormatter",
    *_DEPRECATED,
)


# -- DefaultMessageFormatter ----------------------------------------------------------------------


def _java_trim(text: str) -> str:
    """Java's ``String.trim``: strips characters up to U+0020 only."""
    return text.strip("".join(chr(i) for i in range(0x21)))


class DefaultMessageFormatter:
    def __init__(self, props: Mapping[str, str] | None = None) -> None:
        props = props or {}

        def flag(name: str, default: bool) -> bool:
            return _java_trim(props[name]).lower() == "true" if name in props else default

        def text(name: str, default: str) -> bytes:
            return props.get(name, default).encode("utf-8")

        self.print_timestamp = flag("print.timestamp", False)
        self.print_key = flag("print.key", False)
        self.print_offset = flag("print.offset", False)
        self.print_partition = flag("print.partition", False)
        self.print_headers = flag("print.headers", False)
        self.print_value = flag("print.value", True)
        self.key_separator = text("key.separator", "\t")
        self.line_separator = text("line.separator", "\n")
        self.headers_separator = text("headers.separator", ",")
        self.null_literal = text("null.literal", "null")
        self.key_deserializer = deserializer_for(props, "key.deserializer", is_key=True)
        self.value_deserializer = deserializer_for(props, "value.deserializer", is_key=False)
        self.headers_deserializer = deserializer_for(props, "headers.deserializer", is_key=False)

    def _bytes(self, data: bytes | None, deserializer: Deserializer | None) -> bytes:
        # As in Kafka, a null becomes the null literal before the deserializer sees it.
        data = self.null_literal if data is None else data
        return data if deserializer is None else deserializer(data).encode("utf-8", "surrogatepass")

    def _separator(self, out: bytearray, more: bool) -> None:
        out += self.key_separator if more else self.line_separator

    def write_to(self, record: ConsumerRecord, out: bytearray) -> None:
        if self.print_timestamp:
            type_name = TIMESTAMP_TYPE_NAMES.get(record.timestamp_type)
            out += (f"{type_name}:{record.timestamp}" if type_name else "NO_TIMESTAMP").encode()
            self._separator(out, self.print_offset or self.print_partition or self.print_headers or self.print_key or self.print_value)
        if self.print_partition:
            out += f"Partition:{record.partition}".encode()
            self._separator(out, self.print_offset or self.print_headers or self.print_key or self.print_value)
        if self.print_offset:
            out += f"Offset:{record.offset}".encode()
            self._separator(out, self.print_headers or self.print_key or self.print_value)
        if self.print_headers:
            if not record.headers:
                out += b"NO_HEADERS"
            for i, (name, data) in enumerate(record.headers):
                if i:
                    out += self.headers_separator
                out += name.encode("utf-8", "surrogatepass") + b":"
                out += self._bytes(data, self.headers_deserializer)
            self._separator(out, self.print_key or self.print_value)
        if self.print_key:
            out += self._bytes(record.key, self.key_deserializer)
            self._separator(out, self.print_value)
        if self.print_value:
            out += self._bytes(record.value, self.value_deserializer)
            out += self.line_separator


class LoggingMessageFormatter:
    """The default formatter's output, plus Kafka's INFO line per record on stderr."""

    def __init__(self, props: Mapping[str, str], log: Callable[[str], None]) -> None:
        self.default = DefaultMessageFormatter(props)
        self.log = log

    def write_to(self, record: ConsumerRecord, out: bytearray) -> None:
        self.default.write_to(record, out)
        type_name = TIMESTAMP_TYPE_NAMES.get(record.timestamp_type)
        timestamp = f"{type_name}:{record.timestamp}, " if type_name else ""
        # Kafka's own spacing: a null key is followed by a space, a non-null one by ", ".
        key = "key:" + ("null " if record.key is None else _java_string(record.key) + ", ")
        value = "value:" + ("null" if record.value is None else _java_string(record.value))
        self.log(log4j_line("INFO", timestamp + key + value, "org.apache.kafka.tools.consumer.LoggingMessageFormatter"))


class NoOpMessageFormatter:
    def write_to(self, record: ConsumerRecord, out: bytearray) -> None:
        return None


# -- deserializers --------------------------------------------------------------------------------

Deserializer = Callable[[bytes], str]
_SERIALIZATION_EXCEPTION = "org.apache.kafka.common.errors.SerializationException"


def _java_string(data: bytes, encoding: str = "utf-8") -> str:
    """``new String(data, charset)``: malformed input becomes U+FFFD."""
    return data.decode(encoding, "replace")


def _fixed_size(data: bytes, size: int, name: str) -> None:
    if len(data) != size:
        raise FormatterError(_SERIALIZATION_EXCEPTION, f"Size of data received by {name} is not {size}")


def _integer(data: bytes) -> str:
    _fixed_size(data, 4, "IntegerDeserializer")
    return str(int.from_bytes(data, "big", signed=True))


def _long(data: bytes) -> str:
    _fixed_size(data, 8, "LongDeserializer")
    return str(int.from_bytes(data, "big", signed=True))


def _short(data: bytes) -> str:
    _fixed_size(data, 2, "ShortDeserializer")
    return str(int.from_bytes(data, "big", signed=True))


def _double(data: bytes) -> str:
    _fixed_size(data, 8, "Deserializer")
    return double_to_string(struct.unpack(">d", data)[0])


def _float(data: bytes) -> str:
    _fixed_size(data, 4, "Deserializer")
    return float_to_string(struct.unpack(">f", data)[0])


def _boolean(data: bytes) -> str:
    _fixed_size(data, 1, "BooleanDeserializer")
    if data[0] in (0, 1):
        return "true" if data[0] else "false"
    raise FormatterError(_SERIALIZATION_EXCEPTION, f"Unexpected byte received by BooleanDeserializer: {struct.unpack('b', data)[0]}")


def _bytes_text(data: bytes) -> str:
    """Kafka's ``Bytes.toString``: printable ASCII as is (but the backslash), the rest ``\\xHH``."""
    return "".join(chr(b) if 0x20 <= b <= 0x7E and b != 0x5C else f"\\x{b:02X}" for b in data)


def _void(data: bytes) -> str:
    raise FormatterError("java.lang.IllegalArgumentException", "Data should be null for a VoidDeserializer.")


def _uuid(encoding: str) -> Deserializer:
    def deserialize(data: bytes) -> str:
        try:
            return str(uuid.UUID(_java_string(data, encoding)))
        except ValueError:
            raise FormatterError(_SERIALIZATION_EXCEPTION, "Error parsing data into UUID") from None

    return deserialize


def _string(encoding: str) -> Deserializer:
    return lambda data: _java_string(data, encoding)


_FIXED_DESERIALIZERS: dict[str, Deserializer] = {
    _SERIALIZATION + "IntegerDeserializer": _integer,
    _SERIALIZATION + "LongDeserializer": _long,
    _SERIALIZATION + "ShortDeserializer": _short,
    _SERIALIZATION + "DoubleDeserializer": _double,
    _SERIALIZATION + "FloatDeserializer": _float,
    _SERIALIZATION + "BooleanDeserializer": _boolean,
    _SERIALIZATION + "BytesDeserializer": _bytes_text,
    _SERIALIZATION + "VoidDeserializer": _void,
}
_ENCODED_DESERIALIZERS: dict[str, Callable[[str], Deserializer]] = {
    _SERIALIZATION + "StringDeserializer": _string,
    _SERIALIZATION + "UUIDDeserializer": _uuid,
}
DESERIALIZER_NAMES = tuple(sorted([*_FIXED_DESERIALIZERS, *_ENCODED_DESERIALIZERS]))


def deserializer_for(props: Mapping[str, str], name: str, *, is_key: bool) -> Deserializer | None:
    """The deserializer property ``name`` selects (None when unset).

    Its own settings come from the properties prefixed ``<name>.``, as Kafka strips that prefix:
    String and UUID read ``<key|value>.deserializer.encoding``, then ``deserializer.encoding``.
    """
    class_name = props.get(name)
    if class_name is None:
        return None
    if class_name in _FIXED_DESERIALIZERS:
        return _FIXED_DESERIALIZERS[class_name]
    if class_name in _ENCODED_DESERIALIZERS:
        prefix = name + "."
        own = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix) and len(k) > len(prefix)}
        encoding = own.get(("key" if is_key else "value") + ".deserializer.encoding", own.get("deserializer.encoding", "UTF8"))
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            raise UsageError(f"{name}: unsupported encoding {encoding}") from None
        return _ENCODED_DESERIALIZERS[class_name](codec)
    raise UsageError(
        f"{name} {class_name} is not supported; kcli has {', '.join(DESERIALIZER_NAMES)}"
    )


# -- the coordinator formatters (Kafka 3.8+): JSON of the key and value messages ------------------


class _Schemas(NamedTuple):
    """Which key versions are which message, and the value schema a formatter reads."""

    key_schemas: Mapping[int, Any]  # key version -> key schema (None: a record of the other kind)
    value_schema: Any
    value_versions: range


def _short_prefix(data: bytes) -> int:
    if len(data) < 2:
        raise FormatterError("java.nio.BufferUnderflowException")
    return struct.unpack_from(">h", data)[0]


def _message_json(schema: Any, version: int, data: bytes) -> Any:
    from kcli.protocol.schema import SchemaDecodeError, decode, to_json

    try:
        message = decode(schema, version, data, 2, strict=False)[0]
    except SchemaDecodeError as exc:
        raise FormatterError("java.nio.BufferUnderflowException", str(exc)) from None
    return to_json(schema, version, message)


class _ApiMessageFormatter:
    """Kafka's ApiMessageFormatter: ``{"key":...,"value":...}`` as Jackson writes it, no newline."""

    def _schemas(self) -> _Schemas:
        raise NotImplementedError

    def write_to(self, record: ConsumerRecord, out: bytearray) -> None:
        from kcli.protocol.schema import kafka_json_dumps

        schemas = self._schemas()
        node: dict[str, Any] = {}
        if record.key is None:
            node["key"] = None
        else:
            version = _short_prefix(record.key)
            if version in schemas.key_schemas:
                schema = schemas.key_schemas[version]
                if schema is None:
                    return
                data = _message_json(schema, version, record.key)
            else:
                data = "unknown"
            node["key"] = {"version": version, "data": data}
        if record.value is None:
            node["value"] = None
        else:
            version = _short_prefix(record.value)
            if version in schemas.value_versions:
                data = _message_json(schemas.value_schema, version, record.value)
            else:
                data = "unknown"
            node["value"] = {"version": version, "data": data}
        out += kafka_json_dumps(node).encode("utf-8", "surrogatepass")


class OffsetsMessageFormatter(_ApiMessageFormatter):
    def _schemas(self) -> _Schemas:
        from kcli.protocol import coordinator_records as cr

        return _Schemas({0: cr.OFFSET_COMMIT_KEY, 1: cr.OFFSET_COMMIT_KEY, 2: None}, cr.OFFSET_COMMIT_VALUE, range(0, 5))


class GroupMetadataMessageFormatter(_ApiMessageFormatter):
    def _schemas(self) -> _Schemas:
        from kcli.protocol import coordinator_records as cr

        return _Schemas({0: None, 1: None, 2: cr.GROUP_METADATA_KEY}, cr.GROUP_METADATA_VALUE, range(0, 5))


class TransactionLogMessageFormatter(_ApiMessageFormatter):
    def _schemas(self) -> _Schemas:
        from kcli.protocol import coordinator_records as cr

        return _Schemas({0: cr.TRANSACTION_LOG_KEY}, cr.TRANSACTION_LOG_VALUE, range(0, 2))


# -- the Scala formatters Kafka 3.9 still runs under their old names ------------------------------


def _read(schema: Any, version: int, data: bytes) -> dict[str, Any]:
    from kcli.protocol.schema import SchemaDecodeError, decode

    try:
        return decode(schema, version, data, 2, strict=False)[0]
    except SchemaDecodeError as exc:
        raise FormatterError("java.nio.BufferUnderflowException", str(exc)) from None


def _scala_option(value: Any) -> str:
    return "None" if value is None else f"Some({value})"


class LegacyOffsetsMessageFormatter:
    """``GroupMetadataManager.OffsetsMessageFormatter``: ``[group,topic,partition]::OffsetAndMetadata(...)``."""

    def write_to(self, record: ConsumerRecord, out: bytearray) -> None:
        from kcli.protocol import coordinator_records as cr

        if record.key is None:
            return
        version = _short_prefix(record.key)
        if version not in (0, 1):
            return
        key = _read(cr.OFFSET_COMMIT_KEY, version, record.key)
        if record.value is None:
            text = "NULL"
        else:
            value_version = _short_prefix(record.value)
            if value_version not in range(0, 5):
                raise FormatterError("java.lang.IllegalStateException", f"Unknown offset message version: {value_version}")
            value = _read(cr.OFFSET_COMMIT_VALUE, value_version, record.value)
            epoch = value.get("LeaderEpoch", -1)
            expire = value.get("ExpireTimestamp", -1)
            text = (
                f"OffsetAndMetadata(offset={value['Offset']}"
                f", leaderEpoch={'Optional.empty' if epoch == -1 else f'Optional[{epoch}]'}"
                f", metadata={value['Metadata']}"
                f", commitTimestamp={value['CommitTimestamp']}"
                f", expireTimestamp={_scala_option(None if expire == -1 else expire)})"
            )
        line = f"[{key['Group']},{key['Topic']},{key['Partition']}]::{text}\n"
        out += line.encode("utf-8", "surrogatepass")


class LegacyGroupMetadataMessageFormatter:
    """``GroupMetadataManager.GroupMetadataMessageFormatter``: ``group::GroupMetadata(...)``."""

    def write_to(self, record: ConsumerRecord, out: bytearray) -> None:
        from kcli.protocol import coordinator_records as cr

        if record.key is None or _short_prefix(record.key) != 2:
            return
        group = _read(cr.GROUP_METADATA_KEY, 2, record.key)["Group"]
        if record.value is None:
            text = "NULL"
        else:
            version = _short_prefix(record.value)
            if version not in range(0, 5):
                raise FormatterError("java.lang.IllegalStateException", f"Unknown group metadata message version: {version}")
            text = _group_metadata_text(group, version, _read(cr.GROUP_METADATA_VALUE, version, record.value))
        out += f"{group}::{text}\n".encode("utf-8", "surrogatepass")


def _group_metadata_text(group: str, version: int, value: Mapping[str, Any]) -> str:
    """Scala's ``GroupMetadata.toString`` of the group ``GroupMetadata.loadGroup`` builds."""
    members: dict[str, str] = {}
    for m in value["Members"]:
        rebalance = m["SessionTimeout"] if version == 0 else m.get("RebalanceTimeout", -1)
        members[m["MemberId"]] = (
            f"MemberMetadata(memberId={m['MemberId']}, groupInstanceId={_scala_option(m.get('GroupInstanceId'))}, "
            f"clientId={m['ClientId']}, clientHost={m['ClientHost']}, sessionTimeoutMs={m['SessionTimeout']}, "
            f"rebalanceTimeoutMs={rebalance}, supportedProtocols=List({value['Protocol']}))"
        )
    protocol_type = value["ProtocolType"]
    # The first member loaded sets the protocol type, even an empty one.
    shown_type = "None" if not members and not protocol_type else f"Some({protocol_type})"
    entries = ", ".join(f"{member_id} -> {members[member_id]}" for member_id in scala_hash_map_order(members))
    return (
        f"GroupMetadata(groupId={group}, generation={value['Generation']}, protocolType={shown_type}, "
        f"currentState={'Stable' if members else 'Empty'}, members=HashMap({entries}))"
    )


class LegacyTransactionLogMessageFormatter:
    """``TransactionLog.TransactionLogMessageFormatter``: ``id::TransactionMetadata(...)``."""

    def write_to(self, record: ConsumerRecord, out: bytearray) -> None:
        from kcli.protocol import coordinator_records as cr

        if record.key is None:
            return
        version = _short_prefix(record.key)
        if version != 0:
            out += f"unknown::version={version}\n".encode()
            return
        transactional_id = _read(cr.TRANSACTION_LOG_KEY, 0, record.key)["TransactionalId"]
        text = "NULL" if record.value is None else _transaction_metadata_text(transactional_id, record.value)
        out += f"{transactional_id}::{text}\n".encode("utf-8", "surrogatepass")


def _transaction_metadata_text(transactional_id: str, data: bytes) -> str:
    from kcli.protocol import coordinator_records as cr

    version = _short_prefix(data)
    if version not in range(0, 2):
        raise FormatterError("java.lang.IllegalStateException", f"Unknown version {version} from the transaction log message value")
    value = _read(cr.TRANSACTION_LOG_VALUE, version, data)
    status = value["TransactionStatus"]
    if not 0 <= status < len(cr.TRANSACTION_STATES):
        raise FormatterError("java.lang.IllegalStateException", f"Unknown transaction state id {status} from the transaction status message")
    state = cr.TRANSACTION_STATES[status]
    partitions: list[tuple[str, int]] = []
    if state != "Empty":
        groups = value["TransactionPartitions"] or []
        partitions = cr.scala_mutable_hash_set_order([[(g["Topic"], p) for p in g["PartitionIds"]] for g in groups])
    listed = ", ".join(f"{topic}-{partition}" for topic, partition in partitions)
    return (
        f"TransactionMetadata(transactionalId={transactional_id}, producerId={value['ProducerId']}, "
        f"producerEpoch={value['ProducerEpoch']}, txnTimeoutMs={value['TransactionTimeoutMs']}, state={state}, "
        f"pendingState=None, topicPartitions=HashSet({listed}), "
        f"txnStartTimestamp={value['TransactionStartTimestampMs']}, "
        f"txnLastUpdateTimestamp={value['TransactionLastUpdateTimestampMs']})"
    )



