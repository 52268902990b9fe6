"""Kafka 3.9's inter-broker requests through kcli's request machinery, end to end.

Broker side: a ``Server`` in this process (on 127.0.0.1, a free port) whose registry has handlers,
written for these tests, for UpdateMetadata (6), LeaderAndIsr (4, one that waits) and
ControlledShutdown (7). Client side: ``BrokerConnection`` against that server, and against a fake
broker that answers with bytes built by hand. The request and response layouts are Kafka 3.9.0's
(``clients/src/main/resources/common/message/<Name>Request.json`` / ``<Name>Response.json``, fields
in order); headers are those of Kafka's ``ApiMessageType``: request header v2 and response header
v1 for flexible versions, v1 / v0 otherwise, and request header v0 (no client id) for
ControlledShutdown v0.
"""

from __future__ import annotations

import asyncio
import struct
import types
import uuid
from collections.abc import Callable

import pytest

from kcli.broker.handlers import Api, api_versions
from kcli.broker.network.server import Server
from kcli.client.connection import BrokerConnection
from kcli.errors import ErrorCode, KafkaError
from tests.kafka_wire import (
    NO_TAGS,
    array,
    compact_array,
    compact_string,
    i16,
    i32,
    i64,
    string,
    uuid_bytes,
)

TIMEOUT = 10.0
TOPIC_ID = uuid.UUID("6a1b5c3e-2f4d-4e8a-9b7c-0d1e2f3a4b5c")


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


def framed(body: bytes) -> bytes:
    return i32(len(body)) + body


# -- the broker side ---------------------------------------------------------------------------------


class Handlers:
    """Test handlers, written as a handler module would write them; they keep what they were given."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, object]] = []

    def update_metadata(self, ctx, request):
        self.seen.append((6, ctx.api_version, request))
        stale = request.controller_epoch < 5
        return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH if stale else 0}

    async def leader_and_isr(self, ctx, request):
        self.seen.append((4, ctx.api_version, request))
        await asyncio.sleep(0)
        # v0-1 list partitions with their topic name; v2+ group them by topic (v5+ with its id).
        if ctx.api_version < 2:
            partitions = [(p.topic_name, None, p) for p in request.ungrouped_partition_states]
        else:
            partitions = [(t.topic_name, getattr(t, "topic_id", None), p) for t in request.topic_states for p in t.partition_states]
        return {
            "error_code": 0,
            "partition_errors": [{"topic_name": name, "partition_index": p.partition_index} for name, _id, p in partitions],
            "topics": [{"topic_id": topic_id, "partition_errors": [{"partition_index": p.partition_index}]} for _name, topic_id, p in partitions],
        }

    def controlled_shutdown(self, ctx, request):
        self.seen.append((7, ctx.api_version, request))
        return {"error_code": 0, "remaining_partitions": [{"topic_name": "orders", "partition_index": request.broker_id}]}


def registry_with(handlers: Handlers, *keys: int) -> dict[int, Api]:
    apis = {
        18: Api(18, "api_versions", *api_versions.VERSIONS, api_versions.handle, False),
        6: Api(6, "update_metadata", 0, 8, handlers.update_metadata, False),
        4: Api(4, "leader_and_isr", 0, 7, handlers.leader_and_isr, True),
        7: Api(7, "controlled_shutdown", 0, 3, handlers.controlled_shutdown, False),
    }
    return {key: apis[key] for key in sorted({18, *keys})}


async def serving(registry: dict[int, Api], scenario: Callable[[int], object]):
    server = Server(types.SimpleNamespace(registry=registry), registry)
    _host, port = await server.listen("127.0.0.1", 0)
    try:
        return await scenario(port)
    finally:
        server.stop_accepting()
        await server.drain_and_close(TIMEOUT)


UPDATE_METADATA = {
    "controller_id": 1, "controller_epoch": 7, "broker_epoch": 500,
    "ungrouped_partition_states": [{"topic_name": "orders", "partition_index": 0, "leader": 1, "isr": [1], "replicas": [1]}],
    "topic_states": [{"topic_name": "orders", "topic_id": TOPIC_ID,
                      "partition_states": [{"partition_index": 0, "leader": 1, "isr": [1], "replicas": [1]}]}],
    "live_brokers": [{"id": 1, "v0_host": "localhost", "v0_port": 9092,
                      "endpoints": [{"port": 9092, "host": "localhost", "listener": "PLAINTEXT", "security_protocol": 0}]}],
}


def test_api_versions_advertises_a_stated_api_once_a_handler_serves_it():
    async def versions(registry):
        async def scenario(port):
            connection = await BrokerConnection.open("127.0.0.1", port, timeout=TIMEOUT)
            await connection.close()
            return connection.versions
        return await serving(registry, scenario)

    handlers = Handlers()
    advertised = run(versions(registry_with(handlers, 6)))
    assert advertised[6] == (0, 8) and 4 not in advertised and 5 not in advertised
    assert run(versions(registry_with(handlers, 4, 7)))[4] == (0, 7)


def test_kcli_client_and_server_speak_every_update_metadata_version():
    handlers = Handlers()

    async def scenario(port):
        connection = await BrokerConnection.open("127.0.0.1", port, timeout=TIMEOUT)
        try:
            answers = [await connection.send(6, version, UPDATE_METADATA, timeout=TIMEOUT) for version in range(9)]
            stale = await connection.call(6, {**UPDATE_METADATA, "controller_epoch": 3}, timeout=TIMEOUT)
        finally:
            await connection.close()
        return answers, stale

    answers, stale = run(serving(registry_with(handlers, 6), scenario))
    assert [a.error_code for a in answers] == [0] * 9
    assert stale.error_code == ErrorCode.STALE_CONTROLLER_EPOCH and stale.__version__ == 8  # call negotiated v8
    assert [version for _key, version, _request in handlers.seen] == [*range(9), 8]
    old, new = handlers.seen[0][2], handlers.seen[8][2]
    assert old.ungrouped_partition_states[0].topic_name == "orders" and old.live_brokers[0].v0_host == "localhost"
    assert new.topic_states[0].topic_id == TOPIC_ID and new.live_brokers[0].endpoints[0].listener == "PLAINTEXT"


def test_a_handler_that_waits_answers_leader_and_isr_in_every_version():
    handlers = Handlers()
    fields = {
        "controller_id": 1, "controller_epoch": 7, "broker_epoch": 500, "type": 0,
        "ungrouped_partition_states": [{"topic_name": "orders", "partition_index": 3, "leader": 1, "isr": [1], "replicas": [1]}],
        "topic_states": [{"topic_name": "orders", "topic_id": TOPIC_ID,
                          "partition_states": [{"partition_index": 3, "leader": 1, "isr": [1], "replicas": [1]}]}],
        "live_leaders": [{"broker_id": 1, "host_name": "localhost", "port": 9092}],
    }

    async def scenario(port):
        connection = await BrokerConnection.open("127.0.0.1", port, timeout=TIMEOUT)
        try:
            return [await connection.send(4, version, fields, timeout=TIMEOUT) for version in range(8)]
        finally:
            await connection.close()

    answers = run(serving(registry_with(handlers, 4), scenario))
    for version, answer in enumerate(answers):
        if version < 5:
            assert [(e.topic_name, e.partition_index) for e in answer.partition_errors] == [("orders", 3)]
        else:
            assert answer.topics[0].topic_id == TOPIC_ID and answer.topics[0].partition_errors[0].partition_index == 3


async def exchange(port: int, frames: list[bytes]) -> list[bytes]:
    """Send raw request frames on one connection; the raw answer frames (None once it closes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        answers = []
        for frame in frames:
            writer.write(frame)
            try:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                answers.append(await reader.readexactly(size))
            except asyncio.IncompleteReadError:
                answers.append(None)
        return answers
    finally:
        writer.close()


def test_the_broker_reads_and_writes_the_headers_of_each_version():
    handlers = Handlers()
    client_id = string("ctl")
    um_v5_body = i32(1) + i32(7) + i64(500) + array([]) + array([])
    um_v6_body = i32(1) + i32(7) + i64(500) + compact_array([]) + compact_array([]) + NO_TAGS
    frames = [
        # UpdateMetadata v5: request header v1 (client id); response header v0, then ErrorCode.
        framed(i16(6) + i16(5) + i32(41) + client_id + um_v5_body),
        # UpdateMetadata v6: request header v2 (client id, tags); response header v1 (tags).
        framed(i16(6) + i16(6) + i32(42) + client_id + NO_TAGS + um_v6_body),
        # ControlledShutdown v0: request header v0, no client id; then BrokerId.
        framed(i16(7) + i16(0) + i32(43) + i32(3)),
        # ControlledShutdown v3: flexible; BrokerId, BrokerEpoch.
        framed(i16(7) + i16(3) + i32(44) + client_id + NO_TAGS + i32(3) + i64(500) + NO_TAGS),
    ]
    answers = run(serving(registry_with(handlers, 6, 7), lambda port: exchange(port, frames)))
    assert answers == [
        i32(41) + i16(0),
        i32(42) + NO_TAGS + i16(0) + NO_TAGS,
        i32(43) + i16(0) + array([string("orders") + i32(3)]),
        i32(44) + NO_TAGS + i16(0) + compact_array([compact_string("orders") + i32(3) + NO_TAGS]) + NO_TAGS,
    ]
    assert [(key, version, request.broker_epoch if key == 7 and version >= 2 else None) for key, version, request in handlers.seen] == [
        (6, 5, None), (6, 6, None), (7, 0, None), (7, 3, 500)]


def test_a_malformed_request_closes_only_its_connection():
    handlers = Handlers()
    # UpdateMetadata v5 whose TopicStates claims 2^31-1 entries in the few bytes that follow.
    bad = framed(i16(6) + i16(5) + i32(1) + string("ctl") + i32(1) + i32(7) + i64(500) + i32(2**31 - 1) + i32(0))
    good = framed(i16(6) + i16(5) + i32(2) + string("ctl") + i32(1) + i32(7) + i64(500) + array([]) + array([]))

    async def scenario(port):
        return await exchange(port, [bad]), await exchange(port, [good])

    closed, served = run(serving(registry_with(handlers, 6), scenario))
    assert closed == [None] and served == [i32(2) + i16(0)]
    assert len(handlers.seen) == 1


# -- the client side, against a broker that answers with hand-built bytes -----------------------------


class FakeBroker:
    """Answers ApiVersions v3 with ``ranges`` and every other request from ``answers`` by (key,
    version): bytes after the correlation id. Keeps every request frame it reads."""

    def __init__(self, ranges: dict[int, tuple[int, int]], answers: dict[tuple[int, int], bytes]) -> None:
        self.ranges = ranges
        self.answers = answers
        self.requests: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                key, version, correlation_id = struct.unpack_from(">hhi", frame)
                self.requests.append(frame)
                if key == 18:
                    # ApiVersions v3 response (header v0): ErrorCode, ApiKeys (ApiKey, MinVersion,
                    # MaxVersion), ThrottleTimeMs.
                    keys = [i16(k) + i16(low) + i16(high) + NO_TAGS for k, (low, high) in self.ranges.items()]
                    body = i16(0) + compact_array(keys) + i32(0) + NO_TAGS
                else:
                    body = self.answers[(key, version)]
                writer.write(framed(i32(correlation_id) + body))
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()


async def against(broker: FakeBroker, scenario):
    server = await asyncio.start_server(broker.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        connection = await BrokerConnection.open("127.0.0.1", port, client_id="ctl", timeout=TIMEOUT)
        try:
            return await scenario(connection)
        finally:
            await connection.close()
    finally:
        server.close()
        await server.wait_closed()


LEADER_AND_ISR_V5 = {
    "controller_id": 1, "controller_epoch": 7, "broker_epoch": 500, "type": 1,
    "topic_states": [{"topic_name": "orders", "topic_id": TOPIC_ID,
                      "partition_states": [{"partition_index": 2, "controller_epoch": 7, "leader": 3, "leader_epoch": 12,
                                            "isr": [3], "partition_epoch": 40, "replicas": [3]}]}],
    "live_leaders": [{"broker_id": 3, "host_name": "broker3", "port": 9094}],
}
# LeaderAndIsr v5 request body: ControllerId, ControllerEpoch, BrokerEpoch, Type, TopicStates
# (TopicName, TopicId, PartitionStates (PartitionIndex, ControllerEpoch, Leader, LeaderEpoch, Isr,
# PartitionEpoch, Replicas, AddingReplicas, RemovingReplicas, IsNew)), LiveLeaders (BrokerId,
# HostName, Port).
LEADER_AND_ISR_V5_BODY = (
    i32(1) + i32(7) + i64(500) + b"\x01"
    + compact_array([compact_string("orders") + uuid_bytes(TOPIC_ID)
                     + compact_array([i32(2) + i32(7) + i32(3) + i32(12) + compact_array([i32(3)]) + i32(40)
                                      + compact_array([i32(3)]) + compact_array([]) + compact_array([]) + b"\x00" + NO_TAGS])
                     + NO_TAGS])
    + compact_array([i32(3) + compact_string("broker3") + i32(9094) + NO_TAGS])
    + NO_TAGS
)


def test_the_client_sends_leader_and_isr_at_the_negotiated_version_and_reads_the_answer():
    broker = FakeBroker(
        {18: (0, 3), 4: (0, 5), 7: (0, 0)},
        {
            # LeaderAndIsr v5 response (header v1): ErrorCode, Topics (TopicId, PartitionErrors
            # (PartitionIndex, ErrorCode)).
            (4, 5): NO_TAGS + i16(0) + compact_array([uuid_bytes(TOPIC_ID) + compact_array([i32(2) + i16(75) + NO_TAGS]) + NO_TAGS]) + NO_TAGS,
            # LeaderAndIsr v1 response (header v0): ErrorCode, PartitionErrors (TopicName, PartitionIndex, ErrorCode).
            (4, 1): i16(0) + array([string("orders") + i32(2) + i16(6)]),
            # ControlledShutdown v0 response (header v0): ErrorCode, RemainingPartitions (TopicName, PartitionIndex).
            (7, 0): i16(0) + array([string("orders") + i32(2)]),
        },
    )

    async def scenario(connection):
        return (await connection.call(4, LEADER_AND_ISR_V5, timeout=TIMEOUT),
                await connection.send(4, 1, {"controller_id": 1, "ungrouped_partition_states": [{"topic_name": "orders", "partition_index": 2}]}, timeout=TIMEOUT),
                await connection.call(7, {"broker_id": 3, "broker_epoch": 500}, timeout=TIMEOUT))

    v5, v1, shutdown = run(against(broker, scenario))
    assert v5.__version__ == 5 and v5.error_code == 0
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partition_errors]) for t in v5.topics] == [(TOPIC_ID, [(2, 75)])]
    assert [(p.topic_name, p.partition_index, p.error_code) for p in v1.partition_errors] == [("orders", 2, ErrorCode.NOT_LEADER_OR_FOLLOWER)]
    assert [(p.topic_name, p.partition_index) for p in shutdown.remaining_partitions] == [("orders", 2)]
    _api_versions, leader_and_isr, _old, controlled_shutdown = broker.requests
    # Request header v2 (LeaderAndIsr v5 is flexible): ApiKey, ApiVersion, CorrelationId, ClientId, tags.
    assert leader_and_isr == i16(4) + i16(5) + leader_and_isr[4:8] + string("ctl") + NO_TAGS + LEADER_AND_ISR_V5_BODY
    # Request header v0: no client id; then BrokerId (v0 has no BrokerEpoch).
    assert controlled_shutdown == i16(7) + i16(0) + controlled_shutdown[4:8] + i32(3)


def test_a_broker_without_the_api_is_refused_before_sending():
    broker = FakeBroker({18: (0, 3), 6: (0, 4)}, {})

    async def scenario(connection):
        with pytest.raises(KafkaError, match="does not support leader_and_isr"):
            await connection.call(4, {}, timeout=TIMEOUT)
        with pytest.raises(KafkaError, match="supports update_metadata v0-4, which kcli cannot send"):
            await connection.call(6, {}, at_least=5, timeout=TIMEOUT)

    run(against(broker, scenario))
    assert len(broker.requests) == 1  # ApiVersions only
