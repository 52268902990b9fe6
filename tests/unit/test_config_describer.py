"""DescribeConfigs entries (values, sources, synonyms, types) and AlterConfigs validation and operations."""

from __future__ import annotations

import pytest

from kcli.broker.config.broker_config import BrokerConfig
from kcli.broker.config.config_describer import (
    AlterOp,
    ConfigSource,
    ConfigSynonym,
    apply_incremental,
    describe_broker_configs,
    describe_broker_default_configs,
    describe_topic_configs,
    is_dynamically_updatable,
    validate_broker_configs,
    validate_topic_configs,
)
from kcli.config import ConfigType
from kcli.errors import ErrorCode, KafkaError
from kcli.storage.log_config import TOPIC_CONFIG_KEYS

S = ConfigSource


def _topic(overrides, broker, name, synonyms=True, **layers):
    (entry,) = describe_topic_configs(overrides, broker, [name], synonyms, False, **layers)
    return entry


# -- topics ------------------------------------------------------------------------------------------------


def test_a_topic_override_is_topic_config_with_broker_synonyms_after_it():
    broker = BrokerConfig({"log.retention.ms": "5000"})
    entry = _topic({"retention.ms": " 1000 "}, broker, "retention.ms")
    assert (entry.value, entry.source, entry.read_only, entry.is_sensitive) == ("1000", S.TOPIC_CONFIG, False, False)
    assert entry.synonyms == [
        ConfigSynonym("retention.ms", "1000", S.TOPIC_CONFIG),
        ConfigSynonym("log.retention.ms", "5000", S.STATIC_BROKER_CONFIG),
        ConfigSynonym("log.retention.hours", "168", S.DEFAULT_CONFIG),
    ]
    assert entry.config_type == ConfigType.LONG
    assert _topic({"retention.ms": "1000"}, broker, "retention.ms", synonyms=False).synonyms == []


def test_without_override_the_source_is_the_default_or_the_static_broker_key():
    plain = BrokerConfig({})
    default = _topic({}, plain, "segment.bytes")
    assert (default.value, default.source) == ("1073741824", S.DEFAULT_CONFIG)
    assert default.synonyms == [ConfigSynonym("log.segment.bytes", "1073741824", S.DEFAULT_CONFIG)]
    static = _topic({}, BrokerConfig({"log.segment.bytes": "2048"}), "segment.bytes")
    assert (static.value, static.source) == ("2048", S.STATIC_BROKER_CONFIG)
    assert static.synonyms[0] == ConfigSynonym("log.segment.bytes", "2048", S.STATIC_BROKER_CONFIG)
    retention = _topic({}, BrokerConfig({"log.retention.ms": "600000"}), "retention.ms")
    assert (retention.value, retention.source) == ("600000", S.STATIC_BROKER_CONFIG)


def test_retention_hours_alone_changes_the_value_but_reports_default_config_like_kafka():
    # Kafka drops every synonym listed before the main broker key (log.retention.ms), and with
    # only log.retention.hours set that is all of them.
    entry = _topic({}, BrokerConfig({"log.retention.hours": "24"}), "retention.ms")
    assert (entry.value, entry.source, entry.synonyms) == ("86400000", S.DEFAULT_CONFIG, [])


def test_dynamic_layers_come_before_static_and_default_synonyms():
    broker = BrokerConfig({"log.retention.ms": "5000"})
    entry = _topic({}, broker, "retention.ms", dynamic={"log.retention.ms": "7000"}, dynamic_default={"log.retention.ms": "6000"})
    assert entry.value == "7000"
    assert [(s.value, s.source) for s in entry.synonyms] == [
        ("7000", S.DYNAMIC_BROKER_CONFIG),
        ("6000", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("5000", S.STATIC_BROKER_CONFIG),
        ("168", S.DEFAULT_CONFIG),
    ]
    defaulted = _topic({}, broker, "min.insync.replicas", dynamic_default={"min.insync.replicas": "2"})
    assert (defaulted.value, defaulted.source) == ("2", S.DYNAMIC_DEFAULT_BROKER_CONFIG)


def test_topic_keys_without_a_broker_key_and_value_rendering():
    broker = BrokerConfig({})
    remote = _topic({}, broker, "remote.storage.enable")
    assert (remote.value, remote.source, remote.synonyms, remote.config_type) == ("false", S.DEFAULT_CONFIG, [], ConfigType.BOOLEAN)
    throttled = _topic({"leader.replication.throttled.replicas": "0:1, 1:2"}, broker, "leader.replication.throttled.replicas")
    assert (throttled.value, throttled.config_type) == ("0:1,1:2", ConfigType.LIST)
    assert _topic({}, broker, "min.cleanable.dirty.ratio").value == "0.5"


def test_all_topic_keys_by_default_filtered_by_keys_with_optional_documentation():
    broker = BrokerConfig({})
    everything = describe_topic_configs({}, broker, None, False, False)
    assert [entry.name for entry in everything] == list(TOPIC_CONFIG_KEYS)
    assert all(entry.documentation is None for entry in everything)
    picked = describe_topic_configs({}, broker, ["cleanup.policy", "no.such.key"], False, True)
    assert [entry.name for entry in picked] == ["cleanup.policy"]
    assert picked[0].documentation
    assert picked[0].config_type == ConfigType.LIST == 7


# -- brokers -----------------------------------------------------------------------------------------------


def _broker(broker, name, dynamic=None, **kwargs):
    (entry,) = describe_broker_configs(broker, dynamic, [name], True, False, **kwargs)
    return entry


def test_broker_entries_sources_read_only_and_types():
    broker = BrokerConfig({"broker.id": "0", "num.partitions": "3"})
    partitions = _broker(broker, "num.partitions")
    assert (partitions.value, partitions.source, partitions.read_only, partitions.config_type) == ("3", S.STATIC_BROKER_CONFIG, True, ConfigType.INT)
    assert partitions.synonyms == [
        ConfigSynonym("num.partitions", "3", S.STATIC_BROKER_CONFIG),
        ConfigSynonym("num.partitions", "1", S.DEFAULT_CONFIG),
    ]
    threads = _broker(broker, "num.io.threads", {"num.io.threads": "16"})
    assert (threads.value, threads.source, threads.read_only) == ("16", S.DYNAMIC_BROKER_CONFIG, False)
    # Only log.retention.hours has a default, and synonyms before log.retention.ms are dropped.
    unset = _broker(broker, "log.retention.ms")
    assert (unset.value, unset.source, unset.synonyms) == (None, S.DEFAULT_CONFIG, [])
    hours = _broker(broker, "log.retention.hours")
    assert hours.synonyms == [ConfigSynonym("log.retention.hours", "168", S.DEFAULT_CONFIG)]


def test_secrets_and_unknown_keys_hide_their_values():
    broker = BrokerConfig({"ssl.key.password": "pw", "my.custom.setting": "x"})
    secret = _broker(broker, "ssl.key.password")
    assert (secret.value, secret.is_sensitive, secret.config_type) == (None, True, ConfigType.PASSWORD)
    assert secret.synonyms == [ConfigSynonym("ssl.key.password", None, S.STATIC_BROKER_CONFIG)]
    custom = _broker(broker, "my.custom.setting")
    assert (custom.value, custom.is_sensitive, custom.config_type, custom.read_only) == (None, True, ConfigType.UNKNOWN, True)
    prefixed = _broker(broker, "listener.name.internal.ssl.keystore.password", {"listener.name.internal.ssl.keystore.password": "pw"})
    assert (prefixed.value, prefixed.config_type, prefixed.source) == (None, ConfigType.PASSWORD, S.DYNAMIC_BROKER_CONFIG)


def test_broker_describe_lists_every_non_internal_key_and_documentation_on_request():
    broker = BrokerConfig({})
    entries = describe_broker_configs(broker, {}, None, False, True)
    names = {entry.name for entry in entries}
    assert {"listeners", "log.dirs", "zookeeper.connect", "offsets.topic.num.partitions"} <= names
    assert "unstable.api.versions.enable" not in names
    assert all(entry.documentation for entry in entries)


def test_cluster_default_resource_shows_only_dynamic_defaults():
    broker = BrokerConfig({"log.cleaner.threads": "2"})
    entries = describe_broker_default_configs(broker, {"log.cleaner.threads": "4"}, None, True)
    assert len(entries) == 1
    assert (entries[0].name, entries[0].value, entries[0].source) == ("log.cleaner.threads", "4", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert entries[0].synonyms == [ConfigSynonym("log.cleaner.threads", "4", S.DYNAMIC_DEFAULT_BROKER_CONFIG)]


# -- validation -----------------------------------------------------------------------------------------------


def _fails(call, code, message):
    with pytest.raises(KafkaError) as exc:
        call()
    assert exc.value.error_code == code
    assert message in str(exc.value)


def test_topic_config_validation():
    config = validate_topic_configs({"retention.ms": "1000", "cleanup.policy": "compact,delete"})
    assert (config.retention_ms, config.cleanup_policy) == (1000, ("compact", "delete"))
    bad = ErrorCode.INVALID_CONFIG
    _fails(lambda: validate_topic_configs({"retention.hours": "1"}), bad, "Unknown topic config name: retention.hours")
    _fails(lambda: validate_topic_configs({"segment.bytes": "big"}), bad, "Invalid value big for configuration segment.bytes: Not a number of type INT")
    _fails(lambda: validate_topic_configs({"retention.ms": None}), bad, "Null value not supported for topic configs: retention.ms")
    _fails(
        lambda: validate_topic_configs({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}),
        bad,
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
    )


def test_tiered_storage_topic_rules():
    off = BrokerConfig({})
    on = BrokerConfig({"remote.log.storage.system.enable": "true"})
    bad = ErrorCode.INVALID_CONFIG
    _fails(lambda: validate_topic_configs({"remote.storage.enable": "true"}, off), bad, "Tiered Storage functionality is disabled in the broker")
    assert validate_topic_configs({"remote.storage.enable": "true"}, on).remote_storage_enable
    _fails(lambda: validate_topic_configs({"remote.storage.enable": "true", "cleanup.policy": "compact"}, on), bad, "unsupported for the compacted topics")
    _fails(
        lambda: validate_topic_configs({"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "200"}, on),
        bad,
        "Invalid value 200 for configuration local.retention.bytes: Value must not be more than retention.bytes property value: 100",
    )
    _fails(
        lambda: validate_topic_configs({"remote.storage.enable": "false"}, on, existing={"remote.storage.enable": "true"}),
        bad,
        "It is invalid to disable remote storage without deleting remote data.",
    )


def test_broker_dynamic_validation_answers_invalid_request_like_kafka():
    bad = ErrorCode.INVALID_REQUEST
    _fails(lambda: validate_broker_configs({"log.dirs": "/x", "broker.id": "2"}), bad, "Cannot update these configs dynamically: Set(broker.id, log.dirs)")
    _fails(lambda: validate_broker_configs({"ssl.keystore.location": "/ks"}), bad, "only per-listener using the listener prefix: Set(ssl.keystore.location)")
    _fails(lambda: validate_broker_configs({"listeners": "PLAINTEXT://:1"}, per_broker=False), bad, "broker id must be specified: Set(listeners)")
    _fails(lambda: validate_broker_configs({"num.io.threads": "many"}), bad, "Invalid value many for configuration num.io.threads: Not a number of type INT")
    _fails(lambda: validate_broker_configs({"leader.replication.throttled.rate": "-1"}), bad, "Value must be at least 0")
    validate_broker_configs({"log.retention.ms": "1000", "listener.name.internal.ssl.keystore.location": "/ks", "custom.key": "1"})
    assert is_dynamically_updatable("log.retention.ms") and is_dynamically_updatable("custom.key")
    assert not is_dynamically_updatable("log.retention.hours")


def test_broker_dynamic_validation_against_the_running_config():
    broker = BrokerConfig({"num.io.threads": "8"})
    validate_broker_configs({"num.io.threads": "16"}, broker=broker)
    _fails(lambda: validate_broker_configs({"num.io.threads": "17"}, broker=broker), ErrorCode.INVALID_REQUEST, "Invalid dynamic configuration")
    _fails(lambda: validate_broker_configs({"log.retention.ms": "0"}, broker=broker), ErrorCode.INVALID_REQUEST, "log.retention.ms must be unlimited")


# -- incremental operations --------------------------------------------------------------------------------


def test_set_and_delete():
    result = apply_incremental({"retention.ms": "1", "segment.ms": "5"}, [("retention.ms", AlterOp.SET, "100"), ("segment.ms", AlterOp.DELETE, None)], "topic")
    assert result == {"retention.ms": "100"}


def test_append_and_subtract_on_list_topic_configs():
    appended = apply_incremental({}, [("cleanup.policy", AlterOp.APPEND, "compact")], "topic")
    assert appended == {"cleanup.policy": "delete,compact"}
    assert apply_incremental(appended, [("cleanup.policy", AlterOp.APPEND, "delete")], "topic") == appended
    assert apply_incremental(appended, [("cleanup.policy", AlterOp.SUBTRACT, "delete")], "topic") == {"cleanup.policy": "compact"}
    throttled = apply_incremental({}, [("leader.replication.throttled.replicas", 2, "0:1,1:1")], "topic")
    assert throttled == {"leader.replication.throttled.replicas": "0:1,1:1"}


def test_append_to_a_non_list_key_is_invalid_config():
    _fails(
        lambda: apply_incremental({}, [("retention.ms", AlterOp.APPEND, "5")], "topic"),
        ErrorCode.INVALID_CONFIG,
        "Can't APPEND to key retention.ms because its type is not LIST.",
    )
    _fails(
        lambda: apply_incremental({}, [("num.io.threads", AlterOp.SUBTRACT, "1")], "broker"),
        ErrorCode.INVALID_CONFIG,
        "Config value subtract is not allowed for config key: num.io.threads",
    )


def test_broker_list_operations_start_from_the_default():
    assert apply_incremental({}, [("log.cleanup.policy", AlterOp.APPEND, "compact")], "broker") == {"log.cleanup.policy": "delete,compact"}
    reporters = apply_incremental({"metric.reporters": "a.A,b.B"}, [("metric.reporters", AlterOp.SUBTRACT, "a.A")], "broker")
    assert reporters == {"metric.reporters": "b.B"}


def test_malformed_requests_and_invalid_results():
    _fails(
        lambda: apply_incremental({}, [("retention.ms", 0, "1"), ("retention.ms", 1, None)], "topic"),
        ErrorCode.INVALID_REQUEST,
        "Error due to duplicate config keys",
    )
    _fails(lambda: apply_incremental({}, [("retention.ms", 0, None)], "topic"), ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms")
    _fails(lambda: apply_incremental({}, [("retention.ms", 7, "1")], "topic"), ErrorCode.INVALID_REQUEST, "Unknown operations type 7")
    _fails(lambda: apply_incremental({}, [("retention.ms", 0, "soon")], "topic"), ErrorCode.INVALID_CONFIG, "configuration retention.ms")
    _fails(lambda: apply_incremental({}, [("log.dirs", 0, "/x")], "broker"), ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.dirs)")


# -- topic keys Kafka 3.9 has ---------------------------------------------------------------------------------


def test_kafka_3_9_topic_keys_validate_with_kafkas_rules():
    bad = ErrorCode.INVALID_CONFIG
    assert validate_topic_configs({"compression.gzip.level": "-1"}).compression_gzip_level == -1
    _fails(lambda: validate_topic_configs({"compression.gzip.level": "0"}), bad, "Value must be between 1 and 9 or equal to -1")
    _fails(lambda: validate_topic_configs({"compression.zstd.level": "23"}), bad, "Value must be no more than 22")
    assert validate_topic_configs({"message.format.version": "2.8.1"}).message_format_version == "2.8.1"
    _fails(lambda: validate_topic_configs({"message.format.version": "3.10"}), bad, "Version 3.10 is not a valid version")
    assert validate_topic_configs({"follower.replication.throttled.replicas": "*"}).follower_replication_throttled_replicas == ("*",)
    _fails(lambda: validate_topic_configs({"follower.replication.throttled.replicas": "0-1"}), bad, "must be the literal '*'")
    _fails(lambda: validate_topic_configs({"local.retention.ms": "-3"}), bad, "Value must be at least -2")


def test_kafka_3_9_topic_keys_take_their_broker_synonyms():
    broker = BrokerConfig(
        {
            "log.message.downconversion.enable": "false",
            "log.local.retention.bytes": "10",
            "compression.zstd.level": "9",
            "log.message.format.version": "2.8",
            "log.message.timestamp.after.max.ms": "3600000",
        }
    )
    names = ["message.downconversion.enable", "local.retention.bytes", "compression.zstd.level", "message.format.version", "message.timestamp.after.max.ms"]
    entries = describe_topic_configs({}, broker, names, False, False)
    assert {entry.name: (entry.value, entry.source) for entry in entries} == {
        "message.downconversion.enable": ("false", S.STATIC_BROKER_CONFIG),
        "local.retention.bytes": ("10", S.STATIC_BROKER_CONFIG),
        "compression.zstd.level": ("9", S.STATIC_BROKER_CONFIG),
        "message.format.version": ("2.8", S.STATIC_BROKER_CONFIG),
        "message.timestamp.after.max.ms": ("3600000", S.STATIC_BROKER_CONFIG),
    }


def test_timestamp_bounds_fall_back_to_the_deprecated_difference_key():
    difference_only = validate_topic_configs({"message.timestamp.difference.max.ms": "60000"})
    assert (difference_only.effective_timestamp_before_max_ms, difference_only.effective_timestamp_after_max_ms) == (60000, 60000)
    both = validate_topic_configs({"message.timestamp.difference.max.ms": "60000", "message.timestamp.before.max.ms": "10"})
    assert (both.effective_timestamp_before_max_ms, both.effective_timestamp_after_max_ms) == (10, 60000)
    assert both.message_timestamp_after_max_ms == 2**63 - 1
