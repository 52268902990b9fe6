"""A classic group: its state machine, members, protocol and committed offsets.

States and the transitions Kafka allows (``GroupMetadata`` / ``ClassicGroupState``)::

    Empty               -> PreparingRebalance (a member joins), Dead (deleted or offsets expired)
    PreparingRebalance  -> CompletingRebalance (every member rejoined, or the rebalance timeout),
                           Empty (nobody rejoined), Dead
    CompletingRebalance -> Stable (the leader's assignment is stored), PreparingRebalance, Dead
    Stable              -> PreparingRebalance (a member joins, leaves, fails or changes), Dead
    Dead                -> Dead

This module is pure state: no I/O, and the timers it holds are the coordinator's. ``coordinator``
drives it, one synchronous step at a time.
The group's protocol is the one every member supports, chosen by the members' votes (each member
votes for the first of its protocols that all support; the most votes win).
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kcli.broker.groups.member import ClassicGroupMember, Protocols
from kcli.broker.groups.offsets import CommittedOffset, OffsetAndMetadata
from kcli.common import TopicPartition
from kcli.errors import ErrorCode
from kcli.protocol.coordinator_records import CONSUMER_PROTOCOL_TYPE, decode_consumer_protocol_subscription

log = logging.getLogger(__name__)


UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
NO_LEADER = ""


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


_VALID_PREVIOUS = {
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: set(GroupState),
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
}


class IllegalStateTransition(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    member_id: str
    error: ErrorCode = ErrorCode.NONE
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = NO_LEADER
    skip_assignment: bool = False
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, instance id, metadata)


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    error: ErrorCode = ErrorCode.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(eq=False)
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    current_state_timestamp: int | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, ClassicGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending_members: set[str] = field(default_factory=set)  # member ids handed out by MEMBER_ID_REQUIRED
    pending_sync_members: set[str] = field(default_factory=set)
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    # Transactional commits not yet committed or aborted, by producer id.
    pending_transactional_offsets: dict[int, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)
    subscribed_topics: set[str] | None = None
    # A member joined while the first rebalance waits out group.initial.rebalance.delay.ms.
    new_member_added: bool = False
    # The coordinator's timers: the pending completion of PreparingRebalance, the deadline for
    # every member's SyncGroup, and the deadlines of member ids handed out by MEMBER_ID_REQUIRED.
    delayed_join: Any = field(default=None, repr=False)
    delayed_sync: Any = field(default=None, repr=False)
    pending_member_timers: dict[str, Any] = field(default_factory=dict, repr=False)
    _awaiting_join: int = 0
    _protocol_votes: dict[str, int] = field(default_factory=dict)

    # -- state ---------------------------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalStateTransition(f"Group {self.group_id} should be in one of {sorted(map(str, _VALID_PREVIOUS[state]))} before moving to {state}; it is {self.state}")
        self.state = state
        self.current_state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # -- members -------------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> ClassicGroupMember:
        return self.members[member_id]

    @property
    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def num_awaiting_join(self) -> int:
        return self._awaiting_join

    def add(self, member: ClassicGroupMember, join_waiter=None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise IllegalStateTransition(f"static member {member.group_instance_id} is already in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_votes(member, 1)
        member.join_waiter = join_waiter
        if join_waiter is not None:
            self._awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_votes(member, -1)
            if member.is_awaiting_join:
                self._awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: ClassicGroupMember, protocols: Protocols, rebalance_timeout_ms: int, session_timeout_ms: int, join_waiter) -> None:
        self._count_votes(member, -1)
        member.protocols = list(protocols)
        self._count_votes(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if join_waiter is not None and not member.is_awaiting_join:
            self._awaiting_join += 1
        elif join_waiter is None and member.is_awaiting_join:
            self._awaiting_join -= 1
        member.join_waiter = join_waiter

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> ClassicGroupMember:
        """Give a static member a new member id; the old id's waiting requests are fenced."""
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise IllegalStateTransition(f"cannot replace non-existing member id {old_member_id}")
        self.complete_join(member, JoinGroupResult(old_member_id, ErrorCode.FENCED_INSTANCE_ID))
        self.complete_sync(member, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        """When the leader did not rejoin, any member that did becomes the leader."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                log.info("Group leader %s of group %s failed to join before the rebalance timeout; %s is the new leader", self.leader_id, self.group_id, member_id)
                self.leader_id = member_id
                return True
        return False

    def current_static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def add_pending_member(self, member_id: str) -> None:
        if self.has(member_id):
            raise IllegalStateTransition(f"pending member {member_id} is already a member of group {self.group_id}")
        self.pending_members.add(member_id)

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self._awaiting_join and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    @staticmethod
    def generate_member_id(client_id: str, group_instance_id: str | None) -> str:
        prefix = client_id if group_instance_id is None else group_instance_id
        return f"{prefix}-{uuid.uuid4()}"

    # -- waiters -------------------------------------------------------------------------------

    def complete_join(self, member: ClassicGroupMember, result: JoinGroupResult) -> None:
        waiter = member.join_waiter
        if waiter is None:
            return
        member.join_waiter = None
        self._awaiting_join -= 1
        if not waiter.done():
            waiter.set_result(result)

    def complete_sync(self, member: ClassicGroupMember, result: SyncGroupResult) -> bool:
        waiter = member.sync_waiter
        if waiter is None:
            return False
        member.sync_waiter = None
        if not waiter.done():
            waiter.set_result(result)
        return True

    # -- protocols -----------------------------------------------------------------------------

    def _count_votes(self, member: ClassicGroupMember, delta: int) -> None:
        for name in member.protocol_names:
            self._protocol_votes[name] = self._protocol_votes.get(name, 0) + delta

    def candidate_protocols(self) -> set[str]:
        size = len(self.members)
        return {name for name, count in self._protocol_votes.items() if count == size}

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        """Whether a joining member's protocols fit the group (Empty: any non-empty set)."""
        names = set(protocols)
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(names)
        size = len(self.members)
        return self.protocol_type == protocol_type and any(self._protocol_votes.get(n, 0) == size for n in names)

    def select_protocol(self) -> str:
        if not self.members:
            raise IllegalStateTransition(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=votes.__getitem__)

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def compute_subscribed_topics(self) -> set[str] | None:
        """The topics a consumer group's members subscribe to; None when they cannot be known."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                _, subscription = decode_consumer_protocol_subscription(member.metadata(self.protocol_name))
                topics.update(subscription["Topics"])
        except Exception as e:  # a client's opaque bytes that are not a consumer subscription
            log.warning("Failed to parse the consumer protocol %s of group %s; its subscribed topics are unknown: %s", self.protocol_name, self.group_id, e)
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return self.subscribed_topics is None or topic in self.subscribed_topics

    def current_member_metadata(self) -> tuple[tuple[str, str | None, bytes], ...]:
        if self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE):
            raise IllegalStateTransition(f"cannot list member metadata of group {self.group_id} in state {self.state}")
        return tuple((m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values())

    # -- offsets -------------------------------------------------------------------------------

    def offset(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        committed = self.offsets.get(tp)
        return None if committed is None else committed.value

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending_transactional_offsets)

    def has_pending_offsets(self, tp: TopicPartition) -> bool:
        return any(tp in pending for pending in self.pending_transactional_offsets.values())

    def put_offset(self, tp: TopicPartition, committed: CommittedOffset) -> None:
        current = self.offsets.get(tp)
        if current is None or current.older_than(committed):
            self.offsets[tp] = committed

    def remove_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        removed = {}
        for tp in partitions:
            for pending in self.pending_transactional_offsets.values():
                pending.pop(tp, None)
            committed = self.offsets.pop(tp, None)
            if committed is not None:
                removed[tp] = committed.value
        return removed

    def remove_all_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return self.remove_offsets(list(self.offsets))
