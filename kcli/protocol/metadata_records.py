"""KRaft metadata records (the ``__cluster_metadata`` topic), and how Kafka 3.9 prints them.

A metadata record's value is framed by Kafka's ``AbstractApiMessageSerde`` (``MetadataRecordSerde``)::

    uvarint  frame version (1; 0 was the 2.8 KRaft preview and is refused)
    uvarint  api key       (the record type, below)
    uvarint  version       (of that record type's message)
    message                the record's message at that version (all metadata records are flexible)

The key is unused. Each header varint is read as a Java int and narrowed to a short: a value
above 32767 is refused ("Value for <entity> was too large."), a negative one (a 5-byte varint)
is cast to a short as Java does. The message is read with Kafka's generated reader, which does not
check the version it is given (a newer version of a known type is read with the newest layout 3.9
knows), and every byte of the value must be used.

Record types Kafka 3.9 knows (``metadata/src/main/resources/common/metadata/*.json``)::

     0 RegisterBrokerRecord 0-3        14 ClientQuotaRecord 0
     1 UnregisterBrokerRecord 0        15 ProducerIdsRecord 0
     2 TopicRecord 0                   17 BrokerRegistrationChangeRecord 0-2
     3 PartitionRecord 0-2             18 AccessControlEntryRecord 0
     4 ConfigRecord 0                  19 RemoveAccessControlEntryRecord 0
     5 PartitionChangeRecord 0-2       20 NoOpRecord 0
     7 FenceBrokerRecord 0             21 ZkMigrationStateRecord 0
     8 UnfenceBrokerRecord 0           22 RemoveUserScramCredentialRecord 0
     9 RemoveTopicRecord 0             23 BeginTransactionRecord 0
    10 DelegationTokenRecord 0         24 EndTransactionRecord 0
    11 UserScramCredentialRecord 0     25 AbortTransactionRecord 0
    12 FeatureLevelRecord 0            26 RemoveDelegationTokenRecord 0
                                       27 RegisterControllerRecord 0

``kafka-dump-log.sh --cluster-metadata-decoder`` (3.9 ``DumpLogSegments.ClusterMetadataLogMessageParser``)
prints no key and the payload ``{"type":"TOPIC_RECORD","version":0,"data":{...}}`` (the type is the
``MetadataRecordType`` enum constant, the record name in upper snake case; ``data`` is the generated
JsonConverter's output). Any failure to read a record becomes the payload
``Error at <offset>, skipping. <message>`` (sic: no "offset" word, unlike the offsets decoder) and
the dump goes on; the messages are those of 3.9's ``AbstractApiMessageSerde.read``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kcli.errors import CorruptRecordError
from kcli.protocol.schema import decode, encode, kafka_json_dumps, to_json
from kcli.storage.varint import encode_unsigned_varint

__all__ = [
    "METADATA_RECORD_TYPES",
    "FRAME_VERSION",
    "MetadataParseError",
    "MetadataRecordType",
    "decode_metadata_record",
    "read_api_message",
    "encode_metadata_record",
    "metadata_record_json",
    "format_cluster_metadata_record",
]

FRAME_VERSION = 1
_SHORT_MAX = 0x7FFF

# -- schemas (Kafka 3.9) ------------------------------------------------------------------------

_ENDPOINT_FIELDS = [
    {"name": "Name", "type": "string", "versions": "0+", "mapKey": True},
    {"name": "Host", "type": "string", "versions": "0+"},
    {"name": "Port", "type": "uint16", "versions": "0+"},
    {"name": "SecurityProtocol", "type": "int16", "versions": "0+"},
]
_FEATURE_FIELDS = [
    {"name": "Name", "type": "string", "versions": "0+", "mapKey": True},
    {"name": "MinSupportedVersion", "type": "int16", "versions": "0+"},
    {"name": "MaxSupportedVersion", "type": "int16", "versions": "0+"},
]


def _record(name: str, valid: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "validVersions": valid, "flexibleVersions": "0+", "fields": fields}


REGISTER_BROKER_RECORD = _record("RegisterBrokerRecord", "0-3", [
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "IsMigratingZkBroker", "type": "bool", "versions": "2+", "default": "false"},
    {"name": "IncarnationId", "type": "uuid", "versions": "0+"},
    {"name": "BrokerEpoch", "type": "int64", "versions": "0+"},
    {"name": "EndPoints", "type": "[]BrokerEndpoint", "versions": "0+", "fields": _ENDPOINT_FIELDS},
    {"name": "Features", "type": "[]BrokerFeature", "versions": "0+", "fields": _FEATURE_FIELDS},
    {"name": "Rack", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    {"name": "Fenced", "type": "bool", "versions": "0+", "default": "true"},
    {"name": "InControlledShutdown", "type": "bool", "versions": "1+", "default": "false"},
    {"name": "LogDirs", "type": "[]uuid", "versions": "3+", "taggedVersions": "3+", "tag": 0},
])

UNREGISTER_BROKER_RECORD = _record("UnregisterBrokerRecord", "0", [
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "BrokerEpoch", "type": "int64", "versions": "0+"},
])

TOPIC_RECORD = _record("TopicRecord", "0", [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
])

PARTITION_RECORD = _record("PartitionRecord", "0-2", [
    {"name": "PartitionId", "type": "int32", "versions": "0+", "default": "-1"},
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Replicas", "type": "[]int32", "versions": "0+"},
    {"name": "Isr", "type": "[]int32", "versions": "0+"},
    {"name": "RemovingReplicas", "type": "[]int32", "versions": "0+"},
    {"name": "AddingReplicas", "type": "[]int32", "versions": "0+"},
    {"name": "Leader", "type": "int32", "versions": "0+", "default": "-1"},
    {"name": "LeaderRecoveryState", "type": "int8", "default": "0", "versions": "0+",
     "taggedVersions": "0+", "tag": 0},
    {"name": "LeaderEpoch", "type": "int32", "versions": "0+", "default": "-1"},
    {"name": "PartitionEpoch", "type": "int32", "versions": "0+", "default": "-1"},
    {"name": "Directories", "type": "[]uuid", "versions": "1+"},
    {"name": "EligibleLeaderReplicas", "type": "[]int32", "default": "null", "versions": "2+",
     "nullableVersions": "2+", "taggedVersions": "2+", "tag": 1},
    {"name": "LastKnownElr", "type": "[]int32", "default": "null", "versions": "2+",
     "nullableVersions": "2+", "taggedVersions": "2+", "tag": 2},
])

CONFIG_RECORD = _record("ConfigRecord", "0", [
    {"name": "ResourceType", "type": "int8", "versions": "0+"},
    {"name": "ResourceName", "type": "string", "versions": "0+"},
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Value", "type": "string", "versions": "0+", "nullableVersions": "0+"},
])

PARTITION_CHANGE_RECORD = _record("PartitionChangeRecord", "0-2", [
    {"name": "PartitionId", "type": "int32", "versions": "0+", "default": "-1"},
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
    {"name": "Isr", "type": "[]int32", "default": "null", "versions": "0+", "nullableVersions": "0+",
     "taggedVersions": "0+", "tag": 0},
    {"name": "Leader", "type": "int32", "default": "-2", "versions": "0+", "taggedVersions": "0+", "tag": 1},
    {"name": "Replicas", "type": "[]int32", "default": "null", "versions": "0+", "nullableVersions": "0+",
     "taggedVersions": "0+", "tag": 2},
    {"name": "RemovingReplicas", "type": "[]int32", "default": "null", "versions": "0+",
     "nullableVersions": "0+", "taggedVersions": "0+", "tag": 3},
    {"name": "AddingReplicas", "type": "[]int32", "default": "null", "versions": "0+",
     "nullableVersions": "0+", "taggedVersions": "0+", "tag": 4},
    {"name": "LeaderRecoveryState", "type": "int8", "default": "-1", "versions": "0+",
     "taggedVersions": "0+", "tag": 5},
    {"name": "Directories", "type": "[]uuid", "default": "null", "versions": "1+", "nullableVersions": "1+",
     "taggedVersions": "1+", "tag": 8},
    {"name": "EligibleLeaderReplicas", "type": "[]int32", "default": "null", "versions": "2+",
     "nullableVersions": "2+", "taggedVersions": "2+", "tag": 6},
    {"name": "LastKnownElr", "type": "[]int32", "default": "null", "versions": "2+",
     "nullableVersions": "2+", "taggedVersions": "2+", "tag": 7},
])

FENCE_BROKER_RECORD = _record("FenceBrokerRecord", "0", [
    {"name": "Id", "type": "int32", "versions": "0+"},
    {"name": "Epoch", "type": "int64", "versions": "0+"},
])

UNFENCE_BROKER_RECORD = _record("UnfenceBrokerRecord", "0", [
    {"name": "Id", "type": "int32", "versions": "0+"},
    {"name": "Epoch", "type": "int64", "versions": "0+"},
])

REMOVE_TOPIC_RECORD = _record("RemoveTopicRecord", "0", [
    {"name": "TopicId", "type": "uuid", "versions": "0+"},
])

DELEGATION_TOKEN_RECORD = _record("DelegationTokenRecord", "0", [
    {"name": "Owner", "type": "string", "versions": "0+"},
    {"name": "Requester", "type": "string", "versions": "0+"},
    {"name": "Renewers", "type": "[]string", "versions": "0+"},
    {"name": "IssueTimestamp", "type": "int64", "versions": "0+"},
    {"name": "MaxTimestamp", "type": "int64", "versions": "0+"},
    {"name": "ExpirationTimestamp", "type": "int64", "versions": "0+"},
    {"name": "TokenId", "type": "string", "versions": "0+"},
])

USER_SCRAM_CREDENTIAL_RECORD = _record("UserScramCredentialRecord", "0", [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Mechanism", "type": "int8", "versions": "0+"},
    {"name": "Salt", "type": "bytes", "versions": "0+"},
    {"name": "StoredKey", "type": "bytes", "versions": "0+"},
    {"name": "ServerKey", "type": "bytes", "versions": "0+"},
    {"name": "Iterations", "type": "int32", "versions": "0+"},
])

FEATURE_LEVEL_RECORD = _record("FeatureLevelRecord", "0", [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "FeatureLevel", "type": "int16", "versions": "0+"},
])

CLIENT_QUOTA_RECORD = _record("ClientQuotaRecord", "0", [
    {"name": "Entity", "type": "[]EntityData", "versions": "0+", "fields": [
        {"name": "EntityType", "type": "string", "versions": "0+"},
        {"name": "EntityName", "type": "string", "versions": "0+", "nullableVersions": "0+"},
    ]},
    {"name": "Key", "type": "string", "versions": "0+"},
    {"name": "Value", "type": "float64", "versions": "0+"},
    {"name": "Remove", "type": "bool", "versions": "0+"},
])

PRODUCER_IDS_RECORD = _record("ProducerIdsRecord", "0", [
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "BrokerEpoch", "type": "int64", "versions": "0+", "default": "-1"},
    {"name": "NextProducerId", "type": "int64", "versions": "0+"},
])

BROKER_REGISTRATION_CHANGE_RECORD = _record("BrokerRegistrationChangeRecord", "0-2", [
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "BrokerEpoch", "type": "int64", "versions": "0+"},
    {"name": "Fenced", "type": "int8", "versions": "0+", "taggedVersions": "0+", "tag": 0},
    {"name": "InControlledShutdown", "type": "int8", "versions": "1+", "taggedVersions": "1+", "tag": 1},
    {"name": "LogDirs", "type": "[]uuid", "versions": "2+", "taggedVersions": "2+", "tag": 2},
])

ACCESS_CONTROL_ENTRY_RECORD = _record("AccessControlEntryRecord", "0", [
    {"name": "Id", "type": "uuid", "versions": "0+"},
    {"name": "ResourceType", "type": "int8", "versions": "0+"},
    {"name": "ResourceName", "type": "string", "versions": "0+"},
    {"name": "PatternType", "type": "int8", "versions": "0+"},
    {"name": "Principal", "type": "string", "versions": "0+"},
    {"name": "Host", "type": "string", "versions": "0+"},
    {"name": "Operation", "type": "int8", "versions": "0+"},
    {"name": "PermissionType", "type": "int8", "versions": "0+"},
])

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = _record("RemoveAccessControlEntryRecord", "0", [
    {"name": "Id", "type": "uuid", "versions": "0+"},
])

NO_OP_RECORD = _record("NoOpRecord", "0", [])

ZK_MIGRATION_STATE_RECORD = _record("ZkMigrationStateRecord", "0", [
    {"name": "ZkMigrationState", "type": "int8", "versions": "0+"},
])

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = _record("RemoveUserScramCredentialRecord", "0", [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Mechanism", "type": "int8", "versions": "0+"},
])

BEGIN_TRANSACTION_RECORD = _record("BeginTransactionRecord", "0", [
    {"name": "Name", "type": "string", "default": "null", "versions": "0+", "nullableVersions": "0+",
     "taggedVersions": "0+", "tag": 0},
])

END_TRANSACTION_RECORD = _record("EndTransactionRecord", "0", [])

ABORT_TRANSACTION_RECORD = _record("AbortTransactionRecord", "0", [
    {"name": "Reason", "type": "string", "default": "null", "versions": "0+", "nullableVersions": "0+",
     "taggedVersions": "0+", "tag": 0},
])

REMOVE_DELEGATION_TOKEN_RECORD = _record("RemoveDelegationTokenRecord", "0", [
    {"name": "TokenId", "type": "string", "versions": "0+"},
])

REGISTER_CONTROLLER_RECORD = _record("RegisterControllerRecord", "0", [
    {"name": "ControllerId", "type": "int32", "versions": "0+"},
    {"name": "IncarnationId", "type": "uuid", "versions": "0+"},
    {"name": "ZkMigrationReady", "type": "bool", "versions": "0+"},
    {"name": "EndPoints", "type": "[]ControllerEndpoint", "versions": "0+", "fields": _ENDPOINT_FIELDS},
    {"name": "Features", "type": "[]ControllerFeature", "versions": "0+", "fields": _FEATURE_FIELDS},
])


def java_enum_name(record_name: str) -> str:
    """Kafka's generator's ``toSnakeCase(name).toUpperCase()``: ``TopicRecord`` -> ``TOPIC_RECORD``."""
    out: list[str] = []
    previous_upper = True
    for c in record_name:
        if c.isupper():
            if not previous_upper:
                out.append("_")
            out.append(c.lower())
            previous_upper = True
        else:
            out.append(c)
            previous_upper = False
    return "".join(out).upper()


class MetadataRecordType(NamedTuple):
    api_key: int
    name: str  # the message name, e.g. TopicRecord
    enum_name: str  # MetadataRecordType's constant, e.g. TOPIC_RECORD
    schema: dict[str, Any]


METADATA_RECORD_TYPES: dict[int, MetadataRecordType] = {
    api_key: MetadataRecordType(api_key, schema["name"], java_enum_name(schema["name"]), schema)
    for api_key, schema in (
        (0, REGISTER_BROKER_RECORD),
        (1, UNREGISTER_BROKER_RECORD),
        (2, TOPIC_RECORD),
        (3, PARTITION_RECORD),
        (4, CONFIG_RECORD),
        (5, PARTITION_CHANGE_RECORD),
        (7, FENCE_BROKER_RECORD),
        (8, UNFENCE_BROKER_RECORD),
        (9, REMOVE_TOPIC_RECORD),
        (10, DELEGATION_TOKEN_RECORD),
        (11, USER_SCRAM_CREDENTIAL_RECORD),
        (12, FEATURE_LEVEL_RECORD),
        (14, CLIENT_QUOTA_RECORD),
        (15, PRODUCER_IDS_RECORD),
        (17, BROKER_REGISTRATION_CHANGE_RECORD),
        (18, ACCESS_CONTROL_ENTRY_RECORD),
        (19, REMOVE_ACCESS_CONTROL_ENTRY_RECORD),
        (20, NO_OP_RECORD),
        (21, ZK_MIGRATION_STATE_RECORD),
        (22, REMOVE_USER_SCRAM_CREDENTIAL_RECORD),
        (23, BEGIN_TRANSACTION_RECORD),
        (24, END_TRANSACTION_RECORD),
        (25, ABORT_TRANSACTION_RECORD),
        (26, REMOVE_DELEGATION_TOKEN_RECORD),
        (27, REGISTER_CONTROLLER_RECORD),
    )
}
METADATA_RECORD_TYPES_BY_NAME = {rt.name: rt for rt in METADATA_RECORD_TYPES.values()}
_SCHEMAS_BY_API_KEY = {api_key: rt.schema for api_key, rt in METADATA_RECORD_TYPES.items()}


# -- reading --------------------------------------------------------------------------------------


class MetadataParseError(CorruptRecordError):
    """A value Kafka 3.9's ``MetadataRecordSerde`` refuses; ``java_message`` is its exception's message."""

    def __init__(self, message: str, java_message: str, position: int | None = None) -> None:
        super().__init__(message, position)
        self.java_message = java_message


def _read_header_short(buf: bytes | bytearray | memoryview, pos: int, entity: str) -> tuple[int, int]:
    """Kafka's ``unsignedIntToShort``: an unsigned varint read as a Java int, narrowed to a short."""
    result = 0
    for i in range(5):
        if pos >= len(buf):
            raise MetadataParseError(f"the value ends inside the {entity}", f"Error while reading {entity}", pos)
        b = buf[pos]
        pos += 1
        if i < 4:
            result |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                break
        else:
            if b >= 0x80:
                raise MetadataParseError(f"the {entity} varint is longer than 5 bytes",
                                         f"Error while reading {entity}", pos)
            result = (result | (b << 28)) & 0xFFFFFFFF
    if result >= 0x80000000:
        result -= 0x100000000  # a Java int
    if result > _SHORT_MAX:
        raise MetadataParseError(f"the {entity} {result} does not fit a short",
                                 f"Value for {entity} was too large.", pos)
    result &= 0xFFFF  # Java's (short) cast of a negative int
    return (result - 0x10000 if result >= 0x8000 else result), pos


def read_api_message(value: bytes | bytearray | memoryview,
                     schemas: Mapping[int, Mapping[str, Any]]) -> tuple[int, int, dict[str, Any]]:
    """``(api key, version, message dict)`` of a value framed by 3.9's ``AbstractApiMessageSerde.read``.

    ``schemas`` maps the api keys the serde's ``apiMessageFor`` knows to their schemas (a generated
    ``MetadataRecordType.fromId`` of KRaft's or of the remote log metadata topic's records). Raises
    ``MetadataParseError`` with the message of the exception ``read`` throws for the same bytes.
    """
    if isinstance(value, memoryview) and value.format != "B":
        value = value.cast("B")
    frame_version, pos = _read_header_short(value, 0, "frame version")
    if frame_version == 0:
        raise MetadataParseError(
            "frame version 0 (the KRaft preview of Kafka 2.8) is not supported",
            "Could not deserialize metadata record with frame version 0. Note that upgrades from the preview "
            "release of KRaft in 2.8 to newer versions are not supported.", 0)
    if frame_version != FRAME_VERSION:
        raise MetadataParseError(
            f"unknown frame version {frame_version}",
            f"Could not deserialize metadata record due to unknown frame version {frame_version}"
            f"(only frame version {FRAME_VERSION} is supported)", 0)
    api_key, pos = _read_header_short(value, pos, "type")
    version, pos = _read_header_short(value, pos, "version")
    schema = schemas.get(api_key)
    if schema is None:
        # MetadataParseException(Throwable): the message is the cause's toString().
        raise MetadataParseError(
            f"unknown metadata record type {api_key}",
            f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}", pos)
    name = schema["name"]
    try:
        data, end = decode(schema, version, value, pos, strict=False)
    except Exception as exc:  # Kafka wraps whatever its generated reader throws
        raise MetadataParseError(f"cannot read {name} v{version}: {exc}",
                                 f"Failed to deserialize record with type {api_key}",
                                 getattr(exc, "position", None)) from exc
    garbage = len(value) - end
    if garbage > 0:
        raise MetadataParseError(f"{garbage} byte(s) after the {name} v{version} message",
                                 f"Found {garbage} byte(s) of garbage after {api_key}", end)
    return api_key, version, data


def decode_metadata_record(value: bytes | bytearray | memoryview | None) -> tuple[MetadataRecordType, int, dict[str, Any]]:
    """``(record type, version, message dict)`` of a framed metadata record value.

    Raises ``MetadataParseError`` with the message of the exception Kafka 3.9's
    ``MetadataRecordSerde.read`` throws for the same bytes.
    """
    if value is None:
        # Kafka reads from a null buffer: the NullPointerException is caught while reading the frame version.
        raise MetadataParseError("the record has no value", "Error while reading frame version", 0)
    api_key, version, data = read_api_message(value, _SCHEMAS_BY_API_KEY)
    return METADATA_RECORD_TYPES[api_key], version, data


def encode_metadata_record(record: int | str, version: int, data: Mapping[str, Any], *,
                           frame_version: int = FRAME_VERSION) -> bytes:
    """The framed value Kafka's ``MetadataRecordSerde.write`` gives; ``record`` is an api key or a name."""
    rt = METADATA_RECORD_TYPES[record] if isinstance(record, int) else METADATA_RECORD_TYPES_BY_NAME[record]
    return (encode_unsigned_varint(frame_version) + encode_unsigned_varint(rt.api_key)
            + encode_unsigned_varint(version) + encode(rt.schema, version, data))


def metadata_record_json(rt: MetadataRecordType, version: int, data: Mapping[str, Any]) -> dict[str, Any]:
    """The object 3.9's ClusterMetadataLogMessageParser builds: type, version, data."""
    return {"type": rt.enum_name, "version": version, "data": to_json(rt.schema, version, data)}


def format_cluster_metadata_record(key: bytes | bytearray | memoryview | None,
                                   value: bytes | bytearray | memoryview | None,
                                   offset: int) -> tuple[str | None, str | None]:
    """The ``(key, payload)`` of Kafka 3.9's ``--cluster-metadata-decoder``: never a key; the record's
    JSON, or ``Error at <offset>, skipping. <message>`` when it cannot be read."""
    try:
        rt, version, data = decode_metadata_record(value)
        payload = kafka_json_dumps(metadata_record_json(rt, version, data))
    except MetadataParseError as exc:
        payload = f"Error at {offset}, skipping. {exc.java_message}"
    return None, payload
