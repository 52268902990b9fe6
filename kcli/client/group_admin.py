"""Consumer groups as an operator sees them: list, describe, delete, and their offsets.

``GroupAdmin`` wraps a ``NetworkClient`` with the calls kafka-consumer-groups.sh makes through Kafka's
Admin client:

- ``list_groups``: ListGroups at every broker (each coordinates its own groups), keeping consumer
  groups (protocol type ``consumer`` or empty) as Kafka's Admin does; state and type filters are
  sent when the broker's version carries them (v4 states, v5 types).
- ``describe_groups``: DescribeGroups at each group's coordinator; each member's subscription and
  assignment bytes are decoded with the consumer protocol's schemas (ConsumerProtocolSubscription
  and ConsumerProtocolAssignment v0-v3; a newer version is read with v3's layout, as Kafka does).
- ``delete_groups``, ``fetch_offsets`` (OffsetFetch), ``commit_offsets`` (OffsetCommit as
  Admin.alterConsumerGroupOffsets sends it: generation -1, empty member id), ``delete_offsets``
  (OffsetDelete) and ``list_offsets`` (ListOffsets at each partition's leader).

Group-level retriable errors (coordinator loading, moved or unavailable) are retried with the
cluster's backoff, finding the coordinator again when it moved; other errors are returned per
group or partition, or raised as ``KafkaError`` where a whole call failed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from kcli.client.admin import Admin, ListedOffset, TopicPartition
from kcli.client.connection import UnsupportedVersion, error_code
from kcli.client.metadata import Node
from kcli.client.network_client import NetworkClient
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol import messages

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42
OFFSET_DELETE = 47

CONSUMER_PROTOCOL_TYPE = "consumer"
LIST_GROUPS_MAX_VERSION = 5  # v5 carries the types filter and each group's type
MAX_IN_FLIGHT_GROUPS = 32
T = TypeVar("T")

# Errors after which the group's coordinator is looked up again.
COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})



@dataclasses.dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int | None = None
    metadata: str = ""


@dataclasses.dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None  # None when the broker's ListGroups version carries no state
    group_type: str | None  # None before ListGroups v5


@dataclasses.dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclasses.dataclass(frozen=True)
class Assignment:
    version: int
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


@dataclasses.dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    subscription: Subscription | None
    assignment: Assignment | None

    @property
    def partitions(self) -> tuple[TopicPartition, ...]:
        return self.assignment.partitions if self.assignment is not None else ()


@dataclasses.dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str  # the assignor a consumer group chose (DescribeGroups' protocol data)
    members: tuple[MemberDescription, ...]
    coordinator: Node

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type in (CONSUMER_PROTOCOL_TYPE, "")



# -- the consumer protocol ---------------------------------------------------------------------------


def decode_subscription(data: bytes) -> Subscription | None:
    """A member's consumer-protocol subscription; None when the bytes are empty or unreadable."""
    from kcli.protocol.coordinator_records import decode_consumer_protocol_subscription

    if not data:
        return None
    try:
        version, fields = decode_consumer_protocol_subscription(data)
    except KcliError:
        return None
    if version < 0:
        return None
    owned = tuple(TopicPartition(t["Topic"], p) for t in fields.get("OwnedPartitions") or () for p in t["Partitions"] or ())
    return Subscription(
        version=version,
        topics=tuple(fields["Topics"] or ()),
        user_data=_bytes(fields.get("UserData")),
        owned_partitions=owned,
        generation_id=fields.get("GenerationId", -1),
        rack_id=fields.get("RackId"),
    )


def decode_assignment(data: bytes) -> Assignment | None:
    """A member's consumer-protocol assignment; None when the bytes are empty or unreadable."""
    from kcli.protocol.coordinator_records import decode_consumer_protocol_assignment

    if not data:
        return None
    try:
        version, fields = decode_consumer_protocol_assignment(data)
    except KcliError:
        return None
    if version < 0:
        return None
    partitions = tuple(TopicPartition(t["Topic"], p) for t in fields["AssignedPartitions"] or () for p in t["Partitions"] or ())
    return Assignment(version=version, partitions=partitions, user_data=_bytes(fields.get("UserData")))


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


# -- the admin ------------------------------------------------------------------------------------------


class GroupAdmin:
    """Group calls over one ``NetworkClient``. Each call is bounded by ``timeout`` seconds when given."""

    def __init__(self, cluster: NetworkClient, *, timeout: float | None = None) -> None:
        self.cluster = cluster
        self.timeout = timeout

    async def _bounded(self, what: str, work: Awaitable[T]) -> T:
        if self.timeout is None:
            return await work
        try:
            return await asyncio.wait_for(work, self.timeout)
        except asyncio.TimeoutError:
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"{what} timed out after {self.timeout * 1000:.0f} ms") from None

    async def _at_coordinator(self, group: str, attempt: Callable[[int], Awaitable[T]]) -> T:
        """Run ``attempt(coordinator node id)``, retrying retriable errors at a fresh coordinator."""

        async def once() -> T:
            node = await self.cluster.coordinator(group)
            try:
                return await attempt(node)
            except KafkaError as exc:
                if exc.error_code in COORDINATOR_MOVED:
                    self.cluster.forget_coordinator(group)
                raise

        return await self.cluster.retrying(once)

    async def _each_group(self, groups: Iterable[str], work: Callable[[str], Awaitable[T]]) -> dict[str, T | KafkaError]:
        """``work(group)`` for every group, a few at a time; a group's KafkaError is its result."""
        limit = asyncio.Semaphore(MAX_IN_FLIGHT_GROUPS)

        async def one(group: str) -> T | KafkaError:
            async with limit:
                try:
                    return await work(group)
                except KafkaError as exc:
                    return exc

        ordered = list(dict.fromkeys(groups))
        answers = await asyncio.gather(*(one(g) for g in ordered))
        return dict(zip(ordered, answers))

    # -- listing -----------------------------------------------------------------------------------

    async def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[GroupListing]:
        """Consumer groups of every broker, in the order the brokers answer them."""
        return await self._bounded("ListGroups", self._list_groups(list(states), list(types)))

    async def _list_groups(self, states: list[str], types: list[str]) -> list[GroupListing]:
        await self.cluster.refresh([])
        nodes = sorted(self.cluster.metadata.brokers)
        if not nodes:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, "the cluster's metadata names no broker")
        answers = await asyncio.gather(*(self.cluster.retrying(lambda n=n: self._list_at(n, states, types)) for n in nodes))
        return [listing for answer in answers for listing in answer]

    async def _list_at(self, node_id: int, states: list[str], types: list[str]) -> list[GroupListing]:
        connection = await self.cluster.connection(node_id)
        theirs = connection.versions.get(LIST_GROUPS)
        if theirs is None:
            raise UnsupportedVersion(f"broker {connection.address} does not support ListGroups")
        version = min(LIST_GROUPS_MAX_VERSION, theirs[1])
        while version > theirs[0] and not messages.has_version(LIST_GROUPS, version):
            version -= 1
        if states and version < 4:
            raise UnsupportedVersion(f"The broker only supports ListGroups v{version}, but we need v4 or newer to request groups by states.")
        if types and version < 5:
            raise UnsupportedVersion(f"The broker only supports ListGroups v{version}, but we need v5 or newer to request groups by type.")
        answer = await connection.send(
            LIST_GROUPS, version, {"states_filter": states, "types_filter": types}, timeout=self.cluster.request_timeout
        )
        code = error_code(answer.error_code)
        if code:
            error = ErrorCode.for_code(code)
            raise KafkaError(error, f"ListGroups at {connection.address}: {error.message}")
        listings = []
        for group in answer.groups:
            protocol_type = group.protocol_type
            if protocol_type not in (CONSUMER_PROTOCOL_TYPE, ""):
                continue
            state = getattr(group, "group_state", "") or None
            group_type = getattr(group, "group_type", "") or None
            listings.append(GroupListing(group.group_id, protocol_type, state, group_type))
        return listings

    # -- describing ----------------------------------------------------------------------------------

    async def describe_groups(self, groups: Iterable[str]) -> dict[str, GroupDescription | KafkaError]:
        """Each group's description, or the KafkaError describing it failed with."""
        return await self._bounded("DescribeGroups", self._each_group(groups, self._describe_one))

    async def _describe_one(self, group: str) -> GroupDescription:
        async def attempt(node_id: int) -> GroupDescription:
            answer = await self.cluster.call(node_id, DESCRIBE_GROUPS, {"groups": [group], "include_authorized_operations": False})
            described = next((g for g in answer.groups if g.group_id == group), None)
            if described is None:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"DescribeGroups did not answer for group '{group}'")
            code = error_code(described.error_code)
            if code == ErrorCode.GROUP_ID_NOT_FOUND:
                # DescribeGroups v6 answers a missing group this way; older versions say Dead.
                return GroupDescription(group, "Dead", "", "", (), self._node(node_id))
            _raise_group_error(code, f"DescribeGroups for group '{group}'")
            members = tuple(
                MemberDescription(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    host=m.client_host,
                    subscription=decode_subscription(bytes(m.member_metadata)) if described.protocol_type == CONSUMER_PROTOCOL_TYPE else None,
                    assignment=decode_assignment(bytes(m.member_assignment)) if described.protocol_type == CONSUMER_PROTOCOL_TYPE else None,
                )
                for m in described.members
            )
            return GroupDescription(group, described.group_state, described.protocol_type, described.protocol_data, members, self._node(node_id))

        return await self._at_coordinator(group, attempt)

    def _node(self, node_id: int) -> Node:
        return self.cluster.metadata.brokers.get(node_id) or Node(node_id, "", -1)

    # -- deleting groups ---------------------------------------------------------------------------

    async def delete_groups(self, groups: Iterable[str]) -> dict[str, KafkaError | None]:
        """None for each deleted group, else the KafkaError its deletion failed with."""
        results = await self._bounded("DeleteGroups", self._each_group(groups, self._delete_one))
        return {g: (r if isinstance(r, KafkaError) else None) for g, r in results.items()}

    async def _delete_one(self, group: str) -> None:
        async def attempt(node_id: int) -> None:
            answer = await self.cluster.call(node_id, DELETE_GROUPS, {"groups_names": [group]})
            result = next((r for r in answer.results if r.group_id == group), None)
            if result is None:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"DeleteGroups did not answer for group '{group}'")
            _raise_group_error(error_code(result.error_code), f"DeleteGroups for group '{group}'")

        await self._at_coordinator(group, attempt)

    # -- committed offsets ---------------------------------------------------------------------------

    async def fetch_offsets(self, group: str, partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets: of every partition it has one for (``partitions`` None),
        or of the given partitions that have one."""
        wanted = None if partitions is None else sorted(set(partitions))
        return await self._bounded("OffsetFetch", self._at_coordinator(group, lambda node: self._fetch_at(node, group, wanted)))

    async def fetch_offsets_of(self, groups: Iterable[str]) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Every committed offset of each group, asked concurrently; a failure raises."""
        ordered = list(dict.fromkeys(groups))
        answers = await asyncio.gather(*(self.fetch_offsets(g) for g in ordered))
        return dict(zip(ordered, answers))

    async def _fetch_at(self, node_id: int, group: str, wanted: list[TopicPartition] | None) -> dict[TopicPartition, OffsetAndMetadata]:
        topics = None if wanted is None else [{"name": t, "partition_indexes": ps} for t, ps in _by_topic(wanted).items()]
        answer = await self.cluster.call(node_id, OFFSET_FETCH, {"group_id": group, "topics": topics, "require_stable": False})
        _raise_group_error(error_code(getattr(answer, "error_code", 0)), f"OffsetFetch for group '{group}'")
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for topic in answer.topics or ():  # some brokers answer an all-partitions fetch with null
            for p in topic.partitions:
                code = error_code(p.error_code)
                if code in COORDINATOR_MOVED or code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                    _raise_group_error(code, f"OffsetFetch for group '{group}'")  # v1 puts group errors here
                if code == ErrorCode.UNSTABLE_OFFSET_COMMIT:
                    raise KafkaError(ErrorCode.UNSTABLE_OFFSET_COMMIT, f"OffsetFetch for group '{group}': {ErrorCode.UNSTABLE_OFFSET_COMMIT.message}")
                if code or p.committed_offset < 0:
                    continue
                epoch = int(getattr(p, "committed_leader_epoch", -1))
                offsets[TopicPartition(topic.name, int(p.partition_index))] = OffsetAndMetadata(
                    int(p.committed_offset), epoch if epoch >= 0 else None, p.metadata or ""
                )
        return offsets

    async def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]) -> dict[TopicPartition, int]:
        """Commit ``offsets`` for the group as an admin (no membership); each partition's error code."""
        normalized = {tp: v if isinstance(v, OffsetAndMetadata) else OffsetAndMetadata(int(v)) for tp, v in offsets.items()}
        if not normalized:
            return {}
        return await self._bounded("OffsetCommit", self._at_coordinator(group, lambda node: self._commit_at(node, group, normalized)))

    async def _commit_at(self, node_id: int, group: str, offsets: dict[TopicPartition, OffsetAndMetadata]) -> dict[TopicPartition, int]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp in sorted(offsets):
            value = offsets[tp]
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition,
                "committed_offset": value.offset,
                "committed_leader_epoch": -1 if value.leader_epoch is None else value.leader_epoch,
                "committed_metadata": value.metadata,
            })
        answer = await self.cluster.call(node_id, OFFSET_COMMIT, {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        })
        results = {TopicPartition(t.name, int(p.partition_index)): error_code(p.error_code) for t in answer.topics for p in t.partitions}
        codes = set(results.values())
        if len(codes) == 1:
            code = codes.pop()
            if code in COORDINATOR_MOVED or code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS):
                raise KafkaError(ErrorCode.for_code(code), f"OffsetCommit for group '{group}': {ErrorCode.for_code(code).message}")
        return results

    async def delete_offsets(self, group: str, partitions: Iterable[TopicPartition]) -> tuple[int, dict[TopicPartition, int]]:
        """Delete the group's committed offsets of ``partitions``: (group error code, per partition code)."""
        wanted = sorted(set(partitions))
        return await self._bounded("OffsetDelete", self._at_coordinator(group, lambda node: self._delete_offsets_at(node, group, wanted)))

    async def _delete_offsets_at(self, node_id: int, group: str, wanted: list[TopicPartition]) -> tuple[int, dict[TopicPartition, int]]:
        topics = [{"name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in _by_topic(wanted).items()]
        answer = await self.cluster.call(node_id, OFFSET_DELETE, {"group_id": group, "topics": topics})
        code = error_code(answer.error_code)
        if code in COORDINATOR_MOVED or code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            _raise_group_error(code, f"OffsetDelete for group '{group}'")
        results = {TopicPartition(t.name, int(p.partition_index)): error_code(p.error_code) for t in answer.topics for p in t.partitions}
        return code, results

    # -- log offsets ---------------------------------------------------------------------------------

    async def list_offsets(self, partitions: Iterable[TopicPartition], timestamp: int) -> dict[TopicPartition, ListedOffset | KafkaError]:
        """Each partition's offset for ``timestamp`` (LATEST, EARLIEST or a time in ms), asked of
        its leader; a partition that fails carries its KafkaError. A time no record reaches gives
        offset -1, as the broker answers it."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        return await self._bounded("ListOffsets", self._list_offsets(wanted, timestamp))

    async def _list_offsets(self, wanted: list[TopicPartition], timestamp: int) -> dict[TopicPartition, ListedOffset | KafkaError]:
        listed = await Admin(self.cluster).list_offsets({tp: timestamp for tp in wanted})
        return {tp: r if r.error is None else r.error for tp, r in listed.items()}


def _raise_group_error(code: int, what: str) -> None:
    if code:
        error = ErrorCode.for_code(code)
        raise KafkaError(error, f"{what}: {error.message}")


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped
