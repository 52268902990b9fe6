"""The purgatory (Kafka's DelayedOperationPurgatory) and the replica manager's delayed produce and
fetch: watched by partition, completed by a change of that partition, expired by the loop's timer,
all completed at shutdown."""

from __future__ import annotations

import asyncio

from kcli.broker.replica.delayed_fetch import FetchParams
from kcli.broker.replica.fetch_sessions import CachedPartition
from kcli.broker.replica.purgatory import DelayedOperation, DelayedOperationPurgatory
from kcli.broker.replica.replica_manager import ReplicaManager
from kcli.errors import ErrorCode
from kcli.metadata.topics import PartitionState
from kcli.storage.log_manager import LogManager
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import NewRecord, build_batch


class Countdown(DelayedOperation):
    """Completes once ``checks`` changes have been seen; records how it ended."""

    def __init__(self, delay_ms: int, checks: int) -> None:
        super().__init__(delay_ms)
        self.left = checks
        self.ended: list[str] = []

    def try_complete(self) -> bool:
        if self.left > 0:
            self.left -= 1
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        self.ended.append("complete")

    def on_expiration(self) -> None:
        self.ended.append("expired")


def test_an_operation_completes_on_a_change_of_a_key_it_watches_and_leaves_every_key():
    async def scenario():
        purgatory = DelayedOperationPurgatory("Test")
        operation = Countdown(60_000, 2)  # the first try is try_complete_else_watch's own
        assert not purgatory.try_complete_else_watch(operation, ["a", "b"])
        assert purgatory.check_and_complete("other") == 0 and purgatory.watched() == 1
        assert purgatory.check_and_complete("a") == 0  # the first change is not enough
        assert purgatory.check_and_complete("b") == 1
        assert operation.ended == ["complete"] and purgatory.watched() == 0
        assert purgatory.check_and_complete("a") == 0 and not operation.force_complete()
        return operation.ended

    assert asyncio.run(scenario()) == ["complete"]


def test_an_operation_that_can_complete_at_once_is_not_watched():
    async def scenario():
        purgatory = DelayedOperationPurgatory("Test")
        operation = Countdown(60_000, 0)
        assert purgatory.try_complete_else_watch(operation, ["a"])
        return operation.ended, purgatory.watched()

    assert asyncio.run(scenario()) == (["complete"], 0)


def test_the_timer_expires_an_operation_and_shutdown_completes_the_rest():
    async def scenario():
        purgatory = DelayedOperationPurgatory("Test")
        short, long = Countdown(5, 100), Countdown(600_000, 100)
        purgatory.try_complete_else_watch(short, ["a"])
        purgatory.try_complete_else_watch(long, ["a"])
        while not short.is_completed:
            await asyncio.sleep(0.005)
        assert purgatory.watched() == 1
        purgatory.complete_all()
        return short.ended, long.ended, purgatory.watched()

    assert asyncio.run(scenario()) == (["complete", "expired"], ["complete"], 0)


def _replicas(tmp_path, isr=(0,)) -> ReplicaManager:
    replicas = ReplicaManager(0, LogManager([tmp_path / "logs"]))
    replicas.become_leader("orders", 0, None, PartitionState(replicas=(0, 1), isr=tuple(isr), leader=0, leader_epoch=0, partition_epoch=0))
    return replicas


def _batch(count: int = 1) -> bytes:
    return build_batch([NewRecord(key=None, value=b"v%d" % i, timestamp=1700000000000) for i in range(count)])


def test_a_fetch_waits_for_min_bytes_and_an_append_answers_it(tmp_path):
    replicas = _replicas(tmp_path)

    async def scenario():
        answered = asyncio.get_running_loop().create_future()
        params = FetchParams(replica_id=-1, max_wait_ms=60_000, min_bytes=1, max_bytes=1 << 20)
        replicas.fetch_messages(params, {("orders", 0): CachedPartition(None, 0, 1 << 20, -1)}, answered.set_result)
        waited = not answered.done()
        responses = []
        replicas.append_records([(("orders", 0), _batch(3))], 1, 30_000, AppendOrigin.CLIENT, responses.append)
        return waited, responses, await answered

    waited, responses, reads = asyncio.run(scenario())
    assert waited and responses[0][0][1].base_offset == 0
    [(_, _, result)] = reads
    assert result.error_code == 0 and result.high_watermark == 3 and result.records_size > 0


def test_a_fetch_short_of_min_bytes_answers_what_there_is_at_max_wait(tmp_path):
    replicas = _replicas(tmp_path)

    async def scenario():
        answered = asyncio.get_running_loop().create_future()
        params = FetchParams(replica_id=-1, max_wait_ms=10, min_bytes=1 << 20, max_bytes=1 << 20)
        replicas.append_records([(("orders", 0), _batch())], 1, 30_000, AppendOrigin.CLIENT, lambda _: None)
        replicas.fetch_messages(params, {("orders", 0): CachedPartition(None, 0, 1 << 20, -1)}, answered.set_result)
        return await answered

    [(_, _, result)] = asyncio.run(scenario())
    assert result.error_code == 0 and 0 < result.records_size < 1 << 20


def test_acks_all_answers_at_once_when_the_high_watermark_moves_with_the_append(tmp_path):
    replicas = _replicas(tmp_path)
    responses = []
    replicas.append_records([(("orders", 0), _batch(2)), (("orders", 0), _batch())], -1, 30_000, AppendOrigin.CLIENT, responses.append)
    [[(_, first), (_, second)]] = responses  # a partition named twice is appended to twice
    assert (first.error_code, first.base_offset, second.error_code, second.base_offset) == (ErrorCode.NONE, 0, ErrorCode.NONE, 2)
    assert replicas.produce_purgatory.watched() == 0


def test_acks_all_waits_for_an_isr_that_does_not_catch_up_and_times_out(tmp_path):
    replicas = _replicas(tmp_path, isr=(0, 1))  # a follower in the ISR that never fetches

    async def scenario():
        answered = asyncio.get_running_loop().create_future()
        replicas.append_records(
            [(("orders", 0), _batch()), (("missing", 0), _batch())], -1, 10, AppendOrigin.CLIENT, answered.set_result
        )
        waited = not answered.done()
        return waited, dict(await answered)

    waited, answer = asyncio.run(scenario())
    assert waited
    assert answer[("orders", 0)].error_code == ErrorCode.REQUEST_TIMED_OUT and answer[("orders", 0)].base_offset == 0
    assert answer[("missing", 0)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert replicas.get("orders", 0).log.log_end_offset == 1
