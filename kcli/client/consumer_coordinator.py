"""The classic group protocol from a member's side: join, sync, heartbeat, commit, leave.

``ConsumerCoordinator`` finds the group's coordinator (FindCoordinator), joins (JoinGroup, with the
MEMBER_ID_REQUIRED round trip of KIP-394; the protocol metadata of each assignor is a
``ConsumerProtocolSubscription``), and when elected leader runs the assignor the group chose over
every member's subscription and sends the assignments with SyncGroup. After a successful sync a
background task heartbeats every ``heartbeat_interval_ms``; an answer of REBALANCE_IN_PROGRESS
asks for a rejoin, UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION mean the member lost its partitions
(its generation, and for UNKNOWN_MEMBER_ID its member id, are reset), FENCED_INSTANCE_ID is fatal
(another member took this static member's ``group.instance.id``). A member that does not poll for
``max_poll_interval_ms`` leaves the group, as Java's consumer does.

The rebalance protocol is COOPERATIVE when every configured assignor supports it
(cooperative-sticky), else EAGER; the consumer revokes accordingly (see ``consumer.py``).
Commits carry the generation and member id while the member is in the group, and -1 / "" for a
consumer that uses ``assign`` with a group id. Static members (``group.instance.id``) do not send
LeaveGroup when they close, as in Kafka: their partitions wait for them until the session expires.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from kcli.client.assignors import Assignor, Subscription, common_protocol, COOPERATIVE, decode_assignment, decode_subscription, encode_assignment, encode_subscription
from kcli.client.connection import BrokerConnection, error_code
from kcli.client.fetcher import TopicPartition
from kcli.client.network_client import NetworkClient
from kcli.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
PROTOCOL_TYPE = "consumer"
RETRY_BACKOFF = 0.1

_COORDINATOR_ERRORS = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.NETWORK_EXCEPTION, ErrorCode.REQUEST_TIMED_OUT})
_RETRY_ERRORS = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNSTABLE_OFFSET_COMMIT})
_FATAL_JOIN_ERRORS = frozenset(
    {
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ErrorCode.INVALID_SESSION_TIMEOUT, ErrorCode.INVALID_GROUP_ID,
        ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.UNSUPPORTED_VERSION,
    }
)


class ConsumerGroupMetadata:
    """A consumer's group membership as TxnOffsetCommit carries it (Java's ConsumerGroupMetadata)."""

    __slots__ = ("group_id", "generation_id", "member_id", "group_instance_id")

    def __init__(self, group_id: str, generation_id: int = -1, member_id: str = "", group_instance_id: str | None = None) -> None:
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id

    def __repr__(self) -> str:
        return (f"GroupMetadata(groupId = {self.group_id}, generationId = {self.generation_id}, "
                f"memberId = {self.member_id}, groupInstanceId = {self.group_instance_id or ''})")


class CommitFailedError(KafkaError):
    """A commit the coordinator refused because the group rebalanced (Java's CommitFailedException)."""

    def __init__(self, error: ErrorCode) -> None:
        super().__init__(
            error,
            "Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member. "
            "This means that the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, "
            "which typically implies that the poll loop is spending too much time message processing. You can address this "
            "either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with "
            f"max.poll.records. ({error.name})",
        )


class _Rejoin(Exception):
    """Internal: the join must start over (after the given pause)."""

    def __init__(self, pause: float = 0.0) -> None:
        self.pause = pause


class ConsumerCoordinator:
    def __init__(
        self,
        cluster: NetworkClient,
        group_id: str,
        *,
        group_instance_id: str | None,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: int,
        max_poll_interval_ms: int,
        assignors: list[Assignor],
        metadata_max_age_ms: int = 300000,
        allow_auto_create_topics: bool = True,
    ) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        self.max_poll_interval = max_poll_interval_ms / 1000
        self.assignors = assignors
        self.cooperative = common_protocol(assignors) == COOPERATIVE
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader_id: str | None = None
        self.rejoin_needed = True
        self.lost_partitions = False
        self._fatal: KafkaError | None = None
        self._event = asyncio.Event()
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._heartbeat_token = 0  # a loop runs while it holds the current token
        self._heartbeat_in_flight = False
        self._connection: BrokerConnection | None = None
        self._connection_node = -1
        self._last_poll = time.monotonic()
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.allow_auto_create_topics = allow_auto_create_topics
        self._next_metadata = time.monotonic() + self.metadata_max_age
        self._group_partitions: dict[str, int] = {}  # the leader's view of every subscribed topic
        self._group_topics: set[str] = set()

    @property
    def is_leader(self) -> bool:
        return self.leader_id is not None and self.leader_id == self.member_id

    # -- state ---------------------------------------------------------------------------------------

    def polled(self) -> None:
        self._last_poll = time.monotonic()

    def request_rejoin(self, reason: str) -> None:
        if not self.rejoin_needed:
            log.info("group %s: member %s rejoins: %s", self.group_id, self.member_id, reason)
        self.rejoin_needed = True
        self._event.set()

    def _lose(self, error: ErrorCode, *, reset_member_id: bool) -> None:
        """The coordinator no longer knows this member's generation: partitions are lost."""
        self.generation = -1
        if reset_member_id:
            self.member_id = ""
        self.lost_partitions = True
        self.request_rejoin(error.name)

    def _fail(self, error: KafkaError) -> None:
        self._fatal = error
        self._event.set()

    def check_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def metadata_due(self) -> bool:
        now = time.monotonic()
        if now >= self._next_metadata:
            self._next_metadata = now + self.metadata_max_age
            return True
        return False

    async def check_partition_counts(self) -> None:
        """As leader, rejoin when a subscribed topic's partition count changed (or it appeared)."""
        if not self.is_leader or not self._group_topics:
            return
        counts = await self._partition_counts(self._group_topics)
        self._recheck_soon_if_missing(counts)
        if counts != self._group_partitions:
            self.request_rejoin("cached metadata has changed")

    def _recheck_soon_if_missing(self, counts: Mapping[str, int]) -> None:
        # A subscribed topic without metadata (not created yet, or being created) is looked for
        # again within a second, not only after metadata.max.age.ms.
        if set(self._group_topics) - set(counts):
            self._next_metadata = min(self._next_metadata, time.monotonic() + 1.0)

    async def wait_for_event(self, waiter: Callable[[float], Awaitable[None]], timeout: float) -> None:
        """Wait ``waiter(timeout)`` (data) or until the group needs attention, whichever is first."""
        if self.rejoin_needed or self._fatal is not None:
            return
        self._event.clear()
        data = asyncio.ensure_future(waiter(timeout))
        group = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({data, group}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (data, group):
                if not task.done():
                    task.cancel()
            await asyncio.gather(data, group, return_exceptions=True)

    # -- coordinator calls ---------------------------------------------------------------------------

    async def _coordinator_connection(self) -> BrokerConnection:
        """A connection of the member's own to the coordinator, as Java's consumer keeps one:
        heartbeats and commits must not queue behind long-polling fetches to the same broker."""
        node_id = await self.cluster.coordinator(self.group_id)
        connection = self._connection
        if connection is not None and not connection.closed and self._connection_node == node_id:
            return connection
        await self._close_connection()
        node = self.cluster.metadata.brokers.get(node_id)
        if node is None:
            await self.cluster.refresh()
            node = self.cluster.metadata.brokers.get(node_id)
            if node is None:
                self.cluster.forget_coordinator(self.group_id)
                raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"coordinator {node_id} of group {self.group_id} is not in the metadata")
        self._connection = await self.cluster.open_connection(node.host, node.port)
        self._connection_node = node_id
        return self._connection

    async def _close_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    async def _call(self, api_key: int, fields: Mapping[str, Any], *, timeout: float | None = None) -> Any:
        try:
            connection = await self._coordinator_connection()
            version = _group_api_version(connection, api_key)
            return await connection.send(api_key, version, fields, timeout=self.cluster.request_timeout if timeout is None else timeout)
        except KafkaError as exc:
            if exc.error_code in _COORDINATOR_ERRORS or exc.error_code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,):
                self.cluster.forget_coordinator(self.group_id)
            raise

    def _coordinator_error(self, code: ErrorCode) -> bool:
        if code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
            self.cluster.forget_coordinator(self.group_id)
            return True
        return code in _RETRY_ERRORS

    # -- join and sync -------------------------------------------------------------------------------

    async def join(self, topics: list[str], owned: list[TopicPartition], deadline: float | None = None) -> list[TopicPartition] | None:
        """Join (or rejoin) the group; returns this member's assigned partitions, or None when
        ``deadline`` (a ``time.monotonic()`` instant) passes first, as Java's poll gives up on
        its timer: no retry starts after it, so a poll ends one request timeout after it at most."""
        await self._stop_heartbeat()
        attempts = 0
        while True:
            self.check_fatal()
            if attempts and deadline is not None and time.monotonic() >= deadline:
                return None
            try:
                assigned = await self._join_once(topics, owned)
            except _Rejoin as again:
                attempts += 1
                if again.pause:
                    await asyncio.sleep(again.pause)
                continue
            except KafkaError as exc:
                if exc.error_code in _COORDINATOR_ERRORS or exc.error_code.retriable:
                    attempts += 1
                    await asyncio.sleep(min(RETRY_BACKOFF * attempts, 1.0))
                    continue
                raise
            self.rejoin_needed = False
            self.lost_partitions = False
            self._event.clear()
            self._last_poll = time.monotonic()  # the join ran inside a poll: the poll timer restarts
            self._start_heartbeat()
            return assigned

    def _fenced(self, code: ErrorCode) -> KafkaError:
        return KafkaError(code, f"The group.instance.id {self.group_instance_id} of group {self.group_id} is used by another member (FENCED_INSTANCE_ID)")

    def _check_round_answer(self, code: ErrorCode, api: str) -> None:
        """What JoinGroup and SyncGroup answers share: a lost membership or generation means
        joining again (from scratch for an unknown member), a moved or loading coordinator means
        joining again after a pause, a fenced static member is fatal, anything else fails."""
        if code == ErrorCode.NONE:
            return
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation = -1
            raise _Rejoin()
        if code == ErrorCode.ILLEGAL_GENERATION:
            self.generation = -1
            raise _Rejoin()
        if self._coordinator_error(code):
            raise _Rejoin(RETRY_BACKOFF)
        if code == ErrorCode.FENCED_INSTANCE_ID:
            error = self._fenced(code)
            self._fail(error)
            raise error
        raise KafkaError(code, f"{api} for group {self.group_id} failed: {code.name}: {code.message}")

    def _metadata(self, topics: list[str], owned: list[TopicPartition]) -> list[dict[str, Any]]:
        protocols = []
        for assignor in self.assignors:
            subscription = Subscription(sorted(topics), assignor.subscription_user_data(topics), list(owned), self.generation, None)
            protocols.append({"name": assignor.name, "metadata": encode_subscription(subscription)})
        return protocols

    async def _join_once(self, topics: list[str], owned: list[TopicPartition]) -> list[TopicPartition]:
        request = {
            "group_id": self.group_id,
            "session_timeout": self.session_timeout_ms,
            "rebalance_timeout": self.rebalance_timeout_ms,
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocols": self._metadata(topics, owned),
        }
        timeout = max(self.cluster.request_timeout, self.rebalance_timeout_ms / 1000 + 5.0)
        answer = await self._call(JOIN_GROUP, request, timeout=timeout)
        code = ErrorCode.for_code(error_code(answer.error_code))
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = answer.member_id
            raise _Rejoin()
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            raise _Rejoin(RETRY_BACKOFF)
        self._check_round_answer(code, "JoinGroup")
        self.member_id = answer.member_id
        self.generation = int(answer.generation_id)
        self.protocol = getattr(answer, "protocol_name", None)
        self.leader_id = answer.leader
        assignor = self._assignor(self.protocol)
        assignments: list[dict[str, Any]] = []
        if self.is_leader:
            assignments = await self._lead(assignor, answer.members)
        return await self._sync(assignor, assignments)

    def _assignor(self, name: str | None) -> Assignor:
        if name is None:  # JoinGroup v0-v6 only says the name in SyncGroup's answer; one assignor then
            return self.assignors[0]
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"the group chose assignor {name!r}, which this member did not offer")

    async def _partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        names = sorted(set(topics))
        if not names:
            return {}
        metadata = await self.cluster.refresh(names, allow_auto_create=self.allow_auto_create_topics)
        return {t: len(metadata.topics[t].partitions) for t in names if t in metadata.topics and not metadata.topics[t].error and metadata.topics[t].partitions}

    async def _lead(self, assignor: Assignor, members: Iterable[Any]) -> list[dict[str, Any]]:
        subscriptions: dict[str, Subscription] = {}
        for member in members:
            subscriptions[member.member_id] = decode_subscription(member.metadata, getattr(member, "group_instance_id", None))
        self._group_topics = {t for s in subscriptions.values() for t in s.topics}
        counts = await self._partition_counts(self._group_topics)
        self._group_partitions = counts
        self._recheck_soon_if_missing(counts)
        result = assignor.group_assignment(counts, subscriptions)
        if self.cooperative:
            _check_cooperative(subscriptions, result)
        log.debug("group %s: leader %s assigned %s", self.group_id, self.member_id, result)
        return [{"member_id": member, "assignment": encode_assignment(assignment)} for member, assignment in result.items()]

    async def _sync(self, assignor: Assignor, assignments: list[dict[str, Any]]) -> list[TopicPartition]:
        request = {
            "group_id": self.group_id,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocol_name": assignor.name,
            "assignments": assignments,
        }
        answer = await self._call(SYNC_GROUP, request)
        code = ErrorCode.for_code(error_code(answer.error_code))
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            raise _Rejoin()
        self._check_round_answer(code, "SyncGroup")
        name = getattr(answer, "protocol_name", None)
        if name and name != assignor.name:
            assignor = self._assignor(name)
        assignment = decode_assignment(answer.assignment)
        assignor.on_assignment(assignment, self.generation)
        return sorted(set(assignment.partitions))

    # -- heartbeats ----------------------------------------------------------------------------------

    def _start_heartbeat(self) -> None:
        self._heartbeat_token += 1
        self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat_loop(self._heartbeat_token))

    async def _stop_heartbeat(self) -> None:
        # The token stops the loop even where a cancellation is lost (wait_for before Python 3.12
        # can swallow one when its inner future completes at the same moment).
        self._heartbeat_token += 1
        task, self._heartbeat_task = self._heartbeat_task, None
        if task is not None and not task.done():
            if not self._heartbeat_in_flight:
                task.cancel()
            # A heartbeat on the wire is let finish (it ends the loop): cancelled, its answer
            # would fail a future nobody reads once the connection closes.
            await asyncio.wait([task], timeout=self.cluster.request_timeout)

    async def _heartbeat_loop(self, token: int) -> None:
        interval = self.heartbeat_interval
        while True:
            await asyncio.sleep(interval)
            if token != self._heartbeat_token:
                return
            interval = self.heartbeat_interval
            if self.rejoin_needed and self.generation < 0:
                return
            if time.monotonic() - self._last_poll > self.max_poll_interval:
                log.warning(
                    "consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than "
                    "the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time "
                    "processing messages."
                )
                await self._leave_now("consumer poll timeout has expired")
                self._lose(ErrorCode.REBALANCE_IN_PROGRESS, reset_member_id=True)
                return
            self._heartbeat_in_flight = True
            try:
                answer = await self._call(
                    HEARTBEAT,
                    {"group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id, "group_instance_id": self.group_instance_id},
                    timeout=min(self.cluster.request_timeout, self.session_timeout_ms / 1000),
                )
            except KafkaError as exc:
                log.debug("heartbeat failed: %s", exc)
                interval = RETRY_BACKOFF
                continue
            finally:
                self._heartbeat_in_flight = False
            if token != self._heartbeat_token:
                return
            code = ErrorCode.for_code(error_code(answer.error_code))
            if code == ErrorCode.NONE:
                continue
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                self.request_rejoin("group is rebalancing")
                return
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self._lose(code, reset_member_id=True)
                return
            if code == ErrorCode.ILLEGAL_GENERATION:
                self._lose(code, reset_member_id=False)
                return
            if code == ErrorCode.FENCED_INSTANCE_ID:
                self._fail(self._fenced(code))
                return
            if self._coordinator_error(code):
                interval = RETRY_BACKOFF
                continue
            self._fail(KafkaError(code, f"Heartbeat for group {self.group_id} failed: {code.name}: {code.message}"))
            return

    # -- offsets -------------------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int], *, in_group: bool) -> None:
        """Commit ``offsets``; with ``in_group``, under this member's generation."""
        self.check_fatal()
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in sorted(offsets.items()):
            topics.setdefault(tp.topic, []).append({"partition_index": tp.partition, "committed_offset": offset, "committed_leader_epoch": -1, "committed_metadata": ""})
        for attempt in range(self.cluster.retries + 1):
            generation, member_id, instance_id = (self.generation, self.member_id, self.group_instance_id) if in_group and self.generation >= 0 else (-1, "", None)
            request = {
                "group_id": self.group_id,
                "generation_id_or_member_epoch": generation,
                "member_id": member_id,
                "group_instance_id": instance_id,
                "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
            }
            try:
                answer = await self._call(OFFSET_COMMIT, request)
            except KafkaError as exc:
                if exc.error_code.retriable and attempt < self.cluster.retries:
                    await asyncio.sleep(RETRY_BACKOFF * (attempt + 1))
                    continue
                raise
            retry = False
            for topic in answer.topics:
                for p in topic.partitions:
                    code = ErrorCode.for_code(error_code(p.error_code))
                    if code == ErrorCode.NONE:
                        continue
                    if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                        if in_group:
                            self._lose(code, reset_member_id=code == ErrorCode.UNKNOWN_MEMBER_ID)
                        raise CommitFailedError(code)
                    if code == ErrorCode.REBALANCE_IN_PROGRESS:
                        self.request_rejoin("offset commit failed since group is already rebalancing")
                        raise CommitFailedError(code)
                    if code == ErrorCode.FENCED_INSTANCE_ID:
                        error = self._fenced(code)
                        self._fail(error)
                        raise error
                    if self._coordinator_error(code) or code == ErrorCode.REQUEST_TIMED_OUT:
                        retry = True
                        continue
                    raise KafkaError(code, f"Offset commit of {topic.name}-{p.partition_index} for group {self.group_id} failed: {code.message}")
            if not retry:
                return
            if attempt < self.cluster.retries:
                await asyncio.sleep(RETRY_BACKOFF * (attempt + 1))
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"Offset commit for group {self.group_id} failed: the coordinator is not available")

    async def fetch_committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        wanted = sorted(set(tps))
        if not wanted:
            return {}
        topics: dict[str, list[int]] = {}
        for tp in wanted:
            topics.setdefault(tp.topic, []).append(tp.partition)
        request = {"group_id": self.group_id, "topics": [{"name": t, "partition_indexes": p} for t, p in topics.items()], "require_stable": True}
        for attempt in range(self.cluster.retries + 1):
            try:
                answer = await self._call(OFFSET_FETCH, request)
            except KafkaError as exc:
                if exc.error_code.retriable and attempt < self.cluster.retries:
                    await asyncio.sleep(RETRY_BACKOFF * (attempt + 1))
                    continue
                raise
            code = ErrorCode.for_code(error_code(getattr(answer, "error_code", 0)))
            if code != ErrorCode.NONE:
                if self._coordinator_error(code) and attempt < self.cluster.retries:
                    await asyncio.sleep(RETRY_BACKOFF * (attempt + 1))
                    continue
                raise KafkaError(code, f"OffsetFetch for group {self.group_id} failed: {code.message}")
            result: dict[TopicPartition, int | None] = {}
            retry = False
            for topic in answer.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, int(p.partition_index))
                    pcode = ErrorCode.for_code(error_code(p.error_code))
                    if pcode in _RETRY_ERRORS:
                        retry = True
                    elif pcode not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                        raise KafkaError(pcode, f"OffsetFetch of {tp} for group {self.group_id} failed: {pcode.message}")
                    offset = int(p.committed_offset)
                    result[tp] = offset if offset >= 0 else None
            if retry and attempt < self.cluster.retries:
                await asyncio.sleep(RETRY_BACKOFF * (attempt + 1))
                continue
            return {tp: result.get(tp) for tp in wanted}
        raise AssertionError("unreachable")

    # -- leaving -------------------------------------------------------------------------------------

    async def _leave_now(self, reason: str) -> None:
        if self.group_instance_id is not None or not self.member_id or self.generation < 0:
            return
        try:
            answer = await self._call(
                LEAVE_GROUP,
                {"group_id": self.group_id, "member_id": self.member_id, "members": [{"member_id": self.member_id, "group_instance_id": None}]},
                timeout=min(self.cluster.request_timeout, 5.0),
            )
            code = error_code(answer.error_code)
            if code:
                log.info("LeaveGroup for group %s: %s", self.group_id, ErrorCode.for_code(code).name)
        except KafkaError as exc:
            log.info("LeaveGroup for group %s failed (%s): %s", self.group_id, reason, exc)

    async def leave(self) -> None:
        """Leave the group (dynamic members); the member's partitions go to the others."""
        await self._stop_heartbeat()
        await self._leave_now("the consumer is being closed")
        self.generation = -1
        self.member_id = "" if self.group_instance_id is None else self.member_id
        self.rejoin_needed = True

    async def close(self) -> None:
        await self._stop_heartbeat()
        await self._close_connection()


def _group_api_version(connection: BrokerConnection, api_key: int) -> int:
    """The version to send, normally the highest both sides speak. A broker whose JoinGroup stops
    at v6 (Kafka 2.4, and librdkafka's mock cluster, which reads the flexible JoinGroup v6,
    SyncGroup v4 and LeaveGroup v3-4 with the older layouts) gets the last non-flexible JoinGroup
    v5, SyncGroup v3 and LeaveGroup v2, which every broker since Kafka 2.3 reads alike."""
    version = connection.version_for(api_key)
    if connection.versions.get(JOIN_GROUP, (0, 0))[1] == 6:
        version = min(version, _PRE_FLEXIBLE.get(api_key, version))
    return version


_PRE_FLEXIBLE = {JOIN_GROUP: 5, SYNC_GROUP: 3, LEAVE_GROUP: 2}


def _check_cooperative(subscriptions: Mapping[str, Subscription], assignments: Mapping[str, Any]) -> None:
    """Java's validateCooperativeAssignment: no partition is revoked from one member and added to
    another in the same rebalance."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member, assignment in assignments.items():
        owned = set(subscriptions[member].owned_partitions)
        assigned = set(assignment.partitions)
        added |= assigned - owned
        revoked |= owned - assigned
    moving = added & revoked
    if moving:
        raise KafkaError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"Assignor supporting the COOPERATIVE protocol violates its requirements: {sorted(moving)} were added and revoked in one rebalance",
        )
