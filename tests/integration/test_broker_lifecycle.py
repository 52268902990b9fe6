"""The broker process: configuration, identity files, graceful shutdown, crash recovery."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess
from kcli.storage.checkpoints import has_clean_shutdown_marker, read_meta_properties, read_offset_checkpoint


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future resolves
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)


def _produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> list[int]:
    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": "all"})
    for value in values:
        producer.produce(topic, value=value, partition=partition, on_delivery=lambda err, msg: offsets.append(msg.offset()) if err is None else None)
    assert producer.flush(15) == 0
    return offsets


def _read_all(bootstrap: str, topic: str, partition: int, expected: int) -> list[bytes]:
    """Every record of the partition from offset 0, until ``expected`` are read or 20 s pass."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lifecycle", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(values) < expected and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                assert message.error() is None, message.error()
                values.append(message.value())
        for message in consumer.consume(500, 0.5):  # nothing beyond what was written
            values.append(message.value())
    finally:
        consumer.close()
    return values


def test_properties_file_overrides_and_identity_files(tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=7\nnum.partitions=3\n# a comment\nlog.retention.hours=1\n")
    broker = BrokerProcess(tmp_path / "data", {"num.partitions": "2"}, properties_file=properties)
    try:
        broker.start()
        meta = read_meta_properties(tmp_path / "data" / "meta.properties")
        assert meta["broker.id"] == "7"
        assert len(meta["cluster.id"]) == 22
        # auto-creation uses num.partitions from the override, not the file
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce("auto-created", value=b"x")
        assert producer.flush(15) == 0
        metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
        assert len(metadata.topics["auto-created"].partitions) == 2
        assert list(metadata.brokers) == [7]
        assert metadata.cluster_id == meta["cluster.id"]
    finally:
        assert broker.stop() == 0


def test_graceful_shutdown_writes_checkpoints_and_marker(tmp_path):
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        _create(broker.bootstrap, "orders", 2)
        assert _produce(broker.bootstrap, "orders", [b"a", b"b", b"c"]) == [0, 1, 2]
    finally:
        assert broker.stop() == 0
    assert has_clean_shutdown_marker(data)
    assert read_offset_checkpoint(data / "recovery-point-offset-checkpoint")[("orders", 0)] == 3
    assert any("shut down completed" in line for line in broker.log_lines)

    broker.start()
    try:
        assert _read_all(broker.bootstrap, "orders", 0, 3) == [b"a", b"b", b"c"]
        assert _produce(broker.bootstrap, "orders", [b"d"]) == [3]
    finally:
        broker.stop()


def test_kill_minus_nine_then_restart_recovers_every_acknowledged_record(tmp_path):
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    values = [b"record-%d" % i for i in range(500)]
    try:
        _create(broker.bootstrap, "events", 1)
        offsets = _produce(broker.bootstrap, "events", values)
        assert offsets == list(range(500))
        broker.kill()
        assert not has_clean_shutdown_marker(data)
        broker.start()
        assert _read_all(broker.bootstrap, "events", 0, 500) == values
        assert _produce(broker.bootstrap, "events", [b"after"]) == [500]
    finally:
        broker.stop()


def test_bad_configuration_is_one_line_and_a_nonzero_exit(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kcli", "broker", "start", "--override", f"log.dirs={tmp_path}", "--override", "num.partitions=zero"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "num.partitions" in errors[0]
    assert "Traceback" not in result.stderr


def test_override_without_equals_is_a_usage_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "kcli", "broker", "start", "--override", "num.partitions"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "num.partitions" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("flag", ["--config", None])
def test_missing_properties_file_is_reported(tmp_path, flag):
    args = [flag, str(tmp_path / "nope.properties")] if flag else [str(tmp_path / "nope.properties")]
    result = subprocess.run([sys.executable, "-m", "kcli", "broker", "start", *args], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert "nope.properties" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_second_broker_on_the_same_log_dir_stops_without_touching_it(tmp_path):
    data = tmp_path / "data"
    first = BrokerProcess(data).start()
    try:
        _create(first.bootstrap, "owned", 1)
        metadata_before = (data / "metadata.json").read_bytes()
        result = subprocess.run(
            [sys.executable, "-m", "kcli", "broker", "start", "--override", f"log.dirs={data}", "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 1
        assert [line for line in result.stderr.splitlines() if line.startswith("Error:")] == [
            f"Error: Failed to acquire lock on file .lock in {data}. A Kafka instance in another process or thread is using this directory."
        ]
        assert (data / "metadata.json").read_bytes() == metadata_before
        assert not has_clean_shutdown_marker(data)
        assert _produce(first.bootstrap, "owned", [b"still served"]) == [0]
    finally:
        first.stop()
