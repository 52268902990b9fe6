"""``__consumer_offsets`` / ``__transaction_state`` records: bytes packed by hand from the layout
facts, and the lines Kafka 3.9's kafka-dump-log.sh prints for them.

Layout facts (Kafka 3.9 message schemas): every key and value starts with an int16 version;
OffsetCommitKey (types 0/1) = group, topic (int16-length strings), partition int32;
GroupMetadataKey (type 2) = group; OffsetCommitValue v0 offset, metadata, timestamp; v1 adds an
expire timestamp; v2 drops it; v3 adds leader_epoch after the offset; v4 is v3 flexible (compact
strings, uvarint length+1, trailing tagged-field section). GroupMetadataValue v3 = protocol_type,
generation, protocol?, leader?, current_state_timestamp, members [member_id, group_instance_id?,
client_id, client_host, rebalance_timeout, session_timeout, subscription bytes, assignment bytes].
"""

from __future__ import annotations

import base64
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.errors import CorruptRecordError
from kcli.protocol.coordinator_records import (
    OFFSET_COMMIT_VALUE,
    GROUP_METADATA,
    OFFSET_COMMIT,
    UNKNOWN_RECORD_TYPE,
    decode_consumer_protocol_assignment,
    decode_consumer_protocol_subscription,
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_key,
    decode_offsets_value,
    decode_transaction_log_key,
    decode_transaction_log_value,
    encode_consumer_protocol_assignment,
    encode_consumer_protocol_subscription,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    encode_offsets_value,
    encode_transaction_log_key,
    encode_transaction_log_value,
    format_offsets_record,
    format_transaction_log_record,
    scala_mutable_hash_set_order,
)
from kcli.protocol.schema import encode as schema_encode


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def s16(text: str | None) -> bytes:
    if text is None:
        return i16(-1)
    data = text.encode()
    return i16(len(data)) + data


def b32(data: bytes | None) -> bytes:
    if data is None:
        return i32(-1)
    return i32(len(data)) + data


def compact(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


# -- the published Kafka 3.9 line -------------------------------------------------------------------

PUBLISHED_KEY = i16(1) + s16("group01") + s16("test") + i32(0)
PUBLISHED_VALUE = i16(3) + i64(5) + i32(0) + s16("") + i64(1785773255526)


def test_published_kafka_39_offset_commit_line():
    key, payload = format_offsets_record(PUBLISHED_KEY, PUBLISHED_VALUE, 0)
    assert key == '{"type":"1","data":{"group":"group01","topic":"test","partition":0}}'
    assert payload == '{"version":"3","data":{"offset":5,"leaderEpoch":0,"metadata":"","commitTimestamp":1785773255526}}'


def test_offset_commit_key_v1_golden():
    assert decode_offsets_key(PUBLISHED_KEY) == (OFFSET_COMMIT, 1, {"Group": "group01", "Topic": "test", "Partition": 0})
    assert encode_offset_commit_key("group01", "test", 0) == PUBLISHED_KEY


def test_offset_commit_key_v0_reads_like_v1():
    key = i16(0) + s16("g") + s16("t") + i32(7)
    assert decode_offsets_key(key) == (OFFSET_COMMIT, 0, {"Group": "g", "Topic": "t", "Partition": 7})
    assert format_offsets_record(key, None, 3) == ('{"type":"0","data":{"group":"g","topic":"t","partition":7}}', "<DELETE>")


def test_offset_commit_value_v3_golden():
    assert decode_offset_commit_value(PUBLISHED_VALUE) == (
        3, {"Offset": 5, "LeaderEpoch": 0, "Metadata": "", "CommitTimestamp": 1785773255526})
    assert encode_offset_commit_value(5, "", 1785773255526, leader_epoch=0) == PUBLISHED_VALUE


@settings(max_examples=200)
@given(offset=st.integers(-(2**63), 2**63 - 1), epoch=st.integers(-(2**31), 2**31 - 1), metadata=st.text(max_size=300),
       timestamp=st.integers(-(2**63), 2**63 - 1))
def test_offset_commit_value_v3_packed_directly_matches_the_schema(offset, epoch, metadata, timestamp):
    by_schema = struct.pack(">h", 3) + schema_encode(OFFSET_COMMIT_VALUE, 3, {"Offset": offset, "LeaderEpoch": epoch, "Metadata": metadata, "CommitTimestamp": timestamp})
    assert encode_offset_commit_value(offset, metadata, timestamp, leader_epoch=epoch) == by_schema


def test_offset_commit_value_v4_flexible_golden():
    value = i16(4) + i64(42) + i32(-1) + compact("meta") + i64(1779275930663) + b"\x00"
    assert decode_offset_commit_value(value) == (
        4, {"Offset": 42, "LeaderEpoch": -1, "Metadata": "meta", "CommitTimestamp": 1779275930663})
    assert encode_offset_commit_value(42, "meta", 1779275930663, version=4) == value
    assert format_offsets_record(PUBLISHED_KEY, value, 9)[1] == (
        '{"version":"4","data":{"offset":42,"leaderEpoch":-1,"metadata":"meta","commitTimestamp":1779275930663}}')


def test_offset_commit_value_v4_keeps_unknown_tags_and_hides_them_from_json():
    value = i16(4) + i64(1) + i32(2) + compact("") + i64(3) + b"\x01" + b"\x00\x03abc"
    version, data = decode_offset_commit_value(value)
    assert data["_unknown_tagged_fields"] == [(0, b"abc")]
    assert encode_offsets_value(1, version, data) == value
    assert format_offsets_record(PUBLISHED_KEY, value, 0)[1] == (
        '{"version":"4","data":{"offset":1,"leaderEpoch":2,"metadata":"","commitTimestamp":3}}')


@pytest.mark.parametrize("value,json", [
    (i16(0) + i64(10) + s16("m") + i64(20), '{"offset":10,"metadata":"m","commitTimestamp":20}'),
    (i16(1) + i64(10) + s16("m") + i64(20) + i64(30),
     '{"offset":10,"metadata":"m","commitTimestamp":20,"expireTimestamp":30}'),
    (i16(2) + i64(10) + s16("m") + i64(20), '{"offset":10,"metadata":"m","commitTimestamp":20}'),
])
def test_offset_commit_value_old_versions(value, json):
    version = struct.unpack(">h", value[:2])[0]
    assert format_offsets_record(PUBLISHED_KEY, value, 0)[1] == f'{{"version":"{version}","data":{json}}}'


def test_offset_commit_value_with_expiry_is_written_as_v1():
    expected = i16(1) + i64(10) + s16("m") + i64(20) + i64(30)
    assert encode_offset_commit_value(10, "m", 20, expire_timestamp=30) == expected


def test_newer_value_version_is_read_with_the_newest_layout_like_kafka_39():
    value = i16(5) + i64(1) + i32(2) + compact("x") + i64(3) + b"\x00"
    assert format_offsets_record(PUBLISHED_KEY, value, 0)[1] == (
        '{"version":"5","data":{"offset":1,"leaderEpoch":2,"metadata":"x","commitTimestamp":3}}')


# -- group metadata -----------------------------------------------------------------------------------

MEMBER = "console-consumer-4fcee79b-493d-41c0-b3ea-633d704faf45"
SUBSCRIPTION_V3 = i16(3) + i32(1) + s16("test") + b32(None) + i32(0) + i32(-1) + s16(None)
ASSIGNMENT_V3 = i16(3) + i32(1) + s16("test") + i32(2) + i32(0) + i32(1) + b32(None)
GROUP_KEY = i16(2) + s16("console-consumer-14897")
GROUP_VALUE_V3 = (
    i16(3) + s16("consumer") + i32(1) + s16("range") + s16(MEMBER) + i64(1645954314494)
    + i32(1) + s16(MEMBER) + s16(None) + s16("console-consumer") + s16("/127.0.0.1") + i32(300000) + i32(45000)
    + b32(SUBSCRIPTION_V3) + b32(ASSIGNMENT_V3)
)
GROUP_JSON_V3 = (
    '{"version":"3","data":{"protocolType":"consumer","generation":1,"protocol":"range","leader":"' + MEMBER + '",'
    '"currentStateTimestamp":1645954314494,"members":[{"memberId":"' + MEMBER + '","groupInstanceId":null,'
    '"clientId":"console-consumer","clientHost":"/127.0.0.1","rebalanceTimeout":300000,"sessionTimeout":45000,'
    '"subscription":{"topics":["test"],"userData":null,"ownedPartitions":[],"generationId":-1,"rackId":null},'
    '"assignment":{"assignedPartitions":[{"topic":"test","partitions":[0,1]}],"userData":null}}]}}'
)
GROUP_DICT_V3 = {
    "ProtocolType": "consumer", "Generation": 1, "Protocol": "range", "Leader": MEMBER,
    "CurrentStateTimestamp": 1645954314494,
    "Members": [{
        "MemberId": MEMBER, "GroupInstanceId": None, "ClientId": "console-consumer", "ClientHost": "/127.0.0.1",
        "RebalanceTimeout": 300000, "SessionTimeout": 45000, "Subscription": SUBSCRIPTION_V3,
        "Assignment": ASSIGNMENT_V3,
    }],
}


def test_group_metadata_key_golden():
    assert decode_offsets_key(GROUP_KEY) == (GROUP_METADATA, 2, {"Group": "console-consumer-14897"})
    assert encode_group_metadata_key("console-consumer-14897") == GROUP_KEY


def test_group_metadata_value_v3_golden():
    assert decode_group_metadata_value(GROUP_VALUE_V3) == (3, GROUP_DICT_V3)
    assert encode_group_metadata_value(GROUP_DICT_V3) == GROUP_VALUE_V3


def test_group_metadata_value_v3_embeds_the_consumer_protocol():
    key, payload = format_offsets_record(GROUP_KEY, GROUP_VALUE_V3, 0)
    assert key == '{"type":"2","data":{"group":"console-consumer-14897"}}'
    assert payload == GROUP_JSON_V3


def test_consumer_protocol_golden():
    assert decode_consumer_protocol_subscription(SUBSCRIPTION_V3) == (
        3, {"Topics": ["test"], "UserData": None, "OwnedPartitions": [], "GenerationId": -1, "RackId": None})
    assert decode_consumer_protocol_assignment(ASSIGNMENT_V3) == (
        3, {"AssignedPartitions": [{"Topic": "test", "Partitions": [0, 1]}], "UserData": None})
    assert encode_consumer_protocol_subscription({"Topics": ["test"]}) == SUBSCRIPTION_V3
    assert encode_consumer_protocol_assignment({"AssignedPartitions": [{"Topic": "test", "Partitions": [0, 1]}]}) == ASSIGNMENT_V3


def member_json(value: bytes) -> str:
    payload = format_offsets_record(GROUP_KEY, value, 0)[1]
    return payload[payload.index('"members":'):]


def group_value(protocol_type: str, subscription: bytes, assignment: bytes, version: int = 3) -> bytes:
    head = i16(version) + s16(protocol_type) + i32(4) + s16(None) + s16(None)
    if version >= 2:
        head += i64(-1)
    member = s16("m")
    if version >= 3:
        member += s16("static-1")
    member += s16("c") + s16("/h")
    if version >= 1:
        member += i32(10)
    member += i32(20) + b32(subscription) + b32(assignment)
    return head + i32(1) + member


def test_group_metadata_field_presence_by_version():
    assert member_json(group_value("consumer", b"", b"", 0)) == (
        '"members":[{"memberId":"m","clientId":"c","clientHost":"/h","sessionTimeout":20,'
        '"subscription":"","assignment":""}]}}')
    assert format_offsets_record(GROUP_KEY, group_value("x", b"", b"", 0), 0)[1].startswith(
        '{"version":"0","data":{"protocolType":"x","generation":4,"protocol":null,"leader":null,"members":')
    assert '"rebalanceTimeout":10' in member_json(group_value("consumer", b"", b"", 1))
    assert '"currentStateTimestamp":-1' in format_offsets_record(GROUP_KEY, group_value("c", b"", b"", 2), 0)[1]
    assert '"groupInstanceId":"static-1"' in member_json(group_value("consumer", b"", b"", 3))


def test_subscription_versions_choose_their_fields():
    v0 = i16(0) + i32(1) + s16("a") + b32(b"\x01\x02")
    v1 = i16(1) + i32(1) + s16("a") + b32(None) + i32(1) + s16("a") + i32(1) + i32(3)
    assert '"subscription":{"topics":["a"],"userData":"AQI="}' in member_json(group_value("consumer", v0, b""))
    assert '"subscription":{"topics":["a"],"userData":null,"ownedPartitions":[{"topic":"a","partitions":[3]}]}' in (
        member_json(group_value("consumer", v1, b"")))


def test_undecodable_or_foreign_protocol_bytes_stay_base64():
    junk = b"\x00\x03\x00\x00\x00\x09"  # version 3, 9 topics, nothing else
    text = member_json(group_value("consumer", junk, b"\x00"))
    assert f'"subscription":"{base64.b64encode(junk).decode()}","assignment":"AA=="' in text
    connect = member_json(group_value("connect", SUBSCRIPTION_V3, ASSIGNMENT_V3))
    assert f'"subscription":"{base64.b64encode(SUBSCRIPTION_V3).decode()}"' in connect


def test_subscription_version_above_3_like_kafka_39():
    # Read with the v3 layout; the inline OwnedPartitions struct refuses version 4, so bytes
    # that carry owned partitions stay base64.
    without_owned = i16(4) + i32(0) + b32(None) + i32(0) + i32(2) + s16("r")
    assert '"subscription":{"topics":[],"userData":null,"ownedPartitions":[],"generationId":2,"rackId":"r"}' in (
        member_json(group_value("consumer", without_owned, b"")))
    with_owned = i16(4) + i32(0) + b32(None) + i32(1) + s16("a") + i32(0) + i32(2) + s16("r")
    assert f'"subscription":"{base64.b64encode(with_owned).decode()}"' in member_json(group_value("consumer", with_owned, b""))


def test_jackson_escaping_in_output():
    key = i16(2) + s16('g"\\\x01é')
    assert format_offsets_record(key, None, 0)[0] == '{"type":"2","data":{"group":"g\\"\\\\\\u0001é"}}'


# -- record-level outcomes -------------------------------------------------------------------------


def test_tombstone():
    assert format_offsets_record(GROUP_KEY, None, 10) == ('{"type":"2","data":{"group":"console-consumer-14897"}}', "<DELETE>")


def test_unknown_record_type():
    assert format_offsets_record(i16(9) + s16("x"), b"\x00\x00", 12) == ("Unknown record type 9 at offset 12, skipping.", None)
    assert format_offsets_record(i16(-1), None, 13) == ("Unknown record type -1 at offset 13, skipping.", None)
    assert decode_offsets_key(i16(9)) == (UNKNOWN_RECORD_TYPE, 9, None)


@pytest.mark.parametrize("key,value,message", [
    (b"", None, "Could not read version from key's buffer."),
    (b"\x00", None, "Could not read version from key's buffer."),
    (PUBLISHED_KEY, b"\x00", "Could not read version from value's buffer."),
    (i16(1) + s16("g"), None, "Could not read record with version 1 from key's buffer due to: null."),
    (i16(2) + i16(5) + b"ab", None,
     "Could not read record with version 2 from key's buffer due to: "
     "Error reading byte array of 5 byte(s): only 2 byte(s) available."),
    (PUBLISHED_KEY, i16(3) + i64(1), "Could not read record with version 3 from value's buffer due to: null."),
    (PUBLISHED_KEY, i16(0) + i64(1) + i16(-1) + i64(2),
     "Could not read record with version 0 from value's buffer due to: non-nullable field metadata was serialized as null."),
])
def test_errors_are_reported_on_the_key_line(key, value, message):
    assert format_offsets_record(key, value, 77) == (f"Error at offset 77, skipping. {message}", None)


def test_missing_key_stops_the_dump():
    with pytest.raises(CorruptRecordError, match="Failed to decode message at offset 5 using offset topic decoder "
                                                 r"\(message had a missing key\)"):
        format_offsets_record(None, PUBLISHED_VALUE, 5)


def test_accepts_memoryview_and_bytearray():
    assert format_offsets_record(memoryview(PUBLISHED_KEY), bytearray(PUBLISHED_VALUE), 0) == (
        format_offsets_record(PUBLISHED_KEY, PUBLISHED_VALUE, 0))


# -- KIP-848 consumer group records (types 3-8), decoded by Kafka 3.9 -----------------------------------


def test_consumer_group_metadata_record():
    key = i16(3) + s16("grp")
    value = i16(0) + i32(5) + b"\x00"
    assert format_offsets_record(key, value, 0) == ('{"type":"3","data":{"groupId":"grp"}}',
                                                    '{"version":"0","data":{"epoch":5}}')


def test_consumer_group_member_metadata_with_tagged_classic_metadata():
    classic = i32(45000) + b"\x02" + compact("range") + b"\x03" + b"\x00\x01" + b"\x00" + b"\x00"
    value = (
        i16(0) + b"\x00" + compact("rack") + compact("cid") + compact("/h") + b"\x02" + compact("t")
        + b"\x00" + i32(300000) + compact("uniform")
        + b"\x01" + b"\x00" + bytes([len(classic) + 1]) + b"\x01" + classic
    )
    key = i16(5) + s16("grp") + s16("mem")
    version, data = decode_offsets_value(5, value)
    assert data["ClassicMemberMetadata"] == {
        "SessionTimeoutMs": 45000, "SupportedProtocols": [{"Name": "range", "Metadata": b"\x00\x01"}]}
    assert encode_offsets_value(5, version, data) == value
    assert format_offsets_record(key, value, 0) == (
        '{"type":"5","data":{"groupId":"grp","memberId":"mem"}}',
        '{"version":"0","data":{"instanceId":null,"rackId":"rack","clientId":"cid","clientHost":"/h",'
        '"subscribedTopicNames":["t"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":300000,'
        '"serverAssignor":"uniform","classicMemberMetadata":{"sessionTimeoutMs":45000,'
        '"supportedProtocols":[{"name":"range","metadata":"AAE="}]}}}',
    )


def test_consumer_group_target_assignment_member_uuid_json():
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    value = i16(0) + b"\x02" + topic_id.bytes + b"\x03" + i32(0) + i32(1) + b"\x00" + b"\x00"
    assert format_offsets_record(i16(7) + s16("g") + s16("m"), value, 0)[1] == (
        '{"version":"0","data":{"topicPartitions":[{"topicId":"AAECAwQFBgcICQoLDA0ODw","partitions":[0,1]}]}}')


# -- __transaction_state ---------------------------------------------------------------------------------

TXN_KEY = i16(0) + s16("txn-1")


def txn_value(status: int, partitions: list[tuple[str, list[int]]] | None, version: int = 0) -> bytes:
    body = i64(1000) + i16(3) + i32(60000) + bytes([status])
    if version == 0:
        if partitions is None:
            body += i32(-1)
        else:
            body += i32(len(partitions))
            for topic, ids in partitions:
                body += s16(topic) + i32(len(ids)) + b"".join(i32(p) for p in ids)
        return i16(0) + body + i64(1700000000123) + i64(1700000000001)
    assert partitions is not None
    body += bytes([len(partitions) + 1])
    for topic, ids in partitions:
        body += compact(topic) + bytes([len(ids) + 1]) + b"".join(i32(p) for p in ids) + b"\x00"
    return i16(1) + body + i64(1700000000123) + i64(1700000000001) + b"\x00"


def test_transaction_log_golden():
    assert decode_transaction_log_key(TXN_KEY) == (0, {"TransactionalId": "txn-1"})
    assert encode_transaction_log_key("txn-1") == TXN_KEY
    value = txn_value(1, [("t", [0])])
    decoded = {
        "ProducerId": 1000, "ProducerEpoch": 3, "TransactionTimeoutMs": 60000, "TransactionStatus": 1,
        "TransactionPartitions": [{"Topic": "t", "PartitionIds": [0]}],
        "TransactionLastUpdateTimestampMs": 1700000000123, "TransactionStartTimestampMs": 1700000000001,
    }
    assert decode_transaction_log_value(value) == (0, decoded)
    assert encode_transaction_log_value(decoded) == value
    assert decode_transaction_log_value(txn_value(1, [("t", [0])], version=1)) == (1, decoded)
    assert encode_transaction_log_value(decoded, 1) == txn_value(1, [("t", [0])], version=1)


def test_transaction_log_line():
    assert format_transaction_log_record(TXN_KEY, txn_value(1, [("t", [0])]), 0) == (
        "transaction_metadata::transactionalId=txn-1",
        "producerId:1000,producerEpoch:3,state=Ongoing,partitions=[t-0],"
        "txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000",
    )


@pytest.mark.parametrize("status,state", list(enumerate(
    ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"])))
def test_transaction_states(status, state):
    assert f",state={state}," in format_transaction_log_record(TXN_KEY, txn_value(status, []), 0)[1]


def test_empty_state_ignores_partitions():
    payload = format_transaction_log_record(TXN_KEY, txn_value(0, [("t", [0, 1])]), 0)[1]
    assert ",state=Empty,partitions=[]," in payload
    assert ",state=Empty,partitions=[]," in format_transaction_log_record(TXN_KEY, txn_value(0, None), 0)[1]


def test_transaction_tombstone_and_unknown_key_version():
    assert format_transaction_log_record(TXN_KEY, None, 0) == ("transaction_metadata::transactionalId=txn-1", "<DELETE>")
    assert format_transaction_log_record(i16(1) + s16("x"), b"\x00", 0) == ("unknown::version=1", None)


@pytest.mark.parametrize("key,value", [
    (None, None),
    (b"\x00", None),
    (i16(0) + s16("txn")[:3], None),
    (TXN_KEY, i16(2) + b"\x00" * 40),  # unknown value version
    (TXN_KEY, txn_value(8, [])),  # unknown state id
    (TXN_KEY, txn_value(1, None)),  # partitions null outside Empty
    (TXN_KEY, txn_value(1, [("t", [0])])[:-3]),
])
def test_transaction_log_errors_stop_the_dump(key, value):
    with pytest.raises(CorruptRecordError, match="at offset 4"):
        format_transaction_log_record(key, value, 4)


# Expected orders derived by hand from Java's TopicPartition.hashCode (31 * (31 + p) +
# topic.hashCode(); "t".hashCode() = 116, so p -> 1077 + 31 p, small enough that Scala's improved
# hash equals it) and Scala 2.13's mutable.HashSet (bucket = hash & (length - 1), buckets in index
# order; 16 slots until 12 elements or a size hint asks for more).


def partitions(status_groups: list[tuple[str, list[int]]]) -> str:
    payload = format_transaction_log_record(TXN_KEY, txn_value(1, status_groups), 0)[1]
    return payload[payload.index("partitions=") + len("partitions="):payload.index(",txnLastUpdate")]


def test_partitions_print_in_hash_set_order():
    # buckets: t-0 -> 1077 & 15 = 5, t-1 -> 4, t-2 -> 3
    assert partitions([("t", [0, 1, 2])]) == "[t-2,t-1,t-0]"
    assert partitions([("t", [0, 1, 2, 3, 4])]) == "[t-4,t-3,t-2,t-1,t-0]"


def test_partitions_order_when_the_table_has_16_slots():
    # 11 single-partition groups: no growth; t-6 wraps to bucket 15
    assert partitions([("t", [p]) for p in range(11)]) == "[t-5,t-4,t-3,t-2,t-1,t-0,t-10,t-9,t-8,t-7,t-6]"


def test_partitions_order_after_growing_to_32_slots():
    # the 12th add grows the table (size + 1 >= 12); with 32 slots t-p sits in bucket 21 - p
    expected = "[" + ",".join(f"t-{p}" for p in range(11, -1, -1)) + "]"
    assert partitions([("t", [p]) for p in range(12)]) == expected
    # one group of 13: the size hint (14 / 0.75 -> 18 -> 32 slots) grows the table up front
    assert partitions([("t", list(range(13)))]) == "[" + ",".join(f"t-{p}" for p in range(12, -1, -1)) + "]"


def test_partitions_of_several_topics():
    # "ab".hashCode() = 97 * 31 + 98 = 3105; ab-0 -> 961 + 3105 = 4066 -> bucket 2; t-0 -> bucket 5
    assert partitions([("t", [0]), ("ab", [0])]) == "[ab-0,t-0]"
    assert scala_mutable_hash_set_order([[("t", 0), ("t", 0)], [("t", 0)]]) == [("t", 0)]


# -- expected lines published in Kafka 3.9's DumpLogSegmentsTest.testOffsetsMessageParser -------------
# (the records there are built with Kafka's serde; here the same records are packed by hand)


def compact_bytes(data: bytes) -> bytes:
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


def test_kafka_39_test_consumer_group_metadata_line():
    assert format_offsets_record(i16(3) + s16("group"), i16(0) + i32(10) + b"\x00", 0) == (
        '{"type":"3","data":{"groupId":"group"}}', '{"version":"0","data":{"epoch":10}}')
    assert format_offsets_record(i16(3) + s16("group"), None, 0) == ('{"type":"3","data":{"groupId":"group"}}', "<DELETE>")


def kafka_test_group_value(subscription: bytes, assignment: bytes) -> bytes:
    """GroupMetadataValue v4 (flexible) with the member of Kafka's test."""
    return (
        i16(4) + compact("consumer") + i32(10) + compact("range") + compact("member") + i64(-1)
        + b"\x02" + compact("member") + compact("instance") + compact("client") + compact("host")
        + i32(1000) + i32(100) + compact_bytes(subscription) + compact_bytes(assignment) + b"\x00"
        + b"\x00"
    )


KAFKA_TEST_MEMBER = (
    '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
    '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
    '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
    '"rebalanceTimeout":1000,"sessionTimeout":100,'
)


def test_kafka_39_test_group_metadata_v4_with_consumer_protocol():
    subscription = (i16(3) + i32(1) + s16("foo") + b32(None) + i32(1) + s16("foo") + i32(1) + i32(0)
                    + i32(0) + s16("rack"))
    assignment = i16(3) + i32(1) + s16("foo") + i32(1) + i32(0) + b32(None)
    assert format_offsets_record(i16(2) + s16("group"), kafka_test_group_value(subscription, assignment), 0) == (
        '{"type":"2","data":{"group":"group"}}',
        KAFKA_TEST_MEMBER + '"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}',
    )


def test_kafka_39_test_group_metadata_v4_with_malformed_consumer_protocol():
    value = kafka_test_group_value(b"Subscription", b"Assignment")
    assert format_offsets_record(i16(2) + s16("group"), value, 0)[1] == (
        KAFKA_TEST_MEMBER + '"subscription":"U3Vic2NyaXB0aW9u","assignment":"QXNzaWdubWVudA=="}]}}')


def test_kafka_39_test_unknown_record_type():
    assert format_offsets_record(i16(32767) + s16("group"), i16(0) + i32(10) + b"\x00", 0) == (
        "Unknown record type 32767 at offset 0, skipping.", None)


def test_kafka_39_test_value_of_the_wrong_type():
    # A default ConsumerGroupMemberMetadataValue v0 (empty strings, rebalance timeout -1) under a
    # type-3 key is read as ConsumerGroupMetadataValue: epoch, then a bogus tagged field.
    member_value = i16(0) + b"\x01" * 6 + i32(-1) + b"\x01" + b"\x00"
    assert format_offsets_record(i16(3) + s16("group"), member_value, 0) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
        "Error reading byte array of 536870911 byte(s): only 1 byte(s) available.",
        None,
    )
