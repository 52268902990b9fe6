"""The console consumer's formatters against Kafka 3.9's own formatter tests and sources.

Expected strings come from Kafka 3.9's DefaultMessageFormatterTest, OffsetMessageFormatterTest,
GroupMetadataMessageFormatterTest and TransactionLogMessageFormatterTest (package
org.apache.kafka.tools.consumer), and for the pre-3.8 formatters from the Scala toString templates
(OffsetAndMetadata, GroupMetadata, MemberMetadata, TransactionMetadata).
"""

from __future__ import annotations

import struct

import pytest

from kcli.client.fetcher import ConsumerRecord
from kcli.errors import UsageError
from kcli.protocol import coordinator_records as cr
from kcli.tools.message_formatters import (
    DefaultMessageFormatter,
    FormatterError,
    GroupMetadataMessageFormatter,
    LegacyGroupMetadataMessageFormatter,
    LegacyOffsetsMessageFormatter,
    LegacyTransactionLogMessageFormatter,
    LoggingMessageFormatter,
    NoOpMessageFormatter,
    OffsetsMessageFormatter,
    TransactionLogMessageFormatter,
    formatter_for,
)


def Record(topic, partition, offset, timestamp, timestamp_type, key, value, headers=()):  # noqa: N802
    """A consumer record, as the formatters get them from the consumer."""
    return ConsumerRecord(topic, partition, offset, timestamp, timestamp_type, key, value, list(headers), -1)

NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1


def written(formatter, record) -> bytes:
    out = bytearray()
    formatter.write_to(record, out)
    return bytes(out)


# -- DefaultMessageFormatter ------------------------------------------------------------------------


def test_default_formatter_as_kafkas_test_builds_up_its_properties():
    record = Record("topic", 0, 123, -1, NO_TIMESTAMP, b"key", b"value")
    configs: dict[str, str] = {}
    assert written(DefaultMessageFormatter(configs), record) == b"value\n"
    configs["print.key"] = "true"
    assert written(DefaultMessageFormatter(configs), record) == b"key\tvalue\n"
    configs["print.partition"] = "true"
    assert written(DefaultMessageFormatter(configs), record) == b"Partition:0\tkey\tvalue\n"
    configs["print.timestamp"] = "true"
    assert written(DefaultMessageFormatter(configs), record) == b"NO_TIMESTAMP\tPartition:0\tkey\tvalue\n"
    configs["print.offset"] = "true"
    assert written(DefaultMessageFormatter(configs), record) == b"NO_TIMESTAMP\tPartition:0\tOffset:123\tkey\tvalue\n"
    configs["print.headers"] = "true"
    assert written(DefaultMessageFormatter(configs), record) == b"NO_TIMESTAMP\tPartition:0\tOffset:123\tNO_HEADERS\tkey\tvalue\n"

    record = Record("topic", 0, 123, 123, CREATE_TIME, b"key", b"value", [("h1", b"v1"), ("h2", b"v2")])
    assert written(DefaultMessageFormatter(configs), record) == b"CreateTime:123\tPartition:0\tOffset:123\th1:v1,h2:v2\tkey\tvalue\n"
    configs["print.value"] = "false"
    assert written(DefaultMessageFormatter(configs), record) == b"CreateTime:123\tPartition:0\tOffset:123\th1:v1,h2:v2\tkey\n"
    configs["key.separator"] = "<sep>"
    assert written(DefaultMessageFormatter(configs), record) == b"CreateTime:123<sep>Partition:0<sep>Offset:123<sep>h1:v1,h2:v2<sep>key\n"
    configs["line.separator"] = "<end>"
    assert written(DefaultMessageFormatter(configs), record) == b"CreateTime:123<sep>Partition:0<sep>Offset:123<sep>h1:v1,h2:v2<sep>key<end>"
    configs["headers.separator"] = "|"
    assert written(DefaultMessageFormatter(configs), record) == b"CreateTime:123<sep>Partition:0<sep>Offset:123<sep>h1:v1|h2:v2<sep>key<end>"

    record = Record("topic", 0, 123, 123, CREATE_TIME, b"key", None, [("h1", b"v1"), ("h2", b"v2")])
    configs["print.value"] = "true"
    configs["null.literal"] = "<null>"
    assert written(DefaultMessageFormatter(configs), record) == b"CreateTime:123<sep>Partition:0<sep>Offset:123<sep>h1:v1|h2:v2<sep>key<sep><null><end>"


def test_default_formatter_details():
    record = Record("t", 3, 7, 1700000000000, LOG_APPEND_TIME, None, b"\xff\xfe raw", [("h", None)])
    # Bytes go out as they are; nulls become the null literal, in keys and header values alike.
    assert written(DefaultMessageFormatter({"print.key": "true"}), record) == b"null\t\xff\xfe raw\n"
    assert written(DefaultMessageFormatter({"print.headers": "true", "print.value": "false"}), record) == b"h:null\n"
    assert written(DefaultMessageFormatter({"print.timestamp": " TRUE ", "print.value": "false"}), record) == b"LogAppendTime:1700000000000\n"
    # Anything but "true" is false; nothing to print prints nothing.
    assert written(DefaultMessageFormatter({"print.value": "yes"}), record) == b""


def test_string_deserializer_and_its_encoding():
    record = Record("t", 0, 0, 0, CREATE_TIME, "ключ".encode("utf-16-be"), b"ok\xff", [])
    string = "org.apache.kafka.common.serialization.StringDeserializer"
    assert written(DefaultMessageFormatter({"value.deserializer": string}), record) == "ok\ufffd\n".encode()
    formatter = DefaultMessageFormatter({
        "print.key": "true", "print.value": "false", "key.deserializer": string,
        "key.deserializer.key.deserializer.encoding": "UTF-16BE",
    })
    assert written(formatter, record) == "ключ\n".encode()


def test_number_deserializers_read_big_endian_and_see_the_null_literal():
    ints = "org.apache.kafka.common.serialization.IntegerDeserializer"
    record = Record("t", 0, 0, 0, CREATE_TIME, None, struct.pack(">i", -5), [])
    assert written(DefaultMessageFormatter({"value.deserializer": ints}), record) == b"-5\n"
    # Kafka hands the null literal's bytes to the deserializer: "null" is four bytes.
    record = Record("t", 0, 0, 0, CREATE_TIME, None, None, [])
    assert written(DefaultMessageFormatter({"value.deserializer": ints}), record) == b"1853189228\n"
    longs = "org.apache.kafka.common.serialization.LongDeserializer"
    record = Record("t", 0, 0, 0, CREATE_TIME, None, struct.pack(">q", 2**40), [])
    assert written(DefaultMessageFormatter({"value.deserializer": longs}), record) == b"1099511627776\n"
    doubles = "org.apache.kafka.common.serialization.DoubleDeserializer"
    record = Record("t", 0, 0, 0, CREATE_TIME, None, struct.pack(">d", 1e-4), [])
    assert written(DefaultMessageFormatter({"value.deserializer": doubles}), record) == b"1.0E-4\n"
    record = Record("t", 0, 0, 0, CREATE_TIME, None, b"abc", [])
    with pytest.raises(FormatterError) as caught:
        written(DefaultMessageFormatter({"value.deserializer": ints}), record)
    assert caught.value.java_text() == "org.apache.kafka.common.errors.SerializationException: Size of data received by IntegerDeserializer is not 4"


def test_other_deserializers():
    def text(name: str, value: bytes) -> bytes:
        record = Record("t", 0, 0, 0, CREATE_TIME, None, value, [])
        return written(DefaultMessageFormatter({"value.deserializer": "org.apache.kafka.common.serialization." + name}), record)

    assert text("BytesDeserializer", b"a\\b\x00\x7f~") == b"a\\x5Cb\\x00\\x7F~\n"
    assert text("UUIDDeserializer", b"123E4567-E89B-12D3-A456-426614174000") == b"123e4567-e89b-12d3-a456-426614174000\n"
    assert text("BooleanDeserializer", b"\x01") == b"true\n"
    assert text("ShortDeserializer", b"\xff\xfe") == b"-2\n"
    assert text("FloatDeserializer", struct.pack(">f", 0.1)) == b"0.1\n"
    with pytest.raises(FormatterError, match="Error parsing data into UUID"):
        text("UUIDDeserializer", b"nope")
    with pytest.raises(FormatterError, match="Unexpected byte received by BooleanDeserializer: -1"):
        text("BooleanDeserializer", b"\xff")
    with pytest.raises(FormatterError, match="Data should be null for a VoidDeserializer."):
        text("VoidDeserializer", b"x")


def test_unsupported_deserializer_is_a_usage_error():
    with pytest.raises(UsageError, match="com.example.AvroDeserializer is not supported"):
        DefaultMessageFormatter({"key.deserializer": "com.example.AvroDeserializer"})


def test_logging_formatter_logs_kafkas_line():
    lines: list[str] = []
    formatter = LoggingMessageFormatter({}, lines.append)
    assert written(formatter, Record("t", 0, 0, 5, CREATE_TIME, b"k", b"v", [])) == b"v\n"
    assert written(formatter, Record("t", 0, 0, -1, NO_TIMESTAMP, None, None, [])) == b"null\n"
    assert lines[0].endswith(" INFO CreateTime:5, key:k, value:v (org.apache.kafka.tools.consumer.LoggingMessageFormatter)")
    assert lines[1].endswith(" INFO key:null value:null (org.apache.kafka.tools.consumer.LoggingMessageFormatter)")
    assert lines[0].startswith("[") and lines[0][24] == "]"


def test_noop_formatter():
    assert written(NoOpMessageFormatter(), Record("t", 0, 0, 0, CREATE_TIME, b"k", b"v", [])) == b""


def test_formatter_names_and_deprecation_warnings():
    warnings: list[str] = []
    assert isinstance(formatter_for("kafka.tools.DefaultMessageFormatter", {}, warn=warnings.append, log=print), DefaultMessageFormatter)
    assert isinstance(formatter_for("kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter", {}, warn=warnings.append, log=print),
                      LegacyOffsetsMessageFormatter)
    assert warnings == [
        "WARNING: kafka.tools.DefaultMessageFormatter is deprecated and will be removed in the next major release. "
        "Please use org.apache.kafka.tools.consumer.DefaultMessageFormatter instead",
        "WARNING: kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter is deprecated and will be removed "
        "in the next major release. Please use org.apache.kafka.tools.consumer.OffsetsMessageFormatter instead",
    ]
    for name, kind in (("org.apache.kafka.tools.consumer.OffsetsMessageFormatter", OffsetsMessageFormatter),
                       ("org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter", GroupMetadataMessageFormatter),
                       ("org.apache.kafka.tools.consumer.TransactionLogMessageFormatter", TransactionLogMessageFormatter),
                       ("org.apache.kafka.tools.consumer.NoOpMessageFormatter", NoOpMessageFormatter),
                       ("kafka.tools.LoggingMessageFormatter", LoggingMessageFormatter)):
        assert isinstance(formatter_for(name, {}, warn=warnings.append, log=print), kind)
    with pytest.raises(UsageError, match="Unknown formatter class 'kafka.tools.ChecksumMessageFormatter'"):
        formatter_for("kafka.tools.ChecksumMessageFormatter", {}, warn=warnings.append, log=print)


# -- the coordinator formatters ---------------------------------------------------------------------

OFFSET_COMMIT_KEY = {"Group": "group-id", "Topic": "foo", "Partition": 1}
OFFSET_COMMIT_VALUE = {"Offset": 100, "LeaderEpoch": 10, "Metadata": "metadata", "CommitTimestamp": 1234, "ExpireTimestamp": -1}
MEMBER = {"MemberId": "member-1", "ClientId": "client-1", "ClientHost": "host-1", "RebalanceTimeout": 1000,
          "SessionTimeout": 1500, "GroupInstanceId": "group-instance-1", "Subscription": b"\x00\x01", "Assignment": b"\x01\x02"}
GROUP_METADATA_VALUE = {"ProtocolType": "consumer", "Generation": 1, "Protocol": "range", "Leader": "leader",
                        "Members": [MEMBER], "CurrentStateTimestamp": 1234}
TXN_LOG_VALUE = {"ProducerId": 100, "ProducerEpoch": 50, "TransactionStatus": 4, "TransactionStartTimestampMs": 750,
                 "TransactionLastUpdateTimestampMs": 1000, "TransactionTimeoutMs": 500, "TransactionPartitions": []}


def offset_key(version: int) -> bytes:
    if version in (0, 1):
        return cr.encode_offsets_key(version, OFFSET_COMMIT_KEY)
    return struct.pack(">h", version) + cr.encode_offsets_key(1, OFFSET_COMMIT_KEY)[2:]


def offset_value(version: int, value=OFFSET_COMMIT_VALUE) -> bytes:
    if version <= 4:
        return cr.encode_offsets_value(1, version, value)
    return struct.pack(">h", version) + cr.encode_offsets_value(1, 4, value)[2:]


def group_key(version: int = 2) -> bytes:
    return struct.pack(">h", version) + cr.encode_group_metadata_key("group-id")[2:]


def group_value(version: int, value=GROUP_METADATA_VALUE) -> bytes:
    if version <= 4:
        return cr.encode_group_metadata_value(value, version)
    return struct.pack(">h", version) + cr.encode_group_metadata_value(value, 4)[2:]


def txn_key(version: int = 0) -> bytes:
    return struct.pack(">h", version) + cr.encode_transaction_log_key("TXNID")[2:]


def txn_value(version: int) -> bytes:
    if version <= 1:
        return cr.encode_transaction_log_value(TXN_LOG_VALUE, version)
    return struct.pack(">h", version) + cr.encode_transaction_log_value(TXN_LOG_VALUE, 1)[2:]


def formatted(formatter, key: bytes | None, value: bytes | None) -> str:
    return written(formatter, Record("TOPIC", 0, 0, 0, CREATE_TIME, key, value, [])).decode()


OFFSET_KEY_JSON = '{"version":0,"data":{"group":"group-id","topic":"foo","partition":1}}'


@pytest.mark.parametrize("key, value, expected", [
    (offset_key(10), offset_value(10), '{"key":{"version":10,"data":"unknown"},"value":{"version":10,"data":"unknown"}}'),
    (offset_key(0), offset_value(0), '{"key":' + OFFSET_KEY_JSON + ',"value":{"version":0,"data":{"offset":100,"metadata":"metadata","commitTimestamp":1234}}}'),
    (offset_key(0), offset_value(1), '{"key":' + OFFSET_KEY_JSON + ',"value":{"version":1,"data":{"offset":100,"metadata":"metadata","commitTimestamp":1234,"expireTimestamp":-1}}}'),
    (offset_key(0), offset_value(2), '{"key":' + OFFSET_KEY_JSON + ',"value":{"version":2,"data":{"offset":100,"metadata":"metadata","commitTimestamp":1234}}}'),
    (offset_key(0), offset_value(3), '{"key":' + OFFSET_KEY_JSON + ',"value":{"version":3,"data":{"offset":100,"leaderEpoch":10,"metadata":"metadata","commitTimestamp":1234}}}'),
    (offset_key(0), offset_value(4), '{"key":' + OFFSET_KEY_JSON + ',"value":{"version":4,"data":{"offset":100,"leaderEpoch":10,"metadata":"metadata","commitTimestamp":1234}}}'),
    (offset_key(5), offset_value(4), '{"key":{"version":5,"data":"unknown"},"value":{"version":4,"data":{"offset":100,"leaderEpoch":10,"metadata":"metadata","commitTimestamp":1234}}}'),
    (offset_key(0), offset_value(5), '{"key":' + OFFSET_KEY_JSON + ',"value":{"version":5,"data":"unknown"}}'),
    (offset_key(0), None, '{"key":' + OFFSET_KEY_JSON + ',"value":null}'),
    (None, offset_value(1), '{"key":null,"value":{"version":1,"data":{"offset":100,"metadata":"metadata","commitTimestamp":1234,"expireTimestamp":-1}}}'),
    (None, None, '{"key":null,"value":null}'),
    (group_key(), group_value(2), ""),
])
def test_offsets_message_formatter(key, value, expected):
    assert formatted(OffsetsMessageFormatter(), key, value) == expected


GROUP_KEY_JSON = '{"version":2,"data":{"group":"group-id"}}'
MEMBER_V0 = '"memberId":"member-1","clientId":"client-1","clientHost":"host-1","sessionTimeout":1500,"subscription":"AAE=","assignment":"AQI="'
MEMBER_V1 = '"memberId":"member-1","clientId":"client-1","clientHost":"host-1","rebalanceTimeout":1000,"sessionTimeout":1500,"subscription":"AAE=","assignment":"AQI="'
MEMBER_V3 = ('"memberId":"member-1","groupInstanceId":"group-instance-1","clientId":"client-1","clientHost":"host-1",'
             '"rebalanceTimeout":1000,"sessionTimeout":1500,"subscription":"AAE=","assignment":"AQI="')
GROUP_HEAD = '"protocolType":"consumer","generation":1,"protocol":"range","leader":"leader"'


@pytest.mark.parametrize("key, value, expected", [
    (group_key(10), group_value(10), '{"key":{"version":10,"data":"unknown"},"value":{"version":10,"data":"unknown"}}'),
    (group_key(), group_value(0), '{"key":' + GROUP_KEY_JSON + ',"value":{"version":0,"data":{' + GROUP_HEAD + ',"members":[{' + MEMBER_V0 + '}]}}}'),
    (group_key(), group_value(1), '{"key":' + GROUP_KEY_JSON + ',"value":{"version":1,"data":{' + GROUP_HEAD + ',"members":[{' + MEMBER_V1 + '}]}}}'),
    (group_key(), group_value(2), '{"key":' + GROUP_KEY_JSON + ',"value":{"version":2,"data":{' + GROUP_HEAD + ',"currentStateTimestamp":1234,"members":[{' + MEMBER_V1 + '}]}}}'),
    (group_key(), group_value(3), '{"key":' + GROUP_KEY_JSON + ',"value":{"version":3,"data":{' + GROUP_HEAD + ',"currentStateTimestamp":1234,"members":[{' + MEMBER_V3 + '}]}}}'),
    (group_key(), group_value(4), '{"key":' + GROUP_KEY_JSON + ',"value":{"version":4,"data":{' + GROUP_HEAD + ',"currentStateTimestamp":1234,"members":[{' + MEMBER_V3 + '}]}}}'),
    (group_key(), None, '{"key":' + GROUP_KEY_JSON + ',"value":null}'),
    (None, group_value(4), '{"key":null,"value":{"version":4,"data":{' + GROUP_HEAD + ',"currentStateTimestamp":1234,"members":[{' + MEMBER_V3 + '}]}}}'),
    (None, None, '{"key":null,"value":null}'),
    (offset_key(0), offset_value(4), ""),
])
def test_group_metadata_message_formatter(key, value, expected):
    assert formatted(GroupMetadataMessageFormatter(), key, value) == expected


TXN_V1 = ('{"producerId":100,"producerEpoch":50,"transactionTimeoutMs":500,"transactionStatus":4,"transactionPartitions":[],'
          '"transactionLastUpdateTimestampMs":1000,"transactionStartTimestampMs":750}')


@pytest.mark.parametrize("key, value, expected", [
    (txn_key(10), txn_value(10), '{"key":{"version":10,"data":"unknown"},"value":{"version":10,"data":"unknown"}}'),
    (txn_key(), txn_value(1), '{"key":{"version":0,"data":{"transactionalId":"TXNID"}},"value":{"version":1,"data":' + TXN_V1 + '}}'),
    (txn_key(), txn_value(5), '{"key":{"version":0,"data":{"transactionalId":"TXNID"}},"value":{"version":5,"data":"unknown"}}'),
    (txn_key(1), txn_value(1), '{"key":{"version":1,"data":"unknown"},"value":{"version":1,"data":' + TXN_V1 + '}}'),
    (txn_key(), None, '{"key":{"version":0,"data":{"transactionalId":"TXNID"}},"value":null}'),
    (None, txn_value(1), '{"key":null,"value":{"version":1,"data":' + TXN_V1 + '}}'),
    (None, None, '{"key":null,"value":null}'),
])
def test_transaction_log_message_formatter(key, value, expected):
    assert formatted(TransactionLogMessageFormatter(), key, value) == expected


def test_truncated_coordinator_record_is_a_formatter_error():
    with pytest.raises(FormatterError):
        formatted(OffsetsMessageFormatter(), offset_key(1)[:6], None)
    with pytest.raises(FormatterError):
        formatted(OffsetsMessageFormatter(), b"\x00", None)


# -- the pre-3.8 Scala formatters Kafka 3.9 still runs under their old names -----------------------


def test_legacy_offsets_formatter():
    formatter = LegacyOffsetsMessageFormatter()
    assert formatted(formatter, offset_key(1), offset_value(3)) == (
        "[group-id,foo,1]::OffsetAndMetadata(offset=100, leaderEpoch=Optional[10], metadata=metadata, "
        "commitTimestamp=1234, expireTimestamp=None)\n")
    expiring = dict(OFFSET_COMMIT_VALUE, ExpireTimestamp=5000)
    assert formatted(formatter, offset_key(0), offset_value(1, expiring)) == (
        "[group-id,foo,1]::OffsetAndMetadata(offset=100, leaderEpoch=Optional.empty, metadata=metadata, "
        "commitTimestamp=1234, expireTimestamp=Some(5000))\n")
    assert formatted(formatter, offset_key(1), None) == "[group-id,foo,1]::NULL\n"
    # Group metadata, unknown keys and records without a key print nothing.
    assert formatted(formatter, group_key(), group_value(3)) == ""
    assert formatted(formatter, offset_key(9), offset_value(3)) == ""
    assert formatted(formatter, None, offset_value(3)) == ""
    with pytest.raises(FormatterError, match="Unknown offset message version: 7"):
        formatted(formatter, offset_key(1), offset_value(7))


def test_legacy_group_metadata_formatter():
    formatter = LegacyGroupMetadataMessageFormatter()
    assert formatted(formatter, group_key(), group_value(3)) == (
        "group-id::GroupMetadata(groupId=group-id, generation=1, protocolType=Some(consumer), currentState=Stable, "
        "members=HashMap(member-1 -> MemberMetadata(memberId=member-1, groupInstanceId=Some(group-instance-1), "
        "clientId=client-1, clientHost=host-1, sessionTimeoutMs=1500, rebalanceTimeoutMs=1000, "
        "supportedProtocols=List(range))))\n")
    empty = dict(GROUP_METADATA_VALUE, Members=[], ProtocolType="")
    assert formatted(formatter, group_key(), group_value(0, empty)) == (
        "group-id::GroupMetadata(groupId=group-id, generation=1, protocolType=None, currentState=Empty, members=HashMap())\n")
    # Version 0 has no rebalance timeout: the session timeout stands in for it.
    assert "rebalanceTimeoutMs=1500," in formatted(formatter, group_key(), group_value(0))
    assert formatted(formatter, group_key(), None) == "group-id::NULL\n"
    assert formatted(formatter, offset_key(1), offset_value(3)) == ""


def test_legacy_transaction_log_formatter():
    formatter = LegacyTransactionLogMessageFormatter()
    value = dict(TXN_LOG_VALUE, TransactionStatus=1, TransactionPartitions=[{"Topic": "t", "PartitionIds": [0]}])
    assert formatted(formatter, txn_key(), cr.encode_transaction_log_value(value, 0)) == (
        "TXNID::TransactionMetadata(transactionalId=TXNID, producerId=100, producerEpoch=50, txnTimeoutMs=500, "
        "state=Ongoing, pendingState=None, topicPartitions=HashSet(t-0), txnStartTimestamp=750, "
        "txnLastUpdateTimestamp=1000)\n")
    # An Empty transaction's partitions are not loaded.
    assert "topicPartitions=HashSet()," in formatted(formatter, txn_key(), cr.encode_transaction_log_value(dict(value, TransactionStatus=0), 0))
    assert formatted(formatter, txn_key(), None) == "TXNID::NULL\n"
    assert formatted(formatter, txn_key(3), None) == "unknown::version=3\n"
