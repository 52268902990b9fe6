"""Tests for kcli.errors: the Kafka error-code table and the exception types that carry codes."""

from __future__ import annotations

import pytest

from kcli.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    KcliError,
    OffsetOutOfRangeError,
)

HIGHEST_KAFKA_39_CODE = 127


def test_codes_are_unique_and_contiguous_from_minus_one() -> None:
    codes = [member.value for member in ErrorCode]
    assert len(codes) == len(set(codes))
    assert sorted(codes) == list(range(-1, HIGHEST_KAFKA_39_CODE + 1))


def test_no_member_is_an_alias_of_another() -> None:
    assert len(ErrorCode.__members__) == len(list(ErrorCode))


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [
        (-1, "UNKNOWN_SERVER_ERROR", False),
        (0, "NONE", False),
        (1, "OFFSET_OUT_OF_RANGE", False),
        (2, "CORRUPT_MESSAGE", True),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (6, "NOT_LEADER_OR_FOLLOWER", True),
        (7, "REQUEST_TIMED_OUT", True),
        (10, "MESSAGE_TOO_LARGE", False),
        (14, "COORDINATOR_LOAD_IN_PROGRESS", True),
        (17, "INVALID_TOPIC_EXCEPTION", False),
        (29, "TOPIC_AUTHORIZATION_FAILED", False),
        (35, "UNSUPPORTED_VERSION", False),
        (36, "TOPIC_ALREADY_EXISTS", False),
        (37, "INVALID_PARTITIONS", False),
        (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False),
        (51, "CONCURRENT_TRANSACTIONS", True),
        (56, "KAFKA_STORAGE_ERROR", True),
        (82, "FENCED_INSTANCE_ID", False),
        (87, "INVALID_RECORD", False),
        (89, "THROTTLING_QUOTA_EXCEEDED", True),
        (100, "UNKNOWN_TOPIC_ID", True),
        (127, "VOTER_NOT_FOUND", False),
    ],
)
def test_spot_checks_against_kafka(code: int, name: str, retriable: bool) -> None:
    member = ErrorCode(code)
    assert member.name == name
    assert member.retriable is retriable


def test_every_code_but_none_has_a_one_line_message() -> None:
    assert ErrorCode.NONE.message == ""
    for member in ErrorCode:
        if member is ErrorCode.NONE:
            continue
        assert member.message.strip(), member.name
        assert "\n" not in member.message, member.name


def test_members_compare_as_their_wire_integers() -> None:
    assert ErrorCode.TOPIC_ALREADY_EXISTS == 36
    assert int(ErrorCode.UNKNOWN_SERVER_ERROR) == -1


@pytest.mark.parametrize("code", [3, 36, 87, 100, -1, 0])
def test_for_code_returns_the_matching_member(code: int) -> None:
    assert ErrorCode.for_code(code) is ErrorCode(code)


@pytest.mark.parametrize("code", [-2, HIGHEST_KAFKA_39_CODE + 1, 9999])
def test_for_code_maps_unknown_codes_to_unknown_server_error(code: int) -> None:
    assert ErrorCode.for_code(code) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_kafka_error_uses_the_default_message_when_none_is_given() -> None:
    error = KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS)
    assert error.error_code is ErrorCode.TOPIC_ALREADY_EXISTS
    assert str(error) == ErrorCode.TOPIC_ALREADY_EXISTS.message


def test_kafka_error_keeps_an_explicit_message() -> None:
    error = KafkaError(ErrorCode.INVALID_PARTITIONS, "partitions must be at least 1")
    assert str(error) == "partitions must be at least 1"
    assert isinstance(error, KcliError)


def test_exception_classes_carry_their_codes() -> None:
    assert KcliError.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert CorruptRecordError("bad crc", position=12).error_code is ErrorCode.CORRUPT_MESSAGE
    assert InvalidRecordError.error_code is ErrorCode.INVALID_RECORD
    assert OffsetOutOfRangeError.error_code is ErrorCode.OFFSET_OUT_OF_RANGE


@pytest.mark.parametrize(
    ("code", "java_class"),
    [
        # Errors.java (Kafka 3.9): the name's camel case where it holds, the exceptions where not.
        (ErrorCode.OFFSET_OUT_OF_RANGE, "org.apache.kafka.common.errors.OffsetOutOfRangeException"),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, "org.apache.kafka.common.errors.NotLeaderOrFollowerException"),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"),
        (ErrorCode.KAFKA_STORAGE_ERROR, "org.apache.kafka.common.errors.KafkaStorageException"),
        (ErrorCode.REQUEST_TIMED_OUT, "org.apache.kafka.common.errors.TimeoutException"),
        (ErrorCode.CORRUPT_MESSAGE, "org.apache.kafka.common.errors.CorruptRecordException"),
        (ErrorCode.OFFSET_METADATA_TOO_LARGE, "org.apache.kafka.common.errors.OffsetMetadataTooLarge"),
        (ErrorCode.UNKNOWN_SERVER_ERROR, "org.apache.kafka.common.errors.UnknownServerException"),
        (ErrorCode.INVALID_RECORD, "org.apache.kafka.common.InvalidRecordException"),
    ],
)
def test_java_exception_class_of_a_code(code: ErrorCode, java_class: str) -> None:
    from kcli.errors import java_exception

    assert java_exception(code) == java_class
    assert KafkaError(code).java_class == java_class
