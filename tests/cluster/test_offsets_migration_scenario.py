"""The seeds' migration of consumer offsets from ZooKeeper to Kafka, end to end, and its roll-back.

Kafka's documented procedure (0.8.2-0.11, "Migrating offsets from ZooKeeper to Kafka"): consumers
on ``offsets.storage=zookeeper``; set ``offsets.storage=kafka`` and ``dual.commit.enabled=true``
and bounce them one by one; then ``dual.commit.enabled=false`` and bounce again. The roll-back
runs the same steps towards ZooKeeper: dual commit on again (so ZooKeeper catches up), bounce,
then ``offsets.storage=zookeeper``, bounce.

Here three ``kcli console-consumer`` processes of one group read a topic that a producer keeps
writing to, and each step is a rolling restart (SIGTERM, a new process with the step's
properties). At the end every record was consumed, none twice more often than the restarts allow
(a clean stop commits what was printed; a record is redelivered at most once), and after the
roll-back the ZooKeeper-stored offsets are the log end offsets.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import wait_until

PARTITIONS = 6
CONSUMERS = 3
MAX_POLL_RECORDS = 50


class KeepProducing:
    """Records "0", "1", ... spread over the partitions, ~200 a second, until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for _ in range(10):
                self.producer.produce(self.topic, str(self.sent).encode(), partition=self.sent % PARTITIONS)
                self.sent += 1
            self.producer.poll(0)
            time.sleep(0.05)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        assert self.producer.flush(30) == 0
        return self.sent


class ConsumerProcess:
    """One incarnation of a ``kcli console-consumer`` in the group, printing values to a file."""

    def __init__(self, bootstrap: str, topic: str, group: str, properties: dict[str, str], out: Path) -> None:
        args = [sys.executable, "-m", "kcli", "console-consumer", "--bootstrap-server", bootstrap, "--topic", topic, "--group", group]
        for key, value in {"auto.offset.reset": "earliest", "auto.commit.interval.ms": "200", "max.poll.records": str(MAX_POLL_RECORDS),
                           "heartbeat.interval.ms": "300", "session.timeout.ms": "6000", **properties}.items():
            args += ["--consumer-property", f"{key}={value}"]
        self.out = out
        self._file = open(out, "wb")
        self.process = subprocess.Popen(args, stdout=self._file, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _out, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _out, err = self.process.communicate(timeout=10)
        self._file.close()
        assert self.process.returncode == 143, f"console-consumer exited {self.process.returncode}: {err.decode(errors='replace')[-2000:]}"

    def values(self) -> list[int]:
        return [int(line) for line in self.out.read_bytes().split(b"\n") if line]


def test_seeds_migration_zookeeper_to_kafka_with_rolling_restarts_and_roll_back(cluster, tmp_path):
    cluster.start(1)
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    zk_only = {"offsets.storage": "zookeeper", "zookeeper.connect": cluster.connect}
    dual = {"offsets.storage": "kafka", "dual.commit.enabled": "true", "zookeeper.connect": cluster.connect}
    kafka_only = {"offsets.storage": "kafka", "dual.commit.enabled": "false", "zookeeper.connect": cluster.connect}
    steps = [("dual commit", dual), ("kafka storage", kafka_only), ("roll-back: dual commit", dual), ("roll-back: zookeeper storage", zk_only)]

    incarnations: list[ConsumerProcess] = []
    running: list[ConsumerProcess] = []
    producer = KeepProducing(cluster.bootstrap, topic)
    zk = cluster.zk()
    try:
        for i in range(CONSUMERS):
            running.append(ConsumerProcess(cluster.bootstrap, topic, group, zk_only, tmp_path / f"c{i}-0.out"))
        incarnations += running
        # The group is on ZooKeeper storage: offsets appear under /consumers, none in Kafka.
        wait_until(lambda: zk.exists(f"/consumers/{group}/offsets/{topic}") and len(zk.get_children(f"/consumers/{group}/offsets/{topic}")) == PARTITIONS, timeout=60)
        restarts = 0
        for number, (label, properties) in enumerate(steps, 1):
            for i in range(CONSUMERS):
                running[i].stop()
                running[i] = ConsumerProcess(cluster.bootstrap, topic, group, properties, tmp_path / f"c{i}-{number}.out")
                incarnations.append(running[i])
                restarts += 1
                seen = sum(len(c.values()) for c in incarnations)
                wait_until(lambda: sum(len(c.values()) for c in incarnations) > seen + 100, timeout=60)  # records keep flowing
            time.sleep(1)  # a few commits under the step's settings
        produced = producer.stop()
        wait_until(lambda: set(range(produced)) <= {v for c in incarnations for v in c.values()}, timeout=90)
        time.sleep(1)  # the last positions committed
    finally:
        if producer.running:
            producer.stop()
        for consumer in running:
            consumer.stop()
        zk.stop()
        zk.close()

    counts = collections.Counter(v for c in incarnations for v in c.values())
    assert set(counts) == set(range(produced)), "records skipped"
    twice = [v for v, n in counts.items() if n > 1]
    assert all(n <= 2 for n in counts.values()), f"a record consumed more than twice: {max(counts.values())}"
    assert len(twice) <= restarts * MAX_POLL_RECORDS, f"{len(twice)} records consumed twice over {restarts} restarts"

    # After the roll-back the offsets live in ZooKeeper again, at the end of each partition.
    zk = cluster.zk()
    try:
        stored = {p: int(zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0]) for p in range(PARTITIONS)}
        assert zk.get_children(f"/consumers/{group}/ids") == []  # every member's registration went with it
    finally:
        zk.stop()
        zk.close()
    per_partition = collections.Counter(v % PARTITIONS for v in range(produced))
    assert stored == dict(per_partition)
