"""Replication throttles: Kafka's ``ReplicationQuotaManager`` for the leader and for the follower.

A broker keeps two: the leader's counts the bytes it sends to followers for throttled replicas,
the follower's the bytes its fetchers append for throttled replicas. Which replicas are throttled
is a topic config, ``leader.replication.throttled.replicas`` and
``follower.replication.throttled.replicas``: ``*`` or a list of ``partition:broker``, of which a
broker takes the entries naming itself (Kafka's TopicConfigHandler). The limits are the dynamic
broker configs ``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate``
(bytes per second, unlimited by default), over ``replication.quota.window.num`` windows of
``replication.quota.window.size.seconds`` (Kafka's SimpleRate).

A throttle holds back only replicas outside the ISR (a reassignment's new replicas, a follower
catching up): a leader leaves a throttled partition's records out of a follower's Fetch answer
while its rate is above the limit, and a follower leaves a throttled partition out of its Fetch
request while its own is. Bytes of throttled replicas are counted whether in sync or not, as in
Kafka. Both are used on the broker's event loop only.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from kcli.broker.quotas.rate import SampledRate

UNLIMITED = (1 << 63) - 1  # Kafka's Long.MaxValue: no limit
ALL_REPLICAS = frozenset({-1})  # "*": every partition of the topic


@functools.lru_cache(maxsize=1024)
def throttled_partitions(value: tuple[str, ...], broker_id: int) -> frozenset[int]:
    """The partitions of a topic whose replica on ``broker_id`` a throttled-replicas config
    names (Kafka's parseThrottledPartitions); ``ALL_REPLICAS`` for ``*``."""
    if value == ("*",):
        return ALL_REPLICAS
    found = set()
    for item in value:
        partition, _, broker = item.strip().partition(":")
        if broker and int(broker) == broker_id:
            found.add(int(partition))
    return frozenset(found)


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ReplicationQuotaManager:
    """One side's replication throttle (``kind`` is ``leader`` or ``follower``)."""

    def __init__(
        self, kind: str, broker_id: int, *, bound: int = UNLIMITED, samples: int = 11, window_seconds: int = 1,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        if kind not in ("leader", "follower"):
            raise ValueError(f"no replication quota of kind {kind!r}")
        self.kind = kind
        self.broker_id = broker_id
        self.config_key = f"{kind}.replication.throttled.replicas"
        self._attribute = self.config_key.replace(".", "_")
        self.clock = clock
        self._rate = SampledRate(samples, window_seconds * 1000)
        self.bound = bound

    def update_quota(self, bound: int, *, samples: int | None = None, window_seconds: int | None = None) -> None:
        """A new limit (bytes per second), and new windows when their configs changed."""
        self.bound = bound
        if (samples is not None and samples != self._rate.samples) or (
            window_seconds is not None and window_seconds * 1000 != self._rate.sample_ms
        ):
            self._rate = SampledRate(samples or self._rate.samples, (window_seconds or self._rate.sample_ms // 1000) * 1000)

    def is_throttled(self, index: int, log_config) -> bool:
        """Whether this broker's replica of partition ``index`` is throttled on this side, by its
        topic's config (``log_config``, a ``LogConfig``)."""
        value = getattr(log_config, self._attribute, ())
        if not value:
            return False
        partitions = throttled_partitions(value, self.broker_id)
        return partitions is ALL_REPLICAS or index in partitions

    def is_quota_exceeded(self) -> bool:
        if self.bound >= UNLIMITED:
            return False
        return self._rate.measure(self.clock()) > self.bound

    def throttle_time_ms(self) -> int:
        """How long until the rate is back at the limit with nothing more recorded; 0 when it is
        not above."""
        if self.bound >= UNLIMITED or self.bound <= 0:
            return 0
        return self._rate.ms_until_at_most(self.bound, self.clock())

    def record(self, size: int) -> None:
        """Count bytes of throttled replicas, whether or not the limit is exceeded."""
        if size <= 0:
            return
        self._rate.record(size, self.clock())

    def rate(self) -> float:
        """The measured bytes per second (Kafka's ``byte-rate`` metric)."""
        return self._rate.measure(self.clock())
