"""Transactions on a three-broker ZooKeeper cluster: confluent-kafka's transactional producer
writes to partitions led by every broker, so the coordinator sends most markers to other leaders
over the wire (WriteTxnMarkers) and the leaders ask the coordinator to verify the produce
(AddPartitionsToTxn verify_only); a read_committed consumer sees exactly the committed records.
Then the coordinator's broker is killed (SIGKILL) right after it wrote PrepareCommit: restarted,
it loads the decision and completes the transaction at every leader."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kcli.errors import ErrorCode
from tests.cluster.conftest import Cluster, wait_until

TIMEOUT = 60.0
CRASH_POINTS = Path(__file__).parent.parent / "interop" / "crash_points"
TOPIC = "payments"
# Few transaction log partitions: quick to create and load, still spread over the brokers.
OVERRIDES = {"transaction.state.log.num.partitions": "6"}


def start(cluster: Cluster) -> None:
    for broker_id in range(3):
        cluster.broker(broker_id, **OVERRIDES).start(timeout=60)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # One partition on each broker.
    admin.create_topics([NewTopic(TOPIC, num_partitions=3, replica_assignment=[[0], [1], [2]])])[TOPIC].result(30)
    wait_until(lambda: _leaders(admin) == {0: 0, 1: 1, 2: 2})


def _leaders(admin: AdminClient) -> dict[int, int]:
    return {p.id: p.leader for p in admin.list_topics(TOPIC, timeout=20).topics[TOPIC].partitions.values()}


def read_all(bootstrap: str, isolation: str) -> list[bytes]:
    """Every value up to the end of each partition (the last stable offset for read_committed)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}-{time.monotonic_ns()}", "isolation.level": isolation,
        "enable.partition.eof": True, "enable.auto.commit": False,
    })
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(3)])
    pending = set(range(3))
    values = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                pending.discard(message.partition())
                continue
            values.append(message.value())
    finally:
        consumer.close()
    assert not pending, f"did not reach the end of partitions {sorted(pending)}"
    return values


def transactional_producer(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5})
    producer.init_transactions(TIMEOUT)
    return producer


def test_commit_and_abort_over_partitions_led_by_every_broker(cluster):
    start(cluster)
    producer = transactional_producer(cluster.bootstrap, "spread")
    committed: list[bytes] = []
    aborted: list[bytes] = []
    for round_, commit in enumerate([True, False, True, False]):
        producer.begin_transaction()
        for i in range(9):
            value = f"{'c' if commit else 'a'}{round_}-{i}".encode()
            producer.produce(TOPIC, value=value, partition=i % 3)
            (committed if commit else aborted).append(value)
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.flush(TIMEOUT)
            producer.abort_transaction(TIMEOUT)
    assert sorted(read_all(cluster.bootstrap, "read_committed")) == sorted(committed)
    assert sorted(read_all(cluster.bootstrap, "read_uncommitted")) == sorted(committed + aborted)
    # Every broker wrote markers into its partition: the coordinator's own in-process, the
    # others' through WriteTxnMarkers.
    coordinators = [b for b in cluster.brokers.values() if any("Initialized transactionalId spread " in line for line in b.log_lines)]
    assert len(coordinators) == 1
    # A marker sent to a broker that does not lead the partition is refused as Kafka refuses it,
    # so the coordinator retries it at the leader.
    assert _write_marker_at(cluster.brokers[1].bootstrap, partition=0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _write_marker_at(cluster.brokers[1].bootstrap, partition=7) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _write_marker_at(bootstrap: str, partition: int) -> ErrorCode:
    import asyncio

    from kcli.client.connection import BrokerConnection

    async def send() -> ErrorCode:
        host, port = bootstrap.rsplit(":", 1)
        connection = await BrokerConnection.open(host, int(port))
        try:
            answer = await connection.call(27, {"markers": [{
                "producer_id": 4242, "producer_epoch": 0, "transaction_result": False, "coordinator_epoch": 0,
                "topics": [{"name": TOPIC, "partition_indexes": [partition]}],
            }]})
        finally:
            await connection.close()
        return ErrorCode.for_code(int(answer.markers[0].topics[0].partitions[0].error_code))

    return asyncio.run(asyncio.wait_for(send(), TIMEOUT))


def test_a_commit_decided_before_the_coordinator_is_killed_completes_after_restart(cluster, tmp_path, monkeypatch):
    flag = tmp_path / "crash-now"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(CRASH_POINTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("KCLI_CRASH_POINT", "prepare-commit")
    monkeypatch.setenv("KCLI_CRASH_FLAG", str(flag))
    start(cluster)
    producer = transactional_producer(cluster.bootstrap, "survivor")
    producer.begin_transaction()
    for i in range(6):
        producer.produce(TOPIC, value=f"aborted-{i}".encode(), partition=i % 3)
    producer.flush(TIMEOUT)
    producer.abort_transaction(TIMEOUT)
    producer.begin_transaction()
    committed = [f"committed-{i}".encode() for i in range(12)]
    for i, value in enumerate(committed):
        producer.produce(TOPIC, value=value, partition=i % 3)
    producer.flush(TIMEOUT)
    flag.touch()
    outcome: list[BaseException | None] = []
    committer = threading.Thread(target=lambda: outcome.append(_commit(producer)), daemon=True)
    committer.start()
    # The coordinator kills itself once PrepareCommit is written, before any marker.
    crashed = wait_until(lambda: [b for b in cluster.brokers.values() if b.process.poll() is not None], timeout=TIMEOUT)
    assert len(crashed) == 1 and crashed[0].process.returncode == -9
    flag.unlink()
    # Its registration goes with its ZooKeeper session; until then the id is taken.
    (crashed_id,) = [i for i, b in cluster.brokers.items() if b is crashed[0]]
    zk = cluster.zk()
    try:
        wait_until(lambda: zk.exists(f"/brokers/ids/{crashed_id}") is None, timeout=TIMEOUT)
    finally:
        zk.stop()
        zk.close()
    crashed[0].restart()
    crashed[0].wait_for(r"Completing transaction .* \(PrepareCommit\) found at load", timeout=TIMEOUT)
    committer.join(TIMEOUT * 2)
    assert not committer.is_alive()
    assert outcome == [None]  # the client's retried EndTxn finds its transaction committed
    assert sorted(read_all(cluster.bootstrap, "read_committed")) == sorted(committed)
    assert len(read_all(cluster.bootstrap, "read_uncommitted")) == len(committed) + 6


def _commit(producer: Producer) -> BaseException | None:
    try:
        producer.commit_transaction(TIMEOUT * 2)
    except KafkaException as e:
        return e
    return None


def test_kcli_producer_commits_offsets_with_a_coordinator_on_another_broker(cluster):
    """kcli's transactional producer, with its transaction coordinator on one broker and the
    group's ``__consumer_offsets`` partition on another: TxnOffsetCommit is verified over the
    wire, and the offsets marker goes to the group's broker."""
    import asyncio

    from kcli.broker.groups.partitioner import partition_for
    from kcli.client.consumer import Consumer as KcliConsumer
    from kcli.common import TopicPartition as KcliTopicPartition
    from kcli.client.network_client import NetworkClient
    from kcli.client.producer import Producer as KcliProducer

    start(cluster)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def leader(topic: str, index: int) -> int:
        return admin.list_topics(topic, timeout=20).topics[topic].partitions[index].leader

    async def scenario() -> dict:
        async with NetworkClient(cluster.bootstrap) as client:
            # Creates __consumer_offsets; the first answers are COORDINATOR_NOT_AVAILABLE until
            # the coordinator's broker hosts the partition, as from Kafka: retried as clients do.
            await client.retrying(lambda: client.coordinator("probe", 0))
            producer = KcliProducer.from_properties(client, {"transactional.id": "offsets-txn"})
            async with producer:
                await producer.init_transactions()
                coordinator = leader("__transaction_state", partition_for("offsets-txn", 6))
                group = next(g for g in (f"group-{i}" for i in range(100)) if leader("__consumer_offsets", partition_for(g, 6)) != coordinator)
                producer.begin_transaction()
                for i in range(3):
                    await producer.send(TOPIC, f"with-offsets-{i}".encode(), partition=i)
                await producer.send_offsets_to_transaction({KcliTopicPartition(TOPIC, 0): 5}, group)
                await producer.commit_transaction()
                producer.begin_transaction()
                await producer.send(TOPIC, b"dropped", partition=1)
                await producer.send_offsets_to_transaction({KcliTopicPartition(TOPIC, 0): 9}, group)
                await producer.flush()
                await producer.abort_transaction()
            consumer = KcliConsumer.from_properties(client, {"group.id": group, "enable.auto.commit": "false"})
            try:
                # EndTxn is answered once the decision is written; the markers follow, and
                # OffsetFetch (require_stable) waits for them.
                return await consumer.committed([KcliTopicPartition(TOPIC, 0)])
            finally:
                await consumer.close(commit=False)

    committed = asyncio.run(asyncio.wait_for(scenario(), TIMEOUT * 2))
    assert committed == {KcliTopicPartition(TOPIC, 0): 5}
    assert sorted(read_all(cluster.bootstrap, "read_committed")) == [f"with-offsets-{i}".encode() for i in range(3)]
    assert len(read_all(cluster.bootstrap, "read_uncommitted")) == 4
