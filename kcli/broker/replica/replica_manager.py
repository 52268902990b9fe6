"""The partitions this broker hosts and the data path through them: Kafka's ReplicaManager.

Each hosted topic-partition is a ``Partition`` (``partition.py``), kept as a leader or as a
follower. The replica manager owns the data path: ``append_records`` (a Produce request, the
group and transaction coordinators' records, transaction markers) looks each partition up and
appends as its leader; ``fetch_messages`` reads as the leader. Requests that must wait do so in a
purgatory (``purgatory.py``): a produce with acks=-1 until its in-sync replicas have the records
(``DelayedProduce``), a fetch until ``min_bytes`` are there (``DelayedFetch``); any change of a
partition's log end offset, high watermark or leadership asks them whether they can complete.

In cluster mode the controller drives it (Kafka's ReplicaManager.becomeLeaderOrFollower and
stopReplicas): ``become_leader_or_follower`` applies a LeaderAndIsr request, ``stop_replicas_request``
a StopReplica request, each fenced by the controller epoch (``controller_epoch``, the newest seen)
and per partition by the leader epoch. A follower serves no produce or fetch: its
``replica_fetcher_manager`` (cluster mode) fetches from the leader into its log, from when it
starts following a leader (or a new leader epoch) until it leads, stops hosting the partition or
the broker stops. A Fetch from a follower (``replica_id`` a broker id) reads up to the log end
offset and records the follower's position in the partition's ``Replica``, which may move the
high watermark.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kcli.broker.replica.delayed_fetch import READ_COMMITTED, READ_UNCOMMITTED, DelayedFetch, FetchParams, satisfied
from kcli.broker.replica.delayed_produce import DelayedProduce, PartitionResponse, ProducePartitionStatus
from kcli.broker.replica.partition import DEFAULT_REPLICA_LAG_TIME_MAX_MS, Partition, now_ms
from kcli.broker.replica.purgatory import DelayedOperationPurgatory
from kcli.broker.replica.replica_fetcher import InitialFetchState
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError, KafkaStorageError, KcliError
from kcli.broker.replica.tasks import cancel_and_wait
from kcli.metadata.topic_names import is_internal
from kcli.metadata.topics import PartitionState, TopicPartitionState
from kcli.protocol.fetch_response import PartitionResult
from kcli.storage.log import InconsistentTopicIdError
from kcli.storage.log_manager import LogManager
from kcli.storage.producer_state import AppendOrigin

log = logging.getLogger("kcli.broker.state.change")
data_log = logging.getLogger(__name__)  # the data path's own failures, as Kafka's ReplicaManager logs them

# Kafka's KafkaController.InitialControllerEpoch, and LeaderAndIsr's epochs a StopReplica may carry
# instead of a partition's leader epoch: NoEpoch (a controller of before KIP-570), EpochDuringDelete
# (the topic is being deleted).
INITIAL_CONTROLLER_EPOCH = 0
NO_EPOCH = -1
EPOCH_DURING_DELETE = -2
# How long the broker's own writers' appends may wait for their in-sync replicas (Kafka's
# offsets.commit.timeout.ms default).
COORDINATOR_APPEND_TIMEOUT_MS = 5000


@dataclass(frozen=True, slots=True)
class StopPartition:
    """One partition of a StopReplica request."""

    topic: str
    index: int
    leader_epoch: int
    delete: bool


class ReplicaManager:
    def __init__(
        self, broker_id: int, log_manager: LogManager, metadata=None, *, replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.broker_id = broker_id
        self.clock = clock
        self.log_manager = log_manager
        # The broker's MetadataCache: tells a partition led elsewhere from an unknown one.
        self.metadata = metadata
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        # Every partition hosted here, led or followed (Kafka's allPartitions).
        self._partitions: dict[TopicPartition, Partition] = {}
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        self._by_id: dict[uuid.UUID, str] = {}
        self.produce_purgatory = DelayedOperationPurgatory("Produce")
        self.fetch_purgatory = DelayedOperationPurgatory("Fetch")
        self.closing = False
        self._leadership_listeners: list[Callable[[list[Partition], list[TopicPartition]], None]] = []
        # The followers' fetchers (replica_fetcher_manager.ReplicaFetcherManager), which the broker
        # gives a cluster-mode replica manager; a single-process broker follows nothing.
        self.replica_fetcher_manager = None
        # Where leaders send their ISR changes (alter_isr_manager.AlterIsrManager), cluster mode only.
        self.alter_isr_manager = None
        # The leader's replication throttle (quotas.replication_quota_manager), when the broker sets one.
        self.leader_quota = None
        self._isr_expiration: asyncio.Task | None = None

    # -- leadership ----------------------------------------------------------------------------------

    def on_leadership_change(self, listener: Callable[[list[Partition], list[TopicPartition]], None]) -> Callable[[], None]:
        """Call ``listener(led, no_longer_led)`` after each change of what this broker leads
        (Kafka's onLeadershipChange): the partitions it now leads (newly or at a new epoch), and
        those it follows or stopped hosting. Returns a function that removes the listener."""
        self._leadership_listeners.append(listener)
        return lambda: self._leadership_listeners.remove(listener)

    def _leadership_changed(self, led: list[Partition], not_led: list[TopicPartition]) -> None:
        if not led and not not_led:
            return
        for listener in list(self._leadership_listeners):
            try:
                listener(led, not_led)
            except Exception:
                log.exception("A leadership change listener failed")

    # -- hosting -----------------------------------------------------------------------------------

    def host_leaders(self, partitions: Iterable[TopicPartitionState]) -> None:
        """Single-process mode: lead each partition as its state says and tell the listeners, as a
        LeaderAndIsr request would; a partition whose log cannot be opened stays offline."""
        led = []
        for update in partitions:
            try:
                led.append(self.become_leader(update.topic, update.index, update.topic_id, update.state))
            except (OSError, KafkaStorageError) as e:
                log.error("Could not host partition %s-%d: %s", update.topic, update.index, e)
        self._leadership_changed(led, [])

    def become_leader(self, topic: str, index: int, topic_id: uuid.UUID | None, state: PartitionState) -> Partition:
        """Lead the partition as ``state`` says, opening or creating its log."""
        partition = self._get_or_create_partition(topic, index, topic_id)
        if self.replica_fetcher_manager is not None:
            self.replica_fetcher_manager.remove_fetcher_for_partitions([(topic, index)])
        partition.make_leader(state)
        if topic_id is not None:
            self._by_id[topic_id] = topic
        return partition

    def become_follower(self, topic: str, index: int, topic_id: uuid.UUID | None, state: PartitionState) -> Partition:
        """Follow the partition as ``state`` says: a leader here steps down (its waiting requests
        complete now, a fetch answering that the partition is not led here), the log is created
        when new and kept."""
        partition = self._get_or_create_partition(topic, index, topic_id)
        was_leader = partition.is_leader
        changed = partition.make_follower(state)
        if was_leader:
            self.try_complete_delayed_requests((topic, index))
        fetchers = self.replica_fetcher_manager
        if changed and fetchers is not None:
            # Kafka's makeFollowers: the fetch starts again from the log end offset, at the leader
            # the state names (none while the partition is offline).
            fetchers.remove_fetcher_for_partitions([(topic, index)])
            if state.leader >= 0:
                fetchers.add_fetcher_for_partitions({(topic, index): InitialFetchState(state.leader, state.leader_epoch, partition.log.log_end_offset)})
        return partition

    def _get_or_create_partition(self, topic: str, index: int, topic_id: uuid.UUID | None) -> Partition:
        """The hosted partition, created over its log (opened or created) when new; raises
        InconsistentTopicIdError for a log of another topic id."""
        key = (topic, index)
        log = self.log_manager.get_or_create_log(topic, index, topic_id)
        partition = self._partitions.get(key)
        if partition is None or partition.log is not log:
            partition = Partition(
                topic, index, topic_id, log, local_broker_id=self.broker_id, replica_lag_time_max_ms=self.replica_lag_time_max_ms,
                clock=self.clock, alter_isr=self._submit_isr_change,
            )
            self._partitions[key] = partition
        elif topic_id is not None:
            partition.topic_id = topic_id
        return partition

    def _submit_isr_change(self, partition: Partition, proposal) -> None:
        if self.alter_isr_manager is not None:
            self.alter_isr_manager.submit(partition, proposal)

    # -- the ISR -------------------------------------------------------------------------------------

    def maybe_shrink_isr(self) -> None:
        """Every led partition drops the followers that have not caught up for
        ``replica.lag.time.max.ms`` from its ISR (Kafka's isr-expiration task)."""
        now = self.clock()
        for partition in self.leader_partitions():
            partition.maybe_shrink_isr(now)

    def start_isr_expiration(self) -> None:
        """Check the ISRs every half ``replica.lag.time.max.ms``, on the event loop (Kafka's
        ReplicaManager.startup schedules isr-expiration at that period)."""

        async def expire() -> None:
            while True:
                await asyncio.sleep(self.replica_lag_time_max_ms / 2000)
                try:
                    self.maybe_shrink_isr()
                except Exception:
                    data_log.exception("The ISR expiration check failed")

        self._isr_expiration = asyncio.get_running_loop().create_task(expire(), name="isr-expiration")

    async def shutdown_replication(self) -> None:
        """Stop the fetchers, the ISR checks and the ISR change sender (a broker that stops)."""
        task, self._isr_expiration = self._isr_expiration, None
        await cancel_and_wait(task)
        if self.replica_fetcher_manager is not None:
            await self.replica_fetcher_manager.shutdown()
        if self.alter_isr_manager is not None:
            await self.alter_isr_manager.shutdown()

    def hosted_leader_epoch(self, topic: str, index: int) -> int:
        """The leader epoch of the partition as hosted here (leader or follower); -1 when not hosted."""
        hosted = self._partitions.get((topic, index))
        return hosted.leader_epoch if hosted is not None else NO_EPOCH

    def is_follower(self, topic: str, index: int) -> bool:
        hosted = self._partitions.get((topic, index))
        return hosted is not None and not hosted.is_leader

    async def open_logs(self, controller_epoch: int, updates: Iterable[TopicPartitionState]) -> None:
        """Open or create, in a worker thread, the logs a LeaderAndIsr request is about to host
        here, so that applying it (on the loop) does not wait on the disk: a request for a topic
        of a thousand partitions would otherwise hold every other client for seconds. Errors are
        left for ``become_leader_or_follower`` to meet and answer."""
        if controller_epoch < self.controller_epoch:
            return
        new = [
            (u.topic, u.index, _topic_id_of(u))
            for u in updates
            if self.broker_id in u.state.replicas and self.log_manager.get_log(u.topic, u.index) is None
        ]
        if new:
            await asyncio.get_running_loop().run_in_executor(None, self._open_logs, new)

    def _open_logs(self, partitions) -> None:
        for topic, index, topic_id in partitions:
            try:
                self.log_manager.get_or_create_log(topic, index, topic_id)
            except (OSError, KcliError):
                pass

    def become_leader_or_follower(self, controller_id: int, controller_epoch: int, updates: Iterable[TopicPartitionState]) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """Apply a LeaderAndIsr request (Kafka's ReplicaManager.becomeLeaderOrFollower): the
        request's error and each partition's. A request from an older controller epoch changes
        nothing (STALE_CONTROLLER_EPOCH); a partition whose log here belongs to another topic id
        (an earlier topic of the same name) is refused first (INCONSISTENT_TOPIC_ID), then one
        whose leader epoch is not newer than the one hosted is left as it is
        (STALE_CONTROLLER_EPOCH), and one that does not list this broker among its replicas is
        refused (UNKNOWN_TOPIC_OR_PARTITION)."""
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
                update.state.leader, update.state.leader_epoch, list(update.state.replicas), list(update.state.isr),
            )
            if self.log_manager.is_partition_offline(*key):
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            elif not self._has_consistent_topic_id(key, _topic_id_of(update)):
                # Before the leader epoch, as Kafka does: a topic created again under the same name
                # starts its epochs again, so its epoch says nothing against the old topic's log.
                log.error(
                    "[Broker id=%d] Topic Id in memory: %s does not match the topic Id for partition %s-%d provided in "
                    "the request: %s.", self.broker_id, self._local_topic_id(key), update.topic, update.index, update.topic_id,
                )
                errors[key] = ErrorCode.INCONSISTENT_TOPIC_ID
            elif update.state.leader_epoch <= current:
                log.info(
                    "Ignoring LeaderAndIsr request from controller %d epoch %d for partition %s-%d since its associated "
                    "leader epoch %d is not higher than the current leader epoch %d",
                    controller_id, controller_epoch, update.topic, update.index, update.state.leader_epoch, current,
                )
                errors[key] = ErrorCode.STALE_CONTROLLER_EPOCH
            elif self.broker_id not in update.state.replicas:
                log.warning(
                    "Ignoring LeaderAndIsr request from controller %d epoch %d as broker %d is not in the assigned "
                    "replica list %s of partition %s-%d", controller_id, controller_epoch, self.broker_id,
                    ",".join(map(str, update.state.replicas)), update.topic, update.index,
                )
                errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                errors[key] = self._apply(update)
        applied = [u for u in updates if errors.get((u.topic, u.index)) == ErrorCode.NONE]
        if self.replica_fetcher_manager is not None:
            self.replica_fetcher_manager.shutdown_idle_fetchers()
        self._leadership_changed(
            [p for u in applied if (p := self.get(u.topic, u.index)) is not None],
            [(u.topic, u.index) for u in applied if self.get(u.topic, u.index) is None],
        )
        return ErrorCode.NONE, errors

    def _local_topic_id(self, key: TopicPartition) -> uuid.UUID | None:
        """The topic id of the partition's log here (its ``partition.metadata``), hosted or only on disk."""
        hosted = self._partitions.get(key)
        local = hosted.log if hosted is not None else self.log_manager.get_log(*key)
        return None if local is None else local.topic_id

    def _has_consistent_topic_id(self, key: TopicPartition, request_topic_id: uuid.UUID | None) -> bool:
        """Kafka's hasConsistentTopicId: a request or a log without a topic id is not checked."""
        local = self._local_topic_id(key)
        return request_topic_id is None or local is None or local == request_topic_id

    def _apply(self, update: TopicPartitionState) -> ErrorCode:
        role = self.become_leader if update.state.leader == self.broker_id else self.become_follower
        try:
            role(update.topic, update.index, _topic_id_of(update), update.state)
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
                    self._stop_replicas(stop.topic, [stop.index], delete=stop.delete)
                    errors[key] = ErrorCode.NONE
                except (OSError, KafkaStorageError) as e:
                    log.error("Could not stop replica %s-%d: %s", stop.topic, stop.index, e)
                    errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
        self._leadership_changed([], [key for key, error in errors.items() if error == ErrorCode.NONE])
        return ErrorCode.NONE, errors

    def stop_replicas(self, topic: str, indexes: Iterable[int], *, delete: bool) -> None:
        indexes = list(indexes)
        self._stop_replicas(topic, indexes, delete=delete)
        self._leadership_changed([], [(topic, index) for index in indexes])

    def _stop_replicas(self, topic: str, indexes: Iterable[int], *, delete: bool) -> None:
        for index in indexes:
            partition = self._partitions.pop((topic, index), None)
            if self.replica_fetcher_manager is not None:
                self.replica_fetcher_manager.remove_fetcher_for_partitions([(topic, index)])
            if partition is not None and partition.is_leader and partition.topic_id is not None:
                self._by_id.pop(partition.topic_id, None)
            if delete:
                self.log_manager.delete_log(topic, index)
            self.try_complete_delayed_requests((topic, index))

    def update_config(self, topic: str) -> None:
        self.log_manager.update_topic_config(topic, self.log_manager.config_for(topic))

    # -- lookups -----------------------------------------------------------------------------------

    def get_partition_or_error(self, topic: str, index: int) -> Partition:
        """The partition, led here (Kafka's getPartitionOrError, then leaderLogIfLocal)."""
        found = self._partitions.get((topic, index))
        if found is None or not found.is_leader:
            if self.log_manager.is_partition_offline(topic, index):
                raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"The log of {topic}-{index} is in an offline log dir")
            if found is not None or self._known_partition(topic, index):
                # Kafka's ReplicaManager.getPartitionOrError: the partition exists, led elsewhere
                # (or by nobody while it is offline).
                raise KafkaError(
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    f"Broker {self.broker_id} is not the leader of {topic}-{index}",
                )
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return found

    def _known_partition(self, topic: str, index: int) -> bool:
        """Whether the cluster has the partition (the metadata cache knows it), led elsewhere or
        by nobody while offline."""
        info = self.metadata.topic(topic) if self.metadata is not None else None
        return info is not None and index in info.partitions

    def get(self, topic: str, index: int) -> Partition | None:
        """The partition if this broker leads it."""
        found = self._partitions.get((topic, index))
        return found if found is not None and found.is_leader else None

    def hosted(self, topic: str, index: int) -> Partition | None:
        """The partition if this broker hosts it, as leader or follower (Kafka's onlinePartition)."""
        return self._partitions.get((topic, index))

    def follower_partition(self, topic: str, index: int) -> Partition | None:
        """The partition if this broker hosts it as a follower."""
        found = self._partitions.get((topic, index))
        return found if found is not None and not found.is_leader else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def hosted_topics(self) -> set[str]:
        """The topics of every partition hosted here, led or followed."""
        return {topic for topic, _ in self._partitions}

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self._partitions.values() if p.is_leader]

    # -- the data path -----------------------------------------------------------------------------

    def append_records(
        self,
        entries: Iterable[tuple[TopicPartition, Any]],
        acks: int,
        timeout_ms: int,
        origin: AppendOrigin,
        response_callback: Callable[[list[tuple[TopicPartition, PartitionResponse]]], None],
        *,
        internal_topics_allowed: bool = False,
        prepare: Callable[[Partition, Any], Any] | None = None,
    ) -> None:
        """Append each entry's records (partition, records) to the partition's log as its leader
        (Kafka's ReplicaManager.appendRecords) and answer through ``response_callback``, an answer
        per entry in their order (a partition named twice is appended to twice): at once, or, with
        acks=-1, once the in-sync replicas have what was appended (a ``DelayedProduce``). The
        caller's ``prepare(partition, records)`` checks a partition's records after its look-up
        (the Produce request's batch rules and transaction verification); it returns what to
        append or raises."""
        statuses: list[tuple[TopicPartition, ProducePartitionStatus]] = []
        for key, records in entries:
            response, info = self._append_to_local_log(key, records, acks, origin, internal_topics_allowed, prepare)
            statuses.append((key, ProducePartitionStatus(-1 if info is None else info.last_offset + 1, response)))
            if info is not None:
                self.try_complete_delayed_requests(key)
        if acks == -1 and any(status.response.error_code == ErrorCode.NONE for _, status in statuses):
            delayed = DelayedProduce(timeout_ms, statuses, self, response_callback)
            self.produce_purgatory.try_complete_else_watch(delayed, [key for key, _ in statuses])
        else:
            response_callback([(key, status.response) for key, status in statuses])

    def append_for_coordinator(
        self,
        key: TopicPartition,
        records: Any,
        origin: AppendOrigin,
        response_callback: Callable[[PartitionResponse], None],
        *,
        timeout_ms: int = COORDINATOR_APPEND_TIMEOUT_MS,
    ) -> None:
        """``append_records`` for the broker's own writers (the group and transaction
        coordinators' records, transaction markers), as Kafka's coordinators append: acks=-1,
        internal topics allowed, one partition. ``response_callback`` gets the partition's
        answer once its in-sync replicas have the records (at once when the leader is the whole
        ISR, or when the append fails); the caller's step finishes there, so nothing it answers
        rests on records a new leader could lack."""
        self.append_records(
            [(key, records)], -1, timeout_ms, origin, lambda answers: response_callback(answers[0][1]), internal_topics_allowed=True
        )

    def _append_to_local_log(self, key: TopicPartition, records, acks: int, origin: AppendOrigin, internal_topics_allowed: bool, prepare):
        topic, index = key
        response = PartitionResponse()
        try:
            if acks not in (0, 1, -1):
                raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS)
            if is_internal(topic) and not internal_topics_allowed:
                raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
            partition = self.get_partition_or_error(topic, index)
            if prepare is not None:
                records = prepare(partition, records)
            info = partition.append_records_to_leader(records, origin, acks)
        except KcliError as e:
            response.error_code = e.error_code
            response.error_message = str(e) or None
            response.record_errors = list(getattr(e, "record_errors", ()))
            data_log.debug("Produce to %s-%d failed: %s", topic, index, e)
            return response, None
        except OSError as e:  # the log turns its own disk errors into KafkaStorageError; this is a safety net
            response.error_code = ErrorCode.KAFKA_STORAGE_ERROR
            response.error_message = str(e)
            data_log.warning("Produce to %s-%d failed: %s", topic, index, e)
            return response, None
        except Exception:
            response.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
            data_log.exception("Produce to %s-%d failed unexpectedly", topic, index)
            return response, None
        response.base_offset = info.first_offset
        response.log_append_time = info.log_append_time
        response.log_start_offset = info.log_start_offset
        return response, info

    def fetch_messages(self, params: FetchParams, fetch_infos: Mapping[TopicPartition, Any], response_callback: Callable[[list], None]) -> None:
        """Read each partition as its leader (Kafka's ReplicaManager.fetchMessages) and answer
        through ``response_callback`` with ``(partition, fetch info, PartitionResult)`` in the
        order asked: at once when the reads hold ``min_bytes``, one of them is an error, the fetch
        may not wait or the broker is stopping; otherwise when a ``DelayedFetch`` completes.
        ``fetch_infos`` maps each partition to its fetch offset, ``max_bytes``, current leader
        epoch and topic id (a fetch session's partitions)."""
        reads = self.read_from_local_log(params, fetch_infos)
        if params.is_from_follower:
            reads = self._update_follower_fetch_state(params.replica_id, reads)
            if self.leader_quota is not None:
                response_callback = self._recording_throttled_bytes(response_callback)
        if params.max_wait_ms <= 0 or self.closing or satisfied(params, reads):
            response_callback(reads)
            return
        if params.is_from_follower and self.leader_quota is not None:
            # Records held back by the throttle: answer when the rate is back at the limit, not
            # at the end of the follower's whole wait.
            throttled_ms = self.leader_quota.throttle_time_ms()
            if 0 < throttled_ms < params.max_wait_ms:
                params = replace(params, max_wait_ms=throttled_ms)
        self.fetch_purgatory.watch(DelayedFetch(params, fetch_infos, self, response_callback), list(fetch_infos))

    def _recording_throttled_bytes(self, response_callback: Callable[[list], None]) -> Callable[[list], None]:
        """``response_callback`` after counting the bytes a follower's answer carries for
        throttled replicas against the leader's throttle (Kafka's KafkaApis records them as it
        answers a follower)."""
        quota = self.leader_quota

        def respond(reads: list) -> None:
            size = 0
            for (topic, index), _, result in reads:
                if result.records_size:
                    partition = self.get(topic, index)
                    if partition is not None and quota.is_throttled(index, partition.log.config):
                        size += result.records_size
            quota.record(size)
            response_callback(reads)

        return respond

    def _should_leader_throttle(self, partition: Partition, replica_id: int) -> bool:
        """Kafka's shouldLeaderThrottle: a follower outside the ISR of a throttled partition
        gets no records while the leader's replication rate is above its limit."""
        quota = self.leader_quota
        return (
            quota is not None
            and replica_id not in partition.isr
            and quota.is_throttled(partition.index, partition.log.config)
            and quota.is_quota_exceeded()
        )

    def _update_follower_fetch_state(self, follower_id: int, reads: list) -> list:
        """Record a follower's Fetch in each partition it read (Kafka's
        ReplicaManager.updateFollowerFetchState); a partition that does not count the follower
        among its replicas answers NOT_LEADER_OR_FOLLOWER (``read_from_local_log`` refuses it
        first). Waiting requests on a partition whose high watermark moved may complete."""
        now = self.clock()
        recorded = []
        for key, info, result in reads:
            # A diverging follower's fetch offset is not yet a position it holds in the leader's log.
            partition = self.get(*key) if result.error_code == ErrorCode.NONE and result.diverging_epoch is None else None
            if partition is not None:
                high_watermark = partition.high_watermark
                if not partition.update_follower_fetch_state(
                    follower_id, info.fetch_offset, info.fetcher_log_start_offset, now, partition.log.log_end_offset
                ):
                    data_log.debug(
                        "Leader %d failed to record follower %d's position %d for partition %s-%d: not one of its replicas %s",
                        self.broker_id, follower_id, info.fetch_offset, key[0], key[1], list(partition.replicas),
                    )
                    result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                    result.records = b""
                elif partition.high_watermark != high_watermark:
                    self.try_complete_delayed_requests(key)
            recorded.append((key, info, result))
        return recorded

    def read_from_local_log(self, params: FetchParams, fetch_infos: Mapping[TopicPartition, Any]) -> list:
        """Kafka's readFromLocalLog: whole batches from each partition, at most its ``max_bytes``
        and ``params.max_bytes`` in all, except that the first partition with data returns at
        least one batch."""
        results = []
        budget = params.max_bytes
        min_one_message = True
        for key, info in fetch_infos.items():
            result = self._read_partition(key, info, max(0, min(info.max_bytes, budget)), min_one_message, params)
            size = result.records_size
            if size:
                budget -= size
                min_one_message = False
            results.append((key, info, result))
        return results

    def _read_partition(self, key: TopicPartition, info, max_bytes: int, min_one_message: bool, params: FetchParams) -> PartitionResult:
        """One partition's read: a follower up to the log end offset, a consumer up to the high
        watermark or (read_committed) the last stable offset."""
        topic, index = key
        isolation = READ_UNCOMMITTED if params.is_from_follower else params.isolation_level
        partition = self._partitions.get(key)
        if partition is None or (params.fetch_only_from_leader and not partition.is_leader):
            if self.log_manager.is_partition_offline(topic, index):
                return PartitionResult(index, error_code=ErrorCode.KAFKA_STORAGE_ERROR, records=b"")
            if partition is not None or self._known_partition(topic, index):
                return PartitionResult(index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, records=b"")
            code = ErrorCode.UNKNOWN_TOPIC_ID if info.topic_id is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return PartitionResult(index, error_code=code, records=b"")
        if params.is_from_follower and params.replica_id not in partition.replicas:
            # Kafka 3.x's Partition.updateFollowerFetchState: a broker that is not a replica of
            # the partition reads nothing of it.
            return PartitionResult(index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, records=b"")
        partition_log = partition.log
        result = PartitionResult(
            index, high_watermark=partition.high_watermark, last_stable_offset=partition.last_stable_offset, log_start_offset=partition_log.log_start_offset
        )
        result.aborted_transactions = [] if isolation == READ_COMMITTED else None
        try:
            partition.check_leader_epoch(info.current_leader_epoch)
            if params.is_from_follower and info.last_fetched_epoch >= 0:
                diverging = partition.diverging_epoch(info.last_fetched_epoch, info.fetch_offset)
                if diverging is not None:
                    result.diverging_epoch = diverging
                    result.records = b""
                    return result
            if params.is_from_follower:
                limit = None
            else:
                limit = result.last_stable_offset if isolation == READ_COMMITTED else result.high_watermark
            if (max_bytes <= 0 and not min_one_message) or (params.is_from_follower and self._should_leader_throttle(partition, params.replica_id)):
                result.records = b""
                return result
            data = partition_log.read(info.fetch_offset, max_bytes, min_one_message=min_one_message, max_offset=limit)
            result.records = data.slices
            if isolation == READ_COMMITTED and data.slices:
                # (producer id, first offset) of each aborted transaction the read overlaps, from the
                # segments' .txnindex: the consumer drops their records as it meets the ABORT markers.
                result.aborted_transactions = [
                    (txn.producer_id, txn.first_offset) for txn in partition_log.collect_aborted_transactions(info.fetch_offset, limit)
                ]
        except KcliError as e:
            result.error_code = e.error_code
            result.records = b""
        return result

    # -- the purgatories -----------------------------------------------------------------------------

    def try_complete_delayed_requests(self, key: TopicPartition) -> None:
        """The partition's log end offset, high watermark or leadership changed: waiting produces
        and fetches on it may complete (Kafka's Partition.tryCompleteDelayedRequests)."""
        self.produce_purgatory.check_and_complete(key)
        self.fetch_purgatory.check_and_complete(key)

    def shutdown_purgatories(self) -> None:
        """At shutdown: complete every waiting request now, and let no fetch wait again, so each
        answers with what it has."""
        self.closing = True
        self.fetch_purgatory.complete_all()
        self.produce_purgatory.complete_all()


def _topic_id_of(update: TopicPartitionState) -> uuid.UUID | None:
    """The update's topic id; None from a request without topic ids (LeaderAndIsr v0-4), which
    names the topic by its name alone."""
    return update.topic_id if update.topic_id is not None and update.topic_id.int != 0 else None
