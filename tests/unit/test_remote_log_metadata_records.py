"""Remote log metadata records (``__remote_log_metadata``): values packed by hand from Kafka 3.9's
layout facts, and the payload Kafka 3.9's ``kafka-dump-log.sh --remote-log-metadata-decoder`` prints.

Layout facts (3.9 ``AbstractApiMessageSerde`` via ``RemoteLogMetadataSerde``/``BytesApiMessageSerde``,
and ``storage/src/main/resources/message/*.json``): uvarint frame version (1), uvarint api key,
uvarint version (0), then the flexible message: compact strings and arrays (uvarint length+1),
compact nullable bytes (0 = null), uuids as 16 bytes, big-endian integers, and every struct
(the record, RemoteLogSegmentIdEntry, TopicIdPartitionEntry, SegmentLeaderEpochEntry) ends with a
tagged-field section, here the single byte 0 (no tagged fields).

Print facts (3.9 sources): ``DumpLogSegments.RemoteMetadataLogMessageParser`` prints no key and
``RemoteLogMetadataSerde.deserialize(value).toString()``; any exception gives
``Error at offset <offset>, skipping. <getMessage()>``. ``Uuid.toString()`` is URL-safe base64 without
padding; ``TopicIdPartition.toString()`` is ``topicId:topic-partition``; leader epochs go through a
HashMap into a TreeMap, printed by ``AbstractMap.toString()`` as ``{k=v, k=v}``; customMetadata is an
``Optional`` (``Optional.empty`` / ``Optional[CustomMetadata{N bytes}]``); states print their enum names.
"""

from __future__ import annotations

import struct

import pytest

from kcli.protocol.remote_log_metadata_records import (
    NULL_VALUE_MESSAGE,
    REMOTE_LOG_METADATA_RECORD_TYPES,
    decode_remote_log_metadata_record,
    encode_remote_log_metadata_record,
    format_remote_log_metadata_record,
)
from kcli.storage.records import NewRecord, build_batch

UUID_BYTES = bytes(range(16))
UUID_TEXT = "AAECAwQFBgcICQoLDA0ODw"  # URL-safe base64 of 00..0f, no padding
UUID2_BYTES = bytes([0xFF] * 16)
UUID2_TEXT = "_____________________w"
NO_TAGS = b"\x00"


def compact(data: bytes | str) -> bytes:
    if isinstance(data, str):
        data = data.encode()
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


def i8(n: int) -> bytes:
    return struct.pack(">b", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def topic_id_partition(topic: str = "foo", topic_id: bytes = UUID_BYTES, partition: int = 3) -> bytes:
    return compact(topic) + topic_id + i32(partition) + NO_TAGS


def segment_id(segment: bytes = UUID2_BYTES) -> bytes:
    return topic_id_partition() + segment + NO_TAGS


def epochs(*pairs: tuple[int, int]) -> bytes:
    return bytes([len(pairs) + 1]) + b"".join(i32(e) + i64(o) + NO_TAGS for e, o in pairs)


SEGMENT_ID_TEXT = f"RemoteLogSegmentId{{topicIdPartition={UUID_TEXT}:foo-3, id={UUID2_TEXT}}}"


def segment_record(start: int = 100, end: int = 199, leader_epochs: bytes | None = None,
                   custom: bytes = b"\x00", state: int = 1, version: int = 0) -> bytes:
    """RemoteLogSegmentMetadataRecord (api key 0): id, start, end, broker, maxTs, eventTs, epochs,
    size, customMetadata, state."""
    if leader_epochs is None:
        leader_epochs = epochs((5, 150), (4, 100))
    return (b"\x01\x00" + bytes([version]) + segment_id() + i64(start) + i64(end) + i32(1)
            + i64(1700000000000) + i64(1700000000123) + leader_epochs + i32(4096) + custom + i8(state) + NO_TAGS)


def update_record(state: int = 3, custom: bytes = b"\x00") -> bytes:
    """RemoteLogSegmentMetadataUpdateRecord (api key 1): id, broker, eventTs, customMetadata, state."""
    return b"\x01\x01\x00" + segment_id() + i32(2) + i64(1700000000456) + custom + i8(state) + NO_TAGS


def delete_record(state: int = 0) -> bytes:
    """RemotePartitionDeleteMetadataRecord (api key 2): topicIdPartition, broker, eventTs, state."""
    return b"\x01\x02\x00" + topic_id_partition("bar", UUID2_BYTES, 0) + i32(0) + i64(42) + i8(state) + NO_TAGS


def snapshot_record(state: int = 1, leader_epochs: bytes | None = None, custom: bytes = b"\x04abc") -> bytes:
    """RemoteLogSegmentMetadataSnapshotRecord (api key 3): segmentId, start, end, broker, maxTs,
    eventTs, epochs, size, customMetadata, state."""
    if leader_epochs is None:
        leader_epochs = epochs((0, 0))
    return (b"\x01\x03\x00" + UUID_BYTES + i64(0) + i64(99) + i32(7) + i64(11) + i64(12) + leader_epochs
            + i32(512) + custom + i8(state) + NO_TAGS)


def payload(value: bytes | None, offset: int = 0) -> str | None:
    key, text = format_remote_log_metadata_record(b"ignored key", value, offset)
    assert key is None  # "No keys for metadata records"
    return text


# -- what 3.9 prints for each record type ---------------------------------------------------------


def test_segment_metadata_record():
    # RemoteLogSegmentMetadata.toString(): brokerId before maxTimestampMs; the epochs (5->150, 4->100
    # in the bytes) come out of a TreeMap sorted by epoch; null customMetadata is Optional.empty;
    # state id 1 is COPY_SEGMENT_FINISHED.
    assert payload(segment_record()) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_ID_TEXT}, startOffset=100, endOffset=199, "
        "brokerId=1, maxTimestampMs=1700000000000, eventTimestampMs=1700000000123, "
        "segmentLeaderEpochs={4=100, 5=150}, segmentSizeInBytes=4096, customMetadata=Optional.empty, "
        "state=COPY_SEGMENT_FINISHED}"
    )


def test_segment_metadata_custom_metadata_and_repeated_epoch():
    # CustomMetadata.toString() is "CustomMetadata{<length> bytes}" inside Optional[...]; a repeated
    # epoch keeps the offset put last into the HashMap; start == end is allowed (endOffset < startOffset is not).
    value = segment_record(start=7, end=7, leader_epochs=epochs((2, 7), (2, 9)), custom=compact(b"abc"), state=0)
    assert payload(value) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_ID_TEXT}, startOffset=7, endOffset=7, "
        "brokerId=1, maxTimestampMs=1700000000000, eventTimestampMs=1700000000123, "
        "segmentLeaderEpochs={2=9}, segmentSizeInBytes=4096, customMetadata=Optional[CustomMetadata{3 bytes}], "
        "state=COPY_SEGMENT_STARTED}"
    )
    # An empty (not null) byte array is a present CustomMetadata of 0 bytes.
    assert "customMetadata=Optional[CustomMetadata{0 bytes}]" in payload(segment_record(custom=b"\x01"))


def test_segment_metadata_update_record():
    # RemoteLogSegmentMetadataUpdate.toString(): id, customMetadata, state, eventTimestampMs, brokerId.
    assert payload(update_record()) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEGMENT_ID_TEXT}, customMetadata=Optional.empty, "
        "state=DELETE_SEGMENT_FINISHED, eventTimestampMs=1700000000456, brokerId=2}"
    )
    assert payload(update_record(state=2, custom=compact(b"xy"))) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEGMENT_ID_TEXT}, "
        "customMetadata=Optional[CustomMetadata{2 bytes}], state=DELETE_SEGMENT_STARTED, "
        "eventTimestampMs=1700000000456, brokerId=2}"
    )


@pytest.mark.parametrize(("state", "name"), [
    (0, "DELETE_PARTITION_MARKED"), (1, "DELETE_PARTITION_STARTED"), (2, "DELETE_PARTITION_FINISHED"),
])
def test_partition_delete_record(state, name):
    # RemotePartitionDeleteMetadata.toString() labels the TopicIdPartition "topicPartition".
    assert payload(delete_record(state)) == (
        f"RemotePartitionDeleteMetadata{{topicPartition={UUID2_TEXT}:bar-0, state={name}, "
        "eventTimestampMs=42, brokerId=0}"
    )


def test_snapshot_record():
    # RemoteLogSegmentMetadataSnapshot.toString() has neither brokerId nor eventTimestampMs.
    assert payload(snapshot_record()) == (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={UUID_TEXT}, startOffset=0, endOffset=99, "
        "maxTimestampMs=11, segmentLeaderEpochs={0=0}, segmentSizeInBytes=512, "
        "customMetadata=Optional[CustomMetadata{3 bytes}], state=COPY_SEGMENT_FINISHED}"
    )


def test_the_snapshot_does_not_check_offsets():
    # Only RemoteLogSegmentMetadata's constructor checks offsets; the snapshot's takes them as they are.
    value = b"\x01\x03\x00" + UUID_BYTES + i64(-5) + i64(-9) + i32(7) + i64(11) + i64(12) + epochs((0, 0)) \
        + i32(512) + b"\x00" + i8(3) + NO_TAGS
    assert payload(value) == (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={UUID_TEXT}, startOffset=-5, endOffset=-9, "
        "maxTimestampMs=11, segmentLeaderEpochs={0=0}, segmentSizeInBytes=512, "
        "customMetadata=Optional.empty, state=DELETE_SEGMENT_FINISHED}"
    )


def test_decode_and_encode_agree_with_the_hand_packed_bytes():
    for value, api_key in ((segment_record(), 0), (update_record(), 1), (delete_record(), 2), (snapshot_record(), 3)):
        key, version, data = decode_remote_log_metadata_record(value)
        assert (key, version) == (api_key, 0)
        assert encode_remote_log_metadata_record(api_key, 0, data) == value
    _, _, data = decode_remote_log_metadata_record(delete_record())
    assert encode_remote_log_metadata_record("RemotePartitionDeleteMetadataRecord", 0, data) == delete_record()
    assert sorted(REMOTE_LOG_METADATA_RECORD_TYPES) == [0, 1, 2, 3]


# -- what 3.9 prints when it cannot read a record --------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    # DumpLogSegments reads record.value.remaining first: a null value is an NPE there (JDK 15+ text).
    (None, NULL_VALUE_MESSAGE),
    # AbstractApiMessageSerde.read's MetadataParseExceptions.
    (b"", "Error while reading frame version"),
    (b"\x00", "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
              "preview release of KRaft in 2.8 to newer versions are not supported."),
    (b"\x02\x00\x00", "Could not deserialize metadata record due to unknown frame version 2"
                      "(only frame version 1 is supported)"),
    (b"\x01", "Error while reading type"),
    (b"\x01\x80\x80\x02\x00", "Value for type was too large."),
    (b"\x01\x00", "Error while reading version"),
    # The storage module's generated MetadataRecordType.fromId: MetadataParseException(cause) -> cause.toString().
    (b"\x01\x04\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 4"),
    # The generated reader runs out of bytes / an inline struct refuses version 1.
    (segment_record()[:-5], "Failed to deserialize record with type 0"),
    (segment_record(version=1), "Failed to deserialize record with type 0"),
    (b"\x01\x02\x00" + b"\x00" + UUID_BYTES + i32(0) + NO_TAGS + i32(0) + i64(42) + i8(0) + NO_TAGS,
     "Failed to deserialize record with type 2"),  # a null (non-nullable) topic name
    (delete_record() + b"\xff", "Found 1 byte(s) of garbage after 2"),
])
def test_serde_errors(value, message):
    assert payload(value, 17) == f"Error at offset 17, skipping. {message}"


@pytest.mark.parametrize(("value", "message"), [
    # RemoteLogSegmentMetadata's constructor, in its order: start offset, end offset, leader epochs;
    # then RemoteLogSegmentMetadataUpdate's Objects.requireNonNull(state, "state can not be null").
    (segment_record(start=-1), "Unexpected start offset = -1. StartOffset for a remote segment cannot be negative"),
    (segment_record(start=10, end=9),
     "Unexpected end offset = 9. EndOffset for a remote segment cannot be less than startOffset = 10"),
    (segment_record(leader_epochs=b"\x01"), "segmentLeaderEpochs can not be null or empty"),
    (segment_record(leader_epochs=b"\x01", state=9), "segmentLeaderEpochs can not be null or empty"),
    (segment_record(state=4), "state can not be null"),
    (segment_record(state=-1), "state can not be null"),
    (update_record(state=4), "state can not be null"),
    # RemotePartitionDeleteMetadata: Objects.requireNonNull(state) has no message; Scala prints "null".
    (delete_record(state=3), "null"),
    # RemoteLogSegmentMetadataSnapshot checks the state before the leader epochs.
    (snapshot_record(state=7, leader_epochs=b"\x01"), "state can not be null"),
    (snapshot_record(leader_epochs=b"\x01"), "segmentLeaderEpochs can not be null or empty"),
])
def test_object_errors(value, message):
    assert payload(value, 3) == f"Error at offset 3, skipping. {message}"


# -- through the CLI -------------------------------------------------------------------------------


def test_dump_log_segments_remote_log_metadata_decoder(tmp_path, kcli_run):
    path = tmp_path / "00000000000000000000.log"
    batch = build_batch([
        NewRecord(None, segment_record(), 1000),
        NewRecord(b"some key", delete_record(1), 1001),
        NewRecord(None, b"\x01\x09\x00", 1002),
        NewRecord(None, None, 1003),
    ])
    path.write_bytes(batch)
    code, out, err = kcli_run("dump-log-segments", "--files", str(path), "--remote-log-metadata-decoder")
    assert code == 0
    assert err == []
    assert out[0] == f"Dumping {path}"
    assert out[1] == "Log starting offset: 0"
    assert out[2].startswith("baseOffset: 0 lastOffset: 3 count: 4 ")
    records = out[3:]
    assert len(records) == 4
    # The decoder implies --print-data-log; no key is printed, even for a record that has one.
    assert records[0] == (
        "| offset: 0 CreateTime: 1000 keySize: -1 valueSize: %d sequence: -1 headerKeys: [] payload: "
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_ID_TEXT}, startOffset=100, endOffset=199, "
        "brokerId=1, maxTimestampMs=1700000000000, eventTimestampMs=1700000000123, "
        "segmentLeaderEpochs={4=100, 5=150}, segmentSizeInBytes=4096, customMetadata=Optional.empty, "
        "state=COPY_SEGMENT_FINISHED}" % len(segment_record())
    )
    assert records[1] == (
        "| offset: 1 CreateTime: 1001 keySize: 8 valueSize: %d sequence: -1 headerKeys: [] payload: "
        f"RemotePartitionDeleteMetadata{{topicPartition={UUID2_TEXT}:bar-0, state=DELETE_PARTITION_STARTED, "
        "eventTimestampMs=42, brokerId=0}" % len(delete_record())
    )
    assert records[2] == (
        "| offset: 2 CreateTime: 1002 keySize: -1 valueSize: 3 sequence: -1 headerKeys: [] payload: "
        "Error at offset 2, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
        "Unknown metadata id 9"
    )
    assert records[3] == (
        "| offset: 3 CreateTime: 1003 keySize: -1 valueSize: -1 sequence: -1 headerKeys: [] payload: "
        f"Error at offset 3, skipping. {NULL_VALUE_MESSAGE}"
    )


def test_without_the_decoder_the_value_is_printed_as_a_string(tmp_path, kcli_run):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([NewRecord(None, b"\x01\x02\x00", 5)]))
    code, out, _ = kcli_run("dump-log-segments", "--files", str(path), "--print-data-log")
    assert code == 0
    assert "RemotePartitionDeleteMetadata" not in out[-1]
    assert "Error at offset" not in out[-1]
