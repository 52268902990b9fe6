"""``kcli consumer-groups --zookeeper`` and ``kcli consumer-offset-checker`` on a real ZooKeeper and
a real ZooKeeper-mode kcli broker, for a group laid out as Kafka's old consumer lays it out
(reference 5.1: ``ids/<consumerId>`` registrations, ``owners/<topic>/<partition>`` holding the
owning thread ``<consumerId>-<n>``, ``offsets/<topic>/<partition>`` decimal strings).

Expected lines are Kafka's format strings applied to the expected cells: Kafka 1.1's
ConsumerGroupCommand for old-consumer groups (``%-<T>s %-10s %-15s %-15s %-15s %-<C>s `` after a
blank line, no HOST/CLIENT-ID; reference 5.4) and ConsumerOffsetChecker's
``%-15s %-30s %-3s %-15s %-15s %-15s %s`` (reference 5.2).
"""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import running_cluster

NOTE = "Note: This will only show information about consumers that use ZooKeeper (not those using the Java consumer API)."


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("cluster"), "old-tools") as made:
        yield made


@pytest.fixture(scope="module")
def group(cluster):
    """A topic with 5 and 3 records in partitions 0 and 1; an old-consumer group on it whose first
    consumer owns partition 0 (offset 2 in ZooKeeper), whose second owns nothing, and which has
    partition 1's offset (1) in Kafka storage."""
    topic = f"old-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for partition, count in ((0, 5), (1, 3)):
        for i in range(count):
            producer.produce(topic, b"x", partition=partition)
    assert producer.flush(30) == 0
    name = f"oldgroup-{uuid.uuid4().hex[:6]}"
    first, second = f"{name}_host1-1643692590218-1a2b3c4d", f"{name}_host2-1643692590300-5e6f7a8b"
    zk = cluster.zk()
    try:
        for consumer_id in (first, second):
            registration = '{"version":1,"subscription":{"%s":1},"pattern":"static","timestamp":"1643692590218"}' % topic
            zk.create(f"/consumers/{name}/ids/{consumer_id}", registration.encode(), makepath=True)
        zk.create(f"/consumers/{name}/owners/{topic}/0", f"{first}-0".encode(), makepath=True)
        zk.create(f"/consumers/{name}/offsets/{topic}/0", b"2", makepath=True)
    finally:
        zk.stop()
        zk.close()
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": name})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 1, 1)], asynchronous=False)
    finally:
        consumer.close()
    return name, topic, first, second


def kcli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcli", *args], capture_output=True, text=True, timeout=90, check=False)


def test_list_shows_old_consumer_groups(cluster, group):
    name = group[0]
    listed = kcli("consumer-groups", "--zookeeper", cluster.connect, "--list")
    assert listed.returncode == 0, listed.stderr
    assert name in listed.stdout.splitlines()
    assert listed.stderr.splitlines() == [NOTE]


def test_describe_in_kafka_11_old_consumer_columns(cluster, group):
    name, topic, first, second = group
    described = kcli("consumer-groups", "--zookeeper", cluster.connect, "--describe", "--group", name)
    assert described.returncode == 0, described.stderr
    t, c = max(15, len(topic)), max(15, len(first), len(second))
    fmt = "%-*s %-10s %-15s %-15s %-15s %-*s "
    assert described.stdout.split("\n") == [
        "",
        fmt % (t, "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", c, "CONSUMER-ID"),
        fmt % (t, topic, 0, 2, 5, 3, c, first),
        fmt % (t, topic, 1, 1, 3, 2, c, "-"),
        fmt % (t, "-", "-", "-", "-", "-", c, second),
        "",
    ]
    assert described.stderr.splitlines() == [NOTE]
    missing = kcli("consumer-groups", "--zookeeper", cluster.connect, "--describe", "--group", "no-such-old-group")
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [NOTE, "Error: The consumer group 'no-such-old-group' does not exist."]


def test_consumer_offset_checker(cluster, group):
    name, topic, first, _second = group
    checked = kcli("consumer-offset-checker", "--zookeeper", cluster.connect, "--group", name, "--broker-info")
    assert checked.returncode == 0, checked.stderr
    fmt = "%-15s %-30s %-3s %-15s %-15s %-15s %s"
    broker = cluster.brokers[0]
    assert checked.stdout.splitlines() == [
        fmt % ("Group", "Topic", "Pid", "Offset", "logSize", "Lag", "Owner"),
        fmt % (name, topic, 0, 2, 5, 3, f"{first}-0"),
        fmt % (name, topic, 1, 1, 3, 2, "none"),
        "BROKER INFO",
        f"0 -> 127.0.0.1:{broker.port}",
    ]
    gone = kcli("consumer-offset-checker", "--zookeeper", cluster.connect, "--group", "nobody-here")
    assert gone.returncode == 1
    assert gone.stdout.splitlines() == [
        "Exiting due to: org.apache.zookeeper.KeeperException$NoNodeException: KeeperErrorCode = NoNode for /consumers/nobody-here/owners."]


def test_offset_checker_unknown_offset_and_usage(cluster, group):
    name, topic, first, _second = group
    zk = cluster.zk()
    try:
        zk.create(f"/consumers/{name}-b/offsets/{topic}/0", b"4", makepath=True)
        zk.create(f"/consumers/{name}-b/owners/{topic}/1", f"{first}-1".encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()
    checked = kcli("consumer-offset-checker", "--zookeeper", cluster.connect, "--group", f"{name}-b", "--topic", topic)
    assert checked.returncode == 0, checked.stderr
    fmt = "%-15s %-30s %-3s %-15s %-15s %-15s %s"
    assert checked.stdout.splitlines()[1:] == [
        fmt % (f"{name}-b", topic, 0, 4, 5, 1, "none"),
        fmt % (f"{name}-b", topic, 1, -1, 3, "unknown", f"{first}-1"),  # a missing node under an existing offsets/<topic>
    ]
    usage = kcli("consumer-offset-checker", "--zookeeper", cluster.connect)
    assert usage.returncode == 2 and usage.stdout == ""
    both = kcli("consumer-groups", "--zookeeper", cluster.connect, "--bootstrap-server", "127.0.0.1:1", "--list")
    assert (both.returncode, both.stderr.strip()) == (2, 'Error: Option "[bootstrap-server]" can\'t be used with option "[zookeeper]"')
