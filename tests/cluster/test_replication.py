"""Replication on three kcli brokers under ZooKeeper (Kafka 2.8's followers, high watermark, ISR
and acks=all), with real processes and real clients.

The brokers check their ISRs every second (``replica.lag.time.max.ms`` = 2000) and keep their
ZooKeeper sessions for 12 s, so a follower stopped with SIGSTOP leaves an ISR because its leader
says so (AlterPartition), not because its session ended."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster, wait_until, zk_session

RECORDS = 400
LAG_MS = 2000


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    made = Cluster(zookeeper_server, f"/replication-{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("cluster"))
    try:
        for broker_id in range(3):
            made.broker(broker_id, **{
                "replica.lag.time.max.ms": str(LAG_MS),
                "zookeeper.session.timeout.ms": "12000",
                # Kafka's defaults (the stock server.properties sets 1): the coordinators' topics replicated.
                "offsets.topic.replication.factor": "3",
                "transaction.state.log.replication.factor": "3",
            }).start(timeout=60)
        yield made
    finally:
        made.stop()


def new_topic(cluster: Cluster, label: str, partitions: int = 1, assignment: list[int] | None = None, **configs: str) -> str:
    topic = f"{label}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    if assignment is None:
        made = NewTopic(topic, partitions, 3, config=configs)
    else:
        made = NewTopic(topic, num_partitions=1, replica_assignment=[assignment], config=configs)
    admin.create_topics([made])[topic].result(30)
    return topic


def controller(cluster: Cluster) -> int:
    with zk_session(cluster) as zk:
        return json.loads(zk.get("/controller")[0])["brokerid"]


def state(cluster: Cluster, topic: str, partition: int = 0) -> dict:
    """The partition's state znode, as the controller wrote it."""
    with zk_session(cluster) as zk:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        return json.loads(zk.get(path)[0]) if zk.exists(path) else {}


def full_isr(cluster: Cluster, topic: str, partition: int = 0) -> dict:
    return wait_until(lambda: (lambda s: s if sorted(s.get("isr", [])) == [0, 1, 2] else None)(state(cluster, topic, partition)), timeout=30)


def described_isr(bootstrap: str, topic: str) -> list[int]:
    """The ISR ``kcli topics --describe`` prints (Kafka's tab-separated partition line)."""
    completed = subprocess.run(
        [sys.executable, "-m", "kcli", "topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic],
        capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    line = next(l for l in completed.stdout.splitlines() if "Partition: 0" in l)
    fields = dict(field.split(": ", 1) for field in line.strip().split("\t") if ": " in field)
    return sorted(int(b) for b in fields["Isr"].split(","))


def partition_dir(cluster: Cluster, broker_id: int, topic: str, partition: int) -> Path:
    return cluster.brokers[broker_id].log_dir / f"{topic}-{partition}"


def segment_bytes(cluster: Cluster, broker_id: int, topic: str, partition: int) -> bytes:
    path = partition_dir(cluster, broker_id, topic, partition) / "00000000000000000000.log"
    return path.read_bytes() if path.exists() else b""


@contextmanager
def stopped(cluster: Cluster, *broker_ids: int):
    """The brokers frozen with SIGSTOP (their sockets open, their sessions alive), resumed on exit."""
    for broker_id in broker_ids:
        os.kill(cluster.brokers[broker_id].process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for broker_id in broker_ids:
            os.kill(cluster.brokers[broker_id].process.pid, signal.SIGCONT)


def produce(bootstrap: str, topic: str, values: list[bytes], **config) -> list:
    """Produce ``values`` to partition 0 with acks=all and wait for every delivery report: "ok" or
    the error, in order."""
    reports: list = [None] * len(values)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2, **config})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg, i=i: reports.__setitem__(i, err or "ok"))
        producer.poll(0)
    assert producer.flush(60) == 0
    return reports


def consume_all(cluster: Cluster, topic: str, expected: int, **config: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False, **config})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        def poll() -> bool:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(message.value())
            return len(values) >= expected

        wait_until(poll, timeout=60, interval=0)
    finally:
        consumer.close()
    return values


def test_followers_copy_the_leaders_log_byte_for_byte_and_join_the_isr(cluster):
    topic = new_topic(cluster, "copied", partitions=3)
    leaders = {p: full_isr(cluster, topic, p)["leader"] for p in range(3)}
    # Idempotent, compressed, in several batches per partition: the followers must keep the
    # leader's offsets, producer ids, sequences, epochs and compression as they are.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 2, "batch.num.messages": 37})
    for i in range(RECORDS):
        producer.produce(topic, key=b"%d" % i, value=b"value-%d" % i, partition=i % 3)
        producer.poll(0)
    assert producer.flush(30) == 0

    for partition, leader in leaders.items():
        written = segment_bytes(cluster, leader, topic, partition)
        assert len(written) > 0
        leader_epochs = (partition_dir(cluster, leader, topic, partition) / "leader-epoch-checkpoint").read_text()
        for follower in {0, 1, 2} - {leader}:
            wait_until(lambda: segment_bytes(cluster, follower, topic, partition) == written, timeout=30)
            epochs = (partition_dir(cluster, follower, topic, partition) / "leader-epoch-checkpoint").read_text()
            assert epochs == leader_epochs


def test_the_isr_shrinks_without_stopped_followers_and_expands_when_they_resume(cluster):
    # The leader is the controller, so that the followers stopped are neither.
    leader = controller(cluster)
    first, second = sorted({0, 1, 2} - {leader})
    topic = new_topic(cluster, "isr", assignment=[leader, first, second], **{"min.insync.replicas": "2"})
    assert full_isr(cluster, topic)["leader"] == leader
    at_leader = cluster.brokers[leader].bootstrap  # no client waits on a stopped broker
    assert produce(at_leader, topic, [b"all-%d" % i for i in range(20)]) == ["ok"] * 20

    with stopped(cluster, first):
        # acks=all waits until the leader has dropped the stopped follower from the ISR, then succeeds.
        assert produce(at_leader, topic, [b"one-stopped-%d" % i for i in range(20)]) == ["ok"] * 20
        assert sorted(state(cluster, topic)["isr"]) == sorted([leader, second])
        assert described_isr(at_leader, topic) == sorted([leader, second])

        with stopped(cluster, second):
            # The leader alone is below min.insync.replicas: the produce waiting meanwhile is
            # refused after its append, and once the ISR is the leader alone, before it.
            after_append = produce(at_leader, topic, [b"unreplicated"], retries=0)
            assert [r.code() for r in after_append] == [KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND]
            assert state(cluster, topic)["isr"] == [leader]
            refused = produce(at_leader, topic, [b"refused"], retries=0)
            assert [r.code() for r in refused] == [KafkaError.NOT_ENOUGH_REPLICAS]

    assert full_isr(cluster, topic)["leader"] == leader
    wait_until(lambda: described_isr(at_leader, topic) == [0, 1, 2], timeout=30)
    written = segment_bytes(cluster, leader, topic, 0)
    for follower in (first, second):
        wait_until(lambda: segment_bytes(cluster, follower, topic, 0) == written, timeout=30)
    read = consume_all(cluster, topic, 41)
    assert b"refused" not in read and read[-1] == b"unreplicated"


def kcli_configs(bootstrap: str, *args: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "kcli", "configs", "--bootstrap-server", bootstrap, *args], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr


def broker_config(bootstrap: str, broker_id: int, name: str) -> str | None:
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = admin.describe_configs([resource])[resource].result(30)
    return configs[name].value if name in configs else None


def test_a_throttled_follower_outside_the_isr_catches_up_at_the_leaders_throttled_rate(cluster):
    """Kafka's replication throttle as its reassignment tool sets it: the topic names the leader's
    replicas in ``leader.replication.throttled.replicas`` and the brokers get
    ``leader.replication.throttled.rate`` (here the cluster default, through ``kcli configs``). A
    follower out of the ISR then copies no faster than the rate allows; the exact rate is
    ``bench/cluster.py --throttle``'s to measure."""
    leader = controller(cluster)
    follower = max({0, 1, 2} - {leader})
    topic = new_topic(cluster, "throttled", assignment=[leader, *sorted({0, 1, 2} - {leader})])
    full_isr(cluster, topic)
    at_leader = cluster.brokers[leader].bootstrap
    rate = 300_000
    values = [b"%05d" % i + b"t" * 10_000 for i in range(300)]  # some 3 MB
    try:
        with stopped(cluster, follower):
            wait_until(lambda: follower not in state(cluster, topic).get("isr", [follower]), timeout=30)
            assert produce(at_leader, topic, values, **{"batch.num.messages": 1}) == ["ok"] * len(values)
            kcli_configs(at_leader, "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config", f"leader.replication.throttled.replicas=0:{leader}")
            kcli_configs(at_leader, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", f"leader.replication.throttled.rate={rate}")
            wait_until(lambda: broker_config(at_leader, leader, "leader.replication.throttled.rate") == str(rate), timeout=30)
            written = segment_bytes(cluster, leader, topic, 0)
            resumed = time.monotonic()
        # The first window lets about one fetch (1 MiB) through at once; the rest waits for the rate.
        wait_until(lambda: len(segment_bytes(cluster, follower, topic, 0)) == len(written), timeout=120)
        took = time.monotonic() - resumed
        assert took >= (len(written) - 2**20 * 1.5) / rate, took
        assert segment_bytes(cluster, follower, topic, 0) == written
        full_isr(cluster, topic)
    finally:
        kcli_configs(at_leader, "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "leader.replication.throttled.rate")


def test_no_consumer_reads_above_the_high_watermark(cluster):
    """With both followers frozen, one of them the controller, the leader's ISR cannot shrink (its
    AlterPartition waits for an answer): a record appended with acks=1 stays above the high
    watermark, unread, until the followers fetch it."""
    frozen_controller = controller(cluster)
    leader, follower = [b for b in (0, 1, 2) if b != frozen_controller]
    topic = new_topic(cluster, "unread", assignment=[leader, frozen_controller, follower])
    full_isr(cluster, topic)
    at_leader = cluster.brokers[leader].bootstrap
    committed = [b"committed-%d" % i for i in range(10)]
    assert produce(at_leader, topic, committed) == ["ok"] * 10
    consumer = Consumer({"bootstrap.servers": at_leader, "group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False})
    read: list[bytes] = []

    def poll() -> None:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            read.append(message.value())

    try:
        with stopped(cluster, frozen_controller, follower):
            assert produce(at_leader, topic, [b"uncommitted"], acks="1") == ["ok"]
            consumer.assign([TopicPartition(topic, 0, 0)])
            wait_until(lambda: poll() or len(read) >= 10, timeout=30, interval=0)
            deadline = time.monotonic() + 3 * LAG_MS / 1000  # past a shrink's time, had one been possible
            while time.monotonic() < deadline:
                poll()
            assert read == committed
            assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 10)
        # The followers fetch the record, the high watermark passes it, the consumer reads it.
        wait_until(lambda: poll() or len(read) > 10, timeout=30, interval=0)
        assert read == committed + [b"uncommitted"]
    finally:
        consumer.close()


def test_a_follower_behind_the_leaders_log_start_starts_its_log_over_there(cluster):
    """Records deleted at the leader (DeleteRecords) while a follower was down: the follower is
    told OFFSET_OUT_OF_RANGE, starts its log at the leader's log start (inside a batch: at that
    batch's base offset), copies the rest and rejoins the ISR."""
    leader = controller(cluster)
    behind, other = sorted({0, 1, 2} - {leader})
    topic = new_topic(cluster, "restart", assignment=[leader, behind, other])
    full_isr(cluster, topic)
    at_leader = cluster.brokers[leader].bootstrap
    assert produce(at_leader, topic, [b"early-%d" % i for i in range(20)]) == ["ok"] * 20
    wait_until(lambda: segment_bytes(cluster, behind, topic, 0) == segment_bytes(cluster, leader, topic, 0), timeout=30)
    assert cluster.brokers[behind].stop() == 0
    try:
        wait_until(lambda: behind not in state(cluster, topic)["isr"], timeout=30)
        late = [b"late-%d" % i for i in range(30)]
        assert produce(at_leader, topic, late, **{"linger.ms": 50, "batch.num.messages": 4}) == ["ok"] * 30
        admin = AdminClient({"bootstrap.servers": at_leader})
        deleted = admin.delete_records([TopicPartition(topic, 0, 41)])
        assert [f.result(30).low_watermark for f in deleted.values()] == [41]
    finally:
        cluster.brokers[behind].start(timeout=60)
    full_isr(cluster, topic)
    leader_bytes = segment_bytes(cluster, leader, topic, 0)

    def copied_from_log_start() -> bool:
        segments = sorted(partition_dir(cluster, behind, topic, 0).glob("*.log"))
        if len(segments) != 1 or not 20 < int(segments[0].stem) <= 41:
            return False
        data = segments[0].read_bytes()
        return len(data) > 0 and leader_bytes.endswith(data)

    wait_until(copied_from_log_start, timeout=30)


def test_a_leader_killed_under_acks_all_loses_no_acknowledged_record(cluster):
    topic = new_topic(cluster, "failover", **{"min.insync.replicas": "2"})
    before = full_isr(cluster, topic)
    leader = before["leader"]
    values = [b"acked-%d" % i for i in range(RECORDS)]
    assert produce(cluster.bootstrap, topic, values, **{"enable.idempotence": True}) == ["ok"] * RECORDS

    cluster.brokers[leader].kill()
    try:
        after = wait_until(lambda: (lambda s: s if s.get("leader", -1) not in (-1, leader) else None)(state(cluster, topic)), timeout=60)
        assert after["leader_epoch"] > before["leader_epoch"]
        assert set(consume_all(cluster, topic, RECORDS)) >= set(values)
    finally:
        cluster.brokers[leader].start(timeout=60)
    # The old leader comes back as a follower, catches up and rejoins the ISR.
    full_isr(cluster, topic)
    new_leader = after["leader"]
    wait_until(lambda: segment_bytes(cluster, leader, topic, 0) == segment_bytes(cluster, new_leader, topic, 0), timeout=30)


def group_led_by_other_than(cluster: Cluster, broker_id: int) -> tuple[str, int, int]:
    """A group id whose ``__consumer_offsets`` partition a broker other than ``broker_id``
    leads: the group, its partition and that leader."""
    from kcli.broker.groups.partitioner import partition_for

    with zk_session(cluster) as zk:
        count = len(zk.get_children("/brokers/topics/__consumer_offsets/partitions"))
    leaders = {p: state(cluster, "__consumer_offsets", p).get("leader", -1) for p in range(count)}
    for n in range(10_000):
        group = f"g-{uuid.uuid4().hex[:6]}-{n}"
        partition = partition_for(group, count)
        if leaders[partition] not in (-1, broker_id):
            return group, partition, leaders[partition]
    raise AssertionError(f"every offsets partition is led by broker {broker_id}: {leaders}")


def test_a_commit_is_answered_once_replicated_and_survives_its_coordinators_death(cluster):
    """Kafka's storeOffsets: the group coordinator appends a commit with acks=-1 and answers in the
    append's callback. With both followers of the group's offsets partition frozen (one of them
    the controller, so the ISR cannot shrink meanwhile) the commit is not answered; once they
    resume it is, and a new coordinator elected after the old one is killed -9 serves it."""
    topic = new_topic(cluster, "commits")
    full_isr(cluster, topic)
    frozen_controller = controller(cluster)
    first = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "creates-the-offsets-topic"})
    try:
        first.committed([TopicPartition(topic, 0)], timeout=30)  # FindCoordinator creates __consumer_offsets
    finally:
        first.close()
    wait_until(lambda: all(state(cluster, "__consumer_offsets", p).get("isr") for p in range(6)), timeout=60)
    group, partition, coordinator = group_led_by_other_than(cluster, frozen_controller)
    full_isr(cluster, "__consumer_offsets", partition)
    follower = next(b for b in (0, 1, 2) if b not in (coordinator, frozen_controller))
    at_coordinator = cluster.brokers[coordinator].bootstrap
    consumer = Consumer({"bootstrap.servers": at_coordinator, "group.id": group, "enable.auto.commit": False})
    answers: list = []
    try:
        assert consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset < 0  # the coordinator is known
        with stopped(cluster, frozen_controller, follower):
            committing = threading.Thread(
                target=lambda: answers.append(consumer.commit(offsets=[TopicPartition(topic, 0, 42)], asynchronous=False)), daemon=True
            )
            committing.start()
            committing.join(1.5)
            assert committing.is_alive() and answers == []  # waiting for the frozen followers
        committing.join(30)
        assert not committing.is_alive()
        assert [[(tp.topic, tp.partition, tp.offset, tp.error) for tp in answer] for answer in answers] == [[(topic, 0, 42, None)]]
    finally:
        consumer.close()

    cluster.brokers[coordinator].kill()
    try:
        wait_until(lambda: state(cluster, "__consumer_offsets", partition).get("leader", -1) not in (-1, coordinator), timeout=60)
        reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            assert reader.committed([TopicPartition(topic, 0)], timeout=30)[0].offset == 42
        finally:
            reader.close()
    finally:
        cluster.brokers[coordinator].start(timeout=60)


def test_an_open_transaction_survives_its_coordinators_death(cluster):
    """The transaction coordinator answers AddPartitionsToTxn once the Ongoing state is
    replicated: after its broker is killed -9, the coordinator elected in its place knows the
    open transaction, the producer commits it there, and a read_committed consumer reads both
    transactions' records once each."""
    from kcli.broker.groups.partitioner import partition_for

    topic = new_topic(cluster, "txn", **{"min.insync.replicas": "2"})
    full_isr(cluster, topic)
    transactional_id = f"t-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": transactional_id, "acks": "all"})
    producer.init_transactions(60)
    with zk_session(cluster) as zk:
        count = len(zk.get_children("/brokers/topics/__transaction_state/partitions"))
    partition = partition_for(transactional_id, count)
    coordinator = full_isr(cluster, "__transaction_state", partition)["leader"]

    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, value=b"committed-%d" % i, partition=0)
    producer.commit_transaction(60)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, value=b"open-%d" % i, partition=0)
    assert producer.flush(60) == 0

    cluster.brokers[coordinator].kill()
    try:
        wait_until(lambda: state(cluster, "__transaction_state", partition).get("leader", -1) not in (-1, coordinator), timeout=60)
        deadline = time.monotonic() + 60
        while True:  # librdkafka reports a dead coordinator as retriable until it finds the new one
            try:
                producer.commit_transaction(30)
                break
            except KafkaException as e:
                if not e.args[0].retriable() or time.monotonic() > deadline:
                    raise
    finally:
        cluster.brokers[coordinator].start(timeout=60)

    read = consume_all(cluster, topic, 20, **{"isolation.level": "read_committed"})
    assert read == [b"committed-%d" % i for i in range(10)] + [b"open-%d" % i for i in range(10)]
