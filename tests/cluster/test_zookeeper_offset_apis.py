"""OffsetCommit v0-1 and OffsetFetch v0 on real kcli brokers: ZooKeeper mode and embedded mode.

Frames are built and read byte by byte from Kafka 3.9's message files (OffsetCommitRequest v0:
GroupId STRING, Topics ARRAY[Name STRING, Partitions ARRAY[PartitionIndex INT32, CommittedOffset
INT64, CommittedMetadata NULLABLE_STRING]]; v1 adds GenerationIdOrMemberEpoch INT32 and MemberId
STRING after GroupId and CommitTimestamp INT64 after CommittedOffset; OffsetCommitResponse v0-1:
Topics ARRAY[Name, Partitions ARRAY[PartitionIndex INT32, ErrorCode INT16]]; OffsetFetchRequest
v0: GroupId, Topics ARRAY[Name, PartitionIndexes ARRAY[INT32]]; OffsetFetchResponse v0: Topics
ARRAY[Name, Partitions ARRAY[PartitionIndex INT32, CommittedOffset INT64, Metadata
NULLABLE_STRING, ErrorCode INT16]]), request header v1. Behaviour from Kafka 3.9's KafkaApis:
v0 commits write ``/consumers/<g>/offsets/<t>/<p>``; v0 fetches read it (a missing node or an
unknown partition: -1 and UNKNOWN_TOPIC_OR_PARTITION); a broker without ZooKeeper fails v0 with
UNSUPPORTED_VERSION on every partition once any partition is known.
"""

from __future__ import annotations

import struct
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess
from tests.cluster.conftest import Cluster, wait_until
from tests.kafka_wire import array, i16, i32, i64, string
from tests.wire_client import WireClient

LOADING = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
NONE, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE, UNSUPPORTED_VERSION = 0, -1, 3, 12, 35


def frame(api_key: int, version: int, body: bytes, correlation_id: int = 7) -> bytes:
    header = i16(api_key) + i16(version) + i32(correlation_id) + string("v0-client")
    return i32(len(header) + len(body)) + header + body


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        text = self.data[self.at:self.at + size].decode()
        self.at += size
        return text


def call(client: WireClient, api_key: int, version: int, body: bytes) -> Reader:
    client.send_raw(frame(api_key, version, body))
    response = Reader(client.read_frame())
    assert response.take(">i") == 7  # correlation id; response header v0
    return response


def commit_v0(client: WireClient, group: str, topics: dict[str, list[tuple[int, int, str | None]]]) -> dict[tuple[str, int], int]:
    body = string(group) + array([
        string(t) + array([i32(p) + i64(o) + string(m) for p, o, m in parts]) for t, parts in topics.items()
    ])
    return _commit_answer(call(client, 8, 0, body))


def _commit_answer(r: Reader) -> dict[tuple[str, int], int]:
    answer = {}
    for _ in range(r.take(">i")):
        name = r.string()
        for _ in range(r.take(">i")):
            partition = r.take(">i")
            answer[(name, partition)] = r.take(">h")
    assert r.at == len(r.data)
    return answer


def fetch_v0(client: WireClient, group: str, topics: dict[str, list[int]]) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    body = string(group) + array([string(t) + array([i32(p) for p in parts]) for t, parts in topics.items()])
    r = call(client, 9, 0, body)
    answer = {}
    for _ in range(r.take(">i")):
        name = r.string()
        for _ in range(r.take(">i")):
            partition = r.take(">i")
            answer[(name, partition)] = (r.take(">q"), r.string(), r.take(">h"))
    assert r.at == len(r.data)
    return answer


def new_topic(bootstrap: str, partitions: int) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


@pytest.fixture(scope="module")
def zk_cluster(zookeeper_server, tmp_path_factory):
    made = Cluster(zookeeper_server, f"/v0-offsets-{uuid.uuid4().hex[:6]}", tmp_path_factory.mktemp("cluster"))
    try:
        made.start(1)
        yield made
    finally:
        made.stop()


def test_v0_commits_and_fetches_go_to_zookeeper(zk_cluster):
    topic = new_topic(zk_cluster.bootstrap, 2)
    group = f"old-consumer-{uuid.uuid4().hex[:6]}"
    broker = zk_cluster.brokers[0]
    zk = zk_cluster.zk()
    try:
        with WireClient("127.0.0.1", broker.port) as client:
            answer = commit_v0(client, group, {topic: [(0, 42, "kept?"), (1, 7, None), (9, 1, None)], "no-such-topic": [(0, 1, None)]})
            assert answer == {(topic, 0): NONE, (topic, 1): NONE, (topic, 9): UNKNOWN_TOPIC_OR_PARTITION,
                              ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION}
            assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"42"
            assert zk.get(f"/consumers/{group}/offsets/{topic}/1")[0] == b"7"
            assert fetch_v0(client, group, {topic: [0, 1, 9], "no-such-topic": [0]}) == {
                (topic, 0): (42, "", NONE),  # ZooKeeper keeps no metadata
                (topic, 1): (7, "", NONE),
                (topic, 9): (-1, "", UNKNOWN_TOPIC_OR_PARTITION),
                ("no-such-topic", 0): (-1, "", UNKNOWN_TOPIC_OR_PARTITION),
            }
            # What an old consumer or kcli consumer-offsets wrote is read the same way.
            zk.create(f"/consumers/other/offsets/{topic}/0", b"5", makepath=True)
            zk.create(f"/consumers/other/offsets/{topic}/1", b"five", makepath=True)
            assert fetch_v0(client, "other", {topic: [0, 1]}) == {(topic, 0): (5, "", NONE), (topic, 1): (-1, "", UNKNOWN_SERVER_ERROR)}
            assert fetch_v0(client, "never-committed", {topic: [0]}) == {(topic, 0): (-1, "", UNKNOWN_TOPIC_OR_PARTITION)}
            too_big = commit_v0(client, group, {topic: [(0, 50, "x" * 4097), (1, 8, "")]})
            assert too_big == {(topic, 0): OFFSET_METADATA_TOO_LARGE, (topic, 1): NONE}
            assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"42"
            assert zk.get(f"/consumers/{group}/offsets/{topic}/1")[0] == b"8"
    finally:
        zk.stop()
        zk.close()


def test_v1_commits_to_kafka_with_a_commit_timestamp(zk_cluster):
    topic = new_topic(zk_cluster.bootstrap, 1)
    group = f"v1-{uuid.uuid4().hex[:6]}"
    body = string(group) + i32(-1) + string("") + array([
        string(topic) + array([i32(0) + i64(11) + i64(1_700_000_000_000) + string("meta")])
    ])
    consumer = Consumer({"bootstrap.servers": zk_cluster.bootstrap, "group.id": group})
    try:
        # A client finds its coordinator first (which creates __consumer_offsets); then v1 commits.
        assert consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset < 0
        with WireClient("127.0.0.1", zk_cluster.brokers[0].port) as client:
            answer = wait_until(lambda: (lambda a: a if a[(topic, 0)] not in LOADING else None)(_commit_answer(call(client, 8, 1, body))))
        assert answer == {(topic, 0): NONE}
    finally:
        consumer.close()
    from kafka import KafkaAdminClient
    from kafka.structs import TopicPartition as KafkaPythonTopicPartition

    admin = KafkaAdminClient(bootstrap_servers=zk_cluster.bootstrap)
    try:
        committed = admin.list_group_offsets(group)[group][KafkaPythonTopicPartition(topic, 0)]
    finally:
        admin.close()
    assert (committed.offset, committed.metadata) == (11, "meta")


def test_embedded_broker_answers_v0_as_kafka_without_zookeeper(tmp_path):
    broker = BrokerProcess(tmp_path / "logs", {"broker.id": "0", "offsets.topic.num.partitions": "1"}).start()
    try:
        topic = new_topic(broker.bootstrap, 1)
        with WireClient("127.0.0.1", broker.port) as client:
            assert commit_v0(client, "g", {topic: [(0, 1, None)], "no-such-topic": [(0, 1, None)]}) == {
                (topic, 0): UNSUPPORTED_VERSION, ("no-such-topic", 0): UNSUPPORTED_VERSION}
            assert commit_v0(client, "g", {"no-such-topic": [(0, 1, None)]}) == {("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION}
            assert fetch_v0(client, "g", {topic: [0]}) == {(topic, 0): (-1, "", UNSUPPORTED_VERSION)}
    finally:
        broker.stop()
