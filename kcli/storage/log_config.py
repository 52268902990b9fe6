"""Topic-level log configs with Kafka's keys, defaults and validation (Kafka's LogConfig).

Each field of ``LogConfig`` is one topic config; its Kafka key is the only spelling used in
properties (``segment.bytes``), the attribute is that key with dots as underscores. A broker sets
the defaults of every topic with its own keys (``log.segment.bytes``, ``log.retention.hours``,
...); ``topic_properties_from_broker`` maps them with Kafka's precedence (ms over minutes over
hours).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kcli.errors import KcliError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)
_LONG_MIN = -(2**63)

DELETE = "delete"
COMPACT = "compact"
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"

_INT, _LONG, _DOUBLE, _BOOLEAN, _STRING, _LIST = "INT", "LONG", "DOUBLE", "BOOLEAN", "STRING", "LIST"


def _config(key: str, kind: str, default: Any, *, at_least: float | None = None, at_most: float | None = None, valid: tuple[str, ...] | None = None):
    return field(default=default, metadata={"key": key, "kind": kind, "at_least": at_least, "at_most": at_most, "valid": valid})


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = _config("segment.bytes", _INT, 1073741824, at_least=14)
    segment_ms: int = _config("segment.ms", _LONG, 604800000, at_least=1)
    segment_jitter_ms: int = _config("segment.jitter.ms", _LONG, 0, at_least=0)
    segment_index_bytes: int = _config("segment.index.bytes", _INT, 10485760, at_least=4)
    index_interval_bytes: int = _config("index.interval.bytes", _INT, 4096, at_least=0)
    flush_messages: int = _config("flush.messages", _LONG, LONG_MAX, at_least=1)
    flush_ms: int = _config("flush.ms", _LONG, LONG_MAX, at_least=0)
    retention_ms: int = _config("retention.ms", _LONG, 604800000, at_least=-1)
    retention_bytes: int = _config("retention.bytes", _LONG, -1)
    max_message_bytes: int = _config("max.message.bytes", _INT, 1048588, at_least=0)
    file_delete_delay_ms: int = _config("file.delete.delay.ms", _LONG, 60000, at_least=0)
    cleanup_policy: tuple[str, ...] = _config("cleanup.policy", _LIST, (DELETE,), valid=(COMPACT, DELETE))
    delete_retention_ms: int = _config("delete.retention.ms", _LONG, 86400000, at_least=0)
    min_compaction_lag_ms: int = _config("min.compaction.lag.ms", _LONG, 0, at_least=0)
    max_compaction_lag_ms: int = _config("max.compaction.lag.ms", _LONG, LONG_MAX, at_least=1)
    min_cleanable_dirty_ratio: float = _config("min.cleanable.dirty.ratio", _DOUBLE, 0.5, at_least=0, at_most=1)
    min_insync_replicas: int = _config("min.insync.replicas", _INT, 1, at_least=1)
    unclean_leader_election_enable: bool = _config("unclean.leader.election.enable", _BOOLEAN, False)
    compression_type: str = _config(
        "compression.type", _STRING, "producer", valid=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
    )
    preallocate: bool = _config("preallocate", _BOOLEAN, False)
    message_timestamp_type: str = _config("message.timestamp.type", _STRING, CREATE_TIME, valid=(CREATE_TIME, LOG_APPEND_TIME))
    message_timestamp_difference_max_ms: int = _config("message.timestamp.difference.max.ms", _LONG, LONG_MAX, at_least=0)
    message_timestamp_before_max_ms: int = _config("message.timestamp.before.max.ms", _LONG, LONG_MAX, at_least=0)
    message_timestamp_after_max_ms: int = _config("message.timestamp.after.max.ms", _LONG, LONG_MAX, at_least=0)
    leader_replication_throttled_replicas: str = _config("leader.replication.throttled.replicas", _STRING, "")
    follower_replication_throttled_replicas: str = _config("follower.replication.throttled.replicas", _STRING, "")

    @classmethod
    def from_properties(cls, props: Mapping[str, str], defaults: LogConfig | None = None) -> LogConfig:
        """``defaults`` (Kafka's defaults when None) overridden by topic configs given by key.

        A key that is not a topic config or a value that does not parse raises KcliError naming it.
        """
        changes = {}
        for key, value in props.items():
            f = _FIELDS.get(key)
            if f is None:
                raise KcliError(f"Unknown topic config name: {key}")
            changes[f.name] = _parse(key, value, f.metadata)
        return dataclasses.replace(defaults or cls(), **changes)

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str]) -> LogConfig:
        """The topic defaults a broker's ``log.*`` settings make."""
        return cls.from_properties(topic_properties_from_broker(props))

    def to_properties(self) -> dict[str, str]:
        """Every topic config as Kafka writes it: ``{"segment.bytes": "1073741824", ...}``."""
        return {key: _format(getattr(self, f.name)) for key, f in _FIELDS.items()}

    def get(self, key: str) -> Any:
        f = _FIELDS.get(key)
        if f is None:
            raise KcliError(f"Unknown topic config name: {key}")
        return getattr(self, f.name)

    @property
    def delete(self) -> bool:
        return DELETE in self.cleanup_policy

    @property
    def compact(self) -> bool:
        return COMPACT in self.cleanup_policy

    def random_segment_jitter(self) -> int:
        """How much earlier than ``segment.ms`` a new segment rolls (Kafka's randomSegmentJitter)."""
        if self.segment_jitter_ms == 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))


_FIELDS = {f.metadata["key"]: f for f in dataclasses.fields(LogConfig)}
TOPIC_CONFIG_KEYS = tuple(_FIELDS)


def _invalid(key: str, value: str, why: str) -> KcliError:
    return KcliError(f"Invalid value {value} for configuration {key}: {why}")


def _parse_number(key: str, value: str, kind: str) -> int:
    text = value.strip()
    bounds = (_INT_MIN, INT_MAX) if kind == _INT else (_LONG_MIN, LONG_MAX)
    try:
        number = int(text, 10)
    except ValueError:
        raise _invalid(key, value, f"Not a number of type {kind}") from None
    if not bounds[0] <= number <= bounds[1] or "_" in text:
        raise _invalid(key, value, f"Not a number of type {kind}")
    return number


def _parse(key: str, value: str, meta: Mapping[str, Any]) -> Any:
    kind = meta["kind"]
    if kind in (_INT, _LONG):
        parsed: Any = _parse_number(key, value, kind)
    elif kind == _DOUBLE:
        try:
            parsed = float(value.strip())
        except ValueError:
            raise _invalid(key, value, "Not a number of type DOUBLE") from None
    elif kind == _BOOLEAN:
        text = value.strip().lower()
        if text not in ("true", "false"):
            raise _invalid(key, value, "Expected value to be either true or false")
        parsed = text == "true"
    elif kind == _LIST:
        parsed = tuple(item.strip() for item in value.split(",") if item.strip())
        for item in parsed:
            if item not in meta["valid"]:
                raise _invalid(key, value, f"String must be one of: {', '.join(meta['valid'])}")
        return parsed
    else:
        parsed = value.strip()
    if meta["at_least"] is not None and parsed < meta["at_least"]:
        raise _invalid(key, value, f"Value must be at least {_format(meta['at_least'])}")
    if meta["at_most"] is not None and parsed > meta["at_most"]:
        raise _invalid(key, value, f"Value must be no more than {_format(meta['at_most'])}")
    if meta["valid"] is not None and parsed not in meta["valid"]:
        raise _invalid(key, value, f"String must be one of: {', '.join(meta['valid'])}")
    return parsed


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


# -- broker keys ------------------------------------------------------------------------------------

_MS_PER_MINUTE = 60 * 1000
_MS_PER_HOUR = 60 * _MS_PER_MINUTE

# topic key -> broker keys in precedence order, each with the factor that turns it into the
# topic key's unit (Kafka's ServerTopicConfigSynonyms).
_BROKER_SYNONYMS: dict[str, tuple[tuple[str, int, str], ...]] = {
    "segment.bytes": (("log.segment.bytes", 1, _INT),),
    "segment.ms": (("log.roll.ms", 1, _LONG), ("log.roll.hours", _MS_PER_HOUR, _INT)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1, _LONG), ("log.roll.jitter.hours", _MS_PER_HOUR, _INT)),
    "segment.index.bytes": (("log.index.size.max.bytes", 1, _INT),),
    "index.interval.bytes": (("log.index.interval.bytes", 1, _INT),),
    "flush.messages": (("log.flush.interval.messages", 1, _LONG),),
    "flush.ms": (("log.flush.interval.ms", 1, _LONG), ("log.flush.scheduler.interval.ms", 1, _LONG)),
    "retention.ms": (
        ("log.retention.ms", 1, _LONG),
        ("log.retention.minutes", _MS_PER_MINUTE, _INT),
        ("log.retention.hours", _MS_PER_HOUR, _INT),
    ),
    "retention.bytes": (("log.retention.bytes", 1, _LONG),),
    "max.message.bytes": (("message.max.bytes", 1, _INT),),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", 1, _LONG),),
    "cleanup.policy": (("log.cleanup.policy", 1, _LIST),),
    "delete.retention.ms": (("log.cleaner.delete.retention.ms", 1, _LONG),),
    "min.compaction.lag.ms": (("log.cleaner.min.compaction.lag.ms", 1, _LONG),),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms", 1, _LONG),),
    "min.cleanable.dirty.ratio": (("log.cleaner.min.cleanable.ratio", 1, _DOUBLE),),
    "min.insync.replicas": (("min.insync.replicas", 1, _INT),),
    "unclean.leader.election.enable": (("unclean.leader.election.enable", 1, _BOOLEAN),),
    "compression.type": (("compression.type", 1, _STRING),),
    "preallocate": (("log.preallocate", 1, _BOOLEAN),),
    "message.timestamp.type": (("log.message.timestamp.type", 1, _STRING),),
    "message.timestamp.difference.max.ms": (("log.message.timestamp.difference.max.ms", 1, _LONG),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", 1, _LONG),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", 1, _LONG),),
}
BROKER_LOG_CONFIG_KEYS = tuple(key for synonyms in _BROKER_SYNONYMS.values() for key, _, _ in synonyms)


def topic_properties_from_broker(props: Mapping[str, str]) -> dict[str, str]:
    """The topic configs that a broker's properties set, by topic key.

    For each topic key the first broker synonym present wins; minutes and hours are turned into
    milliseconds, and a negative retention time means unlimited (-1), as in KafkaConfig.
    """
    out = {}
    for topic_key, synonyms in _BROKER_SYNONYMS.items():
        for broker_key, factor, kind in synonyms:
            value = props.get(broker_key)
            if value is None:
                continue
            if factor != 1:
                value = str(_parse_number(broker_key, value, kind) * factor)
            if topic_key == "retention.ms" and _parse_number(broker_key, value, _LONG) < 0:
                value = "-1"
            out[topic_key] = value.strip()
            break
    return out
