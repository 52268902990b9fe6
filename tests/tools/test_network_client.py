"""kcli's client core against real brokers: version negotiation, metadata, coordinators, and the
errors a user sees when a broker cannot be reached. Run against kcli's broker and against the
librdkafka mock cluster (an independent Kafka implementation)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

import pytest

from kcli.client.connection import CLIENT_MAX_VERSIONS, BrokerConnection, BrokerUnreachable
from kcli.client.network_client import NetworkClient, parse_bootstrap
from kcli.errors import ErrorCode, KafkaError, UsageError

pytestmark = pytest.mark.timeout(60)


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


@pytest.fixture(params=["kcli", "mock"])
def bootstrap(request: pytest.FixtureRequest) -> str:
    fixture = "broker" if request.param == "kcli" else "mock_cluster"
    return request.getfixturevalue(fixture).bootstrap


def test_negotiates_the_highest_common_version(bootstrap: str):
    async def go():
        connection = await BrokerConnection.open(*parse_bootstrap(bootstrap)[0])
        try:
            for api_key, ours in CLIENT_MAX_VERSIONS.items():
                if api_key not in connection.versions:
                    continue
                low, high = connection.versions[api_key]
                assert connection.version_for(api_key) == min(ours, high)
            return connection.versions
        finally:
            await connection.close()

    versions = run(go())
    assert versions[3][1] >= 9  # every broker here serves flexible Metadata


def test_metadata_of_an_auto_created_topic(bootstrap: str, unique_topic):
    topic = unique_topic()

    async def go():
        async with NetworkClient(bootstrap) as cluster:
            await cluster.refresh([topic], allow_auto_create=True)
            for _ in range(50):
                info = cluster.metadata.topics.get(topic)
                if info is not None and not info.error and info.partitions:
                    break
                await asyncio.sleep(0.1)
                await cluster.refresh([topic])
            info = await cluster.topic(topic)
            leader = await cluster.leader(topic, 0)
            return cluster.metadata, info, leader

    metadata, info, leader = run(go())
    assert leader in metadata.brokers
    assert info.name == topic and not info.internal
    assert all(p.leader == leader for p in info.partitions.values())
    assert metadata.cluster_id


def test_unknown_topic_is_a_kafka_error(broker, unique_topic):
    async def go():
        async with NetworkClient(broker.bootstrap) as cluster:
            await cluster.topic(unique_topic("missing"))

    with pytest.raises(KafkaError) as error:
        run(go())
    assert error.value.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_group_coordinator_is_a_known_broker(bootstrap: str):
    async def go():
        async with NetworkClient(bootstrap) as cluster:
            node = None
            for _ in range(50):  # the offsets topic may still be loading
                try:
                    node = await cluster.coordinator("client-core-group")
                    break
                except KafkaError as exc:
                    assert exc.error_code.retriable
                    await asyncio.sleep(0.2)
            await cluster.refresh()
            return node, cluster.metadata.brokers

    node, brokers = run(go())
    assert node in brokers


def test_pipelined_requests_are_answered_in_order_of_asking(broker):
    async def go():
        async with NetworkClient(broker.bootstrap) as cluster:
            connection = await cluster.any_connection()
            answers = await asyncio.gather(*(connection.call(18, {}) for _ in range(50)))
            return [len(a.api_keys) for a in answers]

    counts = run(go())
    assert len(counts) == 50 and len(set(counts)) == 1 and counts[0] > 10


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_bootstrap_names_every_address():
    ports = [_closed_port(), _closed_port()]

    async def go():
        async with NetworkClient(",".join(f"127.0.0.1:{p}" for p in ports)):
            pass

    with pytest.raises(BrokerUnreachable) as error:
        run(go())
    message = str(error.value)
    assert "\n" not in message
    assert all(f"127.0.0.1:{p}" in message for p in ports)


@pytest.mark.parametrize("text", ["", "host:port", ":9092", " , "])
def test_bad_bootstrap_is_a_usage_error(text: str):
    with pytest.raises(UsageError):
        parse_bootstrap(text)


def test_bootstrap_forms():
    assert parse_bootstrap("a:1, PLAINTEXT://b:2,c,[::1]:3") == [("a", 1), ("b", 2), ("c", 9092), ("::1", 3)]


@contextlib.asynccontextmanager
async def scripted_broker(answer):
    """A broker on 127.0.0.1 that hands each request's (api key, version, correlation id) to
    ``answer(writer, ...)``, which writes the answer, or returns False to hang up; yields its port."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
            except asyncio.IncompleteReadError:
                return
            go_on = answer(writer, *struct.unpack_from(">hhi", frame))
            await writer.drain()
            if go_on is False:
                writer.close()
                return

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def test_falls_back_when_the_broker_lacks_the_asked_api_versions_version():
    """A broker that does not know ApiVersions v3 answers with v0's body and its own range; the
    client asks again with the highest version the broker named (KIP-511)."""
    asked: list[int] = []

    def v0_body(error: int, ranges: list[tuple[int, int, int]]) -> bytes:
        body = struct.pack(">hi", error, len(ranges))
        return body + b"".join(struct.pack(">hhh", *r) for r in ranges)

    def answer(writer: asyncio.StreamWriter, api_key: int, version: int, correlation: int) -> None:
        asked.append(version)
        if version > 2:
            body = v0_body(ErrorCode.UNSUPPORTED_VERSION, [(18, 0, 2)])
        else:
            body = v0_body(0, [(18, 0, 2), (3, 0, 9)]) + struct.pack(">i", 0)  # v1/v2 add throttle_time
        writer.write(struct.pack(">ii", 4 + len(body), correlation) + body)

    async def go():
        async with scripted_broker(answer) as port:
            connection = await BrokerConnection.open("127.0.0.1", port)
            versions = connection.versions
            metadata_version = connection.version_for(3)
            await connection.close()
            return versions, metadata_version

    versions, metadata_version = run(go())
    assert asked == [CLIENT_MAX_VERSIONS[18], 2]
    assert versions == {18: (0, 2), 3: (0, 9)}
    assert metadata_version == 9


@pytest.mark.parametrize("answer", ["short frame", "closed mid-frame"])
def test_a_broken_answer_fails_the_waiting_request_and_the_connection(answer: str):
    """After ApiVersions the scripted broker answers the next request with a frame too short for a
    response header, or closes in the middle of one: the waiting call fails, later ones too."""

    def reply(writer: asyncio.StreamWriter, api_key: int, version: int, correlation: int) -> bool:
        if api_key == 18:  # v0 only: the client's first ask is refused, the second answered
            ranges = [(18, 0, 0)] if version else [(18, 0, 0), (3, 0, 9)]
            body = struct.pack(">hi", ErrorCode.UNSUPPORTED_VERSION if version else 0, len(ranges))
            body += b"".join(struct.pack(">hhh", *r) for r in ranges)
            writer.write(struct.pack(">ii", 4 + len(body), correlation) + body)
            return True
        if answer == "short frame":
            writer.write(struct.pack(">i", 2) + b"\x00\x01")
            return True
        writer.write(struct.pack(">ii", 100_000, correlation) + bytes(5000))
        return False

    async def go():
        async with scripted_broker(reply) as port:
            connection = await BrokerConnection.open("127.0.0.1", port)
            with pytest.raises(BrokerUnreachable) as first:
                await connection.call(3, {"topics": [], "allow_auto_topic_creation": False}, timeout=10)
            with pytest.raises(BrokerUnreachable) as later:
                await connection.call(3, {"topics": [], "allow_auto_topic_creation": False}, timeout=10)
            await connection.close()
            return str(first.value), str(later.value), connection.closed

    first, later, closed = run(go())
    assert closed
    assert ("too short for a response header" in first) if answer == "short frame" else ("closed by the broker" in first)
    assert "is closed" in later or "lost" in later
