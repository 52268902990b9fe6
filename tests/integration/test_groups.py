"""The group coordinator over the wire: FindCoordinator, the join/sync/heartbeat/leave flow, offsets,
and the admin group APIs, against a real broker process, in several protocol versions."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
import threading
import time
import uuid

import pytest

from kcli.protocol import coordinator_records as cr
from kcli.storage.records import NewRecord, build_batch
from tests.broker_process import BrokerProcess
from tests.integration.conftest import start_broker
from tests.wire_client import WireClient, code

pytestmark = pytest.mark.timeout(120)

BROKER_OVERRIDES = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "5",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "100",
    "offset.metadata.max.bytes": "10",
}

NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
OFFSET_METADATA_TOO_LARGE = 12
UNKNOWN_TOPIC_OR_PARTITION = 3
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNKNOWN_TOPIC_ID = 100


def subscription(*topics: str) -> bytes:
    return cr.encode_consumer_protocol_subscription({"Topics": list(topics), "UserData": None, "OwnedPartitions": []}, version=1)


def join(client: WireClient, group: str, member_id: str = "", *, version: int = 5, session: int = 10000, instance=None,
         protocols=(("range", None),), protocol_type: str = "consumer", topics=("t",)):
    fields = {
        "group_id": group,
        "session_timeout": session,
        "rebalance_timeout": 5000,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocols": [{"name": name, "metadata": subscription(*topics) if metadata is None else metadata} for name, metadata in protocols],
    }
    return client.call(11, version, fields)


def join_new(client: WireClient, group: str, **kwargs):
    first = join(client, group, **kwargs)
    assert code(first.error_code) == MEMBER_ID_REQUIRED and first.member_id
    return join(client, group, first.member_id, **kwargs)


def sync(client: WireClient, group: str, generation: int, member_id: str, assignments=None, *, version: int = 3, **extra):
    fields = {"group_id": group, "generation_id": generation, "member_id": member_id,
              "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()], **extra}
    return client.call(14, version, fields)


def heartbeat(client: WireClient, group: str, generation: int, member_id: str, *, version: int = 4, instance=None) -> int:
    fields = {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": instance}
    return code(client.call(12, version, fields).error_code)


def commit(client: WireClient, group: str, offsets: dict, *, version: int = 8, generation: int = -1, member_id: str = "", **extra):
    topics = {}
    for (topic, partition), (offset, metadata) in offsets.items():
        topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": 4, "committed_metadata": metadata})
    fields = {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
              "retention_time": -1, "topics": [{"name": t, "partitions": p} for t, p in topics.items()], **extra}
    response = client.call(8, version, fields)
    return {(t.name, p.partition_index): code(p.error_code) for t in response.topics for p in t.partitions}


def fetch(client: WireClient, group: str, topics: dict | None, *, version: int = 7):
    fields = {"group_id": group, "require_stable": True,
              "topics": None if topics is None else [{"name": t, "partition_indexes": p} for t, p in topics.items()]}
    response = client.call(9, version, fields)
    offsets = {(t.name, p.partition_index): (p.committed_offset, p.metadata, code(p.error_code)) for t in response.topics for p in t.partitions}
    return code(getattr(response, "error_code", 0)), offsets


def fetch_once_loaded(client: WireClient, group: str, topics: dict | None):
    """``fetch`` as a client does it after a restart: the broker replays __consumer_offsets off the
    event loop and answers COORDINATOR_LOAD_IN_PROGRESS until it is done; clients retry."""
    deadline = time.monotonic() + 30
    while True:
        error, offsets = fetch(client, group, topics)
        if error != COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            return error, offsets
        time.sleep(0.05)


def find_coordinator(client: WireClient, group: str) -> None:
    """Clients look the coordinator up first; the first lookup creates __consumer_offsets."""
    assert code(client.call(10, 3, {"key": group, "key_type": 0}).error_code) == NONE


@pytest.fixture
def group(client) -> str:
    name = f"group-{uuid.uuid4().hex[:8]}"
    find_coordinator(client, name)
    return name


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator_answers_this_broker_for_groups(client, broker, version, group):
    if version >= 4:
        response = client.call(10, version, {"key_type": 0, "coordinator_keys": [group, group + "-b"]})
        assert [(c.key, code(c.error_code), c.port) for c in response.coordinators] == [(group, NONE, broker.port), (group + "-b", NONE, broker.port)]
    else:
        response = client.call(10, version, {"key": group, "key_type": 0})
        assert (code(response.error_code), response.node_id, response.port) == (NONE, 0, broker.port)


def test_find_coordinator_creates_a_compacted_offsets_topic(client):
    client.call(10, 3, {"key": "any", "key_type": 0})
    response = client.call(3, 12, {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": False})
    topic = response.topics[0]
    assert code(topic.error_code) == NONE and topic.is_internal and len(topic.partitions) == 5
    configs = client.call(32, 4, {"resources": [{"resource_type": 2, "resource_name": "__consumer_offsets", "configuration_keys": None}]})
    values = {c.name: c.value for c in configs.results[0].configs}
    assert values["cleanup.policy"] == "compact" and values["compression.type"] == "producer"
    assert values["segment.bytes"] == "104857600"


def test_a_broker_started_without_a_properties_file_serves_groups(tmp_path):
    """No file means Kafka's stock server.properties: the offsets topic gets one replica."""
    process = BrokerProcess(tmp_path / "plain").start()
    try:
        with WireClient("127.0.0.1", process.port) as connection:
            response = connection.call(10, 3, {"key": "g", "key_type": 0})
            assert code(response.error_code) == NONE and response.node_id == 0
    finally:
        process.stop()


def test_offsets_topic_is_not_created_with_too_few_brokers(tmp_path):
    process = start_broker(tmp_path, {"offsets.topic.replication.factor": "3"})
    try:
        with WireClient("127.0.0.1", process.port) as connection:
            for _ in range(2):
                response = connection.call(10, 3, {"key": "g", "key_type": 0})
                assert code(response.error_code) == COORDINATOR_NOT_AVAILABLE
            metadata = connection.call(3, 12, {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": False})
            assert code(metadata.topics[0].error_code) == UNKNOWN_TOPIC_OR_PARTITION
        assert sum("Could not create the offsets topic" in line for line in process.log_lines) == 1
    finally:
        process.stop()


def test_join_sync_heartbeat_leave(client, group):
    joined = join_new(client, group)
    member = joined.member_id
    assert (code(joined.error_code), joined.generation_id, joined.leader, joined.protocol_name) == (NONE, 1, member, "range")
    assert [(m.member_id, m.metadata) for m in joined.members] == [(member, subscription("t"))]
    synced = sync(client, group, 1, member, {member: b"assignment"}, version=5, protocol_type="consumer", protocol_name="range")
    assert (code(synced.error_code), synced.assignment, synced.protocol_type, synced.protocol_name) == (NONE, b"assignment", "consumer", "range")
    assert heartbeat(client, group, 1, member) == NONE
    assert heartbeat(client, group, 2, member) == ILLEGAL_GENERATION
    assert heartbeat(client, group, 1, "nobody") == UNKNOWN_MEMBER_ID
    left = client.call(13, 5, {"group_id": group, "members": [{"member_id": member, "reason": "done"}, {"member_id": "nobody"}]})
    assert [code(m.error_code) for m in left.members] == [NONE, UNKNOWN_MEMBER_ID]
    described = client.call(15, 5, {"groups": [group]}).groups[0]
    assert (described.group_state, len(described.members)) == ("Empty", 0)


@pytest.mark.parametrize("version", [0, 1, 3, 4, 6, 7, 8])
def test_join_versions_before_and_after_member_id_required(client, group, version):
    response = join(client, group, version=version)
    if version >= 4:
        assert code(response.error_code) == MEMBER_ID_REQUIRED
        response = join(client, group, response.member_id, version=version)
    assert (code(response.error_code), response.generation_id, response.leader) == (NONE, 1, response.member_id)
    if version >= 7:
        assert response.protocol_type == "consumer"
    left = client.call(13, 1, {"group_id": group, "member_id": response.member_id})
    assert code(left.error_code) == NONE


def test_two_members_join_concurrently(broker, group):
    """Two members behave like consumers: join, sync, heartbeat, rejoin on REBALANCE_IN_PROGRESS,
    until both hold the assignment of the same generation from the same leader."""
    synced: dict[int, tuple[int, str, bytes]] = {}
    lock = threading.Lock()

    def both_in(generation: int) -> bool:
        with lock:
            return len(synced) == 2 and {g for g, _, _ in synced.values()} == {generation}

    def member(index: int) -> None:
        with WireClient("127.0.0.1", broker.port, client_id=f"member-{index}") as connection:
            member_id = ""
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                joined = join(connection, group, member_id)
                member_id = joined.member_id
                if code(joined.error_code) == MEMBER_ID_REQUIRED:
                    continue
                assert code(joined.error_code) == NONE
                assignments = {m.member_id: f"{m.member_id}@{joined.generation_id}".encode() for m in joined.members}
                answer = sync(connection, group, joined.generation_id, member_id, assignments)
                if code(answer.error_code) == REBALANCE_IN_PROGRESS:
                    continue
                assert code(answer.error_code) == NONE
                with lock:
                    synced[index] = (joined.generation_id, joined.leader, answer.assignment)
                while heartbeat(connection, group, joined.generation_id, member_id) == NONE:
                    if both_in(joined.generation_id):
                        return
                    time.sleep(0.05)
            raise AssertionError("the members did not settle in one generation")

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(member, i) for i in range(2)]:
            future.result(timeout=60)
    (generation, leader, first), (_, other_leader, second) = synced.values()
    assert leader == other_leader
    members = sorted(a.decode().split("@")[0] for a in (first, second))
    assert len(set(members)) == 2 and leader in members
    assert {a.decode().split("@")[1] for a in (first, second)} == {str(generation)}


def test_join_errors(client, group):
    assert code(join(client, group, session=50).error_code) == INVALID_SESSION_TIMEOUT
    assert code(join(client, "").error_code) == INVALID_GROUP_ID
    assert code(join(client, group, "unknown-member").error_code) == UNKNOWN_MEMBER_ID
    joined = join_new(client, group)
    assert code(join(client, group, protocol_type="connect").error_code) == INCONSISTENT_GROUP_PROTOCOL
    assert code(join(client, group, protocols=(("roundrobin", b""),)).error_code) == INCONSISTENT_GROUP_PROTOCOL
    missing = sync(client, group, joined.generation_id, joined.member_id, version=5, protocol_type=None, protocol_name="range")
    assert code(missing.error_code) == INCONSISTENT_GROUP_PROTOCOL
    assert code(sync(client, group, 7, joined.member_id).error_code) == ILLEGAL_GENERATION


def test_static_member_rejoins_without_rebalance(client, group):
    first = join(client, group, instance="instance-1", version=9)
    assert code(first.error_code) == NONE
    sync(client, group, 1, first.member_id, {first.member_id: b"mine"}, instance="instance-1")
    again = join(client, group, instance="instance-1", version=9)
    assert (code(again.error_code), again.generation_id, again.skip_assignment) == (NONE, 1, True)
    assert heartbeat(client, group, 1, first.member_id, instance="instance-1") == FENCED_INSTANCE_ID
    assert sync(client, group, 1, again.member_id, instance="instance-1").assignment == b"mine"
    left = client.call(13, 4, {"group_id": group, "members": [{"member_id": "", "group_instance_id": "instance-1"}]})
    assert [code(m.error_code) for m in left.members] == [NONE]


def test_session_timeout_removes_a_silent_member(client, group):
    joined = join_new(client, group, session=200)
    sync(client, group, 1, joined.member_id)
    deadline = time.monotonic() + 10
    while heartbeat(client, group, 1, joined.member_id) == NONE:
        assert time.monotonic() < deadline, "the member was never removed"
        time.sleep(0.4)  # longer than the session timeout: the heartbeat comes too late
    assert heartbeat(client, group, 1, joined.member_id) == UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("version", [2, 5, 7, 8, 9])
def test_offset_commit_and_fetch_versions(client, new_topic, group, version):
    topic = new_topic()
    client.create_topic(topic, 2)
    result = commit(client, group, {(topic, 0): (10, "m"), (topic, 1): (20, None), (topic, 5): (1, "x"), ("no-such-topic", 0): (1, "")}, version=version)
    assert result == {(topic, 0): NONE, (topic, 1): NONE, (topic, 5): UNKNOWN_TOPIC_OR_PARTITION, ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION}
    too_large = commit(client, group, {(topic, 0): (11, "x" * 11)}, version=version)
    assert too_large == {(topic, 0): OFFSET_METADATA_TOO_LARGE}
    error, offsets = fetch(client, group, {topic: [0, 1, 2]}, version=min(version, 7))
    assert error == NONE
    assert offsets == {(topic, 0): (10, "m", NONE), (topic, 1): (20, "", NONE), (topic, 2): (-1, "", NONE)}
    assert fetch(client, group, None)[1] == {(topic, 0): (10, "m", NONE), (topic, 1): (20, "", NONE)}


def test_offset_fetch_v1_and_v8_and_v10(client, new_topic, group):
    topic = new_topic()
    info = client.create_topic(topic, 1)
    commit(client, group, {(topic, 0): (5, "a")})
    response = client.call(9, 1, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]})
    assert [(p.committed_offset, p.metadata) for p in response.topics[0].partitions] == [(5, "a")]
    response = client.call(9, 8, {"groups": [
        {"group_id": group, "topics": None},
        {"group_id": group + "-other", "topics": [{"name": topic, "partition_indexes": [0]}]},
        {"group_id": "", "topics": None},
    ], "require_stable": False})
    answered = {g.group_id: [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch) for t in g.topics for p in t.partitions] for g in response.groups}
    assert answered == {group: [(topic, 0, 5, 4)], group + "-other": [(topic, 0, -1, -1)], "": []}
    assert [code(g.error_code) for g in response.groups] == [NONE, NONE, NONE]
    committed = client.call(8, 10, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
        {"topic_id": info.topic_id, "partitions": [{"partition_index": 0, "committed_offset": 9, "committed_leader_epoch": -1, "committed_metadata": "v10"}]},
        {"topic_id": uuid.uuid4(), "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}]},
    ]})
    assert [(t.topic_id, code(t.partitions[0].error_code)) for t in committed.topics] == [(info.topic_id, NONE), (committed.topics[1].topic_id, UNKNOWN_TOPIC_ID)]
    response = client.call(9, 10, {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}], "require_stable": False})
    assert [(t.topic_id, t.partitions[0].committed_offset, t.partitions[0].metadata) for t in response.groups[0].topics] == [(info.topic_id, 9, "v10")]


def test_member_commits_are_checked_against_the_generation(client, new_topic, group):
    topic = new_topic()
    client.create_topic(topic, 1)
    joined = join_new(client, group, topics=(topic,))
    assert commit(client, group, {(topic, 0): (1, "")}, generation=1, member_id=joined.member_id) == {(topic, 0): REBALANCE_IN_PROGRESS}
    sync(client, group, 1, joined.member_id)
    assert commit(client, group, {(topic, 0): (2, "")}, generation=1, member_id=joined.member_id) == {(topic, 0): NONE}
    assert commit(client, group, {(topic, 0): (3, "")}, generation=0, member_id=joined.member_id) == {(topic, 0): ILLEGAL_GENERATION}
    assert commit(client, group, {(topic, 0): (3, "")}) == {(topic, 0): UNKNOWN_MEMBER_ID}
    deleted = client.call(47, 0, {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}]})
    assert code(deleted.error_code) == NONE and code(deleted.topics[0].partitions[0].error_code) == GROUP_SUBSCRIBED_TO_TOPIC
    assert code(client.call(42, 2, {"groups_names": [group]}).results[0].error_code) == NON_EMPTY_GROUP


def test_list_describe_and_delete_groups(client, new_topic, group):
    topic = new_topic()
    client.create_topic(topic, 1)
    joined = join_new(client, group, topics=(topic,))
    sync(client, group, 1, joined.member_id, {joined.member_id: b"x"})
    simple = group + "-simple"
    commit(client, simple, {(topic, 0): (1, "")})
    listed = client.call(16, 4, {"states_filter": ["Stable"]})
    assert group in [g.group_id for g in listed.groups] and simple not in [g.group_id for g in listed.groups]
    listed = client.call(16, 5, {"states_filter": [], "types_filter": ["classic"]})
    states = {g.group_id: (g.group_state, g.protocol_type, g.group_type) for g in listed.groups}
    assert states[group] == ("Stable", "consumer", "classic") and states[simple] == ("Empty", "", "classic")
    assert client.call(16, 5, {"states_filter": [], "types_filter": ["consumer"]}).groups == ()
    assert group in [g.group_id for g in client.call(16, 0, {}).groups]

    described = client.call(15, 5, {"groups": [group, "no-such-group"], "include_authorized_operations": True}).groups
    assert (described[0].group_state, described[0].protocol_type, described[0].protocol_data) == ("Stable", "consumer", "range")
    member = described[0].members[0]
    assert (member.member_id, member.client_id, member.client_host, member.member_assignment) == (joined.member_id, "kcli-tests", "/127.0.0.1", b"x")
    assert described[0].authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)
    assert (described[1].group_state, code(described[1].error_code)) == ("Dead", NONE)
    missing = client.call(15, 6, {"groups": ["no-such-group"]}).groups[0]
    assert (code(missing.error_code), missing.error_message) == (GROUP_ID_NOT_FOUND, "Group no-such-group not found.")

    deleted = client.call(42, 2, {"groups_names": [simple, group, "no-such-group"]}).results
    assert {r.group_id: code(r.error_code) for r in deleted} == {simple: NONE, group: NON_EMPTY_GROUP, "no-such-group": GROUP_ID_NOT_FOUND}
    assert fetch(client, simple, {topic: [0]})[1] == {(topic, 0): (-1, "", NONE)}


def test_offsets_survive_a_crash_and_print_with_the_offsets_decoder(tmp_path, new_topic):
    process = start_broker(tmp_path, BROKER_OVERRIDES)
    try:
        topic = new_topic()
        with WireClient("127.0.0.1", process.port) as connection:
            connection.create_topic(topic, 1)
            assert code(join(connection, "durable").error_code) == 16  # NOT_COORDINATOR: no offsets topic yet
            find_coordinator(connection, "durable")
            joined = join_new(connection, "durable", topics=(topic,))
            sync(connection, "durable", 1, joined.member_id, {joined.member_id: b"a"})
            assert commit(connection, "durable", {(topic, 0): (77, "kept")}, generation=1, member_id=joined.member_id) == {(topic, 0): NONE}
        process.restart(crash=True)
        with WireClient("127.0.0.1", process.port) as connection:
            assert fetch_once_loaded(connection, "durable", {topic: [0]}) == (NONE, {(topic, 0): (77, "kept", NONE)})
            described = connection.call(15, 5, {"groups": ["durable"]}).groups[0]
            assert (described.group_state, [m.member_id for m in described.members]) == ("Stable", [joined.member_id])
        process.stop()
        from kcli.broker.groups.partitioner import partition_for

        segments = sorted((tmp_path / f"__consumer_offsets-{partition_for('durable', 5)}").glob("*.log"))
        result = subprocess.run([sys.executable, "-m", "kcli", "dump-log-segments", "--offsets-decoder", "--files", str(segments[0])],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        lines = [line for line in result.stdout.splitlines() if "| offset:" in line]
        assert any('key: {"type":"2","data":{"group":"durable"}}' in line and '"protocol":"range"' in line and '"generation":1' in line for line in lines), lines
        commit_line = next(line for line in lines if '"type":"1"' in line)
        assert f'"topic":"{topic}"' in commit_line and '"offset":77' in commit_line and '"metadata":"kept"' in commit_line
        assert 'payload: {"version":"3"' in commit_line
    finally:
        process.stop()


def test_clients_cannot_produce_to_the_offsets_topic(client, group):
    """Only the coordinator writes __consumer_offsets; Kafka answers a client's produce with INVALID_TOPIC_EXCEPTION."""
    response = client.produce("__consumer_offsets", 0, build_batch([NewRecord(key=b"k", value=b"v")]))
    assert code(response.error_code) == 17
    assert "internal topic" in response.error_message
