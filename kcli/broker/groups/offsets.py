"""Committed offsets and Kafka's rule for when they expire.

An offset commit stores the offset, the leader epoch of the record it points after (or none), the
client's metadata string, the commit time and, for commits of OffsetCommit v2-v4 that named a
retention time, an explicit expire time. The offset of the record that stored it orders commits
replayed from the log (a later record wins).

Expiry (``offsets.retention.minutes``, checked every ``offsets.retention.check.interval.ms``), as
Kafka 3.9's ``GroupMetadata.removeExpiredOffsets``:

- a commit with an explicit expire time expires at that time;
- otherwise, in a group that has a protocol type and is Empty, ``retention`` after the group became
  empty (the commit time when that is unknown);
- in a Stable consumer group whose subscriptions are known, offsets of topics no member subscribes
  to expire ``retention`` after their commit; subscribed topics' offsets never do;
- in a group used only for offset storage (no protocol type), ``retention`` after the commit;
- in any other state nothing expires.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from kcli.common import TopicPartition
from kcli.protocol.coordinator_records import CONSUMER_PROTOCOL_TYPE

if TYPE_CHECKING:
    from kcli.broker.groups.group import ClassicGroup


NO_METADATA = ""
INVALID_OFFSET = -1
NO_LEADER_EPOCH = -1
DEFAULT_RETENTION_TIME = -1


class OffsetAndMetadata(NamedTuple):
    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None


class CommittedOffset(NamedTuple):
    """A commit and the offset of the ``__consumer_offsets`` record that stored it."""

    value: OffsetAndMetadata
    record_offset: int

    def older_than(self, other: CommittedOffset) -> bool:
        return self.record_offset < other.record_offset


def metadata_fits(metadata: str | None, max_bytes: int) -> bool:
    """Kafka's ``offset.metadata.max.bytes`` check (on the string's length, as Kafka measures it)."""
    return metadata is None or _java_length(metadata) <= max_bytes


def _java_length(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def expired_offsets(group: ClassicGroup, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    """The partitions whose committed offsets have expired under Kafka's rule (module docstring)."""
    from kcli.broker.groups.group import GroupState

    offsets = group.offsets
    if group.protocol_type is not None and group.is_(GroupState.EMPTY):
        return _expired(offsets, now_ms, retention_ms, group.current_state_timestamp)
    if group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.subscribed_topics is not None and group.is_(GroupState.STABLE):
        return _expired(offsets, now_ms, retention_ms, None, group.subscribed_topics)
    if group.protocol_type is None:
        return _expired(offsets, now_ms, retention_ms, None)
    return []


def _expired(offsets: Mapping[TopicPartition, CommittedOffset], now_ms: int, retention_ms: int, base_timestamp: int | None, subscribed: set[str] = frozenset()) -> list[TopicPartition]:
    result = []
    for tp, committed in offsets.items():
        if tp[0] in subscribed:
            continue
        value = committed.value
        if value.expire_timestamp is not None:
            expired = now_ms >= value.expire_timestamp
        else:
            base = value.commit_timestamp if base_timestamp is None else base_timestamp
            expired = now_ms - base >= retention_ms
        if expired:
            result.append(tp)
    return result
