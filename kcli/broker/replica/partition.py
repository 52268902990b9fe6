"""One topic-partition this broker hosts: Kafka's ``kafka.cluster.Partition``.

A partition is one object for as long as the broker hosts it, whatever its role: the controller's
decisions (a ``PartitionState``: replicas, ISR, leader, epochs, replicas being added or removed)
reach it through ``make_leader`` and ``make_follower``, which update it in place. It knows its
log, the leader's broker id (``leader_id``, -1 for none), the leader epoch and where it started
in the log, the partition epoch (the version of its state znode), its assignment, its ISR and,
on the leader, what it knows of each remote replica (``Replica``: log end offset, last caught-up
and last fetch times).

The high watermark moves in one place, ``maybe_increment_leader_hw``: to the smallest log end
offset among the leader's own log and every remote replica that is in the ISR or caught up
within ``replica.lag.time.max.ms``, never backwards. A follower's Fetch reaches the leader's
partition as ``update_follower_fetch_state`` (its position, the times it was caught up); a
follower appends what it fetched with ``append_records_to_follower`` and takes the leader's high
watermark as far as its own log reaches.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kcli.errors import ErrorCode, KafkaError
from kcli.metadata.topics import PartitionState
from kcli.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kcli.storage.log import Log, LogAppendInfo
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import RecordBatch
from kcli.storage.truncated import TruncatedRecords

logger = logging.getLogger(__name__)

NO_LEADER = -1
UNKNOWN_OFFSET = -1  # Kafka's UnifiedLog.UnknownOffset: a replica the leader has not heard from
DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30000  # replica.lag.time.max.ms


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class Replica:
    """What the leader knows of one remote replica (Kafka's ``kafka.cluster.Replica``)."""

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_caught_up_time_ms: int = 0
    last_fetch_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET

    def reset_last_caught_up_time(self, leader_end_offset: int, now_ms: int, last_caught_up_time_ms: int) -> None:
        """A new leadership: nothing heard from the replica in it yet."""
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now_ms
        self.last_caught_up_time_ms = last_caught_up_time_ms
        self.log_end_offset = UNKNOWN_OFFSET
        self.log_start_offset = UNKNOWN_OFFSET

    def update_fetch_state(self, fetch_offset: int, start_offset: int, fetch_time_ms: int, leader_end_offset: int) -> None:
        """The replica fetched from ``fetch_offset`` (Kafka's Replica.updateFetchState): it has
        everything below it. It is caught up as of this fetch when it asked for the leader's log
        end offset, or as of its previous fetch when it asked for the log end offset of then."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_start_offset = start_offset
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms


@dataclass(frozen=True, slots=True)
class PendingIsrChange:
    """An ISR change the leader sent the controller in AlterPartition and that is not answered
    yet (Kafka 2.8's PendingExpandIsr / PendingShrinkIsr): the proposed ISR, at the leader and
    partition epochs it was proposed under."""

    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int

    @property
    def is_expansion(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class PendingExpandIsr(PendingIsrChange):
    @property
    def is_expansion(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class PendingShrinkIsr(PendingIsrChange):
    pass


# Kafka 2.8's handleAlterIsrResponse: the errors after which a proposal is given up, and its words.
_GIVING_UP = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "since it doesn't know about this topic or partition",
    ErrorCode.FENCED_LEADER_EPOCH: "since we sent an old leader epoch",
    ErrorCode.INVALID_UPDATE_VERSION: "due to invalid version",
}


def _scala_seq(kind: str, items: tuple[int, ...]) -> str:
    """A Scala collection's toString (``List(1, 2)``, ``Set(1, 2)``; a small Set keeps its order)."""
    return f"{kind}({', '.join(map(str, items))})"


class Partition:
    def __init__(
        self,
        topic: str,
        index: int,
        topic_id: uuid.UUID | None,
        log: Log,
        *,
        local_broker_id: int,
        replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
        clock: Callable[[], int] = now_ms,
        alter_isr: Callable[[Partition, PendingIsrChange], None] | None = None,
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.local_broker_id = local_broker_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._clock = clock
        # Where a proposed ISR change goes (the replica manager's AlterIsrManager); None keeps it pending.
        self._alter_isr = alter_isr
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.leader_epoch_start_offset: int | None = None
        self.partition_epoch = -1
        self.controller_epoch = 0
        self.replicas: tuple[int, ...] = ()
        self.adding_replicas: tuple[int, ...] = ()
        self.removing_replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()  # the committed ISR: what min.insync.replicas counts
        self.pending_isr: PendingIsrChange | None = None
        self.remote_replicas: dict[int, Replica] = {}

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.index}, leader={self.leader_id}, leader_epoch={self.leader_epoch}, "
            f"partition_epoch={self.partition_epoch}, replicas={list(self.replicas)}, isr={list(self.isr)})"
        )

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR with the replicas a pending change may still count in sync (Kafka's
        IsrState.maximalIsr): what the high watermark waits for. An expansion counts the new
        replica at once; a shrink keeps counting the outgoing ones until the controller answers."""
        pending = self.pending_isr
        if pending is None:
            return self.isr
        return self.isr + tuple(r for r in pending.isr if r not in self.isr)

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    # -- the controller's decisions ----------------------------------------------------------------

    def make_leader(self, state: PartitionState) -> bool:
        """Lead the partition as ``state`` says (Kafka's Partition.makeLeader): the new epoch starts
        at the log end offset, the remote replicas start this leader epoch unheard of (those in the
        ISR as caught up now). True when this broker was not the leader before."""
        now = self._clock()
        self._update_assignment_and_isr(state.replicas, state.isr, state.adding_replicas, state.removing_replicas)
        start_offset = self.log.log_end_offset
        self.log.maybe_assign_epoch_start_offset(state.leader_epoch, start_offset)
        is_new_leader = not self.is_leader
        self.leader_epoch = state.leader_epoch
        self.leader_epoch_start_offset = start_offset
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = state.controller_epoch
        self.leader_id = self.local_broker_id
        # Every leadership state, not only a new leader's (Kafka 2.8): a replica the controller took
        # out of the ISR no longer counts as caught up, so it cannot hold the high watermark.
        for replica in self.remote_replicas.values():
            replica.reset_last_caught_up_time(start_offset, now, now if replica.broker_id in self.isr else 0)
        self.maybe_increment_leader_hw(now)
        return is_new_leader

    def make_follower(self, state: PartitionState) -> bool:
        """Follow ``state.leader`` (Kafka's Partition.makeFollower): a follower keeps the assignment
        but no ISR (the leader owns it). True when the leader or its epoch changed."""
        self._update_assignment_and_isr(state.replicas, (), state.adding_replicas, state.removing_replicas)
        changed = self.leader_id != state.leader or self.leader_epoch != state.leader_epoch
        self.leader_epoch = state.leader_epoch
        self.leader_epoch_start_offset = None
        self.partition_epoch = state.partition_epoch
        self.controller_epoch = state.controller_epoch
        self.leader_id = state.leader
        return changed

    def _update_assignment_and_isr(
        self, replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...]
    ) -> None:
        self.replicas, self.isr = tuple(replicas), tuple(isr)
        self.pending_isr = None  # the controller's state replaces whatever was proposed
        self.adding_replicas, self.removing_replicas = tuple(adding), tuple(removing)
        remote = [r for r in self.replicas if r != self.local_broker_id]
        self.remote_replicas = {r: self.remote_replicas.get(r) or Replica(r) for r in remote}

    # -- the leader's work ---------------------------------------------------------------------------

    def append_records_to_leader(
        self, records: bytes | memoryview | RecordBatch, origin: AppendOrigin, required_acks: int
    ) -> LogAppendInfo:
        """Append as the leader (Kafka's Partition.appendRecordsToLeader): a client's produce (the
        batch's header as the handler read it, over the request's bytes), or (``origin``) the
        broker's own batches. acks=-1 needs an ISR of at least ``min.insync.replicas``."""
        if not self.is_leader:
            raise KafkaError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER, f"Leader not local for partition {self.topic}-{self.index} on broker {self.local_broker_id}"
            )
        if required_acks == -1:
            min_isr = self.log.config.min_insync_replicas
            if len(self.isr) < min_isr:
                raise KafkaError(
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    f"The size of the current ISR {set(self.isr)} is insufficient to satisfy the min.isr requirement of {min_isr} for partition {self.topic}-{self.index}",
                )
        info = self.log.append(records, leader_epoch=self.leader_epoch, origin=origin)
        self.maybe_increment_leader_hw()
        return info

    def update_follower_fetch_state(self, follower_id: int, fetch_offset: int, follower_start_offset: int, fetch_time_ms: int, leader_end_offset: int) -> bool:
        """Record a follower's Fetch (Kafka's Partition.updateFollowerFetchState): its position,
        then the high watermark it may let move. False when ``follower_id`` is no replica of the
        partition (nothing recorded)."""
        replica = self.remote_replicas.get(follower_id)
        if replica is None:
            return False
        previous_end_offset = replica.log_end_offset
        replica.update_fetch_state(fetch_offset, follower_start_offset, fetch_time_ms, leader_end_offset)
        self.maybe_expand_isr(follower_id)
        if replica.log_end_offset != previous_end_offset:
            self.maybe_increment_leader_hw(fetch_time_ms)
        return True

    # -- the ISR -------------------------------------------------------------------------------------

    def maybe_expand_isr(self, follower_id: int) -> PendingIsrChange | None:
        """Propose ``follower_id`` for the ISR once it has the high watermark and the start of the
        current leader epoch (Kafka's maybeExpandIsr / isFollowerInSync; KAFKA-7128: a follower
        caught up to a high watermark below where this leader's epoch started may lack records
        this leader has and the last one did not). None while another change is pending."""
        replica = self.remote_replicas.get(follower_id)
        if not self.is_leader or self.pending_isr is not None or replica is None or follower_id in self.isr:
            return None
        start = self.leader_epoch_start_offset
        if start is None or replica.log_end_offset < self.high_watermark or replica.log_end_offset < start:
            return None
        # Kafka 2.8 logs no line of its own for an expansion: the proposal's DEBUG line in _submit,
        # then "ISR updated to" once the controller commits it.
        self.pending_isr = PendingExpandIsr(self.isr + (follower_id,), self.leader_epoch, self.partition_epoch)
        return self._submit(self.pending_isr)

    def out_of_sync_replicas(self, now_ms: int) -> tuple[int, ...]:
        """The followers of the ISR not caught up for ``replica.lag.time.max.ms`` (Kafka's
        getOutOfSyncReplicas): behind the log end offset and not at it since; never the leader."""
        log_end = self.log.log_end_offset
        out = []
        for broker_id in self.isr:
            if broker_id == self.local_broker_id:
                continue
            replica = self.remote_replicas.get(broker_id)
            if replica is None or (replica.log_end_offset != log_end and now_ms - replica.last_caught_up_time_ms > self.replica_lag_time_max_ms):
                out.append(broker_id)
        return tuple(out)

    def maybe_shrink_isr(self, now_ms: int | None = None) -> PendingIsrChange | None:
        """Propose the ISR without its out-of-sync followers (Kafka's maybeShrinkIsr); the leader
        stays, so the ISR is never empty. None while another change is pending."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        now = self._clock() if now_ms is None else now_ms
        out = self.out_of_sync_replicas(now)
        if not out:
            return None
        self.pending_isr = PendingShrinkIsr(tuple(r for r in self.isr if r not in out), self.leader_epoch, self.partition_epoch)
        logger.info(
            "[Partition %s-%d broker=%d] Shrinking ISR from %s to %s. Leader: (highWatermark: %d, endOffset: %d). Out of sync "
            "replicas: %s.", self.topic, self.index, self.local_broker_id, ",".join(map(str, self.isr)),
            ",".join(map(str, self.pending_isr.isr)), self.high_watermark, self.log.log_end_offset,
            " ".join(f"(brokerId: {r}, endOffset: {self.remote_replicas[r].log_end_offset if r in self.remote_replicas else -1})" for r in out),
        )
        return self._submit(self.pending_isr)

    def _submit(self, proposal: PendingIsrChange) -> PendingIsrChange:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "[Partition %s-%d broker=%d] Enqueued ISR change to state LeaderAndIsr(leader=%d, leaderEpoch=%d, isr=%s, zkVersion=%d) "
                "after transition to %s", self.topic, self.index, self.local_broker_id, self.local_broker_id, proposal.leader_epoch,
                _scala_seq("List", proposal.isr), proposal.partition_epoch, self.describe_pending(proposal),
            )
        if self._alter_isr is not None:
            self._alter_isr(self, proposal)
        return proposal

    def isr_change_answered(self, proposal: PendingIsrChange, isr: tuple[int, ...], leader_epoch: int, partition_epoch: int) -> bool:
        """The controller accepted an ISR change (Kafka's handleAlterIsrResponse): its ISR and
        partition epoch become the committed state, when the answer is for the change still
        pending and not older than what this partition knows. The high watermark then moves if
        the new ISR lets it (KAFKA-13091: a shrink can release it). True when it moved."""
        if self.pending_isr is not proposal or leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            return False
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        self.pending_isr = None
        logger.info(
            "[Partition %s-%d broker=%d] ISR updated to %s and version updated to [%d]",
            self.topic, self.index, self.local_broker_id, ",".join(map(str, self.isr)), partition_epoch,
        )
        return self.maybe_increment_leader_hw()

    def isr_change_refused(self, proposal: PendingIsrChange, error: ErrorCode) -> None:
        """The controller refused an ISR change for good (a stale partition or leader epoch, an
        unknown partition): it stays pending, proposing nothing more, until the controller's next
        LeaderAndIsr replaces the state (Kafka 2.8). INELIGIBLE_REPLICA (the proposed ISR names a
        replica the controller does not count alive) drops the proposal instead, so that the
        next fetch proposes again."""
        if self.pending_isr is not proposal:
            return
        if error == ErrorCode.INELIGIBLE_REPLICA:
            # The controller says the request was not applied at the partition epoch it has (a
            # replica it does not count alive, such as a follower back from a session that
            # expired): the committed state is kept and the next fetch may propose again (Kafka
            # 3.x's handleAlterPartitionError). Waiting for a LeaderAndIsr instead would wait
            # forever, nothing having changed that the controller would send.
            self.pending_isr = None
            logger.debug(
                "[Partition %s-%d broker=%d] Failed to alter partition to %s since the controller rejected the request with %s. "
                "Partition state has been reset to the latest committed state CommittedPartitionState(isr=%s, leaderRecoveryState=RECOVERED).",
                self.topic, self.index, self.local_broker_id, self.describe_pending(proposal), error.name, _scala_seq("Set", self.isr),
            )
            return
        reason = _GIVING_UP.get(error)
        if reason is None:
            # Kafka 2.8 retries every other error; kcli gives up on the later ones (INVALID_REQUEST,
            # UNKNOWN_TOPIC_ID) as Kafka's KRaft-era AlterPartitionManager does.
            reason = f"due to {error.name}"
        logger.debug("[Partition %s-%d broker=%d] Failed to update ISR to %s %s. Giving up.", self.topic, self.index, self.local_broker_id, self.describe_pending(proposal), reason)

    def isr_change_retried(self, proposal: PendingIsrChange, error: ErrorCode) -> None:
        """The controller answered an ISR change with an error worth sending it again for (Kafka
        2.8's handleAlterIsrResponse: "Retrying.")."""
        logger.warning(
            "[Partition %s-%d broker=%d] Failed to update ISR to %s due to unexpected %s. Retrying.",
            self.topic, self.index, self.local_broker_id, self.describe_pending(proposal), error.name,
        )

    def describe_pending(self, proposal: PendingIsrChange) -> str:
        """``proposal`` as Kafka 2.8 prints its IsrState: ``PendingExpandIsr(isr=Set(0, 1),
        newInSyncReplicaId=2)`` or ``PendingShrinkIsr(isr=Set(0, 1, 2), outOfSyncReplicaIds=Set(2))``,
        ``isr`` being the committed ISR it was proposed from."""
        if proposal.is_expansion:
            added = [r for r in proposal.isr if r not in self.isr]
            return f"PendingExpandIsr(isr={_scala_seq('Set', self.isr)}, newInSyncReplicaId={added[0] if added else -1})"
        removed = tuple(r for r in self.isr if r not in proposal.isr)
        return f"PendingShrinkIsr(isr={_scala_seq('Set', self.isr)}, outOfSyncReplicaIds={_scala_seq('Set', removed)})"

    def maybe_increment_leader_hw(self, now_ms: int | None = None) -> bool:
        """Move the high watermark up to the smallest log end offset among the leader's log and the
        remote replicas in the ISR or caught up within ``replica.lag.time.max.ms`` (Kafka's
        Partition.maybeIncrementLeaderHW); True when it moved."""
        now = self._clock() if now_ms is None else now_ms
        new_high_watermark = self.log.log_end_offset
        maximal_isr = self.maximal_isr
        for replica in self.remote_replicas.values():
            recently_caught_up = now - replica.last_caught_up_time_ms <= self.replica_lag_time_max_ms
            if replica.log_end_offset < new_high_watermark and (replica.broker_id in maximal_isr or recently_caught_up):
                new_high_watermark = replica.log_end_offset
        return self.log.maybe_increment_high_watermark(new_high_watermark)

    def diverging_epoch(self, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
        """Where a follower's log leaves the leader's (KIP-320, Kafka's Partition.readRecords): the
        leader's ``(epoch, end offset)`` for the follower's last fetched epoch when that epoch is
        not the leader's or ends below the fetch offset; None when the logs agree. A follower
        behind the log start offset, or with an epoch the leader cannot place, is
        OFFSET_OUT_OF_RANGE."""
        epoch, end_offset = self.log.end_offset_for_epoch(last_fetched_epoch)
        if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_EPOCH_OFFSET:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"Could not determine the end offset of the last fetched epoch {last_fetched_epoch} from the request",
            )
        if fetch_offset < self.log.log_start_offset:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"Received request for offset {fetch_offset} for partition {self.topic}-{self.index}, "
                f"but we only have log segments starting from offset: {self.log.log_start_offset}.",
            )
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return epoch, end_offset
        return None

    # -- the follower's work ---------------------------------------------------------------------------

    def append_records_to_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        """Append the leader's batches as they are (Kafka's appendRecordsToFollowerOrFutureReplica):
        offsets, leader epochs and timestamps kept; the epochs and producer state follow them."""
        return self.log.append_as_follower(records)

    def truncation_offset(self, leader_epoch: int, leader_end_offset: int) -> tuple[int, bool]:
        """Where a follower truncates given the leader's ``(epoch, end offset)`` for its epoch
        (Kafka's AbstractFetcherThread.getOffsetTruncationState), and whether that is the end of
        it: with the same epoch, at the smaller end offset; with an epoch the follower never had,
        at the end of its own largest epoch below it, to be checked again from there."""
        log_end = self.log.log_end_offset
        if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
            # The leader knows no epoch this old: only what it committed is certain.
            return self.log.high_watermark, True
        if leader_epoch == UNDEFINED_EPOCH:
            return min(leader_end_offset, log_end), True
        epoch, end_offset = self.log.end_offset_for_epoch(leader_epoch)
        if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_EPOCH_OFFSET:
            return min(leader_end_offset, log_end), True
        if epoch != leader_epoch:
            return min(end_offset, log_end), False
        return min(leader_end_offset, end_offset, log_end), True

    def truncate_to(self, offset: int, truncate: Callable[..., TruncatedRecords | None] | None = None) -> int:
        """Truncate the follower's log to ``offset``, where its leader's log ends (through
        ``truncate``, the log manager's, which pauses the cleaner; the log's own by default).
        Returns the offset the log now ends at.

        As Kafka's ReplicaFetcherThread.truncate, this may go below the follower's high
        watermark: only after an unclean leader election does the leader lack records it
        committed, and the leader's log is then the partition's. Whatever it removes is kept
        aside (``storage/truncated.py``) and reported in one WARN line: the offsets, the leader
        epochs of the batches, the leader and leader epoch that lack them, the high watermark
        when they were below it, and where they are kept. A follower cannot tell an unclean
        election from a clean one (Kafka 2.8's LeaderAndIsr does not say), and a clean
        election's truncated tail may hold records acks=1 producers were told were written: so
        every truncation that removes records is reported and kept alike."""
        high_watermark = self.log.high_watermark
        removed = (truncate or self.log.truncate_to)(offset, keep_aside_epoch=self.leader_epoch)
        if removed is not None and removed.batches:
            self._report_truncation(removed, high_watermark)
        return self.log.log_end_offset

    def _report_truncation(self, removed: TruncatedRecords, high_watermark: int) -> None:
        epochs = ", ".join(str(e) for e in removed.leader_epochs) or "none"
        below = ""
        if removed.first_offset < high_watermark:
            below = (
                f", offsets {removed.first_offset} to {min(high_watermark, removed.last_offset + 1) - 1} of them below the high "
                f"watermark {high_watermark} (committed: the leader was elected uncleanly)"
            )
        if removed.kept_in is not None:
            kept = f"kept aside in {removed.kept_in} (kcli dump-log-segments --files reads them)"
        else:
            kept = f"could not be kept aside ({removed.keep_error}): deleted"
        logger.warning(
            "Truncated %s-%d to offset %d: offsets %d to %d (%s in %s of leader epochs %s) are not in the log "
            "of leader %d at leader epoch %d and are lost%s; %s",
            self.topic, self.index, removed.first_offset, removed.first_offset, removed.last_offset,
            _count(removed.records, "record"), _count(removed.batches, "batch"), epochs, self.leader_id, self.leader_epoch, below, kept,
        )

    def update_follower_high_watermark(self, leader_high_watermark: int) -> int:
        """A follower's high watermark: the leader's, as far as its own log reaches."""
        return self.log.update_high_watermark(min(leader_high_watermark, self.log.log_end_offset))

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """Kafka's Partition.checkEnoughReplicasReachOffset, for a waiting acks=-1 produce: done once
        the high watermark reaches ``required_offset`` (NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
        ISR is then smaller than ``min.insync.replicas``); NOT_LEADER_OR_FOLLOWER once this broker
        no longer leads."""
        if not self.is_leader:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return False, ErrorCode.NONE
        if len(self.isr) < self.log.config.min_insync_replicas:
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NONE

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing of requests that carry the client's idea of the leader epoch."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"{current_leader_epoch} is older than the leader epoch {self.leader_epoch}")
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"{current_leader_epoch} is newer than the leader epoch {self.leader_epoch}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es" if noun.endswith("h") else f"{n} {noun}s"
