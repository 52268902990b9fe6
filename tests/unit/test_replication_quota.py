"""Replication throttles' arithmetic: Kafka's SimpleRate and Rate over sampled windows, and
ReplicationQuotaManager's throttled replicas, checked against Kafka's definitions
(metrics/stats/SampledStat.java, Rate.java, SimpleRate.java; ReplicationQuotaManager.scala,
TopicConfigHandler.parseThrottledPartitions)."""

from __future__ import annotations

import pytest

from kcli.broker.quotas.rate import SampledRate
from kcli.broker.quotas.replication_quota_manager import ALL_REPLICAS, UNLIMITED, ReplicationQuotaManager, throttled_partitions
from kcli.storage.log_config import LogConfig


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def test_simple_rate_divides_by_at_least_one_window():
    rate = SampledRate(samples=11, sample_ms=1000)
    rate.record(500, 0)
    # 200 ms after the first value: SimpleRate counts the first window whole, not 0.2 s.
    assert rate.measure(200) == pytest.approx(500.0)
    # 4 s later the span is 4 s.
    assert rate.measure(4000) == pytest.approx(125.0)


def test_rate_divides_by_at_least_samples_minus_one_windows():
    """Kafka's Rate (client quotas) assumes N-1 full windows until they have passed."""
    rate = SampledRate(samples=11, sample_ms=1000, simple=False)
    rate.record(1000, 0)
    assert rate.measure(500) == pytest.approx(1000 / 10.5)
    rate.record(1000, 12_000)  # the first window is obsolete by now
    assert rate.measure(12_000) == pytest.approx(1000 / 10)


def test_windows_older_than_samples_times_window_are_dropped():
    rate = SampledRate(samples=3, sample_ms=1000)
    for second in range(3):
        rate.record(300, second * 1000)
    assert rate.measure(2500) == pytest.approx(900 / 2.5)
    # At 3 s the first window (started at 0) is 3 windows old: reset, so it holds nothing.
    assert rate.measure(3000) == pytest.approx(600 / 2.0)
    # A new value reuses the oldest slot.
    rate.record(100, 3500)
    assert rate.measure(3500) == pytest.approx(700 / 2.5)


def test_a_window_is_complete_after_window_ms():
    rate = SampledRate(samples=2, sample_ms=1000)
    rate.record(100, 0)
    rate.record(100, 999)  # same window
    rate.record(100, 1000)  # the next
    rate.record(100, 2000)  # wraps around, resetting the window started at 0
    assert rate.measure(2000) == pytest.approx(200 / 1.0)


def test_rate_needs_windows():
    with pytest.raises(ValueError):
        SampledRate(samples=0)


@pytest.mark.parametrize(
    "value, broker, expected",
    [
        (("*",), 3, ALL_REPLICAS),
        (("0:1", "1:2", "2:1"), 1, frozenset({0, 2})),
        (("0:1", "1:2"), 5, frozenset()),
        ((" 0:1", "3:1 "), 1, frozenset({0, 3})),
    ],
)
def test_throttled_partitions_take_the_entries_naming_this_broker(value, broker, expected):
    assert throttled_partitions(value, broker) == expected


def test_is_throttled_reads_the_side_of_the_topic_config():
    leader = ReplicationQuotaManager("leader", 1)
    follower = ReplicationQuotaManager("follower", 1)
    config = LogConfig(leader_replication_throttled_replicas=("0:1", "1:2"), follower_replication_throttled_replicas=("*",))
    assert leader.is_throttled(0, config)
    assert not leader.is_throttled(1, config)
    assert follower.is_throttled(1, config) and follower.is_throttled(7, config)
    assert not leader.is_throttled(0, LogConfig())


def test_quota_is_exceeded_above_the_bound_and_recovers_as_windows_pass():
    clock = Clock()
    quota = ReplicationQuotaManager("leader", 0, bound=1000, clock=clock)
    assert not quota.is_quota_exceeded()
    quota.record(900)
    assert not quota.is_quota_exceeded()  # 900 B over the first (whole) window
    quota.record(200)
    assert quota.is_quota_exceeded()  # 1,100 B/s
    clock.now += 1500
    assert not quota.is_quota_exceeded()  # 1,100 B over 1.5 s
    assert quota.rate() == pytest.approx(1100 / 1.5)


def test_unlimited_quota_is_never_exceeded_and_updates_apply():
    clock = Clock()
    quota = ReplicationQuotaManager("follower", 0, clock=clock)
    assert quota.bound == UNLIMITED
    quota.record(10**12)
    assert not quota.is_quota_exceeded()
    quota.update_quota(1000)
    assert quota.is_quota_exceeded()
    quota.update_quota(1000, samples=5, window_seconds=2)  # new windows start empty
    assert not quota.is_quota_exceeded()


def test_unknown_side_is_refused():
    with pytest.raises(ValueError):
        ReplicationQuotaManager("observer", 0)


def test_throttle_time_is_how_long_until_the_rate_is_back_at_the_bound():
    clock = Clock()
    quota = ReplicationQuotaManager("leader", 0, bound=1000, clock=clock)
    assert quota.throttle_time_ms() == 0
    quota.record(3000)  # 3,000 B over the first whole window: 3,000 B/s
    wait = quota.throttle_time_ms()
    assert wait == 3000  # the rate is 1,000 B/s once the 3,000 B span 3 s
    clock.now += wait
    assert not quota.is_quota_exceeded() and quota.throttle_time_ms() == 0
    clock.now -= 1
    assert quota.is_quota_exceeded() and quota.throttle_time_ms() == 1


def test_rate_throttle_time_is_kafkas_quota_utils_formula():
    rate = SampledRate(samples=11, sample_ms=1000, simple=False)
    rate.record(20_000, 0)  # 20,000 over the assumed 10 s: 2,000/s
    assert rate.ms_until_at_most(2000, 0) == 0
    assert rate.ms_until_at_most(1000, 0) == 10_000  # (2000 - 1000) / 1000 x 10 s
