"""The admin calls behind ``kcli transactions``, against scripted broker answers: which errors
are retried and which fail with the messages Kafka 3.9's admin handlers give (AbortTransactionHandler,
DescribeProducersHandler, DescribeTransactionsHandler), and Kafka's TransactionState names."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace as NS

import pytest

from kcli.client.network_client import NetworkClient
from kcli.client.transaction_admin import AbortTransactionSpec, TransactionAdmin, transaction_state
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError

TP = TopicPartition("orders", 3)
SPEC = AbortTransactionSpec(TP, 7, 2, 5)


def scripted(answers: list) -> tuple[TransactionAdmin, list]:
    """An admin over a cluster whose calls answer ``answers`` in turn; returns the calls made."""
    cluster = NetworkClient("127.0.0.1:1", retries=3, retry_backoff=0.001, retry_backoff_max=0.001)
    calls: list = []

    async def call(node, api_key, fields, **_):
        calls.append((node, api_key, fields))
        return answers.pop(0)

    async def leader(topic, partition):
        return 1

    async def coordinator(key, key_type=0):
        return 2

    async def refresh(*_args, **_kwargs):
        return cluster.metadata

    cluster.call, cluster.leader, cluster.coordinator, cluster.refresh = call, leader, coordinator, refresh
    return TransactionAdmin(cluster), calls


def marker_answer(code: int) -> NS:
    return NS(markers=[NS(producer_id=7, topics=[NS(name="orders", partitions=[NS(partition_index=3, error_code=code)])])])


def test_abort_writes_one_abort_marker_at_the_leader_and_retries_a_moved_leader():
    admin, calls = scripted([marker_answer(ErrorCode.NOT_LEADER_OR_FOLLOWER), marker_answer(0)])
    asyncio.run(admin.abort_transaction(SPEC))
    assert len(calls) == 2
    node, api_key, fields = calls[0]
    assert (node, api_key) == (1, 27)
    assert fields["markers"] == [{
        "producer_id": 7, "producer_epoch": 2, "transaction_result": False, "coordinator_epoch": 5,
        "topics": [{"name": "orders", "partition_indexes": [3]}],
    }]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (ErrorCode.TRANSACTION_COORDINATOR_FENCED, f"WriteTxnMarkers request with {SPEC} failed since the provided coordinator epoch 5 has been fenced by the active coordinator"),
        (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"WriteTxnMarkers request with {SPEC} failed due to cluster authorization error"),
        (ErrorCode.CORRUPT_MESSAGE, f"WriteTxnMarkers request with {SPEC} failed due to unexpected error: {ErrorCode.CORRUPT_MESSAGE.message}"),
    ],
)
def test_abort_failures_are_final_with_kafkas_messages(code, message):
    # CORRUPT_MESSAGE is retriable in general, but Kafka's handler fails the abort at once.
    admin, calls = scripted([marker_answer(code), marker_answer(0)])
    with pytest.raises(KafkaError) as failure:
        asyncio.run(admin.abort_transaction(SPEC))
    assert str(failure.value) == message
    assert len(calls) == 1


def test_the_abort_spec_prints_as_kafkas_to_string():
    assert str(SPEC) == "AbortTransactionSpec(topicPartition=orders-3, producerId=7, producerEpoch=2, coordinatorEpoch=5)"


def producers_answer(code: int, producers: list | None = None) -> NS:
    partition = NS(partition_index=3, error_code=code, error_message=None, active_producers=producers or [])
    return NS(topics=[NS(name="orders", partitions=[partition])])


def test_describe_producers_at_a_named_broker_fails_on_not_leader_without_retrying():
    admin, calls = scripted([producers_answer(ErrorCode.NOT_LEADER_OR_FOLLOWER), producers_answer(0)])
    result = asyncio.run(admin.describe_producers([TP], broker_id=4))[TP]
    assert isinstance(result, KafkaError)
    assert str(result) == "Failed to describe active producers for partition orders-3 on brokerId 4"
    assert [c[0] for c in calls] == [4]


def test_describe_producers_at_the_leader_retries_not_leader_and_reads_minus_one_as_absent():
    state = NS(producer_id=9, producer_epoch=1, last_sequence=4, last_timestamp=1000, coordinator_epoch=-1, current_txn_start_offset=-1)
    admin, calls = scripted([producers_answer(ErrorCode.NOT_LEADER_OR_FOLLOWER), producers_answer(0, [state])])
    [producer] = asyncio.run(admin.describe_producers([TP]))[TP]
    assert (producer.producer_id, producer.coordinator_epoch, producer.current_transaction_start_offset) == (9, None, None)
    assert [c[0] for c in calls] == [1, 1]


def describe_answer(code: int, state: str = "Ongoing") -> NS:
    return NS(transaction_states=[NS(
        error_code=code, transactional_id="pay", transaction_state=state, transaction_timeout=60000,
        transaction_start_time=-1, producer_id=3, producer_epoch=0, topics=[NS(topic="orders", partitions=[1, 0])],
    )])


def test_describe_transactions_waits_for_a_loading_coordinator_and_names_a_missing_id():
    admin, calls = scripted([describe_answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), describe_answer(0, "SomethingNew")])
    description = asyncio.run(admin.describe_transactions(["pay"]))["pay"]
    assert (description.coordinator_id, description.state, description.transaction_start_time_ms) == (2, "Unknown", None)
    assert description.topic_partitions == (TopicPartition("orders", 1), TopicPartition("orders", 0))
    assert len(calls) == 2

    admin, _ = scripted([describe_answer(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)])
    missing = asyncio.run(admin.describe_transactions(["pay"]))["pay"]
    assert str(missing) == "DescribeTransactions request for transactionalId `pay` failed because the ID could not be found"


def test_transaction_states_are_kafkas_names():
    for name in ("Ongoing", "PrepareAbort", "PrepareCommit", "CompleteAbort", "CompleteCommit", "Empty", "PrepareEpochFence"):
        assert transaction_state(name) == name
    assert transaction_state("Dead") == "Unknown"  # the admin client's enum has no Dead
