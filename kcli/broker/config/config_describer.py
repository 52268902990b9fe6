"""What DescribeConfigs answers and how AlterConfigs / IncrementalAlterConfigs change configs.

Plain data, no wire code. ``describe_topic_configs`` and ``describe_broker_configs`` build the
entries a Kafka 3.9 broker returns: each config's value (None for secrets), its source, whether it
is read-only, its type code, an optional one-line documentation and, on request, its synonyms in
Kafka's precedence order (topic override, dynamic per-broker, dynamic cluster default, static
``server.properties``, built-in default).

``validate_topic_configs`` / ``validate_broker_configs`` check a resource's new config set and
``apply_incremental`` applies IncrementalAlterConfigs operations (SET, DELETE, APPEND, SUBTRACT)
with Kafka's rules. Errors are KafkaErrors carrying the code and message Kafka answers with:
INVALID_CONFIG for topic configs; for broker configs Kafka wraps validation failures into
INVALID_REQUEST (its KAFKA-13609), and so does this module.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from kcli.broker.config.broker_config import (
    ALL_DYNAMIC_CONFIGS,
    BROKER_CONFIG_DEF,
    BROKER_QUOTA_CONFIG_DEF,
    DYNAMIC_SECURITY_CONFIGS,
    LISTENER_CONFIG_PREFIX,
    NON_DYNAMIC_CONFIGS,
    PER_BROKER_CONFIGS,
    THREAD_POOL_CONFIGS,
    BrokerConfig,
    broker_config_key,
    broker_config_synonyms,
)
from kcli.config import ConfigKey, ConfigType, render_value
from kcli.errors import ErrorCode, KafkaError
from kcli.storage import log_config
from kcli.storage.log_config import TOPIC_BROKER_SYNONYMS, TOPIC_CONFIG_KEYS, LogConfig


class ConfigSource(enum.IntEnum):
    """Where a described value comes from (Kafka's DescribeConfigs ConfigSource codes)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_BROKER_LOGGER = 6
    CLIENT_METRICS_CONFIG = 7


class AlterOp(enum.IntEnum):
    """IncrementalAlterConfigs operation codes."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigSynonym(NamedTuple):
    name: str
    value: str | None
    source: ConfigSource


@dataclasses.dataclass(frozen=True)
class ConfigEntry:
    """One DescribeConfigs result entry."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    synonyms: list[ConfigSynonym]
    config_type: ConfigType
    documentation: str | None = None


_KIND_TYPES = {
    "BOOLEAN": ConfigType.BOOLEAN,
    "STRING": ConfigType.STRING,
    "INT": ConfigType.INT,
    "LONG": ConfigType.LONG,
    "DOUBLE": ConfigType.DOUBLE,
    "LIST": ConfigType.LIST,
}
TOPIC_CONFIG_TYPES: dict[str, ConfigType] = {
    f.metadata["key"]: _KIND_TYPES[f.metadata["kind"]] for f in dataclasses.fields(LogConfig)
}

TOPIC_CONFIG_DOCS: dict[str, str] = {
    "segment.bytes": "Size at which a segment of this topic is rolled.",
    "segment.ms": "Age at which the active segment is rolled even if not full.",
    "segment.jitter.ms": "Most random time taken off segment.ms so segments do not roll together.",
    "segment.index.bytes": "Size of the offset index file of each segment.",
    "index.interval.bytes": "Bytes appended between two offset index entries.",
    "flush.messages": "Messages appended before the log is forced to disk.",
    "flush.ms": "Longest time appended data may stay unflushed.",
    "retention.ms": "How long segments are kept before deletion; -1 keeps them forever.",
    "retention.bytes": "Size a partition may reach before old segments are deleted; -1 means no limit.",
    "max.message.bytes": "Largest record batch this topic accepts.",
    "file.delete.delay.ms": "Wait before the files of a deleted segment are removed.",
    "cleanup.policy": "What happens to old segments: delete, compact, or both.",
    "delete.retention.ms": "How long tombstones stay in a compacted topic.",
    "min.compaction.lag.ms": "Youngest age at which a record may be compacted.",
    "max.compaction.lag.ms": "Age at which a record must become eligible for compaction.",
    "min.cleanable.dirty.ratio": "Dirty share of the log at which compaction starts.",
    "min.insync.replicas": "In-sync replicas an acks=all write needs.",
    "unclean.leader.election.enable": "Allow an out-of-sync replica to become leader, losing data.",
    "compression.type": "Compression of stored batches; producer keeps what the producer used.",
    "compression.gzip.level": "Level used when compression.type is gzip.",
    "compression.lz4.level": "Level used when compression.type is lz4.",
    "compression.zstd.level": "Level used when compression.type is zstd.",
    "preallocate": "Preallocate segment files when they are created.",
    "message.format.version": "Deprecated record format version; ignored from 3.0 on.",
    "message.timestamp.type": "Whether timestamps are the producer's (CreateTime) or the append time.",
    "message.timestamp.difference.max.ms": "Deprecated: largest gap between a CreateTime and the broker clock.",
    "message.timestamp.before.max.ms": "How far in the past a CreateTime may be.",
    "message.timestamp.after.max.ms": "How far in the future a CreateTime may be.",
    "leader.replication.throttled.replicas": "Replicas (partition:broker, or *) throttled on the leader side.",
    "follower.replication.throttled.replicas": "Replicas (partition:broker, or *) throttled on the follower side.",
    "message.downconversion.enable": "Convert records to old formats for old consumers.",
    "remote.storage.enable": "Keep this topic's older segments in tiered storage.",
    "local.retention.ms": "How long segments stay on local disk when tiered; -2 means retention.ms.",
    "local.retention.bytes": "Local size kept when tiered; -2 means retention.bytes.",
    "remote.log.copy.disable": "Stop copying segments to tiered storage (reads still work).",
    "remote.log.delete.on.disable": "Delete remote data when tiered storage is turned off for the topic.",
}

_STATIC_DEFAULTS: dict[str, str] = {
    key.name: text for key in BROKER_CONFIG_DEF if (text := key.default_string) is not None
}


# -- describe -----------------------------------------------------------------------------------------


def describe_topic_configs(
    topic_overrides: Mapping[str, str],
    broker: BrokerConfig,
    keys: Iterable[str] | None = None,
    include_synonyms: bool = False,
    include_documentation: bool = False,
    *,
    dynamic: Mapping[str, str] | None = None,
    dynamic_default: Mapping[str, str] | None = None,
) -> list[ConfigEntry]:
    """Every topic config (or those named in ``keys``) of a topic with ``topic_overrides``.

    The value is the topic's effective value; the source is TOPIC_CONFIG for an override, else
    that of the first broker synonym Kafka finds at or after the topic key's main broker key.
    Like Kafka, a topic key whose main broker key is unset reports DEFAULT_CONFIG without
    synonyms even when a lower synonym is set (``log.retention.hours`` alone leaves
    ``retention.ms`` at DEFAULT_CONFIG while its value follows the hours). ``dynamic`` and
    ``dynamic_default`` replace the broker's dynamic layers when given.
    """
    effective = broker.with_dynamic(dynamic_default, dynamic)
    config = LogConfig.from_properties(topic_overrides, defaults=effective.log_config())
    wanted = _wanted(keys)
    entries = []
    for name in TOPIC_CONFIG_KEYS:
        if wanted is not None and name not in wanted:
            continue
        value = render_value(config.get(name))
        synonyms = _topic_synonyms(name, value, topic_overrides, effective)
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                read_only=False,
                is_sensitive=False,
                synonyms=synonyms if include_synonyms else [],
                config_type=TOPIC_CONFIG_TYPES[name],
                documentation=TOPIC_CONFIG_DOCS.get(name) if include_documentation else None,
            )
        )
    return entries


def _topic_synonyms(name: str, value: str | None, overrides: Mapping[str, str], broker: BrokerConfig) -> list[ConfigSynonym]:
    broker_keys = TOPIC_BROKER_SYNONYMS.get(name)
    synonyms = []
    if broker_keys:
        main = broker_keys[0]
        synonyms = _broker_synonyms(main, broker_config_synonyms(main), False, broker)
    if name in overrides:
        synonyms.insert(0, ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG))
    return synonyms


def describe_broker_configs(
    broker: BrokerConfig,
    dynamic: Mapping[str, str] | None,
    keys: Iterable[str] | None = None,
    include_synonyms: bool = False,
    include_documentation: bool = False,
    *,
    dynamic_default: Mapping[str, str] | None = None,
) -> list[ConfigEntry]:
    """The configs of this broker (resource name = its id): every non-internal catalog key plus
    every other key that is set, with ``dynamic`` as the per-broker dynamic configs (None keeps
    the broker's) and ``dynamic_default`` as the cluster defaults (None keeps the broker's).

    Secrets, and keys whose type is unknown, are reported with a None value, as Kafka does.
    """
    effective = broker.with_dynamic(dynamic_default, dynamic)
    wanted = _wanted(keys)
    names = [key.name for key in BROKER_CONFIG_DEF if not key.internal]
    names += sorted(set(effective.effective_properties) - set(names))
    entries = []
    for name in names:
        if wanted is not None and name not in wanted:
            continue
        key = BROKER_CONFIG_DEF.get(name)
        if key is not None and not key.internal:
            value: Any = effective.values[name]
        else:
            value = effective.effective_properties[name]
        entries.append(_broker_entry(name, value, effective, True, include_synonyms, include_documentation))
    return entries


def describe_broker_default_configs(
    broker: BrokerConfig,
    dynamic_default: Mapping[str, str] | None = None,
    keys: Iterable[str] | None = None,
    include_synonyms: bool = False,
    include_documentation: bool = False,
) -> list[ConfigEntry]:
    """The cluster-wide dynamic defaults (resource name ""): only the keys set there, with only
    DYNAMIC_DEFAULT_BROKER_CONFIG synonyms."""
    effective = broker.with_dynamic(dynamic_default, None)
    wanted = _wanted(keys)
    return [
        _broker_entry(name, value, effective, False, include_synonyms, include_documentation)
        for name, value in effective.dynamic_default_configs.items()
        if wanted is None or name in wanted
    ]


def _broker_entry(
    name: str, value: Any, broker: BrokerConfig, per_broker: bool, include_synonyms: bool, include_documentation: bool
) -> ConfigEntry:
    key = _key_for_type(name)
    sensitive = key is None or key.type == ConfigType.PASSWORD
    shown = None if sensitive else (value if isinstance(value, str) else render_value(value))
    synonyms = _broker_synonyms(name, broker_config_synonyms(name), sensitive, broker)
    if not per_broker:
        synonyms = [synonym for synonym in synonyms if synonym.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    catalog_key = BROKER_CONFIG_DEF.get(name)
    return ConfigEntry(
        name=name,
        value=shown,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=name not in ALL_DYNAMIC_CONFIGS,
        is_sensitive=sensitive,
        synonyms=synonyms if include_synonyms else [],
        config_type=key.type if key is not None else ConfigType.UNKNOWN,
        documentation=catalog_key.doc if include_documentation and catalog_key is not None else None,
    )


def _key_for_type(name: str) -> ConfigKey | None:
    # Kafka's KafkaConfig.configType: the key itself, a dynamic-only key, else its synonyms.
    key = BROKER_CONFIG_DEF.get(name) or BROKER_QUOTA_CONFIG_DEF.get(name)
    if key is not None:
        return key
    for synonym in broker_config_synonyms(name):
        key = BROKER_CONFIG_DEF.get(synonym)
        if key is not None:
            return key
    return None


def _broker_synonyms(name: str, names: Sequence[str], sensitive: bool, broker: BrokerConfig) -> list[ConfigSynonym]:
    """Kafka's configSynonyms: every layer in precedence order, each in the order of ``names``,
    then everything before the first entry for ``name`` itself dropped."""
    layers = (
        (broker.dynamic_broker_configs, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (broker.dynamic_default_configs, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (broker.originals, ConfigSource.STATIC_BROKER_CONFIG),
        (_STATIC_DEFAULTS, ConfigSource.DEFAULT_CONFIG),
    )
    found = [
        ConfigSynonym(synonym, None if sensitive else layer[synonym], source)
        for layer, source in layers
        for synonym in names
        if synonym in layer
    ]
    while found and found[0].name != name:
        found.pop(0)
    return found


def _wanted(keys: Iterable[str] | None) -> set[str] | None:
    wanted = set(keys) if keys is not None else set()
    return wanted or None


# -- validation ---------------------------------------------------------------------------------------


def validate_topic_configs(
    configs: Mapping[str, str | None],
    broker: BrokerConfig | None = None,
    existing: Mapping[str, str] | None = None,
) -> LogConfig:
    """``storage.log_config.validate_topic_configs`` with this broker's facts: its topic defaults
    and whether tiered storage is enabled."""
    return log_config.validate_topic_configs(
        configs,
        broker.log_config() if broker is not None else None,
        existing,
        remote_log_storage_system_enabled=bool(broker.get("remote.log.storage.system.enable")) if broker is not None else None,
    )


def is_dynamically_updatable(name: str) -> bool:
    """Whether a broker key may be set through AlterConfigs: dynamic catalog keys, dynamic-only
    quota keys, ``listener.name.X.`` keys and keys the catalog does not know."""
    return name not in NON_DYNAMIC_CONFIGS


def validate_broker_configs(configs: Mapping[str, str], per_broker: bool = True, broker: BrokerConfig | None = None) -> None:
    """A broker resource's complete new dynamic config set, checked as Kafka's DynamicBrokerConfig
    does: for one broker (``per_broker``) or as cluster-wide defaults. With ``broker`` the result
    of applying the set is checked as well. Raises KafkaError(INVALID_REQUEST)."""
    problem = _broker_problem(configs, per_broker, broker)
    if problem is not None:
        raise KafkaError(ErrorCode.INVALID_REQUEST, problem)


def _broker_problem(configs: Mapping[str, str], per_broker: bool, broker: BrokerConfig | None) -> str | None:
    names = set(configs)
    read_only = names & NON_DYNAMIC_CONFIGS
    if read_only:
        return f"Cannot update these configs dynamically: {_scala_set(read_only)}"
    unprefixed = names & DYNAMIC_SECURITY_CONFIGS
    if unprefixed:
        return f"These security configs can be dynamically updated only per-listener using the listener prefix: {_scala_set(unprefixed)}"
    for name, value in configs.items():
        key = broker_config_key(name)
        if key is not None:
            try:
                key.parse(value)
            except KafkaError as exc:
                return str(exc)
    if not per_broker:
        broker_only = {name for name in names if _is_per_broker(name)}
        if broker_only:
            return f"Cannot update these configs at default cluster level, broker id must be specified: {_scala_set(broker_only)}"
    if broker is not None:
        return _reconfiguration_problem(configs, per_broker, broker)
    return None


def _is_per_broker(name: str) -> bool:
    match = LISTENER_CONFIG_PREFIX.fullmatch(name)
    if match is not None:
        return match.group(1) not in ("max.connections", "max.connection.creation.rate", "num.network.threads")
    return name in PER_BROKER_CONFIGS


def _reconfiguration_problem(configs: Mapping[str, str], per_broker: bool, broker: BrokerConfig) -> str | None:
    try:
        updated = broker.with_dynamic(dynamic=configs) if per_broker else broker.with_dynamic(dynamic_default=configs)
    except KafkaError as exc:
        return str(exc)
    for name in THREAD_POOL_CONFIGS:
        old, new = broker.get(name), updated.get(name)
        if new != old and (new <= 0 or new < old / 2 or new > old * 2):
            # Kafka reports only this summary for a refused thread-count change.
            return "Invalid dynamic configuration"
    return None


def _scala_set(names: Iterable[str]) -> str:
    return "Set(" + ", ".join(sorted(names)) + ")"


# -- IncrementalAlterConfigs ------------------------------------------------------------------------


Op = tuple[str, int, str | None]


def apply_incremental(
    current: Mapping[str, str],
    ops: Sequence[Op],
    kind: Literal["topic", "broker"],
    *,
    broker: BrokerConfig | None = None,
    per_broker: bool = True,
) -> dict[str, str]:
    """``current`` (a topic's overrides, or a broker resource's dynamic configs) after ``ops``,
    each ``(key, op, value)`` with op SET 0, DELETE 1, APPEND 2, SUBTRACT 3, then validated.

    APPEND adds the comma-separated items not yet present and SUBTRACT removes them, starting
    from the current value or the key's default; both are only for LIST keys (INVALID_CONFIG
    otherwise, with Kafka's message for the resource kind). A key named twice or a null value
    for anything but DELETE is INVALID_REQUEST.
    """
    _check_request(ops)
    result = dict(current)
    for name, op, value in ops:
        code = AlterOp(op)
        if code == AlterOp.SET:
            result[name] = value  # type: ignore[assignment]
        elif code == AlterOp.DELETE:
            result.pop(name, None)
        elif kind == "topic":
            result[name] = _topic_list_op(name, code, value or "", result.get(name))
        else:
            result[name] = _broker_list_op(name, code, value or "", result.get(name))
    if kind == "topic":
        validate_topic_configs(result, broker, existing=current)
    else:
        validate_broker_configs(result, per_broker, broker)
    return result


def _check_request(ops: Sequence[Op]) -> None:
    counts = collections.Counter(name for name, _, _ in ops)
    if any(count > 1 for count in counts.values()):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    for _, op, _ in ops:
        try:
            AlterOp(op)
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}") from None
    nulls = [name for name, op, value in ops if op != AlterOp.DELETE and value is None]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))


def _topic_list_op(name: str, op: AlterOp, value: str, old: str | None) -> str:
    # The controller's rule: split the old value (or the topic default) on commas, skipping empties.
    if TOPIC_CONFIG_TYPES.get(name) != ConfigType.LIST:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Can't {op.name} to key {name} because its type is not LIST.")
    base = old if old is not None else render_value(LogConfig().get(name))
    items = [item for item in (base or "").split(",") if item]
    for item in value.split(","):
        if op == AlterOp.APPEND and item not in items:
            items.append(item)
        elif op == AlterOp.SUBTRACT and item in items:
            items.remove(item)
    return ",".join(items)


def _broker_list_op(name: str, op: AlterOp, value: str, old: str | None) -> str:
    # The broker's rule (ConfigAdminManager.prepareIncrementalConfigs).
    key = BROKER_CONFIG_DEF.get(name)
    if key is None:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
    if key.type != ConfigType.LIST:
        verb = "append" if op == AlterOp.APPEND else "subtract"
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}")
    base = old if old is not None else render_value(key.default)
    if op == AlterOp.APPEND:
        items = base.split(",") if base else []
        return ",".join(items + [item for item in value.split(",") if item not in items])
    items = (base or "").split(",")
    for item in value.split(","):
        if item in items:
            items.remove(item)
    return ",".join(items)
