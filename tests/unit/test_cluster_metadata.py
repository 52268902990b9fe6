"""The cluster's metadata over the embedded tree, unit by unit as the broker composes them:
Kafka's znodes (KafkaZkClient), admin writes (AdminZkClient through the broker's ZkAdminManager),
the broker's MetadataCache, the controller; replica placement and topic name rules."""

from __future__ import annotations

import asyncio
import random
import re
import uuid

import pytest

from kcli.broker.controller.kafka_controller import KafkaController
from kcli.broker.metadata.metadata_cache import MetadataCache
from kcli.broker.metadata.zk_admin_manager import ZkAdminManager
from kcli.metadata import admin_zk_client, embedded, topic_names, zk_client
from kcli.metadata import zk_paths as zk
from kcli.metadata.admin_zk_client import AdminZkClient
from kcli.metadata.replica_assignment import assign_replicas_to_brokers
from kcli.metadata.topics import ZERO_UUID, TopicChangeKind, random_uuid
from kcli.metadata.zk_client import KafkaZkClient
from kcli.metadata.embedded import EmbeddedStore
from kcli.metadata.store import CreateOp, NodeExistsError
from kcli.errors import ErrorCode, KafkaError
from kcli.common import uuid_to_string

BROKERS = [0, 1, 2]


@pytest.fixture
def store(tmp_path):
    with EmbeddedStore(tmp_path) as opened:
        yield opened


class Blocking:
    """An async object's methods called to completion (the unit tests have no event loop)."""

    def __init__(self, target) -> None:
        self._target = target

    def __getattr__(self, name):
        method = getattr(self._target, name)
        return lambda *args, **kwargs: asyncio.run(method(*args, **kwargs))


class Cluster:
    """The units one broker composes over a tree (as kcli.broker.broker does)."""

    def __init__(self, store, broker_id: int = 0, **admin_options) -> None:
        self.zk = KafkaZkClient(store)
        self.zk.create_top_level_paths()
        self.cache = MetadataCache(self.zk)
        self.admin = Blocking(ZkAdminManager(AdminZkClient(self.zk, **admin_options), self.cache))
        self.controller = KafkaController(self.zk, broker_id)
        self.cache.start()

    def close(self) -> None:
        self.controller.resign()
        self.cache.close()


@pytest.fixture
def cluster(store):
    metadata = Cluster(store, rng=random.Random(7))
    for broker in BROKERS:
        metadata.zk.register_broker(broker, [zk.Endpoint("PLAINTEXT", "localhost", 9092 + broker)])
    metadata.controller.elect()
    yield metadata
    metadata.close()


def kafka_error(call, *args, **kwargs) -> KafkaError:
    with pytest.raises(KafkaError) as caught:
        call(*args, **kwargs)
    return caught.value


# -- topic names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "the empty string is not allowed"),
        (".", "'.' is not allowed"),
        ("..", "'..' is not allowed"),
        ("a" * 250, f"the length of '{'a' * 250}' is longer than the max allowed length 249"),
        ("bad name", "'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
        ("caf\u00e9", "'caf\u00e9' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
    ],
)
def test_illegal_topic_names(name, reason):
    error = kafka_error(topic_names.validate, name)
    assert error.error_code is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert str(error) == f"Topic name is invalid: {reason}"


@pytest.mark.parametrize("name", ["a", "a" * 249, "Orders.v1_x-2", "...", "__consumer_offsets"])
def test_legal_topic_names(name):
    topic_names.validate(name)
    assert topic_names.is_valid(name)


def test_length_counts_java_characters():
    # 124 astral characters are 248 UTF-16 units plus "ab" -> 250: too long for Kafka.
    assert "longer than the max allowed length" in topic_names.invalid_reason("\U0001f600" * 124 + "ab")


def test_collision_rules():
    assert topic_names.has_collision_chars("a.b") and topic_names.has_collision_chars("a_b")
    assert not topic_names.has_collision_chars("a-b")
    assert topic_names.unify_collision_chars("a.b_c.d") == "a_b_c_d"
    assert topic_names.has_collision("a.b", "a_b")
    assert topic_names.colliding_topics("a.b", ["a_b", "a.b", "x", "a__b"]) == ["a_b"]
    assert topic_names.colliding_topics("ab", ["ab"]) == []


def test_internal_topics():
    assert topic_names.is_internal("__consumer_offsets")
    assert topic_names.is_internal("__transaction_state")
    assert not topic_names.is_internal("__cluster_metadata")
    assert not topic_names.is_internal("orders")


# -- replica placement ----------------------------------------------------------------------------


def test_placement_follows_kafkas_documented_example():
    # AdminUtils' javadoc: five brokers, ten partitions, three replicas, starting at broker 0.
    placed = assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, start_index=0)
    first_replicas = [placed[p][0] for p in range(10)]
    assert first_replicas == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    second_replica_row1 = [p for broker in range(5) for p in range(5) if placed[p][1] == broker]
    assert second_replica_row1 == [4, 0, 1, 2, 3]
    second_replica_row2 = [p for broker in range(5) for p in range(5, 10) if placed[p][1] == broker]
    assert second_replica_row2 == [8, 9, 5, 6, 7]
    third_replica_row1 = [p for broker in range(5) for p in range(5) if placed[p][2] == broker]
    assert third_replica_row1 == [3, 4, 0, 1, 2]


def test_random_placement_spreads_leaders_and_never_repeats_a_broker():
    placed = assign_replicas_to_brokers([10, 20, 30], 30, 3, rng=random.Random(1))
    leaders = [replicas[0] for replicas in placed.values()]
    assert {broker: leaders.count(broker) for broker in (10, 20, 30)} == {10: 10, 20: 10, 30: 10}
    assert all(len(set(replicas)) == 3 for replicas in placed.values())


def test_random_uuid_is_never_reserved_or_dash_led():
    for _ in range(200):
        value = random_uuid()
        assert value not in (uuid.UUID(int=0), uuid.UUID(int=1))
        assert not uuid_to_string(value).startswith("-")


# -- cluster id, brokers, controller --------------------------------------------------------------


def test_cluster_id_is_created_once_and_survives_a_restart(tmp_path):
    with EmbeddedStore(tmp_path) as store:
        first = KafkaZkClient(store).get_or_create_cluster_id()
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", first)
        assert KafkaZkClient(store).get_or_create_cluster_id() == first
        assert zk.decode_cluster_id(store.get("/cluster/id")[0]) == first
    with EmbeddedStore(tmp_path) as store:
        assert KafkaZkClient(store).get_or_create_cluster_id() == first


def test_broker_registration_is_ephemeral_and_checked_against_the_session(cluster, store, monkeypatch):
    assert cluster.zk.registered_brokers() == BROKERS
    data, stat = store.get("/brokers/ids/1")
    assert stat.ephemeral_owner == store.session_id
    registration = zk.decode_broker_registration(data, 1)
    assert registration.endpoints == (zk.Endpoint("PLAINTEXT", "localhost", 9093),)
    assert cluster.zk.broker_registration(1) == registration
    # Kafka's checked ephemeral create: the node of this very session is accepted as it is
    # (a retry after a lost answer) ...
    cluster.zk.register_broker(1, [zk.Endpoint("PLAINTEXT", "other", 1)])
    assert store.get("/brokers/ids/1") == (data, stat)
    # ... another session's is refused with Kafka's message.
    owner = store.session_id
    monkeypatch.setattr(store, "session_id", owner + 1)
    expected = (f"Error while creating ephemeral at /brokers/ids/1, node already exists and owner '{owner}' "
                f"does not match current session '{owner + 1}'")
    with pytest.raises(NodeExistsError) as caught:
        cluster.zk.register_broker(1, [zk.Endpoint("PLAINTEXT", "other", 1)])
    assert str(caught.value) == expected
    with pytest.raises(NodeExistsError) as caught:
        cluster.zk.check_broker_id_free(1)
    assert str(caught.value) == expected


def test_controller_epoch_grows_with_each_election(tmp_path):
    with EmbeddedStore(tmp_path) as store:
        cluster = Cluster(store, broker_id=5)
        assert cluster.zk.controller_id() is None
        assert cluster.controller.elect() == 1
        assert cluster.zk.controller_id() == 5
        assert store.get("/controller_epoch")[0] == b"1"
        assert zk.decode_controller(store.get("/controller")[0]).kraft_controller_epoch == -1
        assert store.get("/controller")[1].ephemeral_owner == store.session_id
        error = kafka_error(KafkaController(KafkaZkClient(store), 6).elect)
        assert error.error_code is ErrorCode.NOT_CONTROLLER
    with EmbeddedStore(tmp_path) as store:
        assert KafkaController(KafkaZkClient(store), 5).elect() == 2


def test_start_creates_kafkas_persistent_paths(cluster, store):
    for path in zk.PERSISTENT_PATHS:
        assert store.exists(path) is not None


# -- create topics --------------------------------------------------------------------------------


def test_create_topic_writes_kafkas_znodes(cluster, store):
    topic = cluster.admin.create_topic("orders", 3, 2, configs={"cleanup.policy": "compact"})
    assert topic.topic_id != ZERO_UUID
    assert sorted(topic.partitions) == [0, 1, 2]
    assignment = zk.decode_topic_assignment(store.get("/brokers/topics/orders")[0])
    assert assignment.topic_id == topic.topic_id
    for partition, state in topic.partitions.items():
        assert len(state.replicas) == 2 and len(set(state.replicas)) == 2
        assert set(state.replicas) <= set(BROKERS)
        assert assignment.partitions[partition] == state.replicas
        # Kafka's initializeLeaderAndIsrForPartitions: the live replicas (all of them here) in
        # sync, their logs being empty.
        assert (state.leader, state.isr, state.leader_epoch, state.partition_epoch) == (
            state.replicas[0],
            state.replicas,
            0,
            0,
        )
        written = zk.decode_leader_and_isr(store.get(zk.partition_state_path("orders", partition))[0])
        assert written == zk.LeaderAndIsr(state.replicas[0], 0, state.replicas, controller_epoch=1)
    assert store.get("/config/topics/orders")[0] == b'{"version":1,"config":{"cleanup.policy":"compact"}}'
    assert cluster.cache.topic("orders") == topic
    assert cluster.cache.topic_by_id(topic.topic_id) == topic
    assert topic.replication_factor == 2


def test_the_admin_path_writes_the_assignment_and_leaves_election_to_the_controller(store):
    cluster = Cluster(store)  # no controller elected
    for broker in BROKERS:
        cluster.zk.register_broker(broker, [zk.Endpoint("PLAINTEXT", "localhost", 9092 + broker)])
    topic = cluster.admin.create_topic("orders", 2, 2)
    assert zk.decode_topic_assignment(store.get("/brokers/topics/orders")[0]).topic_id == topic.topic_id
    assert store.exists("/brokers/topics/orders/partitions") is None
    assert {p: (s.leader, s.isr, s.leader_epoch) for p, s in topic.partitions.items()} == {0: (-1, (), -1), 1: (-1, (), -1)}
    cluster.admin.create_partitions("orders", 3)
    assert store.exists("/brokers/topics/orders/partitions") is None
    cluster.controller.elect()  # the controller elects every partition, under its epoch
    for index, state in cluster.cache.topic("orders").partitions.items():
        written = zk.decode_leader_and_isr(store.get(zk.partition_state_path("orders", index))[0])
        assert (state.leader, written.leader, written.leader_epoch, written.controller_epoch) == (state.replicas[0], state.replicas[0], 0, 1)
    cluster.close()


def test_create_topic_waits_for_the_controllers_election_within_its_timeout(store):
    cluster = Cluster(store)
    for broker in BROKERS:
        cluster.zk.register_broker(broker, [zk.Endpoint("PLAINTEXT", "localhost", 9092 + broker)])
    error = kafka_error(cluster.admin.create_topic, "late", 1, 1, timeout_ms=20)
    assert error.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert cluster.cache.topic("late").partitions[0].leader == -1  # created all the same, not elected yet
    cluster.controller.elect()
    assert cluster.cache.topic("late").partitions[0].leader != -1
    topic = cluster.admin.create_topic("prompt", 2, 1, timeout_ms=60_000)
    assert all(state.leader != -1 for state in topic.partitions.values())
    cluster.close()


def test_create_topic_writes_an_empty_config_znode(cluster, store):
    cluster.admin.create_topic("plain", 1, 1)
    assert store.get("/config/topics/plain")[0] == b'{"version":1,"config":{}}'


def test_minus_one_means_the_broker_defaults(store):
    cluster = Cluster(store, default_num_partitions=4, default_replication_factor=2)
    topic = cluster.admin.create_topic("t", -1, -1, live_brokers=[1, 2, 3])
    assert len(topic.partitions) == 4
    assert all(len(state.replicas) == 2 for state in topic.partitions.values())


def test_a_thousand_partitions_are_one_file_write(cluster, monkeypatch):
    writes = []
    real_write = embedded.write_atomically

    def counting(path, data):
        writes.append(path)
        real_write(path, data)

    monkeypatch.setattr(embedded, "write_atomically", counting)
    topic = cluster.admin.create_topic("big", 1000, 3)
    assert len(writes) == 2  # the admin path's assignment, then the controller's states: one write each
    assert len(cluster.cache.topic("big").partitions) == 1000 == len(topic.partitions)


def test_validate_only_writes_nothing(cluster, store):
    topic = cluster.admin.create_topic("dry", 2, 1, validate_only=True)
    assert len(topic.partitions) == 2
    assert store.exists("/brokers/topics/dry") is None
    assert store.exists("/config/topics/dry") is None
    assert cluster.cache.topic("dry") is None


def test_manual_assignment(cluster):
    topic = cluster.admin.create_topic("manual", assignment={0: [2, 1], 1: [1, 0]})
    assert topic.partitions[0].replicas == (2, 1) and topic.partitions[0].leader == 2
    assert topic.partitions[1].replicas == (1, 0)


@pytest.mark.parametrize(
    ("kwargs", "code", "message"),
    [
        ({"name": "bad name"}, ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'bad name' contains"),
        (
            {"name": "__cluster_metadata"},
            ErrorCode.INVALID_REQUEST,
            "Creation of internal topic __cluster_metadata is prohibited.",
        ),
        (
            {"replication_factor": 0},
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        (
            {"replication_factor": -2},
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1",
        ),
        (
            {"num_partitions": 0},
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        (
            {"num_partitions": -5},
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        (
            {"replication_factor": 4},
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
            "because only 3 broker(s) are registered.",
        ),
        (
            {"live_brokers": []},
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 1 time(s): All brokers are currently fenced.",
        ),
        (
            {"configs": {"a": None, "b": "1", "c": None}},
            ErrorCode.INVALID_CONFIG,
            "Null value not supported for topic configs: a,c",
        ),
        (
            {"assignment": {0: [1]}, "replication_factor": 1},
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        ),
        (
            {"assignment": {0: [1]}, "num_partitions": 1},
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ),
        (
            {"assignment": {0: []}},
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        ),
        (
            {"assignment": {0: [1, 1]}},
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes the broker 1 more than once.",
        ),
        (
            {"assignment": {0: [1, 9]}},
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 9, but no such broker is registered.",
        ),
        (
            {"assignment": {0: [1, 2], 1: [0]}},
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent "
            "with previous partitions, which have 2 replica(s).",
        ),
        (
            {"assignment": {0: [1], 2: [0]}},
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        ),
    ],
)
def test_create_topic_refusals(cluster, store, kwargs, code, message):
    arguments = {"name": "t", "num_partitions": 1, "replication_factor": 1}
    if "assignment" in kwargs:
        arguments.update(num_partitions=-1, replication_factor=-1)
    arguments.update(kwargs)
    error = kafka_error(cluster.admin.create_topic, **arguments)
    assert error.error_code is code
    assert str(error).startswith(message)
    assert store.get_children("/brokers/topics") == []


def test_existing_topic(cluster):
    cluster.admin.create_topic("orders", 1, 1)
    error = kafka_error(cluster.admin.create_topic, "orders", 1, 1)
    assert (error.error_code, str(error)) == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'orders' already exists.")


def test_colliding_topic(cluster):
    cluster.admin.create_topic("a_b", 1, 1)
    error = kafka_error(cluster.admin.create_topic, "a.b", 1, 1)
    assert error.error_code is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert str(error) == "Topic 'a.b' collides with existing topic: a_b"


def test_config_validator_can_refuse(cluster, store):
    def validator(configs):
        if "bogus" in configs:
            raise KafkaError(ErrorCode.INVALID_CONFIG, "Unknown topic config name: bogus")

    error = kafka_error(cluster.admin.create_topic, "t", 1, 1, configs={"bogus": "1"}, config_validator=validator)
    assert str(error) == "Unknown topic config name: bogus"
    assert store.exists("/brokers/topics/t") is None
    cluster.admin.create_topic("t", 1, 1, configs={"retention.ms": "5"}, config_validator=validator)


# -- delete topics --------------------------------------------------------------------------------


def test_delete_topic_by_name_removes_every_znode(cluster, store):
    cluster.admin.create_topic("orders", 3, 2, configs={"retention.ms": "1"})
    deleted = cluster.admin.delete_topic("orders")
    assert deleted.name == "orders"
    assert store.exists("/brokers/topics/orders") is None
    assert store.exists("/config/topics/orders") is None
    assert cluster.cache.topic("orders") is None and cluster.cache.topic_by_id(deleted.topic_id) is None


def test_delete_topic_by_id(cluster):
    topic = cluster.admin.create_topic("orders", 1, 1)
    assert cluster.admin.delete_topic(topic_id=topic.topic_id).name == "orders"
    assert cluster.cache.topics() == {}


def test_internal_topics_can_be_deleted_as_on_a_kafka_broker(cluster):
    cluster.admin.create_topic("__consumer_offsets", 1, 1)
    cluster.admin.delete_topic("__consumer_offsets")
    assert cluster.cache.topic("__consumer_offsets") is None


@pytest.mark.parametrize(
    ("kwargs", "code", "message"),
    [
        ({"name": "missing"}, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message),
        ({"topic_id": uuid.UUID(int=99)}, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_ID.message),
        (
            {"topic_id": uuid.UUID(int=0)},
            ErrorCode.INVALID_REQUEST,
            "Attempt to find topic with invalid topicId AAAAAAAAAAAAAAAAAAAAAA",
        ),
        ({}, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."),
        (
            {"name": "x", "topic_id": uuid.UUID(int=5)},
            ErrorCode.INVALID_REQUEST,
            "You may not specify both topic name and topic id.",
        ),
    ],
)
def test_delete_topic_refusals(cluster, kwargs, code, message):
    error = kafka_error(cluster.admin.delete_topic, **kwargs)
    assert (error.error_code, str(error)) == (code, message)


# -- create partitions ----------------------------------------------------------------------------


def test_create_partitions_grows_the_topic(cluster, store):
    before = cluster.admin.create_topic("orders", 2, 2)
    grown = cluster.admin.create_partitions("orders", 5)
    assert sorted(grown.partitions) == [0, 1, 2, 3, 4]
    assert grown.partitions[0] == before.partitions[0]
    for partition in (2, 3, 4):
        state = grown.partitions[partition]
        assert len(set(state.replicas)) == 2 and state.leader == state.replicas[0]
        assert store.exists(zk.partition_state_path("orders", partition)) is not None
    assignment = zk.decode_topic_assignment(store.get("/brokers/topics/orders")[0])
    assert sorted(assignment.partitions) == [0, 1, 2, 3, 4]
    assert assignment.topic_id == before.topic_id
    assert cluster.cache.topic("orders") == grown


def test_new_partitions_continue_round_robin_from_partition_0(cluster):
    cluster.admin.create_topic("t", assignment={0: [1, 2]})
    grown = cluster.admin.create_partitions("t", 4)
    # ZooKeeper-mode placement starts at partition 0's leader, continuing the partition count.
    assert [grown.partitions[p].replicas for p in (1, 2, 3)] == [(2, 1), (0, 2), (1, 2)]


def test_create_partitions_with_assignment(cluster):
    cluster.admin.create_topic("t", 1, 2)
    grown = cluster.admin.create_partitions("t", 3, [[2, 0], [0, 1]])
    assert grown.partitions[1].replicas == (2, 0) and grown.partitions[2].replicas == (0, 1)


def test_create_partitions_validate_only(cluster, store):
    cluster.admin.create_topic("t", 1, 1)
    grown = cluster.admin.create_partitions("t", 3, validate_only=True)
    assert len(grown.partitions) == 3
    assert len(cluster.cache.topic("t").partitions) == 1
    assert store.exists(zk.partition_state_path("t", 1)) is None


@pytest.mark.parametrize(
    ("total", "assignment", "code", "message"),
    [
        (
            1, None,
            ErrorCode.INVALID_PARTITIONS,
            "Topic currently has 2 partitions, which is higher than the requested 1.",
        ),
        (2, None, ErrorCode.INVALID_PARTITIONS, "Topic already has 2 partitions."),
        (
            4, [[0, 1]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Increasing the number of partitions by 2 but 1 assignments provided.",
        ),
        (3, [[0, 7]], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s) in replica assignment: 7."),
        (
            3, [[0, 0]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Duplicate brokers not allowed in replica assignment: 0, 0 for partition id 2.",
        ),
        (3, [[]], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Cannot have replication factor of 0 for partition id 2."),
        (
            4,
            [[0, 1], [0]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Inconsistent replication factor between partitions, partition 0 has 2 while partitions [3] have "
            "replication factors [1], respectively.",
        ),
    ],
)
def test_create_partitions_refusals(cluster, total, assignment, code, message):
    cluster.admin.create_topic("t", 2, 2)
    error = kafka_error(cluster.admin.create_partitions, "t", total, assignment)
    assert (error.error_code, str(error)) == (code, message)
    assert len(cluster.cache.topic("t").partitions) == 2


def test_create_partitions_of_unknown_topic(cluster):
    error = kafka_error(cluster.admin.create_partitions, "nope", 3)
    assert (error.error_code, str(error)) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")


def test_create_partitions_needs_enough_brokers(cluster):
    cluster.admin.create_topic("t", 1, 3)
    error = kafka_error(cluster.admin.create_partitions, "t", 2, live_brokers=[0, 1])
    assert str(error) == "Replication factor: 3 larger than available brokers: 2."



# -- counts a request drives allocations with ----------------------------------------------------


@pytest.fixture
def no_placement(monkeypatch):
    """Placement must not run for a refused count: a huge one would allocate until the broker dies."""

    def refuse(brokers, num_partitions, *args, **kwargs):
        raise AssertionError(f"placed {num_partitions} partitions")

    monkeypatch.setattr(admin_zk_client, "assign_replicas_to_brokers", refuse)


@pytest.mark.parametrize("count", [10_001, 2**31 - 1])
def test_more_partitions_than_kafka_creates_per_request_are_refused_before_placement(cluster, store, no_placement, count):
    error = kafka_error(cluster.admin.create_topic, "wide", count, 1)
    assert error.error_code is ErrorCode.POLICY_VIOLATION
    assert str(error).startswith("Excessively large number of partitions per request")
    assert store.exists(zk.topic_path("wide")) is None


def test_a_manual_assignment_of_more_partitions_than_kafka_creates_per_request_is_refused(cluster, store):
    error = kafka_error(cluster.admin.create_topic, "wide", assignment={p: [0] for p in range(10_001)})
    assert error.error_code is ErrorCode.POLICY_VIOLATION
    assert store.exists(zk.topic_path("wide")) is None


def test_growing_by_more_partitions_than_kafka_creates_per_request_is_refused_before_placement(cluster, monkeypatch):
    cluster.admin.create_topic("t", 1, 1)
    monkeypatch.setattr(admin_zk_client, "assign_replicas_to_brokers", lambda *a, **k: pytest.fail("placed"))
    error = kafka_error(cluster.admin.create_partitions, "t", 2**31 - 1)
    assert error.error_code is ErrorCode.POLICY_VIOLATION
    assert "2147483646 new partitions" in str(error)
    assert len(cluster.cache.topic("t").partitions) == 1


def test_ten_thousand_partitions_are_within_the_per_request_limit(cluster):
    assert len(cluster.admin.create_topic("t", 10_000, 1, validate_only=True).partitions) == 10_000


def test_the_new_partitions_check_can_refuse_before_anything_is_written(store):
    seen = []

    def check(replicas):
        seen.append(dict(replicas))
        if len(replicas) > 2:
            raise KafkaError(ErrorCode.POLICY_VIOLATION, "too many open files")

    metadata = Cluster(store, rng=random.Random(7), new_partitions_check=check)
    metadata.zk.register_broker(0, [zk.Endpoint("PLAINTEXT", "localhost", 9092)])
    metadata.controller.elect()
    try:
        assert kafka_error(metadata.admin.create_topic, "big", 3, 1).error_code is ErrorCode.POLICY_VIOLATION
        assert store.exists(zk.topic_path("big")) is None
        metadata.admin.create_topic("small", 1, 1)
        assert kafka_error(metadata.admin.create_partitions, "small", 4).error_code is ErrorCode.POLICY_VIOLATION
        assert len(metadata.cache.topic("small").partitions) == 1
        assert store.exists(zk.partition_state_path("small", 1)) is None
        assert seen == [{0: (0,), 1: (0,), 2: (0,)}, {0: (0,)}, {1: (0,), 2: (0,), 3: (0,)}]
    finally:
        metadata.close()

def test_create_partitions_during_reassignment(cluster, store):
    topic = cluster.admin.create_topic("t", 1, 1)
    moving = zk.TopicAssignment({0: (0, 1)}, topic.topic_id, adding_replicas={0: (1,)})
    store.set("/brokers/topics/t", zk.encode_topic_assignment(moving))
    assert cluster.cache.topic("t").partitions[0].adding_replicas == (1,)
    error = kafka_error(cluster.admin.create_partitions, "t", 2)
    assert error.error_code is ErrorCode.REASSIGNMENT_IN_PROGRESS
    assert str(error) == "A partition reassignment is in progress for the topic 't'."


# -- configs --------------------------------------------------------------------------------------


def test_set_topic_configs_writes_config_and_change_notification(cluster, store):
    cluster.admin.create_topic("t", 1, 1, configs={"retention.ms": "1"})
    updated = cluster.admin.set_topic_configs("t", {"cleanup.policy": "compact"})
    assert updated.configs == {"cleanup.policy": "compact"} == cluster.cache.topic("t").configs
    assert zk.decode_entity_config(store.get("/config/topics/t")[0]) == {"cleanup.policy": "compact"}
    [change] = store.get_children("/config/changes")
    assert re.fullmatch(r"config_change_\d{10}", change)
    assert zk.decode_config_change(store.get(f"/config/changes/{change}")[0]) == "topics/t"


def test_set_topic_configs_of_unknown_topic(cluster):
    error = kafka_error(cluster.admin.set_topic_configs, "nope", {})
    assert (error.error_code, str(error)) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")


def test_broker_configs_per_broker_and_default(cluster, store):
    cluster.admin.set_broker_configs(None, {"log.retention.ms": "100"})
    cluster.admin.set_broker_configs(1, {"log.cleaner.threads": "2"})
    assert cluster.zk.broker_configs(None) == {"log.retention.ms": "100"}
    assert cluster.zk.broker_configs(1) == {"log.cleaner.threads": "2"}
    assert cluster.zk.broker_configs(2) == {}
    assert store.exists("/config/brokers/<default>") is not None
    changes = store.get_children("/config/changes")
    paths = sorted(zk.decode_config_change(store.get(f"/config/changes/{change}")[0]) for change in changes)
    assert paths == ["brokers/1", "brokers/<default>"]


def test_broker_config_listeners_hear_changes_written_by_anyone(cluster, store):
    """What a broker needs to follow the dynamic defaults another broker or a tool wrote (the
    brokers' unclean.leader.election.enable going true has the controller elect again)."""
    heard: list[dict] = []
    cluster.cache.on_broker_config_change(lambda: heard.append(cluster.cache.broker_configs(None)))
    cluster.zk.write_entity_config(zk.CONFIG_TYPE_BROKERS, "<default>", {"unclean.leader.election.enable": "true"})
    assert heard == [{"unclean.leader.election.enable": "true"}]
    cluster.zk.write_entity_config(zk.CONFIG_TYPE_BROKERS, "<default>", {"unclean.leader.election.enable": "true"})
    assert len(heard) == 1  # unchanged: not heard again


def test_expired_config_change_notifications_are_purged(cluster, store, monkeypatch):
    old = store.create(zk.config_change_path(), zk.encode_config_change("topics/x"), sequence=True)
    sixteen_minutes_later = store.get(old)[1].ctime + 16 * 60 * 1000
    monkeypatch.setattr(zk_client, "now_ms", lambda: sixteen_minutes_later)
    cluster.admin.set_broker_configs(0, {"a": "b"})
    children = store.get_children("/config/changes")
    assert old.rsplit("/", 1)[1] not in children and len(children) == 1


# -- partition state ------------------------------------------------------------------------------


def test_leader_change_bumps_leader_and_partition_epochs(cluster, store):
    cluster.admin.create_topic("t", assignment={0: [0, 1, 2]})
    cluster.controller.update_partition_state("t", 0, leader=1, isr=[1, 2])
    state = cluster.cache.topic("t").partitions[0]
    assert (state.leader, state.isr, state.leader_epoch, state.partition_epoch) == (1, (1, 2), 1, 1)
    written = zk.decode_leader_and_isr(store.get(zk.partition_state_path("t", 0))[0])
    assert written == zk.LeaderAndIsr(1, 1, (1, 2), controller_epoch=1)
    written, partition_epoch = cluster.controller.update_partition_state("t", 0, isr=[1, 2, 0])
    state = cluster.cache.topic("t").partitions[0]
    assert (state.leader_epoch, state.partition_epoch, state.isr) == (1, 2, (1, 2, 0))
    assert (written.leader_epoch, partition_epoch, written.isr) == (1, 2, (1, 2, 0))


def test_stale_partition_epoch_is_refused(cluster):
    cluster.admin.create_topic("t", 1, 1)
    cluster.controller.update_partition_state("t", 0, isr=[0], expected_partition_epoch=0)
    error = kafka_error(cluster.controller.update_partition_state, "t", 0, isr=[0], expected_partition_epoch=0)
    assert error.error_code is ErrorCode.INVALID_UPDATE_VERSION


def test_update_of_unknown_partition(cluster):
    error = kafka_error(cluster.controller.update_partition_state, "nope", 0, leader=1)
    assert error.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- cache, watch, listeners ----------------------------------------------------------------------


def test_listeners_see_create_update_delete(cluster):
    changes = []
    remove = cluster.cache.on_topic_change(changes.append)
    topic = cluster.admin.create_topic("t", 1, 1)
    cluster.controller.update_partition_state("t", 0, isr=[])
    cluster.admin.delete_topic("t")
    remove()
    cluster.admin.create_topic("u", 1, 1)
    assert [(c.kind, c.name) for c in changes] == [
        (TopicChangeKind.CREATED, "t"),
        (TopicChangeKind.UPDATED, "t"),  # the controller elected the new partition's leader
        (TopicChangeKind.UPDATED, "t"),
        (TopicChangeKind.DELETED, "t"),
    ]
    assert changes[0].topic.partitions[0].leader == -1  # the admin path writes the assignment alone
    assert changes[1].topic == topic and changes[3].previous.partitions[0].isr == ()


def test_another_broker_on_the_same_tree_sees_changes(cluster, store):
    other = Cluster(store, broker_id=1)
    seen = []
    other.cache.on_topic_change(lambda change: seen.append((change.kind, change.name)))
    topic = cluster.admin.create_topic("t", 2, 1)
    assert other.cache.topic("t") == topic
    cluster.admin.set_topic_configs("t", {"retention.ms": "9"})
    assert other.cache.topic("t").configs == {"retention.ms": "9"}
    cluster.admin.delete_topic("t")
    assert other.cache.topic("t") is None
    assert seen == [(TopicChangeKind.CREATED, "t"), (TopicChangeKind.UPDATED, "t"), (TopicChangeKind.DELETED, "t")]


def test_cache_is_rebuilt_from_the_file_at_start(tmp_path):
    with EmbeddedStore(tmp_path) as store:
        cluster = Cluster(store)
        cluster.admin.create_topic("a", 3, 1, live_brokers=[0])
        cluster.admin.create_topic("b", 1, 1, configs={"x": "y"}, live_brokers=[0])
        before = cluster.cache.topics()
    with EmbeddedStore(tmp_path) as store:
        cluster = Cluster(store)
        assert cluster.cache.topics() == before


def test_controller_completes_a_topic_written_by_a_zookeeper_era_tool(cluster, store):
    # kafka-topics.sh --zookeeper writes the config and the assignment, nothing else.
    store.multi(
        [
            CreateOp("/config/topics/legacy", zk.encode_entity_config({})),
            CreateOp("/brokers/topics/legacy", b'{"version":1,"partitions":{"0":[2,1],"1":[9,0]}}'),
        ]
    )
    topic = cluster.cache.topic("legacy")
    assert topic.topic_id != ZERO_UUID
    assert zk.decode_topic_assignment(store.get("/brokers/topics/legacy")[0]).topic_id == topic.topic_id
    assert (topic.partitions[0].leader, topic.partitions[0].isr) == (2, (2, 1))
    # Broker 9 is not live: partition 1 leads on the live replica, alone in sync.
    assert (topic.partitions[1].leader, topic.partitions[1].isr) == (0, (0,))
    assert store.exists(zk.partition_state_path("legacy", 1)) is not None


def test_controller_carries_out_a_deletion_marked_by_a_tool(cluster, store):
    cluster.admin.create_topic("doomed", 2, 1)
    store.create("/admin/delete_topics/doomed")
    assert cluster.cache.topic("doomed") is None
    assert store.exists("/brokers/topics/doomed") is None
    assert store.get_children("/admin/delete_topics") == []


def test_topic_without_state_reads_as_leaderless_when_not_controller(store):
    cluster = Cluster(store)
    store.create("/brokers/topics/raw", b'{"version":1,"partitions":{"0":[1]}}')
    state = cluster.cache.topic("raw").partitions[0]
    assert (state.leader, state.isr, state.leader_epoch, state.partition_epoch) == (-1, (), -1, -1)
    assert cluster.cache.topic("raw").topic_id == ZERO_UUID


def test_cluster_mode_cache_names_brokers_and_controller_from_the_tree_until_the_controller_speaks(store):
    """A broker in cluster mode takes its brokers and controller from UpdateMetadata, as Kafka's;
    before the first one arrives it answers with what the tree holds, not with an empty cluster."""
    zk_client = KafkaZkClient(store)
    zk_client.create_top_level_paths()
    cache = MetadataCache(zk_client, fed_by_controller=True)
    cache.start()
    try:
        assert cache.alive_brokers() == {} and cache.controller_id() is None
        zk_client.register_broker(0, [zk.Endpoint("PLAINTEXT", "localhost", 9092)])
        zk_client.register_controller_and_increment_epoch(0)
        assert list(cache.alive_brokers()) == [0] and cache.controller_id() == 0
        # The controller's word replaces the tree's from then on.
        registration = zk_client.broker_registration(0)
        cache.update_metadata(0, {0: registration, 5: registration}, {})
        zk_client.register_broker(1, [zk.Endpoint("PLAINTEXT", "localhost", 9093)])
        assert list(cache.alive_brokers()) == [0, 5] and cache.controller_id() == 0
    finally:
        cache.close()
