"""The admin client's pure parts: the AlterConfigs replacement set built for brokers without
IncrementalAlterConfigs, config sources, and Java admin properties turned into client settings."""

from __future__ import annotations

import pytest

from kcli.client.admin import (
    BROKER,
    TOPIC,
    AlterOp,
    ConfigEntry,
    ConfigOp,
    ConfigResource,
    ConfigResult,
    ConfigSource,
    _apply_ops,
    failure,
)
from kcli.errors import ErrorCode, KafkaError, KcliError, UsageError
from kcli.tools._admin_common import client_settings


def result(resource: ConfigResource, *entries: tuple[str, str | None, ConfigSource]) -> ConfigResult:
    return ConfigResult(resource, tuple(ConfigEntry(name, value, source) for name, value, source in entries))


TOPIC_T = ConfigResource(TOPIC, "t")


def test_replacement_keeps_dynamic_configs_and_applies_set_and_delete():
    current = result(
        TOPIC_T,
        ("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("segment.ms", "60000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("segment.bytes", "1073741824", ConfigSource.STATIC_BROKER_CONFIG),
        ("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
    )
    ops = [ConfigOp("retention.ms", AlterOp.SET, "2000"), ConfigOp("segment.ms", AlterOp.DELETE), ConfigOp("max.message.bytes", AlterOp.SET, "5")]
    assert _apply_ops(TOPIC_T, current, ops) == {"retention.ms": "2000", "max.message.bytes": "5"}


def test_append_and_subtract_start_from_the_current_value():
    current = result(TOPIC_T, ("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG))
    assert _apply_ops(TOPIC_T, current, [ConfigOp("cleanup.policy", AlterOp.APPEND, "compact,delete")]) == {"cleanup.policy": "delete,compact"}
    overridden = result(TOPIC_T, ("cleanup.policy", "compact,delete", ConfigSource.DYNAMIC_TOPIC_CONFIG))
    assert _apply_ops(TOPIC_T, overridden, [ConfigOp("cleanup.policy", AlterOp.SUBTRACT, "delete")]) == {"cleanup.policy": "compact"}


def test_broker_resources_keep_their_own_dynamic_level():
    per_broker = result(
        ConfigResource(BROKER, "0"),
        ("log.cleaner.threads", "2", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("message.max.bytes", "100", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    )
    assert _apply_ops(ConfigResource(BROKER, "0"), per_broker, []) == {"log.cleaner.threads": "2"}
    defaults = result(
        ConfigResource(BROKER, ""),
        ("message.max.bytes", "100", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    )
    assert _apply_ops(ConfigResource(BROKER, ""), defaults, [ConfigOp("a", AlterOp.SET, "b")]) == {"message.max.bytes": "100", "a": "b"}


def test_replacement_refuses_to_drop_hidden_sensitive_values():
    current = result(ConfigResource(BROKER, "0"), ("ssl.key.password", None, ConfigSource.DYNAMIC_BROKER_CONFIG))
    with pytest.raises(KafkaError) as error:
        _apply_ops(ConfigResource(BROKER, "0"), current, [ConfigOp("log.cleaner.threads", AlterOp.SET, "2")])
    assert error.value.error_code is ErrorCode.INVALID_CONFIG and "ssl.key.password" in str(error.value)
    resent = _apply_ops(ConfigResource(BROKER, "0"), current, [ConfigOp("ssl.key.password", AlterOp.SET, "secret")])
    assert resent == {"ssl.key.password": "secret"}


def test_failures_carry_the_brokers_message_or_the_codes():
    assert str(failure(36, "Topic 't' already exists.")) == "Topic 't' already exists."
    assert failure(3).error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and str(failure(3)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message
    assert ConfigSource.of(1) is ConfigSource.DYNAMIC_TOPIC_CONFIG and ConfigSource.of(99) is ConfigSource.UNKNOWN


def test_client_settings_from_java_properties():
    warnings: list[str] = []
    props = {"bootstrap.servers": "a:1", "client.id": "me", "request.timeout.ms": "2500", "retries": "3", "retry.backoff.ms": "50",
             "retry.backoff.max.ms": "400", "ssl.truststore.location": "/x", "made.up": "1"}
    settings = client_settings(props, client_id="tool", warn=warnings.append)
    assert settings == {"bootstrap_servers": "a:1", "client_id": "me", "request_timeout": 2.5, "retries": 3, "retry_backoff": 0.05, "retry_backoff_max": 0.4}
    assert warnings == ["The configuration 'made.up' was supplied but isn't a known config."]
    assert client_settings({"bootstrap.servers": "a:1"}, bootstrap="b:2", client_id="tool")["bootstrap_servers"] == "b:2"
    assert client_settings({}, bootstrap="b:2", client_id="tool")["client_id"] == "tool"


def test_client_settings_refusals():
    # SASL without a mechanism means the Java client's default, GSSAPI, which kcli's client lacks.
    with pytest.raises(KcliError, match="sasl.mechanism=GSSAPI is not supported"):
        client_settings({"security.protocol": "SASL_SSL"}, bootstrap="a:1")
    with pytest.raises(KcliError, match="Invalid value TLS for configuration security.protocol"):
        client_settings({"security.protocol": "TLS"}, bootstrap="a:1")
    with pytest.raises(UsageError):
        client_settings({})
    with pytest.raises(KcliError, match="request.timeout.ms"):
        client_settings({"request.timeout.ms": "soon"}, bootstrap="a:1")
