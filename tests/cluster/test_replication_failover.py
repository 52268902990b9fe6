"""Kafka's replication_test on kcli: three brokers, RF 3, min.insync.replicas 2, an idempotent
acks=all producer writing numbered records while the leader of its partitions is killed -9, frozen
with SIGSTOP past its ZooKeeper session and resumed, and restarted cleanly. Every acknowledged
record is read back exactly once and in order per partition, by kcli's console consumer and by
kafka-python, and the replicas' logs are byte-identical afterwards.

The schedule is fixed (one fault of each kind, each on the partition's leader of the moment), so
a failure names the fault; longer random schedules belong to the fault harness, not here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

from tests.cluster.conftest import Cluster, wait_until, zk_session

PARTITIONS = 2
SESSION_MS = 6000


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    made = Cluster(zookeeper_server, f"/failover-{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("cluster"))
    try:
        for broker_id in range(3):
            made.broker(broker_id, **{"replica.lag.time.max.ms": "3000", "zookeeper.session.timeout.ms": str(SESSION_MS)}).start(timeout=60)
        yield made
    finally:
        made.stop()


def state(cluster: Cluster, topic: str, partition: int) -> dict:
    with zk_session(cluster) as zk:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        return json.loads(zk.get(path)[0]) if zk.exists(path) else {}


def all_in_sync(cluster: Cluster, topic: str) -> bool:
    return all(sorted(state(cluster, topic, p).get("isr", [])) == [0, 1, 2] for p in range(PARTITIONS))


class NumberedProducer:
    """Numbered records (``n`` to partition ``n % PARTITIONS``), idempotent, acks=all, at a steady
    pace from a thread of its own; each acknowledgement is recorded per partition."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "message.timeout.ms": 120_000, "request.timeout.ms": 10_000,
        })
        self.acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.sent = 0

    def _delivered(self, err, message) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[message.partition()].append(int(message.value()))

    def _run(self) -> None:
        while not self._stop.is_set():
            n = self.sent
            try:
                self.producer.produce(self.topic, value=b"%d" % n, partition=n % PARTITIONS, on_delivery=self._delivered)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.002)

    def __enter__(self) -> NumberedProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)
        self.producer.flush(150)

    def wait_for_more(self, count: int, timeout: float = 90) -> None:
        """Until ``count`` more records are acknowledged than now."""
        target = sum(map(len, self.acked.values())) + count
        wait_until(lambda: sum(map(len, self.acked.values())) >= target, timeout=timeout)


def leader_of(cluster: Cluster, topic: str) -> int:
    """Partition 0's leader, once it has one (the state itself is waited for: broker 0 is falsy)."""
    return wait_until(lambda: (lambda s: s if s.get("leader", -1) >= 0 else None)(state(cluster, topic, 0)), timeout=60)["leader"]


def moved_from(cluster: Cluster, topic: str, old: int) -> None:
    wait_until(lambda: state(cluster, topic, 0).get("leader", -1) not in (-1, old), timeout=60)


def test_acknowledged_records_survive_kill_freeze_and_restart_of_leaders(cluster):
    topic = f"replicated-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(30)
    wait_until(lambda: all_in_sync(cluster, topic), timeout=60)

    with NumberedProducer(cluster.bootstrap, topic) as producer:
        producer.wait_for_more(500)

        # kill -9 of the leader: the controller elects an in-sync follower once its session ends.
        leader = leader_of(cluster, topic)
        cluster.brokers[leader].kill()
        moved_from(cluster, topic, leader)
        producer.wait_for_more(500)
        cluster.brokers[leader].start(timeout=60)
        wait_until(lambda: all_in_sync(cluster, topic), timeout=90)

        # SIGSTOP of the leader past its session: it is fenced; resumed, it follows the new leader.
        leader = leader_of(cluster, topic)
        process = cluster.brokers[leader].process
        os.kill(process.pid, signal.SIGSTOP)
        try:
            moved_from(cluster, topic, leader)
            producer.wait_for_more(500)
        finally:
            os.kill(process.pid, signal.SIGCONT)
        wait_until(lambda: all_in_sync(cluster, topic), timeout=90)

        # A clean restart: controlled shutdown moves leadership before the broker exits.
        leader = leader_of(cluster, topic)
        assert cluster.brokers[leader].stop() == 0
        moved_from(cluster, topic, leader)
        producer.wait_for_more(500)
        cluster.brokers[leader].start(timeout=60)
        wait_until(lambda: all_in_sync(cluster, topic), timeout=90)
        producer.wait_for_more(200)

    assert producer.errors == []
    acked = producer.acked
    assert all(acked[p] for p in range(PARTITIONS))
    # Within a partition, acknowledgements come in the order the records were sent.
    assert all(values == sorted(values) for values in acked.values())

    for reader in (read_with_kcli, read_with_kafka_python):
        read = reader(cluster, topic, {p: len(acked[p]) for p in range(PARTITIONS)})
        for p in range(PARTITIONS):
            values = read[p]
            assert len(values) == len(set(values)), f"{reader.__name__}: a record of partition {p} read twice"
            assert values == sorted(values), f"{reader.__name__}: partition {p} out of order"
            missing = set(acked[p]) - set(values)
            assert not missing, f"{reader.__name__}: {len(missing)} acknowledged records of partition {p} lost, e.g. {sorted(missing)[:5]}"

    # Every replica holds the same bytes once the followers caught up.
    for p in range(PARTITIONS):
        wait_until(lambda p=p: len({replica_bytes(cluster, b, topic, p) for b in range(3)}) == 1, timeout=60)


def replica_bytes(cluster: Cluster, broker_id: int, topic: str, partition: int) -> bytes:
    directory = cluster.brokers[broker_id].log_dir / f"{topic}-{partition}"
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


def read_with_kcli(cluster: Cluster, topic: str, at_least: dict[int, int]) -> dict[int, list[int]]:
    read: dict[int, list[int]] = {}
    for partition, count in at_least.items():
        completed = subprocess.run(
            [sys.executable, "-m", "kcli", "console-consumer", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
             "--partition", str(partition), "--offset", "earliest", "--timeout-ms", "10000"],
            capture_output=True, text=True, timeout=180,
        )
        read[partition] = [int(line) for line in completed.stdout.split()]
        assert len(read[partition]) >= count, completed.stderr[-2000:]
    return read


def read_with_kafka_python(cluster: Cluster, topic: str, at_least: dict[int, int]) -> dict[int, list[int]]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap.split(","), enable_auto_commit=False, consumer_timeout_ms=10_000)
    try:
        partitions = [TopicPartition(topic, p) for p in at_least]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        read: dict[int, list[int]] = {p: [] for p in at_least}
        deadline = time.monotonic() + 120
        while any(len(read[p]) < n for p, n in at_least.items()) and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=1000).items():
                read[tp.partition].extend(int(m.value) for m in messages)
        return read
    finally:
        consumer.close()
