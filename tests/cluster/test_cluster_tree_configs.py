"""Config overrides written into the tree by hand that do not parse (``retention.ms=banana``): a
live broker names the entity, key and value in one error line, keeps the value in effect before,
and goes on serving; in the cluster mode (ZooKeeper) and the embedded one (read at start)."""

from __future__ import annotations

import json

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kcli.metadata.embedded import EmbeddedStore
from tests.broker_process import BrokerProcess
from tests.cluster.conftest import wait_until, zk_session
from tests.cluster.test_zookeeper_cluster import consume, create_topic, produce


def create_with_configs(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the answer comes
    admin.create_topics([NewTopic(name, 2, 1, config=configs)])[name].result(30)


def topic_config(bootstrap: str, name: str, key: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    return admin.describe_configs([resource])[resource].result(30)[key].value


def entity_config(configs: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": configs}).encode()


def lines_about(broker: BrokerProcess, text: str) -> list[str]:
    return [line for line in broker.log_lines if text in line]


def assert_serves(broker: BrokerProcess, topic: str, group: str) -> None:
    produce(broker.bootstrap, topic, 10)
    assert len(consume(broker.bootstrap, topic, 10, group)) == 10


def test_an_invalid_topic_config_written_in_zookeeper_is_one_line_and_the_previous_value_stays(cluster):
    broker = cluster.start(1).brokers[0]
    create_with_configs(broker.bootstrap, "kept", {"retention.ms": "100000"})
    with zk_session(cluster) as zk:
        # As a ZooKeeper-era tool writes a change: the config, then its notification.
        zk.set("/config/topics/kept", entity_config({"retention.ms": "banana"}))
        zk.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/kept"}', sequence=True)
        broker.wait_for(r"banana", timeout=30)
        # A later change to the same topic, still holding the bad value, is applied; the bad value
        # is not reported again.
        zk.set("/config/topics/kept", entity_config({"retention.ms": "banana", "segment.ms": "3600000"}))
        zk.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/kept"}', sequence=True)
    wait_until(lambda: topic_config(broker.bootstrap, "kept", "segment.ms") == "3600000")
    [line] = lines_about(broker, "banana")
    assert "ERROR" in line and "kept" in line and "retention.ms" in line, line
    assert topic_config(broker.bootstrap, "kept", "retention.ms") == "100000"
    assert_serves(broker, "kept", "kept-readers")
    assert not lines_about(broker, "Traceback")


def test_an_invalid_broker_default_config_written_in_zookeeper_is_one_line_and_topics_are_still_created(cluster):
    broker = cluster.start(1).brokers[0]
    with zk_session(cluster) as zk:
        zk.create("/config/brokers/<default>", entity_config({"log.retention.ms": "banana"}))
        zk.create("/config/changes/config_change_", b'{"version":2,"entity_path":"brokers/<default>"}', sequence=True)
    broker.wait_for(r"banana", timeout=30)
    create_topic(broker.bootstrap, "after", 2)
    assert_serves(broker, "after", "after-readers")
    [line] = lines_about(broker, "banana")
    assert "ERROR" in line and "<default>" in line and "log.retention.ms" in line, line
    assert not lines_about(broker, "Traceback")


def test_an_invalid_topic_config_in_the_embedded_tree_is_one_line_at_start(tmp_path):
    broker = BrokerProcess(tmp_path / "logs")
    try:
        broker.start(timeout=60)
        create_with_configs(broker.bootstrap, "kept", {"retention.ms": "100000"})
        broker.stop()
        with EmbeddedStore(tmp_path / "logs") as store:
            store.set("/config/topics/kept", entity_config({"retention.ms": "banana"}))
        broker.start(timeout=60)
        [line] = lines_about(broker, "banana")
        assert "ERROR" in line and "kept" in line and "retention.ms" in line, line
        assert_serves(broker, "kept", "kept-readers")
        assert not lines_about(broker, "Traceback")
    finally:
        broker.stop()
