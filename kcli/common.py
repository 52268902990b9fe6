"""Kafka's small shared facts (``org.apache.kafka.common``): the broker, the client, the tools and
Spark name them the same way, so they are written once, here. Every layer may import this
module; it imports nothing of kcli.

- ``TopicPartition``: a partition of a topic, a plain ``(topic, partition)`` tuple underneath, so
  the broker's tuples and the client's values are the same key.
- The internal topics (``Topic.INTERNAL_TOPICS``, Kafka 3.9): ``__consumer_offsets``,
  ``__transaction_state`` and ``__share_group_state``. The broker answers ``is_internal`` from
  it and the tools filter by it, as Kafka's both use ``Topic.isInternal``. ``__cluster_metadata``
  is not among them: in KRaft it is the metadata log, not a topic a client sees.
- Kafka's ``Uuid`` text form: URL-safe base64 of the 16 bytes, without padding.
"""

from __future__ import annotations

import base64
import re
import uuid
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
SHARE_GROUP_STATE_TOPIC_NAME = "__share_group_state"
CLUSTER_METADATA_TOPIC_NAME = "__cluster_metadata"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME})


def is_internal(topic: str) -> bool:
    """Kafka's ``Topic.isInternal``."""
    return topic in INTERNAL_TOPICS


_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(==)?")


def uuid_to_string(value: uuid.UUID | bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes without padding (22 characters)."""
    raw = value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_from_string(text: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: the 16 bytes of URL-safe base64 text (padding optional);
    ValueError naming the text otherwise."""
    if not _UUID_TEXT.fullmatch(text):
        raise ValueError(f"Input string `{text}` is not a base64-encoded UUID")
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text[:22] + "=="))
