"""One deterministic scenario per replication bug Kafka fixed, played on in-process replicas
(``tests/replicas_in_process.py``: each broker's real replica manager, fetchers and handlers over
real sockets; the test plays the controller). KAFKA-7128 and KAFKA-13091 are the Partition rules
of tests/unit/test_partition.py; the retention and cleaner bounds (KAFKA-5634, KAFKA-13194) are at
the end of this module, on a log alone."""

from __future__ import annotations

import asyncio

import pytest

from kcli.broker.replica.delayed_fetch import FetchParams
from kcli.broker.replica.fetch_sessions import CachedPartition
from kcli.errors import ErrorCode
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import NewRecord, build_batch
from tests.replicas_in_process import TOPIC, InProcessCluster

KEY = (TOPIC, 0)


def scenario(count: int = 3):
    """Run the decorated coroutine with a started cluster of ``count`` brokers, stopped after."""

    def decorate(test):
        def run(tmp_path):
            async def main():
                cluster = await InProcessCluster(tmp_path, count).start()
                try:
                    await test(cluster)
                finally:
                    await cluster.stop()

            asyncio.run(main())

        run.__name__, run.__doc__ = test.__name__, test.__doc__  # not functools.wraps: pytest would ask for ``cluster``
        return run

    return decorate


def produce(broker, values: list[bytes], acks: int = 1) -> list:
    """Append one batch of ``values`` at ``broker`` (its leader); the answer list fills when it is
    answered (at once for acks=1, once replicated for acks=-1)."""
    answers: list = []
    batch = build_batch([NewRecord(None, v, 1_700_000_000_000) for v in values])
    broker.replica_manager.append_records([(KEY, batch)], acks, 30_000, AppendOrigin.CLIENT, lambda a: answers.append(a[0][1]))
    return answers


async def replicated(cluster, broker, values: list[bytes]) -> None:
    """Append ``values`` with acks=-1 and wait for the answer, which must be a success."""
    answers = produce(broker, values, acks=-1)
    await cluster.until(lambda: answers)
    assert answers[0].error_code == ErrorCode.NONE, answers


def stop_fetching(broker) -> None:
    """The follower's fetcher drops the partition (a fetch in flight is ignored when it returns)."""
    broker.replica_manager.replica_fetcher_manager.remove_fetcher_for_partitions([KEY])


def consumer_read(broker, offset: int = 0, isolation_level: int = 0) -> list[bytes]:
    """What a consumer's Fetch at ``broker`` returns from ``offset``."""
    answered: list = []
    params = FetchParams(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=isolation_level)
    broker.replica_manager.fetch_messages(params, {KEY: CachedPartition(None, offset, 1 << 20)}, answered.append)
    [[(_, _, result)]] = answered
    assert result.error_code == ErrorCode.NONE
    from kcli.storage.records import iter_batches

    data = b"".join(piece.read() if hasattr(piece, "read") else bytes(piece) for piece in (result.records or []))
    return [r.value for batch in iter_batches(data) for r in batch.records() if not batch.is_control]


@scenario(count=2)
async def test_kafka_1211_a_restarted_follower_keeps_committed_records_above_its_checkpointed_high_watermark(cluster):
    """KAFKA-1211 (KIP-101): a follower that restarts with a high watermark checkpoint behind its
    log must not truncate to it: the records above it may be committed at the leader, and if the
    leader dies before the follower fetches again, the follower leads with them."""
    a, b = cluster.brokers[0], cluster.brokers[1]
    cluster.controller.elect(0, isr=(0, 1))
    await replicated(cluster, a, [b"m1"])
    first = produce(a, [b"m2"], acks=-1)
    # b has m2 and asked for what follows: a counts m2 committed (its answer carries that high
    # watermark, held 50 ms at a); b drops the partition before it learns it.
    await cluster.until(lambda: b.log.log_end_offset == 2)
    stop_fetching(b)
    await cluster.until(lambda: first)
    assert first[0].error_code == ErrorCode.NONE and a.log.high_watermark == 2
    assert b.log.high_watermark < 2
    b.checkpoint()
    await b.crash()
    await b.start()
    await a.crash()
    cluster.controller.elect(1)  # b was in sync: a clean election
    assert b.partition().is_leader
    assert b.values() == [b"m1", b"m2"]
    assert consumer_read(b) == [b"m1", b"m2"]


@scenario(count=2)
async def test_kafka_6361_two_fast_failovers_leave_no_divergent_logs(cluster):
    """KAFKA-6361 (KIP-279): a's m2 was never replicated; b led an epoch of its own (m3, not
    committed either) and died; a led again before following anyone. b follows a: asked about its
    epoch 1, which a never had, a answers where its epoch 0 ends; b goes back to the end of its
    own epoch 0 and asks again, so its log becomes a's, m3 gone, m2 and m4 copied."""
    a, b = cluster.brokers[0], cluster.brokers[1]
    cluster.controller.elect(0, isr=(0, 1))
    await replicated(cluster, a, [b"m1"])
    await cluster.until(lambda: b.log.log_end_offset == 1)
    stop_fetching(b)
    produce(a, [b"m2"])
    await a.crash()
    cluster.controller.elect(1, isr=(0, 1))  # fast: the controller still counts a in sync
    produce(b, [b"m3"])
    await b.crash()
    await a.start()
    cluster.controller.elect(0, isr=(0, 1))
    produce(a, [b"m4"])
    await b.start()
    cluster.controller.publish(to=(1,))
    await cluster.until(lambda: b.log.log_end_offset == a.log.log_end_offset == 3 and b.values() == a.values())
    assert a.values() == [b"m1", b"m2", b"m4"]
    assert [(e.epoch, e.start_offset) for e in b.log.leader_epoch_cache.entries] == [(e.epoch, e.start_offset) for e in a.log.leader_epoch_cache.entries]


@scenario(count=3)
async def test_kafka_4485_a_follower_rejoins_the_isr_under_steady_load(cluster):
    """KAFKA-4485: under a steady load the leader's log end always moves past the follower's
    fetch; a follower that reaches the high watermark (and the leader epoch's start) rejoins."""
    a = cluster.brokers[0]
    cluster.controller.elect(0, isr=(0, 1))
    stopped = asyncio.Event()

    async def load():
        n = 0
        while not stopped.is_set():
            produce(a, [b"%d" % n])
            n += 1
            await asyncio.sleep(0)  # an append at every turn of the loop: every fetch finds the log moved

    task = asyncio.get_running_loop().create_task(load())
    try:
        await cluster.until(lambda: cluster.controller.isr == (0, 1, 2), timeout=30)
        assert not task.done()  # the load ran all along
    finally:
        stopped.set()
        await task


@scenario(count=2)
async def test_kafka_14704_a_diverging_follower_never_shows_records_below_its_high_watermark_that_the_leader_lacks(cluster):
    """KAFKA-14704: a follower with a diverging tail must truncate before it takes the leader's
    high watermark. At every step, what the follower holds below its high watermark is the
    leader's log."""
    a, b = cluster.brokers[0], cluster.brokers[1]
    cluster.controller.elect(1, isr=(0, 1))
    await replicated(cluster, b, [b"m1"])
    await cluster.until(lambda: a.log.log_end_offset == 1)
    stop_fetching(a)
    produce(b, [b"b-only-1", b"b-only-2"])  # b's tail, never replicated
    await b.crash()
    cluster.controller.elect(0, isr=(0,))
    produce(a, [b"a-1", b"a-2", b"a-3"])
    assert a.log.high_watermark == 4
    await b.start()
    cluster.controller.publish(to=(1,))

    def consistent() -> bool:
        hw = b.log.high_watermark
        below = b.values(upto=hw)
        assert below == a.values(upto=hw), (hw, below)
        return b.log.log_end_offset == 4 and hw == 4

    await cluster.until(consistent)
    assert b.values() == [b"m1", b"a-1", b"a-2", b"a-3"]


@scenario(count=3)
async def test_kafka_9835_no_consumer_read_above_the_high_watermark_while_appends_race(cluster):
    """KAFKA-9835 and KAFKA-9807: a consumer reads below the high watermark (read_uncommitted) and
    the last stable offset (read_committed), whatever was appended meanwhile."""
    a = cluster.brokers[0]
    cluster.controller.elect(0, isr=(0, 1, 2))
    await replicated(cluster, a, [b"c1", b"c2"])
    for follower in (1, 2):
        stop_fetching(cluster.brokers[follower])
    produce(a, [b"u1"])
    assert a.log.log_end_offset == 3 and a.log.high_watermark == 2
    assert consumer_read(a) == [b"c1", b"c2"]
    assert consumer_read(a, offset=2) == []
    # An open transaction at the leader: read_committed stops before it, even once replicated.
    transactional = build_batch([NewRecord(None, b"t1", 1_700_000_000_000)], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    a.replica_manager.append_records([(KEY, transactional)], 1, 30_000, AppendOrigin.CLIENT, lambda answers: None)
    cluster.controller.elect(0, isr=(0, 1, 2))  # a new leader epoch: the followers fetch again
    await cluster.until(lambda: a.log.high_watermark == 4)
    assert a.log.last_stable_offset == 3
    assert consumer_read(a) == [b"c1", b"c2", b"u1", b"t1"]
    assert consumer_read(a, isolation_level=1) == [b"c1", b"c2", b"u1"]


# -- the log alone: retention and the cleaner stay below the high watermark --------------------------


def test_kafka_5634_retention_never_moves_the_log_start_past_the_high_watermark(tmp_path):
    from kcli.storage.log import Log
    from kcli.storage.log_config import LogConfig

    log = Log.open(tmp_path / "orders-0", LogConfig(segment_bytes=200, retention_ms=0))
    for i in range(10):
        log.append(build_batch([NewRecord(None, b"x" * 100, 1_000 + i)]))
    assert len(log.segments) > 3
    log.update_high_watermark(3)
    log.delete_old_segments(now=10**13)
    assert log.log_start_offset <= 3 <= log.high_watermark
    assert log.read(3, 1 << 20).slices  # the records from the high watermark on are all still there


def test_kafka_13194_the_cleaner_never_cleans_past_the_high_watermark(tmp_path):
    from kcli.storage.log import Log
    from kcli.storage.log_cleaner_manager import cleanable_offsets
    from kcli.storage.log_config import LogConfig

    log = Log.open(tmp_path / "orders-0", LogConfig(segment_bytes=200, cleanup_policy=("compact",)))
    for i in range(10):
        log.append(build_batch([NewRecord(b"k", b"x" * 100, 1_000 + i)]))
    log.update_high_watermark(2)
    offsets = cleanable_offsets(log, 0, now=10**13)
    assert offsets.first_uncleanable_dirty_offset <= 2
