"""kcli's own transactional producer against a real kcli broker: commit and abort across
partitions of two topics read back by read_committed (and read_uncommitted) consumers of kcli,
confluent-kafka and kafka-python; a consume-transform-produce loop of kcli's consumer and
producer with send_offsets_to_transaction; a zombie fenced by its successor; a transaction the
coordinator aborts on its timeout; the Java client's API misuse errors; and an abortable error
followed by an abort that bumps the epoch (KIP-360)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess
from conftest import start_broker
from kcli.client.consumer import Consumer, TopicPartition
from kcli.client.network_client import NetworkClient
from kcli.client.producer import Producer
from kcli.client.transaction_manager import IllegalTransactionStateError, TransactionAbortedError, TransactionError, TransactionState
from kcli.errors import ErrorCode
from test_confluent_kafka_transactions import TIMEOUT, create_topics, read_all
from test_kafka_python_transactions import kafka_python_read

T = TypeVar("T")


def run(coroutine: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, TIMEOUT * 3)

    return asyncio.run(bounded())


def transactional(bootstrap: str, transactional_id: str, **extra: str) -> Producer:
    return Producer.from_properties(bootstrap, {"transactional.id": transactional_id, "linger.ms": "5", **extra})


async def kcli_read(bootstrap: str, layout: dict[str, int], isolation: str, *, group: str | None = None) -> list[bytes]:
    """Every value kcli's consumer reads from the start to the end offsets of every partition
    (the last stable offsets for read_committed)."""
    async with NetworkClient(bootstrap) as cluster:
        props = {"isolation.level": isolation, "auto.offset.reset": "earliest"}
        consumer = Consumer.from_properties(cluster, props)
        tps = [TopicPartition(t, p) for t, n in layout.items() for p in range(n)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        values: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT
        reached = False
        try:
            while not reached and time.monotonic() < deadline:
                values += [r.value for r in await consumer.poll(0.3)]
                reached = all([await consumer.position(tp) >= ends[tp] for tp in tps])
        finally:
            await consumer.close(commit=False)
        assert reached, f"did not reach the end offsets {ends}"
        return values


@pytest.fixture
def fast_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker that looks for timed-out transactions every 200 ms."""
    process = start_broker(tmp_path / "broker", {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    yield process
    process.stop()


def test_commits_and_aborts_across_partitions_of_two_topics(broker, unique_topic):
    first, second = unique_topic("a"), unique_topic("b")
    layout = {first: 3, second: 2}
    create_topics(broker.bootstrap, layout)
    committed: list[bytes] = []
    aborted: list[bytes] = []

    async def scenario() -> None:
        producer = transactional(broker.bootstrap, unique_topic("txn"))
        async with producer:
            await producer.init_transactions()
            assert producer.transaction_state == TransactionState.READY and producer.producer_id >= 0
            for round_, commit in enumerate([True, False, True, False, True]):
                producer.begin_transaction()
                futures = []
                for i in range(12):
                    topic = first if i % 2 else second
                    value = f"{'c' if commit else 'a'}{round_}-{i}".encode()
                    futures.append(await producer.send(topic, value, partition=i % layout[topic]))
                    (committed if commit else aborted).append(value)
                if commit:
                    await producer.commit_transaction()
                    # Every record of a committed transaction was written.
                    assert all(f.result().offset >= 0 for f in futures)
                else:
                    await producer.flush()
                    await producer.abort_transaction()
                assert producer.transaction_state == TransactionState.READY

    run(scenario())
    assert sorted(run(kcli_read(broker.bootstrap, layout, "read_committed"))) == sorted(committed)
    assert sorted(read_all(broker.bootstrap, layout, "read_committed")) == sorted(committed)
    assert sorted(kafka_python_read(broker.bootstrap, first, 3, "read_committed")) == sorted(v for v in committed if int(v.split(b"-")[1]) % 2)
    assert sorted(kafka_python_read(broker.bootstrap, second, 2, "read_committed")) == sorted(v for v in committed if not int(v.split(b"-")[1]) % 2)
    assert sorted(run(kcli_read(broker.bootstrap, layout, "read_uncommitted"))) == sorted(committed + aborted)
    assert sorted(read_all(broker.bootstrap, layout, "read_uncommitted")) == sorted(committed + aborted)


def test_abort_drops_records_not_sent_yet(broker, unique_topic):
    """Records still in the buffer when the transaction is aborted fail with
    TransactionAbortedError and are never written."""
    topic = unique_topic()
    create_topics(broker.bootstrap, {topic: 2})

    async def scenario() -> list[BaseException | None]:
        async with Producer.from_properties(broker.bootstrap, {"transactional.id": unique_topic("txn"), "linger.ms": "60000", "batch.size": "1000000"}) as producer:
            await producer.init_transactions()
            producer.begin_transaction()
            futures = [await producer.send(topic, f"dropped-{i}".encode(), partition=i % 2) for i in range(5)]
            await producer.abort_transaction()
            outcomes = [f.exception() for f in futures]
            producer.begin_transaction()
            await producer.send(topic, b"kept", partition=0)
            await producer.commit_transaction()
            return outcomes

    outcomes = run(scenario())
    assert all(isinstance(o, TransactionAbortedError) for o in outcomes), outcomes
    assert run(kcli_read(broker.bootstrap, {topic: 2}, "read_uncommitted")) == [b"kept"]


def test_consume_transform_produce_commits_offsets_with_the_output(broker, unique_topic):
    source, sink, group = unique_topic("in"), unique_topic("out"), unique_topic("group")
    create_topics(broker.bootstrap, {source: 2, sink: 2})
    inputs = [f"v{i}".encode() for i in range(60)]

    async def feed() -> None:
        async with Producer.from_properties(broker.bootstrap, {}) as plain:
            for i, value in enumerate(inputs):
                await plain.send(source, value, partition=i % 2)

    async def transform() -> int:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer.from_properties(cluster, {
                "group.id": group, "isolation.level": "read_committed", "enable.auto.commit": "false", "auto.offset.reset": "earliest",
            })
            await consumer.subscribe([source])
            producer = transactional(broker.bootstrap, unique_topic("txn"))
            seen: set[bytes] = set()
            rounds = 0
            aborted_once = False
            deadline = time.monotonic() + TIMEOUT
            async with producer:
                await producer.init_transactions()
                while len(seen) < len(inputs) and time.monotonic() < deadline:
                    records = await consumer.poll(0.5, max_records=7)
                    if not records:
                        continue
                    producer.begin_transaction()
                    for record in records:
                        await producer.send(sink, record.value.upper(), partition=record.partition)
                    positions = {tp: await consumer.position(tp) for tp in consumer.assignment()}
                    await producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                    rounds += 1
                    if rounds == 3 and not aborted_once:
                        # The round's output and offsets go away; the consumer goes back to the
                        # committed offsets and processes the same input again.
                        aborted_once = True
                        await producer.flush()  # the output is written, then aborted
                        await producer.abort_transaction()
                        committed = await consumer.committed(consumer.assignment())
                        for tp, offset in committed.items():
                            consumer.seek(tp, offset if offset is not None else 0)
                        continue
                    await producer.commit_transaction()
                    seen.update(r.value for r in records)
            await consumer.close(commit=False)
            return rounds

    run(feed())
    rounds = run(transform())
    assert rounds > 3
    outputs = run(kcli_read(broker.bootstrap, {sink: 2}, "read_committed"))
    assert sorted(outputs) == sorted(v.upper() for v in inputs)  # each input once: exactly once
    assert sorted(read_all(broker.bootstrap, {sink: 2}, "read_committed")) == sorted(v.upper() for v in inputs)
    # The aborted round's output was written and is seen by read_uncommitted only.
    assert len(run(kcli_read(broker.bootstrap, {sink: 2}, "read_uncommitted"))) > len(inputs)

    async def committed_offsets() -> dict[TopicPartition, int | None]:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer.from_properties(cluster, {"group.id": group, "enable.auto.commit": "false"})
            try:
                return await consumer.committed([TopicPartition(source, 0), TopicPartition(source, 1)])
            finally:
                await consumer.close(commit=False)

    assert run(committed_offsets()) == {TopicPartition(source, 0): 30, TopicPartition(source, 1): 30}


def test_a_zombie_producer_is_fenced_by_its_successor(broker, unique_topic):
    topic, transactional_id = unique_topic(), unique_topic("txn")
    create_topics(broker.bootstrap, {topic: 2})

    async def scenario() -> tuple[TransactionError, TransactionError, TransactionState]:
        zombie = transactional(broker.bootstrap, transactional_id)
        successor = transactional(broker.bootstrap, transactional_id)
        async with zombie, successor:
            await zombie.init_transactions()
            zombie.begin_transaction()
            for i in range(5):
                await zombie.send(topic, f"zombie-{i}".encode(), partition=i % 2)
            await zombie.flush()
            await successor.init_transactions()
            assert successor.producer_id == zombie.producer_id and successor.producer_epoch > zombie.producer_epoch
            successor.begin_transaction()
            for i in range(5):
                await successor.send(topic, f"successor-{i}".encode(), partition=i % 2)
            await successor.commit_transaction()
            with pytest.raises(TransactionError) as commit:
                await zombie.commit_transaction()
            # Fatal: every later call raises the same.
            with pytest.raises(TransactionError) as later:
                zombie.begin_transaction()
            state = zombie.transaction_state
            with pytest.raises(TransactionError):
                await zombie.abort_transaction()
        return commit.value, later.value, state

    commit, later, state = run(scenario())
    assert commit.error_code == ErrorCode.PRODUCER_FENCED and commit.fatal, commit
    assert "has been fenced by another producer with the same transactionalId" in str(commit)
    assert later.error_code == ErrorCode.PRODUCER_FENCED and state == TransactionState.FATAL_ERROR
    assert sorted(run(kcli_read(broker.bootstrap, {topic: 2}, "read_committed"))) == sorted(f"successor-{i}".encode() for i in range(5))


def test_the_coordinator_aborts_a_transaction_past_its_timeout(fast_broker, unique_topic):
    topic, transactional_id = unique_topic(), unique_topic("txn")
    create_topics(fast_broker.bootstrap, {topic: 2})

    async def scenario() -> TransactionError:
        async with transactional(fast_broker.bootstrap, transactional_id, **{"transaction.timeout.ms": "1000"}) as producer:
            await producer.init_transactions()
            producer.begin_transaction()
            for i in range(6):
                await producer.send(topic, f"late-{i}".encode(), partition=i % 2)
            await producer.flush()
            await asyncio.to_thread(fast_broker.wait_for, rf"Aborting the transaction of {transactional_id} ", timeout=TIMEOUT)
            with pytest.raises(TransactionError) as raised:
                await producer.commit_transaction()
            return raised.value

    error = run(scenario())
    # The coordinator bumped the epoch when it aborted: the producer is fenced, as Kafka's is.
    assert error.error_code == ErrorCode.PRODUCER_FENCED and error.fatal, error
    assert run(kcli_read(fast_broker.bootstrap, {topic: 2}, "read_committed")) == []
    assert len(run(kcli_read(fast_broker.bootstrap, {topic: 2}, "read_uncommitted"))) == 6


def test_an_abortable_error_allows_only_abort_which_bumps_the_epoch(broker, unique_topic):
    """A record the broker refuses (MESSAGE_TOO_LARGE for the topic's max.message.bytes) fails the
    transaction: commit raises, abort works and takes a bumped epoch (KIP-360), and the next
    transaction commits."""
    topic = unique_topic()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"max.message.bytes": "2000"})])[topic].result(TIMEOUT)

    async def scenario() -> tuple[BaseException | None, TransactionError, TransactionError, tuple[int, int], tuple[int, int]]:
        async with transactional(broker.bootstrap, unique_topic("txn")) as producer:
            await producer.init_transactions()
            before = (producer.producer_id, producer.producer_epoch)
            producer.begin_transaction()
            await producer.send(topic, b"small", partition=0)
            too_large = await producer.send(topic, b"x" * 5000, partition=0)
            await producer.flush()
            refused = too_large.exception()
            with pytest.raises(TransactionError) as send:
                await producer.send(topic, b"after", partition=0)
            with pytest.raises(TransactionError) as commit:
                await producer.commit_transaction()
            assert producer.transaction_state == TransactionState.ABORTABLE_ERROR
            await producer.abort_transaction()
            after = (producer.producer_id, producer.producer_epoch)
            producer.begin_transaction()
            await producer.send(topic, b"next", partition=0)
            await producer.commit_transaction()
        return refused, send.value, commit.value, before, after

    refused, send, commit, before, after = run(scenario())
    assert refused is not None and refused.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert send.error_code == ErrorCode.MESSAGE_TOO_LARGE and not send.fatal
    assert "Cannot execute transactional method because we are in an error state" in str(commit) and not commit.fatal
    assert after == (before[0], before[1] + 1)
    assert run(kcli_read(broker.bootstrap, {topic: 1}, "read_committed")) == [b"next"]


def test_misuse_raises_the_java_clients_errors(broker, unique_topic):
    topic = unique_topic()
    create_topics(broker.bootstrap, {topic: 1})

    async def scenario() -> list[str]:
        messages = []
        async with transactional(broker.bootstrap, unique_topic("txn")) as producer:
            with pytest.raises(IllegalTransactionStateError) as raised:
                producer.begin_transaction()
            messages.append(str(raised.value))
            with pytest.raises(IllegalTransactionStateError) as raised:
                await producer.send(topic, b"v")
            messages.append(str(raised.value))
            await producer.init_transactions()
            with pytest.raises(IllegalTransactionStateError) as raised:
                await producer.init_transactions()
            messages.append(str(raised.value))
            with pytest.raises(IllegalTransactionStateError) as raised:
                await producer.send(topic, b"v")
            messages.append(str(raised.value))
            with pytest.raises(IllegalTransactionStateError) as raised:
                await producer.commit_transaction()
            messages.append(str(raised.value))
            with pytest.raises(IllegalTransactionStateError) as raised:
                await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, "g")
            messages.append(str(raised.value))
            producer.begin_transaction()
            with pytest.raises(IllegalTransactionStateError) as raised:
                producer.begin_transaction()
            messages.append(str(raised.value))
            # A transaction with nothing in it commits without asking the coordinator.
            await producer.commit_transaction()
        async with Producer.from_properties(broker.bootstrap, {}) as plain:
            with pytest.raises(IllegalTransactionStateError) as raised:
                await plain.init_transactions()
            messages.append(str(raised.value))
        return messages

    messages = run(scenario())
    assert messages[0].endswith("Invalid transition attempted from state UNINITIALIZED to state IN_TRANSACTION")
    assert messages[1] == "Cannot perform a 'send' before completing a call to initTransactions when transactions are enabled."
    assert messages[2].endswith("Invalid transition attempted from state READY to state INITIALIZING")
    assert messages[3] == "Cannot call send in state READY"
    assert messages[4].endswith("Invalid transition attempted from state READY to state COMMITTING_TRANSACTION")
    assert messages[5] == "Cannot send offsets if a transaction is not in progress (currentState= READY)"
    assert messages[6].endswith("Invalid transition attempted from state IN_TRANSACTION to state IN_TRANSACTION")
    assert messages[7] == "Cannot use transactional methods without enabling transactions by setting the transactional.id configuration property"


def test_the_batches_carry_the_transactional_attribute(broker, unique_topic, stored_batches):
    topic = unique_topic()
    create_topics(broker.bootstrap, {topic: 1})

    async def scenario() -> None:
        async with transactional(broker.bootstrap, unique_topic("txn")) as producer:
            await producer.init_transactions()
            producer.begin_transaction()
            await producer.send(topic, b"one", partition=0)
            await producer.commit_transaction()

    run(scenario())
    batches = stored_batches(topic, 0)
    assert [(b["isTransactional"], b["isControl"]) for b in batches] == [("true", "false"), ("true", "true")], batches
