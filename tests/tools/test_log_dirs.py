"""``kcli log-dirs --describe`` against a kcli broker: Kafka 3.9's LogDirsCommand lines, its JSON
line with Java's HashMap key order, and its messages
(tools/src/main/java/org/apache/kafka/tools/LogDirsCommand.java)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def topic(broker) -> str:
    name = f"ld-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)], operation_timeout=10)[name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(4):
        producer.produce(name, f"value-{i}".encode(), partition=0)
    assert producer.flush(10) == 0
    return name


def log_bytes(log_dir: Path, topic: str, partition: int) -> int:
    return sum(path.stat().st_size for path in (log_dir / f"{topic}-{partition}").glob("*.log"))


def test_describe_prints_kafka_lines_and_json(kcli, broker, topic):
    result = kcli("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic-list", topic)
    assert (result.returncode, result.stderr) == (0, ""), result
    assert result.lines[:2] == ["Querying brokers for log directories information", "Received log directory information from brokers 0"]
    assert len(result.lines) == 3
    # Jackson writes Java HashMaps: "brokers" before "version", "partitions" first in a dir, ...
    assert result.lines[2].startswith('{"brokers":[{"broker":0,"logDirs":[{"partitions":[{"partition":"')
    assert result.lines[2].endswith('"error":null,"logDir":"' + str(broker.log_dir.resolve()) + '"}]}],"version":1}')
    document = json.loads(result.lines[2])
    (dir_entry,) = document["brokers"][0]["logDirs"]
    partitions = sorted(dir_entry["partitions"], key=lambda p: p["partition"])
    assert partitions == [
        {"partition": f"{topic}-{p}", "size": log_bytes(broker.log_dir, topic, p), "offsetLag": 0, "isFuture": False} for p in (0, 1)
    ]
    assert partitions[0]["size"] > 0 and partitions[1]["size"] == 0
    first = dir_entry["partitions"][0]
    assert list(first) == ["partition", "size", "offsetLag", "isFuture"]


def test_every_topic_without_a_topic_list(kcli, broker, topic):
    result = kcli("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe", "--broker-list", "0")
    assert result.returncode == 0, result
    names = {p["partition"] for d in json.loads(result.lines[2])["brokers"][0]["logDirs"] for p in d["partitions"]}
    assert {f"{topic}-0", f"{topic}-1"} <= names


def test_brokers_the_cluster_lacks(kcli, broker):
    result = kcli("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe", "--broker-list", "0,7")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == ["ERROR: The given brokers do not exist from --broker-list: 7. Current existent brokers: 0"]


def test_describe_is_required(inproc):
    result = inproc("log-dirs", "--bootstrap-server", "localhost:1")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == 'Error: Missing required argument "[describe]"'
