"""The partitions this broker hosts, their logs, and the wake-ups of waiting fetches.

Each hosted topic-partition is a ``Partition`` (``partition.py``), kept as a leader or as a
follower. The replica manager is the seam where follower fetching and ISR changes join in
cluster mode.

In cluster mode the controller drives it (Kafka's ReplicaManager.becomeLeaderOrFollower and
stopReplicas): ``become_leader_or_follower`` applies a LeaderAndIsr request, ``stop_replicas_request``
a StopReplica request, each fenced by the controller epoch (``controller_epoch``, the newest seen)
and per partition by the leader epoch. A follower hosts its log but serves no produce or fetch:
replicating into it is a later step, so it just keeps what it has.

Long-poll fetches do not poll: a fetch that must wait registers one future under each partition
it reads, and an append completes the futures of its partition.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from kcli.broker.partition import Partition
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError, KafkaStorageError, KcliError
from kcli.storage.log import InconsistentTopicIdError
from kcli.storage.log_manager import LogManager

log = logging.getLogger("kcli.broker.state.change")

# Kafka's KafkaController.InitialControllerEpoch, and LeaderAndIsr's epochs a StopReplica may carry
# instead of a partition's leader epoch: NoEpoch (a controller of before KIP-570), EpochDuringDelete
# (the topic is being deleted).
INITIAL_CONTROLLER_EPOCH = 0
NO_EPOCH = -1
EPOCH_DURING_DELETE = -2


@dataclass(frozen=True, slots=True)
class PartitionStateUpdate:
    """One partition of a LeaderAndIsr request, as the replica manager applies it."""

    topic: str
    index: int
    topic_id: uuid.UUID | None
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class StopPartition:
    """One partition of a StopReplica request."""

    topic: str
    index: int
    leader_epoch: int
    delete: bool


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, metadata=None) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        # The broker's MetadataCache: tells a partition led elsewhere from an unknown one.
        self.metadata = metadata
        self._partitions: dict[TopicPartition, Partition] = {}
        # Partitions this broker follows: their logs are open, nothing is served from them.
        self._followers: dict[TopicPartition, Partition] = {}
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        self._by_id: dict[uuid.UUID, str] = {}
        self._waiters: dict[TopicPartition, set[asyncio.Future]] = {}
        self.closing = False

    # -- hosting -----------------------------------------------------------------------------------

    def become_leader(self, topic: str, index: int, topic_id: uuid.UUID | None, *, leader_epoch: int, replicas: list[int], isr: list[int]) -> Partition:
        """Host the partition as its leader, opening or creating its log."""
        key = (topic, index)
        log = self.log_manager.get_or_create_log(topic, index, topic_id)
        self._followers.pop(key, None)
        log.maybe_assign_epoch_start_offset(leader_epoch, log.log_end_offset)
        if list(isr) == [self.broker_id]:
            log.update_high_watermark(log.log_end_offset)
        partition = self._partitions.get(key)
        if partition is None:
            partition = Partition(topic, index, topic_id, log, leader_epoch=leader_epoch, replicas=list(replicas), isr=list(isr), broker_id=self.broker_id)
            self._partitions[key] = partition
        else:
            partition.leader_epoch, partition.replicas, partition.isr = leader_epoch, list(replicas), list(isr)
        if topic_id is not None:
            self._by_id[topic_id] = topic
        return partition

    def become_follower(self, topic: str, index: int, topic_id: uuid.UUID | None, *, leader_epoch: int, replicas: list[int], isr: list[int]) -> Partition:
        """Host the partition's log as a follower: a leader here steps down (its waiting fetches
        are woken to answer NOT_LEADER_OR_FOLLOWER), the log is created when new and kept."""
        key = (topic, index)
        log = self.log_manager.get_or_create_log(topic, index, topic_id)
        led = self._partitions.pop(key, None)
        if led is not None:
            self.notify(key)
        partition = Partition(topic, index, topic_id, log, leader_epoch=leader_epoch, replicas=list(replicas), isr=list(isr), broker_id=self.broker_id)
        self._followers[key] = partition
        return partition

    def hosted_leader_epoch(self, topic: str, index: int) -> int:
        """The leader epoch of the partition as hosted here (leader or follower); -1 when not hosted."""
        key = (topic, index)
        hosted = self._partitions.get(key) or self._followers.get(key)
        return hosted.leader_epoch if hosted is not None else NO_EPOCH

    def is_follower(self, topic: str, index: int) -> bool:
        return (topic, index) in self._followers

    async def open_logs(self, controller_epoch: int, updates: Iterable[PartitionStateUpdate]) -> None:
        """Open or create, in a worker thread, the logs a LeaderAndIsr request is about to host
        here, so that applying it (on the loop) does not wait on the disk: a request for a topic
        of a thousand partitions would otherwise hold every other client for seconds. Errors are
        left for ``become_leader_or_follower`` to meet and answer."""
        if controller_epoch < self.controller_epoch:
            return
        new = [
            (u.topic, u.index, _topic_id_of(u))
            for u in updates
            if self.broker_id in u.replicas and self.log_manager.get_log(u.topic, u.index) is None
        ]
        if new:
            await asyncio.get_running_loop().run_in_executor(None, self._open_logs, new)

    def _open_logs(self, partitions) -> None:
        for topic, index, topic_id in partitions:
            try:
                self.log_manager.get_or_create_log(topic, index, topic_id)
            except (OSError, KcliError):
                pass

    def become_leader_or_follower(self, controller_id: int, controller_epoch: int, updates: Iterable[PartitionStateUpdate]) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """Apply a LeaderAndIsr request (Kafka's ReplicaManager.becomeLeaderOrFollower): the
        request's error and each partition's. A request from an older controller epoch changes
        nothing (STALE_CONTROLLER_EPOCH); a partition whose leader epoch is not newer than the one
        hosted is left as it is (STALE_CONTROLLER_EPOCH), one that does not list this broker among
        its replicas is refused (UNKNOWN_TOPIC_OR_PARTITION)."""
        updates = list(updates)
        if controller_epoch < self.controller_epoch:
            log.warning(
                "Ignoring LeaderAndIsr request from controller %d since its controller epoch %d is old. "
                "Latest known controller epoch is %d", controller_id, controller_epoch, self.controller_epoch,
            )
            return ErrorCode.STALE_CONTROLLER_EPOCH, {(u.topic, u.index): ErrorCode.STALE_CONTROLLER_EPOCH for u in updates}
        self.controller_epoch = controller_epoch
        errors: dict[TopicPartition, ErrorCode] = {}
        for update in updates:
            key = (update.topic, update.index)
            current = self.hosted_leader_epoch(*key)
            log.debug(
                "[Broker id=%d] Received LeaderAndIsr request from controller %d epoch %d for partition %s-%d: leader %d, "
                "leader epoch %d, replicas %s, isr %s", self.broker_id, controller_id, controller_epoch, update.topic, update.index,
                update.leader, update.leader_epoch, list(update.replicas), list(update.isr),
            )
            if self.log_manager.is_partition_offline(*key):
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            elif update.leader_epoch <= current:
                log.info(
                    "Ignoring LeaderAndIsr request from controller %d epoch %d for partition %s-%d since its associated "
                    "leader epoch %d is not higher than the current leader epoch %d",
                    controller_id, controller_epoch, update.topic, update.index, update.leader_epoch, current,
                )
                errors[key] = ErrorCode.STALE_CONTROLLER_EPOCH
            elif self.broker_id not in update.replicas:
                log.warning(
                    "Ignoring LeaderAndIsr request from controller %d epoch %d as broker %d is not in the assigned "
                    "replica list %s of partition %s-%d", controller_id, controller_epoch, self.broker_id,
                    ",".join(map(str, update.replicas)), update.topic, update.index,
                )
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                errors[key] = self._apply(update)
        return ErrorCode.NONE, errors

    def _apply(self, update: PartitionStateUpdate) -> ErrorCode:
        role = self.become_leader if update.leader == self.broker_id else self.become_follower
        try:
            role(update.topic, update.index, _topic_id_of(update), leader_epoch=update.leader_epoch, replicas=list(update.replicas), isr=list(update.isr))
        except InconsistentTopicIdError as e:
            # The log here belongs to an earlier topic of the same name: it is left as it is.
            log.error("[Broker id=%d] Topic Id of partition %s-%d does not match the request's: %s", self.broker_id, update.topic, update.index, e)
            return ErrorCode.INCONSISTENT_TOPIC_ID
        except (OSError, KafkaStorageError) as e:
            log.error("Could not host partition %s-%d: %s", update.topic, update.index, e)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NONE

    def stop_replicas_request(self, controller_id: int, controller_epoch: int, partitions: Iterable[StopPartition]) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """Apply a StopReplica request (Kafka's ReplicaManager.stopReplicas): stop hosting each
        partition, deleting its log when asked, even when it is not hosted (a replica of a topic
        deleted while this broker was down). A hosted partition whose leader epoch is newer than
        the request's stays (FENCED_LEADER_EPOCH); a request from an older controller epoch
        changes nothing (STALE_CONTROLLER_EPOCH)."""
        partitions = list(partitions)
        if controller_epoch < self.controller_epoch:
            log.warning(
                "Ignoring StopReplica request from controller %d since its controller epoch %d is old. "
                "Latest known controller epoch is %d", controller_id, controller_epoch, self.controller_epoch,
            )
            return ErrorCode.STALE_CONTROLLER_EPOCH, {}
        self.controller_epoch = controller_epoch
        errors: dict[TopicPartition, ErrorCode] = {}
        for stop in partitions:
            key = (stop.topic, stop.index)
            current = self.hosted_leader_epoch(*key)
            if self.log_manager.is_partition_offline(*key):
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            elif current != NO_EPOCH and stop.leader_epoch not in (NO_EPOCH, EPOCH_DURING_DELETE) and stop.leader_epoch <= current:
                log.info(
                    "Ignoring StopReplica request (delete=%s) from controller %d epoch %d for partition %s-%d since its "
                    "associated leader epoch %d is not higher than the current leader epoch %d",
                    stop.delete, controller_id, controller_epoch, stop.topic, stop.index, stop.leader_epoch, current,
                )
                errors[key] = ErrorCode.FENCED_LEADER_EPOCH
            else:
                try:
                    self.stop_replicas(stop.topic, [stop.index], delete=stop.delete)
                    errors[key] = ErrorCode.NONE
                except (OSError, KafkaStorageError) as e:
                    log.error("Could not stop replica %s-%d: %s", stop.topic, stop.index, e)
                    errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NONE, errors

    def stop_replicas(self, topic: str, indexes: Iterable[int], *, delete: bool) -> None:
        for index in indexes:
            self._followers.pop((topic, index), None)
            partition = self._partitions.pop((topic, index), None)
            if partition is not None and partition.topic_id is not None:
                self._by_id.pop(partition.topic_id, None)
            if delete:
                self.log_manager.delete_log(topic, index)
            self.notify((topic, index))

    def update_config(self, topic: str) -> None:
        self.log_manager.update_topic_config(topic, self.log_manager.config_for(topic))

    # -- lookups -----------------------------------------------------------------------------------

    def partition(self, topic: str, index: int) -> Partition:
        found = self._partitions.get((topic, index))
        if found is None:
            if self.log_manager.is_partition_offline(topic, index):
                raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"The log of {topic}-{index} is in an offline log dir")
            info = self.metadata.topic(topic) if self.metadata is not None else None
            if (topic, index) in self._followers or (info is not None and index in info.partitions):
                # Kafka's ReplicaManager.getPartitionOrError: the partition exists, led elsewhere
                # (or by nobody while it is offline).
                raise KafkaError(
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    f"Broker {self.broker_id} is not the leader of {topic}-{index}",
                )
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return found

    def get(self, topic: str, index: int) -> Partition | None:
        return self._partitions.get((topic, index))

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    # -- waiting for data --------------------------------------------------------------------------

    def notify(self, key: TopicPartition) -> None:
        waiters = self._waiters.pop(key, None)
        if waiters:
            for future in waiters:
                if not future.done():
                    future.set_result(key)

    def notify_all(self) -> None:
        """At shutdown: wake every waiting fetch, and let none wait again, so each answers now."""
        self.closing = True
        for key in list(self._waiters):
            self.notify(key)

    async def wait_for_data(self, keys: Iterable[TopicPartition], timeout: float) -> bool:
        """Wait until an append to one of ``keys`` or ``timeout`` seconds; True when woken by data."""
        future = asyncio.get_running_loop().create_future()
        keys = list(keys)
        for key in keys:
            self._waiters.setdefault(key, set()).add(future)
        try:
            await asyncio.wait_for(future, timeout)
            return True
        except TimeoutError:
            return False
        finally:
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(future)
                    if not waiters:
                        del self._waiters[key]


def _topic_id_of(update: PartitionStateUpdate) -> uuid.UUID | None:
    """The update's topic id; None from a request without topic ids (LeaderAndIsr v0-4), which
    names the topic by its name alone."""
    return update.topic_id if update.topic_id is not None and update.topic_id.int != 0 else None
