"""Partition assignors of the classic consumer protocol: range, roundrobin, cooperative-sticky.

The group leader decodes every member's ``ConsumerProtocolSubscription`` (the JoinGroup
metadata), runs the chosen assignor and encodes one ``ConsumerProtocolAssignment`` per member
for SyncGroup. Both formats are Kafka's (non-flexible, version-prefixed; subscription v0-3 adds
owned partitions, generation and rack; a newer version is read as the newest known one, as
Kafka does).

Each assignor computes what Apache Kafka 3.9's Java assignor of the same name computes for the
same input, including where Java's result depends on the iteration order of a ``HashMap`` keyed
by member id or of a ``HashSet`` of partitions: those orders are reproduced from Java's
``String.hashCode``/``TopicPartition.hashCode`` and ``HashMap``'s bucket layout. Members are
passed in JoinGroup answer order, the order in which Java's leader fills its map. Rack-aware
assignment (KIP-881) is not done: kcli's members send no rack, and members that do are assigned
as if they had none.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable, Mapping
from typing import ClassVar

from kcli.client.fetcher import TopicPartition
from kcli.errors import ErrorCode, KafkaError
from kcli.java_compat import hash_map_capacity, hash_map_order, hash_spread, topic_partition_hash

EAGER = "eager"
COOPERATIVE = "cooperative"
DEFAULT_GENERATION = -1
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


# -- the consumer protocol's formats ---------------------------------------------------------------


@dataclasses.dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = dataclasses.field(default_factory=list)
    generation_id: int = DEFAULT_GENERATION  # -1: not sent (subscription v0-1) or no generation
    rack_id: str | None = None
    group_instance_id: str | None = None  # from the JoinGroup member, not the metadata bytes


@dataclasses.dataclass
class Assignment:
    partitions: list[TopicPartition]
    user_data: bytes | None = None


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i16(self, v: int) -> None:
        self.parts.append(_I16.pack(v))

    def i32(self, v: int) -> None:
        self.parts.append(_I32.pack(v))

    def string(self, s: str | None) -> None:
        if s is None:
            self.i16(-1)
        else:
            b = s.encode()
            self.i16(len(b))
            self.parts.append(b)

    def bytes_(self, b: bytes | None) -> None:
        if b is None:
            self.i32(-1)
        else:
            self.i32(len(b))
            self.parts.append(bytes(b))

    def partitions(self, tps: Iterable[TopicPartition], *, sort: bool) -> None:
        grouped: dict[str, list[int]] = {}
        for tp in (sorted(tps) if sort else tps):
            grouped.setdefault(tp.topic, []).append(tp.partition)
        self.i32(len(grouped))
        for topic, parts in grouped.items():
            self.string(topic)
            self.i32(len(parts))
            for p in parts:
                self.i32(p)

    def value(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _fail(self) -> KafkaError:
        return KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Buffer underflow while parsing consumer protocol's {self.what}")

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def i16(self) -> int:
        if self.pos + 2 > len(self.data):
            raise self._fail()
        v = _I16.unpack_from(self.data, self.pos)[0]
        self.pos += 2
        return v

    def i32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise self._fail()
        v = _I32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return v

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise self._fail()
        s = self.data[self.pos : self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return s

    def bytes_(self) -> bytes | None:
        n = self.i32()
        if n < 0:
            return None
        if self.pos + n > len(self.data):
            raise self._fail()
        b = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return b

    def count(self) -> int:
        n = self.i32()
        if n < 0:
            return 0
        if n > len(self.data) - self.pos:
            raise self._fail()
        return n

    def partitions(self) -> list[TopicPartition]:
        out = []
        for _ in range(self.count()):
            topic = self.string() or ""
            for _ in range(self.count()):
                out.append(TopicPartition(topic, self.i32()))
        return out


def encode_subscription(subscription: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    w = _Writer()
    w.i16(version)
    topics = sorted(subscription.topics)
    w.i32(len(topics))
    for t in topics:
        w.string(t)
    w.bytes_(subscription.user_data)
    if version >= 1:
        w.partitions(subscription.owned_partitions, sort=True)
    if version >= 2:
        w.i32(subscription.generation_id)
    if version >= 3:
        w.string(subscription.rack_id)
    return w.value()


def decode_subscription(data: bytes, group_instance_id: str | None = None) -> Subscription:
    r = _Reader(data, "subscription")
    version = min(r.i16(), SUBSCRIPTION_VERSION)
    if version < 0:
        raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Unsupported subscription version: {version}")
    topics = [r.string() or "" for _ in range(r.count())]
    user_data = r.bytes_()
    owned: list[TopicPartition] = []
    generation = DEFAULT_GENERATION
    rack = None
    # Fields of later versions are ignorable: a short buffer of a higher version is still read.
    if version >= 1 and not r.at_end():
        owned = r.partitions()
    if version >= 2 and not r.at_end():
        generation = r.i32()
    if version >= 3 and not r.at_end():
        rack = r.string() or None
    return Subscription(topics, user_data, owned, generation, rack, group_instance_id)


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    w = _Writer()
    w.i16(version)
    w.partitions(assignment.partitions, sort=True)
    w.bytes_(assignment.user_data)
    return w.value()


def decode_assignment(data: bytes) -> Assignment:
    if not data:
        return Assignment([])
    r = _Reader(data, "assignment")
    version = r.i16()
    if version < 0:
        raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Unsupported assignment version: {version}")
    partitions = r.partitions()
    user_data = r.bytes_() if not r.at_end() else None
    return Assignment(partitions, user_data)


# -- Java's hash orders ----------------------------------------------------------------------------


class _JavaHashSet:
    """A ``HashSet<TopicPartition>`` that answers ``iterator().next()`` as Java's does."""

    def __init__(self) -> None:
        self._seq: dict[TopicPartition, int] = {}
        self._next = 0
        self._capacity = 16

    def add(self, tp: TopicPartition) -> None:
        if tp not in self._seq:
            self._seq[tp] = self._next
            self._next += 1
            self._capacity = max(self._capacity, hash_map_capacity(len(self._seq)))

    def remove(self, tp: TopicPartition) -> None:
        self._seq.pop(tp, None)

    def __len__(self) -> int:
        return len(self._seq)

    def first(self) -> TopicPartition:
        cap = self._capacity
        return min(self._seq, key=lambda tp: (hash_spread(topic_partition_hash(*tp)) & (cap - 1), self._seq[tp]))


def _member_key(member_id: str, subscription: Subscription) -> tuple[int, str]:
    """Java's MemberInfo order: members with a group instance id first, by it; then by member id."""
    if subscription.group_instance_id:
        return (0, subscription.group_instance_id)
    return (1, member_id)


# -- assignors -------------------------------------------------------------------------------------


class Assignor:
    name: ClassVar[str]
    protocols: ClassVar[tuple[str, ...]] = (EAGER,)

    def subscription_user_data(self, topics: list[str]) -> bytes | None:
        return None

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        return None

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        raise NotImplementedError

    def group_assignment(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> dict[str, Assignment]:
        """What the leader sends each member: topics without metadata (or partitions) are left out."""
        subscribed = {t for s in subscriptions.values() for t in s.topics}
        known = {t: n for t, n in partitions_per_topic.items() if t in subscribed and n > 0}
        raw = self.assign(known, subscriptions)
        return {member: Assignment(raw.get(member, [])) for member in subscriptions}


class RangeAssignor(Assignor):
    """Per topic, consecutive ranges of partitions to the members subscribed to it, in member order."""

    name = "range"

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        for topic, count in partitions_per_topic.items():
            if count <= 0:
                continue
            members = sorted((m for m, s in subscriptions.items() if topic in s.topics), key=lambda m: _member_key(m, subscriptions[m]))
            if not members:
                continue
            per_member, extra = divmod(count, len(members))
            start = 0
            for i, member in enumerate(members):
                n = per_member + (1 if i < extra else 0)
                assignment[member].extend(TopicPartition(topic, p) for p in range(start, start + n))
                start += n
        return assignment


class RoundRobinAssignor(Assignor):
    """Every subscribed partition, topics in name order, dealt to members in order, skipping
    members not subscribed to the partition's topic."""

    name = "roundrobin"

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        members = sorted(subscriptions, key=lambda m: _member_key(m, subscriptions[m]))
        if not members:
            return assignment
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        index = 0
        for topic in topics:
            count = partitions_per_topic.get(topic)
            if count is None:
                continue
            for p in range(count):
                while topic not in subscriptions[members[index % len(members)]].topics:
                    index += 1
                assignment[members[index % len(members)]].append(TopicPartition(topic, p))
                index += 1
        return assignment


class CooperativeStickyAssignor(Assignor):
    """Kafka's CooperativeStickyAssignor: balanced, keeps owned partitions where it can, and holds
    back a partition that moves between members until its previous owner has revoked it."""

    name = "cooperative-sticky"
    protocols = (COOPERATIVE, EAGER)

    def __init__(self) -> None:
        self.generation = DEFAULT_GENERATION

    def subscription_user_data(self, topics: list[str]) -> bytes | None:
        return _I32.pack(self.generation)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self.generation = generation

    def assign(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
        builder = _StickyAssignment(dict(partitions_per_topic), subscriptions)
        assignment = builder.build()
        transferring = builder.transferring
        if transferring is None:
            transferring = _transferring_ownership(subscriptions, assignment)
        for tp, member in transferring.items():
            if tp in assignment[member]:
                assignment[member].remove(tp)
        return assignment


def _member_generation(subscription: Subscription) -> int | None:
    """MemberData.generation of CooperativeStickyAssignor: the field (v2+), else the user data."""
    if subscription.generation_id >= 0:
        return subscription.generation_id
    data = subscription.user_data
    if data is None:
        return None
    if len(data) >= 4:
        return _I32.unpack_from(data, 0)[0]
    return DEFAULT_GENERATION


def _transferring_ownership(subscriptions: Mapping[str, Subscription], assignment: Mapping[str, list[TopicPartition]]) -> dict[TopicPartition, str]:
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member, assigned in assignment.items():
        owned = subscriptions[member].owned_partitions
        owned_set = set(owned)
        for tp in assigned:
            if tp not in owned_set:
                added[tp] = member
        assigned_set = set(assigned)
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: m for tp, m in added.items() if tp in revoked}


class _StickyAssignment:
    """AbstractStickyAssignor.assignPartitions: the constrained builder when every member
    subscribes to the same topics, else the general one (both without racks)."""

    def __init__(self, partitions_per_topic: dict[str, int], subscriptions: Mapping[str, Subscription]) -> None:
        self.partitions_per_topic = partitions_per_topic
        self.subscriptions = subscriptions
        self.order = hash_map_order(subscriptions)  # how Java iterates its subscriptions map
        self.max_generation = DEFAULT_GENERATION
        self.owned: dict[str, list[TopicPartition]] = {}
        self.multiply_owned: set[TopicPartition] = set()
        self.transferring: dict[TopicPartition, str] | None = {}

    def build(self) -> dict[str, list[TopicPartition]]:
        if self._all_subscriptions_equal():
            self.transferring = {}
            return _Constrained(self).build()
        self.transferring = None
        return _General(self).build()

    def _all_subscriptions_equal(self) -> bool:
        equal = True
        first: set[str] | None = None
        previous_owner: dict[TopicPartition, str] = {}
        all_topics = self.partitions_per_topic
        for member in self.order:
            subscription = self.subscriptions[member]
            topics = set(subscription.topics)
            if not first:
                first = set(topics)
            elif equal and topics != first:
                equal = False
            generation = _member_generation(subscription)
            member_generation = DEFAULT_GENERATION if generation is None else generation
            self.max_generation = max(self.max_generation, member_generation)
            owned: list[TopicPartition] = []
            self.owned[member] = owned
            for tp in subscription.owned_partitions:
                if tp.topic not in all_topics:
                    continue
                other = previous_owner.get(tp)
                if other is None:
                    owned.append(tp)
                    previous_owner[tp] = member
                    continue
                other_generation = self.subscriptions[other].generation_id
                if other_generation < 0:
                    other_generation = DEFAULT_GENERATION
                if member_generation == other_generation:
                    self.multiply_owned.add(tp)
                    if tp in self.owned[other]:
                        self.owned[other].remove(tp)
                    previous_owner[tp] = member
                elif member_generation > other_generation:
                    owned.append(tp)
                    if tp in self.owned[other]:
                        self.owned[other].remove(tp)
                    previous_owner[tp] = member
        return equal

    def all_partitions(self, topics: list[str]) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t in topics for p in range(self.partitions_per_topic[t])]


class _Constrained:
    def __init__(self, sticky: _StickyAssignment) -> None:
        self.sticky = sticky
        self.current = sticky.owned
        total = sum(sticky.partitions_per_topic.values())
        members = len(self.current)
        self.total = total
        self.min_quota = total // members
        self.max_quota = -(-total // members)
        self.expected_over_min = total % members
        self.current_over_min = 0
        self.assignment: dict[str, list[TopicPartition]] = {m: [] for m in self.current}
        self.assigned: list[TopicPartition] = []
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under_min: list[str] = []
        self.exactly_min: list[str] = []

    def build(self) -> dict[str, list[TopicPartition]]:
        self._assign_owned()
        unassigned = self._unassigned()
        self.under_min.sort()
        self.exactly_min.sort()
        self._assign_round_robin(unassigned)
        self._verify()
        return self.assignment

    def _assign_owned(self) -> None:
        for member in self.sticky.order:  # consumerToOwnedPartitions, a HashMap: same order
            owned = sorted(self.current[member], key=lambda tp: (tp.partition, tp.topic))
            owned = [tp for tp in owned if tp not in self.sticky.multiply_owned]
            target = self.assignment[member]
            if len(owned) < self.min_quota:
                target.extend(owned)
                self.assigned.extend(owned)
                self.under_min.append(member)
            elif len(owned) >= self.max_quota and self.current_over_min < self.expected_over_min:
                self.current_over_min += 1
                if self.current_over_min == self.expected_over_min:
                    self.exactly_min.clear()
                target.extend(owned[: self.max_quota])
                self.assigned.extend(owned[: self.max_quota])
                for tp in owned[self.max_quota :]:
                    self.maybe_revoked[tp] = member
            else:
                target.extend(owned[: self.min_quota])
                self.assigned.extend(owned[: self.min_quota])
                for tp in owned[self.min_quota :]:
                    self.maybe_revoked[tp] = member
                if self.current_over_min < self.expected_over_min:
                    self.exactly_min.append(member)

    def _unassigned(self) -> list[TopicPartition]:
        assigned = set(self.assigned)
        return [tp for tp in self.sticky.all_partitions(sorted(self.sticky.partitions_per_topic)) if tp not in assigned]

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        under = self.under_min
        index = 0  # Java's iterator over ``under``: the next element's position
        for i, tp in enumerate(unassigned):
            if index < len(under):
                member = under[index]
                index += 1
            elif not under and not self.exactly_min:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "No more unfilled consumers to be assigned.")
            elif not under:
                member = self.exactly_min.pop(0)
            else:
                index = 0
                member = under[index]
                index += 1
            count = self._assign_new(tp, member)
            if count == self.min_quota:
                # The iterator removes the member it returned last.
                if index - 1 < len(under) and under[index - 1] == member:
                    under.pop(index - 1)
                    index -= 1
                self.exactly_min.append(member)
            elif count == self.max_quota:
                self.current_over_min += 1

    def _assign_new(self, tp: TopicPartition, member: str) -> int:
        target = self.assignment[member]
        target.append(tp)
        previous = self.maybe_revoked.get(tp)
        if (previous is not None and previous != member) or tp in self.sticky.multiply_owned:
            assert self.sticky.transferring is not None
            self.sticky.transferring[tp] = member
        return len(target)

    def _verify(self) -> None:
        if self.under_min and self.current_over_min != self.expected_over_min:
            raise KafkaError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                "We haven't reached the expected number of members with more than the minQuota partitions, but no more partitions to be assigned",
            )


class _PartitionMovements:
    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], _JavaHashSet]] = {}
        self.movements: dict[TopicPartition, tuple[str, str]] = {}

    def _remove(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.movements.pop(tp)
        per_topic = self.by_topic[tp.topic]
        per_topic[pair].remove(tp)
        if not len(per_topic[pair]):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[tp.topic]
        return pair

    def _add(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.movements[tp] = pair
        self.by_topic.setdefault(tp.topic, {}).setdefault(pair, _JavaHashSet()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.movements:
            src, _dst = self._remove(tp)
            if src != new:
                self._add(tp, (src, new))
        else:
            self._add(tp, (old, new))

    def actual_partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        per_topic = self.by_topic.get(tp.topic)
        if per_topic is None:
            return tp
        if tp in self.movements:
            old = self.movements[tp][0]
        moved_back = per_topic.get((new, old))
        if moved_back is None:
            return tp
        return moved_back.first()


class _General:
    def __init__(self, sticky: _StickyAssignment) -> None:
        self.sticky = sticky
        self.subscriptions = sticky.subscriptions
        self.per_topic = sticky.partitions_per_topic
        self.total = sum(self.per_topic.values())
        self.current = sticky.owned  # member -> partitions
        self.topic_members: dict[str, list[str]] = {t: [] for t in self.per_topic}
        self.member_topics: dict[str, list[str]] = {}
        for member in sticky.order:
            subscription = self.subscriptions[member]
            topics = [t for t in subscription.topics if t in self.per_topic]
            self.member_topics[member] = topics
            for t in topics:
                self.topic_members[t].append(member)
            self.current.setdefault(member, [])
        self.partition_member: dict[TopicPartition, str] = {tp: m for m, tps in self.current.items() for tp in tps}
        topics = sorted(self.topic_members, key=lambda t: (len(self.topic_members[t]), t))
        self.sorted_all = sticky.all_partitions(topics)
        self.in_tree: set[str] = set()
        self.revocation_required = False
        self.movements = _PartitionMovements()

    def _sorted_members(self) -> list[str]:
        return sorted(self.in_tree, key=lambda m: (len(self.current[m]), m))

    def build(self) -> dict[str, list[TopicPartition]]:
        previous = self._previous_assignment()
        assigned = self._assign_owned()
        unassigned = self._unassigned(assigned)
        self.in_tree.update(self.current)
        self._balance(previous, unassigned)
        return self.current

    def _previous_assignment(self) -> dict[TopicPartition, tuple[str, int]]:
        previous: dict[TopicPartition, tuple[str, int]] = {}
        max_generation = self.sticky.max_generation
        for member in self.sticky.order:
            subscription = self.subscriptions[member]
            generation = _member_generation(subscription)
            if generation is not None and generation < max_generation:
                gen = generation
            elif generation is None and max_generation > DEFAULT_GENERATION:
                gen = DEFAULT_GENERATION
            else:
                continue
            for tp in subscription.owned_partitions:
                if tp not in previous or gen > previous[tp][1]:
                    previous[tp] = (member, gen)
        return previous

    def _assign_owned(self) -> list[TopicPartition]:
        assigned = []
        for member in list(self.current):
            subscription = self.subscriptions.get(member)
            if subscription is None:
                for tp in self.current[member]:
                    self.partition_member.pop(tp, None)
                del self.current[member]
                continue
            keep = []
            for tp in self.current[member]:
                if tp.topic not in self.topic_members:
                    self.partition_member.pop(tp, None)
                elif tp.topic not in subscription.topics:
                    self.revocation_required = True
                else:
                    keep.append(tp)
                    assigned.append(tp)
            self.current[member] = keep
        return assigned

    def _unassigned(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        if not assigned:
            return self.sorted_all
        taken = set(assigned)
        return [tp for tp in self.sorted_all if tp not in taken]

    def _max_assignment_size(self, topics: list[str]) -> int:
        if len(topics) == len(self.per_topic):
            return self.total
        return sum(self.per_topic[t] for t in topics)

    def _is_balanced(self) -> bool:
        ordered = self._sorted_members()
        if len(self.current[ordered[0]]) >= len(self.current[ordered[-1]]) - 1:
            return True
        owner = {tp: m for m, tps in self.current.items() for tp in tps}
        for member in ordered:
            count = len(self.current[member])
            topics = self.member_topics[member]
            if count == self._max_assignment_size(topics):
                continue
            mine = set(self.current[member])
            for topic in topics:
                for p in range(self.per_topic[topic]):
                    tp = TopicPartition(topic, p)
                    if tp not in mine:
                        other = owner.get(tp)
                        if other is not None and count + 1 < len(self.current[other]):
                            return False
        return True

    def _balance_score(self, assignment: Mapping[str, list[TopicPartition]]) -> int:
        sizes = [len(v) for v in assignment.values()]
        return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])

    def _maybe_assign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            if not self.topic_members[tp.topic]:
                continue
            for member in self._sorted_members():
                if tp.topic in self.member_topics[member]:
                    self.current[member].append(tp)
                    self.partition_member[tp] = member
                    break

    def _balance(self, previous: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]) -> None:
        ordered = self._sorted_members()
        initializing = not self.current[ordered[-1]]
        self._maybe_assign(unassigned)
        fixed_partitions = {TopicPartition(t, p) for t, members in self.topic_members.items() if len(members) < 2 for p in range(self.per_topic[t])}
        same_list = unassigned is self.sorted_all
        self.sorted_all = [tp for tp in self.sorted_all if tp not in fixed_partitions]
        unassigned = self.sorted_all if same_list else [tp for tp in unassigned if tp not in fixed_partitions]
        fixed_assignments: dict[str, list[TopicPartition]] = {}
        for member in list(self.member_topics):
            if not self._can_member_participate(member):
                self.in_tree.discard(member)
                fixed_assignments[member] = self.current.pop(member)
        pre_balance = {m: list(tps) for m, tps in self.current.items()}
        pre_balance_owners = dict(self.partition_member)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, previous)
        performed = self._perform_reassignments(self.sorted_all, previous)
        if not initializing and performed and self._balance_score(self.current) >= self._balance_score(pre_balance):
            self.current.clear()
            self.current.update({m: list(tps) for m, tps in pre_balance.items()})
            self.partition_member = pre_balance_owners
        for member, tps in fixed_assignments.items():
            self.current[member] = tps
            self.in_tree.add(member)

    def _can_member_participate(self, member: str) -> bool:
        size = len(self.current[member])
        if size < self._max_assignment_size(self.member_topics[member]):
            return True
        return any(len(self.topic_members[tp.topic]) >= 2 for tp in self.current[member])

    def _perform_reassignments(self, partitions: list[TopicPartition], previous: dict[TopicPartition, tuple[str, int]]) -> bool:
        performed = False
        while True:
            modified = False
            for tp in list(partitions):
                if self._is_balanced():
                    break
                member = self.partition_member.get(tp)
                if member is None or member not in self.current:
                    continue
                prev = previous.get(tp)
                if prev is not None and prev[0] in self.current and len(self.current[member]) > len(self.current[prev[0]]) + 1:
                    self._reassign(tp, prev[0])
                    performed = modified = True
                    continue
                for other in self.topic_members[tp.topic]:
                    if other in self.current and len(self.current[member]) > len(self.current[other]) + 1:
                        self._reassign_to_least_loaded(tp)
                        performed = modified = True
                        break
            if not modified:
                return performed

    def _reassign_to_least_loaded(self, tp: TopicPartition) -> None:
        for member in self._sorted_members():
            if tp.topic in self.member_topics[member]:
                self._reassign(tp, member)
                return

    def _reassign(self, tp: TopicPartition, new: str) -> None:
        old = self.partition_member[tp]
        moving = self.movements.actual_partition_to_move(tp, old, new)
        owner = self.partition_member[moving]
        self.movements.move(moving, owner, new)
        self.current[owner].remove(moving)
        self.current[new].append(moving)
        self.partition_member[moving] = new


ASSIGNORS: dict[str, type[Assignor]] = {a.name: a for a in (RangeAssignor, RoundRobinAssignor, CooperativeStickyAssignor)}

# The Java class names a consumer config may give for partition.assignment.strategy.
ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def assignors_by_name() -> dict[str, type[Assignor]]:
    return ASSIGNORS


def common_protocol(assignors: Iterable[Assignor]) -> str:
    """EAGER unless every configured assignor supports COOPERATIVE (Java's rule)."""
    assignors = list(assignors)
    return COOPERATIVE if assignors and all(COOPERATIVE in a.protocols for a in assignors) else EAGER
