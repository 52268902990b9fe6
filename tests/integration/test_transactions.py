"""The transaction coordinator over the wire: InitProducerId with a transactional id,
AddPartitionsToTxn, EndTxn, WriteTxnMarkers, the verification of transactional produce, and
what the markers leave in the partition (the last stable offset, ``.txnindex``, the aborted
transactions of a read_committed fetch). Error codes are Kafka 3.9's."""

from __future__ import annotations

import time
import uuid


from kcli.errors import ErrorCode
from kcli.storage.records import NewRecord, build_batch
from kcli.storage.transaction_index import read_aborted_txns
from tests.integration.conftest import start_broker
from tests.wire_client import WireClient, code

INIT_PRODUCER_ID, ADD_PARTITIONS, END_TXN, WRITE_MARKERS, FIND_COORDINATOR = 22, 24, 26, 27, 10
LATEST = -1
BROKER_OVERRIDES = {"transaction.max.timeout.ms": "60000"}


def now_ms() -> int:
    return int(time.time() * 1000)


def txn_id() -> str:
    return f"txn-{uuid.uuid4().hex[:10]}"


def init(client: WireClient, transactional_id: str, *, timeout_ms: int = 30000, version: int = 4, expected: tuple[int, int] = (-1, -1)) -> tuple[int, int, int]:
    fields = {"transactional_id": transactional_id, "transaction_timeout": timeout_ms}
    if version >= 3:
        fields.update(producer_id=expected[0], producer_epoch=expected[1])
    answer = client.call(INIT_PRODUCER_ID, version, fields)
    return code(answer.error_code), answer.producer_id, answer.producer_epoch


def ready(client: WireClient, transactional_id: str) -> tuple[int, int]:
    """A producer id and epoch for the id (FindCoordinator creates the state topic first)."""
    answer = client.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [transactional_id]})
    assert code(answer.coordinators[0].error_code) == 0
    error, producer_id, epoch = init(client, transactional_id)
    assert error == 0
    return producer_id, epoch


def add_partitions(client: WireClient, transactional_id: str, producer_id: int, epoch: int, partitions: dict[str, list[int]], *, version: int = 3) -> dict[tuple[str, int], int]:
    answer = client.call(ADD_PARTITIONS, version, {
        "v3_and_below_transactional_id": transactional_id,
        "v3_and_below_producer_id": producer_id,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in partitions.items()],
    })
    return {(t.name, p.partition_index): code(p.partition_error_code) for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition}


def end_txn(client: WireClient, transactional_id: str, producer_id: int, epoch: int, commit: bool, *, version: int = 3) -> int:
    answer = client.call(END_TXN, version, {"transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": epoch, "committed": commit})
    return code(answer.error_code)


def txn_batch(producer_id: int, epoch: int, sequence: int, values: list[bytes]) -> bytes:
    return build_batch([NewRecord(None, v, now_ms()) for v in values], producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence, transactional=True)


def produce(client: WireClient, transactional_id: str, topic: str, partition: int, records: bytes, *, version: int = 9):
    answer = client.call(0, version, {
        "transactional_id": transactional_id, "acks": -1, "timeout": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
    })
    return answer.responses[0].partition_responses[0]


def committed_offset(client: WireClient, topic: str, partition: int = 0) -> tuple[int, int]:
    """ListOffsets latest with read_committed: (error, last stable offset)."""
    answer = client.call(2, 7, {"replica_id": -1, "isolation_level": 1, "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": LATEST}]}]})
    p = answer.topics[0].partitions[0]
    return code(p.error_code), p.offset


def fetch_committed(client: WireClient, topic: str, partition: int, offset: int):
    answer = client.call(1, 12, {
        "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 1,
        "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}],
    })
    return answer.responses[0].partitions[0]


def open_transaction_start(client: WireClient, topic: str, producer_id: int) -> int:
    """DescribeProducers: the first offset of the producer's open transaction on partition 0."""
    answer = client.call(61, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
    producers = {p.producer_id: p for p in answer.topics[0].partitions[0].active_producers}
    return producers[producer_id].current_txn_start_offset


def test_init_producer_id_bumps_the_epoch_and_fences_the_older_producer(client):
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    assert epoch == 0
    error, again_id, again_epoch = init(client, transactional_id)
    assert (error, again_id, again_epoch) == (0, producer_id, 1)
    # The producer of epoch 0 is fenced: KIP-588's PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH before.
    assert init(client, transactional_id, version=4, expected=(producer_id + 1000, 0))[0] == ErrorCode.PRODUCER_FENCED
    assert end_txn(client, transactional_id, producer_id, 0, True, version=2) == ErrorCode.PRODUCER_FENCED
    assert end_txn(client, transactional_id, producer_id, 0, True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
    # A retry of the last bump (expected epoch = the one before it) gets the same epoch again.
    assert init(client, transactional_id, version=4, expected=(producer_id, 1)) == (0, producer_id, 2)
    assert init(client, transactional_id, version=4, expected=(producer_id, 1)) == (0, producer_id, 2)


def test_transaction_timeout_is_held_against_the_maximum(client):
    transactional_id = txn_id()
    ready(client, transactional_id)
    assert init(client, transactional_id, timeout_ms=60001)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(client, transactional_id, timeout_ms=0)[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(client, "", timeout_ms=1000)[0] == ErrorCode.INVALID_REQUEST


def test_add_partitions_of_an_unknown_topic_adds_nothing(client, new_topic):
    topic = new_topic()
    client.create_topic(topic, 2)
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    errors = add_partitions(client, transactional_id, producer_id, epoch, {topic: [0, 5]})
    assert errors == {(topic, 0): ErrorCode.OPERATION_NOT_ATTEMPTED, (topic, 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    # Nothing was added: a transactional write to partition 0 is rejected as not in the transaction.
    answer = produce(client, transactional_id, topic, 0, txn_batch(producer_id, epoch, 0, [b"x"]))
    assert code(answer.error_code) == ErrorCode.INVALID_TXN_STATE
    assert answer.error_message == "Partition was not added to the transaction"
    assert add_partitions(client, transactional_id, producer_id + 1, epoch, {topic: [0]}) == {(topic, 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert add_partitions(client, transactional_id, producer_id, epoch - 1, {topic: [0]}, version=2) == {(topic, 0): ErrorCode.PRODUCER_FENCED}


def test_abort_moves_the_last_stable_offset_and_indexes_the_aborted_transaction(broker, client, new_topic):
    topic = new_topic()
    client.create_topic(topic, 1)
    client.produce(topic, 0, build_batch([NewRecord(None, b"plain", now_ms())]))
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    assert add_partitions(client, transactional_id, producer_id, epoch, {topic: [0]}) == {(topic, 0): 0}
    answer = produce(client, transactional_id, topic, 0, txn_batch(producer_id, epoch, 0, [b"a1", b"a2"]))
    assert code(answer.error_code) == 0 and answer.base_offset == 1
    # While the transaction is open, read_committed stops at its first offset.
    assert committed_offset(client, topic) == (0, 1)
    assert client.list_offset(topic, 0, LATEST) == (0, 3)
    assert open_transaction_start(client, topic, producer_id) == 1
    assert end_txn(client, transactional_id, producer_id, epoch, False) == 0
    assert open_transaction_start(client, topic, producer_id) == -1
    # The ABORT marker is offset 3: everything is stable again.
    assert committed_offset(client, topic) == (0, 4)
    entries = read_aborted_txns(broker.log_dir / f"{topic}-0" / "00000000000000000000.txnindex")
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries] == [(producer_id, 1, 3, 4)]
    fetched = fetch_committed(client, topic, 0, 0)
    assert [(t.producer_id, t.first_offset) for t in fetched.aborted_transactions] == [(producer_id, 1)]
    assert fetched.last_stable_offset == 4
    # The decision taken answers its repeat, the opposite one is refused.
    assert end_txn(client, transactional_id, producer_id, epoch, False) == 0
    assert end_txn(client, transactional_id, producer_id, epoch, True) == ErrorCode.INVALID_TXN_STATE


def test_end_txn_without_a_transaction_is_refused(client):
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    assert end_txn(client, transactional_id, producer_id, epoch, True) == ErrorCode.INVALID_TXN_STATE
    assert end_txn(client, txn_id(), producer_id, epoch, True) in (ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.NOT_COORDINATOR)


def test_a_new_producer_aborts_the_open_transaction_of_the_old_one(client, new_topic):
    topic = new_topic()
    client.create_topic(topic, 1)
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    add_partitions(client, transactional_id, producer_id, epoch, {topic: [0]})
    assert code(produce(client, transactional_id, topic, 0, txn_batch(producer_id, epoch, 0, [b"zombie"])).error_code) == 0
    assert committed_offset(client, topic) == (0, 0)
    # The new producer is told to retry while the old transaction is aborted under a bumped epoch.
    assert init(client, transactional_id)[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    assert committed_offset(client, topic) == (0, 2)
    assert init(client, transactional_id) == (0, producer_id, epoch + 2)
    # The zombie's next write and its commit are fenced.
    answer = produce(client, transactional_id, topic, 0, txn_batch(producer_id, epoch, 1, [b"late"]))
    assert code(answer.error_code) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end_txn(client, transactional_id, producer_id, epoch, True) == ErrorCode.PRODUCER_FENCED
    fetched = fetch_committed(client, topic, 0, 0)
    assert [(t.producer_id, t.first_offset) for t in fetched.aborted_transactions] == [(producer_id, 0)]


def test_write_txn_markers_over_the_wire_closes_a_transaction(client, new_topic):
    topic = new_topic()
    client.create_topic(topic, 1)
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    add_partitions(client, transactional_id, producer_id, epoch, {topic: [0]})
    produce(client, transactional_id, topic, 0, txn_batch(producer_id, epoch, 0, [b"v"]))
    assert committed_offset(client, topic) == (0, 0)
    answer = client.call(WRITE_MARKERS, 1, {"markers": [{
        "producer_id": producer_id, "producer_epoch": epoch, "transaction_result": True, "coordinator_epoch": 0,
        "topics": [{"name": topic, "partition_indexes": [0, 7]}],
    }]})
    results = {p.partition_index: code(p.error_code) for t in answer.markers[0].topics for p in t.partitions}
    assert results == {0: 0, 7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert committed_offset(client, topic) == (0, 2)
    # A marker from an older producer epoch is refused.
    stale = client.call(WRITE_MARKERS, 1, {"markers": [{
        "producer_id": producer_id, "producer_epoch": epoch - 1, "transaction_result": False, "coordinator_epoch": 0,
        "topics": [{"name": topic, "partition_indexes": [0]}],
    }]})
    assert code(stale.markers[0].topics[0].partitions[0].error_code) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_the_transaction_state_topic_is_created_as_kafka_creates_it(client):
    ready(client, txn_id())
    answer = client.call(32, 4, {"resources": [{"resource_type": 2, "resource_name": "__transaction_state", "configuration_keys": None}], "include_synonyms": False, "include_documentation": False})
    configs = {c.name: c.value for c in answer.results[0].configs}
    assert configs["cleanup.policy"] == "compact"
    assert configs["compression.type"] == "uncompressed"
    assert configs["segment.bytes"] == "104857600"
    assert configs["unclean.leader.election.enable"] == "false"
    metadata = client.call(3, 12, {"topics": [{"name": "__transaction_state", "topic_id": None}], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    assert len(metadata.topics[0].partitions) == 50 and metadata.topics[0].is_internal


def test_find_coordinator_answers_the_leader_of_the_transactional_ids_partition(client, broker):
    answer = client.call(FIND_COORDINATOR, 3, {"key": txn_id(), "key_type": 1})
    assert (code(answer.error_code), answer.node_id, answer.port) == (0, 0, broker.port)


def test_the_transaction_state_topic_is_not_created_with_too_few_brokers(tmp_path):
    process = start_broker(tmp_path, {"transaction.state.log.replication.factor": "3"})
    try:
        with WireClient("127.0.0.1", process.port) as connection:
            answer = connection.call(FIND_COORDINATOR, 3, {"key": "app", "key_type": 1})
            assert code(answer.error_code) == ErrorCode.COORDINATOR_NOT_AVAILABLE
            assert init(connection, "app")[0] == ErrorCode.NOT_COORDINATOR
    finally:
        process.stop()


def test_a_transaction_over_a_deleted_topic_still_completes(client, new_topic):
    gone, kept = new_topic("gone"), new_topic("kept")
    client.create_topic(gone, 1)
    client.create_topic(kept, 1)
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    add_partitions(client, transactional_id, producer_id, epoch, {gone: [0], kept: [0]})
    for topic in (gone, kept):
        assert code(produce(client, transactional_id, topic, 0, txn_batch(producer_id, epoch, 0, [b"v"])).error_code) == 0
    deleted = client.call(20, 6, {"topics": [{"name": gone, "topic_id": None}], "timeout": 10000})
    assert code(deleted.responses[0].error_code) == 0
    assert end_txn(client, transactional_id, producer_id, epoch, True) == 0
    # The marker reached the partition that is left, and the transaction is complete: the next
    # one can start at once.
    assert committed_offset(client, kept) == (0, 2)
    assert add_partitions(client, transactional_id, producer_id, epoch, {kept: [0]}) == {(kept, 0): 0}


def test_describe_and_list_transactions(client, new_topic):
    topic = new_topic()
    client.create_topic(topic, 2)
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    add_partitions(client, transactional_id, producer_id, epoch, {topic: [1, 0]})
    described = client.call(65, 0, {"transactional_ids": [transactional_id, "", "never-seen"]}).transaction_states
    state = described[0]
    assert (code(state.error_code), state.transaction_state, state.producer_id, state.producer_epoch) == (0, "Ongoing", producer_id, epoch)
    assert int(state.transaction_timeout.total_seconds() * 1000) == 30000
    assert [(t.topic, list(t.partitions)) for t in state.topics] == [(topic, [0, 1])]
    assert [code(s.error_code) for s in described[1:]] == [ErrorCode.INVALID_REQUEST, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND]

    listed = client.call(66, 1, {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": [producer_id], "duration_filter": -1})
    assert code(listed.error_code) == 0 and list(listed.unknown_state_filters) == ["Bogus"]
    assert [(s.transactional_id, s.producer_id, s.transaction_state) for s in listed.transaction_states] == [(transactional_id, producer_id, "Ongoing")]
    # Open for less than an hour: not listed by a one-hour duration filter.
    assert client.call(66, 1, {"state_filters": [], "producer_id_filters": [producer_id], "duration_filter": 3_600_000}).transaction_states == ()
    end_txn(client, transactional_id, producer_id, epoch, True)
    listed = client.call(66, 0, {"state_filters": ["CompleteCommit"], "producer_id_filters": []})
    assert (transactional_id, "CompleteCommit") in [(s.transactional_id, s.transaction_state) for s in listed.transaction_states]


def test_idle_transactional_ids_expire_and_stay_forgotten_after_a_restart(tmp_path, new_topic):
    process = start_broker(tmp_path, {"transactional.id.expiration.ms": "1000", "transaction.remove.expired.transaction.cleanup.interval.ms": "100"})
    try:
        with WireClient("127.0.0.1", process.port) as connection:
            topic = new_topic()
            connection.create_topic(topic, 1)
            idle, busy = txn_id(), txn_id()
            idle_producer, _ = ready(connection, idle)
            busy_producer, busy_epoch = ready(connection, busy)
            add_partitions(connection, busy, busy_producer, busy_epoch, {topic: [0]})  # open: never expires
            process.wait_for(rf"Removed the expired transactional id {idle} ", timeout=15)
            described = connection.call(65, 0, {"transactional_ids": [idle, busy]}).transaction_states
            assert [code(s.error_code) for s in described] == [ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, 0]
        process.restart()
        with WireClient("127.0.0.1", process.port) as connection:
            deadline = time.monotonic() + 15
            while True:  # the partitions load after the broker starts listening
                described = connection.call(65, 0, {"transactional_ids": [idle, busy]}).transaction_states
                if ErrorCode.COORDINATOR_LOAD_IN_PROGRESS not in [code(s.error_code) for s in described] or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert [code(s.error_code) for s in described] == [ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, 0]
            # The id starts again with a new producer id.
            error, producer_id, epoch = init(connection, idle)
            assert error == 0 and producer_id != idle_producer and epoch == 0
    finally:
        process.stop()


def test_internal_topics_cannot_join_a_transaction_and_txn_offset_commit_needs_a_group(client, new_topic):
    topic = new_topic()
    client.create_topic(topic, 1)
    transactional_id = txn_id()
    producer_id, epoch = ready(client, transactional_id)
    errors = add_partitions(client, transactional_id, producer_id, epoch, {topic: [0], "__consumer_offsets": [0]})
    assert errors == {(topic, 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("__consumer_offsets", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    answer = client.call(28, 3, {
        "transactional_id": transactional_id, "group_id": "", "producer_id": producer_id, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}]}],
    })
    assert code(answer.topics[0].partitions[0].error_code) == ErrorCode.INVALID_GROUP_ID
    # A group whose offsets partition the transaction did not add: Kafka 3.9's verification.
    commit = {
        "transactional_id": transactional_id, "group_id": "g", "producer_id": producer_id, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}]}],
    }
    client.call(FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
    assert code(client.call(28, 3, commit).topics[0].partitions[0].error_code) == ErrorCode.INVALID_TXN_STATE
    assert code(client.call(28, 4, commit).topics[0].partitions[0].error_code) == ErrorCode.TRANSACTION_ABORTABLE
    added = client.call(25, 3, {"transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": epoch, "group_id": "g"})
    assert code(added.error_code) == 0
    assert code(client.call(28, 3, commit).topics[0].partitions[0].error_code) == 0


def test_a_commit_after_the_coordinator_aborted_on_timeout_is_fenced(tmp_path, new_topic):
    process = start_broker(tmp_path, {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"})
    try:
        with WireClient("127.0.0.1", process.port) as connection:
            topic = new_topic()
            connection.create_topic(topic, 1)
            transactional_id = txn_id()
            connection.call(FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": 1})
            error, producer_id, epoch = init(connection, transactional_id, timeout_ms=1000)
            assert error == 0
            add_partitions(connection, transactional_id, producer_id, epoch, {topic: [0]})
            produce(connection, transactional_id, topic, 0, txn_batch(producer_id, epoch, 0, [b"slow"]))
            process.wait_for(rf"Aborting the transaction of {transactional_id} ", timeout=15)
            assert end_txn(connection, transactional_id, producer_id, epoch, True, version=2) == ErrorCode.PRODUCER_FENCED
            assert end_txn(connection, transactional_id, producer_id, epoch, True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
            assert committed_offset(connection, topic) == (0, 2)  # aborted and stable
            fetched = fetch_committed(connection, topic, 0, 0)
            assert [(t.producer_id, t.first_offset) for t in fetched.aborted_transactions] == [(producer_id, 0)]
            # The abort used the epoch after the producer's: its next start gets the one after that.
            assert init(connection, transactional_id, timeout_ms=1000) == (0, producer_id, epoch + 2)
    finally:
        process.stop()
