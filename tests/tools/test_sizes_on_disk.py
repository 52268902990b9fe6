"""Sizes on disk (kcli's own flags): ``topics --describe --size`` and ``log-dirs --describe
--totals`` against a kcli broker, each size checked against the segment files in its log dir;
Kafka's lines unchanged around them."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def topics(broker) -> tuple[str, str]:
    """Two topics: one of three partitions with records in 0 and 2, one of one partition."""
    names = (f"sz-a-{uuid.uuid4().hex[:8]}", f"sz-b-{uuid.uuid4().hex[:8]}")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for name, partitions in zip(names, (3, 1)):
        admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10)[name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for partition, n in ((0, 5), (2, 2)):
        for i in range(n):
            producer.produce(names[0], b"x" * (100 * (i + 1)), partition=partition)
    producer.produce(names[1], b"y" * 700, partition=0)
    assert producer.flush(10) == 0
    return names


def log_bytes(log_dir: Path, topic: str, partition: int) -> int:
    return sum(path.stat().st_size for path in (log_dir / f"{topic}-{partition}").glob("*.log"))


def test_topics_describe_size_adds_each_topic_and_partition_size(kcli, broker, topics):
    name = topics[0]
    plain = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", name)
    sized = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", name, "--size")
    assert (sized.returncode, sized.stderr) == (0, ""), sized
    files = [log_bytes(broker.log_dir, name, p) for p in range(3)]
    assert files[0] > files[2] > 0 and files[1] == 0
    head, *rows = plain.lines
    before, configs = head.split("\tConfigs:")
    assert sized.lines[0] == f"{before}\tSize: {sum(files)}\tLeaderSize: {sum(files)}\tConfigs:{configs}"
    assert sized.lines[1:] == [f"{row}\tSize: {files[p]}\tLeaderSize: {files[p]}" for p, row in enumerate(rows)]

    document = json.loads(kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", name, "--size", "--output", "json").stdout)
    assert document["size"] == {"replicas": sum(files), "leader": sum(files)}
    assert [p["size"] for p in document["partitions"]] == [{"replicas": n, "leader": n} for n in files]


def test_log_dirs_totals_add_up_each_broker_after_kafkas_unchanged_lines(kcli, broker, topics):
    args = ("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe", "--topic-list", ",".join(topics))
    kafka = kcli(*args)
    totals = kcli(*args, "--totals")
    assert (totals.returncode, totals.stderr) == (0, ""), totals
    size = sum(log_bytes(broker.log_dir, topics[0], p) for p in range(3)) + log_bytes(broker.log_dir, topics[1], 0)
    # Kafka's JSON line orders partitions by Java's hash of each; compare it as data.
    assert totals.lines[:2] == kafka.lines[:2] and json.loads(totals.lines[2]) == json.loads(kafka.lines[2])
    assert totals.lines[3:] == [f"Broker: 0\tLogDirs: 1\tOfflineLogDirs: 0\tPartitions: 4\tSize: {size}\tFuturePartitions: 0\tFutureSize: 0"]

    as_json = kcli(*args, "--totals", "--output", "json")
    assert [json.loads(line) for line in as_json.lines] == [
        {"broker": 0, "log_dirs": 1, "offline_log_dirs": 0, "partitions": 4, "size": size, "future_partitions": 0, "future_size": 0}
    ]


def test_size_is_refused_outside_describe(inproc):
    result = inproc("topics", "--bootstrap-server", "localhost:9092", "--list", "--size")
    assert result.returncode == 2
    assert 'Option "[size]" can\'t be used with option "[list]"' in result.stderr
