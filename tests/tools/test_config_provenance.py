"""``kcli configs --describe --provenance`` and ``--only-overrides`` (kcli's own) against a kcli
broker whose topic configs come from each of Kafka's sources: a topic override, a dynamic
per-broker config, a dynamic cluster-wide default, a static server.properties value and Kafka's
defaults. Kafka 3.9's ``--all`` lines stay as they are; the source follows them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess
from conftest import BROKER_OVERRIDES

pytestmark = pytest.mark.timeout(120)

EXPECTED = {
    "retention.bytes": "DYNAMIC_TOPIC_CONFIG",
    "segment.bytes": "DYNAMIC_BROKER_CONFIG",
    "index.interval.bytes": "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "delete.retention.ms": "STATIC_BROKER_CONFIG",
}


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    from conftest import run_kcli

    broker = BrokerProcess(tmp_path_factory.mktemp("broker"), {**BROKER_OVERRIDES, "log.cleaner.delete.retention.ms": "3600000"}).start()
    try:
        topic = "provenance"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1, config={"retention.bytes": "123456789"})])[topic].result(30)
        for target in (("--entity-type", "brokers", "--entity-default"), ("--broker", "0")):
            value = "log.index.interval.bytes=8192" if "--entity-default" in target else "log.segment.bytes=2000000"
            result = run_kcli("configs", "--bootstrap-server", broker.bootstrap, "--alter", *target, "--add-config", value)
            assert result.returncode == 0, result
        yield broker, topic
    finally:
        broker.stop()


def config_lines(kcli, broker: BrokerProcess, topic: str, *flags: str) -> list[str]:
    result = kcli("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic, *flags)
    assert (result.returncode, result.stderr) == (0, ""), result
    return result.lines


def test_provenance_follows_each_of_kafkas_all_lines(kcli, configured):
    broker, topic = configured
    kafka = config_lines(kcli, broker, topic, "--all")
    with_source = config_lines(kcli, broker, topic, "--all", "--provenance")
    assert with_source[0] == kafka[0] == f"All configs for topic {topic} are:"
    assert len(with_source) == len(kafka)
    sources = {}
    for plain, sourced in zip(kafka[1:], with_source[1:]):
        line, _, source = sourced.rpartition(" source=")
        assert line == plain
        sources[plain.split("=", 1)[0].strip()] = source
    for name, source in EXPECTED.items():
        assert sources[name] == source, name
    assert sources["cleanup.policy"] == "DEFAULT_CONFIG"
    # The source is the first synonym's, as Kafka's line lists them.
    delete_retention = next(line for line in kafka if line.startswith("  delete.retention.ms="))
    assert delete_retention.endswith(
        " synonyms={STATIC_BROKER_CONFIG:log.cleaner.delete.retention.ms=3600000, DEFAULT_CONFIG:log.cleaner.delete.retention.ms=86400000}"
    )


def test_only_overrides_keeps_the_configs_set_anywhere_but_in_kafkas_defaults(kcli, configured):
    broker, topic = configured
    lines = config_lines(kcli, broker, topic, "--only-overrides", "--provenance")
    assert lines[0] == f"All configs for topic {topic} are:"
    assert {line.split("=", 1)[0].strip(): line.rpartition(" source=")[2] for line in lines[1:]} == EXPECTED

    result = kcli("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic, "--only-overrides", "--output", "json")
    (document,) = [json.loads(line) for line in result.lines]
    assert {c["name"]: c["provenance"] for c in document["configs"]} == EXPECTED


def test_provenance_needs_describe(inproc):
    result = inproc("configs", "--bootstrap-server", "h:1", "--alter", "--topic", "t", "--add-config", "a=b", "--provenance")
    assert result.returncode == 2
    assert 'Option "[provenance]" can only be used with option "[describe]"' in result.stderr
