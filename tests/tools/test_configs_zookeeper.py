"""``kcli configs --zookeeper``: Kafka 2.8's ConfigCommand through ZooKeeper, on a real ZooKeeper.

Expected lines come from Kafka 2.8.2's ConfigCommand.scala (processCommandWithZk,
describeConfigWithZk, alterConfigWithZk, Entity.toString, checkArgs), AdminZkClient.scala
(changeTopicConfig, changeBrokerConfig, parseBroker), DynamicConfig.scala and LogConfig.scala, and
the reference (kafka-tools.md 0.2: Properties iterate as a Java Hashtable; 6.2: the
/config/changes notification). Most tests work on ZooKeeper alone, each in a chroot of its own,
writing by hand what a broker would; the last one checks that live kcli brokers in cluster mode
apply what the tool writes.
"""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kazoo.client import KazooClient

from tests.cluster.conftest import Cluster, wait_until

pytestmark = pytest.mark.timeout(180)

# Printed by Kafka 2.8's ConfigCommand.main before it opens its ZooKeeper session.
DEPRECATION = [
    "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.",
    "Use --bootstrap-server instead to specify a broker to connect to.",
]
BOOTSTRAP_INFO = (
    "Broker configuration updates using ZooKeeper are supported for bootstrapping before brokers"
    " are started to enable encrypted password configs to be stored in ZooKeeper."
)


@pytest.fixture
def chroot(zookeeper_server):
    """A fresh chroot with Kafka's persistent config paths and no broker: ``(connect, kazoo client)``."""
    connect = f"{zookeeper_server.connect}/configs-zk-{uuid.uuid4().hex[:8]}"
    client = KazooClient(hosts=connect.split("/")[0])
    client.start(timeout=15)
    client.ensure_path("/" + connect.split("/", 1)[1])
    client.stop()
    client.close()
    client = KazooClient(hosts=connect)
    client.start(timeout=15)
    for path in ("/config/topics", "/config/brokers", "/config/changes", "/brokers/topics", "/brokers/ids"):
        client.ensure_path(path)
    try:
        yield connect, client
    finally:
        client.stop()
        client.close()


def write_config(client: KazooClient, path: str, config: dict[str, str]) -> None:
    client.create(path, json.dumps({"version": 1, "config": config}).encode(), makepath=True)


def znode(client: KazooClient, path: str):
    return json.loads(client.get(path)[0])


def notifications(client: KazooClient) -> list[dict]:
    children = sorted(client.get_children("/config/changes"))
    assert all(child.startswith("config_change_") and len(child) == len("config_change_") + 10 for child in children)
    return [znode(client, f"/config/changes/{child}") for child in children]


def create_topic(client: KazooClient, topic: str) -> None:
    """A topic as Kafka 2.8's tools write it: its assignment and its (empty) config."""
    client.create(f"/brokers/topics/{topic}", b'{"version":2,"partitions":{"0":[0]},"adding_replicas":{},"removing_replicas":{}}')
    write_config(client, f"/config/topics/{topic}", {})


def register(client: KazooClient, broker_id: int) -> None:
    """A broker registration as a Kafka 2.8 broker writes it (reference 6.2)."""
    document = {"listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "endpoints": [f"PLAINTEXT://127.0.0.1:{9092 + broker_id}"],
                "jmx_port": -1, "features": {}, "host": "127.0.0.1", "timestamp": "1643692590218", "port": 9092 + broker_id, "version": 5}
    client.create(f"/brokers/ids/{broker_id}", json.dumps(document).encode(), ephemeral=True)


# -- describe ----------------------------------------------------------------------------------------


def test_describe_prints_kafka_28_lines_in_properties_order(kcli, chroot):
    connect, zk = chroot
    # Written in this order, a Java 8 Hashtable (capacity 11) enumerates them from its highest
    # bucket down, the newest first within one: segment.bytes is in bucket 8, compression.type and
    # cleanup.policy both in bucket 3 (String.hashCode & 0x7FFFFFFF % 11). The reference quotes
    # this line as seen from a ZooKeeper-era Kafka.
    write_config(zk, "/config/topics/orders", {"compression.type": "producer", "cleanup.policy": "compact", "segment.bytes": "104857600"})
    write_config(zk, "/config/topics/plain", {})
    write_config(zk, "/config/brokers/0", {"leader.replication.throttled.rate": "1000"})
    write_config(zk, "/config/brokers/<default>", {"log.retention.ms": "60000"})

    one = kcli("configs", "--zookeeper", connect, "--describe", "--entity-type", "topics", "--entity-name", "orders")
    assert (one.returncode, one.stderr) == (0, ""), one
    assert one.lines == DEPRECATION + ["Configs for topic 'orders' are segment.bytes=104857600,cleanup.policy=compact,compression.type=producer"]

    # Without a name: every entity with a config znode, in ZooKeeper's (unspecified) order.
    every = kcli("configs", "--zookeeper", connect, "--describe", "--entity-type", "topics")
    assert every.lines[:2] == DEPRECATION
    assert sorted(every.lines[2:]) == [
        "Configs for topic 'orders' are segment.bytes=104857600,cleanup.policy=compact,compression.type=producer",
        "Configs for topic 'plain' are ",
    ]
    brokers = kcli("configs", "--zookeeper", connect, "--describe", "--entity-type", "brokers")
    assert sorted(brokers.lines[2:]) == [
        "Configs for brokers '0' are leader.replication.throttled.rate=1000",
        "Configs for default brokers are log.retention.ms=60000",
    ]
    default = kcli("configs", "--zookeeper", connect, "--describe", "--entity-type", "brokers", "--entity-default")
    assert default.lines == DEPRECATION + ["Configs for default brokers are log.retention.ms=60000"]
    # A broker or topic without a znode has no overrides: an empty list, no error.
    absent = kcli("configs", "--zookeeper", connect, "--describe", "--broker", "7")
    assert (absent.returncode, absent.lines) == (0, DEPRECATION + ["Configs for brokers '7' are "])


@pytest.mark.parametrize(
    "args, message",
    [
        # checkArgs: --all needs the AdminClient path.
        (("--describe", "--all", "--topic", "t"), "--bootstrap-server must be specified for --all"),
        # checkArgs: ZkSupportedConfigTypes is ConfigType.all, joined with "," and no space.
        (("--describe", "--entity-type", "broker-loggers", "--entity-name", "0"),
         "Invalid entity type broker-loggers, the entity type must be one of topics,clients,users,brokers,ips with the --zookeeper argument"),
        (("--alter", "--entity-type", "topics", "--add-config", "a=b"), "an entity name must be specified with --alter of topics"),
        (("--alter", "--entity-type", "brokers", "--add-config", "a=b"),
         "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips"),
    ],
)
def test_option_checks_are_kafka_28s(inproc, args, message):
    result = inproc("configs", "--zookeeper", "127.0.0.1:9", *args)
    assert (result.returncode, result.stderr.splitlines()) == (2, [f"Error: {message}"])


def test_clients_are_one_line_before_zookeeper_is_reached(inproc):
    result = inproc("configs", "--zookeeper", "127.0.0.1:9", "--describe", "--entity-type", "clients")
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: entity type 'clients' is not available with --zookeeper yet")


# -- alter topics ------------------------------------------------------------------------------------


def test_alter_topic_writes_the_config_and_a_change_notification(kcli, chroot):
    connect, zk = chroot
    create_topic(zk, "events")
    added = kcli("configs", "--zookeeper", connect, "--alter", "--entity-type", "topics", "--entity-name", "events",
                 "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]")
    assert (added.returncode, added.stderr) == (0, ""), added
    assert added.lines == DEPRECATION + ["Completed updating config for entity: topic 'events'."]
    assert znode(zk, "/config/topics/events") == {"version": 1, "config": {"retention.ms": "1000", "cleanup.policy": "compact,delete"}}
    assert notifications(zk) == [{"version": 2, "entity_path": "topics/events"}]

    removed = kcli("configs", "--zookeeper", connect, "--alter", "--topic", "events", "--delete-config", "retention.ms")
    assert removed.lines == DEPRECATION + ["Completed updating config for entity: topic 'events'."], removed
    assert znode(zk, "/config/topics/events") == {"version": 1, "config": {"cleanup.policy": "compact,delete"}}
    assert notifications(zk) == [{"version": 2, "entity_path": "topics/events"}] * 2


def test_alter_topic_from_a_properties_file_warns_of_message_format_version_as_28_does(kcli, chroot, tmp_path):
    connect, zk = chroot
    create_topic(zk, "legacy")
    props = tmp_path / "topic.properties"
    props.write_text("message.format.version=2.8\nretention.ms = 5000\n")
    result = kcli("configs", "--zookeeper", connect, "--alter", "--topic", "legacy", "--add-config-file", str(props))
    assert (result.returncode, result.stderr) == (0, ""), result
    # Kafka 2.8's parseConfigsToBeAdded (the 3.x text adds sentences about 3.0 and 4.0).
    assert result.lines == DEPRECATION + [
        "WARNING: The configuration message.format.version=2.8 is specified. This configuration will be ignored if the version "
        "is newer than the inter.broker.protocol.version specified in the broker.",
        "Completed updating config for entity: topic 'legacy'.",
    ]
    assert znode(zk, "/config/topics/legacy")["config"] == {"message.format.version": "2.8", "retention.ms": "5000"}


@pytest.mark.parametrize(
    "args, message",
    [
        # alterConfigWithZk's own check (InvalidConfigurationException).
        (("--topic", "events", "--delete-config", "retention.ms,segment.ms"), "Invalid config(s): retention.ms,segment.ms"),
        # AdminZkClient.validateTopicConfig (UnknownTopicOrPartitionException).
        (("--topic", "missing", "--add-config", "retention.ms=1"), "Topic 'missing' does not exist."),
        # LogConfig.validateNames (InvalidConfigurationException) and ConfigDef.parse (ConfigException).
        (("--topic", "events", "--add-config", "no.such.config=1"), "Unknown topic config name: no.such.config"),
        (("--topic", "events", "--add-config", "retention.ms=banana"), "Invalid value banana for configuration retention.ms: Not a number of type LONG"),
    ],
)
def test_alter_topic_failures_write_nothing(kcli, chroot, args, message):
    connect, zk = chroot
    create_topic(zk, "events")
    result = kcli("configs", "--zookeeper", connect, "--alter", *args)
    assert (result.returncode, result.lines, result.stderr.splitlines()) == (1, DEPRECATION, [f"Error: {message}"])
    assert znode(zk, "/config/topics/events") == {"version": 1, "config": {}}
    assert notifications(zk) == []


# -- alter brokers -----------------------------------------------------------------------------------


def test_broker_configs_through_zookeeper_follow_kafka_28s_bootstrap_rule(kcli, chroot):
    connect, zk = chroot
    # No broker registered yet: the defaults and a broker's own dynamic configs may be set.
    defaults = kcli("configs", "--zookeeper", connect, "--alter", "--entity-type", "brokers", "--entity-default",
                    "--add-config", "log.retention.ms=60000")
    assert (defaults.returncode, defaults.lines) == (0, DEPRECATION + ["Completed updating config for entity: default brokers."]), defaults
    assert znode(zk, "/config/brokers/<default>") == {"version": 1, "config": {"log.retention.ms": "60000"}}
    assert notifications(zk) == [{"version": 2, "entity_path": "brokers/<default>"}]
    static = kcli("configs", "--zookeeper", connect, "--alter", "--broker", "1", "--add-config", "broker.id=5")
    assert (static.returncode, static.stderr.splitlines()) == (1, ["Error: Cannot update these configs dynamically: Set(broker.id)"])

    register(zk, 0)
    running = kcli("configs", "--zookeeper", connect, "--alter", "--broker", "0", "--add-config", "log.retention.ms=1000")
    assert (running.returncode, running.stderr.splitlines()) == (1, [
        "Error: requirement failed: --bootstrap-server option must be specified to update broker configs Set(log.retention.ms)"
        f" when broker 0 is running. {BOOTSTRAP_INFO}"
    ])
    cluster_wide = kcli("configs", "--zookeeper", connect, "--alter", "--broker-defaults", "--add-config", "log.retention.ms=1000")
    assert cluster_wide.stderr.splitlines() == [
        "Error: requirement failed: --bootstrap-server option must be specified to update broker configs Set(log.retention.ms)"
        f" for default cluster if any broker is running. {BOOTSTRAP_INFO}"
    ]
    # The replication throttles may be changed through ZooKeeper at any time.
    throttled = kcli("configs", "--zookeeper", connect, "--alter", "--broker", "0", "--add-config", "leader.replication.throttled.rate=1000")
    assert (throttled.returncode, throttled.lines) == (0, DEPRECATION + ["Completed updating config for entity: brokers '0'."]), throttled
    assert znode(zk, "/config/brokers/0") == {"version": 1, "config": {"leader.replication.throttled.rate": "1000"}}
    bad = kcli("configs", "--zookeeper", connect, "--alter", "--broker", "0", "--add-config", "follower.replication.throttled.rate=-1")
    assert bad.stderr.splitlines() == ["Error: Invalid value -1 for configuration follower.replication.throttled.rate: Value must be at least 0"]
    # A broker that is not running takes its dynamic configs.
    stopped = kcli("configs", "--zookeeper", connect, "--alter", "--broker", "1", "--add-config", "log.retention.ms=1000")
    assert (stopped.returncode, stopped.lines[-1]) == (0, "Completed updating config for entity: brokers '1'."), stopped
    assert [n["entity_path"] for n in notifications(zk)] == ["brokers/<default>", "brokers/0", "brokers/1"]


# -- live brokers ------------------------------------------------------------------------------------


def described(bootstrap: str, kind, name: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(kind, name)
    return admin.describe_configs([resource])[resource].result(30)


def test_live_brokers_apply_what_the_tool_writes(kcli, zookeeper_server, tmp_path):
    cluster = Cluster(zookeeper_server, f"/configs-zk-live-{uuid.uuid4().hex[:8]}", tmp_path)
    try:
        cluster.start(2)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("live", 2, 2)])["live"].result(30)
        altered = kcli("configs", "--zookeeper", cluster.connect, "--alter", "--topic", "live", "--add-config", "retention.ms=12345")
        assert altered.returncode == 0, altered
        for broker in cluster.brokers.values():
            wait_until(lambda: described(broker.bootstrap, ConfigResource.Type.TOPIC, "live")["retention.ms"].value == "12345")
        throttled = kcli("configs", "--zookeeper", cluster.connect, "--alter", "--broker", "1",
                         "--add-config", "leader.replication.throttled.rate=4096")
        assert throttled.returncode == 0, throttled
        entry = wait_until(lambda: (e := described(cluster.bootstrap, ConfigResource.Type.BROKER, "1")["leader.replication.throttled.rate"]).value == "4096" and e)
        assert entry.source == 2  # DYNAMIC_BROKER_CONFIG

        removed = kcli("configs", "--zookeeper", cluster.connect, "--alter", "--topic", "live", "--delete-config", "retention.ms")
        assert removed.returncode == 0, removed
        wait_until(lambda: described(cluster.bootstrap, ConfigResource.Type.TOPIC, "live")["retention.ms"].value == "604800000")
    finally:
        cluster.stop()
