"""``kcli configs`` against a kcli broker: Kafka 3.9's kafka-configs.sh lines and messages
(ConfigCommand), changes checked through confluent-kafka's admin client, the AlterConfigs fallback
for brokers without IncrementalAlterConfigs, and the one-line refusal against librdkafka's mock
cluster, which has no DescribeConfigs."""

from __future__ import annotations

import asyncio
import json
import types
import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from kcli.tools.configs import parse_configs_to_add

pytestmark = pytest.mark.timeout(120)


def name(label: str) -> str:
    return f"cfg-{label}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture
def topic(admin) -> str:
    topic = name("t")
    admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10)[topic].result(10)
    return topic


def configs_of(admin: AdminClient, kind: ResourceType, entity: str) -> dict:
    resource = ConfigResource(kind, entity)
    return admin.describe_configs([resource])[resource].result(10)


# -- topics ------------------------------------------------------------------------------------------


def test_alter_and_describe_topic_configs(kcli, broker, admin, topic):
    altered = kcli("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type", "topics", "--entity-name", topic,
                   "--add-config", "retention.ms=5000,cleanup.policy=[compact,delete]")
    assert (altered.returncode, altered.lines) == (0, [f"Completed updating config for topic {topic}."]), altered
    current = configs_of(admin, ResourceType.TOPIC, topic)
    assert current["retention.ms"].value == "5000"
    assert current["cleanup.policy"].value == "compact,delete"

    described = kcli("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic)
    assert described.returncode == 0
    header, *entries = described.lines
    assert header == f"Dynamic configs for topic {topic} are:"
    # Only the topic's overrides, sorted by name; the first synonym is the override itself.
    assert [e.split("=", 1)[0] for e in entries] == ["  cleanup.policy", "  retention.ms"]
    assert entries[0].startswith("  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete")
    assert entries[1].startswith("  retention.ms=5000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=5000")
    assert all(e.endswith("}") for e in entries)

    deleted = kcli("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--topic", topic, "--delete-config", "retention.ms")
    assert deleted.lines == [f"Completed updating config for topic {topic}."]
    assert configs_of(admin, ResourceType.TOPIC, topic)["retention.ms"].source != 1  # no longer a topic override


def test_deleting_a_config_the_topic_does_not_set_fails(inproc, broker, topic):
    result = inproc("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--topic", topic, "--delete-config", "retention.ms,segment.ms")
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["Error: Invalid config(s): retention.ms,segment.ms"]


def test_add_config_file(inproc, broker, admin, topic, tmp_path):
    path = tmp_path / "topic.properties"
    path.write_text("max.message.bytes = 300000\nsegment.ms=7200000\n")
    result = inproc("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--topic", topic, "--add-config-file", str(path))
    assert result.lines == [f"Completed updating config for topic {topic}."], result
    current = configs_of(admin, ResourceType.TOPIC, topic)
    assert (current["max.message.bytes"].value, current["segment.ms"].value) == ("300000", "7200000")


def test_describe_all_lists_every_topic_config(inproc, broker, admin, topic):
    result = inproc("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic, "--all")
    assert result.lines[0] == f"All configs for topic {topic} are:"
    names = [line.split("=", 1)[0].strip() for line in result.lines[1:]]
    assert names == sorted(configs_of(admin, ResourceType.TOPIC, topic))
    assert any("synonyms={DEFAULT_CONFIG:" in line for line in result.lines[1:])


def test_bad_values_are_the_brokers_answer(inproc, broker, topic):
    result = inproc("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--topic", topic, "--add-config", "retention.ms=soon")
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: ") and "retention.ms" in line


def test_describe_missing_topic(kcli, broker):
    topic = name("missing")
    result = kcli("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic)
    assert result.returncode == 1
    assert result.lines == [f"Dynamic configs for topic {topic} are:"]
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("Error: ")


def test_describe_json(inproc, broker, topic):
    inproc("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--topic", topic, "--add-config", "retention.ms=7000")
    result = inproc("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic, "--output", "json")
    [entity] = [json.loads(line) for line in result.lines]
    assert entity["entity_type"] == "topics" and entity["entity_name"] == topic
    [config] = entity["configs"]
    assert {k: config[k] for k in ("name", "value", "source", "sensitive", "read_only")} == {
        "name": "retention.ms", "value": "7000", "source": "DYNAMIC_TOPIC_CONFIG", "sensitive": False, "read_only": False,
    }
    assert config["synonyms"][0] == {"name": "retention.ms", "value": "7000", "source": "DYNAMIC_TOPIC_CONFIG"}


# -- brokers and broker loggers ----------------------------------------------------------------------


def test_broker_and_default_broker_configs(kcli, broker, admin):
    per_broker = kcli("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--broker", "0", "--add-config", "log.cleaner.backoff.ms=16000")
    assert per_broker.lines == ["Completed updating config for broker 0."], per_broker
    default = kcli("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--entity-type", "brokers", "--entity-default",
                   "--add-config", "log.cleaner.backoff.ms=17000")
    assert default.lines == ["Completed updating default config for brokers in the cluster."], default
    try:
        assert configs_of(admin, ResourceType.BROKER, "0")["log.cleaner.backoff.ms"].value == "16000"
        described = kcli("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--entity-type", "brokers")
        assert described.returncode == 0
        lines = described.lines
        per_index = lines.index("Dynamic configs for broker 0 are:")
        default_index = lines.index("Default configs for brokers in the cluster are:")
        assert per_index < default_index
        assert lines[per_index + 1].startswith("  log.cleaner.backoff.ms=16000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms=16000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=17000")
        assert lines[default_index + 1].startswith("  log.cleaner.backoff.ms=17000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=17000")
    finally:
        kcli("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--broker", "0", "--delete-config", "log.cleaner.backoff.ms")
        kcli("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--broker-defaults", "--delete-config", "log.cleaner.backoff.ms")
    after = configs_of(admin, ResourceType.BROKER, "0")["log.cleaner.backoff.ms"]
    assert after.source not in (2, 3)  # neither a per-broker nor a cluster-default dynamic config


def test_broker_loggers(inproc, broker):
    described = inproc("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--broker-logger", "0")
    assert described.lines[0] == "Dynamic configs for broker-logger 0 are:"
    assert "  root=" in "\n".join(described.lines)
    logger = "kcli.broker"
    altered = inproc("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--broker-logger", "0", "--add-config", f"{logger}=DEBUG")
    assert altered.lines == ["Completed updating config for broker-logger 0."], altered
    again = inproc("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--entity-type", "broker-loggers", "--entity-name", "0")
    assert f"  {logger}=DEBUG sensitive=false synonyms={{}}" in again.lines
    inproc("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--broker-logger", "0", "--delete-config", logger)
    unknown = inproc("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--broker-logger", "0", "--add-config", "no.such.logger=DEBUG")
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines() == ["Error: Invalid broker logger(s): no.such.logger"]


def test_alter_falls_back_to_alter_configs_without_the_incremental_api(broker, admin, topic):
    """Against a broker that lacks IncrementalAlterConfigs (Kafka before 2.3), SET, DELETE, APPEND
    and SUBTRACT go out as one AlterConfigs carrying the topic's whole new dynamic set."""
    from kcli.client.admin import TOPIC, Admin, AlterOp, ConfigOp, ConfigResource as Resource
    from kcli.client.network_client import NetworkClient

    sent: list[int] = []

    async def go():
        async with NetworkClient(broker.bootstrap) as cluster:
            connection = await cluster.any_connection()
            del connection.versions[44]  # as an old broker would answer ApiVersions
            real_call = cluster.call

            async def recording_call(node, api_key, fields, **kwargs):
                sent.append(api_key)
                return await real_call(node, api_key, fields, **kwargs)

            cluster.call = recording_call
            resource = Resource(TOPIC, topic)
            admin_ = Admin(cluster)
            first = await admin_.incremental_alter_configs({resource: [
                ConfigOp("retention.ms", AlterOp.SET, "9000"),
                ConfigOp("cleanup.policy", AlterOp.SET, "delete"),
                ConfigOp("segment.ms", AlterOp.SET, "3600000"),
            ]})
            second = await admin_.incremental_alter_configs({resource: [
                ConfigOp("segment.ms", AlterOp.DELETE),
                ConfigOp("cleanup.policy", AlterOp.APPEND, "compact"),
            ]})
            return first[resource], second[resource]

    first, second = asyncio.run(asyncio.wait_for(go(), 30))
    assert (first, second) == (None, None)
    assert 44 not in sent and sent.count(33) == 2
    current = configs_of(admin, ResourceType.TOPIC, topic)
    assert current["retention.ms"].value == "9000"  # kept through the second replacement
    assert current["cleanup.policy"].value == "delete,compact"
    assert current["segment.ms"].source != 1


# -- argument checks ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--topic", "t"), "Command must include exactly one action: --describe, --alter"),
        (("--describe", "--alter", "--topic", "t"), "Command must include exactly one action: --describe, --alter"),
        (("--describe", "--topic", "t", "--add-config", "a=b"), 'Option "[describe]" can\'t be used with option "[add-config]"'),
        (("--describe", "--topic", "t", "--delete-config", "a"), 'Option "[describe]" can\'t be used with option "[delete-config]"'),
        (("--describe", "--entity-type", "topics", "--entity-type", "topics"), "Duplicate entity type(s) specified: topics"),
        (("--describe", "--entity-type", "things"),
         "Invalid entity type things, the entity type must be one of topics, clients, users, brokers, ips, broker-loggers, client-metrics with a --bootstrap-server or --bootstrap-controller argument"),
        (("--describe",), "At least one entity type must be specified"),
        (("--describe", "--entity-type", "topics", "--entity-type", "brokers"), "Only 'users' and 'clients' entity types may be specified together"),
        (("--describe", "--entity-name", "x", "--topic", "t"), "--entity-{type,name,default} should not be used in conjunction with specific entity flags"),
        (("--describe", "--broker", "x"), "The entity name for brokers must be a valid integer broker id, but it is: x"),
        (("--describe", "--entity-type", "broker-loggers"), "an entity name must be specified with --describe of broker-loggers"),
        (("--alter", "--entity-type", "topics", "--add-config", "a=b"), "an entity name must be specified with --alter of topics"),
        (("--alter", "--entity-type", "brokers", "--add-config", "a=b"), "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips"),
        (("--alter", "--topic", "t", "--add-config", "a=b", "--add-config-file", "f"), "Only one of --add-config or --add-config-file must be specified"),
        (("--alter", "--topic", "t"), "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"),
        (("--alter", "--topic", "t", "--add-config", "a"), 'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".'),
        (("--alter", "--topic", "t", "--add-config", "a b=c"), "Invalid character found for config key: a b"),
        (("--alter", "--entity-type", "topics", "--entity-name", "a", "--entity-name", "b", "--add-config", "x=y"), "An entity name must be specified for every entity type"),
    ],
)
def test_argument_checks_use_kafkas_messages(inproc, args, message):
    result = inproc("configs", "--bootstrap-server", "127.0.0.1:9", *args)
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [f"Error: {message}"]


def test_connection_options(inproc):
    none = inproc("configs", "--describe", "--topic", "t")
    assert none.stderr.splitlines() == ["Error: One of the required --bootstrap-server, --boostrap-controller, or --zookeeper arguments must be specified"]
    both = inproc("configs", "--describe", "--topic", "t", "--bootstrap-server", "h:1", "--zookeeper", "z:2181")
    assert both.stderr.splitlines() == ["Error: Only one of --bootstrap-server, --boostrap-controller, and --zookeeper can be specified"]


@pytest.mark.parametrize("entity", [("--client", "app-1"), ("--client-defaults",), ("--entity-type", "ips", "--entity-name", "1.2.3.4")])
def test_quota_entities_are_refused_in_one_line(inproc, entity):
    result = inproc("configs", "--bootstrap-server", "127.0.0.1:9", "--describe", *entity)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: entity type '") and "not supported by kcli" in line


def test_add_config_parsing_follows_kafka():
    out = types.SimpleNamespace(lines=[], line=lambda text: out.lines.append(text))
    parsed = parse_configs_to_add("a=1, b = [x,y] ,c=,d=[k=v]", None, out)
    assert parsed == {"a": "1", "b": "x,y", "c": "", "d": "k=v"}
    assert out.lines == []
    parse_configs_to_add("message.format.version=2.8", None, out)
    assert out.lines == [
        "WARNING: The configuration message.format.version=2.8 is specified. This configuration will be ignored if the version is newer "
        "than the inter.broker.protocol.version specified in the broker or if the inter.broker.protocol.version is 3.0 or newer. "
        "This configuration is deprecated and it will be removed in Apache Kafka 4.0."
    ]


# -- the mock cluster --------------------------------------------------------------------------------


def test_mock_cluster_without_describe_configs_is_one_line(kcli, mock_cluster):
    result = kcli("configs", "--bootstrap-server", mock_cluster.bootstrap, "--describe", "--broker", "1")
    assert result.returncode == 1
    assert result.lines == ["Dynamic configs for broker 1 are:"]
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: ") and "describe_configs" in line


def test_admin_describe_configs_with_documentation(broker, topic):
    from kcli.client.admin import TOPIC, Admin, ConfigResource as Resource
    from kcli.client.network_client import NetworkClient

    async def go():
        async with NetworkClient(broker.bootstrap) as cluster:
            resource = Resource(TOPIC, topic)
            plain = await Admin(cluster).describe_configs([resource])
            documented = await Admin(cluster).describe_configs([resource], include_synonyms=True, include_documentation=True)
            return plain[resource], documented[resource]

    plain, documented = asyncio.run(asyncio.wait_for(go(), 30))
    assert plain.error is None and documented.error is None
    assert all(e.documentation is None and e.synonyms == () for e in plain.entries)
    policy = documented.get("cleanup.policy")
    assert policy.documentation
    assert [(s.name, s.source.name) for s in policy.synonyms] == [("log.cleanup.policy", "DEFAULT_CONFIG")]
