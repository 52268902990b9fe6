"""The consumer: manual assignment or group subscription, positions, poll, offset commits.

``Consumer`` is built on a ``NetworkClient`` and speaks the Java consumer's vocabulary (its settings
take the Java property names through ``from_properties``). Partitions come either from
``assign`` (no group management) or from ``subscribe`` (the classic group protocol, see
``consumer_coordinator.py``; assignors in ``assignors.py``). ``poll`` joins or rejoins the group when
needed, commits automatically every ``auto_commit_interval_ms`` when enabled, finds a position
for every partition that has none (the committed offset, else ``auto_offset_reset``), and returns
records the fetcher (``fetcher.py``) decoded.

Corrupt data: ``poll`` raises ``CorruptConsumerRecordError`` (a ``kcli.errors.CorruptRecordError``)
carrying ``topic_partition`` and ``offset``; records fetched before the bad batch are returned by
the poll before. It is raised on every poll until the partition is sought or ``skip(tp)`` is
called, which resumes right after the bad batch (console-consumer's --skip-message-on-error)::

    try:
        records = await consumer.poll(1.0)
    except CorruptConsumerRecordError as exc:
        report(exc)
        consumer.skip(exc.topic_partition)

Rebalance callbacks ``on_revoke(partitions)`` / ``on_assign(partitions)`` may be plain functions
or coroutine functions; with the cooperative protocol they see only the partitions that move.
"""

from __future__ import annotations

import inspect
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kcli.client.assignors import ASSIGNOR_CLASS_NAMES, Assignor, assignors_by_name
from kcli.client.consumer_coordinator import CommitFailedError, ConsumerCoordinator, ConsumerGroupMetadata
from kcli.client.fetcher import (
    EARLIEST,
    LATEST,
    ConsumerRecord,
    CorruptConsumerRecordError,
    Fetcher,
    NoOffsetForPartitionError,
    TopicPartition,
)
from kcli.client.network_client import NetworkClient
from kcli.client.security_config import is_security_key
from kcli.errors import ErrorCode, KafkaError, KcliError

__all__ = [
    "Consumer",
    "ConsumerRecord",
    "CorruptConsumerRecordError",
    "CommitFailedError",
    "NoOffsetForPartitionError",
    "TopicPartition",
    "CONSUMER_PROPERTIES",
]

log = logging.getLogger(__name__)

Callback = Callable[[list[TopicPartition]], Any]

# Java consumer property -> (Consumer keyword, converter). Properties handled by the NetworkClient or
# meaningless here are listed in _ACCEPTED below and taken without effect.
CONSUMER_PROPERTIES: dict[str, tuple[str, Callable[[str, str], Any]]] = {}


def _number(kafka_type: str, minimum: int | None = None) -> Callable[[str, str], int]:
    """ConfigDef's INT (32 bits) or LONG (64) parse, and its ``atLeast`` check, in its words."""
    bits = 32 if kafka_type == "INT" else 64

    def convert(name: str, value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            number = None
        if number is None or not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
            raise KcliError(f"Invalid value {value} for configuration {name}: Not a number of type {kafka_type}")
        if minimum is not None and number < minimum:
            raise KcliError(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")
        return number

    convert.kafka_type = kafka_type  # type: ignore[attr-defined]
    return convert


_int = _number("INT")


def _bool(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise KcliError(f"Invalid value {value} for configuration {name}: Expected value to be either true or false")
    return text == "true"


def _choice(*choices: str) -> Callable[[str, str], str]:
    def convert(name: str, value: str) -> str:
        text = value.strip().lower()
        if text not in choices:
            raise KcliError(f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(choices)}")
        return text

    return convert


def _string(_name: str, value: str) -> str:
    return value.strip()


def _strategies(name: str, value: str) -> tuple[str, ...]:
    out = []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        short = ASSIGNOR_CLASS_NAMES.get(item, item)
        if short not in assignors_by_name():
            raise KcliError(f"Invalid value {value} for configuration {name}: kcli's consumer knows the assignors {', '.join(sorted(assignors_by_name()))}")
        out.append(short)
    if not out:
        raise KcliError(f"Invalid value {value} for configuration {name}: no assignor given")
    return tuple(out)


CONSUMER_PROPERTIES.update(
    {
        "group.id": ("group_id", _string),
        "group.instance.id": ("group_instance_id", _string),
        "auto.offset.reset": ("auto_offset_reset", _choice("latest", "earliest", "none")),
        "enable.auto.commit": ("enable_auto_commit", _bool),
        "auto.commit.interval.ms": ("auto_commit_interval_ms", _number("INT", 0)),
        "isolation.level": ("isolation_level", _choice("read_uncommitted", "read_committed")),
        "fetch.min.bytes": ("fetch_min_bytes", _number("INT", 0)),
        "fetch.max.wait.ms": ("fetch_max_wait_ms", _number("INT", 0)),
        "fetch.max.bytes": ("fetch_max_bytes", _number("INT", 0)),
        "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _number("INT", 0)),
        "max.poll.records": ("max_poll_records", _int),
        "session.timeout.ms": ("session_timeout_ms", _int),
        "heartbeat.interval.ms": ("heartbeat_interval_ms", _int),
        "max.poll.interval.ms": ("max_poll_interval_ms", _number("INT", 1)),
        "partition.assignment.strategy": ("partition_assignment_strategy", _strategies),
        "check.crcs": ("check_crcs", _bool),
        "exclude.internal.topics": ("exclude_internal_topics", _bool),
        "client.id": ("client_id", _string),
        "metadata.max.age.ms": ("metadata_max_age_ms", _number("LONG", 0)),
        "allow.auto.create.topics": ("allow_auto_create_topics", _bool),
        # The old (ZooKeeper) consumer's offset storage, for groups moving between the stores.
        "offsets.storage": ("offsets_storage", _choice("zookeeper", "kafka")),
        "dual.commit.enabled": ("dual_commit_enabled", _bool),
        "zookeeper.connect": ("zookeeper_connect", _string),
        "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", _number("INT", 1)),
        "zookeeper.connection.timeout.ms": ("zookeeper_connection_timeout_ms", _number("INT", 1)),
    }
)

# Known Java consumer settings that kcli takes without acting on them (connection-level ones are
# the NetworkClient's; deserializers do not apply: records are bytes).
ACCEPTED_PROPERTIES = frozenset(
    {
        "bootstrap.servers", "key.deserializer", "value.deserializer", "request.timeout.ms", "retries", "retry.backoff.ms",
        "retry.backoff.max.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "receive.buffer.bytes", "send.buffer.bytes",
        "connections.max.idle.ms", "default.api.timeout.ms", "client.rack",
        "interceptor.classes", "metric.reporters", "metrics.num.samples", "metrics.sample.window.ms", "metrics.recording.level",
        "auto.include.jmx.reporter", "client.dns.lookup", "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms", "security.protocol", "group.protocol", "enable.metrics.push",
    }
)


class Consumer:
    """A Kafka consumer on ``cluster``; see the module docstring."""

    def __init__(
        self,
        cluster: NetworkClient,
        *,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        isolation_level: str = "read_uncommitted",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52428800,
        max_partition_fetch_bytes: int = 1048576,
        max_poll_records: int = 500,
        session_timeout_ms: int = 45000,
        heartbeat_interval_ms: int = 3000,
        max_poll_interval_ms: int = 300000,
        rebalance_timeout_ms: int | None = None,
        partition_assignment_strategy: Iterable[str] = ("range", "cooperative-sticky"),
        check_crcs: bool = True,
        exclude_internal_topics: bool = True,
        client_id: str = "kcli",
        metadata_max_age_ms: int = 300000,
        allow_auto_create_topics: bool = True,
        offsets_storage: str = "kafka",
        dual_commit_enabled: bool | None = None,
        zookeeper_connect: str | None = None,
        zookeeper_session_timeout_ms: int = 6000,
        zookeeper_connection_timeout_ms: int = 6000,
    ) -> None:
        if auto_offset_reset not in ("latest", "earliest", "none"):
            raise KcliError(f"Invalid value {auto_offset_reset} for configuration auto.offset.reset: String must be one of: latest, earliest, none")
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise KcliError(f"Invalid value {isolation_level} for configuration isolation.level")
        if max_poll_records < 1:
            raise KcliError(f"Invalid value {max_poll_records} for configuration max.poll.records: Value must be at least 1")
        if offsets_storage not in ("zookeeper", "kafka"):
            raise KcliError(f"Invalid value {offsets_storage} for configuration offsets.storage: String must be one of: zookeeper, kafka")
        if offsets_storage == "zookeeper" and not zookeeper_connect:
            raise KcliError("offsets.storage=zookeeper needs zookeeper.connect (the ZooKeeper ensemble holding /consumers)")
        self.cluster = cluster
        self.group_id = group_id or None
        self.group_instance_id = group_instance_id or None
        self.auto_offset_reset = auto_offset_reset
        self.enable_auto_commit = enable_auto_commit and self.group_id is not None
        self.auto_commit_interval = auto_commit_interval_ms / 1000
        self.max_poll_records = max_poll_records
        self.exclude_internal_topics = exclude_internal_topics
        self.client_id = client_id
        self.allow_auto_create_topics = allow_auto_create_topics
        self.fetcher = Fetcher(
            cluster,
            isolation_level=isolation_level,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            check_crcs=check_crcs,
            auto_offset_reset=auto_offset_reset,
        )
        self._assignors: list[Assignor] = [assignors_by_name()[name]() for name in _strategy_names(partition_assignment_strategy)]
        self._membership: ConsumerCoordinator | None = None
        if self.group_id is not None:
            self._membership = ConsumerCoordinator(
                cluster,
                self.group_id,
                group_instance_id=self.group_instance_id,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=max_poll_interval_ms if rebalance_timeout_ms is None else rebalance_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms,
                assignors=self._assignors,
                metadata_max_age_ms=metadata_max_age_ms,
                allow_auto_create_topics=allow_auto_create_topics,
            )
        # Offsets in ZooKeeper (see zookeeper_offsets.py): the store when offsets.storage=zookeeper,
        # a second copy with dual commit; only with a group and zookeeper.connect.
        from kcli.client.zookeeper_offsets import ZooKeeperOffsets, dual_commit_default

        self.offsets_storage = offsets_storage
        self.dual_commit_enabled = dual_commit_default(offsets_storage) if dual_commit_enabled is None else dual_commit_enabled
        self._zk_offsets: ZooKeeperOffsets | None = None
        if self.group_id is not None and zookeeper_connect and (offsets_storage == "zookeeper" or self.dual_commit_enabled):
            self._zk_offsets = ZooKeeperOffsets(zookeeper_connect, self.group_id, session_timeout_ms=zookeeper_session_timeout_ms,
                                                connection_timeout_ms=zookeeper_connection_timeout_ms)
        self._zk_registered = False
        self._mode: str | None = None  # "assign" or "subscribe"
        self._topics: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._on_revoke: Callback | None = None
        self._on_assign: Callback | None = None
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval
        self._closed = False

    @classmethod
    def from_properties(cls, cluster: NetworkClient, props: Mapping[str, str], *, warn: Callable[[str], None] | None = None, **overrides: Any) -> Consumer:
        """A consumer from Java consumer properties; unknown names are warned about as Kafka does."""
        kwargs: dict[str, Any] = {}
        say = warn or _warn
        for name, value in props.items():
            entry = CONSUMER_PROPERTIES.get(name)
            if entry is not None:
                keyword, convert = entry
                kwargs[keyword] = convert(name, value)
            elif name == "group.protocol" and value.strip().lower() != "classic":
                raise KcliError(f"group.protocol {value} is not supported: kcli's consumer speaks the classic group protocol")
            elif name not in ACCEPTED_PROPERTIES and not is_security_key(name):
                say(f"The configuration '{name}' was supplied but isn't a known config.")
        kwargs.update(overrides)
        kwargs.setdefault("client_id", cluster.client_id)
        return cls(cluster, **kwargs)

    # -- assignment ----------------------------------------------------------------------------------

    async def subscribe(self, topics: list[str] | None = None, pattern: str | None = None, on_revoke: Callback | None = None, on_assign: Callback | None = None) -> None:
        """Join the group for ``topics`` or every topic matching ``pattern`` (a full match)."""
        if self._membership is None:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "To use the group management or offset commit APIs, you must provide a valid group.id in the consumer configuration.")
        if self._mode == "assign":
            raise KcliError("Subscription to topics, partitions and pattern are mutually exclusive")
        if (topics is None) == (pattern is None):
            raise KcliError("subscribe needs either topics or a pattern")
        if topics is not None:
            if any(not t or not t.strip() for t in topics):
                raise KcliError("Topic collection to subscribe to cannot contain null or empty topic")
            self._topics = set(topics)
            self._pattern = None
        else:
            try:
                self._pattern = re.compile(pattern or "")
            except re.error as exc:
                raise KcliError(f"invalid topic pattern {pattern!r}: {exc}") from None
            self._topics = set()
        self._on_revoke = on_revoke
        self._on_assign = on_assign
        self._mode = "subscribe"
        if self._pattern is None:
            # As Java's consumer, ask for the subscribed topics' metadata at once: with
            # allow.auto.create.topics (and the broker's auto.create.topics.enable) that creates them.
            try:
                await self.cluster.refresh(sorted(self._topics), allow_auto_create=self.allow_auto_create_topics)
            except KafkaError as exc:
                log.debug("metadata for %s: %s", sorted(self._topics), exc)
        await self._update_pattern_topics()
        self._membership.request_rejoin("subscription changed")

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these partitions, without group management."""
        if self._mode == "subscribe":
            raise KcliError("Subscription to topics, partitions and pattern are mutually exclusive")
        partitions = list(partitions)
        self._mode = "assign" if partitions else None
        self.fetcher.assign(partitions)

    def assignment(self) -> set[TopicPartition]:
        return set(self.fetcher.states)

    async def unsubscribe(self) -> None:
        if self._mode == "subscribe" and self._membership is not None:
            await self._revoke(sorted(self.fetcher.states))
            await self._membership.leave()
        self.fetcher.assign([])
        self._mode = None
        self._topics = set()
        self._pattern = None

    # -- positions -----------------------------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.fetcher.seek(tp, offset)

    def skip(self, tp: TopicPartition) -> None:
        """Move ``tp`` past the corrupt batch a poll raised ``CorruptConsumerRecordError`` for."""
        self.fetcher.skip(tp)

    async def seek_to_beginning(self, tps: Iterable[TopicPartition] | None = None) -> None:
        await self._seek_to(tps, EARLIEST)

    async def seek_to_end(self, tps: Iterable[TopicPartition] | None = None) -> None:
        await self._seek_to(tps, LATEST)

    async def _seek_to(self, tps: Iterable[TopicPartition] | None, timestamp: int) -> None:
        targets = list(self.fetcher.states) if tps is None else list(tps)
        for tp in targets:
            self.fetcher.state(tp)
        if not targets:
            return
        found = await self.fetcher.list_offsets({tp: timestamp for tp in targets})
        for tp, (offset, _ts) in found.items():
            self.fetcher.seek(tp, max(offset, 0))

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, tuple[int, int] | None]:
        """The earliest offset whose timestamp is >= the given one, per partition; None when none is."""
        for tp, ts in timestamps.items():
            if ts < 0:
                raise KcliError(f"The target time for partition {tp} is {ts}. The target time cannot be negative.")
        if not timestamps:
            return {}
        found = await self.fetcher.list_offsets(dict(timestamps))
        return {tp: (found[tp] if tp in found and found[tp][0] >= 0 else None) for tp in timestamps}

    async def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        found = await self.fetcher.list_offsets({tp: EARLIEST for tp in tps})
        return {tp: offset for tp, (offset, _ts) in found.items()}

    async def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        found = await self.fetcher.list_offsets({tp: LATEST for tp in tps})
        return {tp: offset for tp, (offset, _ts) in found.items()}

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record poll returns for ``tp`` (found first when unknown)."""
        state = self.fetcher.state(tp)
        if state.position is None:
            await self._update_positions()
            if state.position is None:
                await self.fetcher.reset_positions()
        if state.position is None:
            raise KafkaError(ErrorCode.OFFSET_NOT_AVAILABLE, f"no position for partition {tp}")
        return state.position

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        self.fetcher.pause(tps)

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        self.fetcher.resume(tps)

    def high_watermark(self, tp: TopicPartition) -> int:
        """The partition's high watermark from the last fetch answer (-1 before one)."""
        return self.fetcher.state(tp).high_watermark

    async def _update_positions(self) -> None:
        missing = self.fetcher.missing_positions()
        if not missing:
            return
        committed: dict[TopicPartition, int | None] = {}
        if self._membership is not None:
            committed = await self._fetch_committed(missing)
        for tp in missing:
            offset = committed.get(tp)
            state = self.fetcher.states.get(tp)
            if state is None or state.position is not None:
                continue
            if offset is not None and offset >= 0:
                self.fetcher.seek(tp, offset)
            else:
                self.fetcher.request_reset(tp, self.auto_offset_reset)
        if any(s.reset == "none" for s in self.fetcher.states.values()):
            raise NoOffsetForPartitionError([tp for tp, s in self.fetcher.states.items() if s.reset == "none"])

    # -- poll ----------------------------------------------------------------------------------------

    async def poll(self, timeout: float, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records fetched for the assigned partitions, waiting up to ``timeout`` seconds for some."""
        if self._closed:
            raise KcliError("This consumer has already been closed.")
        if self._mode is None:
            raise KcliError("Consumer is not subscribed to any topics or assigned any partitions")
        limit = self.max_poll_records if max_records is None else max(1, max_records)
        deadline = time.monotonic() + max(timeout, 0.0)
        fetcher = self.fetcher
        while True:
            if self._membership is not None:
                self._membership.polled()
            if self._mode == "subscribe":
                await self._ensure_group(deadline)
            if self.enable_auto_commit and time.monotonic() >= self._next_auto_commit:
                await self._auto_commit()
            await self._update_positions()
            fetcher.start()
            records = fetcher.take(limit)
            if records:
                return records
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            wait = remaining
            if self.enable_auto_commit:
                wait = min(wait, max(self._next_auto_commit - time.monotonic(), 0.0) + 0.001)
            if self._membership is not None and self._mode == "subscribe":
                wait = min(wait, 0.1) if self._membership.rejoin_needed else wait
                await self._membership.wait_for_event(fetcher.wait_for_data, wait)
            else:
                await fetcher.wait_for_data(wait)

    # -- the group -----------------------------------------------------------------------------------

    async def _update_pattern_topics(self) -> None:
        if self._pattern is None:
            return
        metadata = await self.cluster.refresh(None)
        matched = {
            name for name, info in metadata.topics.items()
            if self._pattern.fullmatch(name) and not (info.internal and self.exclude_internal_topics)
        }
        if matched != self._topics:
            self._topics = matched
            if self._membership is not None:
                self._membership.request_rejoin("topics matching the pattern changed")

    async def _ensure_group(self, deadline: float) -> None:
        membership = self._membership
        assert membership is not None
        membership.check_fatal()
        if membership.metadata_due():
            # Topics matching the pattern, and (as leader) partition counts, may have changed.
            try:
                await self._update_pattern_topics()
                await membership.check_partition_counts()
            except KafkaError as exc:
                log.debug("metadata refresh for group %s failed: %s", self.group_id, exc)
        if not membership.rejoin_needed:
            return
        owned = sorted(self.fetcher.states)
        if membership.lost_partitions:
            # The generation is gone: nothing can be committed; the partitions are simply lost.
            membership.lost_partitions = False
            if owned:
                await self._revoke(owned)
                owned = []
        elif owned and self.enable_auto_commit:
            await self._commit_quietly()  # Java's onJoinPrepare, under the generation still valid
        if not membership.cooperative and owned:
            await self._revoke(owned)
            owned = []
        else:
            gone = [tp for tp in owned if tp.topic not in self._topics]
            if gone:
                await self._revoke(gone)
                owned = [tp for tp in owned if tp.topic in self._topics]
        assigned = await membership.join(sorted(self._topics), owned, deadline)
        if assigned is None:
            return  # not joined before the poll's deadline: the next poll tries again
        assigned_set = set(assigned)
        if self._zk_offsets is not None:
            if not self._zk_registered:
                await self._zk_offsets.register(self._topics)
                self._zk_registered = True
            await self._zk_offsets.own(assigned_set)
        if membership.cooperative:
            revoked = [tp for tp in owned if tp not in assigned_set]
            added = sorted(assigned_set - set(owned))
            if revoked:
                await self._revoke(revoked)
                membership.request_rejoin("partitions were revoked")
            self.fetcher.assign(sorted(assigned_set))
            await self._call(self._on_assign, added)
        else:
            self.fetcher.assign(sorted(assigned_set))
            await self._call(self._on_assign, sorted(assigned_set))

    async def _revoke(self, tps: list[TopicPartition]) -> None:
        keep = [tp for tp in self.fetcher.states if tp not in set(tps)]
        try:
            await self._call(self._on_revoke, sorted(tps))
        finally:
            self.fetcher.assign(keep)
            if self._zk_offsets is not None:
                await self._zk_offsets.disown(tps)

    @staticmethod
    async def _call(callback: Callback | None, tps: list[TopicPartition]) -> None:
        if callback is None:
            return
        result = callback(tps)
        if inspect.isawaitable(result):
            await result

    # -- commits -------------------------------------------------------------------------------------

    def _positions(self) -> dict[TopicPartition, int]:
        return {tp: s.position for tp, s in self.fetcher.states.items() if s.position is not None}

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (the next offsets to read) or, when None, every current position."""
        if self._membership is None:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "To use the group management or offset commit APIs, you must provide a valid group.id in the consumer configuration.")
        to_commit = dict(self._positions() if offsets is None else offsets)
        if not to_commit:
            return
        if self.offsets_storage == "kafka":
            await self._membership.commit(to_commit, in_group=self._mode == "subscribe")
        if self._zk_offsets is not None:
            # The old consumer's order: the broker first, then ZooKeeper (dual commit).
            await self._zk_offsets.commit(to_commit)

    async def _fetch_committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The committed offsets from the configured storage; with dual commit the larger of
        Kafka's and ZooKeeper's, as the old consumer fetched them."""
        assert self._membership is not None
        if self.offsets_storage == "zookeeper":
            assert self._zk_offsets is not None
            return await self._zk_offsets.fetch(tps)
        kafka = await self._membership.fetch_committed(tps)
        if self._zk_offsets is None:
            return kafka
        from kcli.client.zookeeper_offsets import newest

        return newest(kafka, await self._zk_offsets.fetch(tps), tps)

    async def _auto_commit(self) -> None:
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval
        await self._commit_quietly()

    async def _commit_quietly(self) -> None:
        try:
            await self.commit()
        except (KafkaError, CommitFailedError) as exc:
            log.warning("Asynchronous auto-commit of offsets failed: %s", exc)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, generation and member id, for a transactional producer's
        ``send_offsets_to_transaction`` (Java's groupMetadata())."""
        membership = self._membership
        if membership is None:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "To use the group management or offset commit APIs, you must provide a valid group.id in the consumer configuration.")
        if self._mode != "subscribe" or membership.generation < 0:
            return ConsumerGroupMetadata(membership.group_id, -1, "", self.group_instance_id)
        return ConsumerGroupMetadata(membership.group_id, membership.generation, membership.member_id, self.group_instance_id)

    async def committed(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed offset of each partition (None when it has none)."""
        if self._membership is None:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "To use the group management or offset commit APIs, you must provide a valid group.id in the consumer configuration.")
        return await self._fetch_committed(list(tps))

    # -- metrics -------------------------------------------------------------------------------------

    def metrics(self) -> dict[str, float]:
        """A few of the Java consumer's metrics, named ``group:name:{tags}`` as Kafka's tools print them."""
        f = self.fetcher
        tags = "{client-id=%s}" % self.client_id
        group = "consumer-fetch-manager-metrics"
        return {
            f"{group}:fetch-total:{tags}": float(f.fetch_count),
            f"{group}:fetch-latency-avg:{tags}": (f.fetch_latency_total / f.fetch_count * 1000) if f.fetch_count else float("nan"),
            f"{group}:fetch-latency-max:{tags}": (f.fetch_latency_max * 1000) if f.fetch_count else float("nan"),
            f"{group}:bytes-consumed-total:{tags}": float(f.bytes_fetched),
            f"{group}:records-consumed-total:{tags}": float(f.records_consumed),
        }

    # -- close ---------------------------------------------------------------------------------------

    async def close(self, *, commit: bool = True) -> None:
        """Commit (when auto-commit is on and ``commit``), leave the group, stop fetching."""
        if self._closed:
            return
        self._closed = True
        try:
            if commit and self.enable_auto_commit and self._mode is not None:
                await self._commit_quietly()
            if self._mode == "subscribe" and self._membership is not None:
                if self.fetcher.states:
                    try:
                        await self._call(self._on_revoke, sorted(self.fetcher.states))
                    except Exception as exc:  # a failing callback must not keep the member in the group
                        log.warning("on_revoke failed at close: %s", exc)
                await self._membership.leave()
        finally:
            if self._membership is not None:
                await self._membership.close()
            if self._zk_offsets is not None:
                await self._zk_offsets.close()
            await self.fetcher.close()

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _strategy_names(strategies: Iterable[str]) -> list[str]:
    names = []
    known = assignors_by_name()
    for item in strategies:
        name = ASSIGNOR_CLASS_NAMES.get(item, item)
        if name not in known:
            raise KcliError(f"unknown partition assignment strategy {item!r} (kcli knows {', '.join(sorted(known))})")
        if name not in names:
            names.append(name)
    if not names:
        raise KcliError("no partition assignment strategy given")
    return names


def _warn(message: str) -> None:
    # A library logs; the tool that gave no ``warn`` decides where its logs go.
    log.warning(message)
