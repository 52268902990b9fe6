"""When a broker deletes a replica's log, and when a partition stops being led, on real broker
processes and a real ZooKeeper, as on a Kafka 2.8 cluster in ZooKeeper mode.

A broker deletes a replica only on the controller's StopReplica with delete, which the controller
sends only through the topic-deletion procedure (``/admin/delete_topics``) and only with
``delete.topic.enable``. A topic znode removed by hand is forgotten by the controller; every
log stays. ControlledShutdown acts only on partitions with more than one replica: those of one
replica stay led by the broker until it really goes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kcli.storage.records import iter_batches
from tests.cluster.conftest import wait_until, zk_session
from tests.cluster.test_controller_channel import exchange
from tests.cluster.test_zookeeper_cluster import create_topic, leaders, metadata, produce

TOPIC_DELETION_DISABLED = 73


def _controller(zk) -> int:
    return json.loads(zk.get("/controller")[0])["brokerid"]


def _placed(cluster, topic: str) -> dict[int, int]:
    return wait_until(lambda: (lambda led: led if -1 not in led.values() else None)(leaders(cluster.bootstrap, topic)))


def _stored_values(log_dir: Path, topic: str) -> dict[int, list[bytes]]:
    """Every record value in the topic's partition logs under ``log_dir``, read from the segment
    files themselves, by partition."""
    stored: dict[int, list[bytes]] = {}
    for directory in sorted(log_dir.glob(f"{topic}-*")):
        suffix = directory.name[len(topic) + 1:]
        if not suffix.isdigit():
            continue
        values = stored.setdefault(int(suffix), [])
        for segment in sorted(directory.glob("*.log")):
            for batch in iter_batches(segment.read_bytes()):
                values.extend(record.value for record in batch.records())
    return stored


def _all_stored(cluster, topic: str) -> list[bytes]:
    return sorted(v for broker in cluster.brokers.values() for values in _stored_values(broker.log_dir, topic).values() for v in values)


def _deleted_dirs(cluster, topic: str) -> list[Path]:
    return [d for broker in cluster.brokers.values() for d in broker.log_dir.glob(f"{topic}-*") if not d.name[len(topic) + 1:].isdigit()]


def test_a_topic_znode_deleted_by_hand_keeps_every_replicas_log(cluster):
    cluster.start(3)
    with zk_session(cluster) as zk:
        create_topic(cluster.bootstrap, "kept", 6)
        placed = _placed(cluster, "kept")
        assert sorted(set(placed.values())) == [0, 1, 2]
        produce(cluster.bootstrap, "kept", 300)
        expected = sorted(b"value-%d" % i for i in range(300))
        assert _all_stored(cluster, "kept") == expected
        controller = _controller(zk)
        zk.delete("/brokers/topics/kept", recursive=True)
        # Every broker's view loses the topic (it has seen the znode go)...
        for broker in cluster.brokers.values():
            wait_until(lambda broker=broker: "kept" not in metadata(broker.bootstrap).topics)
    # ...and every acknowledged record is still in the log of the broker that led its partition.
    for index, leader in placed.items():
        assert (cluster.brokers[leader].log_dir / f"kept-{index}").is_dir()
    assert _all_stored(cluster, "kept") == expected
    assert _deleted_dirs(cluster, "kept") == []
    assert not any("Deleted log for partition kept-" in line for broker in cluster.brokers.values() for line in broker.log_lines)
    # The controller forgot the topic, and said so.
    wait_until(lambda: any("Topic kept was removed from /brokers/topics" in line for line in cluster.brokers[controller].log_lines))


def test_with_topic_deletion_disabled_a_deletion_mark_is_removed_and_nothing_deleted(cluster):
    for broker_id in range(2):
        cluster.broker(broker_id, **{"delete.topic.enable": "false"}).start(timeout=60)
    with zk_session(cluster) as zk:
        create_topic(cluster.bootstrap, "kept", 4)
        placed = _placed(cluster, "kept")
        produce(cluster.bootstrap, "kept", 100)
        expected = sorted(b"value-%d" % i for i in range(100))
        assert _all_stored(cluster, "kept") == expected
        # DeleteTopics through a broker: refused, as Kafka refuses it.
        for broker in cluster.brokers.values():
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept alive until the answer comes
            future = admin.delete_topics(["kept"], operation_timeout=20)["kept"]
            with pytest.raises(KafkaException) as refused:
                future.result(30)
            assert refused.value.args[0].code() == TOPIC_DELETION_DISABLED
        # A mark written as ZooKeeper-era tools write it: the controller removes it and deletes nothing.
        controller = _controller(zk)
        zk.create("/admin/delete_topics/kept")
        wait_until(lambda: zk.exists("/admin/delete_topics/kept") is None)
        assert zk.exists("/brokers/topics/kept") is not None
        assert leaders(cluster.bootstrap, "kept") == placed
    for index, leader in placed.items():
        assert (cluster.brokers[leader].log_dir / f"kept-{index}").is_dir()
    assert _all_stored(cluster, "kept") == expected
    assert _deleted_dirs(cluster, "kept") == []
    assert any("since delete topic is disabled" in line for line in cluster.brokers[controller].log_lines)


def test_rf1_partitions_keep_serving_through_their_brokers_controlled_shutdown_exchange(cluster):
    cluster.start(2)
    with zk_session(cluster) as zk:
        create_topic(cluster.bootstrap, "single", 4)
        placed = _placed(cluster, "single")
        controller = _controller(zk)
        stopping = next(b for b in sorted(set(placed.values())) if b != controller)
        own = sorted(p for p, leader in placed.items() if leader == stopping)
        states = {p: json.loads(zk.get(f"/brokers/topics/single/partitions/{p}/state")[0]) for p in own}
        # ControlledShutdown v1 (broker id only), as the broker sends it when it starts to stop.
        answer = exchange(cluster.brokers[controller].bootstrap, 7, 1, struct.pack(">i", stopping))
        error, remaining = struct.unpack_from(">hi", answer)
        assert (error, remaining) == (0, 0)
        assert any(f"Shutting down broker {stopping}" in line for line in cluster.brokers[controller].log_lines)
        # Its one-replica partitions stay led by it, with the same leader epoch, and serve.
        for p in own:
            assert json.loads(zk.get(f"/brokers/topics/single/partitions/{p}/state")[0]) == states[p]
    assert leaders(cluster.bootstrap, "single") == placed
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    failures = []
    for p in own:
        producer.produce("single", value=b"after-%d" % p, partition=p, on_delivery=lambda err, msg: err and failures.append(err))
    assert producer.flush(30) == 0 and failures == []
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "readers", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("single", p, 0) for p in own])
        seen: list[bytes] = []
        wait_until(lambda: (seen.extend(m.value() for m in consumer.consume(10, 1) if not m.error()), len(seen) >= len(own))[1])
    finally:
        consumer.close()
    assert sorted(seen) == sorted(b"after-%d" % p for p in own)
