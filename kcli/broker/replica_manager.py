"""The partitions this broker hosts, their logs, and the wake-ups of waiting fetches.

A ``Partition`` is the broker's view of one topic-partition it leads: its log, its leader epoch,
its replicas and in-sync replicas, and its high watermark. In single-process mode the ISR is this
broker alone, so an append is committed (the high watermark moves) as soon as it is written;
``acks=all`` still honours ``min.insync.replicas`` against the ISR, as Kafka does. The replica
manager is the seam where follower fetching and ISR changes join in cluster mode.

Long-poll fetches do not poll: a fetch that must wait registers one future under each partition
it reads, and an append completes the futures of its partition.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable

from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError
from kcli.storage.log import Log, LogAppendInfo
from kcli.storage.log_manager import LogManager
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import RecordBatch


class Partition:
    __slots__ = ("topic", "index", "topic_id", "log", "leader_epoch", "replicas", "isr", "broker_id")

    def __init__(self, topic: str, index: int, topic_id: uuid.UUID | None, log: Log, *, leader_epoch: int, replicas: list[int], isr: list[int], broker_id: int) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.leader_epoch = leader_epoch
        self.replicas = replicas
        self.isr = isr
        self.broker_id = broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    def append(self, records: bytes | memoryview | RecordBatch, required_acks: int, origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Append as the leader: a client's produce (the batch's header as the handler read it, over
        the request's bytes), or (``origin``) a coordinator's own batches."""
        if required_acks == -1:
            min_isr = self.log.config.min_insync_replicas
            if len(self.isr) < min_isr:
                raise KafkaError(
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    f"The size of the current ISR {set(self.isr)} is insufficient to satisfy the min.isr requirement of {min_isr} for partition {self.topic}-{self.index}",
                )
        info = self.log.append(records, leader_epoch=self.leader_epoch, origin=origin)
        if self.isr == [self.broker_id]:
            self.log.update_high_watermark(self.log.log_end_offset)
        return info

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing of requests that carry the client's idea of the leader epoch."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"{current_leader_epoch} is older than the leader epoch {self.leader_epoch}")
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"{current_leader_epoch} is newer than the leader epoch {self.leader_epoch}")


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, metadata=None) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        # The broker's MetadataCache: tells a partition led elsewhere from an unknown one.
        self.metadata = metadata
        self._partitions: dict[TopicPartition, Partition] = {}
        self._by_id: dict[uuid.UUID, str] = {}
        self._waiters: dict[TopicPartition, set[asyncio.Future]] = {}
        self.closing = False

    # -- hosting -----------------------------------------------------------------------------------

    def become_leader(self, topic: str, index: int, topic_id: uuid.UUID | None, *, leader_epoch: int, replicas: list[int], isr: list[int]) -> Partition:
        """Host the partition as its leader, opening or creating its log."""
        key = (topic, index)
        log = self.log_manager.get_or_create_log(topic, index, topic_id)
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

    def stop_replicas(self, topic: str, indexes: Iterable[int], *, delete: bool) -> None:
        for index in indexes:
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
            if info is not None and index in info.partitions:
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
