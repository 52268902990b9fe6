"""The records of ``__consumer_offsets`` and ``__transaction_state``, and how Kafka 3.9 prints them.

Both topics hold version-prefixed messages (Kafka's ``MessageUtil.toVersionPrefixedBytes``)::

    key    int16 record type / key version, then the key message at that version
    value  int16 value version, then the value message at that version; null = tombstone

``__consumer_offsets`` record types (Kafka 3.9 ``CoordinatorRecordSerde``):

    0, 1  OffsetCommitKey        -> OffsetCommitValue 0-4 (4 flexible)
    2     GroupMetadataKey       -> GroupMetadataValue 0-4 (4 flexible)
    3     ConsumerGroupMetadataKey            -> ConsumerGroupMetadataValue 0
    4     ConsumerGroupPartitionMetadataKey   -> ConsumerGroupPartitionMetadataValue 0
    5     ConsumerGroupMemberMetadataKey      -> ConsumerGroupMemberMetadataValue 0
    6     ConsumerGroupTargetAssignmentMetadataKey -> ...TargetAssignmentMetadataValue 0
    7     ConsumerGroupTargetAssignmentMemberKey   -> ...TargetAssignmentMemberValue 0
    8     ConsumerGroupCurrentMemberAssignmentKey  -> ...CurrentMemberAssignmentValue 0

A classic group's member carries its consumer-protocol subscription and assignment as opaque
bytes, themselves version-prefixed ConsumerProtocolSubscription / ConsumerProtocolAssignment
messages. Kafka 3.9 brokers write OffsetCommitKey 1, OffsetCommitValue 3 (1 when the commit has an
explicit expire timestamp), GroupMetadataKey 2 and GroupMetadataValue 3; ``__transaction_state``
gets TransactionLogKey 0 and TransactionLogValue 0 (1 once transaction.version 1 is enabled).

Decoding follows Kafka's loaders: the version in the bytes is not range-checked for these
messages (a newer version is read with the newest layout Kafka knows), and bytes after a message
are ignored. The schemas below restate Kafka 3.9's JSON definitions (``group-coordinator``,
``transaction-coordinator`` and ``clients`` ``src/main/resources/common/message/``).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from kcli.errors import CorruptRecordError
from kcli.java_compat import scala_hash_table_order, scala_improved_hash, topic_partition_hash
from kcli.protocol.schema import (
    SchemaDecodeError,
    decode,
    encode,
    kafka_json_dumps,
    to_json,
)

__all__ = [
    "kafka_json_dumps",
    "decode_offsets_key",
    "decode_offsets_value",
    "decode_offset_commit_value",
    "decode_group_metadata_value",
    "decode_consumer_protocol_subscription",
    "decode_consumer_protocol_assignment",
    "encode_offsets_key",
    "encode_offsets_value",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_consumer_protocol_subscription",
    "encode_consumer_protocol_assignment",
    "format_offsets_record",
    "decode_transaction_log_key",
    "decode_transaction_log_value",
    "encode_transaction_log_key",
    "encode_transaction_log_value",
    "format_transaction_log_record",
]

# -- schemas (Kafka 3.9) ------------------------------------------------------------------------

OFFSET_COMMIT_KEY = {
    "name": "OffsetCommitKey",
    "validVersions": "0-1",
    "flexibleVersions": "none",
    "fields": [
        {"name": "group", "type": "string", "versions": "0-1"},
        {"name": "topic", "type": "string", "versions": "0-1"},
        {"name": "partition", "type": "int32", "versions": "0-1"},
    ],
}

OFFSET_COMMIT_VALUE = {
    "name": "OffsetCommitValue",
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "offset", "type": "int64", "versions": "0+"},
        {"name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1, "ignorable": True},
        {"name": "metadata", "type": "string", "versions": "0+"},
        {"name": "commitTimestamp", "type": "int64", "versions": "0+"},
        {"name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1, "ignorable": True},
    ],
}

GROUP_METADATA_KEY = {
    "name": "GroupMetadataKey",
    "validVersions": "2",
    "flexibleVersions": "none",
    "fields": [
        {"name": "group", "type": "string", "versions": "2"},
    ],
}

GROUP_METADATA_VALUE = {
    "name": "GroupMetadataValue",
    "validVersions": "0-4",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "protocolType", "versions": "0+", "type": "string"},
        {"name": "generation", "versions": "0+", "type": "int32"},
        {"name": "protocol", "versions": "0+", "type": "string", "nullableVersions": "0+"},
        {"name": "leader", "versions": "0+", "type": "string", "nullableVersions": "0+"},
        {"name": "currentStateTimestamp", "versions": "2+", "type": "int64", "default": -1, "ignorable": True},
        {"name": "members", "versions": "0+", "type": "[]MemberMetadata"},
    ],
    "commonStructs": [
        {
            "name": "MemberMetadata",
            "versions": "0+",
            "fields": [
                {"name": "memberId", "versions": "0+", "type": "string"},
                {"name": "groupInstanceId", "versions": "3+", "type": "string", "default": "null",
                 "nullableVersions": "3+", "ignorable": True},
                {"name": "clientId", "versions": "0+", "type": "string"},
                {"name": "clientHost", "versions": "0+", "type": "string"},
                {"name": "rebalanceTimeout", "versions": "1+", "type": "int32", "default": -1, "ignorable": True},
                {"name": "sessionTimeout", "versions": "0+", "type": "int32"},
                {"name": "subscription", "versions": "0+", "type": "bytes"},
                {"name": "assignment", "versions": "0+", "type": "bytes"},
            ],
        }
    ],
}

CONSUMER_GROUP_METADATA_KEY = {
    "name": "ConsumerGroupMetadataKey",
    "validVersions": "3",
    "flexibleVersions": "none",
    "fields": [{"name": "GroupId", "type": "string", "versions": "3"}],
}

CONSUMER_GROUP_METADATA_VALUE = {
    "name": "ConsumerGroupMetadataValue",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [{"name": "Epoch", "versions": "0+", "type": "int32"}],
}

CONSUMER_GROUP_PARTITION_METADATA_KEY = {
    "name": "ConsumerGroupPartitionMetadataKey",
    "validVersions": "4",
    "flexibleVersions": "none",
    "fields": [{"name": "GroupId", "type": "string", "versions": "4"}],
}

CONSUMER_GROUP_PARTITION_METADATA_VALUE = {
    "name": "ConsumerGroupPartitionMetadataValue",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "Topics", "versions": "0+", "type": "[]TopicMetadata", "fields": [
            {"name": "TopicId", "versions": "0+", "type": "uuid"},
            {"name": "TopicName", "versions": "0+", "type": "string"},
            {"name": "NumPartitions", "versions": "0+", "type": "int32"},
            {"name": "PartitionMetadata", "versions": "0+", "type": "[]PartitionMetadata", "fields": [
                {"name": "Partition", "versions": "0+", "type": "int32"},
                {"name": "Racks", "versions": "0+", "type": "[]string"},
            ]},
        ]},
    ],
}

CONSUMER_GROUP_MEMBER_METADATA_KEY = {
    "name": "ConsumerGroupMemberMetadataKey",
    "validVersions": "5",
    "flexibleVersions": "none",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "5"},
        {"name": "MemberId", "type": "string", "versions": "5"},
    ],
}

CONSUMER_GROUP_MEMBER_METADATA_VALUE = {
    "name": "ConsumerGroupMemberMetadataValue",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "InstanceId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "RackId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "ClientId", "versions": "0+", "type": "string"},
        {"name": "ClientHost", "versions": "0+", "type": "string"},
        {"name": "SubscribedTopicNames", "versions": "0+", "type": "[]string"},
        {"name": "SubscribedTopicRegex", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "0+", "default": -1},
        {"name": "ServerAssignor", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "ClassicMemberMetadata", "versions": "0+", "nullableVersions": "0+", "type": "ClassicMemberMetadata",
         "default": None, "taggedVersions": "0+", "tag": 0, "fields": [
            {"name": "SessionTimeoutMs", "type": "int32", "versions": "0+"},
            {"name": "SupportedProtocols", "type": "[]ClassicProtocol", "versions": "0+", "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "Metadata", "type": "bytes", "versions": "0+"},
            ]},
        ]},
    ],
}

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = {
    "name": "ConsumerGroupTargetAssignmentMetadataKey",
    "validVersions": "6",
    "flexibleVersions": "none",
    "fields": [{"name": "GroupId", "type": "string", "versions": "6"}],
}

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = {
    "name": "ConsumerGroupTargetAssignmentMetadataValue",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [{"name": "AssignmentEpoch", "versions": "0+", "type": "int32"}],
}

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = {
    "name": "ConsumerGroupTargetAssignmentMemberKey",
    "validVersions": "7",
    "flexibleVersions": "none",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "7"},
        {"name": "MemberId", "type": "string", "versions": "7"},
    ],
}

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = {
    "name": "ConsumerGroupTargetAssignmentMemberValue",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "TopicPartitions", "versions": "0+", "type": "[]TopicPartition", "fields": [
            {"name": "TopicId", "versions": "0+", "type": "uuid"},
            {"name": "Partitions", "versions": "0+", "type": "[]int32"},
        ]},
    ],
}

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = {
    "name": "ConsumerGroupCurrentMemberAssignmentKey",
    "validVersions": "8",
    "flexibleVersions": "none",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "8"},
        {"name": "MemberId", "type": "string", "versions": "8"},
    ],
}

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = {
    "name": "ConsumerGroupCurrentMemberAssignmentValue",
    "validVersions": "0",
    "flexibleVersions": "0+",
    "fields": [
        {"name": "MemberEpoch", "versions": "0+", "type": "int32"},
        {"name": "PreviousMemberEpoch", "versions": "0+", "type": "int32"},
        {"name": "State", "versions": "0+", "type": "int8"},
        {"name": "AssignedPartitions", "versions": "0+", "type": "[]TopicPartitions"},
        {"name": "PartitionsPendingRevocation", "versions": "0+", "type": "[]TopicPartitions"},
    ],
    "commonStructs": [
        {"name": "TopicPartitions", "versions": "0+", "fields": [
            {"name": "TopicId", "type": "uuid", "versions": "0+"},
            {"name": "Partitions", "type": "[]int32", "versions": "0+"},
        ]},
    ],
}

CONSUMER_PROTOCOL_SUBSCRIPTION = {
    "name": "ConsumerProtocolSubscription",
    "validVersions": "0-3",
    "flexibleVersions": "none",
    "fields": [
        {"name": "Topics", "type": "[]string", "versions": "0+"},
        {"name": "UserData", "type": "bytes", "versions": "0+", "nullableVersions": "0+", "default": "null",
         "zeroCopy": True},
        {"name": "OwnedPartitions", "type": "[]TopicPartition", "versions": "1+", "ignorable": True, "fields": [
            {"name": "Topic", "type": "string", "mapKey": True, "versions": "1+", "entityType": "topicName"},
            {"name": "Partitions", "type": "[]int32", "versions": "1+"},
        ]},
        {"name": "GenerationId", "type": "int32", "versions": "2+", "default": "-1", "ignorable": True},
        {"name": "RackId", "type": "string", "versions": "3+", "nullableVersions": "3+", "default": "null",
         "ignorable": True},
    ],
}

CONSUMER_PROTOCOL_ASSIGNMENT = {
    "name": "ConsumerProtocolAssignment",
    "validVersions": "0-3",
    "flexibleVersions": "none",
    "fields": [
        {"name": "AssignedPartitions", "type": "[]TopicPartition", "versions": "0+", "fields": [
            {"name": "Topic", "type": "string", "mapKey": True, "versions": "0+", "entityType": "topicName"},
            {"name": "Partitions", "type": "[]int32", "versions": "0+"},
        ]},
        {"name": "UserData", "type": "bytes", "versions": "0+", "nullableVersions": "0+", "default": "null",
         "zeroCopy": True},
    ],
}

TRANSACTION_LOG_KEY = {
    "name": "TransactionLogKey",
    "validVersions": "0",
    "flexibleVersions": "none",
    "fields": [{"name": "TransactionalId", "type": "string", "versions": "0"}],
}

TRANSACTION_LOG_VALUE = {
    "name": "TransactionLogValue",
    "validVersions": "0-1",
    "flexibleVersions": "1+",
    "fields": [
        {"name": "ProducerId", "type": "int64", "versions": "0+"},
        {"name": "ProducerEpoch", "type": "int16", "versions": "0+"},
        {"name": "TransactionTimeoutMs", "type": "int32", "versions": "0+"},
        {"name": "TransactionStatus", "type": "int8", "versions": "0+"},
        {"name": "TransactionPartitions", "type": "[]PartitionsSchema", "versions": "0+", "nullableVersions": "0+",
         "fields": [
            {"name": "Topic", "type": "string", "versions": "0+"},
            {"name": "PartitionIds", "type": "[]int32", "versions": "0+"},
         ]},
        {"name": "TransactionLastUpdateTimestampMs", "type": "int64", "versions": "0+"},
        {"name": "TransactionStartTimestampMs", "type": "int64", "versions": "0+"},
    ],
}

# -- record types -------------------------------------------------------------------------------

OFFSET_COMMIT = "offset_commit"
GROUP_METADATA = "group_metadata"
CONSUMER_GROUP_METADATA = "consumer_group_metadata"
CONSUMER_GROUP_PARTITION_METADATA = "consumer_group_partition_metadata"
CONSUMER_GROUP_MEMBER_METADATA = "consumer_group_member_metadata"
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = "consumer_group_target_assignment_metadata"
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = "consumer_group_target_assignment_member"
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = "consumer_group_current_member_assignment"
UNKNOWN_RECORD_TYPE = "unknown"


class RecordType(NamedTuple):
    kind: str
    key_schema: Mapping[str, Any]
    value_schema: Mapping[str, Any]


RECORD_TYPES: Mapping[int, RecordType] = {
    0: RecordType(OFFSET_COMMIT, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: RecordType(OFFSET_COMMIT, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: RecordType(GROUP_METADATA, GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: RecordType(CONSUMER_GROUP_METADATA, CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: RecordType(CONSUMER_GROUP_PARTITION_METADATA, CONSUMER_GROUP_PARTITION_METADATA_KEY,
                  CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: RecordType(CONSUMER_GROUP_MEMBER_METADATA, CONSUMER_GROUP_MEMBER_METADATA_KEY,
                  CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: RecordType(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
                  CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: RecordType(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
                  CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: RecordType(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
                  CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
}

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
# OffsetCommitValue v3 up to its metadata: version, Offset, LeaderEpoch, the Metadata length.
_OFFSET_COMMIT_VALUE_V3_HEAD = struct.Struct(">hqih")
_OFFSET_COMMIT_VALUE_V3_EMPTY = struct.Struct(">hqihq")  # the same with empty metadata and the commit time
_INT64 = struct.Struct(">q")
GROUP_METADATA_VALUE_VERSION = 3
CONSUMER_PROTOCOL_VERSION = 3
TRANSACTION_LOG_KEY_VERSION = 0
CONSUMER_PROTOCOL_TYPE = "consumer"
TOMBSTONE = "<DELETE>"

_VERSION = struct.Struct(">h")


def _read_version(data: bytes | bytearray | memoryview, what: str) -> int:
    if len(data) < 2:
        raise SchemaDecodeError(f"the {what} is {len(data)} byte(s), too short for its version",
                                0, f"Could not read version from {what}'s buffer.")
    return _VERSION.unpack_from(data, 0)[0]


def _read_message(schema: Mapping[str, Any], version: int, data: bytes | bytearray | memoryview,
                  what: str) -> dict[str, Any]:
    try:
        return decode(schema, version, data, 2, strict=False)[0]
    except SchemaDecodeError as exc:
        raise SchemaDecodeError(
            f"cannot read the {what}: {exc}", exc.position,
            f"Could not read record with version {version} from {what}'s buffer due to: {exc.java_message}.",
        ) from exc


def _prefixed(schema: Mapping[str, Any], version: int, value: Mapping[str, Any]) -> bytes:
    return _VERSION.pack(version) + encode(schema, version, value)


# -- __consumer_offsets: decoding -------------------------------------------------------------


def decode_offsets_key(key: bytes | bytearray | memoryview) -> tuple[str, int, dict[str, Any] | None]:
    """``(kind, record type, key dict)``; an unknown record type gives ``(UNKNOWN_RECORD_TYPE, t, None)``."""
    record_type = _read_version(key, "key")
    rt = RECORD_TYPES.get(record_type)
    if rt is None:
        return UNKNOWN_RECORD_TYPE, record_type, None
    return rt.kind, record_type, _read_message(rt.key_schema, record_type, key, "key")


def decode_offsets_value(record_type: int, value: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    """``(value version, value dict)`` of a non-null value for a key of ``record_type``."""
    rt = RECORD_TYPES.get(record_type)
    if rt is None:
        raise SchemaDecodeError(f"unknown record type {record_type}", 0, f"Unknown record type {record_type}")
    version = _read_version(value, "value")
    return version, _read_message(rt.value_schema, version, value, "value")


def decode_offset_commit_value(value: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    return decode_offsets_value(OFFSET_COMMIT_KEY_VERSION, value)


def decode_group_metadata_value(value: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    return decode_offsets_value(GROUP_METADATA_KEY_VERSION, value)


def decode_consumer_protocol_subscription(data: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    """A member's version-prefixed subscription, read as Kafka's generated reader reads it."""
    version = _read_version(data, "subscription")
    return version, _read_message(CONSUMER_PROTOCOL_SUBSCRIPTION, version, data, "subscription")


def decode_consumer_protocol_assignment(data: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    version = _read_version(data, "assignment")
    return version, _read_message(CONSUMER_PROTOCOL_ASSIGNMENT, version, data, "assignment")


# -- __consumer_offsets: encoding -------------------------------------------------------------


def encode_offsets_key(record_type: int, key: Mapping[str, Any]) -> bytes:
    rt = RECORD_TYPES.get(record_type)
    if rt is None:
        raise ValueError(f"unknown record type {record_type}")
    return _prefixed(rt.key_schema, record_type, key)


def encode_offsets_value(record_type: int, version: int, value: Mapping[str, Any]) -> bytes:
    rt = RECORD_TYPES.get(record_type)
    if rt is None:
        raise ValueError(f"unknown record type {record_type}")
    return _prefixed(rt.value_schema, version, value)


@functools.lru_cache(maxsize=65536)
def encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey, record type 1 (what every broker since 0.9 writes). A group commits the
    same partitions again and again, so the keys are kept."""
    return _prefixed(OFFSET_COMMIT_KEY, OFFSET_COMMIT_KEY_VERSION,
                     {"Group": group, "Topic": topic, "Partition": partition})


def encode_offset_commit_value(offset: int, metadata: str, commit_timestamp: int, leader_epoch: int = -1,
                               expire_timestamp: int | None = None, *, version: int | None = None) -> bytes:
    """OffsetCommitValue as Kafka 3.9 writes it: version 3, or 1 when an expire timestamp is set."""
    if version is None:
        version = OFFSET_COMMIT_VALUE_VERSION if expire_timestamp is None else OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
    if version == 3:
        # Every commit writes this layout; packed directly it costs a tenth of the schema walk.
        if metadata == "":  # what most clients send: one pack
            return _OFFSET_COMMIT_VALUE_V3_EMPTY.pack(3, offset, leader_epoch, 0, commit_timestamp)
        text = metadata.encode("utf-8")
        if len(text) <= 0x7FFF:
            return _OFFSET_COMMIT_VALUE_V3_HEAD.pack(3, offset, leader_epoch, len(text)) + text + _INT64.pack(commit_timestamp)
    return _prefixed(OFFSET_COMMIT_VALUE, version, {
        "Offset": offset,
        "LeaderEpoch": leader_epoch,
        "Metadata": metadata,
        "CommitTimestamp": commit_timestamp,
        "ExpireTimestamp": -1 if expire_timestamp is None else expire_timestamp,
    })


def encode_group_metadata_key(group: str) -> bytes:
    return _prefixed(GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION, {"Group": group})


def encode_group_metadata_value(value: Mapping[str, Any], version: int = GROUP_METADATA_VALUE_VERSION) -> bytes:
    """GroupMetadataValue; ``value`` uses the decoded form (``ProtocolType``, ``Members``, ...)."""
    return _prefixed(GROUP_METADATA_VALUE, version, value)


def encode_consumer_protocol_subscription(value: Mapping[str, Any], version: int = CONSUMER_PROTOCOL_VERSION) -> bytes:
    return _prefixed(CONSUMER_PROTOCOL_SUBSCRIPTION, version, value)


def encode_consumer_protocol_assignment(value: Mapping[str, Any], version: int = CONSUMER_PROTOCOL_VERSION) -> bytes:
    return _prefixed(CONSUMER_PROTOCOL_ASSIGNMENT, version, value)


# -- __consumer_offsets: Kafka 3.9's --offsets-decoder ----------------------------------------


def format_offsets_record(key: bytes | bytearray | memoryview | None, value: bytes | bytearray | memoryview | None,
                          offset: int) -> tuple[str | None, str | None]:
    """The ``(key, payload)`` Kafka 3.9's DumpLogSegments ``OffsetsMessageParser`` prints.

    ``{"type":"<record type>","data":{...}}`` and ``{"version":"<version>","data":{...}}``, a
    tombstone's payload is ``<DELETE>``; an unknown record type or undecodable bytes give a key
    line saying so and no payload. A record without a key stops Kafka's dump with an exception;
    here it raises ``CorruptRecordError`` with Kafka's message.
    """
    if key is None:
        raise CorruptRecordError(
            f"Failed to decode message at offset {offset} using offset topic decoder (message had a missing key)"
        )
    try:
        record_type = _read_version(key, "key")
        rt = RECORD_TYPES.get(record_type)
        if rt is None:
            return f"Unknown record type {record_type} at offset {offset}, skipping.", None
        key_data = _read_message(rt.key_schema, record_type, key, "key")
        if value is None:
            payload = TOMBSTONE
        else:
            version = _read_version(value, "value")
            value_data = _read_message(rt.value_schema, version, value, "value")
            if rt.kind == GROUP_METADATA:
                data = _group_metadata_json(version, value_data)
            else:
                data = to_json(rt.value_schema, version, value_data)
            payload = kafka_json_dumps({"version": str(version), "data": data})
    except SchemaDecodeError as exc:
        return f"Error at offset {offset}, skipping. {exc.java_message}", None
    key_text = kafka_json_dumps({"type": str(record_type), "data": to_json(rt.key_schema, record_type, key_data)})
    return key_text, payload


def _group_metadata_json(version: int, value: Mapping[str, Any]) -> dict[str, Any]:
    """GroupMetadataValue's JSON; for the consumer protocol each member's subscription and
    assignment bytes are replaced by their decoded JSON (left as base64 when they do not decode)."""
    node = to_json(GROUP_METADATA_VALUE, version, value)
    if node.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
        for member_node, member in zip(node.get("members") or (), value.get("Members") or ()):
            for json_name, key, schema in (("subscription", "Subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
                                           ("assignment", "Assignment", CONSUMER_PROTOCOL_ASSIGNMENT)):
                raw = member.get(key)
                if json_name not in member_node or raw is None:
                    continue
                try:
                    embedded_version = _read_version(raw, json_name)
                    embedded = _read_message(schema, embedded_version, raw, json_name)
                except SchemaDecodeError:
                    continue
                member_node[json_name] = to_json(schema, embedded_version, embedded)
    return node


# -- __transaction_state --------------------------------------------------------------------------

# TransactionState ids (Kafka's TransactionMetadata.scala); the printed name is the case object's.
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                      "Dead", "PrepareEpochFence")
_TRANSACTION_VALUE_VERSIONS = (0, 1)


def decode_transaction_log_key(key: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any] | None]:
    """``(version, key dict)``; a version other than 0 is an unknown key: ``(version, None)``."""
    version = _read_version(key, "key")
    if version != TRANSACTION_LOG_KEY_VERSION:
        return version, None
    return version, _read_message(TRANSACTION_LOG_KEY, version, key, "key")


def decode_transaction_log_value(value: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    version = _read_version(value, "value")
    if version not in _TRANSACTION_VALUE_VERSIONS:
        raise SchemaDecodeError(f"Unknown version {version} from the transaction log message value", 0,
                                f"Unknown version {version} from the transaction log message value")
    return version, _read_message(TRANSACTION_LOG_VALUE, version, value, "value")


def encode_transaction_log_key(transactional_id: str) -> bytes:
    return _prefixed(TRANSACTION_LOG_KEY, TRANSACTION_LOG_KEY_VERSION, {"TransactionalId": transactional_id})


def encode_transaction_log_value(value: Mapping[str, Any], version: int = 0) -> bytes:
    return _prefixed(TRANSACTION_LOG_VALUE, version, value)


def format_transaction_log_record(key: bytes | bytearray | memoryview | None,
                                  value: bytes | bytearray | memoryview | None,
                                  offset: int) -> tuple[str | None, str | None]:
    """The ``(key, payload)`` Kafka 3.9's ``TransactionLog.formatRecordKeyAndValue`` gives.

    ``transaction_metadata::transactionalId=<id>`` and
    ``producerId:<p>,producerEpoch:<e>,state=<State>,partitions=[t-0,...],txnLastUpdateTimestamp=<ts>,txnTimeoutMs=<ms>``
    or ``<DELETE>``; a key version other than 0 gives ``unknown::version=<v>`` and no payload.
    Kafka 3.9 catches nothing here, so bytes it cannot read stop its dump; this raises
    ``CorruptRecordError`` for them.
    """
    try:
        if key is None:
            raise CorruptRecordError("the record has no key")
        version, key_data = decode_transaction_log_key(key)
        if key_data is None:
            return f"unknown::version={version}", None
        key_text = f"transaction_metadata::transactionalId={key_data['TransactionalId']}"
        if value is None:
            return key_text, TOMBSTONE
        _, txn = decode_transaction_log_value(value)
        status = txn["TransactionStatus"]
        if not 0 <= status < len(TRANSACTION_STATES):
            raise CorruptRecordError(f"Unknown transaction state id {status} from the transaction status message")
        state = TRANSACTION_STATES[status]
        partitions: list[tuple[str, int]] = []
        if state != "Empty":
            groups = txn["TransactionPartitions"]
            if groups is None:
                raise CorruptRecordError(f"transaction state {state} with null TransactionPartitions")
            partitions = scala_mutable_hash_set_order(
                [[(g["Topic"], p) for p in g["PartitionIds"]] for g in groups]
            )
    except CorruptRecordError as exc:
        raise CorruptRecordError(
            f"Failed to decode the transaction log record at offset {offset}: {exc}", getattr(exc, "position", None)
        ) from exc
    listed = ",".join(f"{topic}-{partition}" for topic, partition in partitions)
    payload = (
        f"producerId:{txn['ProducerId']},producerEpoch:{txn['ProducerEpoch']},state={state},"
        f"partitions=[{listed}],txnLastUpdateTimestamp={txn['TransactionLastUpdateTimestampMs']},"
        f"txnTimeoutMs={txn['TransactionTimeoutMs']}"
    )
    return key_text, payload


# -- the iteration order of the transaction's partition set --------------------------------------
#
# Kafka 3.9 (Scala 2.13.14) collects the partitions into a scala.collection.mutable.HashSet,
# adding each PartitionsSchema entry's partitions as one immutable Set (`++=`), and prints the set
# in iteration order. That order is fixed by the table length: buckets in index order, each
# bucket sorted by the improved hash, ties in insertion order. The table starts at 16 slots
# (threshold 12, load factor 0.75); before each `++=` it grows to the size hinted by the added
# set, and an added set of at most 4 elements (Set1..Set4) goes element by element through
# `add`, which doubles the table when size + 1 >= threshold; a larger (immutable.HashSet) one is
# inserted without that check.


def _table_size_for(capacity: int) -> int:
    n = max(capacity - 1, 4)
    return min((1 << (n.bit_length() - 1)) * 2, 1 << 30)


def scala_mutable_hash_set_order(groups: Iterable[Sequence[tuple[str, int]]]) -> list[tuple[str, int]]:
    """The order a Scala 2.13 ``mutable.HashSet`` of TopicPartitions iterates in, after ``++=`` of
    each group (in order) into an empty set."""
    length = 16
    threshold = 12
    members: dict[tuple[str, int], int] = {}
    for group in groups:
        distinct = list(dict.fromkeys(group))
        if not distinct:
            continue
        target = _table_size_for(int((len(distinct) + 1) / 0.75))
        if target > length:
            length = target
            threshold = int(length * 0.75)
        for tp in distinct:
            if len(distinct) <= 4 and len(members) + 1 >= threshold:
                length *= 2
                threshold = int(length * 0.75)
            if tp not in members:
                members[tp] = scala_improved_hash(topic_partition_hash(*tp))
    return scala_hash_table_order(members, length)
