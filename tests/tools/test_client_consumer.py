"""kcli's consumer against a real kcli broker process, with confluent-kafka (librdkafka) as the
independent producer, group peer and committed-offset reader; and once against the librdkafka
mock cluster."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kcli.client.consumer import Consumer, NoOffsetForPartitionError, TopicPartition
from kcli.client.network_client import NetworkClient

T = TypeVar("T")
FAST_GROUP = {"heartbeat_interval_ms": 100, "session_timeout_ms": 6000, "max_poll_interval_ms": 30000}


def run(coroutine: Awaitable[T], timeout: float = 60.0) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, timeout)

    return asyncio.run(bounded())


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=10)
    futures[name].result(timeout=30)


def produce(bootstrap: str, records: list[dict[str, Any]], **config: Any) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    for record in records:
        producer.produce(**record)
    assert producer.flush(30) == 0


async def poll_until(consumer: Consumer, count: int, timeout: float = 20.0) -> list[Any]:
    records: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(records) < count and time.monotonic() < deadline:
        records += await consumer.poll(0.5)
    return records


# -- reading what librdkafka wrote -----------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_assign_seek_poll_reads_back_keys_values_headers_nulls_timestamps(broker, unique_topic, codec):
    topic = unique_topic(codec)
    create_topic(broker.bootstrap, topic, 2)
    base_ts = 1_700_000_000_000
    sent = []
    for i in range(300):
        key = None if i % 7 == 0 else f"key-{i}".encode()
        value = None if i % 11 == 0 else (f"value-{i}-" * (i % 5 + 1)).encode()
        headers = [("h1", f"x{i}".encode()), ("empty", None)] if i % 3 == 0 else None
        sent.append({"topic": topic, "partition": i % 2, "key": key, "value": value, "headers": headers, "timestamp": base_ts + i})
    produce(broker.bootstrap, sent, **{"compression.type": codec})

    async def read() -> list[Any]:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster)
            tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
            consumer.assign(tps)
            assert consumer.assignment() == set(tps)
            consumer.seek(tps[0], 0)
            await consumer.seek_to_beginning([tps[1]])
            records = await poll_until(consumer, 300)
            positions = [await consumer.position(tp) for tp in tps]
            await consumer.close()
            return records + [positions]

    *records, positions = run(read())
    assert positions == [150, 150]
    by_partition: dict[int, list[Any]] = {0: [], 1: []}
    for r in records:
        by_partition[r.partition].append(r)
    for partition, got in by_partition.items():
        assert [r.offset for r in got] == list(range(150))
        expected = [s for s in sent if s["partition"] == partition]
        for record, want in zip(got, expected):
            assert record.topic == topic
            assert record.key == want["key"]
            assert record.value == want["value"]
            assert record.headers == (want["headers"] or [])
            assert record.timestamp == want["timestamp"]
            assert record.timestamp_type == 0


def test_seek_starts_mid_batch_and_position_follows(broker, unique_topic):
    topic = unique_topic()
    produce(broker.bootstrap, [{"topic": topic, "value": b"%d" % i} for i in range(50)])

    async def read() -> tuple[list[int], int]:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster, max_poll_records=7)
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 23)
            first = await consumer.poll(5)
            position = await consumer.position(tp)
            await consumer.close()
            return [r.offset for r in first], position

    offsets, position = run(read())
    assert offsets == list(range(23, 30))  # max_poll_records caps one poll
    assert position == 30


def test_offsets_for_times_and_end_offsets(broker, unique_topic):
    topic = unique_topic()
    produce(broker.bootstrap, [{"topic": topic, "value": b"v", "timestamp": 1_000_000 + 10 * i} for i in range(20)])

    async def query() -> Any:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster)
            tp = TopicPartition(topic, 0)
            result = await consumer.offsets_for_times({tp: 1_000_055})
            before = await consumer.offsets_for_times({tp: 0})
            after = await consumer.offsets_for_times({tp: 9_000_000})
            ends = await consumer.end_offsets([tp]), await consumer.beginning_offsets([tp])
            await consumer.close()
            return result[tp], before[tp], after[tp], ends

    at, before, after, (end, begin) = run(query())
    assert at == (6, 1_000_060)  # the first record at or after the time
    assert before == (0, 1_000_000)
    assert after is None
    assert end == {TopicPartition(topic, 0): 20} and begin == {TopicPartition(topic, 0): 0}


def test_out_of_range_position_resets_by_policy(broker, unique_topic):
    topic = unique_topic()
    produce(broker.bootstrap, [{"topic": topic, "value": b"%d" % i} for i in range(10)])
    tp = TopicPartition(topic, 0)

    async def earliest() -> list[int]:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster, auto_offset_reset="earliest")
            consumer.assign([tp])
            consumer.seek(tp, 1000)
            records = await poll_until(consumer, 10)
            await consumer.close()
            return [r.offset for r in records]

    async def latest() -> tuple[list[Any], int]:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster, auto_offset_reset="latest")
            consumer.assign([tp])
            consumer.seek(tp, 1000)
            records = await consumer.poll(2)
            position = await consumer.position(tp)
            await consumer.close()
            return records, position

    async def none() -> None:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster, auto_offset_reset="none")
            consumer.assign([tp])
            consumer.seek(tp, 1000)
            try:
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    await consumer.poll(0.5)
            finally:
                await consumer.close()

    assert run(earliest()) == list(range(10))
    records, position = run(latest())
    assert records == [] and position == 10
    from kcli.errors import KafkaError

    with pytest.raises(KafkaError, match="out of range"):
        run(none())


def test_no_committed_offset_and_reset_none_raises(broker, unique_topic):
    topic = unique_topic()
    produce(broker.bootstrap, [{"topic": topic, "value": b"x"}])

    async def attempt() -> None:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster, group_id=unique_topic("g"), auto_offset_reset="none")
            consumer.assign([TopicPartition(topic, 0)])
            try:
                await consumer.poll(2)
            finally:
                await consumer.close()

    with pytest.raises(NoOffsetForPartitionError):
        run(attempt())


# -- groups ----------------------------------------------------------------------------------------


class Member:
    """A kcli consumer polling in its own task; remembers what it was given and read."""

    def __init__(self, bootstrap: str, group: str, topics: list[str] | None, pattern: str | None = None, **settings: Any) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topics = topics
        self.pattern = pattern
        self.settings = settings
        self.records: list[Any] = []
        self.revoked: list[list[TopicPartition]] = []
        self.assigned: list[list[TopicPartition]] = []
        self.consumer: Consumer | None = None
        self.task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def _run(self) -> None:
        async with NetworkClient(self.bootstrap) as cluster:
            self.consumer = Consumer(cluster, group_id=self.group, auto_offset_reset="earliest", **FAST_GROUP, **self.settings)
            await self.consumer.subscribe(self.topics, self.pattern, on_revoke=self.revoked.append, on_assign=self.assigned.append)
            try:
                while not self._stop.is_set():
                    self.records += await self.consumer.poll(0.1)
            finally:
                await self.consumer.close()

    def start(self) -> Member:
        self.task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def stop(self) -> None:
        self._stop.set()
        assert self.task is not None
        await self.task

    def assignment(self) -> set[TopicPartition]:
        return self.consumer.assignment() if self.consumer is not None else set()


async def wait_for(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def partitions_of(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


def exactly_once(members: list[Member], expected: set[TopicPartition]) -> bool:
    owned = [tp for m in members for tp in m.assignment()]
    return len(owned) == len(set(owned)) and set(owned) == expected


def test_group_of_three_shares_six_partitions_and_a_leaver_hands_its_partitions_over(broker, unique_topic):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 6)
    produce(broker.bootstrap, [{"topic": topic, "partition": i % 6, "value": b"%d" % i} for i in range(600)])
    group = unique_topic("group")
    expected = partitions_of(topic, 6)

    async def scenario() -> None:
        members = [Member(broker.bootstrap, group, [topic]).start() for _ in range(3)]
        await wait_for(lambda: exactly_once(members, expected) and all(len(m.assignment()) == 2 for m in members), what="3 x 2 partitions")
        await wait_for(lambda: sum(len(m.records) for m in members) >= 600, what="all records")
        leaving = members[0]
        its_partitions = leaving.assignment()
        await leaving.stop()
        rest = members[1:]
        await wait_for(lambda: exactly_once(rest, expected), what="the leaver's partitions to move")
        assert its_partitions <= rest[0].assignment() | rest[1].assignment()
        for m in rest:
            await m.stop()
        seen = sorted((r.partition, r.offset) for m in members for r in m.records)
        # Each record was read, and no partition was read by two members at once from the same offset twice
        assert {(p, o) for p, o in seen} == {(p, o) for p in range(6) for o in range(100)}

    run(scenario(), timeout=90)


@pytest.mark.parametrize("first", ["librdkafka", "kcli"])
def test_mixed_group_with_librdkafka_range_members(broker, unique_topic, first):
    """Whoever joins first leads: librdkafka reads kcli's subscriptions and assigns kcli members,
    or kcli reads librdkafka's and assigns it."""
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 6)
    group = unique_topic("group")
    expected = partitions_of(topic, 6)
    ck_assignment: list[set[TopicPartition]] = [set()]
    stop = threading.Event()

    def librdkafka_member() -> None:
        consumer = CKConsumer({
            "bootstrap.servers": broker.bootstrap, "group.id": group, "partition.assignment.strategy": "range",
            "auto.offset.reset": "earliest", "heartbeat.interval.ms": 100, "session.timeout.ms": 6000,
        })
        consumer.subscribe([topic])
        try:
            while not stop.is_set():
                consumer.poll(0.1)
                ck_assignment[0] = {TopicPartition(p.topic, p.partition) for p in consumer.assignment()}
        finally:
            consumer.close()

    async def scenario() -> None:
        thread = threading.Thread(target=librdkafka_member, daemon=True)
        kcli_members: list[Member] = []
        if first == "librdkafka":
            thread.start()
            await wait_for(lambda: bool(ck_assignment[0]), what="librdkafka to join")
        else:
            kcli_members.append(Member(broker.bootstrap, group, [topic], partition_assignment_strategy=("range",)).start())
            await wait_for(lambda: kcli_members[0].assignment() == expected, what="kcli to join")
            thread.start()
        try:
            while len(kcli_members) < 2:
                kcli_members.append(Member(broker.bootstrap, group, [topic], partition_assignment_strategy=("range",)).start())

            def settled() -> bool:
                owned = [tp for m in kcli_members for tp in m.assignment()] + list(ck_assignment[0])
                return len(owned) == 6 and set(owned) == expected and all(m.assignment() for m in kcli_members) and bool(ck_assignment[0])

            await wait_for(settled, timeout=45, what="a 3-member mixed group")
            # Range over 3 members of 6 partitions: consecutive pairs.
            for owned in [m.assignment() for m in kcli_members] + [ck_assignment[0]]:
                assert len(owned) == 2
                a, b = sorted(tp.partition for tp in owned)
                assert b == a + 1 and a % 2 == 0
            for m in kcli_members:
                await m.stop()
        finally:
            stop.set()
            await asyncio.get_running_loop().run_in_executor(None, thread.join, 30)

    run(scenario(), timeout=90)


def test_cooperative_sticky_moves_only_what_it_must(broker, unique_topic):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 6)
    group = unique_topic("group")
    expected = partitions_of(topic, 6)
    strategy = {"partition_assignment_strategy": ("cooperative-sticky",)}

    async def scenario() -> None:
        first = Member(broker.bootstrap, group, [topic], **strategy).start()
        await wait_for(lambda: first.assignment() == expected, what="the first member to own everything")
        second = Member(broker.bootstrap, group, [topic], **strategy).start()
        await wait_for(lambda: exactly_once([first, second], expected) and len(second.assignment()) == 3, what="a 3/3 split")
        # The first member kept three partitions throughout: it revoked only the three that moved.
        assert all(len(revoked) < 6 for revoked in first.revoked)
        moved = {tp for revoked in first.revoked for tp in revoked}
        assert moved == second.assignment()
        assert first.assignment() == expected - moved
        await second.stop()
        await wait_for(lambda: first.assignment() == expected, what="the partitions to come back")
        await first.stop()

    run(scenario(), timeout=90)


def test_commits_are_visible_to_librdkafka_and_resume_a_new_member(broker, unique_topic):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, [{"topic": topic, "partition": i % 2, "value": b"%d" % i} for i in range(40)])
    group = unique_topic("group")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]

    async def consume_and_commit() -> dict[TopicPartition, int | None]:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **FAST_GROUP)
            await consumer.subscribe([topic])
            records = await poll_until(consumer, 40)
            assert len(records) == 40
            await consumer.commit({tps[0]: 15, tps[1]: 20})
            committed = await consumer.committed(tps)
            await consumer.close()
            return committed

    assert run(consume_and_commit()) == {tps[0]: 15, tps[1]: 20}
    ck = CKConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        committed = ck.committed([CKTopicPartition(topic, 0), CKTopicPartition(topic, 1)], timeout=10)
    finally:
        ck.close()
    assert sorted((c.partition, c.offset) for c in committed) == [(0, 15), (1, 20)]

    async def resume() -> list[tuple[int, int]]:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster, group_id=group, auto_offset_reset="earliest", **FAST_GROUP)
            await consumer.subscribe([topic])
            records = await poll_until(consumer, 5)
            records += await consumer.poll(0.5)
            await consumer.close()
            return sorted((r.partition, r.offset) for r in records)

    # Partition 1 was committed at its end; partition 0 resumes at 15.
    assert run(resume()) == [(0, 15), (0, 16), (0, 17), (0, 18), (0, 19)]


def test_static_member_keeps_its_partitions_through_a_restart(broker, unique_topic):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 4)
    group = unique_topic("group")

    async def scenario() -> None:
        a = Member(broker.bootstrap, group, [topic], group_instance_id="instance-a", partition_assignment_strategy=("range",)).start()
        b = Member(broker.bootstrap, group, [topic], group_instance_id="instance-b", partition_assignment_strategy=("range",)).start()
        await wait_for(lambda: exactly_once([a, b], partitions_of(topic, 4)) and len(a.assignment()) == 2, what="a 2/2 split")
        before = b.assignment()
        revocations = len(a.revoked)  # a may have revoked once, if b joined after a's first generation
        await b.stop()  # a static member sends no LeaveGroup: no rebalance, a keeps its partitions
        again = Member(broker.bootstrap, group, [topic], group_instance_id="instance-b", partition_assignment_strategy=("range",)).start()
        await wait_for(lambda: again.assignment() == before, what="the restarted static member to get its partitions back")
        assert len(a.revoked) == revocations
        await again.stop()
        await a.stop()

    run(scenario(), timeout=90)


def test_subscribing_before_the_topic_exists(broker, unique_topic):
    topic = unique_topic()  # the test broker auto-creates topics

    async def scenario() -> list[bytes]:
        member = Member(broker.bootstrap, unique_topic("group"), [topic]).start()
        await wait_for(lambda: member.assignment() == partitions_of(topic, 1), what="the auto-created topic")
        await asyncio.get_running_loop().run_in_executor(None, produce, broker.bootstrap, [{"topic": topic, "value": b"late"}])
        await wait_for(lambda: bool(member.records), what="the record")
        await member.stop()
        return [r.value for r in member.records]

    assert run(scenario(), timeout=60) == [b"late"]


def test_a_second_member_with_the_same_instance_id_fences_the_first(broker, unique_topic):
    from kcli.errors import ErrorCode, KafkaError

    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 2)
    group = unique_topic("group")

    async def scenario() -> None:
        first = Member(broker.bootstrap, group, [topic], group_instance_id="same").start()
        await wait_for(lambda: first.assignment() == partitions_of(topic, 2), what="the first member")
        second = Member(broker.bootstrap, group, [topic], group_instance_id="same").start()
        await wait_for(lambda: first.task.done(), what="the first member to be fenced")
        with pytest.raises(KafkaError) as raised:
            first.task.result()
        assert raised.value.error_code == ErrorCode.FENCED_INSTANCE_ID
        await wait_for(lambda: second.assignment() == partitions_of(topic, 2), what="the second member")
        await second.stop()

    run(scenario(), timeout=60)


def test_pattern_subscription_finds_matching_topics(broker, unique_topic):
    prefix = unique_topic("pat")
    names = [f"{prefix}-a", f"{prefix}-b"]
    for name in names:
        produce(broker.bootstrap, [{"topic": name, "value": name.encode()}])
    produce(broker.bootstrap, [{"topic": f"other-{prefix}", "value": b"no"}])

    async def read() -> set[bytes]:
        async with NetworkClient(broker.bootstrap) as cluster:
            consumer = Consumer(cluster, group_id=prefix, auto_offset_reset="earliest", **FAST_GROUP)
            await consumer.subscribe(pattern=f"{prefix}-.*")
            records = await poll_until(consumer, 2)
            await consumer.close()
            return {r.value for r in records}

    assert run(read()) == {n.encode() for n in names}


def test_new_partitions_and_new_matching_topics_are_picked_up(broker, unique_topic):
    from confluent_kafka.admin import NewPartitions

    prefix = unique_topic("grow")
    first = f"{prefix}-a"
    create_topic(broker.bootstrap, first, 2)
    group = unique_topic("group")

    async def scenario() -> None:
        member = Member(broker.bootstrap, group, None, f"{prefix}-.*", metadata_max_age_ms=300).start()
        await wait_for(lambda: member.assignment() == partitions_of(first, 2), what="the first topic")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_partitions([NewPartitions(first, 3)])[first].result(timeout=30)
        await wait_for(lambda: member.assignment() == partitions_of(first, 3), what="the added partition")
        create_topic(broker.bootstrap, f"{prefix}-b", 1)
        await wait_for(lambda: member.assignment() == partitions_of(first, 3) | partitions_of(f"{prefix}-b", 1), what="the new topic")
        await member.stop()

    run(scenario(), timeout=60)


# -- the librdkafka mock cluster -------------------------------------------------------------------


def test_consume_from_the_mock_cluster(mock_cluster, unique_topic):
    topic = unique_topic()
    produce(mock_cluster.bootstrap, [{"topic": topic, "partition": i % 4, "key": b"k%d" % i, "value": b"v%d" % i} for i in range(80)])

    async def read() -> list[Any]:
        async with NetworkClient(mock_cluster.bootstrap) as cluster:
            consumer = Consumer(cluster, auto_offset_reset="earliest")
            consumer.assign([TopicPartition(topic, p) for p in range(4)])
            records = await poll_until(consumer, 80)
            await consumer.close()
            return records

    records = run(read())
    assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(80))
    assert all(r.key == b"k" + r.value[1:] for r in records)
    for p in range(4):
        assert [r.offset for r in records if r.partition == p] == list(range(20))
