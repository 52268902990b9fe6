"""The followers' fetchers of one broker: Kafka's ``AbstractFetcherManager`` / ``ReplicaFetcherManager``.

Each partition this broker follows is fetched by one ``ReplicaFetcher``, the one for its leader
and its fetcher id (``num.replica.fetchers`` per source broker; a partition's id is Kafka's
``abs(31 * topic.hashCode() + partition) % num.replica.fetchers``). The replica manager adds a
partition when it starts following a leader (or a new leader epoch) and removes it when it leads,
stops hosting it, or follows another leader; fetchers left with no partition are stopped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kcli.broker.replica.replica_fetcher import FetcherConfig, InitialFetchState, ReplicaFetcher
from kcli.common import TopicPartition
from kcli.java_compat import signed32, string_hash, utils_abs

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BrokerIdAndFetcherId:
    broker_id: int
    fetcher_id: int


class ReplicaFetcherManager:
    def __init__(
        self,
        broker_id: int,
        replica_manager: Any,
        config: FetcherConfig,
        address_of: Callable[[int], tuple[str, int] | None],
        security: Any = None,
        quota: Any = None,
    ) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.config = config
        self._address_of = address_of
        self._security = security  # the inter-broker listener's
        self.quota = quota  # the follower's replication throttle, shared by every fetcher
        self.fetchers: dict[BrokerIdAndFetcherId, ReplicaFetcher] = {}

    def fetcher_id(self, topic_partition: TopicPartition) -> int:
        """Kafka's AbstractFetcherManager.getFetcherId."""
        topic, partition = topic_partition
        return utils_abs(signed32(31 * string_hash(topic) + partition)) % max(1, self.config.num_fetchers)

    def add_fetcher_for_partitions(self, partitions: Mapping[TopicPartition, InitialFetchState]) -> None:
        """Fetch each partition from its leader, from its initial offset; a partition fetched
        already from another leader moves to this one."""
        by_fetcher: dict[BrokerIdAndFetcherId, dict[TopicPartition, InitialFetchState]] = {}
        for key, state in partitions.items():
            by_fetcher.setdefault(BrokerIdAndFetcherId(state.leader_id, self.fetcher_id(key)), {})[key] = state
        for fetcher_key, states in by_fetcher.items():
            for other_key, other in self.fetchers.items():
                if other_key != fetcher_key:
                    other.remove_partitions(states)
            fetcher = self.fetchers.get(fetcher_key)
            if fetcher is None:
                fetcher = self.fetchers[fetcher_key] = ReplicaFetcher(
                    self.broker_id, fetcher_key.fetcher_id, fetcher_key.broker_id, self.replica_manager, self.config, self._address_of, self._security,
                    self.quota,
                )
                fetcher.start()
            fetcher.add_partitions(states)
            log.info(
                "[ReplicaFetcherManager on broker %d] Added fetcher to broker %d for partitions %s",
                self.broker_id, fetcher_key.broker_id, ", ".join(f"{t}-{p} at {s.init_offset}" for (t, p), s in states.items()),
            )

    def remove_fetcher_for_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        partitions = list(partitions)
        for fetcher in self.fetchers.values():
            fetcher.remove_partitions(partitions)

    def is_fetching(self, topic_partition: TopicPartition) -> bool:
        return any(fetcher.has_partition(topic_partition) for fetcher in self.fetchers.values())

    def shutdown_idle_fetchers(self) -> None:
        for key in [k for k, f in self.fetchers.items() if f.partition_count == 0]:
            fetcher = self.fetchers.pop(key)
            asyncio.ensure_future(fetcher.shutdown())

    async def shutdown(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        await asyncio.gather(*(f.shutdown() for f in fetchers), return_exceptions=True)
