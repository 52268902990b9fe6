"""One follower fetcher: Kafka's ``ReplicaFetcherThread`` (with ``AbstractFetcherThread``'s loop).

A fetcher copies the partitions this broker follows from one source broker, the partitions'
leader. It is an asyncio task on the broker's loop, not a thread (one loop per broker process),
named as Kafka names the thread, ``ReplicaFetcherThread-<fetcher id>-<source broker>``. It keeps
a ``PartitionFetchState`` per partition and sends one Fetch (v12) at a time over a connection to
the source broker's inter-broker endpoint, as a replica (``replica_id`` = this broker's id):

    max_wait = replica.fetch.wait.max.ms       min_bytes = replica.fetch.min.bytes
    max_bytes = replica.fetch.response.max.bytes, each partition's partition_max_bytes =
    replica.fetch.max.bytes; fetch_offset, current_leader_epoch, last_fetched_epoch per partition

in an incremental fetch session (KIP-227, ``kcli.client.fetch_session_handler``): after the first
full request, a Fetch names only the partitions whose position changed, and the leader answers
only those with something new.

A partition whose log has a leader epoch starts Truncating (KIP-101, KIP-279): the fetcher asks
the leader with OffsetForLeaderEpoch (v3, as a replica) where its latest epoch ends there,
truncates to the offset both logs agree on, and fetches from it. While Fetching it sends the
epoch of the last batch it holds; a leader whose log differs there answers a diverging epoch
(KIP-320) instead of records, and the fetcher truncates again (``Partition.truncation_offset``),
never below the high watermark.

The batches of an answer are appended to the follower's log unchanged
(``Partition.append_records_to_follower``); the follower's high watermark becomes the leader's as
far as its log reaches, and its log start offset follows the leader's. A partition removed or
moved while its fetch was out ignores the answer. A failed request delays every partition it
asked for by ``replica.fetch.backoff.ms``, a partition's error (or a write its disk refused: a
full disk) that partition alone; a log whose dir went offline is no longer fetched;
FENCED_LEADER_EPOCH removes the partition until the controller's next LeaderAndIsr gives it again.
A follower behind the leader's log start offset (its records deleted there meanwhile) is told
OFFSET_OUT_OF_RANGE; it asks the leader's log start offset (ListOffsets v4, as a replica) and
starts its log over there (Kafka's handleOutOfRangeError). A first batch that starts below an
empty follower log's start (a leader log start inside a batch, after DeleteRecords) starts the
log at the batch's base offset instead.
With nothing to fetch the task waits for a partition to be added or for a delay to end.

Replication throttles (``quotas.replication_quota_manager``): a partition of a topic whose
``follower.replication.throttled.replicas`` names this broker's replica, not caught up with the
leader's high watermark, is left out of the request while the follower's rate is above
``follower.replication.throttled.rate`` (with nothing left to ask, the fetcher waits until the
rate is back at the limit, at most ``replica.fetch.backoff.ms``); the bytes appended for
throttled replicas are counted.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kcli.broker.network.broker_connections import BrokerConnections
from kcli.broker.quotas.replication_quota_manager import ReplicationQuotaManager
from kcli.broker.replica.tasks import cancel_and_wait
from kcli.client.fetch_request import FetchPosition, fetch_request
from kcli.client.fetch_session_handler import FetchRequestData, FetchSessionHandler
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaStorageError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.storage.records import read_batch

log = logging.getLogger(__name__)

# The Fetch version a ZooKeeper-era (2.8, IBP 2.8) follower sends: topics by name, the last
# fetched epoch and the diverging epoch (KIP-320).
FETCH_VERSION = 12
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
LIST_OFFSETS_VERSION = 4
EARLIEST_TIMESTAMP = -2  # ListOffsets' timestamp for the log start offset
LATEST_TIMESTAMP = -1  # and for its end: asked by a replica, the leader's log end offset


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """The broker configs a follower fetches with (Kafka's names)."""

    num_fetchers: int = 1  # num.replica.fetchers
    max_wait_ms: int = 500  # replica.fetch.wait.max.ms
    min_bytes: int = 1  # replica.fetch.min.bytes
    response_max_bytes: int = 10485760  # replica.fetch.response.max.bytes
    partition_max_bytes: int = 1048576  # replica.fetch.max.bytes
    backoff_ms: int = 1000  # replica.fetch.backoff.ms
    socket_timeout_ms: int = 30000  # replica.socket.timeout.ms

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any]) -> FetcherConfig:
        return cls(
            num_fetchers=get("num.replica.fetchers"),
            max_wait_ms=get("replica.fetch.wait.max.ms"),
            min_bytes=get("replica.fetch.min.bytes"),
            response_max_bytes=get("replica.fetch.response.max.bytes"),
            partition_max_bytes=get("replica.fetch.max.bytes"),
            backoff_ms=get("replica.fetch.backoff.ms"),
            socket_timeout_ms=get("replica.socket.timeout.ms"),
        )


@dataclass(frozen=True, slots=True)
class InitialFetchState:
    """Where a follower starts fetching a partition (Kafka's InitialFetchState)."""

    leader_id: int
    current_leader_epoch: int
    init_offset: int


@dataclass(slots=True)
class PartitionFetchState:
    """A partition as its fetcher holds it (Kafka's PartitionFetchState)."""

    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int = -1
    truncating: bool = False  # Kafka's Truncating state: the leader is asked where to truncate first
    delayed_until: float = 0.0  # time.monotonic() before which it is not fetched
    lag: int | None = None  # the leader's high watermark less the fetch offset, after the last answer

    @property
    def is_replica_in_sync(self) -> bool:
        """Caught up with the leader's high watermark at the last answer (Kafka's isReplicaInSync)."""
        return self.lag is not None and self.lag <= 0

    def is_ready(self, now: float) -> bool:
        return self.delayed_until <= now


class ReplicaFetcher:
    def __init__(
        self,
        broker_id: int,
        fetcher_id: int,
        source_broker: int,
        replica_manager: Any,
        config: FetcherConfig,
        address_of: Callable[[int], tuple[str, int] | None],
        security: Any = None,
        quota: ReplicationQuotaManager | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.fetcher_id = fetcher_id
        self.source_broker = source_broker
        self.name = f"ReplicaFetcherThread-{fetcher_id}-{source_broker}"
        self.replica_manager = replica_manager
        self.config = config
        self._connections = BrokerConnections(
            address_of, client_id=f"broker-{broker_id}-fetcher-{fetcher_id}", request_timeout_ms=config.socket_timeout_ms + config.max_wait_ms,
            security=security,
        )
        self._states: OrderedDict[TopicPartition, PartitionFetchState] = OrderedDict()
        self._session = FetchSessionHandler()
        self.quota = quota  # the follower's replication throttle
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._stopping = False

    # -- partitions ----------------------------------------------------------------------------------

    @property
    def partition_count(self) -> int:
        return len(self._states)

    def has_partition(self, key: TopicPartition) -> bool:
        return key in self._states

    def fetch_state(self, key: TopicPartition) -> PartitionFetchState | None:
        return self._states.get(key)

    def add_partitions(self, partitions: dict[TopicPartition, InitialFetchState]) -> None:
        """Fetch these partitions from their initial offsets; one held already at the same or a
        newer leader epoch keeps its state (Kafka's addPartitions)."""
        for key, initial in partitions.items():
            current = self._states.get(key)
            if current is not None and current.current_leader_epoch >= initial.current_leader_epoch:
                continue
            partition = self.replica_manager.follower_partition(*key)
            last_epoch = partition.log.latest_epoch if partition is not None else None
            self._states[key] = PartitionFetchState(
                initial.init_offset, initial.current_leader_epoch, -1 if last_epoch is None else last_epoch, truncating=last_epoch is not None
            )
        self._wake.set()

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for key in partitions:
            self._states.pop(key, None)

    # -- the task ------------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def shutdown(self) -> None:
        """Stop the task. Its loop also checks a flag, so a cancellation that an await inside it
        lost (asyncio.wait_for can, when what it waits for completes at the same time) ends it at
        its next turn; the wait for it is bounded all the same."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self._connections.close()

    async def _run(self) -> None:
        log.info("[%s]: Starting", self.name)
        try:
            while not self._stopping:
                self._wake.clear()
                now = time.monotonic()
                ready = [(key, state) for key, state in self._states.items() if state.is_ready(now)]
                if not ready:
                    delays = [state.delayed_until - now for state in self._states.values()]
                    try:
                        await asyncio.wait_for(self._wake.wait(), min(delays) if delays else None)
                    except asyncio.TimeoutError:
                        pass
                    continue
                truncating = [(key, state) for key, state in ready if state.truncating]
                if truncating:
                    await self._truncate_to_epoch_end_offsets(truncating)
                else:
                    await self._fetch(ready)
        except asyncio.CancelledError:
            log.info("[%s]: Stopped", self.name)
            raise
        except Exception:
            log.exception("[%s]: Error in the fetcher's loop; it stops", self.name)

    async def _fetch(self, ready: list[tuple[TopicPartition, PartitionFetchState]]) -> None:
        """One Fetch for the ``ready`` partitions not throttled (Kafka's processFetchRequest), in
        the fetch session kept with the source broker: a partition whose position did not change
        is not named again, and the leader answers it only when it has something new."""
        wanted: OrderedDict[TopicPartition, FetchPosition] = OrderedDict()
        for key, state in ready:
            if not self._should_follower_throttle(key, state):
                partition = self.replica_manager.follower_partition(*key)
                log_start = partition.log.log_start_offset if partition is not None else -1
                wanted[key] = FetchPosition(state.fetch_offset, log_start, self.config.partition_max_bytes, state.current_leader_epoch, state.last_fetched_epoch)
        request = self._session.build(wanted)
        if request.is_empty:
            # Every ready partition is throttled: wait as Kafka's fetcher does with nothing to ask,
            # but no longer than until the rate is back at the limit.
            self._delay([key for key, _ in ready], self.quota.throttle_time_ms() / 1000 if self.quota is not None else None)
            return
        sent = {key: (self._states[key], position.fetch_offset) for key, position in request.session_partitions.items()}
        try:
            answer = await self._connections.call(self.source_broker, ApiKey.FETCH, self._build_fetch(request), versions=(FETCH_VERSION, FETCH_VERSION))
        except (KcliError, OSError) as e:
            self._session.handle_error()
            log.warning("[%s]: Error in response for fetch request to broker %d: %s", self.name, self.source_broker, e)
            self._delay(list(sent))
            return
        error = ErrorCode.for_code(int(answer.error_code))
        answered = [(topic.topic, int(data.partition_index)) for topic in answer.responses for data in topic.partitions]
        if not self._session.handle_response(request, error, int(answer.session_id), answered):
            if error in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
                # Kafka's FetchSessionHandler: the next request opens a new session, at once.
                log.info("[%s]: Fetch session with broker %d ended (%s); opening a new one", self.name, self.source_broker, error.name)
                return
            if error == ErrorCode.NONE:
                log.warning("[%s]: Fetch answer from broker %d names partitions outside its session; opening a new one", self.name, self.source_broker)
                return
            log.warning("[%s]: Error in response for fetch request to broker %d: Fetch answered %s", self.name, self.source_broker, error.name)
            self._delay(list(sent))
            return
        out_of_range = []
        for topic in answer.responses:
            for data in topic.partitions:
                key = (topic.topic, int(data.partition_index))
                state, offset = sent[key]
                if self._states.get(key) is not state or state.fetch_offset != offset:
                    continue  # removed, replaced or moved while the fetch was out
                if ErrorCode.for_code(int(data.error_code)) == ErrorCode.OFFSET_OUT_OF_RANGE:
                    out_of_range.append((key, state))
                else:
                    self._process_partition_data(key, state, data)
        for key, state in out_of_range:
            await self._handle_out_of_range(key, state)

    def _should_follower_throttle(self, key: TopicPartition, state: PartitionFetchState) -> bool:
        """Kafka's shouldFollowerThrottle: a replica not caught up, of a throttled partition, is
        left out of the fetch while this broker's follower replication rate is above its limit."""
        quota = self.quota
        if quota is None or state.is_replica_in_sync:
            return False
        partition = self.replica_manager.follower_partition(*key)
        return partition is not None and quota.is_throttled(key[1], partition.log.config) and quota.is_quota_exceeded()

    async def _handle_out_of_range(self, key: TopicPartition, state: PartitionFetchState) -> None:
        """The leader has not the fetch offset (Kafka's handleOutOfRangeError and
        fetchOffsetAndTruncate): when the leader's log ends below the follower's (a leader
        elected uncleanly, seen by a log without leader epochs) the follower truncates to the
        leader's end; when the follower's log ends below the leader's log start offset, its log
        starts over there."""
        topic, index = key
        offset = state.fetch_offset
        leader_end = await self._leader_offset(key, state, LATEST_TIMESTAMP)
        if leader_end is None or self._states.get(key) is not state or state.fetch_offset != offset:
            return
        partition = self.replica_manager.follower_partition(topic, index)
        if partition is None:
            self._states.pop(key, None)
            return
        if leader_end < partition.log.log_end_offset:
            log.info(
                "[%s]: Reset fetch offset for partition %s-%d from %d to current leader %d's latest offset %d",
                self.name, topic, index, partition.log.log_end_offset, self.source_broker, leader_end,
            )
            try:
                state.fetch_offset = partition.truncate_to(leader_end, functools.partial(self.replica_manager.log_manager.truncate_to, *key))
            except KcliError as e:
                log.error("[%s]: Could not truncate %s-%d to offset %d: %s; it is no longer fetched", self.name, topic, index, leader_end, e)
                self._states.pop(key, None)
                return
            latest = partition.log.latest_epoch
            state.last_fetched_epoch = -1 if latest is None else latest
            return
        leader_start = await self._leader_offset(key, state, EARLIEST_TIMESTAMP)
        if leader_start is None or self._states.get(key) is not state or state.fetch_offset != offset:
            return
        if leader_start <= partition.log.log_end_offset:
            log.warning("[%s]: Fetch offset %d of %s-%d is out of range at the leader, whose log starts at %d", self.name, offset, topic, index, leader_start)
            self._delay([key])
            return
        log.warning(
            "[%s]: Reset fetch offset for partition %s-%d from %d to current leader %d's start offset %d",
            self.name, topic, index, offset, self.source_broker, leader_start,
        )
        self.replica_manager.log_manager.truncate_fully_and_start_at(topic, index, leader_start)
        state.fetch_offset = leader_start
        state.last_fetched_epoch = -1

    async def _leader_offset(self, key: TopicPartition, state: PartitionFetchState, timestamp: int) -> int | None:
        """The leader's offset for ``timestamp`` (ListOffsets as a replica: the latest is its log
        end offset), or None after delaying the partition or handling its error."""
        topic, index = key
        request = {
            "replica_id": self.broker_id, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": index, "current_leader_epoch": state.current_leader_epoch, "timestamp": timestamp}]}],
        }
        offset = state.fetch_offset
        try:
            answer = await self._connections.call(self.source_broker, ApiKey.LIST_OFFSETS, request, versions=(LIST_OFFSETS_VERSION, LIST_OFFSETS_VERSION))
            (data,) = [p for t in answer.topics for p in t.partitions]
        except (KcliError, OSError, ValueError) as e:
            what = "start" if timestamp == EARLIEST_TIMESTAMP else "end"
            log.warning("[%s]: Could not fetch the log %s offset of %s-%d from broker %d: %s", self.name, what, topic, index, self.source_broker, e)
            self._delay([key])
            return None
        if self._states.get(key) is not state or state.fetch_offset != offset:
            return None
        error = ErrorCode.for_code(int(data.error_code))
        if error != ErrorCode.NONE:
            self._partition_error(key, state, error)
            return None
        return int(data.offset)

    async def _truncate_to_epoch_end_offsets(self, truncating: list[tuple[TopicPartition, PartitionFetchState]]) -> None:
        """Ask the leader where each partition's latest epoch ends and truncate there (Kafka's
        maybeTruncate with OffsetsForLeaderEpoch)."""
        asked = [(key, state, state.last_fetched_epoch) for key, state in truncating]
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, index), state, epoch in asked:
            topics.setdefault(topic, []).append({"partition": index, "current_leader_epoch": state.current_leader_epoch, "leader_epoch": epoch})
        request = {"replica_id": self.broker_id, "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]}
        try:
            answer = await self._connections.call(
                self.source_broker, ApiKey.OFFSET_FOR_LEADER_EPOCH, request, versions=(OFFSET_FOR_LEADER_EPOCH_VERSION, OFFSET_FOR_LEADER_EPOCH_VERSION)
            )
        except (KcliError, OSError) as e:
            log.warning("[%s]: Error when sending leader epoch request to broker %d: %s", self.name, self.source_broker, e)
            self._delay([key for key, _, _ in asked])
            return
        sent = {key: (state, epoch) for key, state, epoch in asked}
        for topic in answer.topics:
            for data in topic.partitions:
                key = (topic.topic, int(data.partition))
                entry = sent.get(key)
                if entry is None or self._states.get(key) is not entry[0] or not entry[0].truncating:
                    continue
                state = entry[0]
                error = ErrorCode.for_code(int(data.error_code))
                if error == ErrorCode.NONE:
                    self._truncate(key, state, int(data.leader_epoch), int(data.end_offset))
                else:
                    self._partition_error(key, state, error)

    def _truncate(self, key: TopicPartition, state: PartitionFetchState, leader_epoch: int, leader_end_offset: int) -> None:
        """Truncate to where the leader's ``(epoch, end offset)`` says the logs agree, and fetch
        from there with the epoch the log now ends in."""
        partition = self.replica_manager.follower_partition(*key)
        if partition is None:
            self._states.pop(key, None)
            return
        offset, completed = partition.truncation_offset(leader_epoch, leader_end_offset)
        before = (state.fetch_offset, state.last_fetched_epoch)
        try:
            state.fetch_offset = partition.truncate_to(offset, functools.partial(self.replica_manager.log_manager.truncate_to, *key))
        except KcliError as e:
            log.error("[%s]: Could not truncate %s-%d to offset %d: %s; it is no longer fetched", self.name, key[0], key[1], offset, e)
            self._states.pop(key, None)
            return
        latest = partition.log.latest_epoch
        state.last_fetched_epoch = -1 if latest is None else latest
        if not state.truncating and (state.fetch_offset, state.last_fetched_epoch) == before:
            # The leader places the log where it already is: asked again at once, it would
            # answer the same.
            self._delay([key])
        state.truncating = False
        if not completed:
            log.info("[%s]: Truncated %s-%d to the end of its own epoch %d; the leader checks it again", self.name, key[0], key[1], state.last_fetched_epoch)

    def _build_fetch(self, request: FetchRequestData) -> dict[str, Any]:
        return fetch_request(
            request.to_send, replica_id=self.broker_id, max_wait_ms=self.config.max_wait_ms, min_bytes=self.config.min_bytes,
            max_bytes=self.config.response_max_bytes, session_id=request.session_id, session_epoch=request.epoch, forgotten=request.to_forget,
        )

    def _process_partition_data(self, key: TopicPartition, state: PartitionFetchState, data: Any) -> None:
        """One partition's answer (Kafka's processPartitionData and its error cases)."""
        error = ErrorCode.for_code(int(data.error_code))
        topic, index = key
        diverging = getattr(data, "diverging_epoch", None)
        if error == ErrorCode.NONE and diverging is not None and int(diverging.epoch) >= 0:
            log.info(
                "[%s]: Partition %s-%d diverges from the leader's log: its epoch %d ends at offset %d there",
                self.name, topic, index, int(diverging.epoch), int(diverging.end_offset),
            )
            self._truncate(key, state, int(diverging.epoch), int(diverging.end_offset))
        elif error == ErrorCode.NONE:
            partition = self.replica_manager.follower_partition(topic, index)
            if partition is None:
                self._states.pop(key, None)
                return
            records = data.records
            try:
                if records:
                    self._maybe_start_log_at_first_batch(key, partition, records)
                    info = partition.append_records_to_follower(records)
                    if info.last_offset >= state.fetch_offset:
                        state.fetch_offset = info.last_offset + 1
                        latest = partition.log.latest_epoch
                        state.last_fetched_epoch = -1 if latest is None else latest
                    if self.quota is not None and self.quota.is_throttled(index, partition.log.config):
                        self.quota.record(len(records))
                leader_high_watermark = int(data.high_watermark)
                state.lag = max(0, leader_high_watermark - state.fetch_offset)
                partition.update_follower_high_watermark(leader_high_watermark)
                leader_start = int(data.log_start_offset)
                if 0 <= leader_start <= partition.high_watermark:
                    partition.log.maybe_increment_log_start_offset(leader_start)
            except KafkaStorageError as e:
                if partition.log.is_offline:
                    log.error("[%s]: Error while processing data for partition %s-%d: %s; it is no longer fetched", self.name, topic, index, e)
                    self._states.pop(key, None)
                else:
                    # A refused write (a full disk) was undone: the log is as it was, and the
                    # fetch is tried again after the backoff, so the replica catches up and
                    # rejoins the ISR once the disk has room. The log dir reports the refusal.
                    self._delay([key])
            except KcliError as e:
                log.error("[%s]: Found invalid messages during fetch for partition %s-%d offset %d: %s", self.name, topic, index, state.fetch_offset, e)
                self._delay([key])
        else:
            self._partition_error(key, state, error)

    def _maybe_start_log_at_first_batch(self, key: TopicPartition, partition: Any, records: Any) -> None:
        """An empty log that starts inside the first batch fetched (the leader's log start offset
        moved into a batch by DeleteRecords) starts at that batch's base offset, as Kafka's
        appendRecordsToFollowerOrFutureReplica does; any other offset gap is the append's error."""
        partition_log = partition.log
        end = partition_log.log_end_offset
        if end != partition_log.log_start_offset:
            return
        try:
            first = read_batch(memoryview(records), 0)
            base, last = first.base_offset, first.last_offset
        except (KcliError, ValueError, IndexError):
            return  # the append names what is wrong with it
        if base < end <= last:
            log.info(
                "[%s]: Unexpected offset in append to %s-%d. First offset %d is less than log start offset %d. Since this is the "
                "first record to be appended to the follower's log, will start the log from offset %d.",
                self.name, key[0], key[1], base, end, base,
            )
            self.replica_manager.log_manager.truncate_fully_and_start_at(key[0], key[1], base)

    def _partition_error(self, key: TopicPartition, state: PartitionFetchState, error: ErrorCode) -> None:
        """A partition's error in a Fetch or OffsetForLeaderEpoch answer (Kafka's onPartitionFenced
        and the retriable cases): fenced, it waits for the controller; otherwise it backs off."""
        topic, index = key
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            log.info(
                "[%s]: Partition %s-%d has an older epoch (%d) than the current leader. Will await the new LeaderAndIsr state "
                "before resuming fetching.", self.name, topic, index, state.current_leader_epoch,
            )
            self._states.pop(key, None)
        else:
            log.warning("[%s]: Error in response for partition %s-%d at offset %d: %s", self.name, topic, index, state.fetch_offset, error.name)
            self._delay([key])

    def _delay(self, keys: Iterable[TopicPartition], seconds: float | None = None) -> None:
        """Skip ``keys`` for ``replica.fetch.backoff.ms``, or ``seconds`` when that is shorter."""
        backoff = self.config.backoff_ms / 1000
        until = time.monotonic() + (backoff if seconds is None else min(backoff, seconds))
        for key in keys:
            state = self._states.get(key)
            if state is not None:
                state.delayed_until = until
