"""Produce and Fetch semantics at the wire: long polls, sessions, byte limits, idempotent retries."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from kcli.storage.records import NewRecord, build_batch, iter_batches
from broker_process import BrokerProcess
from wire_client import WireClient, code, decode_response, encode_request, request_entity

FETCH, API_VERSIONS = 1, 18
NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION = 0, 1, 3
FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH = 70, 71
UNSUPPORTED_VERSION = 35


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("produce-fetch")).start()
    yield process
    process.stop()


def _client(broker) -> WireClient:
    return WireClient("127.0.0.1", broker.port, timeout=20)


def _batch(values: list[bytes], **kwargs) -> bytes:
    return bytes(build_batch([NewRecord(key=None, value=v, timestamp=1_700_000_000_000) for v in values], **kwargs))


def _fetch(client, partitions, *, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=0, session_epoch=-1, forgotten=(), version=12):
    topics: dict[str, list] = {}
    for topic, partition, offset, partition_max in partitions:
        topics.setdefault(topic, []).append({"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max})
    return client.call(
        FETCH,
        version,
        {
            "max_wait": max_wait_ms,
            "min_bytes": min_bytes,
            "max_bytes": max_bytes,
            "session_id": session_id,
            "session_epoch": session_epoch,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            "forgotten_topics_data": [{"topic": t, "partitions": [p]} for t, p in forgotten],
        },
    )


def _partitions(response) -> dict[tuple[str, int], object]:
    return {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}


def test_a_long_poll_is_woken_by_a_produce_before_its_max_wait(broker):
    with _client(broker) as client:
        assert code(client.create_topic("long-poll").error_code) == NONE
        answer: dict = {}

        def poll() -> None:
            with _client(broker) as fetcher:
                answer["response"] = _fetch(fetcher, [("long-poll", 0, 0, 1 << 20)], max_wait_ms=60_000, min_bytes=1)

        waiter = threading.Thread(target=poll)
        waiter.start()
        time.sleep(0.5)
        assert waiter.is_alive(), "a fetch with min_bytes=1 on an empty partition must wait"
        assert code(client.produce("long-poll", 0, _batch([b"wake up"])).error_code) == NONE
        waiter.join(20)  # far below the fetch's 60 s max wait: only the append can have ended it
        assert not waiter.is_alive()
        (partition,) = _partitions(answer["response"]).values()
        assert partition.high_watermark == 1 and b"wake up" in bytes(partition.records)


def test_requests_pipelined_behind_a_waiting_fetch_are_answered_after_it(broker):
    # ApiVersions and Produce are answered as soon as they are read when nothing is ahead of
    # them; behind a fetch that waits they must wait their turn.
    with _client(broker) as client:
        client.create_topic("in-order")
        fetch = request_entity(FETCH, 12, {"max_wait": 300, "min_bytes": 1, "max_bytes": 1 << 20, "session_epoch": -1,
                                           "topics": [{"topic": "in-order", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
        versions = request_entity(API_VERSIONS, 3, {"client_software_name": "kcli-tests", "client_software_version": "1"})
        produce = request_entity(0, 9, {"acks": 1, "timeout": 10000, "topic_data": [{"name": "in-order", "partition_data": [{"index": 0, "records": _batch([b"late"])}]}]})
        client.send_raw(encode_request(fetch, 101) + encode_request(versions, 102) + encode_request(produce, 103) + encode_request(versions, 104))
        answers = [(101, FETCH, 12), (102, API_VERSIONS, 3), (103, 0, 9), (104, API_VERSIONS, 3)]
        received = [decode_response(api_key, version, client.read_frame()) for _, api_key, version in answers]
        assert [correlation_id for correlation_id, _ in received] == [101, 102, 103, 104]
        (partition,) = _partitions(received[0][1]).values()
        assert bytes(partition.records) == b""  # the produce behind the fetch did not reach it
        assert code(received[2][1].responses[0].partition_responses[0].error_code) == NONE


def test_max_wait_ends_a_fetch_that_gets_no_data(broker):
    with _client(broker) as client:
        client.create_topic("quiet")
        response = _fetch(client, [("quiet", 0, 0, 1 << 20)], max_wait_ms=200, min_bytes=1)
        (partition,) = _partitions(response).values()
        assert code(partition.error_code) == NONE and bytes(partition.records) == b""


def test_byte_limits_return_whole_batches_and_at_least_one(broker):
    with _client(broker) as client:
        client.create_topic("limits")
        batches = [_batch([b"x" * 1000]) for _ in range(5)]
        for batch in batches:
            assert code(client.produce("limits", 0, batch).error_code) == NONE
        size = len(batches[0])
        one = _partitions(_fetch(client, [("limits", 0, 0, 10)]))[("limits", 0)]
        assert len(bytes(one.records)) == size  # partition_max_bytes below one batch still returns it
        three = _partitions(_fetch(client, [("limits", 0, 0, 3 * size)]))[("limits", 0)]
        assert len(bytes(three.records)) == 3 * size
        capped = _partitions(_fetch(client, [("limits", 0, 0, 1 << 20)], max_bytes=2 * size))[("limits", 0)]
        assert len(bytes(capped.records)) == 2 * size


def test_offsets_outside_the_log_are_out_of_range(broker):
    with _client(broker) as client:
        client.create_topic("range")
        client.produce("range", 0, _batch([b"a", b"b"]))
        partitions = _partitions(_fetch(client, [("range", 0, 3, 1 << 20), ("missing-topic", 0, 0, 1 << 20)]))
        assert code(partitions[("range", 0)].error_code) == OFFSET_OUT_OF_RANGE
        assert partitions[("range", 0)].high_watermark == 2
        assert code(partitions[("missing-topic", 0)].error_code) == UNKNOWN_TOPIC_OR_PARTITION
        at_end = _partitions(_fetch(client, [("range", 0, 2, 1 << 20)]))[("range", 0)]
        assert code(at_end.error_code) == NONE and bytes(at_end.records) == b""


def test_incremental_fetch_sessions_send_only_what_changed(broker):
    with _client(broker) as client:
        client.create_topic("session", partitions=2)
        client.produce("session", 0, _batch([b"p0"]))
        full = _fetch(client, [("session", 0, 0, 1 << 20), ("session", 1, 0, 1 << 20)], session_id=0, session_epoch=0)
        session_id = full.session_id
        assert session_id > 0 and set(_partitions(full)) == {("session", 0), ("session", 1)}
        # the client moves past what it read; nothing else is new, so nothing comes back
        empty = _fetch(client, [("session", 0, 1, 1 << 20)], session_id=session_id, session_epoch=1)
        assert code(empty.error_code) == NONE and _partitions(empty) == {}
        client.produce("session", 1, _batch([b"p1"]))
        changed = _fetch(client, [], session_id=session_id, session_epoch=2)
        assert set(_partitions(changed)) == {("session", 1)}
        assert b"p1" in bytes(_partitions(changed)[("session", 1)].records)
        stale = _fetch(client, [], session_id=session_id, session_epoch=2)
        assert code(stale.error_code) == INVALID_FETCH_SESSION_EPOCH
        unknown = _fetch(client, [], session_id=session_id + 1000, session_epoch=1)
        assert code(unknown.error_code) == FETCH_SESSION_ID_NOT_FOUND


def test_topic_ids_name_topics_from_fetch_v13(broker):
    with _client(broker) as client:
        created = client.create_topic("by-id")
        client.produce("by-id", 0, _batch([b"id"]))
        response = client.call(
            FETCH,
            13,
            {
                "max_wait": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 20,
                "session_epoch": -1,
                "topics": [{"topic_id": created.topic_id, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
                "forgotten_topics_data": [],
            },
        )
        (topic,) = response.responses
        assert topic.topic_id == created.topic_id
        assert b"id" in bytes(topic.partitions[0].records)


@pytest.mark.parametrize("version", [16, 17])
def test_fetch_v16_and_v17_by_topic_id_with_the_replica_directory_tag(broker, version):
    """Fetch v17 (Kafka 3.9, KIP-853) adds a tagged replica directory id to each partition; the
    response is v16's. A partition carrying the tag (v17) is read like any other."""
    with _client(broker) as client:
        created = client.create_topic(f"fetch-v{version}")
        client.produce(f"fetch-v{version}", 0, _batch([b"first", b"second"]))
        partition = {"partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20}
        if version >= 17:
            partition["replica_directory_id"] = uuid.UUID("0b4e1c5a-7f3d-4e2a-9c61-5d8f2a7b3e10")
        response = client.call(
            FETCH,
            version,
            {
                "max_wait": 0,
                "min_bytes": 0,
                "max_bytes": 1 << 20,
                "session_epoch": -1,
                "topics": [{"topic_id": created.topic_id, "partitions": [partition]}],
                "forgotten_topics_data": [],
            },
        )
        (topic,) = response.responses
        (answered,) = topic.partitions
        assert (topic.topic_id, code(answered.error_code), answered.high_watermark) == (created.topic_id, NONE, 2)
        (batch,) = iter_batches(bytes(answered.records))
        assert [r.value for r in batch.records()] == [b"first", b"second"]


def _list_offsets(client, topic: str, timestamp: int, version: int):
    response = client.call(
        2,
        version,
        {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp}]}]},
    )
    answer = response.topics[0].partitions[0]
    return code(answer.error_code), answer.timestamp, answer.offset, answer.leader_epoch


def test_list_offsets_v9_latest_tiered_offset_without_a_remote_tier(broker):
    """ListOffsets v9 (Kafka 3.9, KIP-1005) adds -5, the latest tiered offset. With no remote
    storage Kafka answers offset -1, timestamp -1 and leader epoch -1 (UnifiedLog), and refuses
    the timestamp before v9, or any special timestamp it does not know, with UNSUPPORTED_VERSION."""
    with _client(broker) as client:
        client.create_topic("tiered")
        client.produce("tiered", 0, _batch([b"a", b"b", b"c"]))
        assert _list_offsets(client, "tiered", -5, 9) == (NONE, -1, -1, -1)
        assert _list_offsets(client, "tiered", -5, 8)[0] == UNSUPPORTED_VERSION
        assert _list_offsets(client, "tiered", -6, 9)[0] == UNSUPPORTED_VERSION
        assert _list_offsets(client, "tiered", -4, 9) == (NONE, -1, 0, 0)
        assert _list_offsets(client, "tiered", -1, 9) == (NONE, -1, 3, 0)


def test_an_idempotent_retry_answers_the_original_offset_and_is_not_stored_twice(broker):
    with _client(broker) as client:
        client.create_topic("retries")
        init = client.call(22, 4, {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1})
        assert code(init.error_code) == NONE
        first = _batch([b"one", b"two"], producer_id=init.producer_id, producer_epoch=init.producer_epoch, base_sequence=0)
        second = _batch([b"three"], producer_id=init.producer_id, producer_epoch=init.producer_epoch, base_sequence=2)
        assert client.produce("retries", 0, first).base_offset == 0
        assert client.produce("retries", 0, second).base_offset == 2
        retried = client.produce("retries", 0, first)
        assert code(retried.error_code) == NONE and retried.base_offset == 0
        assert client.list_offset("retries", 0, -1) == (NONE, 3)
        gap = _batch([b"five"], producer_id=init.producer_id, producer_epoch=init.producer_epoch, base_sequence=5)
        assert code(client.produce("retries", 0, gap).error_code) == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER


def test_sigterm_answers_a_waiting_fetch_then_exits_cleanly(tmp_path):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with _client(broker) as client:
            client.create_topic("shutdown")
            client.produce("shutdown", 0, _batch([b"kept"]))
        answer: dict = {}

        def poll() -> None:
            with _client(broker) as fetcher:
                answer["response"] = _fetch(fetcher, [("shutdown", 0, 1, 1 << 20)], max_wait_ms=60_000, min_bytes=1)

        waiter = threading.Thread(target=poll)
        waiter.start()
        time.sleep(0.5)
        assert waiter.is_alive()
        assert broker.stop(timeout=20) == 0  # well before the fetch's 60 s: in-flight requests are finished, not awaited
        waiter.join(5)
        (partition,) = _partitions(answer["response"]).values()
        assert code(partition.error_code) == NONE and partition.high_watermark == 1
    finally:
        broker.kill()
