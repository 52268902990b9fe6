"""Topic administration and storage configs at the wire: manual assignment, deletion by id,
leader epochs, segment rolling, flushing, and what survives a restart."""

from __future__ import annotations

import uuid

import pytest

from broker_process import BrokerProcess
from kcli.errors import ErrorCode
from kcli.storage.checkpoints import read_offset_checkpoint
from kcli.storage.records import NewRecord, build_batch
from wire_client import WireClient, code

CREATE_TOPICS, DELETE_TOPICS, METADATA, OFFSET_FOR_LEADER_EPOCH = 19, 20, 3, 23
NONE = ErrorCode.NONE
UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_ID = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    ErrorCode.UNKNOWN_TOPIC_ID,
)


@pytest.fixture
def broker(tmp_path):
    process = BrokerProcess(tmp_path / "data", {"broker.id": "3"}).start()
    yield process
    process.stop()


def _batch(n: int, size: int = 100) -> bytes:
    return bytes(build_batch([NewRecord(key=b"k", value=b"v" * size, timestamp=1_700_000_000_000) for _ in range(n)]))


def _create(client, name, *, partitions=-1, replication=-1, assignments=(), configs=None):
    response = client.call(
        CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": replication,
                    "assignments": [{"partition_index": p, "broker_ids": ids} for p, ids in assignments],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout": 10000,
        },
    )
    return response.topics[0]


def _metadata(client, name):
    response = client.call(METADATA, 12, {"topics": [{"name": name, "topic_id": None}], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    return response.topics[0]


def test_manual_replica_assignment_is_kept_and_checked(broker):
    with WireClient("127.0.0.1", broker.port) as client:
        created = _create(client, "assigned", assignments=[(0, [3]), (1, [3])])
        assert code(created.error_code) == NONE and created.num_partitions == 2 and created.replication_factor == 1
        topic = _metadata(client, "assigned")
        assert [(p.partition_index, tuple(p.replica_nodes), p.leader_id) for p in topic.partitions] == [(0, (3,), 3), (1, (3,), 3)]
        unknown_broker = _create(client, "bad-assignment", assignments=[(0, [9])])
        assert code(unknown_broker.error_code) == INVALID_REPLICA_ASSIGNMENT
        assert code(_metadata(client, "bad-assignment").error_code) == UNKNOWN_TOPIC_OR_PARTITION


def test_delete_by_topic_id_removes_the_topic_and_its_logs(broker):
    with WireClient("127.0.0.1", broker.port) as client:
        created = _create(client, "by-id", partitions=2)
        client.produce("by-id", 1, _batch(3))
        assert (broker.log_dir / "by-id-1").is_dir()
        response = client.call(DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": created.topic_id}], "timeout": 10000})
        (result,) = response.responses
        assert code(result.error_code) == NONE and result.name == "by-id"
        assert code(_metadata(client, "by-id").error_code) == UNKNOWN_TOPIC_OR_PARTITION
        assert not (broker.log_dir / "by-id-1").exists()
        again = client.call(DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": created.topic_id}], "timeout": 10000})
        assert code(again.responses[0].error_code) == UNKNOWN_TOPIC_ID
        missing = client.call(DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": uuid.uuid4()}], "timeout": 10000})
        assert code(missing.responses[0].error_code) == UNKNOWN_TOPIC_ID


def test_delete_topics_with_topic_deletion_disabled_is_refused_and_keeps_the_logs(tmp_path):
    # Single-process mode, as Kafka's KafkaApis: TOPIC_DELETION_DISABLED, nothing deleted.
    process = BrokerProcess(tmp_path / "data", {"broker.id": "3", "delete.topic.enable": "false"}).start()
    try:
        with WireClient("127.0.0.1", process.port) as client:
            created = _create(client, "kept", partitions=1)
            client.produce("kept", 0, _batch(3))
            for request in ({"name": "kept", "topic_id": uuid.UUID(int=0)}, {"name": None, "topic_id": created.topic_id}):
                response = client.call(DELETE_TOPICS, 6, {"topics": [request], "timeout": 10000})
                assert code(response.responses[0].error_code) == ErrorCode.TOPIC_DELETION_DISABLED
            assert code(_metadata(client, "kept").error_code) == NONE
            assert client.list_offset("kept", 0, -1)[1] == 3
        assert (process.log_dir / "kept-0").is_dir()
    finally:
        process.stop()


def test_offset_for_leader_epoch_answers_the_log_end_for_the_current_epoch(broker):
    with WireClient("127.0.0.1", broker.port) as client:
        _create(client, "epochs", partitions=1)
        client.produce("epochs", 0, _batch(5))
        leader_epoch = _metadata(client, "epochs").partitions[0].leader_epoch

        def ask(epoch, current=-1):
            response = client.call(
                OFFSET_FOR_LEADER_EPOCH,
                4,
                {"replica_id": -1, "topics": [{"topic": "epochs", "partitions": [{"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}]}]},
            )
            return response.topics[0].partitions[0]

        answer = ask(leader_epoch)
        assert code(answer.error_code) == NONE and (answer.leader_epoch, answer.end_offset) == (leader_epoch, 5)
        assert code(ask(leader_epoch, current=leader_epoch + 5).error_code) == ErrorCode.UNKNOWN_LEADER_EPOCH
        newer = ask(leader_epoch + 1)  # an epoch past every cached one is undefined, as in Kafka's epoch cache
        assert (newer.leader_epoch, newer.end_offset) == (-1, -1)


def test_segment_bytes_rolls_segments_and_flush_messages_moves_the_recovery_point(broker):
    with WireClient("127.0.0.1", broker.port) as client:
        _create(client, "rolling", partitions=1, configs={"segment.bytes": "2000", "flush.messages": "1"})
        for _ in range(6):
            assert code(client.produce("rolling", 0, _batch(8)).error_code) == NONE
    segments = sorted(p.name for p in (broker.log_dir / "rolling-0").glob("*.log"))
    assert len(segments) >= 3, segments
    assert segments[0] == "00000000000000000000.log"
    broker.stop()
    assert read_offset_checkpoint(broker.log_dir / "recovery-point-offset-checkpoint")[("rolling", 0)] == 48
    broker.start()
    with WireClient("127.0.0.1", broker.port) as client:
        assert client.list_offset("rolling", 0, -1) == (NONE, 48)
        assert client.list_offset("rolling", 0, -2) == (NONE, 0)
