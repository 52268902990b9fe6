"""GroupCoordinator: the classic group protocol and offset storage, as Kafka 3.9's broker runs them.

The coordinator owns every group of the ``__consumer_offsets`` partitions this broker leads. A
group lives in one partition (``partitioner``); while that partition is being replayed its
groups answer COORDINATOR_LOAD_IN_PROGRESS, and a group of a partition this broker does not lead
answers NOT_COORDINATOR.

One owner per group: the event loop. Each public operation, and each timer, changes a group in one
synchronous step (validation, state change, the append of its records) that never suspends in
the middle, so concurrent joins, syncs, heartbeats, leaves and commits see one state at a time.
A JoinGroup or SyncGroup that has to wait gets a future, which the state machine completes (all
members joined, the rebalance timeout, the leader's assignment stored, an error); the request
awaits it after its step.

Deadlines are event-loop timers, never polling: a member's session timeout (rescheduled by each
heartbeat, commit, join and sync), the join timeout of a new member (5 minutes) and of a member
id handed out with MEMBER_ID_REQUIRED (its session timeout), the rebalance timeout of a
PreparingRebalance group (or ``group.initial.rebalance.delay.ms`` for a new group, extended
while members keep arriving, up to the rebalance timeout), and the rebalance timeout for every
member's SyncGroup after a rebalance. A timer runs its check as one such step and does nothing
when the state it was set for has moved on.

Offsets: commits from a member are checked against its generation; commits with generation -1
and no member id (simple consumers, admin tools) are accepted while the group is Empty.
``offsets.retention.minutes`` expiry runs every ``offsets.retention.check.interval.ms``
(``offsets.expired_offsets``); an Empty group with no offsets left becomes Dead and its metadata
is deleted (a tombstone).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kcli.broker.groups import group_metadata_manager
from kcli.broker.groups.group import (
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    GroupState,
    JoinGroupResult,
    SyncGroupResult,
    TopicPartition,
)
from kcli.broker.groups.member import ClassicGroupMember, Protocols
from kcli.broker.groups.offsets import (
    INVALID_OFFSET,
    NO_METADATA,
    CommittedOffset,
    OffsetAndMetadata,
    expired_offsets,
    metadata_fits,
)
from kcli.broker.groups.partitioner import partition_for
from kcli.broker.replica.delayed_produce import PartitionResponse
from kcli.metadata.topic_names import GROUP_METADATA_TOPIC_NAME
from kcli.errors import ErrorCode

log = logging.getLogger("kcli.broker.groups")

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
CLASSIC_GROUP_TYPE = "classic"


class GroupApi(enum.Enum):
    JOIN_GROUP = "JoinGroup"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"
    OFFSET_COMMIT = "OffsetCommit"
    OFFSET_FETCH = "OffsetFetch"
    DESCRIBE_GROUPS = "DescribeGroups"
    DELETE_GROUPS = "DeleteGroups"
    OFFSET_DELETE = "OffsetDelete"
    TXN_OFFSET_COMMIT = "TxnOffsetCommit"


# Kept for backwards compatibility: these APIs accept the empty group id.
_EMPTY_GROUP_ID_ALLOWED = {GroupApi.OFFSET_COMMIT, GroupApi.OFFSET_FETCH, GroupApi.DESCRIBE_GROUPS, GroupApi.DELETE_GROUPS}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class GroupConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    max_size: int = 2**31 - 1
    initial_rebalance_delay_ms: int = 3000
    offsets_partitions: int = 50
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000
    load_buffer_size: int = 5242880

    @classmethod
    def from_broker_config(cls, config: Any) -> GroupConfig:
        get = config.get
        return cls(
            min_session_timeout_ms=get("group.min.session.timeout.ms"),
            max_session_timeout_ms=get("group.max.session.timeout.ms"),
            max_size=get("group.max.size"),
            initial_rebalance_delay_ms=get("group.initial.rebalance.delay.ms"),
            offsets_partitions=get("offsets.topic.num.partitions"),
            offset_metadata_max_bytes=get("offset.metadata.max.bytes"),
            offsets_retention_ms=get("offsets.retention.minutes") * 60_000,
            offsets_retention_check_interval_ms=get("offsets.retention.check.interval.ms"),
            load_buffer_size=get("offsets.load.buffer.size"),
        )


@dataclass(eq=False)
class _DelayedJoin:
    """The pending completion of a PreparingRebalance; ``initial`` for a new group's delay."""

    initial: bool
    delay_ms: int
    remaining_ms: int = 0
    handle: Any = None


@dataclass(eq=False)
class _Deadline:
    handle: Any = None


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberSummary, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = CLASSIC_GROUP_TYPE


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    topic: str
    partition: int
    offset: int = INVALID_OFFSET
    leader_epoch: int | None = None
    metadata: str = NO_METADATA
    error: ErrorCode = ErrorCode.NONE


EMPTY_SUMMARY = GroupSummary("", "", "")
DEAD_SUMMARY = GroupSummary(str(GroupState.DEAD), "", "")


# Every request of a group maps its id to a partition; Java's String.hashCode is a loop in Python.
_partition_for = functools.lru_cache(maxsize=65536)(partition_for)


class GroupCoordinator:
    def __init__(self, config: GroupConfig, writer: Any, *, time_ms: Callable[[], int] = now_ms) -> None:
        """``writer`` appends to and reads the offsets partitions (``group_metadata_manager.GroupMetadataManager``)."""
        self.config = config
        self._writer = writer
        self._time_ms = time_ms
        self._groups: dict[str, ClassicGroup] = {}
        self._owned: set[int] = set()
        self._loading: set[int] = set()
        self._active = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self._expiry_handle: asyncio.TimerHandle | None = None

    # -- life cycle ----------------------------------------------------------------------------

    def startup(self, hosted_partitions: Iterable[int] = ()) -> None:
        """Start serving (on the event loop): load each hosted offsets partition, expire offsets."""
        self._loop = asyncio.get_running_loop()
        self._active = True
        for partition in hosted_partitions:
            self.on_election(partition)
        self._schedule_offset_expiry()

    async def shutdown(self) -> None:
        """Stop: every waiting JoinGroup/SyncGroup answers NOT_COORDINATOR, every timer stops."""
        self._active = False
        if self._expiry_handle is not None:
            self._expiry_handle.cancel()
        for partition in sorted(self._owned | self._loading):
            self.on_resignation(partition)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def active(self) -> bool:
        return self._active

    def now_ms(self) -> int:
        return self._time_ms()

    def hosted_partitions(self) -> set[int]:
        """The offsets partitions loaded or loading."""
        return self._owned | self._loading

    def set_partition_count(self, count: int) -> None:
        """The offsets topic was created with ``count`` partitions: groups map onto those."""
        if count != self.config.offsets_partitions and not self.hosted_partitions():
            self.config = dataclasses.replace(self.config, offsets_partitions=count)

    def partition_for(self, group_id: str) -> int:
        return _partition_for(group_id, self.config.offsets_partitions)

    def is_loaded(self, partition: int) -> bool:
        return partition in self._owned

    def on_election(self, partition: int) -> None:
        """This broker leads ``partition`` of the offsets topic: load its groups and offsets."""
        if partition in self._owned or partition in self._loading:
            return
        partition_log = self._writer.log(partition)
        if partition_log is None:
            log.warning("Attempted to load offsets and group metadata from %s-%d, but found no log", GROUP_METADATA_TOPIC_NAME, partition)
            return
        self._loading.add(partition)
        if partition_log.log_end_offset == partition_log.log_start_offset:
            self._install(partition, group_metadata_manager.ReplayedPartition(), self._time_ms())
            return
        log.info("Scheduling loading of offsets and group metadata from %s-%d", GROUP_METADATA_TOPIC_NAME, partition)
        self._spawn(self._load(partition, partition_log))

    async def _load(self, partition: int, partition_log: Any) -> None:
        started = self._time_ms()
        name = f"{GROUP_METADATA_TOPIC_NAME}-{partition}"
        try:
            replayed = await asyncio.get_running_loop().run_in_executor(
                None, lambda: group_metadata_manager.replay(group_metadata_manager.read_batches(partition_log, self.config.load_buffer_size), name)
            )
        except Exception:
            log.exception("Error loading offsets from %s", name)
            self._loading.discard(partition)
            return
        if partition not in self._loading:
            return
        self._install(partition, replayed, started)

    def _install(self, partition: int, replayed: group_metadata_manager.ReplayedPartition, started: int) -> None:
        now = self._time_ms()
        groups: dict[str, ClassicGroup] = {}
        for group_id, (version, value) in replayed.groups.items():
            groups[group_id] = group_metadata_manager.group_from_record(group_id, version, value)
        for (group_id, topic, index), committed in replayed.offsets.items():
            group = groups.get(group_id) or groups.setdefault(group_id, ClassicGroup(group_id, current_state_timestamp=now))
            group.offsets[(topic, index)] = committed
        for producer_id, pending in replayed.pending.items():
            for (group_id, topic, index), committed in pending.items():
                group = groups.get(group_id) or groups.setdefault(group_id, ClassicGroup(group_id, current_state_timestamp=now))
                group.pending_transactional_offsets.setdefault(producer_id, {})[(topic, index)] = committed
        for group_id, group in groups.items():
            if group_id in self._groups:
                log.debug("Group %s is already cached; not loading generation %d from the log", group_id, group.generation_id)
                continue
            self._groups[group_id] = group
            self._on_group_loaded(group)
        self._loading.discard(partition)
        self._owned.add(partition)
        log.log(
            logging.INFO if replayed.records else logging.DEBUG,
            "Finished loading offsets and group metadata from %s-%d in %d milliseconds: %d groups, %d records",
            GROUP_METADATA_TOPIC_NAME, partition, now - started, len(groups), replayed.records,
        )

    def _on_group_loaded(self, group: ClassicGroup) -> None:
        if group.size > self.config.max_size:
            self._prepare_rebalance(group, f"Freshly-loaded group is over capacity ({self.config.max_size}). Rebalancing in order to give a chance for consumers to commit offsets")
        for member in group.members.values():
            self._schedule_heartbeat(group, member)

    def on_resignation(self, partition: int) -> None:
        """This broker no longer leads ``partition``: drop its groups, answer their waiters."""
        self._loading.discard(partition)
        self._owned.discard(partition)
        for group in [g for g in self._groups.values() if self.partition_for(g.group_id) == partition]:
            self._on_group_unloaded(group)
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]

    def _on_group_unloaded(self, group: ClassicGroup) -> None:
        previous = group.state
        group.transition_to(GroupState.DEAD, self._time_ms())
        if previous is GroupState.PREPARING_REBALANCE:
            for member in list(group.members.values()):
                group.complete_join(member, JoinGroupResult(member.member_id, ErrorCode.NOT_COORDINATOR))
        elif previous in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            for member in list(group.members.values()):
                group.complete_sync(member, SyncGroupResult(ErrorCode.NOT_COORDINATOR))
        self._cancel_group_timers(group)

    # -- lookups and validation ----------------------------------------------------------------

    def _validate_group_status(self, group_id: str | None, api: GroupApi) -> ErrorCode | None:
        if group_id is None or (not group_id and api not in _EMPTY_GROUP_ID_ALLOWED):
            return ErrorCode.INVALID_GROUP_ID
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def _group_not_exists(self, group_id: str) -> bool:
        group = self._groups.get(group_id)
        return self.partition_for(group_id) in self._owned and (group is None or group.is_(GroupState.DEAD))

    def _get_or_create(self, group_id: str, create: bool) -> ClassicGroup | None:
        group = self._groups.get(group_id)
        if group is None and create:
            group = self._groups[group_id] = ClassicGroup(group_id, current_state_timestamp=self._time_ms())
        return group

    @staticmethod
    def _validate_current_member(group: ClassicGroup, member_id: str, group_instance_id: str | None, operation: str) -> ErrorCode | None:
        if group_instance_id is not None:
            current = group.current_static_member_id(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                log.info(
                    "Request memberId=%s for static member with groupInstanceId=%s is fenced by current memberId=%s during operation %s",
                    member_id, group_instance_id, current, operation,
                )
                return ErrorCode.FENCED_INSTANCE_ID
            return None
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    # -- JoinGroup -----------------------------------------------------------------------------

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        *,
        require_known_member_id: bool,
        support_skipping_assignment: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        reason: str | None = None,
    ) -> JoinGroupResult:
        error = self._validate_group_status(group_id, GroupApi.JOIN_GROUP)
        if error is not None:
            return JoinGroupResult(member_id, error)
        if not self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms:
            return JoinGroupResult(member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
        is_unknown_member = member_id == UNKNOWN_MEMBER_ID
        group = self._get_or_create(group_id, is_unknown_member)
        if group is None:
            return JoinGroupResult(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        waiter = asyncio.get_running_loop().create_future()
        join = _Join(member_id, group_instance_id, require_known_member_id and group_instance_id is None, support_skipping_assignment,
                     client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, list(protocols),
                     reason or "not provided", waiter)
        if not self._accept_joining_member(group, member_id):
            self._remove_member(group, member_id)
            waiter.set_result(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.GROUP_MAX_SIZE_REACHED))
        elif is_unknown_member:
            self._new_member_join(group, join)
        else:
            self._current_member_join(group, join)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        return await waiter

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        state = group.state
        if state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if state is GroupState.PREPARING_REBALANCE:
            # Awaiting members, not all members: the group may be over a lowered maximum.
            return (group.has(member_id) and group.get(member_id).is_awaiting_join) or group.num_awaiting_join < self.config.max_size
        return group.has(member_id) or group.size < self.config.max_size

    def _new_member_join(self, group: ClassicGroup, join: _Join) -> None:
        if group.is_(GroupState.DEAD):
            join.waiter.set_result(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(join.protocol_type, (name for name, _ in join.protocols)):
            join.waiter.set_result(JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_member_id = ClassicGroup.generate_member_id(join.client_id, join.group_instance_id)
        if join.group_instance_id is not None:
            old_member_id = group.current_static_member_id(join.group_instance_id)
            if old_member_id is not None:
                log.info(
                    "Static member with groupInstanceId=%s and unknown member id joins group %s in %s state. Replacing previously mapped member %s with this groupInstanceId.",
                    join.group_instance_id, group.group_id, group.state, old_member_id,
                )
                self._update_static_member_and_rebalance(group, old_member_id, new_member_id, join)
            else:
                self._add_member_and_rebalance(group, new_member_id, join)
        elif join.require_known_member_id:
            log.info(
                "Dynamic member with unknown member id joins group %s in %s state. Created a new member id %s and request the member to rejoin with this id.",
                group.group_id, group.state, new_member_id,
            )
            group.add_pending_member(new_member_id)
            self._schedule_pending_member_expiry(group, new_member_id, join.session_timeout_ms)
            join.waiter.set_result(JoinGroupResult(new_member_id, ErrorCode.MEMBER_ID_REQUIRED))
        else:
            self._add_member_and_rebalance(group, new_member_id, join)

    def _current_member_join(self, group: ClassicGroup, join: _Join) -> None:
        member_id = join.member_id
        if group.is_(GroupState.DEAD):
            join.waiter.set_result(JoinGroupResult(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(join.protocol_type, (name for name, _ in join.protocols)):
            join.waiter.set_result(JoinGroupResult(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        if group.is_pending_member(member_id):
            if join.group_instance_id is not None:
                log.error("Received a JoinGroup with groupInstanceId=%s for pending member %s of group %s", join.group_instance_id, member_id, group.group_id)
                join.waiter.set_result(JoinGroupResult(member_id, ErrorCode.UNKNOWN_SERVER_ERROR))
                return
            self._add_member_and_rebalance(group, member_id, join)
            return
        error = self._validate_current_member(group, member_id, join.group_instance_id, "join-group")
        if error is not None:
            join.waiter.set_result(JoinGroupResult(member_id, error))
            return
        member = group.get(member_id)
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, join, f"Member {member_id} joining group during {state}; client reason: {join.reason}")
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(join.protocols):
                # A rejoin with the same metadata (the member lost the JoinGroup response):
                # answer with the current generation.
                join.waiter.set_result(self._join_result(group, member_id, leader_gets_members=True))
            else:
                self._update_member_and_rebalance(group, member, join, f"Updating metadata for member {member_id} during {state}; client reason: {join.reason}")
        elif state is GroupState.STABLE:
            if group.is_leader(member_id):
                # The leader rejoining forces a rebalance: it lets the leader react to changes
                # the members' metadata does not show (new partitions of a subscribed topic).
                self._update_member_and_rebalance(group, member, join, f"Leader {member_id} re-joining group during {state}; client reason: {join.reason}")
            elif not member.matches(join.protocols):
                self._update_member_and_rebalance(group, member, join, f"Updating metadata for member {member_id} during {state}; client reason: {join.reason}")
            else:
                join.waiter.set_result(self._join_result(group, member_id, leader_gets_members=False))
        else:
            log.warning("Attempt to add rejoining member %s of group %s in unexpected group state %s", member_id, group.group_id, state)
            join.waiter.set_result(JoinGroupResult(member_id, ErrorCode.UNKNOWN_MEMBER_ID))

    def _join_result(self, group: ClassicGroup, member_id: str, *, leader_gets_members: bool, leader: str | None = None, skip_assignment: bool = False) -> JoinGroupResult:
        members = group.current_member_metadata() if leader_gets_members and group.is_leader(member_id) else ()
        return JoinGroupResult(
            member_id,
            ErrorCode.NONE,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id if leader is None else leader,
            skip_assignment,
            members,
        )

    def _add_member_and_rebalance(self, group: ClassicGroup, member_id: str, join: _Join) -> None:
        member = ClassicGroupMember(
            member_id, join.group_instance_id, join.client_id, join.client_host, join.rebalance_timeout_ms,
            join.session_timeout_ms, join.protocol_type, join.protocols,
        )
        member.is_new = True
        if group.is_(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, join.waiter)
        # A new member cannot heartbeat before its JoinGroup is answered; a client that gave up
        # and retried would otherwise leave defunct members behind.
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"Adding new member {member_id} with group instance id {join.group_instance_id}; client reason: {join.reason}")

    def _update_member_and_rebalance(self, group: ClassicGroup, member: ClassicGroupMember, join: _Join, reason: str) -> None:
        self._replace_join_waiter(group, member)
        group.update_member(member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms, join.waiter)
        self._maybe_prepare_rebalance(group, reason)

    @staticmethod
    def _replace_join_waiter(group: ClassicGroup, member: ClassicGroupMember) -> None:
        """A member that joins again while an earlier JoinGroup of it still waits (its client
        gave up on that one): the earlier one is answered now rather than never."""
        if member.is_awaiting_join:
            group.complete_join(member, JoinGroupResult(member.member_id, ErrorCode.REBALANCE_IN_PROGRESS))

    def _update_static_member_and_rebalance(self, group: ClassicGroup, old_member_id: str, new_member_id: str, join: _Join) -> None:
        current_leader = group.leader_id
        member = group.replace_static_member(join.group_instance_id, old_member_id, new_member_id)
        # The old member id's deadline is void: the group no longer knows that id.
        self._schedule_heartbeat(group, member)
        old_protocols = member.protocols
        old_rebalance_timeout, old_session_timeout = member.rebalance_timeout_ms, member.session_timeout_ms
        group.update_member(member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms, join.waiter)
        state = group.state
        if state is GroupState.STABLE:
            # Unless the group's protocol would change, the rejoined static member keeps its
            # assignment and the group stays Stable: only the new member id is stored.
            if group.protocol_name == group.select_protocol():
                log.info("Static member which joins during Stable stage and doesn't affect selectProtocol will not trigger rebalance.")
                assignment = {m.member_id: m.assignment for m in group.members.values()}
                self._store_group(group, assignment, functools.partial(
                    self._static_member_stored, group, member, join, old_member_id, new_member_id, current_leader,
                    (old_protocols, old_rebalance_timeout, old_session_timeout),
                ))
            else:
                self._maybe_prepare_rebalance(group, f"Group's selectedProtocol will change because static member {member.member_id} with instance id {join.group_instance_id} joined with change of protocol; client reason: {join.reason}")
        elif state is GroupState.COMPLETING_REBALANCE:
            # The leader may already be assigning to the old member id: rebalance again.
            self._prepare_rebalance(group, f"Updating metadata for static member {member.member_id} with instance id {join.group_instance_id}; client reason: {join.reason}")
        elif state is not GroupState.PREPARING_REBALANCE:
            raise RuntimeError(f"Group {group.group_id} was not supposed to be in state {state} when the unknown static member {join.group_instance_id} rejoins.")

    def _static_member_stored(
        self, group: ClassicGroup, member: ClassicGroupMember, join: _Join, old_member_id: str, new_member_id: str,
        current_leader: str | None, old: tuple[Protocols, int, int], error: ErrorCode,
    ) -> None:
        """The metadata of a Stable group whose static member rejoined is stored (or not)."""
        if error is not ErrorCode.NONE:
            log.warning("Failed to persist metadata for group %s: %s", group.group_id, error.name)
            group.update_member(member, *old, None)
            old_member = group.replace_static_member(join.group_instance_id, new_member_id, old_member_id)
            self._schedule_heartbeat(group, old_member)
            join.waiter.set_result(JoinGroupResult(
                UNKNOWN_MEMBER_ID, error, group.generation_id, group.protocol_type, group.protocol_name, current_leader or "",
            ))
        elif join.support_skipping_assignment:
            # JoinGroup v9+: the leader learns it leads but skips the assignor, so the
            # Stable group's assignment stays as it is.
            is_leader = group.is_leader(new_member_id)
            group.complete_join(member, self._join_result(group, new_member_id, leader_gets_members=True, skip_assignment=is_leader))
        else:
            # Older clients: the old leader id is returned so that a rejoined leader does
            # not compute an assignment a Stable group would not distribute.
            group.complete_join(member, self._join_result(group, new_member_id, leader_gets_members=False, leader=current_leader or ""))

    # -- rebalancing ---------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        initial_delay = self.config.initial_rebalance_delay_ms
        if group.is_(GroupState.EMPTY):
            delayed = _DelayedJoin(True, initial_delay, max(group.rebalance_timeout_ms() - initial_delay, 0))
        else:
            delayed = _DelayedJoin(False, group.rebalance_timeout_ms())
        group.transition_to(GroupState.PREPARING_REBALANCE, self._time_ms())
        log.info(
            "Preparing to rebalance group %s in state %s with old generation %d (%s-%d) (reason: %s)",
            group.group_id, group.state, group.generation_id, GROUP_METADATA_TOPIC_NAME, self.partition_for(group.group_id), reason,
        )
        self._watch_join(group, delayed)

    def _watch_join(self, group: ClassicGroup, delayed: _DelayedJoin) -> None:
        if group.delayed_join is not None and group.delayed_join.handle is not None:
            group.delayed_join.handle.cancel()
        group.delayed_join = delayed
        if not delayed.initial and group.has_all_members_joined():
            self._complete_delayed_join(group, delayed)
            return
        delayed.handle = self._call_later(delayed.delay_ms, self._on_join_timer, group, delayed)

    def _try_complete_join(self, group: ClassicGroup) -> None:
        delayed = group.delayed_join
        if delayed is not None and not delayed.initial and group.has_all_members_joined():
            self._complete_delayed_join(group, delayed)

    def _complete_delayed_join(self, group: ClassicGroup, delayed: _DelayedJoin) -> None:
        if delayed.handle is not None:
            delayed.handle.cancel()
        if group.delayed_join is delayed:
            group.delayed_join = None
        self._on_complete_join(group)

    def _on_join_timer(self, group: ClassicGroup, delayed: _DelayedJoin) -> None:
        if group.delayed_join is not delayed:
            return
        group.delayed_join = None
        if delayed.initial and group.new_member_added and delayed.remaining_ms != 0:
            # Members are still arriving: wait once more, within the rebalance timeout.
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, delayed.remaining_ms)
            remaining = max(delayed.remaining_ms - delayed.delay_ms, 0)
            self._watch_join(group, _DelayedJoin(True, delay, remaining))
            return
        self._on_complete_join(group)

    def _on_complete_join(self, group: ClassicGroup) -> None:
        not_rejoined = [m for m in group.not_yet_rejoined_members() if not m.is_static]
        if not_rejoined:
            log.info("Group %s removed dynamic members who haven't joined: %s", group.group_id, [m.member_id for m in not_rejoined])
            for member in not_rejoined:
                self._remove_member(group, member.member_id)
        if group.is_(GroupState.DEAD):
            log.info("Group %s is dead, skipping rebalance stage", group.group_id)
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait again until the session timeouts remove the silent members.
            log.error("Group %s could not complete rebalance because no members rejoined", group.group_id)
            self._watch_join(group, _DelayedJoin(False, group.rebalance_timeout_ms()))
            return
        group.init_next_generation(self._time_ms())
        partition = self.partition_for(group.group_id)
        if group.is_(GroupState.EMPTY):
            log.info("Group %s with generation %d is now empty (%s-%d)", group.group_id, group.generation_id, GROUP_METADATA_TOPIC_NAME, partition)
            self._store_group(group, {}, functools.partial(self._empty_group_stored, group))
            return
        log.info("Stabilized group %s generation %d (%s-%d) with %d members", group.group_id, group.generation_id, GROUP_METADATA_TOPIC_NAME, partition, group.size)
        for member in list(group.members.values()):
            group.complete_join(member, self._join_result(group, member.member_id, leader_gets_members=True))
            self._schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._schedule_pending_sync(group)

    @staticmethod
    def _empty_group_stored(group: ClassicGroup, error: ErrorCode) -> None:
        if error is not ErrorCode.NONE:
            log.warning("Failed to write empty metadata for group %s: %s", group.group_id, error.name)

    def _schedule_pending_sync(self, group: ClassicGroup) -> None:
        if group.delayed_sync is not None:
            group.delayed_sync.handle.cancel()
        deadline = _Deadline()
        group.delayed_sync = deadline
        deadline.handle = self._call_later(group.rebalance_timeout_ms(), self._on_sync_timer, group, deadline, group.generation_id)

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self._cancel_sync_timer(group)

    def _cancel_sync_timer(self, group: ClassicGroup) -> None:
        if group.delayed_sync is not None:
            group.delayed_sync.handle.cancel()
            group.delayed_sync = None

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel_sync_timer(group)

    def _on_sync_timer(self, group: ClassicGroup, deadline: _Deadline, generation_id: int) -> None:
        if group.delayed_sync is not deadline:
            return
        group.delayed_sync = None
        if generation_id != group.generation_id or group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if group.pending_sync_members:
            missing = sorted(group.pending_sync_members)
            for member_id in missing:
                self._remove_member(group, member_id)
            log.debug("Group %s removed members who haven't sent their sync request: %s", group.group_id, missing)
            self._prepare_rebalance(group, f"Removing {missing} on pending sync request expiration")

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _set_and_propagate_assignment(self, group: ClassicGroup, assignment: Mapping[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignment[member.member_id]
        self._propagate_assignment(group, ErrorCode.NONE)

    def _propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error is ErrorCode.NONE
        for member in list(group.members.values()):
            result = SyncGroupResult(error, group.protocol_type if ok else None, group.protocol_name if ok else None, member.assignment)
            if group.complete_sync(member, result):
                # Reset the session deadline: one that passed while the member waited for its
                # assignment was void.
                self._schedule_heartbeat(group, member)

    # -- members' deadlines --------------------------------------------------------------------

    def _schedule_heartbeat(self, group: ClassicGroup, member: ClassicGroupMember, timeout_ms: int | None = None) -> None:
        """Complete the member's current deadline (it is alive) and set the next one."""
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.handle.cancel()
        deadline = _Deadline()
        member.heartbeat_timer = deadline
        deadline.handle = self._call_later(member.session_timeout_ms if timeout_ms is None else timeout_ms, self._on_heartbeat_timer, group, member, deadline)

    def _on_heartbeat_timer(self, group: ClassicGroup, member: ClassicGroupMember, deadline: _Deadline) -> None:
        if member.heartbeat_timer is not deadline:
            return
        member.heartbeat_timer = None
        if group.is_(GroupState.DEAD) or group.members.get(member.member_id) is not member:
            return
        if member.survives_missed_heartbeat():
            return
        log.info("Member %s in group %s has failed, removing it from the group", member.member_id, group.group_id)
        self._remove_member_and_update_group(group, member, f"removing member {member.member_id} on heartbeat expiration")

    def _schedule_pending_member_expiry(self, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
        group.pending_member_timers[member_id] = self._call_later(timeout_ms, self._on_pending_member_timer, group, member_id)

    def _on_pending_member_timer(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_member_timers.pop(member_id, None)
        if group.is_(GroupState.DEAD) or not group.is_pending_member(member_id):
            return
        log.info("Pending member %s in group %s has been removed after session timeout expiration.", member_id, group.group_id)
        self._remove_pending_member_and_update_group(group, member_id)

    def _remove_pending_member_and_update_group(self, group: ClassicGroup, member_id: str) -> None:
        self._remove_member(group, member_id)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_member_and_update_group(self, group: ClassicGroup, member: ClassicGroupMember, reason: str) -> None:
        # A new member may still wait in JoinGroup: answer it so that its client rejoins.
        group.complete_join(member, JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
        self._remove_member(group, member.member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_member(self, group: ClassicGroup, member_id: str) -> None:
        """Drop a member or pending member id, its deadline, and answer anything it still waits on."""
        timer = group.pending_member_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()
        member = group.members.get(member_id)
        if member is not None:
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.handle.cancel()
                member.heartbeat_timer = None
            group.complete_join(member, JoinGroupResult(UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID))
            group.complete_sync(member, SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)

    def _cancel_group_timers(self, group: ClassicGroup) -> None:
        if group.delayed_join is not None and group.delayed_join.handle is not None:
            group.delayed_join.handle.cancel()
        group.delayed_join = None
        self._cancel_sync_timer(group)
        for timer in group.pending_member_timers.values():
            timer.cancel()
        group.pending_member_timers.clear()
        for member in group.members.values():
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.handle.cancel()
                member.heartbeat_timer = None

    # -- SyncGroup -----------------------------------------------------------------------------

    async def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
    ) -> SyncGroupResult:
        error = self._validate_group_status(group_id, GroupApi.SYNC_GROUP)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # The rebalance in flight was lost with the coordinator's state: the member has to
            # rejoin (older clients do not expect COORDINATOR_LOAD_IN_PROGRESS here).
            return SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS)
        if error is not None:
            return SyncGroupResult(error)
        group = self._groups.get(group_id)
        if group is None:
            return SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID)
        error = self._validate_sync(group, generation_id, member_id, group_instance_id, protocol_type, protocol_name)
        if error is not None:
            return SyncGroupResult(error)
        state = group.state
        if state is GroupState.EMPTY:
            return SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if state is GroupState.PREPARING_REBALANCE:
            return SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.get(member_id)
        if state is GroupState.STABLE:
            self._remove_pending_sync_member(group, member_id)
            self._schedule_heartbeat(group, member)
            return SyncGroupResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment)
        waiter = asyncio.get_running_loop().create_future()
        if member.is_awaiting_sync:
            group.complete_sync(member, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_waiter = waiter
        self._remove_pending_sync_member(group, member_id)
        if group.is_leader(member_id):
            self._complete_assignment(group, generation_id, member_id, assignments)
        return await waiter

    def _validate_generation_member(self, group: ClassicGroup, member_id: str, group_instance_id: str | None, generation_id: int, operation: str) -> ErrorCode | None:
        """The error of a request a member makes in a generation (SyncGroup, Heartbeat), if any."""
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self._validate_current_member(group, member_id, group_instance_id, operation)
        if error is not None:
            return error
        return ErrorCode.ILLEGAL_GENERATION if generation_id != group.generation_id else None

    def _validate_sync(self, group: ClassicGroup, generation_id: int, member_id: str, group_instance_id: str | None,
                       protocol_type: str | None, protocol_name: str | None) -> ErrorCode | None:
        error = self._validate_generation_member(group, member_id, group_instance_id, generation_id, "sync-group")
        if error is not None:
            return error
        if protocol_type is not None and group.protocol_type != protocol_type:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and group.protocol_name != protocol_name:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _complete_assignment(self, group: ClassicGroup, generation_id: int, member_id: str, assignments: Mapping[str, bytes]) -> None:
        log.info(
            "Assignment received from leader %s for group %s for generation %d. The group has %d members, %d of which are static.",
            member_id, group.group_id, group.generation_id, group.size, len(group.static_members),
        )
        assignment = {m: bytes(assignments.get(m, b"")) for m in group.members}
        missing = [m for m in group.members if m not in assignments]
        if missing:
            log.warning("Setting empty assignments for members %s of %s for generation %d", missing, group.group_id, group.generation_id)
        self._store_group(group, assignment, functools.partial(self._assignment_stored, group, generation_id, member_id, assignment))

    def _assignment_stored(self, group: ClassicGroup, generation_id: int, member_id: str, assignment: Mapping[str, bytes], error: ErrorCode) -> None:
        """Kafka's storeGroup callback in doSyncGroup: the group moves on only if it is still
        completing the generation whose assignment was stored."""
        if not group.is_(GroupState.COMPLETING_REBALANCE) or generation_id != group.generation_id:
            return
        if error is not ErrorCode.NONE:
            self._reset_and_propagate_assignment_error(group, error)
            self._maybe_prepare_rebalance(group, f"Error {error.name} when storing group assignment during SyncGroup (member: {member_id})")
        else:
            self._set_and_propagate_assignment(group, assignment)
            group.transition_to(GroupState.STABLE, self._time_ms())

    # -- Heartbeat -----------------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> ErrorCode:
        error = self._validate_group_status(group_id, GroupApi.HEARTBEAT)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE  # the group is still loading: answer blindly
        if error is not None:
            return error
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = self._validate_generation_member(group, member_id, group_instance_id, generation_id, "heartbeat")
        if error is not None:
            return error
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, group.get(member_id))
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- LeaveGroup ----------------------------------------------------------------------------

    def leave_group(self, group_id: str, leaving: Iterable[tuple[str, str | None, str | None]]) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """``leaving``: (member id, group instance id, reason). Returns the group error and one
        (member id, instance id, error) per leaving member."""
        leaving = list(leaving)
        error = self._validate_group_status(group_id, GroupApi.LEAVE_GROUP)
        if error is not None:
            return error, []
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i, _ in leaving]
        results = []
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        for member_id, instance_id, reason in leaving:
            results.append((member_id, instance_id, self._leave(group, member_id, instance_id, reason or "not provided")))
        return ErrorCode.NONE, results

    def _leave(self, group: ClassicGroup, member_id: str, instance_id: str | None, reason: str) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID:
            # An administrative removal by group.instance.id.
            current = group.current_static_member_id(instance_id) if instance_id is not None else None
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_current_member(group, current, reason)
            return ErrorCode.NONE
        if group.is_pending_member(member_id):
            self._remove_pending_member_and_update_group(group, member_id)
            log.info("Pending member with memberId=%s has left group %s through explicit `LeaveGroup` request", member_id, group.group_id)
            return ErrorCode.NONE
        error = self._validate_current_member(group, member_id, instance_id, "leave-group")
        if error is not None:
            return error
        self._remove_current_member(group, member_id, reason)
        return ErrorCode.NONE

    def _remove_current_member(self, group: ClassicGroup, member_id: str, reason: str) -> None:
        member = group.get(member_id)
        self._remove_member_and_update_group(group, member, f"Removing member {member_id} on LeaveGroup; client reason: {reason}")
        log.info("Member %s has left group %s through explicit `LeaveGroup`; client reason: %s", member_id, group.group_id, reason)

    # -- offsets -------------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        response_callback: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """Store a group's commits (Kafka's handleCommitOffsets); ``response_callback`` gets each
        partition's error once they are replicated, or at once when refused."""
        error = self._validate_group_status(group_id, GroupApi.OFFSET_COMMIT)
        if error is not None:
            return response_callback(dict.fromkeys(offsets, error))
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # A commit from an older generation of a group that no longer exists.
                return response_callback(dict.fromkeys(offsets, ErrorCode.ILLEGAL_GENERATION))
            # The group does not use Kafka's group management: its commits are accepted.
            group = self._get_or_create(group_id, True)
        error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return response_callback(dict.fromkeys(offsets, error))
        state = group.state
        if state is GroupState.COMPLETING_REBALANCE:
            # A member of the new generation commits before its assignment: it handles
            # REBALANCE_IN_PROGRESS by finishing the rebalance first.
            return response_callback(dict.fromkeys(offsets, ErrorCode.REBALANCE_IN_PROGRESS))
        if state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self._schedule_heartbeat(group, group.get(member_id))
        self._store_offsets(group, offsets, response_callback)

    def _validate_offset_commit(self, group: ClassicGroup, generation_id: int, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(GroupState.EMPTY):
            return None
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id, "offset-commit")
            if error is not None:
                return error
            return ErrorCode.ILLEGAL_GENERATION if generation_id != group.generation_id else None
        if not group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID  # only members commit while the group has members
        return None

    def _store_offsets(
        self,
        group: ClassicGroup,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        response_callback: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """Kafka's GroupMetadataManager.storeOffsets: the commits are appended with acks=-1 and
        become the group's committed offsets in the append's callback, once replicated."""
        limit = self.config.offset_metadata_max_bytes
        # A string of n characters is n to 2n UTF-16 units long: only a longer one is measured.
        half = limit // 2
        valid = offsets
        for value in offsets.values():
            metadata = value.metadata
            if metadata is not None and len(metadata) > half:
                valid = {tp: value for tp, value in offsets.items() if metadata_fits(value.metadata, limit)}
                break
        if not valid:
            response_callback(dict.fromkeys(offsets, ErrorCode.OFFSET_METADATA_TOO_LARGE))
            return

        def appended(response: Any) -> None:
            if response.error_code != ErrorCode.NONE:
                log.debug("Offset commit of group %s failed when appending to log: %s", group.group_id, ErrorCode(response.error_code).name)
                response_callback(self._offset_results(offsets, valid, group_metadata_manager.append_error(response.error_code, offsets=True)))
                return
            if not group.is_(GroupState.DEAD):
                for tp, value in valid.items():
                    group.put_offset(tp, CommittedOffset(value, response.base_offset))
            response_callback(self._offset_results(offsets, valid, ErrorCode.NONE))

        self._append(
            f"Offset commit of group {group.group_id}", appended,
            self._writer.append_offset_commits, self.partition_for(group.group_id), group.group_id, valid, self._time_ms(),
        )

    @staticmethod
    def _append(what: str, appended: Callable[[PartitionResponse], None], write: Callable[..., None], *args: Any) -> None:
        """``write(*args, appended)``, one of the group metadata manager's acks=-1 appends. A
        failure outside the log's errors is answered as UNKNOWN_SERVER_ERROR, so that whoever
        waits on ``appended`` is answered."""
        try:
            write(*args, appended)
        except Exception:
            log.exception("%s failed when appending to log", what)
            appended(PartitionResponse(ErrorCode.UNKNOWN_SERVER_ERROR))

    @staticmethod
    def _offset_results(offsets: Mapping[TopicPartition, OffsetAndMetadata], valid: Mapping[TopicPartition, OffsetAndMetadata], error: ErrorCode) -> dict[TopicPartition, ErrorCode]:
        """``error`` for the partitions written (or not), OFFSET_METADATA_TOO_LARGE for the others."""
        if valid is offsets:
            return dict.fromkeys(offsets, error)
        result = dict.fromkeys(offsets, ErrorCode.OFFSET_METADATA_TOO_LARGE)
        result.update(dict.fromkeys(valid, error))
        return result

    # -- transactional offsets (TxnOffsetCommit, and the markers that end them) ----------------------

    def commit_transactional_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        response_callback: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """Write a transaction's offsets as a transactional batch of its producer (acks=-1); once
        replicated they are pending until the transaction's marker reaches the group's partition
        (``complete_transaction``), and ``response_callback`` gets each partition's error."""
        error = self.transactional_commit_status(group_id)
        if error is not None:
            return response_callback(dict.fromkeys(offsets, error))
        group = self._get_or_create(group_id, True)
        if group.is_(GroupState.DEAD):
            return response_callback(dict.fromkeys(offsets, ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id, "txn-offset-commit")
            if error is None and generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            if error is not None:
                return response_callback(dict.fromkeys(offsets, error))
        limit = self.config.offset_metadata_max_bytes
        valid = {tp: value for tp, value in offsets.items() if metadata_fits(value.metadata, limit)}
        if not valid:
            return response_callback(dict.fromkeys(offsets, ErrorCode.OFFSET_METADATA_TOO_LARGE))
        records = [group_metadata_manager.offset_commit_record(group_id, tp, value, self._time_ms()) for tp, value in valid.items()]

        def appended(response: PartitionResponse) -> None:
            if response.error_code != ErrorCode.NONE:
                log.debug("Transactional offset commit of group %s failed when appending to log: %s", group_id, ErrorCode(response.error_code).name)
                response_callback(self._offset_results(offsets, valid, group_metadata_manager.append_error(response.error_code, offsets=True)))
                return
            pending = group.pending_transactional_offsets.setdefault(producer_id, {})
            for tp, value in valid.items():
                pending[tp] = CommittedOffset(value, response.base_offset)
            response_callback(self._offset_results(offsets, valid, ErrorCode.NONE))

        self._append(
            f"Transactional offset commit of group {group_id}", appended,
            self._writer.append_transactional, self.partition_for(group_id), records, producer_id, producer_epoch,
        )

    def transactional_commit_status(self, group_id: str | None) -> ErrorCode | None:
        """What a TxnOffsetCommit for the group answers before anything else (an empty group id is
        INVALID_GROUP_ID here, unlike OffsetCommit's)."""
        return self._validate_group_status(group_id, GroupApi.TXN_OFFSET_COMMIT)

    def complete_transaction(self, producer_id: int, partition: int, commit: bool) -> None:
        """A marker of ``producer_id`` reached offsets ``partition``: its pending offsets become the
        committed ones (COMMIT, unless a newer commit is already there) or are dropped (ABORT)."""
        for group in self._groups.values():
            if self.partition_for(group.group_id) != partition:
                continue
            pending = group.pending_transactional_offsets.pop(producer_id, None)
            if commit and pending:
                for tp, committed in pending.items():
                    group.put_offset(tp, committed)

    def fetch_offsets(self, group_id: str, require_stable: bool, partitions: list[TopicPartition] | None) -> tuple[ErrorCode, list[FetchedOffset]]:
        """The committed offsets of ``partitions`` (None: every partition the group has one for)."""
        error = self._validate_group_status(group_id, GroupApi.OFFSET_FETCH)
        if error is not None:
            return error, []
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [FetchedOffset(t, p) for t, p in partitions or ()]
        if group.is_(GroupState.DEAD):
            return ErrorCode.NONE, [FetchedOffset(t, p) for t, p in partitions or ()]
        result = []
        for tp in (list(group.offsets) if partitions is None else partitions):
            if require_stable and group.has_pending_offsets(tp):
                result.append(FetchedOffset(tp[0], tp[1], error=ErrorCode.UNSTABLE_OFFSET_COMMIT))
                continue
            value = group.offset(tp)
            if value is None:
                result.append(FetchedOffset(tp[0], tp[1]))
            else:
                result.append(FetchedOffset(tp[0], tp[1], value.offset, value.leader_epoch, value.metadata))
        return ErrorCode.NONE, result

    def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        error = self._validate_group_status(group_id, GroupApi.OFFSET_DELETE)
        if error is not None:
            return error, {}
        group = self._groups.get(group_id)
        if group is None:
            return (ErrorCode.GROUP_ID_NOT_FOUND if self._group_not_exists(group_id) else ErrorCode.NOT_COORDINATOR), {}
        results: dict[TopicPartition, ErrorCode] = {}
        if group.is_(GroupState.DEAD):
            return (ErrorCode.GROUP_ID_NOT_FOUND if self._group_not_exists(group_id) else ErrorCode.NOT_COORDINATOR), {}
        if group.is_(GroupState.EMPTY):
            eligible = list(partitions)
        elif group.is_consumer_group:
            eligible = []
            for tp in partitions:
                if group.is_subscribed_to_topic(tp[0]):
                    results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        if eligible:
            removed = self._cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible))
            results.update(dict.fromkeys(eligible, ErrorCode.NONE))
            log.info("The following offsets of the group %s were deleted: %s. A total of %d offsets were removed.", group_id, eligible, removed)
        return ErrorCode.NONE, results

    def delete_partitions(self, partitions: Iterable[TopicPartition]) -> int:
        """Offsets of deleted topic partitions are removed from every group."""
        partitions = list(partitions)
        groups = [g for g in self._groups.values() if self.partition_for(g.group_id) in self._owned]
        removed = self._cleanup_group_metadata(groups, lambda g: g.remove_offsets(partitions))
        if removed:
            log.info("Removed %d offsets associated with deleted partitions: %s.", removed, partitions)
        return removed

    def expire_offsets(self) -> int:
        """One pass of ``offsets.retention.minutes`` expiry over every owned group."""
        now = self._time_ms()
        groups = [g for g in self._groups.values() if self.partition_for(g.group_id) in self._owned]
        retention = self.config.offsets_retention_ms
        removed = self._cleanup_group_metadata(groups, lambda g: g.remove_offsets(expired_offsets(g, now, retention)))
        if removed:
            log.info("Removed %d expired offsets in %d milliseconds.", removed, self._time_ms() - now)
        return removed

    def _cleanup_group_metadata(self, groups: Iterable[ClassicGroup], selector: Callable[[ClassicGroup], Mapping[TopicPartition, Any]]) -> int:
        removed_count = 0
        for group in list(groups):
            removed = selector(group)
            if group.is_(GroupState.EMPTY) and not group.has_offsets():
                log.info("Group %s transitioned to Dead in generation %d", group.group_id, group.generation_id)
                group.transition_to(GroupState.DEAD, self._time_ms())
            partition = self.partition_for(group.group_id)
            if partition not in self._owned:
                log.info("This broker is no longer the coordinator for the group %s; proceeding with the other groups", group.group_id)
                continue
            timestamp = self._time_ms()
            tombstones = [group_metadata_manager.offset_tombstone(group.group_id, tp, timestamp) for tp in removed]
            if group.is_(GroupState.DEAD) and self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]
                self._cancel_group_timers(group)
                # A group that only ever stored offsets (generation 0) has no metadata record.
                if group.generation_id > 0:
                    tombstones.append(group_metadata_manager.group_tombstone(group.group_id, timestamp))
            if tombstones:
                # As Kafka's cleanupGroupMetadata: the tombstones are not waited for.
                self._append(
                    f"Appending tombstones of group {group.group_id}",
                    functools.partial(self._tombstones_appended, group.group_id, partition, len(tombstones)),
                    self._writer.append, partition, tombstones,
                )
                removed_count += len(removed)
        return removed_count

    @staticmethod
    def _tombstones_appended(group_id: str, partition: int, count: int, response: PartitionResponse) -> None:
        if response.error_code != ErrorCode.NONE:
            log.error(
                "Failed to append %d tombstones to %s-%d for expired/deleted offsets and/or metadata for group %s: %s",
                count, GROUP_METADATA_TOPIC_NAME, partition, group_id, ErrorCode(response.error_code).name,
            )

    def _schedule_offset_expiry(self) -> None:
        interval = self.config.offsets_retention_check_interval_ms
        if interval <= 0 or interval >= 2**62:
            return
        self._expiry_handle = self._loop.call_later(interval / 1000, self._run_offset_expiry)

    def _run_offset_expiry(self) -> None:
        if not self._active:
            return
        try:
            self.expire_offsets()
        except Exception:
            log.exception("Offset expiration failed")
        finally:
            if self._active:
                self._schedule_offset_expiry()

    # -- groups: list, describe, delete --------------------------------------------------------

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> tuple[ErrorCode, list[GroupOverview]]:
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._loading else ErrorCode.NONE
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and CLASSIC_GROUP_TYPE not in wanted_types:
            return error, []
        groups = [
            GroupOverview(g.group_id, g.protocol_type or "", str(g.state))
            for g in self._groups.values()
            if not wanted_states or str(g.state).lower() in wanted_states
        ]
        return error, groups

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary | None]:
        """The group's summary; None when the group does not exist (Kafka answers it as Dead)."""
        error = self._validate_group_status(group_id, GroupApi.DESCRIBE_GROUPS)
        if error is not None:
            return error, EMPTY_SUMMARY
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, None
        if group.is_(GroupState.STABLE):
            protocol = group.protocol_name
            members = tuple(MemberSummary(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.metadata(protocol), m.assignment) for m in group.members.values())
            return ErrorCode.NONE, GroupSummary(str(group.state), group.protocol_type or "", protocol, members)
        members = tuple(MemberSummary(m.member_id, m.group_instance_id, m.client_id, m.client_host, b"", b"") for m in group.members.values())
        return ErrorCode.NONE, GroupSummary(str(group.state), group.protocol_type or "", "", members)

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        eligible: list[ClassicGroup] = []
        for group_id in dict.fromkeys(group_ids):
            error = self._validate_group_status(group_id, GroupApi.DELETE_GROUPS)
            if error is not None:
                results[group_id] = error
                continue
            group = self._groups.get(group_id)
            if group is None:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND if self._group_not_exists(group_id) else ErrorCode.NOT_COORDINATOR
                continue
            if group.is_(GroupState.DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND if self._group_not_exists(group_id) else ErrorCode.NOT_COORDINATOR
            elif group.is_(GroupState.EMPTY):
                group.transition_to(GroupState.DEAD, self._time_ms())
                eligible.append(group)
            else:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
        if eligible:
            removed = self._cleanup_group_metadata(eligible, lambda g: g.remove_all_offsets())
            for group in eligible:
                results[group.group_id] = ErrorCode.NONE
            log.info("The following groups were deleted: %s. A total of %d offsets were removed.", ", ".join(g.group_id for g in eligible), removed)
        return results

    # -- storing the group ---------------------------------------------------------------------

    def _store_group(self, group: ClassicGroup, assignment: Mapping[str, bytes], then: Callable[[ErrorCode], None]) -> None:
        """Kafka's GroupMetadataManager.storeGroup: the group's metadata record appended with
        acks=-1; ``then`` gets the error once it is replicated (NONE) or refused."""
        record = group_metadata_manager.group_metadata_record(group, assignment, self._time_ms())

        def appended(response: PartitionResponse) -> None:
            if response.error_code == ErrorCode.NONE:
                then(ErrorCode.NONE)
                return
            log.debug(
                "Metadata from group %s with generation %d failed when appending to log: %s",
                group.group_id, group.generation_id, ErrorCode(response.error_code).name,
            )
            then(group_metadata_manager.append_error(response.error_code, offsets=False))

        self._append(f"Appending metadata of group {group.group_id}", appended, self._writer.append, self.partition_for(group.group_id), [record])

    # -- timers --------------------------------------------------------------------------------

    def _call_later(self, delay_ms: int, callback: Callable[..., None], group: ClassicGroup, *args: Any) -> asyncio.TimerHandle:
        """Run ``callback(group, *args)`` after ``delay_ms``, as one step on the loop."""
        loop = self._loop or asyncio.get_running_loop()
        return loop.call_later(max(delay_ms, 0) / 1000, self._fire, callback, group, args)

    def _fire(self, callback: Callable[..., None], group: ClassicGroup, args: tuple) -> None:
        try:
            callback(group, *args)
        except Exception:
            log.exception("Timer %s of group %s failed", getattr(callback, "__name__", callback), group.group_id)

    def _spawn(self, coroutine: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


@dataclass(slots=True)
class _Join:
    """One JoinGroup request's fields, as the join steps use them."""

    member_id: str
    group_instance_id: str | None
    require_known_member_id: bool
    support_skipping_assignment: bool
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    reason: str
    waiter: Any
