"""The broker config catalog (Kafka 3.9 names, types, defaults, update modes) and BrokerConfig's rules."""

from __future__ import annotations

import pytest

from kcli.broker.config.broker_config import (
    BROKER_CONFIG_DEF,
    BrokerConfig,
    Endpoint,
    UpdateMode,
    broker_config_key,
    broker_config_synonyms,
    inter_broker_listener_problem,
    parse_listeners,
    update_mode,
)
from kcli.config import ConfigType, Password
from kcli.errors import ErrorCode, KafkaError, UsageError

_PYTHON_TYPES = {
    ConfigType.BOOLEAN: bool,
    ConfigType.STRING: str,
    ConfigType.INT: int,
    ConfigType.SHORT: int,
    ConfigType.LONG: int,
    ConfigType.DOUBLE: float,
    ConfigType.LIST: tuple,
    ConfigType.CLASS: str,
    ConfigType.PASSWORD: Password,
}


def test_every_default_has_its_type_and_survives_rendering_and_parsing():
    for key in BROKER_CONFIG_DEF:
        if key.default is None:
            continue
        assert isinstance(key.default, _PYTHON_TYPES[key.type]), key.name
        assert key.parse(key.default_string) == key.default, key.name


def test_the_catalog_is_broad_and_without_cluster_id():
    listed = [key.name for key in BROKER_CONFIG_DEF if not key.internal]
    assert len(listed) >= 120
    assert "cluster.id" not in BROKER_CONFIG_DEF
    assert all(key.doc and "\n" not in key.doc for key in BROKER_CONFIG_DEF)


@pytest.mark.parametrize(
    ("name", "config_type", "default"),
    [
        ("broker.id", ConfigType.INT, "-1"),
        ("listeners", ConfigType.STRING, "PLAINTEXT://:9092"),
        ("advertised.listeners", ConfigType.STRING, None),
        ("log.dir", ConfigType.STRING, "/tmp/kafka-logs"),
        ("log.dirs", ConfigType.STRING, None),
        ("num.partitions", ConfigType.INT, "1"),
        ("default.replication.factor", ConfigType.INT, "1"),
        ("auto.create.topics.enable", ConfigType.BOOLEAN, "true"),
        ("message.max.bytes", ConfigType.INT, "1048588"),
        ("socket.request.max.bytes", ConfigType.INT, "104857600"),
        ("log.retention.hours", ConfigType.INT, "168"),
        ("log.retention.ms", ConfigType.LONG, None),
        ("log.cleanup.policy", ConfigType.LIST, "delete"),
        ("log.cleaner.io.max.bytes.per.second", ConfigType.DOUBLE, "1.7976931348623157E308"),
        ("offsets.topic.num.partitions", ConfigType.INT, "50"),
        ("offsets.topic.replication.factor", ConfigType.SHORT, "3"),
        ("offsets.retention.minutes", ConfigType.INT, "10080"),
        ("group.initial.rebalance.delay.ms", ConfigType.INT, "3000"),
        ("group.max.session.timeout.ms", ConfigType.INT, "1800000"),
        ("max.incremental.fetch.session.cache.slots", ConfigType.INT, "1000"),
        ("fetch.max.bytes", ConfigType.INT, "57671680"),
        ("zookeeper.session.timeout.ms", ConfigType.INT, "18000"),
        ("inter.broker.protocol.version", ConfigType.STRING, "3.9-IV0"),
        ("ssl.keystore.password", ConfigType.PASSWORD, None),
    ],
)
def test_kafka_names_types_and_defaults(name, config_type, default):
    key = BROKER_CONFIG_DEF[name]
    assert (key.type, key.default_string) == (config_type, default)


def test_update_modes_follow_kafkas_dynamic_broker_config():
    assert update_mode("listeners") is UpdateMode.PER_BROKER
    assert update_mode("ssl.keystore.location") is UpdateMode.PER_BROKER
    assert update_mode("log.retention.ms") is UpdateMode.CLUSTER_WIDE
    assert update_mode("num.io.threads") is UpdateMode.CLUSTER_WIDE
    assert update_mode("max.connections") is UpdateMode.CLUSTER_WIDE
    assert update_mode("message.max.bytes") is UpdateMode.CLUSTER_WIDE
    assert update_mode("log.retention.hours") is UpdateMode.READ_ONLY
    assert update_mode("log.message.format.version") is UpdateMode.READ_ONLY
    assert update_mode("broker.id") is UpdateMode.READ_ONLY
    assert update_mode("log.dirs") is UpdateMode.READ_ONLY


def test_synonyms_and_listener_prefixed_keys():
    assert broker_config_synonyms("log.retention.hours") == ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    assert broker_config_synonyms("log.flush.interval.ms") == ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    assert broker_config_synonyms("listener.name.internal.ssl.keystore.location") == [
        "listener.name.internal.ssl.keystore.location",
        "ssl.keystore.location",
    ]
    assert broker_config_synonyms("listener.name.sasl_ssl.plain.sasl.jaas.config")[1] == "sasl.jaas.config"
    assert broker_config_key("listener.name.internal.ssl.key.password").type == ConfigType.PASSWORD
    assert broker_config_key("leader.replication.throttled.rate").type == ConfigType.LONG


# -- precedence ----------------------------------------------------------------------------------------


def test_retention_ms_over_minutes_over_hours():
    assert BrokerConfig({}).log_retention_ms == 168 * 3_600_000
    assert BrokerConfig({"log.retention.hours": "2"}).log_retention_ms == 7_200_000
    assert BrokerConfig({"log.retention.hours": "2", "log.retention.minutes": "3"}).log_retention_ms == 180_000
    assert BrokerConfig({"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "5"}).log_retention_ms == 5
    assert BrokerConfig({"log.retention.hours": "-5"}).log_retention_ms == -1


def test_roll_and_flush_fallbacks():
    assert BrokerConfig({"log.roll.hours": "1"}).log_roll_ms == 3_600_000
    assert BrokerConfig({"log.roll.hours": "1", "log.roll.ms": "250"}).log_roll_ms == 250
    assert BrokerConfig({"log.roll.jitter.hours": "1"}).log_roll_jitter_ms == 3_600_000
    assert BrokerConfig({"log.flush.scheduler.interval.ms": "42"}).log_flush_interval_ms == 42


def test_log_dirs_over_log_dir():
    assert BrokerConfig({}).log_dirs == ["/tmp/kafka-logs"]
    assert BrokerConfig({"log.dir": "/one"}).log_dirs == ["/one"]
    assert BrokerConfig({"log.dir": "/one", "log.dirs": "/a, /b"}).log_dirs == ["/a", "/b"]


def test_listeners_and_advertised_fallback():
    config = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
    assert config.listeners == [Endpoint("PLAINTEXT", "127.0.0.1", 0)]
    assert config.advertised_listeners == config.listeners
    advertised = BrokerConfig({"listeners": "PLAINTEXT://:9092", "advertised.listeners": "PLAINTEXT://kafka.example:9092"})
    assert advertised.advertised_listeners == [Endpoint("PLAINTEXT", "kafka.example", 9092)]
    assert BrokerConfig({}).listeners == [Endpoint("PLAINTEXT", "", 9092)]


def test_custom_listener_names_need_the_protocol_map():
    config = BrokerConfig(
        {
            "listeners": "client://:9092,REPLICATION://[::1]:9093",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,REPLICATION:SSL",
        }
    )
    assert config.listeners == [Endpoint("CLIENT", "", 9092), Endpoint("REPLICATION", "::1", 9093)]
    assert config.security_protocol("client") == "PLAINTEXT"
    with pytest.raises(KafkaError, match="No security protocol defined for listener CLIENT"):
        BrokerConfig({"listeners": "CLIENT://:9092"})


def test_controller_listeners_default_to_plaintext_and_are_not_advertised():
    config = BrokerConfig({"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"})
    assert config.security_protocol("CONTROLLER") == "PLAINTEXT"
    assert [endpoint.listener_name for endpoint in config.advertised_listeners] == ["PLAINTEXT"]


@pytest.mark.parametrize(
    ("listeners", "message"),
    [
        ("PLAINTEXT:9092", "Unable to parse PLAINTEXT:9092 to a broker endpoint"),
        ("PLAINTEXT://:9092,PLAINTEXT://:9093", "Each listener must have a different name"),
        ("PLAINTEXT://:9092,SSL://:9092", "Each listener must have a different port"),
    ],
)
def test_bad_listener_lists(listeners, message):
    with pytest.raises(KafkaError, match=message):
        BrokerConfig({"listeners": listeners})


def test_ipv4_and_ipv6_listeners_may_share_a_port():
    protocols = {"A": "PLAINTEXT", "B": "PLAINTEXT"}
    assert [e.port for e in parse_listeners("A://127.0.0.1:9092,B://[::1]:9092", protocols)] == [9092, 9092]


def test_broker_id_and_node_id_stand_in_for_each_other():
    assert BrokerConfig({"node.id": "3"}).get("broker.id") == 3
    assert BrokerConfig({"broker.id": "4"}).get("node.id") == 4
    assert BrokerConfig({}).broker_id == 0
    with pytest.raises(KafkaError, match="You must set `node.id` to the same value as `broker.id`."):
        BrokerConfig({"broker.id": "1", "node.id": "2"})


# -- values and validation -------------------------------------------------------------------------------


def test_typed_access_and_originals():
    config = BrokerConfig.from_properties({"num.partitions": " 6 ", "auto.create.topics.enable": "FALSE", "custom.key": "x"})
    assert config.get("num.partitions") == 6 and config.num_partitions == 6
    assert config.auto_create_topics_enable is False
    assert config.get("log.cleanup.policy") == ("delete",)
    assert config.get_string("log.cleaner.min.cleanable.ratio") == "0.5"
    assert config.originals == {"num.partitions": " 6 ", "auto.create.topics.enable": "FALSE", "custom.key": "x"}
    assert config.offsets_retention_ms == 10080 * 60_000
    with pytest.raises(KafkaError, match="Unknown broker config name: custom.key"):
        config.get("custom.key")


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"num.partitions": "abc"}, "Invalid value abc for configuration num.partitions: Not a number of type INT"),
        ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
        ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
        ({"log.cleanup.policy": "delete,keep"}, "Invalid value keep for configuration log.cleanup.policy: String must be one of: compact, delete"),
        ({"delete.topic.enable": "maybe"}, "Invalid value maybe for configuration delete.topic.enable: Expected value to be either true or false"),
        ({"inter.broker.protocol.version": "9.9"}, "Invalid value 9.9 for configuration inter.broker.protocol.version: Version 9.9 is not a valid version"),
        ({"log.retention.ms": "0"}, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"),
        ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0"),
        ({"log.cleaner.dedupe.buffer.size": "1048576"}, "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."),
        ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "Invalid security protocol `TLS` defined in listener.security.protocol.map"),
    ],
)
def test_invalid_values_raise_one_line_naming_the_key(props, message):
    with pytest.raises(KafkaError) as exc:
        BrokerConfig(props)
    assert exc.value.error_code == ErrorCode.INVALID_CONFIG
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_log_config_takes_topic_defaults_from_broker_keys():
    config = BrokerConfig(
        {
            "log.segment.bytes": "2048",
            "log.retention.hours": "1",
            "log.cleanup.policy": "compact",
            "compression.type": "zstd",
            "log.message.timestamp.before.max.ms": "5000",
            "log.local.retention.ms": "100",
        }
    )
    log_config = config.log_config()
    assert (log_config.segment_bytes, log_config.retention_ms, log_config.cleanup_policy) == (2048, 3_600_000, ("compact",))
    assert (log_config.compression_type, log_config.message_timestamp_before_max_ms, log_config.local_retention_ms) == ("zstd", 5000, 100)


def test_from_file_with_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("broker.id=1\nnum.partitions=3\nlog.dirs=/data\n")
    config = BrokerConfig.from_file(path, ["num.partitions=8", "broker.rack=r1"])
    assert (config.broker_id, config.num_partitions, config.broker_rack, config.log_dirs) == (1, 8, "r1", ["/data"])
    assert config.originals["num.partitions"] == "8"
    assert BrokerConfig.from_file(None).num_partitions == 1
    with pytest.raises(UsageError):
        BrokerConfig.from_file(path, ["num.partitions"])


def test_dynamic_layers_take_precedence_and_hide_static_synonyms():
    static = BrokerConfig({"log.retention.hours": "10", "num.io.threads": "4"})
    layered = static.with_dynamic(dynamic_default={"num.io.threads": "6", "log.retention.ms": "1000"}, dynamic={"num.io.threads": "5"})
    assert layered.get("num.io.threads") == 5
    assert layered.log_retention_ms == 1000
    assert static.with_dynamic(dynamic_default={"num.io.threads": "6"}).get("num.io.threads") == 6
    assert static.log_retention_ms == 36_000_000
    assert layered.originals == static.originals


def test_no_file_means_the_settings_of_kafkas_stock_server_properties():
    config = BrokerConfig.from_file(None, ["group.initial.rebalance.delay.ms=3000"])
    # Kafka's code defaults are 3 and 3000; its shipped config/server.properties sets 1 and 0.
    assert config.get("offsets.topic.replication.factor") == 1
    assert config.get("transaction.state.log.min.isr") == 1
    assert config.get("group.initial.rebalance.delay.ms") == 3000
    assert config.originals["broker.id"] == "0"
    assert BrokerConfig.from_properties({}).get("offsets.topic.replication.factor") == 3


@pytest.mark.parametrize(
    ("props", "problem"),
    [
        (
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
        ),
        ({"inter.broker.listener.name": "REPLICATION"}, "Listener with name REPLICATION defined in inter.broker.listener.name not found in listener.security.protocol.map."),
        (
            {"listeners": "CLIENT://:9092", "listener.security.protocol.map": "CLIENT:PLAINTEXT"},
            "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
            "The valid options based on currently configured listeners are CLIENT",
        ),
    ],
)
def test_the_inter_broker_listener_is_checked_as_kafka_checks_it(props, problem):
    assert inter_broker_listener_problem(BrokerConfig(props)) == problem


def test_the_inter_broker_listener_is_named_or_follows_the_inter_broker_protocol():
    named = BrokerConfig(
        {"listeners": "CLIENT://:9092,internal://:9093", "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
         "inter.broker.listener.name": "internal"}
    )
    assert named.inter_broker_listener_name == "INTERNAL" and inter_broker_listener_problem(named) is None
    assert BrokerConfig({}).inter_broker_listener_name == "PLAINTEXT" and inter_broker_listener_problem(BrokerConfig({})) is None
