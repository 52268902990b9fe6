"""Several brokers' replicas of one partition in one process, for replication scenarios that need
an exact order of events (Kafka's replication bugs).

Each ``InProcessBroker`` is the broker's real data path: a ``LogManager`` on its own directory,
a ``ReplicaManager``, a ``Server`` on 127.0.0.1 answering Produce, Fetch,
OffsetForLeaderEpoch, ListOffsets and ApiVersions with the broker's own handlers, and a ``ReplicaFetcherManager``
whose fetchers reach the other brokers over real sockets. What a ZooKeeper cluster adds is played
by ``Controller``: it elects (LeaderAndIsr to each live replica, as the controller decides) and
answers the leaders' ISR changes at once, as the controller's AlterPartition does, on the event
loop. Time for the ISR's lag rule and the replication throttles is a manual clock; nothing else waits on wall-clock time but
the fetchers' own round trips, which tests await with ``until``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kcli.broker.handlers import load_registry
from kcli.broker.network.server import Server
from kcli.broker.quotas.replication_quota_manager import ReplicationQuotaManager
from kcli.broker.replica.fetch_sessions import FetchSessionCache
from kcli.broker.replica.replica_fetcher import FetcherConfig
from kcli.broker.replica.replica_fetcher_manager import ReplicaFetcherManager
from kcli.broker.replica.replica_manager import ReplicaManager
from kcli.errors import ErrorCode
from kcli.metadata.topics import PartitionState, TopicPartitionState
from kcli.protocol.api_keys import ApiKey
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager

TOPIC = "orders"
LAG_MS = 10_000
SERVED = {ApiKey.FETCH, ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.LIST_OFFSETS, ApiKey.API_VERSIONS, ApiKey.PRODUCE}


class ManualClock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class _Config:
    """The broker configs the served handlers read."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def get(self, key: str) -> Any:
        return self.values[key]


class InProcessBroker:
    def __init__(self, broker_id: int, log_dir: Path, cluster: InProcessCluster) -> None:
        self.id = broker_id
        self.log_dir = log_dir
        self.cluster = cluster
        self.config = _Config({"fetch.max.bytes": 52_428_800})
        self.registry = {key: api for key, api in load_registry().items() if key in SERVED}
        self.handlers = self.registry
        self.fetch_sessions = FetchSessionCache()
        self.server: Server | None = None
        self.address: tuple[str, int] | None = None
        self.replica_manager: ReplicaManager | None = None
        self.log_manager: LogManager | None = None

    @property
    def alive(self) -> bool:
        return self.replica_manager is not None

    async def start(self) -> None:
        """Open the logs (reading the checkpoints, as a start does) and listen."""
        self.log_manager = LogManager([self.log_dir], LogConfig(min_insync_replicas=self.cluster.min_insync_replicas))
        manager = ReplicaManager(self.id, self.log_manager, replica_lag_time_max_ms=LAG_MS, clock=self.cluster.clock)
        # Replication throttles, unlimited until a test sets a bound; they share the manual clock.
        self.leader_quota = ReplicationQuotaManager("leader", self.id, clock=self.cluster.clock)
        self.follower_quota = ReplicationQuotaManager("follower", self.id, clock=self.cluster.clock)
        manager.leader_quota = self.leader_quota
        manager.replica_fetcher_manager = ReplicaFetcherManager(
            self.id, manager, self.cluster.fetcher_config, self.cluster.address_of, quota=self.follower_quota
        )
        manager.alter_isr_manager = self.cluster.controller.isr_sender(self)
        self.replica_manager = manager
        self.server = Server(self, self.registry)
        self.address = await self.server.listen("127.0.0.1", 0)

    async def crash(self) -> None:
        """Stop as kill -9 would leave the disk: no checkpoint written beyond the last one taken
        (``checkpoint``), the logs' files closed as they are."""
        manager, self.replica_manager = self.replica_manager, None
        self.server.stop_accepting()
        await self.server.drain_and_close(1)
        await manager.replica_fetcher_manager.shutdown()
        self.log_manager.abandon()
        self.server = self.address = None

    def checkpoint(self) -> None:
        """Write the high watermarks and recovery points, as the broker's timers do."""
        self.log_manager.checkpoint_high_watermarks()
        self.log_manager.checkpoint_recovery_points()

    def partition(self) -> Any:
        return self.replica_manager._partitions.get((TOPIC, 0))

    @property
    def log(self) -> Any:
        return self.partition().log

    def values(self, upto: int | None = None) -> list[bytes]:
        """The values of the log's records below ``upto`` (its log end by default)."""
        end = self.log.log_end_offset if upto is None else upto
        data = b"".join(piece.read() for piece in self.log.read(self.log.log_start_offset, 1 << 30, max_offset=end).slices)
        from kcli.storage.records import iter_batches

        return [r.value for batch in iter_batches(data) for r in batch.records() if r.offset < end]


class Controller:
    """The partition's state as the controller keeps it, and its two decisions: elect (send
    LeaderAndIsr) and answer an ISR change (AlterPartition)."""

    def __init__(self, cluster: InProcessCluster, replicas: tuple[int, ...]) -> None:
        self.cluster = cluster
        self.replicas = replicas
        self.topic_id = uuid.uuid4()
        self.leader = -1
        self.leader_epoch = -1
        self.partition_epoch = 0
        self.isr: tuple[int, ...] = replicas
        self.hold_isr_changes = False  # while set, AlterPartition waits unanswered (a slow controller)
        self._held: list[Callable[[], None]] = []

    def state(self) -> PartitionState:
        return PartitionState(
            replicas=self.replicas, isr=self.isr, leader=self.leader, leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch, controller_epoch=1,
        )

    def elect(self, leader: int, isr: tuple[int, ...] | None = None) -> None:
        """A new leader epoch with ``leader`` (and ``isr``, else the current ISR among live
        brokers, leader included), sent to every live replica."""
        self.leader = leader
        self.leader_epoch += 1
        self.partition_epoch += 1
        if isr is None:
            isr = tuple(r for r in self.isr if self.cluster.brokers[r].alive) or (leader,)
        self.isr = isr if leader in isr else (leader, *isr)
        self.publish()

    def publish(self, to: tuple[int, ...] | None = None) -> None:
        """LeaderAndIsr of the current state to ``to`` (every live replica by default; a broker
        that starts gets it alone, as Kafka's controller's onBrokerStartup sends it)."""
        update = TopicPartitionState(TOPIC, self.topic_id, 0, self.state())
        for broker_id in self.replicas if to is None else to:
            broker = self.cluster.brokers[broker_id]
            if broker.alive:
                error, errors = broker.replica_manager.become_leader_or_follower(99, 1, [update])
                assert error == ErrorCode.NONE and errors[(TOPIC, 0)] == ErrorCode.NONE, (broker_id, error, errors)

    def isr_sender(self, broker: InProcessBroker) -> Any:
        controller = self

        class _Sender:
            def submit(self, partition: Any, proposal: Any) -> None:
                asyncio.get_running_loop().call_soon(controller._alter, broker, partition, proposal)

            async def shutdown(self) -> None:
                pass

        return _Sender()

    def _alter(self, broker: InProcessBroker, partition: Any, proposal: Any) -> None:
        if self.hold_isr_changes:
            self._held.append(lambda: self._alter(broker, partition, proposal))
            return
        if not broker.alive or broker.replica_manager._partitions.get((TOPIC, 0)) is not partition:
            return
        if proposal.leader_epoch != self.leader_epoch or proposal.partition_epoch != self.partition_epoch:
            partition.isr_change_refused(proposal, ErrorCode.INVALID_UPDATE_VERSION)
            return
        self.isr = tuple(proposal.isr)
        self.partition_epoch += 1
        if partition.isr_change_answered(proposal, self.isr, self.leader_epoch, self.partition_epoch):
            broker.replica_manager.try_complete_delayed_requests((TOPIC, 0))

    def release_isr_changes(self) -> None:
        self.hold_isr_changes = False
        held, self._held = self._held, []
        for answer in held:
            answer()


class InProcessCluster:
    def __init__(self, root: Path, count: int = 3, min_insync_replicas: int = 1) -> None:
        self.clock = ManualClock()
        self.min_insync_replicas = min_insync_replicas
        self.fetcher_config = FetcherConfig(max_wait_ms=50, backoff_ms=20, socket_timeout_ms=5000)
        self.brokers = {i: InProcessBroker(i, root / f"broker-{i}", self) for i in range(count)}
        self.controller = Controller(self, tuple(range(count)))

    def address_of(self, broker_id: int) -> tuple[str, int] | None:
        broker = self.brokers.get(broker_id)
        return broker.address if broker is not None and broker.alive else None

    async def start(self) -> InProcessCluster:
        for broker in self.brokers.values():
            await broker.start()
        return self

    async def stop(self) -> None:
        for broker in self.brokers.values():
            if broker.alive:
                await broker.crash()

    def leader(self) -> InProcessBroker:
        return self.brokers[self.controller.leader]

    async def until(self, condition: Callable[[], Any], timeout: float = 20.0) -> Any:
        """Let the fetchers run until ``condition()`` is true (an AssertionError after ``timeout``)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            value = condition()
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"not reached within {timeout} s")
            await asyncio.sleep(0.01)
