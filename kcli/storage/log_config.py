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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcli.errors import ErrorCode, KafkaError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)
_LONG_MIN = -(2**63)

DELETE = "delete"
COMPACT = "compact"
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"

_INT, _LONG, _DOUBLE, _BOOLEAN, _STRING, _LIST = "INT", "LONG", "DOUBLE", "BOOLEAN", "STRING", "LIST"


def _config(
    key: str,
    kind: str,
    default: Any,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
    valid: tuple[str, ...] | None = None,
    check: Callable[[str, Any], str | None] | None = None,
):
    """A topic config field; ``check(key, parsed)`` returns why a value is refused, or None."""
    return field(default=default, metadata={"key": key, "kind": kind, "at_least": at_least, "at_most": at_most, "valid": valid, "check": check})


def _gzip_level_problem(key: str, level: int) -> str | None:
    if level > 9 or (level < 1 and level != -1):
        return "Value must be between 1 and 9 or equal to -1"
    return None


def _throttled_replicas_problem(key: str, replicas: tuple[str, ...]) -> str | None:
    if replicas == ("*",) or all(re.fullmatch(r"[0-9]+:[0-9]+", item) for item in replicas):
        return None
    return f"{key} must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."


# Every version string Kafka 3.9's MetadataVersion knows, as "X.Y-IVn" and as its short "X.Y" form.
# The value is the last interim version (IVn) of each release.
_METADATA_VERSION_INTERIMS = {
    "0.10.0": 1, "0.10.1": 2, "0.10.2": 0, "0.11.0": 2, "1.0": 0, "1.1": 0, "2.0": 1, "2.1": 2, "2.2": 1,
    "2.3": 1, "2.4": 1, "2.5": 0, "2.6": 0, "2.7": 2, "2.8": 1, "3.0": 1, "3.1": 0, "3.2": 0, "3.3": 3,
    "3.4": 0, "3.5": 2, "3.6": 2, "3.7": 4, "3.8": 0, "3.9": 0, "4.0": 1,
}  # fmt: skip
METADATA_VERSIONS = frozenset(
    ["0.8.0", "0.8.1", "0.8.2", "0.9.0"]
    + list(_METADATA_VERSION_INTERIMS)
    + [f"{short}-IV{n}" for short, last in _METADATA_VERSION_INTERIMS.items() for n in range(last + 1)]
)


def metadata_version_problem(version: str) -> str | None:
    """Why ``version`` is not a MetadataVersion Kafka accepts (``3.0``, ``3.0-IV1``, ``2.8.1``), or None."""
    segments = version.split(".")
    kept = 3 if version.startswith("0.") else 2
    key = version if len(segments) <= kept else ".".join(segments[:kept])
    return None if key in METADATA_VERSIONS else f"Version {version} is not a valid version"


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
    compression_gzip_level: int = _config("compression.gzip.level", _INT, -1, check=_gzip_level_problem)
    compression_lz4_level: int = _config("compression.lz4.level", _INT, 9, at_least=1, at_most=17)
    compression_zstd_level: int = _config("compression.zstd.level", _INT, 3, at_least=-131072, at_most=22)
    preallocate: bool = _config("preallocate", _BOOLEAN, False)
    message_format_version: str = _config(
        "message.format.version", _STRING, "3.0-IV1", check=lambda key, version: metadata_version_problem(version)
    )
    message_timestamp_type: str = _config("message.timestamp.type", _STRING, CREATE_TIME, valid=(CREATE_TIME, LOG_APPEND_TIME))
    message_timestamp_difference_max_ms: int = _config("message.timestamp.difference.max.ms", _LONG, LONG_MAX, at_least=0)
    message_timestamp_before_max_ms: int = _config("message.timestamp.before.max.ms", _LONG, LONG_MAX, at_least=0)
    message_timestamp_after_max_ms: int = _config("message.timestamp.after.max.ms", _LONG, LONG_MAX, at_least=0)
    leader_replication_throttled_replicas: tuple[str, ...] = _config(
        "leader.replication.throttled.replicas", _LIST, (), check=_throttled_replicas_problem
    )
    follower_replication_throttled_replicas: tuple[str, ...] = _config(
        "follower.replication.throttled.replicas", _LIST, (), check=_throttled_replicas_problem
    )
    message_downconversion_enable: bool = _config("message.downconversion.enable", _BOOLEAN, True)
    remote_storage_enable: bool = _config("remote.storage.enable", _BOOLEAN, False)
    # -2: derive from retention.ms / retention.bytes (Kafka's convention for tiered storage).
    local_retention_ms: int = _config("local.retention.ms", _LONG, -2, at_least=-2)
    local_retention_bytes: int = _config("local.retention.bytes", _LONG, -2, at_least=-2)
    remote_log_copy_disable: bool = _config("remote.log.copy.disable", _BOOLEAN, False)
    remote_log_delete_on_disable: bool = _config("remote.log.delete.on.disable", _BOOLEAN, False)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], defaults: LogConfig | None = None) -> LogConfig:
        """``defaults`` (Kafka's defaults when None) overridden by topic configs given by key.

        A key that is not a topic config or a value that does not parse raises KafkaError
        (INVALID_CONFIG) naming it.
        """
        changes = {}
        for key, value in props.items():
            f = _FIELDS.get(key)
            if f is None:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
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
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        return getattr(self, f.name)

    @property
    def delete(self) -> bool:
        return DELETE in self.cleanup_policy

    @property
    def compact(self) -> bool:
        return COMPACT in self.cleanup_policy

    @property
    def effective_timestamp_before_max_ms(self) -> int:
        """How far before the broker's clock a CreateTime may be; the deprecated difference key
        still applies while ``message.timestamp.before.max.ms`` is at its default."""
        if self.message_timestamp_before_max_ms != LONG_MAX:
            return self.message_timestamp_before_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def effective_timestamp_after_max_ms(self) -> int:
        """How far after the broker's clock a CreateTime may be (same fallback as the 'before' bound)."""
        if self.message_timestamp_after_max_ms != LONG_MAX:
            return self.message_timestamp_after_max_ms
        return self.message_timestamp_difference_max_ms

    def random_segment_jitter(self) -> int:
        """How much earlier than ``segment.ms`` a new segment rolls (Kafka's randomSegmentJitter)."""
        if self.segment_jitter_ms == 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))


_FIELDS = {f.metadata["key"]: f for f in dataclasses.fields(LogConfig)}
TOPIC_CONFIG_KEYS = tuple(_FIELDS)


def _invalid(key: str, value: str, why: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: {why}")


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
            if meta["valid"] is not None and item not in meta["valid"]:
                raise _invalid(key, value, f"String must be one of: {', '.join(meta['valid'])}")
        _check(key, value, parsed, meta)
        return parsed
    else:
        parsed = value.strip()
    if meta["at_least"] is not None and parsed < meta["at_least"]:
        raise _invalid(key, value, f"Value must be at least {_format(meta['at_least'])}")
    if meta["at_most"] is not None and parsed > meta["at_most"]:
        raise _invalid(key, value, f"Value must be no more than {_format(meta['at_most'])}")
    if meta["valid"] is not None and parsed not in meta["valid"]:
        raise _invalid(key, value, f"String must be one of: {', '.join(meta['valid'])}")
    _check(key, value, parsed, meta)
    return parsed


def _check(key: str, value: str, parsed: Any, meta: Mapping[str, Any]) -> None:
    problem = meta["check"](key, parsed) if meta["check"] is not None else None
    if problem is not None:
        raise _invalid(key, value, problem)


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
    "compression.gzip.level": (("compression.gzip.level", 1, _INT),),
    "compression.lz4.level": (("compression.lz4.level", 1, _INT),),
    "compression.zstd.level": (("compression.zstd.level", 1, _INT),),
    "preallocate": (("log.preallocate", 1, _BOOLEAN),),
    "message.format.version": (("log.message.format.version", 1, _STRING),),
    "message.timestamp.type": (("log.message.timestamp.type", 1, _STRING),),
    "message.timestamp.difference.max.ms": (("log.message.timestamp.difference.max.ms", 1, _LONG),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", 1, _LONG),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", 1, _LONG),),
    "message.downconversion.enable": (("log.message.downconversion.enable", 1, _BOOLEAN),),
    "local.retention.ms": (("log.local.retention.ms", 1, _LONG),),
    "local.retention.bytes": (("log.local.retention.bytes", 1, _LONG),),
}
# Topic configs no broker key sets (Kafka's LogConfig.CONFIGS_WITH_NO_SERVER_DEFAULTS).
TOPIC_KEYS_WITHOUT_BROKER_SYNONYM = tuple(key for key in _FIELDS if key not in _BROKER_SYNONYMS)
BROKER_LOG_CONFIG_KEYS = tuple(key for synonyms in _BROKER_SYNONYMS.values() for key, _, _ in synonyms)
# topic key -> its broker keys, highest precedence first (``retention.ms`` -> ms, minutes, hours).
TOPIC_BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    topic_key: tuple(key for key, _, _ in synonyms) for topic_key, synonyms in _BROKER_SYNONYMS.items()
}


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


# -- validation ---------------------------------------------------------------------------------------


def validate_topic_configs(
    configs: Mapping[str, str | None],
    defaults: LogConfig | None = None,
    existing: Mapping[str, str] | None = None,
    *,
    remote_log_storage_system_enabled: bool | None = None,
) -> LogConfig:
    """A topic's complete new override set checked as Kafka's LogConfig.validate checks it (the
    controller's check of CreateTopics and AlterConfigs, and the ZooKeeper-era tools'); returns
    the topic's resulting LogConfig over ``defaults``. ``existing`` is the current override set
    (needed to refuse turning tiered storage off without deleting remote data);
    ``remote_log_storage_system_enabled`` is the broker's ``remote.log.storage.system.enable``
    (None: not known, not checked).

    Raises KafkaError(INVALID_CONFIG) for a null value, an unknown key, a value that does not
    parse or validate, and the cross-key rules of Kafka's LogConfig.validate.
    """
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs: " + ",".join(nulls))
    config = LogConfig.from_properties({name: value for name, value in configs.items() if value is not None}, defaults=defaults)
    problem = _topic_problem(config, remote_log_storage_system_enabled, existing or {})
    if problem is not None:
        raise KafkaError(ErrorCode.INVALID_CONFIG, problem)
    return config


def _topic_problem(config: LogConfig, remote_log_storage_system_enabled: bool | None, existing: Mapping[str, str]) -> str | None:
    if config.min_compaction_lag_ms > config.max_compaction_lag_ms:
        return (
            f"conflict topic config setting min.compaction.lag.ms ({config.min_compaction_lag_ms}) > "
            f"max.compaction.lag.ms ({config.max_compaction_lag_ms})"
        )
    if config.remote_storage_enable:
        return _remote_storage_problem(config, remote_log_storage_system_enabled)
    was_enabled = existing.get("remote.storage.enable", "false").strip().lower() == "true"
    if was_enabled and not config.remote_log_delete_on_disable:
        return (
            "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data "
            "and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to "
            "disable remote storage and delete all remote data, please set "
            "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
        )
    return None


def _remote_storage_problem(config: LogConfig, remote_log_storage_system_enabled: bool | None) -> str | None:
    if remote_log_storage_system_enabled is False:
        return "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
    if config.compact:
        return "Remote log storage is unsupported for the compacted topics"
    for local_key, local, total_key, total, unlimited in (
        ("local.retention.bytes", config.local_retention_bytes, "retention.bytes", config.retention_bytes, config.retention_bytes <= -1),
        ("local.retention.ms", config.local_retention_ms, "retention.ms", config.retention_ms, config.retention_ms == -1),
    ):
        if unlimited or local == -2:
            continue
        if local == -1:
            return f"Invalid value -1 for configuration {local_key}: Value must not be -1 as {total_key} value is set as {total}."
        if local > total:
            return f"Invalid value {local} for configuration {local_key}: Value must not be more than {total_key} property value: {total}"
    if config.remote_log_copy_disable:
        if config.local_retention_bytes not in (-2, config.retention_bytes):
            return (
                "When `remote.log.copy.disable` is set to true, the `local.retention.bytes` and `retention.bytes` must be set "
                "to the identical value because there will be no more logs copied to the remote storage."
            )
        if config.local_retention_ms not in (-2, config.retention_ms):
            return (
                "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and `retention.ms` must be set "
                "to the identical value because there will be no more logs copied to the remote storage."
            )
    return None
