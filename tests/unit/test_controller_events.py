"""One failing controller event, one request that cannot be sent, or one partition state no
response could carry never stops what comes after it: each is named in one error line and the
controller, its senders and the metadata cache go on (Kafka's ControllerEventManager logs an
"Uncaught error processing event" and takes the next event)."""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid

import pytest

from kcli.broker.controller import channel_manager
from kcli.broker.controller.channel_manager import ControllerChannelManager
from kcli.broker.metadata.metadata_cache import MetadataCache
from kcli.metadata import zk_paths as zk
from kcli.metadata.embedded import EmbeddedStore
from kcli.metadata.topics import PartitionState
from kcli.metadata.zk_client import KafkaZkClient
from tests.unit.test_controller_elections import LEADER_AND_ISR, controller_of, create, partitions_of


@pytest.fixture
def tree(tmp_path):
    with EmbeddedStore(tmp_path) as store:
        client = KafkaZkClient(store)
        client.create_top_level_paths()
        yield client


def errors(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


def test_an_uncaught_error_in_one_event_is_one_line_and_the_next_event_is_processed(tree, caplog):
    controller, channel = controller_of(tree)
    channel.take()
    handle = controller._on_topics_changed

    def failing(names):
        controller.batch.add_update_metadata([1, 2])  # gathered before the failure: dropped with it
        raise RuntimeError("state went wrong")

    controller._on_topics_changed = failing
    with caplog.at_level(logging.ERROR):
        create(tree, "first", {0: [1]})
    assert errors(caplog) == ["[Controller id=0] Uncaught error processing event TopicChange: RuntimeError: state went wrong"]
    assert controller.active and controller.batch.is_empty() and channel.take() == []
    # The next event is processed as if nothing had happened: the new topic is elected and sent.
    controller._on_topics_changed = handle
    create(tree, "second", {0: [1]})
    sent = channel.take(LEADER_AND_ISR)
    assert [broker for broker, *_ in sent] == [1]
    assert ("second", 0) in partitions_of(sent[0][2])


class _Connection:
    """Answers every request but the ones that do not encode, as a real connection would fail."""

    closed = False

    async def call(self, api_key, fields, timeout=None):
        if fields.get("partition_index", 0) > 2**31 - 1:
            raise struct.error("'i' format requires -2147483648 <= number <= 2147483647")
        return f"answer to {fields['n']}"

    async def close(self):
        pass


def test_a_request_that_cannot_be_encoded_is_dropped_in_one_line_and_the_sender_goes_on(monkeypatch, caplog):
    async def open_connection(cls, host, port, **kwargs):
        return _Connection()

    monkeypatch.setattr("kcli.client.connection.BrokerConnection.open", classmethod(open_connection))

    async def scenario():
        manager = ControllerChannelManager(asyncio.get_running_loop(), 0, timeout_ms=1000)
        answers = asyncio.Queue()
        manager.add_broker(1, "127.0.0.1", 9092)
        manager.send(1, LEADER_AND_ISR, {"n": 1, "partition_index": 2**31}, answers.put_nowait)
        manager.send(1, LEADER_AND_ISR, {"n": 2, "partition_index": 0}, answers.put_nowait)
        try:
            return await asyncio.wait_for(answers.get(), 10)
        finally:
            await manager.close()

    with caplog.at_level(logging.ERROR, logger=channel_manager.log.name):
        assert asyncio.run(scenario()) == "answer to 2"
    [line] = errors(caplog)
    assert "Dropped request 4 to broker 1 that cannot be sent" in line and "struct.error" not in line and "'i' format" in line


def test_a_partition_state_no_response_could_carry_keeps_the_cached_state(tree, caplog):
    tree.register_broker(0, [zk.Endpoint("PLAINTEXT", "127.0.0.1", 9092)])
    create(tree, "orders", {0: [0], 1: [0]})
    cache = MetadataCache(tree)
    cache.start()
    try:
        before = cache.topic("orders")
        good = before.partitions[0]
        huge = PartitionState((0,), (0,), 0, 2**31, good.partition_epoch + 1)
        with caplog.at_level(logging.ERROR):
            cache.update_metadata(0, cache.alive_brokers(), {"orders": (before.topic_id, {0: huge, 1: None})})
        assert errors(caplog) == ["Ignoring the state of partition orders-0: leader_epoch 2147483648 is out of range [-2147483648, 2147483647]"]
        assert cache.topic("orders").partitions == {0: good}  # partition 1 is being deleted; 0 kept as it was
        # A partition never cached, with a replica id past int32, is left out.
        cache.update_metadata(0, cache.alive_brokers(), {"orders": (uuid.UUID(int=0), {5: PartitionState((2**31,), (), -1, 0, 0)})})
        assert set(cache.topic("orders").partitions) == {0}
    finally:
        cache.close()
