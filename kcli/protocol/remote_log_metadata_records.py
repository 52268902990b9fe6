"""Tiered storage's remote log metadata records (the ``__remote_log_metadata`` topic), and how
Kafka 3.9 prints them.

A record's value is framed exactly as a KRaft metadata record (3.9 ``RemoteLogMetadataSerde`` ->
``BytesApiMessageSerde`` -> ``AbstractApiMessageSerde.read``; see ``metadata_records``)::

    uvarint  frame version (1)
    uvarint  api key       (the record type, below)
    uvarint  version       (0 for every type; the generated reader does not check it)
    message                the flexible message; every byte of the value must be used

Record types (3.9 ``storage/src/main/resources/message/*.json``, all ``validVersions`` 0)::

    0 RemoteLogSegmentMetadataRecord        2 RemotePartitionDeleteMetadataRecord
    1 RemoteLogSegmentMetadataUpdateRecord  3 RemoteLogSegmentMetadataSnapshotRecord

``kafka-dump-log.sh --remote-log-metadata-decoder`` (3.9 ``DumpLogSegments.RemoteMetadataLogMessageParser``)
prints no key and, as the payload, the ``toString()`` of the ``RemoteLogMetadata`` object the
serde's transforms build from the record (``RemoteLogSegmentMetadata``,
``RemoteLogSegmentMetadataUpdate``, ``RemotePartitionDeleteMetadata``,
``RemoteLogSegmentMetadataSnapshot``). Any exception becomes the payload
``Error at offset <offset>, skipping. <getMessage()>`` and the dump goes on. Besides the serde's
messages, the objects' constructors refuse some values (a negative start offset, an end offset
before the start, no leader epochs, an unknown state id), and a record without a value fails
before the serde is reached (the JVM's helpful NullPointerException message, JDK 15 and later).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcli.common import uuid_to_string
from kcli.errors import CorruptRecordError
from kcli.protocol.metadata_records import FRAME_VERSION, MetadataParseError, read_api_message
from kcli.protocol.schema import encode
from kcli.storage.varint import encode_unsigned_varint

__all__ = [
    "REMOTE_LOG_METADATA_RECORD_TYPES",
    "RemoteLogMetadataError",
    "decode_remote_log_metadata_record",
    "encode_remote_log_metadata_record",
    "remote_log_metadata_text",
    "format_remote_log_metadata_record",
]

# -- schemas (Kafka 3.9) ------------------------------------------------------------------------

_TOPIC_ID_PARTITION = {"name": "TopicIdPartition", "type": "TopicIdPartitionEntry", "versions": "0+", "fields": [
    {"name": "Name", "type": "string", "versions": "0+"},
    {"name": "Id", "type": "uuid", "versions": "0+"},
    {"name": "Partition", "type": "int32", "versions": "0+"},
]}
_REMOTE_LOG_SEGMENT_ID = {"name": "RemoteLogSegmentId", "type": "RemoteLogSegmentIdEntry", "versions": "0+", "fields": [
    _TOPIC_ID_PARTITION,
    {"name": "Id", "type": "uuid", "versions": "0+"},
]}
_SEGMENT_LEADER_EPOCHS = {"name": "SegmentLeaderEpochs", "type": "[]SegmentLeaderEpochEntry", "versions": "0+", "fields": [
    {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
    {"name": "Offset", "type": "int64", "versions": "0+"},
]}
_CUSTOM_METADATA = {"name": "CustomMetadata", "type": "bytes", "default": "null", "versions": "0+", "nullableVersions": "0+"}


def _record(name: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "validVersions": "0", "flexibleVersions": "0+", "fields": fields}


REMOTE_LOG_SEGMENT_METADATA_RECORD = _record("RemoteLogSegmentMetadataRecord", [
    _REMOTE_LOG_SEGMENT_ID,
    {"name": "StartOffset", "type": "int64", "versions": "0+"},
    {"name": "EndOffset", "type": "int64", "versions": "0+"},
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "MaxTimestampMs", "type": "int64", "versions": "0+"},
    {"name": "EventTimestampMs", "type": "int64", "versions": "0+"},
    _SEGMENT_LEADER_EPOCHS,
    {"name": "SegmentSizeInBytes", "type": "int32", "versions": "0+"},
    _CUSTOM_METADATA,
    {"name": "RemoteLogSegmentState", "type": "int8", "versions": "0+"},
])

REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD = _record("RemoteLogSegmentMetadataUpdateRecord", [
    _REMOTE_LOG_SEGMENT_ID,
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "EventTimestampMs", "type": "int64", "versions": "0+"},
    _CUSTOM_METADATA,
    {"name": "RemoteLogSegmentState", "type": "int8", "versions": "0+"},
])

REMOTE_PARTITION_DELETE_METADATA_RECORD = _record("RemotePartitionDeleteMetadataRecord", [
    _TOPIC_ID_PARTITION,
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "EventTimestampMs", "type": "int64", "versions": "0+"},
    {"name": "RemotePartitionDeleteState", "type": "int8", "versions": "0+"},
])

REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD = _record("RemoteLogSegmentMetadataSnapshotRecord", [
    {"name": "SegmentId", "type": "uuid", "versions": "0+"},
    {"name": "StartOffset", "type": "int64", "versions": "0+"},
    {"name": "EndOffset", "type": "int64", "versions": "0+"},
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "MaxTimestampMs", "type": "int64", "versions": "0+"},
    {"name": "EventTimestampMs", "type": "int64", "versions": "0+"},
    _SEGMENT_LEADER_EPOCHS,
    {"name": "SegmentSizeInBytes", "type": "int32", "versions": "0+"},
    _CUSTOM_METADATA,
    {"name": "RemoteLogSegmentState", "type": "int8", "versions": "0+"},
])

REMOTE_LOG_METADATA_RECORD_TYPES: dict[int, dict[str, Any]] = {
    0: REMOTE_LOG_SEGMENT_METADATA_RECORD,
    1: REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD,
    2: REMOTE_PARTITION_DELETE_METADATA_RECORD,
    3: REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD,
}
_API_KEYS_BY_NAME = {schema["name"]: api_key for api_key, schema in REMOTE_LOG_METADATA_RECORD_TYPES.items()}

# RemoteLogSegmentState and RemotePartitionDeleteState: id -> constant (forId gives null otherwise).
_SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                   3: "DELETE_SEGMENT_FINISHED"}
_PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED", 2: "DELETE_PARTITION_FINISHED"}

# The message of the NullPointerException DumpLogSegments hits on ``record.value.remaining`` when a
# record has no value (JDK 15+ helpful NullPointerException messages; older JDKs give "null").
NULL_VALUE_MESSAGE = ('Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
                      '"org.apache.kafka.common.record.Record.value()" is null')


class RemoteLogMetadataError(CorruptRecordError):
    """A value 3.9 cannot turn into a ``RemoteLogMetadata``; ``java_message`` is its exception's getMessage()."""

    def __init__(self, message: str, java_message: str, position: int | None = None) -> None:
        super().__init__(message, position)
        self.java_message = java_message


# -- reading --------------------------------------------------------------------------------------


def decode_remote_log_metadata_record(value: bytes | bytearray | memoryview | None) -> tuple[int, int, dict[str, Any]]:
    """``(api key, version, message dict)`` of a framed remote log metadata record value."""
    if value is None:
        raise RemoteLogMetadataError("the record has no value", NULL_VALUE_MESSAGE, 0)
    try:
        return read_api_message(value, REMOTE_LOG_METADATA_RECORD_TYPES)
    except MetadataParseError as exc:
        raise RemoteLogMetadataError(str(exc), exc.java_message, exc.position) from exc


def _topic_id_partition(entry: Mapping[str, Any]) -> str:
    """``TopicIdPartition.toString()``: ``topicId:topic-partition``."""
    return f"{uuid_to_string(entry['Id'])}:{entry['Name']}-{entry['Partition']}"


def _segment_id(entry: Mapping[str, Any]) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(entry['TopicIdPartition'])}, id={uuid_to_string(entry['Id'])}}}"


def _custom_metadata(value: bytes | None) -> str:
    """``Optional<CustomMetadata>.toString()``."""
    return "Optional.empty" if value is None else f"Optional[CustomMetadata{{{len(value)} bytes}}]"


def _leader_epochs(entries: list[Mapping[str, Any]]) -> str:
    """A HashMap of the entries (a repeated epoch keeps its last offset) copied into a TreeMap, printed."""
    epochs: dict[int, int] = {}
    for entry in entries:
        epochs[entry["LeaderEpoch"]] = entry["Offset"]
    if not epochs:
        raise RemoteLogMetadataError("the segment has no leader epochs", "segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={epochs[k]}" for k in sorted(epochs)) + "}"


def _segment_state(state_id: int) -> str:
    state = _SEGMENT_STATES.get(state_id)
    if state is None:
        raise RemoteLogMetadataError(f"unknown remote log segment state {state_id}", "state can not be null")
    return state


def remote_log_metadata_text(api_key: int, data: Mapping[str, Any]) -> str:
    """The ``toString()`` of the object 3.9's transform builds from a decoded record.

    Raises ``RemoteLogMetadataError`` where the object's constructor throws, checking in Java's order.
    """
    if api_key == 0:  # RemoteLogSegmentMetadataTransform: RemoteLogSegmentMetadata(...).createWithUpdates(update)
        start, end = data["StartOffset"], data["EndOffset"]
        if start < 0:
            raise RemoteLogMetadataError(
                f"negative start offset {start}",
                f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative")
        if end < start:
            raise RemoteLogMetadataError(
                f"end offset {end} before start offset {start}",
                f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than startOffset = {start}")
        epochs = _leader_epochs(data["SegmentLeaderEpochs"])
        state = _segment_state(data["RemoteLogSegmentState"])
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(data['RemoteLogSegmentId'])}, "
                f"startOffset={start}, endOffset={end}, brokerId={data['BrokerId']}, "
                f"maxTimestampMs={data['MaxTimestampMs']}, eventTimestampMs={data['EventTimestampMs']}, "
                f"segmentLeaderEpochs={epochs}, segmentSizeInBytes={data['SegmentSizeInBytes']}, "
                f"customMetadata={_custom_metadata(data['CustomMetadata'])}, state={state}}}")
    if api_key == 1:  # RemoteLogSegmentMetadataUpdate
        state = _segment_state(data["RemoteLogSegmentState"])
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(data['RemoteLogSegmentId'])}, "
                f"customMetadata={_custom_metadata(data['CustomMetadata'])}, state={state}, "
                f"eventTimestampMs={data['EventTimestampMs']}, brokerId={data['BrokerId']}}}")
    if api_key == 2:  # RemotePartitionDeleteMetadata: Objects.requireNonNull(state), an NPE without a message
        state = _PARTITION_DELETE_STATES.get(data["RemotePartitionDeleteState"])
        if state is None:
            raise RemoteLogMetadataError(f"unknown remote partition delete state {data['RemotePartitionDeleteState']}",
                                         "null")
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(data['TopicIdPartition'])}, "
                f"state={state}, eventTimestampMs={data['EventTimestampMs']}, brokerId={data['BrokerId']}}}")
    if api_key == 3:  # RemoteLogSegmentMetadataSnapshot: state is checked before the leader epochs
        state = _segment_state(data["RemoteLogSegmentState"])
        epochs = _leader_epochs(data["SegmentLeaderEpochs"])
        return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={uuid_to_string(data['SegmentId'])}, "
                f"startOffset={data['StartOffset']}, endOffset={data['EndOffset']}, "
                f"maxTimestampMs={data['MaxTimestampMs']}, segmentLeaderEpochs={epochs}, "
                f"segmentSizeInBytes={data['SegmentSizeInBytes']}, "
                f"customMetadata={_custom_metadata(data['CustomMetadata'])}, state={state}}}")
    raise ValueError(f"no remote log metadata record type has api key {api_key}")


def encode_remote_log_metadata_record(record: int | str, version: int, data: Mapping[str, Any], *,
                                      frame_version: int = FRAME_VERSION) -> bytes:
    """The framed value ``RemoteLogMetadataSerde.serialize`` gives; ``record`` is an api key or a name."""
    api_key = record if isinstance(record, int) else _API_KEYS_BY_NAME[record]
    return (encode_unsigned_varint(frame_version) + encode_unsigned_varint(api_key)
            + encode_unsigned_varint(version) + encode(REMOTE_LOG_METADATA_RECORD_TYPES[api_key], version, data))


def format_remote_log_metadata_record(key: bytes | bytearray | memoryview | None,
                                      value: bytes | bytearray | memoryview | None,
                                      offset: int) -> tuple[str | None, str | None]:
    """The ``(key, payload)`` of Kafka 3.9's ``--remote-log-metadata-decoder``: never a key; the
    record's ``toString()``, or ``Error at offset <offset>, skipping. <message>``."""
    try:
        api_key, _, data = decode_remote_log_metadata_record(value)
        payload = remote_log_metadata_text(api_key, data)
    except RemoteLogMetadataError as exc:
        payload = f"Error at offset {offset}, skipping. {exc.java_message}"
    return None, payload
