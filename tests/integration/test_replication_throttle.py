"""Replication throttles and follower fetch sessions on in-process replicas
(``tests/replicas_in_process.py``: the real replica managers, fetchers and Fetch handler over
sockets; the throttles' clock is the cluster's manual clock, so a rate is exact).

Kafka's rules (ReplicaManager.shouldLeaderThrottle, ReplicaFetcherThread.shouldFollowerThrottle):
a replica outside the ISR, of a partition its topic's ``*.replication.throttled.replicas`` names,
gets nothing while that side's rate is above its limit; an in-sync replica is never held back."""

from __future__ import annotations

import asyncio
import dataclasses

from kcli.broker.replica.fetch_sessions import FetchSessionCache
from kcli.broker.replica.replica_fetcher import FetcherConfig
from kcli.errors import ErrorCode
from tests.integration.test_replication_kafka_bugs import KEY, produce, replicated, scenario

VALUE = b"v" * 600  # one record per batch: a batch is some 670 bytes


def one_batch_per_fetch(cluster) -> None:
    """Followers fetch a single batch per request (partition max bytes 1: at least one batch)."""
    cluster.fetcher_config = dataclasses.replace(cluster.fetcher_config, partition_max_bytes=1)
    for broker in cluster.brokers.values():
        broker.replica_manager.replica_fetcher_manager.config = cluster.fetcher_config


def throttle_topic(broker, **configs) -> None:
    """Give ``broker``'s logs the topic config ``configs`` (as a topic config change does)."""
    manager = broker.log_manager
    manager.default_config = dataclasses.replace(manager.default_config, **configs)
    if broker.partition() is not None:
        manager.update_topic_config(KEY[0], manager.default_config)


async def stays_at(cluster, broker, offset: int) -> None:
    """The follower's log end is ``offset`` and, over a few dozen fetch round trips, stays there."""
    await cluster.until(lambda: broker.log.log_end_offset == offset)
    await asyncio.sleep(0.5)
    assert broker.log.log_end_offset == offset


@scenario(count=2)
async def test_the_leader_holds_back_a_throttled_follower_outside_the_isr_at_its_rate(cluster):
    one_batch_per_fetch(cluster)
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    throttle_topic(leader, leader_replication_throttled_replicas=("0:0",))
    leader.leader_quota.update_quota(1000)
    cluster.controller.elect(0, isr=(0,))
    for _ in range(6):
        produce(leader, [VALUE])
    # One batch: 670 B/s, under the limit; a second: above it (Kafka counts what it sent).
    await stays_at(cluster, follower, 2)
    assert leader.leader_quota.rate() > 1000
    cluster.clock.now += 1500  # the rate falls under the limit: one more batch, then above again
    await stays_at(cluster, follower, 3)
    cluster.clock.now += 60_000  # every window obsolete: two batches again
    await stays_at(cluster, follower, 5)
    leader.leader_quota.update_quota(10**9)
    await cluster.until(lambda: follower.log.log_end_offset == 6)
    assert follower.values() == leader.values()


@scenario(count=2)
async def test_the_follower_leaves_a_throttled_partition_out_of_its_fetch_at_its_rate(cluster):
    one_batch_per_fetch(cluster)
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    throttle_topic(follower, follower_replication_throttled_replicas=("0:1",))
    follower.follower_quota.update_quota(1000)
    cluster.controller.elect(0, isr=(0,))
    for _ in range(5):
        produce(leader, [VALUE])
    await stays_at(cluster, follower, 2)
    assert follower.follower_quota.rate() > 1000
    assert leader.leader_quota.rate() == 0  # the leader's side is not throttled: nothing counted
    cluster.clock.now += 1500
    await stays_at(cluster, follower, 3)
    follower.follower_quota.update_quota(10**9)
    await cluster.until(lambda: follower.log.log_end_offset == 5)


@scenario(count=2)
async def test_a_throttled_replica_of_another_broker_or_partition_is_not_held_back(cluster):
    one_batch_per_fetch(cluster)
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    # Throttles naming broker 1 on the leader's side and partition 3 on the follower's: neither
    # applies to partition 0 between leader 0 and follower 1.
    throttle_topic(leader, leader_replication_throttled_replicas=("0:1",))
    throttle_topic(follower, follower_replication_throttled_replicas=("3:1",))
    leader.leader_quota.update_quota(1)
    follower.follower_quota.update_quota(1)
    cluster.controller.elect(0, isr=(0,))
    for _ in range(5):
        produce(leader, [VALUE])
    await cluster.until(lambda: follower.log.log_end_offset == 5)


@scenario(count=2)
async def test_an_in_sync_follower_is_never_throttled(cluster):
    one_batch_per_fetch(cluster)
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    throttle_topic(leader, leader_replication_throttled_replicas=("*",))
    throttle_topic(follower, follower_replication_throttled_replicas=("*",))
    cluster.controller.elect(0, isr=(0, 1))
    await replicated(cluster, leader, [VALUE])  # the follower is caught up
    for quota in (leader.leader_quota, follower.follower_quota):
        quota.update_quota(1000)
        quota.record(10**6)
        assert quota.is_quota_exceeded()
    for _ in range(3):
        await replicated(cluster, leader, [VALUE])
    assert follower.log.log_end_offset == 4
    # Bytes of throttled replicas are counted in sync or not, as in Kafka.
    assert leader.leader_quota.rate() > 10**6 and follower.follower_quota.rate() > 10**6


@scenario(count=2)
async def test_followers_fetch_in_an_incremental_session_and_open_another_when_it_is_lost(cluster):
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    cluster.controller.elect(0)
    await replicated(cluster, leader, [b"one"])
    [session] = leader.fetch_sessions._sessions.values()
    assert list(session.partitions) == [KEY]
    first_epoch = session.epoch
    await replicated(cluster, leader, [b"two"])
    assert session.epoch > first_epoch  # the same session, fetched in again and again
    # The leader forgets every session (as a restarted leader has none): the follower's next
    # incremental fetch is refused with FETCH_SESSION_ID_NOT_FOUND, and it opens a new one.
    leader.fetch_sessions = FetchSessionCache()
    answers = produce(leader, [b"three"], acks=-1)
    await cluster.until(lambda: answers)
    assert answers[0].error_code == ErrorCode.NONE
    await cluster.until(lambda: len(leader.fetch_sessions) == 1)
    assert follower.values() == [b"one", b"two", b"three"]
