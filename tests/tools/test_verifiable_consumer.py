"""``kcli verifiable-consumer`` against a kcli broker: Kafka 3.9's VerifiableConsumer flags and JSON
event lines (tools/src/main/java/org/apache/kafka/tools/VerifiableConsumer.java: ``timestamp`` and
``name`` first, then each event's properties as Jackson orders them), with records written and
committed offsets read through confluent-kafka."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import ROOT

pytestmark = pytest.mark.timeout(120)

PER_PARTITION = {0: 3, 1: 2}


@pytest.fixture(scope="module")
def topic(broker) -> str:
    name = f"vc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, len(PER_PARTITION), 1)], operation_timeout=10)[name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for partition, count in PER_PARTITION.items():
        for i in range(count):
            producer.produce(name, f"p{partition}-{i}".encode(), key=b"k" if i == 0 else None, partition=partition)
    assert producer.flush(10) == 0
    return name


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in PER_PARTITION], timeout=10)}
    finally:
        consumer.close()


def test_consumes_commits_and_reports_in_kafka_shape(kcli, broker, topic):
    group = f"g-{uuid.uuid4().hex[:6]}"
    total = sum(PER_PARTITION.values())
    result = kcli("verifiable-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--group-id", group,
                  "--max-messages", str(total), "--verbose")
    assert (result.returncode, result.stderr) == (0, ""), result
    events = [json.loads(line) for line in result.lines]
    names = [e["name"] for e in events]
    assert names[0] == "startup_complete" and list(events[0]) == ["timestamp", "name"]
    assert names[1] == "partitions_assigned"
    assert sorted((p["topic"], p["partition"]) for p in events[1]["partitions"]) == [(topic, 0), (topic, 1)]
    assert all(list(p) == ["topic", "partition"] for p in events[1]["partitions"])
    assert names[-2:] == ["partitions_revoked", "shutdown_complete"]

    records = [e for e in events if e["name"] == "record_data"]
    assert all(list(e) == ["timestamp", "name", "key", "value", "topic", "partition", "offset"] for e in records)
    assert sorted((e["partition"], e["offset"], e["key"], e["value"]) for e in records) == [
        (p, i, "k" if i == 0 else None, f"p{p}-{i}") for p, count in PER_PARTITION.items() for i in range(count)
    ]
    consumed = [e for e in events if e["name"] == "records_consumed"]
    assert all(list(e) == ["timestamp", "name", "count", "partitions"] for e in consumed)
    summaries = [s for e in consumed for s in e["partitions"]]
    assert all(list(s) == ["topic", "partition", "count", "minOffset", "maxOffset"] for s in summaries)
    assert sum(s["count"] for s in summaries) == total
    # Every poll's records are committed right after it (no auto-commit): the next offsets.
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert len(commits) == len(consumed)
    for commit in commits:
        assert list(commit) == ["timestamp", "name", "offsets", "success"] and commit["success"] is True
        assert all(list(o) == ["topic", "partition", "offset"] for o in commit["offsets"])
    last = {}
    for commit in commits:
        last.update({o["partition"]: o["offset"] for o in commit["offsets"]})
    assert last == PER_PARTITION
    assert committed(broker.bootstrap, group, topic) == PER_PARTITION


def test_autocommit_reports_no_commits(kcli, broker, topic):
    group = f"g-{uuid.uuid4().hex[:6]}"
    result = kcli("verifiable-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--group-id", group,
                  "--max-messages", "2", "--enable-autocommit")
    assert result.returncode == 0, result
    names = [json.loads(line)["name"] for line in result.lines]
    assert "offsets_committed" not in names and "records_consumed" in names


def test_sigterm_leaves_the_group_and_reports_shutdown(broker, topic):
    group = f"g-{uuid.uuid4().hex[:6]}"
    process = subprocess.Popen(
        [sys.executable, "-m", "kcli", "verifiable-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--group-id", group],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        consumed = 0  # every record read and its commit reported: the consumer is idle in poll
        while consumed < sum(PER_PARTITION.values()):
            line = json.loads(process.stdout.readline())
            if line["name"] == "records_consumed":
                consumed += line["count"]
                assert json.loads(process.stdout.readline())["name"] == "offsets_committed"
        process.send_signal(signal.SIGTERM)
        # Read through the pipe's buffered reader: communicate() would skip what readline() buffered.
        rest, stderr = process.stdout.read(), process.stderr.read()
        process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 143, stderr
    tail = [json.loads(line)["name"] for line in rest.splitlines()]
    assert tail[-2:] == ["partitions_revoked", "shutdown_complete"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--topic", "t", "--group-id", "g"), "one of the arguments --bootstrap-server --broker-list is required"),
        (("--bootstrap-server", "localhost:1", "--group-id", "g"), "argument --topic is required"),
        (("--bootstrap-server", "localhost:1", "--topic", "t"), "argument --group-id is required"),
    ],
)
def test_arguments_kafka_refuses(inproc, args, message):
    result = inproc("verifiable-consumer", *args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"Error: {message}"
