"""Kafka 3.9's inter-broker requests (keys 4-7), stated as schema data, as kcli reads and writes them.

The expected bytes below are built by hand, field by field, in the order of Kafka 3.9.0's
``clients/src/main/resources/common/message/<Name>Request.json`` / ``<Name>Response.json`` (the
"fields" arrays, each field kept only in the versions its "versions" names), with the primitive
encodings of Kafka's protocol guide (``tests/kafka_wire.py``).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import uuid
from pathlib import Path

import pytest
from kio.schema.index import api_key_map

from kcli.protocol import mapping_encoder, messages, stated_apis
from kcli.protocol.schema import SchemaDecodeError, StructSchema
from tests.kafka_wire import (
    NO_TAGS,
    array,
    boolean,
    compact_array,
    compact_string,
    i8,
    i16,
    i32,
    i64,
    string,
    tags,
    uuid_bytes,
)

# Kafka 3.9.0's message files: validVersions and flexibleVersions of each request and response.
KAFKA_39 = {
    4: ("leader_and_isr", (0, 7), 4),
    5: ("stop_replica", (0, 4), 2),
    6: ("update_metadata", (0, 8), 6),
    7: ("controlled_shutdown", (0, 3), 3),
}
TOPIC_ID = uuid.UUID("6a1b5c3e-2f4d-4e8a-9b7c-0d1e2f3a4b5c")


def test_the_stated_apis_are_kafka_39s_and_ones_kio_lacks():
    assert sorted(stated_apis.STATED_APIS) == sorted(KAFKA_39)
    for key, (name, (low, high), first_flexible) in KAFKA_39.items():
        assert key not in api_key_map  # a stated API never shadows one of kio's
        assert messages.api_name(key) == name
        api = stated_apis.STATED_APIS[key]
        for schema in (api.request, api.response):
            assert (schema.valid_versions.lowest, schema.valid_versions.highest) == (low, high)
            assert schema.flexible_versions.lowest == first_flexible
        assert [messages.has_version(key, v) for v in range(low - 1, high + 2)] == [False] + [True] * (high - low + 1) + [False]
        assert [messages.is_flexible(key, v) for v in range(low, high + 1)] == [v >= first_flexible for v in range(low, high + 1)]


# For each message and version, the fields Kafka 3.9.0's JSON gives it, flattened (its "source" says how).
KAFKA_39_MESSAGES = json.loads((Path(__file__).resolve().parents[1] / "data/kafka-3.9-inter-broker-messages.json").read_text())["messages"]


def signature(st: StructSchema, version: int) -> str:
    """A compiled struct at ``version``, written as the data file writes Kafka's."""
    cv = st.possible.clamp(version)
    parts = []
    for f in st.fields:
        if not f.present(cv):
            continue
        t, text = f.type, f.name + ":"
        if t.kind == "array":
            t, text = t.element, text + "[]"
        text += "{" + signature(t.struct, version) + "}" if t.kind == "struct" else t.kind
        text += "?" if f.nullable(cv) else ""
        text += f"@{f.tag}" if f.tagged(cv) else ""
        if f.type.kind in ("int8", "int16", "int32", "int64", "bool") and f.default_spec not in (0, False):
            text += f"={str(f.default_spec).lower()}"
        parts.append(text)
    return ", ".join(parts)


@pytest.mark.parametrize("name", sorted(KAFKA_39_MESSAGES))
def test_every_version_has_kafka_39s_fields(name):
    kafka = KAFKA_39_MESSAGES[name]
    api = stated_apis.STATED_APIS[kafka["apiKey"]]
    schema = api.request if name.endswith("Request") else api.response
    assert (schema.name, str(schema.valid_versions), str(schema.flexible_versions)) == (name, kafka["validVersions"], kafka["flexibleVersions"])
    assert {str(v): signature(schema.struct, v) for v in range(schema.valid_versions.lowest, schema.valid_versions.highest + 1)} == kafka["versions"]


def test_request_header_versions_follow_kafkas_api_message_type():
    # ControlledShutdown v0 alone has request header v0 (no client id); flexible versions have v2.
    assert [messages.request_header_version(7, v) for v in range(4)] == [0, 1, 1, 2]
    assert [messages.request_header_version(6, v) for v in range(9)] == [1] * 6 + [2] * 3
    assert messages.request_header_version(3, 12) == 2 and messages.request_header_version(3, 8) == 1  # kio's APIs unchanged


# -- every version round-trips ---------------------------------------------------------------------


def sample(st: StructSchema, version: int, counter: itertools.count) -> dict:
    """A value for every field ``version`` has, none of them at its default."""
    cv = st.possible.clamp(version)
    out = {}
    for f in st.fields:
        if not f.present(cv):
            continue
        out[stated_apis.snake_case(f.name)] = _value(f.type, version, counter)
    return out


def _value(t, version: int, counter: itertools.count):
    n = next(counter)
    if t.kind == "struct":
        return sample(t.struct, version, counter)
    if t.kind == "array":
        return tuple(_value(t.element, version, counter) for _ in range(2))
    return {
        "bool": True,
        "int8": 1 + n % 100,
        "int16": 1 + n,
        "int32": 100_000 + n,
        "int64": 10_000_000_000 + n,
        "string": f"s{n}",
        "uuid": uuid.UUID(int=n + 1),
    }[t.kind]


VERSIONS = [(key, version) for key, (_, (low, high), _) in KAFKA_39.items() for version in range(low, high + 1)]


@pytest.mark.parametrize(("key", "version"), VERSIONS)
def test_every_request_version_round_trips(key, version):
    data = sample(stated_apis.STATED_APIS[key].request.struct, version, itertools.count())
    body = mapping_encoder.encode_request(key, version, data)
    request = messages.decode_request(key, version, body + b"trailing", 0)
    assert type(request) is stated_apis.request_type(key, version)
    assert (request.__version__, request.__api_key__) == (version, key)
    assert dataclasses.asdict(request) == data
    assert mapping_encoder.encode_request(key, version, request) == body  # a decoded request encodes as it came


@pytest.mark.parametrize(("key", "version"), VERSIONS)
def test_every_response_version_round_trips(key, version):
    data = sample(stated_apis.STATED_APIS[key].response.struct, version, itertools.count())
    body = mapping_encoder.encode_response(key, version, data)
    response, end = messages.response_reader(key, version)(b"head" + body, 4)
    assert end == 4 + len(body)
    assert type(response) is stated_apis.response_type(key, version)
    assert dataclasses.asdict(response) == data


# -- bytes built by hand -----------------------------------------------------------------------------

# LeaderAndIsr v1: ControllerId, ControllerEpoch, UngroupedPartitionStates (TopicName, PartitionIndex,
# ControllerEpoch, Leader, LeaderEpoch, Isr, PartitionEpoch, Replicas, IsNew), LiveLeaders (BrokerId,
# HostName, Port).
LEADER_AND_ISR_V1 = (
    i32(1) + i32(7)
    + array([string("orders") + i32(2) + i32(7) + i32(3) + i32(12) + array([i32(3), i32(1)]) + i32(40)
             + array([i32(3), i32(1)]) + boolean(True)])
    + array([i32(3) + string("broker3") + i32(9094)])
)
# LeaderAndIsr v7 (flexible): ControllerId, isKRaftController, ControllerEpoch, BrokerEpoch, Type,
# TopicStates (TopicName, TopicId, PartitionStates (PartitionIndex, ControllerEpoch, Leader,
# LeaderEpoch, Isr, PartitionEpoch, Replicas, AddingReplicas, RemovingReplicas, IsNew,
# LeaderRecoveryState)), LiveLeaders (BrokerId, HostName, Port); each struct ends with its tags.
LEADER_AND_ISR_V7 = (
    i32(1) + boolean(False) + i32(7) + i64(500) + i8(1)
    + compact_array([
        compact_string("orders") + uuid_bytes(TOPIC_ID)
        + compact_array([i32(2) + i32(7) + i32(3) + i32(12) + compact_array([i32(3)]) + i32(40)
                         + compact_array([i32(3), i32(1)]) + compact_array([i32(1)]) + compact_array([])
                         + boolean(False) + i8(0) + NO_TAGS])
        + NO_TAGS])
    + compact_array([i32(3) + compact_string("broker3") + i32(9094) + NO_TAGS])
    + NO_TAGS
)
# StopReplica v0: ControllerId, ControllerEpoch, DeletePartitions, UngroupedPartitions (TopicName,
# PartitionIndex).
STOP_REPLICA_V0 = i32(1) + i32(7) + boolean(True) + array([string("orders") + i32(0), string("orders") + i32(2)])
# StopReplica v3 (flexible): ControllerId, ControllerEpoch, BrokerEpoch, TopicStates (TopicName,
# PartitionStates (PartitionIndex, LeaderEpoch, DeletePartition)).
STOP_REPLICA_V3 = (
    i32(1) + i32(7) + i64(500)
    + compact_array([compact_string("orders") + compact_array([i32(2) + i32(12) + boolean(True) + NO_TAGS]) + NO_TAGS])
    + NO_TAGS
)
# UpdateMetadata v0: ControllerId, ControllerEpoch, UngroupedPartitionStates (TopicName,
# PartitionIndex, ControllerEpoch, Leader, LeaderEpoch, Isr, ZkVersion, Replicas), LiveBrokers (Id,
# V0Host, V0Port).
UPDATE_METADATA_V0 = (
    i32(1) + i32(7)
    + array([string("orders") + i32(2) + i32(7) + i32(3) + i32(12) + array([i32(3)]) + i32(40) + array([i32(3), i32(1)])])
    + array([i32(3) + string("broker3") + i32(9094), i32(1) + string("broker1") + i32(9092)])
)
# UpdateMetadata v8 (flexible): ControllerId, isKRaftController, ControllerEpoch, BrokerEpoch,
# TopicStates (TopicName, TopicId, PartitionStates (PartitionIndex, ControllerEpoch, Leader,
# LeaderEpoch, Isr, ZkVersion, Replicas, OfflineReplicas)), LiveBrokers (Id, Endpoints (Port, Host,
# Listener, SecurityProtocol), Rack); then the tagged Type (tag 0), written as it is not 0.
UPDATE_METADATA_V8 = (
    i32(1) + boolean(False) + i32(7) + i64(500)
    + compact_array([
        compact_string("orders") + uuid_bytes(TOPIC_ID)
        + compact_array([i32(2) + i32(7) + i32(3) + i32(12) + compact_array([i32(3)]) + i32(40)
                         + compact_array([i32(3), i32(1)]) + compact_array([i32(1)]) + NO_TAGS])
        + NO_TAGS])
    + compact_array([
        i32(3) + compact_array([i32(9094) + compact_string("broker3") + compact_string("PLAINTEXT") + i16(0) + NO_TAGS])
        + compact_string("rack-a") + NO_TAGS,
        i32(1) + compact_array([]) + compact_string(None) + NO_TAGS,
    ])
    + tags((0, i8(2)))
)
# ControlledShutdown v0: BrokerId. v3 (flexible): BrokerId, BrokerEpoch.
CONTROLLED_SHUTDOWN_V0 = i32(3)
CONTROLLED_SHUTDOWN_V3 = i32(3) + i64(500) + NO_TAGS


def _leader_and_isr(version: int) -> dict:
    state = {"partition_index": 2, "controller_epoch": 7, "leader": 3, "leader_epoch": 12, "partition_epoch": 40,
             "replicas": [3, 1], "topic_name": "orders"}
    if version < 2:
        return {"controller_id": 1, "controller_epoch": 7, "ungrouped_partition_states": [{**state, "isr": [3, 1], "is_new": True}],
                "live_leaders": [{"broker_id": 3, "host_name": "broker3", "port": 9094}]}
    del state["topic_name"]
    return {"controller_id": 1, "controller_epoch": 7, "broker_epoch": 500, "type": 1,
            "topic_states": [{"topic_name": "orders", "topic_id": TOPIC_ID,
                              "partition_states": [{**state, "isr": [3], "adding_replicas": [1]}]}],
            "live_leaders": [{"broker_id": 3, "host_name": "broker3", "port": 9094}]}


HAND_BUILT = [
    (4, 1, LEADER_AND_ISR_V1, _leader_and_isr(1)),
    (4, 7, LEADER_AND_ISR_V7, _leader_and_isr(7)),
    (5, 0, STOP_REPLICA_V0, {"controller_id": 1, "controller_epoch": 7, "delete_partitions": True,
                             "ungrouped_partitions": [{"topic_name": "orders", "partition_index": 0},
                                                      {"topic_name": "orders", "partition_index": 2}]}),
    (5, 3, STOP_REPLICA_V3, {"controller_id": 1, "controller_epoch": 7, "broker_epoch": 500,
                             "topic_states": [{"topic_name": "orders", "partition_states": [
                                 {"partition_index": 2, "leader_epoch": 12, "delete_partition": True}]}]}),
    (6, 0, UPDATE_METADATA_V0, {"controller_id": 1, "controller_epoch": 7,
                                "ungrouped_partition_states": [{"topic_name": "orders", "partition_index": 2, "controller_epoch": 7,
                                                                "leader": 3, "leader_epoch": 12, "isr": [3], "zk_version": 40,
                                                                "replicas": [3, 1]}],
                                "live_brokers": [{"id": 3, "v0_host": "broker3", "v0_port": 9094},
                                                 {"id": 1, "v0_host": "broker1", "v0_port": 9092}]}),
    (6, 8, UPDATE_METADATA_V8, {"controller_id": 1, "type": 2, "controller_epoch": 7, "broker_epoch": 500,
                                "topic_states": [{"topic_name": "orders", "topic_id": TOPIC_ID, "partition_states": [
                                    {"partition_index": 2, "controller_epoch": 7, "leader": 3, "leader_epoch": 12, "isr": [3],
                                     "zk_version": 40, "replicas": [3, 1], "offline_replicas": [1]}]}],
                                "live_brokers": [{"id": 3, "endpoints": [{"port": 9094, "host": "broker3", "listener": "PLAINTEXT",
                                                                          "security_protocol": 0}], "rack": "rack-a"},
                                                 {"id": 1, "rack": None}]}),
    (7, 0, CONTROLLED_SHUTDOWN_V0, {"broker_id": 3}),
    (7, 3, CONTROLLED_SHUTDOWN_V3, {"broker_id": 3, "broker_epoch": 500}),
]


@pytest.mark.parametrize(("key", "version", "wire", "fields"), HAND_BUILT, ids=lambda v: str(v)[:12] if isinstance(v, (int, str)) else "")
def test_hand_built_requests_decode_and_encode(key, version, wire, fields):
    request = messages.decode_request(key, version, wire, 0)
    assert _holds(dataclasses.asdict(request), fields)
    assert mapping_encoder.encode_request(key, version, fields) == wire


def _holds(decoded, expected) -> bool:
    """``decoded`` has every value ``expected`` names (fields it leaves out are at their default)."""
    if isinstance(expected, dict):
        return all(name in decoded and _holds(decoded[name], value) for name, value in expected.items())
    if isinstance(expected, list):
        return len(decoded) == len(expected) and all(map(_holds, decoded, expected))
    return decoded == expected


def test_decoded_requests_read_like_kio_entities():
    request = messages.decode_request(6, 8, UPDATE_METADATA_V8, 0)
    assert request.is_k_raft_controller is False and request.type == 2
    topic = request.topic_states[0]
    assert (topic.topic_name, topic.topic_id) == ("orders", TOPIC_ID)
    partition = topic.partition_states[0]
    assert (partition.leader, partition.isr, partition.offline_replicas) == (3, (3,), (1,))
    assert [b.rack for b in request.live_brokers] == ["rack-a", None]
    assert type(partition).__name__ == "UpdateMetadataPartitionState"
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.controller_id = 2
    assert not hasattr(partition, "topic_name")  # v5+ names the topic once, in its topic state
    old = messages.decode_request(6, 0, UPDATE_METADATA_V0, 0)
    assert (old.live_brokers[0].v0_host, old.ungrouped_partition_states[0].topic_name) == ("broker3", "orders")


# -- the rules of a version-independent mapping ----------------------------------------------------


def test_one_mapping_answers_every_version_with_the_fields_each_has():
    # A handler writes its answer once; fields a version lacks are left out, missing ones take
    # their default (BrokerEpoch -1 and LeaderEpoch -1 in Kafka's schemas).
    fields = {"controller_id": 1, "controller_epoch": 7, "broker_epoch": 500, "delete_partitions": True,
              "ungrouped_partitions": [{"topic_name": "orders", "partition_index": 0}],
              "topics": [{"name": "orders", "partition_indexes": [0]}],
              "topic_states": [{"topic_name": "orders", "partition_states": [{"partition_index": 0}]}]}
    assert mapping_encoder.encode_request(5, 0, fields) == i32(1) + i32(7) + boolean(True) + array([string("orders") + i32(0)])
    v1 = messages.decode_request(5, 1, mapping_encoder.encode_request(5, 1, fields), 0)
    assert (v1.broker_epoch, v1.topics[0].partition_indexes) == (500, (0,))
    v3 = messages.decode_request(5, 3, mapping_encoder.encode_request(5, 3, {"controller_id": 1, "topic_states": fields["topic_states"]}), 0)
    assert (v3.broker_epoch, v3.topic_states[0].partition_states[0].leader_epoch) == (-1, -1)


def test_a_name_no_version_has_is_refused():
    with pytest.raises(ValueError, match="UpdateMetadataResponse has no field 'error'"):
        mapping_encoder.encode_response(6, 0, {"error": 0})
    with pytest.raises(ValueError, match="UpdateMetadataBroker has no field 'host'"):
        mapping_encoder.encode_request(6, 5, {"live_brokers": [{"id": 1, "host": "h"}]})


def test_versions_outside_kafkas_range_are_refused():
    with pytest.raises(ValueError, match="LeaderAndIsrRequest has no version 8"):
        mapping_encoder.encode_request(4, 8, {})
    with pytest.raises(ValueError, match="UpdateMetadataResponse has no version 9"):
        messages.response_reader(6, 9)


def test_bad_bytes_raise_a_decode_error_without_allocating():
    # An array count far beyond the bytes that follow (StopReplica v0's UngroupedPartitions).
    with pytest.raises(SchemaDecodeError, match="Tried to allocate a collection of size 2147483647"):
        messages.decode_request(5, 0, i32(1) + i32(7) + boolean(True) + i32(2**31 - 1), 0)
    with pytest.raises(SchemaDecodeError):
        messages.decode_request(7, 3, CONTROLLED_SHUTDOWN_V3[:-2], 0)
