"""Bad input to a ZooKeeper-mode cluster: znodes written by hand that no Kafka broker would write,
and a second broker on log dirs another one holds. Each is reported in one line naming what is
wrong, and the rest of the cluster keeps working."""

from __future__ import annotations

import re

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker_process import BrokerProcess
from tests.cluster.conftest import SESSION_TIMEOUT_MS, wait_until
from tests.cluster.test_zookeeper_cluster import consume, create_topic, leaders, produce


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/brokers/topics/garbled", b"not json"),
        ("/brokers/topics/garbled", b'{"version":1,"partitions":{"zero":[0]}}'),
        ("/brokers/topics/garbled", b'{"version":1,"partitions":{"0":"broker 0"}}'),
    ],
    ids=["not-json", "partition-not-a-number", "replicas-not-a-list"],
)
def test_a_malformed_topic_znode_is_named_in_the_log_and_the_cluster_keeps_working(cluster, path, data):
    cluster.start(2)
    zk = cluster.zk()
    try:
        zk.create(path, data)
        # Every broker names the znode it cannot read; none of them stops.
        for broker in cluster.brokers.values():
            broker.wait_for(r"malformed znode.*/brokers/topics/garbled", timeout=30)
        # Topics created after it come online and serve, through either broker.
        create_topic(cluster.brokers[1].bootstrap, "after", 4)
        placed = wait_until(lambda: (lambda l: l if -1 not in l.values() else None)(leaders(cluster.bootstrap, "after")))
        assert sorted(set(placed.values())) == [0, 1]
        produce(cluster.brokers[0].bootstrap, "after", 40)
        assert sorted(consume(cluster.brokers[1].bootstrap, "after", 40, "after-readers")) == sorted(
            b"value-%d" % i for i in range(40)
        )
        assert all(broker.process.poll() is None for broker in cluster.brokers.values())
    finally:
        zk.stop()
        zk.close()


def test_a_malformed_partition_state_is_named_by_the_controller_and_the_other_partitions_serve(cluster):
    cluster.start(2)
    create_topic(cluster.brokers[0].bootstrap, "mixed", 4)
    wait_until(lambda: -1 not in leaders(cluster.bootstrap, "mixed").values())
    zk = cluster.zk()
    try:
        zk.set("/brokers/topics/mixed/partitions/2/state", b'{"controller_epoch":1,"leader":"nobody"}')
        # Nobody watches a state znode but its writer, the controller, which reads every state when
        # it is elected: force an election, as an operator does by deleting /controller.
        zk.delete("/controller")
    finally:
        zk.stop()
        zk.close()
    damage = re.compile(r"malformed znode.*/brokers/topics/mixed/partitions/2/state")
    wait_until(lambda: any(damage.search(line) for b in cluster.brokers.values() for line in b.log_lines), timeout=30)
    # The partitions whose state reads well still serve.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    for partition in (0, 1, 3):
        for i in range(10):
            producer.produce("mixed", value=b"%d-%d" % (partition, i), partition=partition)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        for partition in (0, 1, 3):
            assert consumer.get_watermark_offsets(TopicPartition("mixed", partition), timeout=20) == (0, 10)
    finally:
        consumer.close()
    assert all(broker.process.poll() is None for broker in cluster.brokers.values())


def test_a_second_broker_on_the_log_dirs_of_a_running_one_stops_with_one_line(cluster, tmp_path):
    cluster.start(1)
    twin = BrokerProcess(
        cluster.root / "logs0",  # the log dirs broker 0 holds
        {"broker.id": "1", "zookeeper.connect": cluster.connect, "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)},
    )
    with pytest.raises(RuntimeError):
        twin.start(timeout=60)
    assert twin.process.returncode == 1
    errors = [line for line in twin.log_lines if "ERROR" in line or "Error" in line]
    assert any("logs0" in line and "lock" in line.lower() for line in errors), twin.log_lines[-5:]
    assert not any("Traceback" in line for line in twin.log_lines)
    # Broker 0 keeps serving and broker 1 never registered.
    zk = cluster.zk()
    try:
        assert zk.get_children("/brokers/ids") == ["0"]
    finally:
        zk.stop()
        zk.close()
    produce(cluster.brokers[0].bootstrap, "still-served", 5)
