"""Transactions with confluent-kafka (librdkafka) against a real kcli broker: a transactional
producer committing and aborting across partitions of two topics, a consume-transform-produce
loop with send_offsets_to_transaction, a fenced zombie producer, a transaction the coordinator
aborts on its timeout, and a broker killed (SIGKILL) between PrepareCommit and the markers or
between two markers. What
read_committed and read_uncommitted consumers see is checked against what was sent."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess
from conftest import start_broker
from test_compaction import cleaned_up_to

TIMEOUT = 30.0
CRASH_POINTS = Path(__file__).parent / "crash_points"


def create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, count, 1) for name, count in partitions.items()]).values():
        future.result(TIMEOUT)


def transactional_producer(bootstrap: str, transactional_id: str, **extra) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5, **extra})
    producer.init_transactions(TIMEOUT)
    return producer


def read_all(bootstrap: str, partitions: dict[str, int], isolation: str) -> list[bytes]:
    """Every value a consumer of ``isolation`` reads up to the end of each partition (the last
    stable offset for read_committed), in no particular order."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}-{time.monotonic_ns()}", "isolation.level": isolation,
        "enable.partition.eof": True, "enable.auto.commit": False,
    })
    assignment = [TopicPartition(t, p, OFFSET_BEGINNING) for t, n in partitions.items() for p in range(n)]
    consumer.assign(assignment)
    pending = {(tp.topic, tp.partition) for tp in assignment}
    values = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                pending.discard((message.topic(), message.partition()))
                continue
            values.append(message.value())
    finally:
        consumer.close()
    assert not pending, f"did not reach the end of {sorted(pending)}"
    return values


@pytest.fixture
def fast_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker that looks for timed-out transactions every 200 ms."""
    process = start_broker(tmp_path / "broker", {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    yield process
    process.stop()


def test_commit_and_abort_across_partitions_of_two_topics(broker, unique_topic):
    first, second = unique_topic("a"), unique_topic("b")
    layout = {first: 3, second: 2}
    create_topics(broker.bootstrap, layout)
    producer = transactional_producer(broker.bootstrap, unique_topic("txn"))
    committed, aborted = [], []
    for round_, (count, commit) in enumerate([(30, True), (20, False), (10, True)]):
        producer.begin_transaction()
        for i in range(count):
            value = f"r{round_}-{i}".encode()
            topic = first if i % 2 else second
            producer.produce(topic, value=value, partition=i % layout[topic])
            (committed if commit else aborted).append(value)
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.flush(TIMEOUT)
            producer.abort_transaction(TIMEOUT)
    assert sorted(read_all(broker.bootstrap, layout, "read_committed")) == sorted(committed)
    assert sorted(read_all(broker.bootstrap, layout, "read_uncommitted")) == sorted(committed + aborted)


def test_consume_transform_produce_commits_offsets_with_the_output(broker, unique_topic):
    source, sink, group = unique_topic("in"), unique_topic("out"), unique_topic("group")
    create_topics(broker.bootstrap, {source: 2, sink: 2})
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    inputs = [f"v{i}".encode() for i in range(60)]
    for i, value in enumerate(inputs):
        plain.produce(source, value=value, partition=i % 2)
    plain.flush(TIMEOUT)

    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": group, "isolation.level": "read_committed",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
    })
    consumer.assign([TopicPartition(source, p) for p in range(2)])
    producer = transactional_producer(broker.bootstrap, unique_topic("txn"))
    rounds = 0
    aborted_once = False
    seen: set[bytes] = set()
    errors: list[str] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(seen) < len(inputs) and time.monotonic() < deadline:
            batch = consumer.consume(10, 1.0)
            errors.extend(str(m.error()) for m in batch if m.error())
            messages = [m for m in batch if not m.error()]
            if not messages:
                continue
            producer.begin_transaction()
            for message in messages:
                producer.produce(sink, value=message.value().upper(), partition=message.partition())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), TIMEOUT)
            rounds += 1
            if rounds == 3 and not aborted_once:
                # Abort one round: its output and offsets go away, and the consumer goes back to
                # the committed offsets, so the same input is processed again.
                aborted_once = True
                producer.abort_transaction(TIMEOUT)
                committed = consumer.committed(consumer.assignment(), TIMEOUT)
                for tp in committed:
                    consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
                continue
            producer.commit_transaction(TIMEOUT)
            seen.update(m.value() for m in messages)
        committed = {tp.partition: tp.offset for tp in consumer.committed([TopicPartition(source, p) for p in range(2)], TIMEOUT)}
    finally:
        consumer.close()
    assert aborted_once and seen == set(inputs), f"after {rounds} rounds, consumer errors: {errors}"
    assert committed == {0: 30, 1: 30}
    output = read_all(broker.bootstrap, {sink: 2}, "read_committed")
    assert sorted(output) == sorted(v.upper() for v in inputs)  # each exactly once


def test_a_zombie_producer_is_fenced_by_its_successor(broker, unique_topic):
    topic, transactional_id = unique_topic(), unique_topic("txn")
    create_topics(broker.bootstrap, {topic: 1})
    zombie = transactional_producer(broker.bootstrap, transactional_id)
    zombie.begin_transaction()
    for i in range(5):
        zombie.produce(topic, value=f"zombie-{i}".encode())
    zombie.flush(TIMEOUT)
    successor = transactional_producer(broker.bootstrap, transactional_id)
    successor.begin_transaction()
    for i in range(5):
        successor.produce(topic, value=f"successor-{i}".encode())
    successor.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(TIMEOUT)
    error = raised.value.args[0]
    assert error.fatal() and error.code() == KafkaError._FENCED, error
    assert sorted(read_all(broker.bootstrap, {topic: 1}, "read_committed")) == sorted(f"successor-{i}".encode() for i in range(5))


def test_the_coordinator_aborts_a_transaction_past_its_timeout(fast_broker, unique_topic):
    topic, transactional_id = unique_topic(), unique_topic("txn")
    create_topics(fast_broker.bootstrap, {topic: 2})
    producer = transactional_producer(fast_broker.bootstrap, transactional_id, **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    for i in range(6):
        producer.produce(topic, value=f"late-{i}".encode(), partition=i % 2)
    producer.flush(TIMEOUT)
    fast_broker.wait_for(rf"Aborting the transaction of {transactional_id} ", timeout=TIMEOUT)
    with pytest.raises(KafkaException):
        producer.commit_transaction(TIMEOUT)
    # Nothing of it is visible to read_committed, and nothing holds the last stable offset back.
    assert read_all(fast_broker.bootstrap, {topic: 2}, "read_committed") == []
    assert len(read_all(fast_broker.bootstrap, {topic: 2}, "read_uncommitted")) == 6


@pytest.mark.parametrize("crash_point", ["prepare-commit", "first-marker"])
def test_a_commit_decided_before_a_crash_completes_after_restart(tmp_path, monkeypatch, unique_topic, crash_point):
    """SIGKILL after PrepareCommit is written, or after the first of its markers: the restarted
    coordinator writes the markers (again), and every committed record is read once."""
    flag = tmp_path / "crash-now"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(CRASH_POINTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("KCLI_CRASH_POINT", crash_point)
    monkeypatch.setenv("KCLI_CRASH_FLAG", str(flag))
    broker = start_broker(tmp_path / "broker")
    try:
        first, second = unique_topic("a"), unique_topic("b")
        layout = {first: 2, second: 1}
        create_topics(broker.bootstrap, layout)
        producer = transactional_producer(broker.bootstrap, unique_topic("txn"))
        producer.begin_transaction()
        for i in range(4):
            producer.produce(first, value=f"aborted-{i}".encode(), partition=i % 2)
        producer.flush(TIMEOUT)
        producer.abort_transaction(TIMEOUT)
        producer.begin_transaction()
        committed = [f"committed-{i}".encode() for i in range(9)]
        for i, value in enumerate(committed):
            producer.produce(second if i % 3 == 0 else first, value=value, partition=0 if i % 3 == 0 else i % 2)
        producer.flush(TIMEOUT)
        flag.touch()
        outcome: list[BaseException | None] = []
        committer = threading.Thread(target=lambda: outcome.append(_commit(producer)), daemon=True)
        committer.start()
        assert broker.process.wait(TIMEOUT) == -9  # killed itself at the crash point
        flag.unlink()
        broker.start()
        broker.wait_for(r"Completing transaction .* \(PrepareCommit\) found at load", timeout=TIMEOUT)
        committer.join(TIMEOUT)
        assert not committer.is_alive()
        assert outcome == [None]  # the client's retried EndTxn finds its transaction committed
        assert sorted(read_all(broker.bootstrap, layout, "read_committed")) == sorted(committed)
        assert len(read_all(broker.bootstrap, layout, "read_uncommitted")) == len(committed) + 4
    finally:
        broker.stop()


def _commit(producer: Producer) -> BaseException | None:
    try:
        producer.commit_transaction(TIMEOUT * 2)
    except KafkaException as e:
        return e
    return None


def read_with_offsets(bootstrap: str, topic: str, isolation: str) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of every record of partition 0 up to its end for ``isolation``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets-reader", "isolation.level": isolation,
                         "enable.partition.eof": True, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    found = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return found
            found.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    raise AssertionError(f"did not reach the end of {topic}-0")


def test_compaction_removes_aborted_data_and_keeps_what_read_committed_needs(tmp_path, unique_topic):
    broker = start_broker(tmp_path / "broker", {"log.cleaner.backoff.ms": "100"})
    try:
        topic = unique_topic()
        configs = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01"}
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(TIMEOUT)
        producer = transactional_producer(broker.bootstrap, unique_topic("txn"))
        latest: dict[bytes, bytes] = {}
        written: set[bytes] = set()
        for round_ in range(30):  # enough to fill several 2 KiB segments
            producer.begin_transaction()
            key, value = f"k{round_ % 5}".encode(), f"{round_}".encode() * 10
            if round_ % 2:
                # Aborted: a new value for a committed key, and a key no commit ever wrote.
                producer.produce(topic, b"aborted" * 10, key, partition=0)
                producer.produce(topic, b"aborted" * 10, f"a{round_ % 3}".encode(), partition=0)
                producer.flush(TIMEOUT)
                producer.abort_transaction(TIMEOUT)
            else:
                producer.produce(topic, value, key, partition=0)
                producer.commit_transaction(TIMEOUT)
                latest[key] = value
                written.add(value)
        deadline = time.monotonic() + TIMEOUT
        while cleaned_up_to(broker.log_dir, topic) <= 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        cleaned = cleaned_up_to(broker.log_dir, topic)
        assert cleaned > 0
        # Below the cleaned offset no aborted record is left, even for read_uncommitted readers.
        uncommitted = read_with_offsets(broker.bootstrap, topic, "read_uncommitted")
        assert not [o for o, _, v in uncommitted if o < cleaned and v == b"aborted" * 10]
        # read_committed readers see committed values only, and each key's latest survives.
        committed = read_with_offsets(broker.bootstrap, topic, "read_committed")
        assert {v for _, _, v in committed} <= written
        assert {k: v for _, k, v in committed} == latest
    finally:
        broker.stop()
