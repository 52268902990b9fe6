"""KRaft metadata records: values packed by hand from Kafka 3.9's layout facts, and the payload
Kafka 3.9's ``kafka-dump-log.sh --cluster-metadata-decoder`` prints for them.

Layout facts (3.9 ``AbstractApiMessageSerde`` and ``metadata/.../*Record.json``): a value is
uvarint frame version (1), uvarint api key, uvarint version, then the flexible message: compact
strings/arrays (uvarint length+1), uuids 16 bytes, big-endian integers, and every struct ends with a
tagged-field section (uvarint count, then tag, size, value). TopicRecord (key 2) v0 = name, topicId.
"""

from __future__ import annotations

import json
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.protocol.metadata_records import (
    METADATA_RECORD_TYPES,
    MetadataParseError,
    decode_metadata_record,
    encode_metadata_record,
    format_cluster_metadata_record,
    java_enum_name,
)

UUID_BYTES = bytes(range(16))
UUID_TEXT = "AAECAwQFBgcICQoLDA0ODw"  # URL-safe base64 of 00..0f, no padding
UUID2_BYTES = bytes([0xFF] * 16)
UUID2_TEXT = "_____________________w"


def compact(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


def i8(n: int) -> bytes:
    return struct.pack(">b", n)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def int_array(values: list[int]) -> bytes:
    return bytes([len(values) + 1]) + b"".join(i32(v) for v in values)


TOPIC_RECORD_V0 = b"\x01\x02\x00" + compact("demo-topic") + UUID_BYTES + b"\x00"


def payload(value: bytes | None, offset: int = 7) -> str:
    key, text = format_cluster_metadata_record(None, value, offset)
    assert key is None
    assert text is not None
    return text


# -- golden values ------------------------------------------------------------------------------


def test_topic_record_v0():
    assert payload(TOPIC_RECORD_V0) == (
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"demo-topic","topicId":"' + UUID_TEXT + '"}}'
    )


def test_the_key_is_ignored_and_never_printed():
    assert format_cluster_metadata_record(b"some key", TOPIC_RECORD_V0, 0)[0] is None


def test_partition_record_v2_with_tagged_elr():
    value = (
        b"\x01\x03\x02" + i32(4) + UUID_BYTES + int_array([1, 2]) + int_array([1]) + int_array([]) + int_array([])
        + i32(1) + i32(5) + i32(6)
        + bytes([3]) + UUID2_BYTES + UUID_BYTES  # directories: compact array of 2 uuids
        + b"\x02"  # two tagged fields
        + b"\x01" + b"\x05" + int_array([2])  # tag 1 EligibleLeaderReplicas = [2]
        + b"\x02" + b"\x01" + int_array([])  # tag 2 LastKnownElr = []
    )
    assert payload(value) == (
        '{"type":"PARTITION_RECORD","version":2,"data":{"partitionId":4,"topicId":"' + UUID_TEXT + '",'
        '"replicas":[1,2],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,'
        '"leaderEpoch":5,"partitionEpoch":6,"directories":["' + UUID2_TEXT + '","' + UUID_TEXT + '"],'
        '"eligibleLeaderReplicas":[2],"lastKnownElr":[]}}'
    )


def test_partition_record_v0_has_no_directories_and_omits_default_tagged_fields():
    value = (b"\x01\x03\x00" + i32(0) + UUID_BYTES + int_array([1]) + int_array([1]) + int_array([])
             + int_array([]) + i32(1) + i32(0) + i32(0) + b"\x00")
    assert payload(value) == (
        '{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":0,"topicId":"' + UUID_TEXT + '",'
        '"replicas":[1],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,'
        '"leaderEpoch":0,"partitionEpoch":0}}'
    )


def test_partition_change_record_shows_only_tagged_fields_that_were_set():
    value = b"\x01\x05\x00" + i32(3) + UUID_BYTES + b"\x01" + b"\x01\x04" + i32(2)
    assert payload(value) == (
        '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":3,"topicId":"' + UUID_TEXT + '",'
        '"leader":2}}'
    )


def test_register_broker_record_v3():
    value = (
        b"\x01\x00\x03" + i32(1) + b"\x00" + UUID_BYTES + i64(12)
        + b"\x02" + compact("PLAINTEXT") + compact("localhost") + struct.pack(">H", 40000) + i16(0) + b"\x00"
        + b"\x02" + compact("metadata.version") + i16(1) + i16(21) + b"\x00"
        + b"\x00"  # rack: null
        + b"\x01" + b"\x00"  # fenced true, in controlled shutdown false
        + b"\x01" + b"\x00" + b"\x11" + b"\x02" + UUID2_BYTES  # tag 0 LogDirs: one uuid (17 bytes)
    )
    assert payload(value) == (
        '{"type":"REGISTER_BROKER_RECORD","version":3,"data":{"brokerId":1,"isMigratingZkBroker":false,'
        '"incarnationId":"' + UUID_TEXT + '","brokerEpoch":12,"endPoints":[{"name":"PLAINTEXT",'
        '"host":"localhost","port":40000,"securityProtocol":0}],"features":[{"name":"metadata.version",'
        '"minSupportedVersion":1,"maxSupportedVersion":21}],"rack":null,"fenced":true,'
        '"inControlledShutdown":false,"logDirs":["' + UUID2_TEXT + '"]}}'
    )


def test_broker_registration_change_record_v0():
    value = b"\x01\x11\x00" + i32(1) + i64(12) + b"\x01" + b"\x00\x01" + i8(-1)
    assert payload(value) == (
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":12,"fenced":-1}}'
    )


def test_client_quota_record_double_and_null_entity_name():
    value = (b"\x01\x0e\x00" + b"\x02" + compact("user") + b"\x00" + b"\x00"
             + compact("producer_byte_rate") + struct.pack(">d", 1024.0) + b"\x00" + b"\x00")
    assert payload(value) == (
        '{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user","entityName":null}],'
        '"key":"producer_byte_rate","value":1024.0,"remove":false}}'
    )


def test_user_scram_credential_bytes_render_as_base64():
    value = (b"\x01\x0b\x00" + compact("alice") + i8(1) + b"\x04abc" + b"\x01" + b"\x03\xff\xfe"
             + i32(4096) + b"\x00")
    assert payload(value) == (
        '{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"alice","mechanism":1,'
        '"salt":"YWJj","storedKey":"","serverKey":"//4=","iterations":4096}}'
    )


def test_records_without_fields_and_tagged_string():
    assert payload(b"\x01\x14\x00\x00") == '{"type":"NO_OP_RECORD","version":0,"data":{}}'
    assert payload(b"\x01\x18\x00\x00") == '{"type":"END_TRANSACTION_RECORD","version":0,"data":{}}'
    assert payload(b"\x01\x17\x00\x01\x00\x03\x03ab") == (
        '{"type":"BEGIN_TRANSACTION_RECORD","version":0,"data":{"name":"ab"}}'
    )
    assert payload(b"\x01\x19\x00\x00") == '{"type":"ABORT_TRANSACTION_RECORD","version":0,"data":{}}'


def test_every_3_9_record_type_is_known():
    assert sorted(METADATA_RECORD_TYPES) == [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 14, 15, 17, 18, 19, 20, 21,
                                             22, 23, 24, 25, 26, 27]
    names = {k: rt.enum_name for k, rt in METADATA_RECORD_TYPES.items()}
    assert names[15] == "PRODUCER_IDS_RECORD"
    assert names[20] == "NO_OP_RECORD"
    assert names[21] == "ZK_MIGRATION_STATE_RECORD"
    assert names[27] == "REGISTER_CONTROLLER_RECORD"
    assert java_enum_name("ABCRecord") == "ABCRECORD"  # consecutive capitals stay together, as in Kafka


# -- newer versions: read with the newest layout 3.9 knows ----------------------------------------


def test_newer_version_of_a_known_type_is_read_with_the_newest_layout():
    value = b"\x01\x02\x05" + compact("t") + UUID_BYTES + b"\x00"
    assert payload(value) == '{"type":"TOPIC_RECORD","version":5,"data":{"name":"t","topicId":"' + UUID_TEXT + '"}}'


def test_newer_version_with_unknown_tag_is_read_and_the_tag_not_shown():
    value = b"\x01\x02\x01" + compact("t") + UUID_BYTES + b"\x01" + b"\x07\x02xy"
    assert payload(value) == '{"type":"TOPIC_RECORD","version":1,"data":{"name":"t","topicId":"' + UUID_TEXT + '"}}'


def test_newer_register_broker_version_fails_in_the_endpoint_struct():
    # 3.9's generated BrokerEndpoint reader refuses versions above 3 ("Can't read version 4 ...").
    value = (b"\x01\x00\x04" + i32(1) + b"\x00" + UUID_BYTES + i64(12)
             + b"\x02" + compact("P") + compact("h") + struct.pack(">H", 1) + i16(0) + b"\x00"
             + b"\x01" + b"\x00" + b"\x01\x00" + b"\x00")
    assert payload(value, 9) == "Error at 9, skipping. Failed to deserialize record with type 0"


# -- what 3.9 prints when it cannot read a record --------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    (None, "Error while reading frame version"),
    (b"", "Error while reading frame version"),
    (b"\x80", "Error while reading frame version"),
    (b"\x00\x02\x00", "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                      "preview release of KRaft in 2.8 to newer versions are not supported."),
    (b"\x02\x02\x00", "Could not deserialize metadata record due to unknown frame version 2"
                      "(only frame version 1 is supported)"),
    (b"\x01", "Error while reading type"),
    (b"\x01\x02", "Error while reading version"),
    (b"\x01\x80\x80\x02\x00", "Value for type was too large."),
    (b"\x01\x02\xff\xff\xff\xff\xff", "Error while reading version"),
    (b"\x01\x1c\x00\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 28"),
    (b"\x01\x06\x00\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 6"),
    (TOPIC_RECORD_V0[:-5], "Failed to deserialize record with type 2"),
    (TOPIC_RECORD_V0 + b"\x00\x00", "Found 2 byte(s) of garbage after 2"),
    (b"\x01\x02\x00" + b"\x00" + UUID_BYTES + b"\x00", "Failed to deserialize record with type 2"),  # null name
])
def test_unreadable_records_give_kafkas_error_line(value, message):
    assert payload(value, 42) == f"Error at 42, skipping. {message}"
    if value is not None:
        with pytest.raises(MetadataParseError):
            decode_metadata_record(value)


def test_negative_header_varint_is_cast_to_a_short():
    # 0xffffffff as a 5-byte varint is the Java int -1: frame version -1 is simply unknown.
    assert payload(b"\xff\xff\xff\xff\x0f\x02\x00", 1) == (
        "Error at 1, skipping. Could not deserialize metadata record due to unknown frame version -1"
        "(only frame version 1 is supported)"
    )


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_raise(data):
    key, text = format_cluster_metadata_record(None, b"\x01" + data, 3)
    assert key is None
    assert text.startswith("Error at 3, skipping. ") or json.loads(text)["type"].endswith("_RECORD")


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=len(TOPIC_RECORD_V0) + 4), st.integers(0, len(TOPIC_RECORD_V0) - 1))
def test_corrupted_topic_record_never_raises(junk, at):
    value = TOPIC_RECORD_V0[:at] + junk
    key, text = format_cluster_metadata_record(None, value, 11)
    assert key is None and isinstance(text, str)


# -- round trips ----------------------------------------------------------------------------------

names = st.text(max_size=20)
uuids = st.binary(min_size=16, max_size=16).map(lambda b: uuid.UUID(bytes=b))
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
int8s = st.integers(-128, 127)
int16s = st.integers(-(2**15), 2**15 - 1)
broker_lists = st.lists(int32s, max_size=5)


@st.composite
def metadata_records(draw):
    kind = draw(st.sampled_from(["TopicRecord", "PartitionRecord", "PartitionChangeRecord", "ConfigRecord",
                                 "RegisterBrokerRecord", "FeatureLevelRecord", "ClientQuotaRecord",
                                 "UserScramCredentialRecord", "DelegationTokenRecord",
                                 "BrokerRegistrationChangeRecord"]))
    if kind == "TopicRecord":
        return kind, 0, {"Name": draw(names), "TopicId": draw(uuids)}
    if kind == "PartitionRecord":
        version = draw(st.integers(0, 2))
        data = {"PartitionId": draw(int32s), "TopicId": draw(uuids), "Replicas": draw(broker_lists),
                "Isr": draw(broker_lists), "RemovingReplicas": draw(broker_lists),
                "AddingReplicas": draw(broker_lists), "Leader": draw(int32s), "LeaderRecoveryState": draw(int8s),
                "LeaderEpoch": draw(int32s), "PartitionEpoch": draw(int32s)}
        if version >= 1:
            data["Directories"] = draw(st.lists(uuids, max_size=3))
        if version >= 2:
            data["EligibleLeaderReplicas"] = draw(st.none() | broker_lists)
            data["LastKnownElr"] = draw(st.none() | broker_lists)
        return kind, version, data
    if kind == "PartitionChangeRecord":
        version = draw(st.integers(0, 2))
        data = {"PartitionId": draw(int32s), "TopicId": draw(uuids), "Isr": draw(st.none() | broker_lists),
                "Leader": draw(int32s), "Replicas": draw(st.none() | broker_lists), "LeaderRecoveryState": draw(int8s)}
        if version >= 1:
            data["Directories"] = draw(st.none() | st.lists(uuids, max_size=3))
        return kind, version, data
    if kind == "ConfigRecord":
        return kind, 0, {"ResourceType": draw(int8s), "ResourceName": draw(names), "Name": draw(names),
                         "Value": draw(st.none() | names)}
    if kind == "RegisterBrokerRecord":
        version = draw(st.integers(0, 3))
        endpoint = st.fixed_dictionaries({"Name": names, "Host": names, "Port": st.integers(0, 65535),
                                          "SecurityProtocol": int16s})
        feature = st.fixed_dictionaries({"Name": names, "MinSupportedVersion": int16s,
                                         "MaxSupportedVersion": int16s})
        data = {"BrokerId": draw(int32s), "IncarnationId": draw(uuids), "BrokerEpoch": draw(int64s),
                "EndPoints": draw(st.lists(endpoint, max_size=3)), "Features": draw(st.lists(feature, max_size=3)),
                "Rack": draw(st.none() | names), "Fenced": draw(st.booleans())}
        if version >= 1:
            data["InControlledShutdown"] = draw(st.booleans())
        if version >= 2:
            data["IsMigratingZkBroker"] = draw(st.booleans())
        if version >= 3:
            data["LogDirs"] = draw(st.lists(uuids, max_size=3))
        return kind, version, data
    if kind == "FeatureLevelRecord":
        return kind, 0, {"Name": draw(names), "FeatureLevel": draw(int16s)}
    if kind == "ClientQuotaRecord":
        entity = st.fixed_dictionaries({"EntityType": names, "EntityName": st.none() | names})
        return kind, 0, {"Entity": draw(st.lists(entity, max_size=3)), "Key": draw(names),
                         "Value": draw(st.floats(allow_nan=False)), "Remove": draw(st.booleans())}
    if kind == "UserScramCredentialRecord":
        return kind, 0, {"Name": draw(names), "Mechanism": draw(int8s), "Salt": draw(st.binary(max_size=20)),
                         "StoredKey": draw(st.binary(max_size=20)), "ServerKey": draw(st.binary(max_size=20)),
                         "Iterations": draw(int32s)}
    if kind == "DelegationTokenRecord":
        return kind, 0, {"Owner": draw(names), "Requester": draw(names), "Renewers": draw(st.lists(names, max_size=3)),
                         "IssueTimestamp": draw(int64s), "MaxTimestamp": draw(int64s),
                         "ExpirationTimestamp": draw(int64s), "TokenId": draw(names)}
    version = draw(st.integers(0, 2))
    data = {"BrokerId": draw(int32s), "BrokerEpoch": draw(int64s), "Fenced": draw(int8s)}
    if version >= 1:
        data["InControlledShutdown"] = draw(int8s)
    if version >= 2:
        data["LogDirs"] = draw(st.lists(uuids, max_size=3))
    return kind, version, data


@settings(max_examples=300, deadline=None)
@given(metadata_records())
def test_encode_decode_round_trip(record):
    kind, version, data = record
    raw = encode_metadata_record(kind, version, data)
    assert raw[0] == 1  # frame version
    rt, got_version, got = decode_metadata_record(raw)
    assert rt.name == kind and got_version == version
    for key, value in data.items():
        assert got[key] == value, key
    assert encode_metadata_record(rt.api_key, got_version, got) == raw
    text = payload(raw)
    parsed = json.loads(text)
    assert parsed["type"] == rt.enum_name and parsed["version"] == version


def test_round_trip_matches_the_hand_packed_bytes():
    data = {"Name": "demo-topic", "TopicId": uuid.UUID(bytes=UUID_BYTES)}
    assert encode_metadata_record("TopicRecord", 0, data) == TOPIC_RECORD_V0
    assert encode_metadata_record(2, 0, data) == TOPIC_RECORD_V0
