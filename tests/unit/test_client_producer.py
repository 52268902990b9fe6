"""The producer against a scripted broker: batches, offsets, retries and their order, idempotent
sequences, splitting, timeouts, memory, configuration.

The scripted broker replaces the producer's request writer: it decodes each Produce request with
kio's reader (so the hand-written request encoding is checked on every call), reads the record
batches with kcli's storage reader, and answers what the test script says. Tests against real
brokers are in tests/tools/test_console_producer.py and test_producer_perf_test.py."""

from __future__ import annotations

import asyncio
import dataclasses
import types
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kcli.client import record_accumulator
from kcli.client.metadata import Metadata, Node, PartitionInfo, TopicInfo
from kcli.client.network_client import NetworkClient
from kcli.client.partitioner import partition_for_key
from kcli.client.producer import Producer
from kcli.client.producer_config import ProducerConfig
from kcli.client.record_accumulator import BufferFull, RecordMetadata
from kcli.client.sender import encode_produce_request
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol import messages
from kcli.storage import records
from kcli.storage.compression import CompressionType
from kcli.storage.records import NewRecord, RecordBatch, encode_record_fields

pytestmark = pytest.mark.timeout(60)


# -- the scripted broker ------------------------------------------------------------------------------


@dataclasses.dataclass
class Sent:
    """One batch as the broker received it."""

    topic: str
    partition: int
    batch: RecordBatch
    attempt: int


class ScriptedBroker:
    """Answers Produce requests: ``script(sent) -> error code or None`` decides each partition's
    answer; accepted batches get consecutive offsets per partition."""

    def __init__(self, partitions: int = 1, topic: str = "t", version: int = 9) -> None:
        self.version = version
        self.metadata = Metadata(brokers={0: Node(0, "fake", 1)})
        self.add_topic(topic, partitions)
        self.received: list[Sent] = []
        self.log: dict[tuple[str, int], list[RecordBatch]] = {}
        self.script: Callable[[Sent], ErrorCode | None] = lambda sent: None
        self.hold = False  # leave requests unanswered
        self.held: list[tuple[asyncio.Future[Any], Any]] = []
        self.refreshes = 0
        self.producer_ids = iter(range(1000, 2000))
        self.requests: list[Any] = []
        self.request_nodes: list[int] = []
        self.duplicates_by_sequence: dict[tuple[str, int, int, int], int] = {}

    def add_topic(self, name: str, partitions: int, leader: int = 0, leaders: list[int] | None = None) -> None:
        leaders = leaders or [leader] * partitions
        self.metadata.topics[name] = TopicInfo(
            name, uuid.uuid4(), False, {p: PartitionInfo(p, leaders[p], 0, (leaders[p],), (leaders[p],), ()) for p in range(partitions)}
        )

    def write(self, connection: Any, api_key: int, version: int, body: list[bytes], *, expect_response: bool = True) -> asyncio.Future[Any] | None:
        assert api_key == 0 and version == self.version
        request = messages.decode_request(0, version, b"".join(body), 0)
        self.requests.append(request)
        self.request_nodes.append(connection.node)
        results = []
        for topic in request.topic_data:
            answers = []
            for data in topic.partition_data:
                batch = RecordBatch(bytes(data.records))
                batch.validate()
                attempts = sum(1 for s in self.received if s.topic == topic.name and s.partition == data.index and s.batch.base_sequence == batch.base_sequence and batch.base_sequence >= 0)
                sent = Sent(topic.name, int(data.index), batch, attempts + 1)
                self.received.append(sent)
                code = self.script(sent)
                answer = {"index": data.index, "base_offset": -1, "log_append_time": -1, "log_start_offset": 0}
                if code is None:
                    log = self.log.setdefault((topic.name, int(data.index)), [])
                    answer["base_offset"] = sum(b.record_count for b in log)
                    log.append(batch)
                else:
                    answer["error_code"] = code
                    answer["error_message"] = f"scripted {code.name}"
                answers.append(answer)
            results.append({"name": topic.name, "partition_responses": answers})
        if not expect_response:
            return None
        future = asyncio.get_running_loop().create_future()
        response = messages.build_response(0, version, {"responses": results})
        if self.hold:
            self.held.append((future, response))
        else:
            asyncio.get_running_loop().call_soon(_answer, future, response)
        return future

    def release(self) -> None:
        """Answer the held requests, in order, and stop holding."""
        self.hold = False
        held, self.held = self.held, []
        for future, response in held:
            _answer(future, response)

    def values(self, topic: str = "t", partition: int = 0) -> list[bytes | None]:
        return [r.value for b in self.log.get((topic, partition), []) for r in b.records()]


def _answer(future: asyncio.Future[Any], response: Any) -> None:
    if not future.done():
        future.set_result(response)


class FakeConnection:
    address = "fake:1"
    closed = False

    def __init__(self, broker: ScriptedBroker, node: int = 0) -> None:
        self.broker = broker
        self.node = node

    def version_for(self, api_key: int, *, at_least: int = 0) -> int:
        return self.broker.version

    def write(self, api_key: int, version: int, body: list[bytes], *, expect_response: bool = True) -> asyncio.Future[Any] | None:
        return self.broker.write(self, api_key, version, body, expect_response=expect_response)


class FakeCluster(NetworkClient):
    client_id = "test-producer"

    def __init__(self, broker: ScriptedBroker) -> None:  # no connections: the scripted broker answers
        self.broker = broker
        self.metadata = broker.metadata
        self.connections = {node: FakeConnection(broker, node) for node in (0, 1)}

    async def any_connection(self) -> FakeConnection:
        return self.connections[0]

    async def connection(self, node_id: int) -> FakeConnection:
        return self.connections[node_id]

    async def refresh(self, topics=None, *, allow_auto_create: bool = False) -> Metadata:
        self.broker.refreshes += 1
        return self.metadata

    async def call(self, node_id, api_key, fields, **kwargs):
        assert api_key == 22 and fields["transactional_id"] is None
        return types.SimpleNamespace(error_code=0, producer_id=next(self.broker.producer_ids), producer_epoch=0)

    async def retrying(self, attempt, **kwargs):
        return await attempt()

    async def close(self) -> None:
        pass


@pytest.fixture
def broker() -> ScriptedBroker:
    return ScriptedBroker()


def make_producer(broker: ScriptedBroker, **props: str) -> Producer:
    config = ProducerConfig.from_properties({"retry.backoff.ms": "1", "retry.backoff.max.ms": "5", **props}, warn=pytest.fail)
    return Producer(FakeCluster(broker), config)


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


# -- records and requests -----------------------------------------------------------------------------


RECORD_CASES = [
    (0, 0, None, b"v", ()),
    (5, 3, b"key", b"value", ()),
    (0, 1, b"", b"", ()),
    (-3, 2, None, None, ()),
    (70000, 20000, b"k" * 9000, b"v" * 20000, (("h1", b"x"), ("h2", None), ("", b""))),
    (1, 0, None, b"x" * 100, (("\u00e9t\u00e9", b"\xff\x00"),)),
]


@pytest.mark.parametrize(("ts_delta", "offset_delta", "key", "value", "headers"), RECORD_CASES)
def test_record_encoding_matches_the_storage_writer(ts_delta, offset_delta, key, value, headers):
    expected = records.encode_record(NewRecord(key, value, 1000 + ts_delta, headers), offset_delta, 1000)
    assert encode_record_fields(ts_delta, offset_delta, key, value, headers) == expected


@pytest.mark.parametrize("codec", list(CompressionType))
def test_batches_are_byte_identical_to_the_storage_writer(broker: ScriptedBroker, codec: CompressionType):
    """The send path's fast encoder and header packing give exactly ``records.build_batch``."""
    sends = [
        (b"a" * 10, None, ()), (b"b" * 100, None, ()), (b"c", b"k1", ()), (None, None, ()),
        (b"d" * 9000, None, ()), (b"e", None, (("h", b"v"), ("n", None))), (b"", b"", ()),
    ]

    async def go():
        producer = make_producer(broker, **{"compression.type": codec.label, "linger.ms": "50", "batch.size": "1000000"})
        async with producer:
            futures = [await producer.send("t", value, key, headers, partition=0, timestamp=1_700_000_000_000 + i * 7) for i, (value, key, headers) in enumerate(sends)]
            await producer.flush()
            return producer.producer_id, [f.result() for f in futures]

    producer_id, results = run(go())
    assert len(broker.received) == 1
    got = broker.received[0].batch
    expected = records.build_batch(
        [NewRecord(key, value, 1_700_000_000_000 + i * 7, headers) for i, (value, key, headers) in enumerate(sends)],
        compression=codec, producer_id=producer_id, producer_epoch=0, base_sequence=0,
    )
    assert bytes(got.buffer) == expected
    assert [r.offset for r in results] == list(range(len(sends)))
    assert [r.timestamp for r in results] == [1_700_000_000_000 + i * 7 for i in range(len(sends))]


@pytest.mark.parametrize("version", [3, 5, 7, 8, 9])
def test_produce_request_encoding_reads_back_with_kio(version: int):
    state = record_accumulator.TopicQueues("orders")
    other = record_accumulator.TopicQueues("other-topic")
    batches = []
    for topic, partition, payload in ((state, 0, b"first"), (state, 3, b"second" * 100), (other, 1, b"third")):
        batch = record_accumulator.ProducerBatch(record_accumulator.PartitionQueue(topic, partition), 0, 0, None, 0.0)  # type: ignore[arg-type]
        batch.payload = payload
        batches.append(batch)
    body = b"".join(encode_produce_request(version, -1, 1500, batches))
    request = messages.decode_request(0, version, body, 0)
    assert request.transactional_id is None
    assert request.acks == -1
    assert request.timeout.total_seconds() == 1.5
    got = {(t.name, int(p.index)): bytes(p.records) for t in request.topic_data for p in t.partition_data}
    assert got == {("orders", 0): b"first", ("orders", 3): b"second" * 100, ("other-topic", 1): b"third"}


# -- sending -------------------------------------------------------------------------------------------


def test_offsets_metadata_and_order(broker: ScriptedBroker):
    async def go():
        async with make_producer(broker, **{"batch.size": "200"}) as producer:
            futures = [await producer.send("t", b"value-%03d" % i) for i in range(100)]
            first = await futures[0]
            await producer.flush()
            return first, [f.result() for f in futures]

    first, results = run(go())
    assert isinstance(first, RecordMetadata)
    assert [r.offset for r in results] == list(range(100))
    assert {(r.topic, r.partition) for r in results} == {("t", 0)}
    assert broker.values() == [b"value-%03d" % i for i in range(100)]
    assert len(broker.received) > 10  # batch.size=200 makes many batches
    assert all(s.batch.size_in_bytes <= 200 or s.batch.record_count == 1 for s in broker.received)


def test_idempotent_by_default_with_consecutive_sequences(broker: ScriptedBroker):
    async def go():
        async with make_producer(broker, **{"batch.size": "300"}) as producer:
            for i in range(50):
                await producer.send("t", b"x" * 20)
            await producer.flush()
            return producer.idempotent, producer.producer_id

    idempotent, producer_id = run(go())
    assert idempotent and producer_id == 1000
    expected = 0
    for sent in broker.received:
        assert sent.batch.producer_id == 1000 and sent.batch.producer_epoch == 0
        assert sent.batch.base_sequence == expected
        expected += sent.batch.record_count
    assert expected == 50


@pytest.mark.parametrize(("props", "idempotent"), [({"acks": "1"}, False), ({"retries": "0"}, False), ({"max.in.flight.requests.per.connection": "6"}, False), ({}, True)])
def test_idempotence_is_dropped_quietly_when_its_settings_do_not_allow_it(props, idempotent):
    assert ProducerConfig.from_properties(props).enable_idempotence is idempotent


def test_retriable_error_is_retried_with_the_same_bytes_after_a_metadata_refresh(broker: ScriptedBroker):
    def script(sent: Sent) -> ErrorCode | None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if sent.attempt == 1 else None

    broker.script = script

    async def go():
        async with make_producer(broker) as producer:
            future = await producer.send("t", b"hello")
            return await future

    result = run(go())
    assert result.offset == 0
    assert len(broker.received) == 2
    assert bytes(broker.received[0].batch.buffer) == bytes(broker.received[1].batch.buffer)
    assert broker.refreshes >= 1
    assert broker.values() == [b"hello"]


def test_a_failed_batch_and_the_ones_behind_it_are_retried_in_order(broker: ScriptedBroker):
    """Idempotent, five requests in flight: the first batch fails once; the broker then answers
    the later ones OUT_OF_ORDER_SEQUENCE_NUMBER until it has it, as Kafka's broker does."""
    expected = {"sequence": 0}

    def script(sent: Sent) -> ErrorCode | None:
        if sent.batch.base_sequence == 0 and sent.attempt == 1:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        if sent.batch.base_sequence != expected["sequence"]:
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        expected["sequence"] += sent.batch.record_count
        return None

    broker.script = script
    broker.hold = True

    async def go():
        async with make_producer(broker, **{"batch.size": "120"}) as producer:
            futures = [await producer.send("t", b"record-%02d" % i) for i in range(30)]
            for _ in range(200):
                if len(broker.held) >= 5:
                    break
                await asyncio.sleep(0.005)
            in_flight = len(broker.held)
            broker.release()
            await producer.flush()
            return in_flight, [f.result() for f in futures]

    in_flight, results = run(go())
    assert in_flight == 5  # max.in.flight.requests.per.connection
    assert broker.values() == [b"record-%02d" % i for i in range(30)]
    assert [r.offset for r in results] == list(range(30))
    first_batch = [s for s in broker.received if s.batch.base_sequence == 0]
    assert len(first_batch) == 2 and bytes(first_batch[0].batch.buffer) == bytes(first_batch[1].batch.buffer)
    again = [s for s in broker.received if s.batch.base_sequence > 0 and s.attempt == 2]
    assert len(again) == 4  # the four sent behind it came back and went again


def test_a_rejected_batch_fails_its_records_and_the_producer_goes_on_with_a_new_id(broker: ScriptedBroker):
    broker.script = lambda sent: ErrorCode.INVALID_RECORD if sent.batch.records()[0].value == b"bad" else None

    async def go():
        async with make_producer(broker) as producer:
            good = await (await producer.send("t", b"good"))
            bad = await producer.send("t", b"bad")
            with pytest.raises(KafkaError) as failure:
                await bad
            later = await (await producer.send("t", b"later"))
            return good, failure.value, later, bad.exception()

    good, error, later, exception = run(go())
    assert error.error_code == ErrorCode.INVALID_RECORD and str(error) == "scripted INVALID_RECORD"
    assert exception is error
    assert (good.offset, later.offset) == (0, 1)
    last = broker.received[-1].batch
    assert (last.producer_id, last.base_sequence) == (1001, 0)  # numbered afresh under a new id


def test_unanswered_requests_time_out_and_expire_at_the_delivery_timeout(broker: ScriptedBroker):
    broker.hold = True

    async def go():
        async with make_producer(broker, **{"request.timeout.ms": "50", "delivery.timeout.ms": "200"}) as producer:
            future = await producer.send("t", b"lost")
            with pytest.raises(KafkaError) as failure:
                await future
            broker.hold = False
            return failure.value

    error = run(go())
    assert error.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert len(broker.received) >= 2  # retried while delivery.timeout.ms had not passed


def test_a_batch_too_large_for_the_broker_is_split(broker: ScriptedBroker):
    broker.script = lambda sent: ErrorCode.MESSAGE_TOO_LARGE if sent.batch.record_count > 3 else None

    async def go():
        async with make_producer(broker, **{"linger.ms": "20", "batch.size": "100000"}) as producer:
            futures = [await producer.send("t", b"r%02d" % i, key=b"k", partition=0, headers=[("i", b"%d" % i)]) for i in range(13)]
            await producer.flush()
            return [f.result() for f in futures]

    results = run(go())
    assert broker.values() == [b"r%02d" % i for i in range(13)]
    assert [r.offset for r in results] == list(range(13))
    accepted = broker.log[("t", 0)]
    assert all(b.record_count <= 3 for b in accepted)
    sequence = 0
    for batch in accepted:  # the halves keep the sequence range of the batch they came from
        assert batch.base_sequence == sequence
        sequence += batch.record_count
    assert [dict(r.headers)["i"] for b in accepted for r in b.records()] == [b"%d" % i for i in range(13)]


def test_acks_0_expects_no_answer(broker: ScriptedBroker):
    async def go():
        async with make_producer(broker, acks="0") as producer:
            return await (await producer.send("t", b"fire")), producer.idempotent

    result, idempotent = run(go())
    assert result.offset == -1 and not idempotent
    assert broker.requests[0].acks == 0
    assert broker.received[0].batch.producer_id == -1


def test_a_record_larger_than_max_request_size_fails_alone(broker: ScriptedBroker):
    async def go():
        async with make_producer(broker, **{"max.request.size": "1000"}) as producer:
            big = await producer.send("t", b"x" * 2000)
            small = await producer.send("t", b"y")
            with pytest.raises(KafkaError) as failure:
                await big
            return failure.value, await small

    error, small = run(go())
    assert error.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert str(error) == "The message is 2070 bytes when serialized which is larger than 1000, which is the value of the max.request.size configuration."
    assert small.offset == 0
    assert broker.values() == [b"y"]


def test_keys_choose_partitions_with_murmur2_and_null_keys_stick(broker: ScriptedBroker):
    broker.add_topic("four", 4)

    async def go():
        async with make_producer(broker, **{"batch.size": "200"}) as producer:
            keyed = [await producer.send("four", b"v", key=b"key-%d" % i) for i in range(40)]
            unkeyed = [await producer.send("four", b"n" * 30) for _ in range(60)]
            await producer.flush()
            return [f.result().partition for f in keyed], [f.result().partition for f in unkeyed]

    keyed, unkeyed = run(go())
    assert keyed == [partition_for_key(b"key-%d" % i, 4) for i in range(40)]
    # Null keys: runs of one partition as long as a full batch (4 records of 30 bytes fit in 200).
    runs = [len(list(group)) for _, group in __import__("itertools").groupby(unkeyed)]
    assert all(run >= 3 for run in runs[:-1]) and len(set(unkeyed)) > 1


def test_round_robin_partitioner(broker: ScriptedBroker):
    broker.add_topic("rr", 3)

    async def go():
        async with make_producer(broker, **{"partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"}) as producer:
            futures = [await producer.send("rr", b"v", key=b"same") for _ in range(9)]
            await producer.flush()
            return [f.result().partition for f in futures]

    assert run(go()) == [0, 1, 2] * 3


def test_send_waits_for_buffer_memory_up_to_max_block_ms(broker: ScriptedBroker):
    broker.hold = True

    async def go():
        async with make_producer(broker, **{"buffer.memory": "3000", "max.block.ms": "100", "batch.size": "1000"}) as producer:
            with pytest.raises(KafkaError) as failure:
                for _ in range(100):
                    await producer.send("t", b"z" * 200)
            broker.release()
            await producer.flush()
            after = await (await producer.send("t", b"after"))
            return failure.value, after

    error, after = run(go())
    assert str(error) == "Failed to allocate memory within the configured max blocking time 100 ms."
    assert after.offset > 0


def test_unknown_topic_and_partition_wait_for_metadata_up_to_max_block_ms(broker: ScriptedBroker):
    async def go():
        async with make_producer(broker, **{"max.block.ms": "100"}) as producer:
            with pytest.raises(KafkaError) as topic:
                await producer.send("nope", b"v")
            with pytest.raises(KafkaError) as partition:
                await producer.send("t", b"v", partition=5)
            return topic.value, partition.value

    topic, partition = run(go())
    assert str(topic) == "Topic nope not present in metadata after 100 ms."
    assert str(partition) == "Partition 5 of topic t with partition count 1 is not present in metadata after 100 ms."
    assert broker.refreshes >= 2


def test_callbacks_get_the_future_and_their_arguments(broker: ScriptedBroker):
    seen = []

    async def go():
        async with make_producer(broker) as producer:
            future = await producer.send("t", b"v")
            future.add_done_callback(lambda f, tag: seen.append((tag, f.result().offset)), "first")
            await future
            future.add_done_callback(lambda f, tag: seen.append((tag, f.done())), "late")  # already done: now
        with pytest.raises(KcliError, match="closed"):
            await producer.send("t", b"too late")

    run(go())
    assert seen == [("first", 0), ("late", True)]


def test_one_request_per_leader_carries_all_its_ready_partitions(broker: ScriptedBroker):
    broker.add_topic("spread", 4, leaders=[0, 1, 0, 1])

    async def go():
        async with make_producer(broker, **{"linger.ms": "30"}) as producer:
            futures = [await producer.send("spread", b"p%d" % p, partition=p) for p in (0, 1, 2, 3, 0, 2)]
            await producer.flush()
            return [f.result() for f in futures]

    results = run(go())
    assert [r.partition for r in results] == [0, 1, 2, 3, 0, 2]
    assert sorted(broker.request_nodes) == [0, 1]  # one request to each broker
    for node, request in zip(broker.request_nodes, broker.requests):
        partitions = sorted(int(p.index) for t in request.topic_data for p in t.partition_data)
        assert partitions == ([0, 2] if node == 0 else [1, 3])
    assert broker.values("spread", 0) == [b"p0", b"p0"] and broker.values("spread", 3) == [b"p3"]


def test_a_batch_left_out_of_a_full_request_keeps_every_record_appended_later(broker: ScriptedBroker):
    """The request for p0 has no room for p1's batch, which stays open and gets one more record
    before it is sent: what goes on the wire must carry both of its records."""
    broker.add_topic("two", 2)
    broker.hold = True
    props = {"linger.ms": "10", "max.request.size": "3000", "max.in.flight.requests.per.connection": "1"}

    async def go():
        async with make_producer(broker, **props) as producer:
            futures = [await producer.send("two", b"a" * 1500, partition=0), await producer.send("two", b"b" * 1500, partition=1)]
            await asyncio.sleep(0.1)  # p0 is on the wire; p1 waits for the one request in flight
            futures.append(await producer.send("two", b"c", partition=1))
            broker.release()
            await producer.flush()
            return [(f.result().partition, f.result().offset) for f in futures]

    assert run(go()) == [(0, 0), (1, 0), (1, 1)]
    assert broker.values("two", 1) == [b"b" * 1500, b"c"]
    assert [b.base_sequence for b in broker.log[("two", 1)]] == [0]


def test_send_nowait_needs_known_metadata_and_free_memory(broker: ScriptedBroker):
    broker.hold = True

    async def go():
        async with make_producer(broker, **{"buffer.memory": "2000", "batch.size": "500"}) as producer:
            with pytest.raises(KcliError, match="no metadata yet"):
                producer.send_nowait("t", b"v")
            assert await producer.wait_for_topic("t") == 1
            futures = []
            with pytest.raises(BufferFull):
                for _ in range(100):
                    futures.append(producer.send_nowait("t", b"x" * 100))
                    if producer.needs_yield:
                        await asyncio.sleep(0)
            broker.release()
            await producer.flush()
            return [f.result().offset for f in futures]

    offsets = run(go())
    assert offsets == list(range(len(offsets))) and 10 < len(offsets) < 100


def test_record_futures_work_with_gather_and_wait(broker: ScriptedBroker):
    broker.script = lambda sent: ErrorCode.INVALID_RECORD if any(r.value == b"bad" for r in sent.batch.records()) else None

    async def go():
        async with make_producer(broker) as producer:
            early = [await producer.send("t", b"v%d" % i) for i in range(3)]
            await producer.flush()  # these are answered before gather sees them
            late = [await producer.send("t", b"w%d" % i) for i in range(3)]
            gathered = await asyncio.gather(*early, *late)
            bad = await producer.send("t", b"bad")
            with_errors = await asyncio.gather(early[0], bad, return_exceptions=True)
            done, pending = await asyncio.wait([await producer.send("t", b"x")])
            return gathered, with_errors, done, pending

    gathered, with_errors, done, pending = run(go())
    assert [m.offset for m in gathered] == [0, 1, 2, 3, 4, 5]
    assert with_errors[0].offset == 0 and isinstance(with_errors[1], KafkaError)
    assert len(done) == 1 and not pending and next(iter(done)).result().offset == 6


# -- configuration -----------------------------------------------------------------------------------


def test_unknown_properties_are_warned_about_as_kafka_does():
    warnings: list[str] = []
    config = ProducerConfig.from_properties({"linger.ms": "7", "no.such.thing": "1", "key.serializer": "x"}, warn=warnings.append)
    assert config.linger_ms == 7
    assert warnings == ["The configuration 'no.such.thing' was supplied but isn't a known config."]


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"acks": "2"}, "Invalid value 2 for configuration acks: String must be one of: all, -1, 0, 1"),
        ({"batch.size": "big"}, "Invalid value big for configuration batch.size: Not a number of type INT"),
        ({"linger.ms": "-1"}, "Invalid value -1 for configuration linger.ms: Value must be at least 0"),
        ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one of: none, gzip, snappy, lz4, zstd"),
        ({"enable.idempotence": "maybe"}, "Invalid value maybe for configuration enable.idempotence: Expected value to be either true or false"),
        ({"enable.idempotence": "true", "acks": "1"}, "Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence."),
        ({"enable.idempotence": "true", "retries": "0"}, "Must set retries to non-zero when using the idempotent producer."),
        ({"enable.idempotence": "true", "max.in.flight.requests.per.connection": "6"}, "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer."),
        ({"delivery.timeout.ms": "1000", "request.timeout.ms": "2000"}, "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"),
        ({"partitioner.class": "com.example.Mine"}, "Invalid value com.example.Mine for configuration partitioner.class: Class com.example.Mine could not be found."),
        ({"transactional.id": "tx", "enable.idempotence": "false"}, "Cannot set a transactional.id without also enabling idempotence."),
        ({"transactional.id": "tx", "acks": "1"}, "Cannot set a transactional.id without also enabling idempotence."),
        ({"transaction.timeout.ms": "x"}, "Invalid value x for configuration transaction.timeout.ms: Not a number of type INT"),
        ({"security.protocol": "SSL", "ssl.keystore.pasword": "x"}, "Unknown security config 'ssl.keystore.pasword' in the client configuration (a misspelt key?)"),
    ],
)
def test_bad_settings_are_refused_with_kafkas_words(props, message):
    with pytest.raises(KcliError) as failure:
        ProducerConfig.from_properties(props)
    assert str(failure.value) == message


def test_an_implicit_delivery_timeout_grows_to_linger_plus_request_timeout():
    config = ProducerConfig.from_properties({"linger.ms": "1000", "request.timeout.ms": "150000"})
    assert config.delivery_timeout_ms == 151000


def test_from_properties_needs_a_bootstrap_list():
    with pytest.raises(KcliError, match="bootstrap.servers"):
        Producer.from_properties(None, {})
