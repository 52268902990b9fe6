"""Kafka's shared facts: TopicPartition, the internal topics, the Uuid text form."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcli.common import INTERNAL_TOPICS, TopicPartition, is_internal, uuid_from_string, uuid_to_string

# Kafka's Uuid string is URL-safe base64 of the 16 big-endian bytes, without padding.
TOPIC_ID = uuid.UUID("14f08ca5-fce1-4ea6-ad36-080b8179e54a")
TOPIC_ID_TEXT = "FPCMpfzhTqatNggLgXnlSg"


def test_uuid_string_golden():
    assert uuid_to_string(TOPIC_ID) == TOPIC_ID_TEXT
    assert uuid_from_string(TOPIC_ID_TEXT) == TOPIC_ID
    assert uuid_from_string(TOPIC_ID_TEXT + "==") == TOPIC_ID
    assert uuid_to_string(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_to_string(bytes([0xFB] * 16)) == "-_v7-_v7-_v7-_v7-_v7-w"


@given(st.builds(lambda n: uuid.UUID(int=n), st.integers(0, 2**128 - 1)))
def test_uuid_string_round_trip(topic_id):
    text = uuid_to_string(topic_id)
    assert len(text) == 22
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", text)
    assert uuid_from_string(text) == topic_id


@pytest.mark.parametrize(
    "text",
    ["", "FPCMpfzhTqatNggLgXnlS", "FPCMpfzhTqatNggLgXnlSg=", "FPCMpfzhTqatNggLgXnl+g", "FPCMpfzhTqatNggLgXnlSgAA", "FPCMpfzhTqatNggLgXnlSg!"],
)
def test_bad_uuid_string(text):
    # Java's URL-safe Base64 decoder refuses '+', '!' and lengths that are not 16 bytes.
    with pytest.raises(ValueError, match="is not a base64-encoded UUID"):
        uuid_from_string(text)


def test_internal_topics_are_kafka_39s():
    # Topic.INTERNAL_TOPICS in Kafka 3.9; the KRaft metadata log is not a topic clients see.
    assert INTERNAL_TOPICS == {"__consumer_offsets", "__transaction_state", "__share_group_state"}
    assert is_internal("__consumer_offsets") and not is_internal("__cluster_metadata") and not is_internal("consumer_offsets")


def test_topic_partition_is_the_tuple_the_broker_keys_by():
    tp = TopicPartition("t", 1)
    assert tp == ("t", 1) and hash(tp) == hash(("t", 1))
    assert {("t", 1): "x"}[tp] == "x"
    assert str(tp) == "t-1"
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 10)]) == [("a", 2), ("a", 10), ("b", 0)]
