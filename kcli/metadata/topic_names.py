"""Kafka's rules for topic names (``org.apache.kafka.common.internals.Topic``, 3.9).

A legal name is 1 to 249 characters from ``[a-zA-Z0-9._-]`` and is neither ``.`` nor ``..``; the
reasons for refusing one are worded as Kafka words them, behind ``Topic name is invalid: ``.
Because metric names turn ``.`` into ``_``, two names that differ only there collide: a new topic
that collides with an existing one is refused, and a name holding either character earns the
tools' warning. The internal topics (kcli.common) are the ones the broker's coordinators own.
"""

from __future__ import annotations

from collections.abc import Iterable

# The internal topics are Kafka facts the tools share too: defined in kcli.common, named here for
# the broker.
from kcli.common import (  # noqa: F401 (imported by the broker from here)
    CLUSTER_METADATA_TOPIC_NAME,
    GROUP_METADATA_TOPIC_NAME,
    SHARE_GROUP_STATE_TOPIC_NAME,
    TRANSACTION_STATE_TOPIC_NAME,
    is_internal,
)
from kcli.errors import ErrorCode, KafkaError

LEGAL_CHARS = "[a-zA-Z0-9._-]"
MAX_NAME_LENGTH = 249
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
    "collide. To avoid issues it is best to use either, but not both."
)


def _java_length(name: str) -> int:
    # Java counts UTF-16 units: a character outside the BMP is two.
    return len(name) + sum(1 for char in name if ord(char) > 0xFFFF)


def invalid_reason(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, in Kafka's words, or None when it is legal."""
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if _java_length(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not _LEGAL.issuperset(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def is_valid(name: str) -> bool:
    return invalid_reason(name) is None


def validate(name: str) -> None:
    """Raise INVALID_TOPIC_EXCEPTION unless ``name`` is a legal topic name."""
    reason = invalid_reason(name)
    if reason is not None:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")


def has_collision_chars(name: str) -> bool:
    """True when ``name`` holds a ``.`` or ``_`` (the tools then print ``COLLISION_WARNING``)."""
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    """The form two colliding names share: every ``.`` replaced by ``_``."""
    return name.replace(".", "_")


def has_collision(first: str, second: str) -> bool:
    return unify_collision_chars(first) == unify_collision_chars(second)


def colliding_topics(name: str, existing: Iterable[str]) -> list[str]:
    """The existing topics, other than ``name`` itself, that collide with ``name``, sorted."""
    if not has_collision_chars(name):
        return []
    unified = unify_collision_chars(name)
    return sorted(other for other in existing if other != name and unify_collision_chars(other) == unified)
