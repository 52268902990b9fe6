"""kcli's consumer with the old consumer's ``offsets.storage`` and ``dual.commit.enabled``, on a
real ZooKeeper and a real ZooKeeper-mode kcli broker.

Kafka's old consumer (reference 5.1): ``offsets.storage=zookeeper`` keeps offsets in
``/consumers/<g>/offsets/<t>/<p>`` only; ``offsets.storage=kafka`` commits to the broker and, with
``dual.commit.enabled`` (default true with kafka storage), then to ZooKeeper, and a committed-offset
fetch takes max(zookeeper, kafka). The Kafka side is read and written with confluent-kafka.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kcli.client.consumer import Consumer, TopicPartition
from kcli.client.network_client import NetworkClient
from kcli.client.zookeeper_offsets import newest
from kcli.errors import KcliError
from tests.cluster.conftest import Cluster, running_cluster, zk_session

FAST_GROUP = {"heartbeat.interval.ms": "100", "session.timeout.ms": "6000", "enable.auto.commit": "false", "auto.offset.reset": "earliest"}


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("cluster"), "offsets-storage") as made:
        yield made


@pytest.fixture
def zk(cluster):
    with zk_session(cluster) as client:
        yield client


def topic_with(cluster: Cluster, records: int) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    produce(cluster, topic, records)
    return topic


def produce(cluster: Cluster, topic: str, records: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(records):
        producer.produce(topic, f"r{i}".encode(), partition=0)
    assert producer.flush(30) == 0


def kafka_committed(cluster: Cluster, group: str, topic: str) -> int | None:
    c = CKConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        [tp] = c.committed([CKTopicPartition(topic, 0)], timeout=30)
    finally:
        c.close()
    return tp.offset if tp.offset >= 0 else None


def kafka_commit(cluster: Cluster, group: str, topic: str, offset: int) -> None:
    c = CKConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[CKTopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def consume(cluster: Cluster, topic: str, group: str, props: dict[str, str], count: int, *, inspect=None) -> list[int]:
    """Subscribe, read ``count`` records, ``inspect()`` while still a member, commit, close."""

    async def work() -> list[int]:
        async with NetworkClient(cluster.bootstrap) as network:
            consumer = Consumer.from_properties(network, {"group.id": group, **FAST_GROUP, **props})
            try:
                await consumer.subscribe([topic])
                offsets: list[int] = []
                while len(offsets) < count:
                    offsets += [r.offset for r in await consumer.poll(1.0, max_records=count - len(offsets))]
                if inspect is not None:
                    await asyncio.to_thread(inspect)
                await consumer.commit({TopicPartition(topic, 0): offsets[-1] + 1} if offsets else None)
                return offsets
            finally:
                await consumer.close()

    return asyncio.run(asyncio.wait_for(work(), 60))


def test_zookeeper_storage_commits_to_zookeeper_only_and_registers_the_member(cluster, zk):
    topic = topic_with(cluster, 10)
    group = f"g-{uuid.uuid4().hex[:8]}"
    props = {"offsets.storage": "zookeeper", "zookeeper.connect": cluster.connect}
    seen: dict[str, object] = {}

    def inspect() -> None:
        [member] = zk.get_children(f"/consumers/{group}/ids")
        seen["member"] = member
        seen["registration"] = json.loads(zk.get(f"/consumers/{group}/ids/{member}")[0])
        seen["owner"] = zk.get(f"/consumers/{group}/owners/{topic}/0")[0].decode()

    assert consume(cluster, topic, group, props, 10, inspect=inspect) == list(range(10))
    member = seen["member"]
    assert member.startswith(f"{group}_")
    registration = seen["registration"]
    assert registration["version"] == 1 and registration["subscription"] == {topic: 1} and registration["pattern"] == "static"
    assert registration["timestamp"].isdigit()
    assert seen["owner"] == f"{member}-0"
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"10"
    assert kafka_committed(cluster, group, topic) is None
    assert zk.get_children(f"/consumers/{group}/ids") == []  # the ephemeral registration went with the session
    produce(cluster, topic, 3)
    assert consume(cluster, topic, group, props, 3) == [10, 11, 12]


def test_dual_commit_writes_both_stores_and_resumes_from_the_larger(cluster, zk):
    topic = topic_with(cluster, 20)
    group = f"g-{uuid.uuid4().hex[:8]}"
    dual = {"offsets.storage": "kafka", "zookeeper.connect": cluster.connect}  # dual.commit.enabled defaults to true
    assert consume(cluster, topic, group, dual, 5) == list(range(5))
    assert kafka_committed(cluster, group, topic) == 5
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"5"
    zk.set(f"/consumers/{group}/offsets/{topic}/0", b"8")  # ZooKeeper ahead
    assert consume(cluster, topic, group, dual, 2) == [8, 9]
    kafka_commit(cluster, group, topic, 15)  # Kafka ahead
    assert consume(cluster, topic, group, dual, 1) == [15]
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"16"

    kafka_only = {**dual, "dual.commit.enabled": "false"}
    zk.set(f"/consumers/{group}/offsets/{topic}/0", b"19")
    assert consume(cluster, topic, group, kafka_only, 2) == [16, 17]  # ZooKeeper no longer read
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"19"  # nor written
    assert kafka_committed(cluster, group, topic) == 18


def test_console_consumer_takes_the_properties(cluster, zk):
    topic = topic_with(cluster, 5)
    group = f"g-{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [sys.executable, "-m", "kcli", "console-consumer", "--bootstrap-server", cluster.bootstrap, "--topic", topic, "--group", group,
         "--from-beginning", "--max-messages", "5", "--consumer-property", "offsets.storage=zookeeper",
         "--consumer-property", f"zookeeper.connect={cluster.connect}"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"r{i}" for i in range(5)]
    assert "isn't a known config" not in done.stderr
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"5"
    assert kafka_committed(cluster, group, topic) is None


def test_storage_settings_are_checked(cluster):
    async def make(props: dict[str, str]) -> None:
        async with NetworkClient(cluster.bootstrap) as network:
            Consumer.from_properties(network, {"group.id": "g", **props})

    with pytest.raises(KcliError, match="offsets.storage=zookeeper needs zookeeper.connect"):
        asyncio.run(make({"offsets.storage": "zookeeper"}))
    with pytest.raises(KcliError, match="Invalid value elsewhere for configuration offsets.storage"):
        asyncio.run(make({"offsets.storage": "elsewhere"}))
    with pytest.raises(KcliError, match="Invalid value maybe for configuration dual.commit.enabled"):
        asyncio.run(make({"dual.commit.enabled": "maybe"}))


def test_newest_takes_the_larger_committed_offset():
    a, b, c, d = (TopicPartition("t", p) for p in range(4))
    assert newest({a: 5, b: 9, c: None}, {a: 7, b: 3, d: 2}, [a, b, c, d]) == {a: 7, b: 9, c: None, d: 2}
