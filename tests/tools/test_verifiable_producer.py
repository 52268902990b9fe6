"""``kcli verifiable-producer`` against a kcli broker: Kafka 3.9's VerifiableProducer flags and JSON
event lines (tools/src/main/java/org/apache/kafka/tools/VerifiableProducer.java: Jackson writes
``timestamp`` and ``name`` first, then each event's properties in declaration order), with what
it wrote read back through confluent-kafka."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import ROOT

pytestmark = pytest.mark.timeout(120)


def make_topic(bootstrap: str, partitions: int) -> str:
    name = f"vp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10)[name].result(10)
    return name


def events(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[bytes | None, bytes]]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False})
    try:
        found = {}
        for p in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            consumer.assign([TopicPartition(topic, p, low)])
            found[p] = []
            while len(found[p]) < high - low:
                message = consumer.poll(10)
                assert message is not None and message.error() is None
                found[p].append((message.key(), message.value()))
        return found
    finally:
        consumer.close()


def test_max_messages_events_in_kafka_shape(kcli, broker):
    topic = make_topic(broker.bootstrap, 2)
    result = kcli("verifiable-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--max-messages", "6",
                  "--value-prefix", "7", "--repeating-keys", "3")
    assert (result.returncode, result.stderr) == (0, ""), result
    lines = result.lines
    assert json.loads(lines[0]).keys() == {"timestamp", "name"} and lines[0].startswith('{"timestamp":')
    assert lines[0].endswith(',"name":"startup_complete"}')
    sends = [json.loads(line) for line in lines[1:-2]]
    assert len(sends) == 6
    for line, send in zip(lines[1:-2], sends):
        assert list(send) == ["timestamp", "name", "key", "value", "topic", "partition", "offset"], line
        assert send["name"] == "producer_send_success" and send["topic"] == topic
    # Values P.i; keys 0, 1, 2, 0, 1, 2 by value.
    assert sorted(s["value"] for s in sends) == [f"7.{i}" for i in range(6)]
    assert {s["value"]: s["key"] for s in sends} == {f"7.{i}": str(i % 3) for i in range(6)}
    # Offsets per partition are 0, 1, ... in send order.
    for p in (0, 1):
        assert [s["offset"] for s in sends if s["partition"] == p] == list(range(sum(s["partition"] == p for s in sends)))
    shutdown, tool_data = (json.loads(line) for line in lines[-2:])
    assert list(shutdown) == ["timestamp", "name"] and shutdown["name"] == "shutdown_complete"
    assert list(tool_data) == ["timestamp", "name", "sent", "acked", "target_throughput", "avg_throughput"]
    assert (tool_data["name"], tool_data["sent"], tool_data["acked"], tool_data["target_throughput"]) == ("tool_data", 6, 6, -1)
    stored = read_all(broker.bootstrap, topic, 2)
    assert sorted((k, v) for records in stored.values() for k, v in records) == sorted((str(i % 3).encode(), f"7.{i}".encode()) for i in range(6))
    for s in sends:
        assert stored[s["partition"]][s["offset"]] == (s["key"].encode(), s["value"].encode())


def test_null_keys_and_plain_values_by_default(kcli, broker):
    topic = make_topic(broker.bootstrap, 1)
    result = kcli("verifiable-producer", "--broker-list", broker.bootstrap, "--topic", topic, "--max-messages", "3", "--acks", "1")
    assert result.returncode == 0, result
    sends = events(result.stdout)[1:-2]
    assert [(s["key"], s["value"], s["offset"]) for s in sends] == [(None, "0", 0), (None, "1", 1), (None, "2", 2)]
    assert '"key":null,"value":"0"' in result.lines[1]


def test_sigterm_closes_and_prints_the_summary(broker):
    topic = make_topic(broker.bootstrap, 1)
    process = subprocess.Popen(
        [sys.executable, "-m", "kcli", "verifiable-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--throughput", "200"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        first = process.stdout.readline()
        assert json.loads(first)["name"] == "startup_complete"
        while json.loads(process.stdout.readline())["name"] != "producer_send_success":
            pass
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        # Read through the pipe's buffered reader: communicate() would skip what readline() buffered.
        rest, stderr = process.stdout.read(), process.stderr.read()
        process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 143, stderr  # the JVM's status after SIGTERM, shutdown hook run
    tail = events(rest)
    assert [e["name"] for e in tail[-2:]] == ["shutdown_complete", "tool_data"]
    successes = 1 + sum(e["name"] == "producer_send_success" for e in tail)
    assert tail[-1]["acked"] == successes and tail[-1]["sent"] >= successes and tail[-1]["target_throughput"] == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--topic", "t"), "one of the arguments --bootstrap-server --broker-list is required"),
        (("--bootstrap-server", "localhost:1"), "argument --topic is required"),
        (("--bootstrap-server", "localhost:1", "--topic", "t", "--acks", "2"), "argument --acks: invalid choice: '2' (choose from {0,1,-1})"),
    ],
)
def test_arguments_kafka_refuses(inproc, args, message):
    result = inproc("verifiable-producer", *args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"Error: {message}"
