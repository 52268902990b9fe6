"""Admin calls for the tools: topics, partitions, configs, offsets, records, log dirs, the cluster,
API versions, features.

``Admin`` wraps a ``NetworkClient`` and sends each call where Kafka's admin client sends it: topic
creation, deletion and partition growth to the controller; configs of one broker to that broker
and other configs to any broker; offsets, record fetches and record deletion to each partition's
leader, one request per leader. Calls that name many items answer per item: every result carries its own
``error`` (a ``KafkaError``, or None), so a tool can report each failed item and go on. Items
that fail with a retriable error (a moved leader or controller, a lost connection) are retried
with the cluster's backoff after fresh metadata; everything else is answered as it came.

Versions follow the broker: IncrementalAlterConfigs falls back to AlterConfigs (the whole
dynamic set, rebuilt from DescribeConfigs) on brokers older than Kafka 2.3, and a call a broker
cannot answer at all (DescribeConfigs against librdkafka's mock cluster) answers
UNSUPPORTED_VERSION per item.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kcli.client.connection import CLIENT_MAX_VERSIONS, FeatureMetadata, error_code
from kcli.client.fetch_request import FetchPosition, fetch_request
from kcli.client.metadata import Node, TopicInfo
from kcli.client.network_client import NetworkClient
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError
from kcli.protocol import messages

K = TypeVar("K")
R = TypeVar("R")

FETCH = 1
LIST_OFFSETS = 2
API_VERSIONS = 18
CREATE_TOPICS = 19
DELETE_TOPICS = 20
DELETE_RECORDS = 21
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
DESCRIBE_LOG_DIRS = 35
CREATE_PARTITIONS = 37
INCREMENTAL_ALTER_CONFIGS = 44
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51
DESCRIBE_CLUSTER = 60

FETCH_MAX_BYTES = 50 << 20  # the Java consumer's fetch.max.bytes

# Config resource types (DescribeConfigs / AlterConfigs / IncrementalAlterConfigs).
TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8

# ListOffsets timestamps with a meaning of their own.
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
# The lowest ListOffsets version that understands each of them.
_OFFSET_SPEC_VERSIONS = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}

# Per-item errors worth another attempt after fresh metadata.
_RETRY_ITEM = frozenset(
    {
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.REPLICA_NOT_AVAILABLE,
    }
)


class ConfigSource(enum.IntEnum):
    """Where a described config value comes from: the wire code, named as Kafka's admin client
    names it (``ConfigEntry.ConfigSource``), which is what kafka-configs.sh prints."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_CLIENT_METRICS_CONFIG = 7

    @classmethod
    def of(cls, code: int) -> ConfigSource:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class AlterOp(enum.IntEnum):
    """IncrementalAlterConfigs operations."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclasses.dataclass(frozen=True)
class ConfigResource:
    type: int
    name: str


@dataclasses.dataclass(frozen=True)
class NewTopic:
    """A topic to create: a partition count and replication factor (-1: the broker's defaults),
    or a manual assignment (partition -> broker ids), and config overrides."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class CreatedTopic:
    name: str
    error: KafkaError | None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1


@dataclasses.dataclass(frozen=True)
class NewPartitions:
    """Grow a topic to ``count`` partitions; ``assignments`` (broker ids per new partition) is
    optional."""

    count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclasses.dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclasses.dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()
    config_type: int = 0
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        """Kafka's ``ConfigEntry.isDefault``: the value is the built-in default."""
        return self.source is ConfigSource.DEFAULT_CONFIG


@dataclasses.dataclass(frozen=True)
class ConfigResult:
    resource: ConfigResource
    entries: tuple[ConfigEntry, ...]
    error: KafkaError | None = None

    def get(self, name: str) -> ConfigEntry | None:
        for entry in self.entries:
            if entry.name == name:
                return entry
        return None


@dataclasses.dataclass(frozen=True)
class ConfigOp:
    name: str
    op: AlterOp
    value: str | None = None


@dataclasses.dataclass(frozen=True)
class ListedOffset:
    offset: int = -1
    timestamp: int = -1
    leader_epoch: int = -1
    error: KafkaError | None = None


@dataclasses.dataclass(frozen=True)
class FetchedRecords:
    """One partition's part of a Fetch answer: its batches as the leader sent them."""

    records: bytes = b""
    high_watermark: int = -1
    log_start_offset: int = -1
    error: KafkaError | None = None


@dataclasses.dataclass(frozen=True)
class DeletedRecords:
    low_watermark: int = -1
    error: KafkaError | None = None


@dataclasses.dataclass(frozen=True)
class ReplicaInfo:
    """One partition's replica in a log dir (Kafka's ReplicaInfo)."""

    size: int
    offset_lag: int
    is_future: bool


@dataclasses.dataclass(frozen=True)
class LogDirDescription:
    """One log dir of a broker, as DescribeLogDirs answers it; ``error`` is the dir's own
    (KAFKA_STORAGE_ERROR for an offline dir). The byte counts are -1 from brokers before v4."""

    error: ErrorCode | None
    replicas: dict[TopicPartition, ReplicaInfo]
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclasses.dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    nodes: dict[int, Node]


@dataclasses.dataclass(frozen=True)
class BrokerVersions:
    """One broker's ApiVersions answer: api key -> (min, max), or the error reaching it."""

    node: Node
    versions: dict[int, tuple[int, int]] | None
    error: KafkaError | None = None


def failure(code: int, message: str | None = None) -> KafkaError:
    """The KafkaError of a wire error code, with the broker's message when it sent one."""
    error = ErrorCode.for_code(code)
    return KafkaError(error, message or error.message)


def _error_of(item: Any) -> KafkaError | None:
    code = error_code(item.error_code)
    return failure(code, getattr(item, "error_message", None)) if code else None


class Admin:
    """Admin calls over one ``NetworkClient``; every method is a coroutine."""

    def __init__(self, cluster: NetworkClient, *, timeout_ms: int = 30000) -> None:
        self.cluster = cluster
        self.timeout_ms = timeout_ms

    # -- topics --------------------------------------------------------------------------------------

    async def list_topics(self, *, include_internal: bool = True) -> dict[str, TopicInfo]:
        """Every topic the cluster has (internal ones as the brokers flag them, when asked)."""
        metadata = await self.cluster.retrying(lambda: self.cluster.refresh(None))
        return {name: info for name, info in metadata.topics.items() if include_internal or not info.internal}

    async def describe_topics(self, names: Iterable[str]) -> dict[str, TopicInfo | KafkaError]:
        """Each topic's metadata (id, internal flag, partitions with leader, replicas, ISR,
        offline replicas), or the error the metadata answered for it."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}

        async def attempt(pending: list[str]) -> dict[str, TopicInfo | KafkaError]:
            metadata = await self.cluster.refresh(pending)
            results: dict[str, TopicInfo | KafkaError] = {}
            for name in pending:
                info = metadata.topics.get(name)
                if info is None:
                    results[name] = failure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                elif info.error:
                    results[name] = failure(info.error)
                else:
                    results[name] = info
            return results

        return await self._rounds(wanted, attempt, lambda r: isinstance(r, KafkaError) and r.error_code in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NETWORK_EXCEPTION))

    async def create_topics(self, topics: Sequence[NewTopic], *, validate_only: bool = False) -> dict[str, CreatedTopic]:
        """Create topics on the controller; one result per topic."""
        by_name = {t.name: t for t in topics}
        # Broker defaults for the partition count or replication factor need CreateTopics v4.
        at_least = 4 if any(t.assignments is None and (t.num_partitions < 0 or t.replication_factor < 0) for t in topics) else 0

        async def attempt(pending: list[str]) -> dict[str, CreatedTopic]:
            fields = {
                "topics": [_creatable(by_name[name]) for name in pending],
                "timeout": self.timeout_ms,
                "validate_only": validate_only,
            }
            try:
                answer = await self.cluster.call(await self._controller(), CREATE_TOPICS, fields, at_least=at_least)
            except KafkaError as exc:
                return {name: CreatedTopic(name, exc) for name in pending}
            results = {}
            for item in answer.topics:
                if item.name not in by_name:
                    continue
                results[item.name] = CreatedTopic(
                    item.name,
                    _error_of(item),
                    getattr(item, "topic_id", None),
                    int(getattr(item, "num_partitions", -1)),
                    int(getattr(item, "replication_factor", -1)),
                )
            for name in pending:
                results.setdefault(name, CreatedTopic(name, failure(ErrorCode.UNKNOWN_SERVER_ERROR, f"the broker did not answer for topic '{name}'")))
            return results

        results = await self._rounds(list(by_name), attempt, lambda r: _retriable(r.error))
        for name in by_name:
            self.cluster.forget(name)
        return results

    async def delete_topics(self, names: Sequence[str]) -> dict[str, KafkaError | None]:
        """Delete topics on the controller; None for each topic deleted."""
        wanted = list(dict.fromkeys(names))

        async def attempt(pending: list[str]) -> dict[str, KafkaError | None]:
            fields = {"topic_names": pending, "topics": [{"name": n} for n in pending], "timeout": self.timeout_ms}
            try:
                answer = await self.cluster.call(await self._controller(), DELETE_TOPICS, fields)
            except KafkaError as exc:
                return {name: exc for name in pending}
            results: dict[str, KafkaError | None] = {item.name: _error_of(item) for item in answer.responses if item.name in pending}
            for name in pending:
                results.setdefault(name, failure(ErrorCode.UNKNOWN_SERVER_ERROR, f"the broker did not answer for topic '{name}'"))
            return results

        results = await self._rounds(wanted, attempt, _retriable) if wanted else {}
        for name in wanted:
            self.cluster.forget(name)
        return results

    async def create_partitions(self, changes: Mapping[str, NewPartitions], *, validate_only: bool = False) -> dict[str, KafkaError | None]:
        """Grow topics to new partition counts on the controller; None for each topic grown."""

        async def attempt(pending: list[str]) -> dict[str, KafkaError | None]:
            fields = {
                "topics": [
                    {
                        "name": name,
                        "count": changes[name].count,
                        "assignments": None if changes[name].assignments is None else [{"broker_ids": list(b)} for b in changes[name].assignments],
                    }
                    for name in pending
                ],
                "timeout": self.timeout_ms,
                "validate_only": validate_only,
            }
            try:
                answer = await self.cluster.call(await self._controller(), CREATE_PARTITIONS, fields)
            except KafkaError as exc:
                return {name: exc for name in pending}
            results: dict[str, KafkaError | None] = {item.name: _error_of(item) for item in answer.results if item.name in changes}
            for name in pending:
                results.setdefault(name, failure(ErrorCode.UNKNOWN_SERVER_ERROR, f"the broker did not answer for topic '{name}'"))
            return results

        results = await self._rounds(list(changes), attempt, _retriable) if changes else {}
        for name in changes:
            self.cluster.forget(name)
        return results

    # -- configs -------------------------------------------------------------------------------------

    async def describe_configs(
        self, resources: Sequence[ConfigResource], *, include_synonyms: bool = False, include_documentation: bool = False
    ) -> dict[ConfigResource, ConfigResult]:
        """Each resource's config entries (value, source, flags, synonyms and documentation when
        asked for and the broker's version has them)."""

        async def send(node: int | None, group: list[ConfigResource]) -> dict[ConfigResource, ConfigResult]:
            fields = {
                "resources": [{"resource_type": r.type, "resource_name": r.name, "configuration_keys": None} for r in group],
                "include_synonyms": include_synonyms,
                "include_documentation": include_documentation,
            }
            try:
                answer = await self.cluster.call(node, DESCRIBE_CONFIGS, fields, at_least=1)
            except KafkaError as exc:
                return {r: ConfigResult(r, (), exc) for r in group}
            results = {}
            for item in answer.results:
                resource = ConfigResource(int(item.resource_type), item.resource_name)
                error = _error_of(item)
                entries = () if error else tuple(_config_entry(c) for c in item.configs)
                results[resource] = ConfigResult(resource, entries, error)
            for resource in group:
                results.setdefault(resource, ConfigResult(resource, (), failure(ErrorCode.UNKNOWN_SERVER_ERROR, "the broker did not answer for this resource")))
            return results

        return await self._by_resource_node(list(dict.fromkeys(resources)), send)

    async def incremental_alter_configs(
        self, changes: Mapping[ConfigResource, Sequence[ConfigOp]], *, validate_only: bool = False
    ) -> dict[ConfigResource, KafkaError | None]:
        """Apply SET/DELETE/APPEND/SUBTRACT operations; None for each resource changed.

        A broker without IncrementalAlterConfigs (Kafka before 2.3) is sent AlterConfigs with the
        resource's whole new dynamic set: its current dynamic configs (from DescribeConfigs) with
        the operations applied; APPEND and SUBTRACT start from the current value.
        """

        async def send(node: int | None, group: list[ConfigResource]) -> dict[ConfigResource, KafkaError | None]:
            try:
                connection = await (self.cluster.any_connection() if node is None else self.cluster.connection(node))
            except KafkaError as exc:
                return {r: exc for r in group}
            if INCREMENTAL_ALTER_CONFIGS not in connection.versions and ALTER_CONFIGS in connection.versions:
                return await self._alter_by_replacing(node, group, changes, validate_only)
            fields = {
                "resources": [
                    {
                        "resource_type": r.type,
                        "resource_name": r.name,
                        "configs": [{"name": op.name, "config_operation": int(op.op), "value": op.value} for op in changes[r]],
                    }
                    for r in group
                ],
                "validate_only": validate_only,
            }
            return await self._alter(node, INCREMENTAL_ALTER_CONFIGS, fields, group)

        return await self._by_resource_node(list(changes), send)

    async def alter_configs(self, configs: Mapping[ConfigResource, Mapping[str, str]], *, validate_only: bool = False) -> dict[ConfigResource, KafkaError | None]:
        """Kafka's legacy AlterConfigs: each resource's dynamic configs become exactly ``configs``."""

        async def send(node: int | None, group: list[ConfigResource]) -> dict[ConfigResource, KafkaError | None]:
            fields = {
                "resources": [
                    {"resource_type": r.type, "resource_name": r.name, "configs": [{"name": k, "value": v} for k, v in configs[r].items()]}
                    for r in group
                ],
                "validate_only": validate_only,
            }
            return await self._alter(node, ALTER_CONFIGS, fields, group)

        return await self._by_resource_node(list(configs), send)

    async def _alter(self, node: int | None, api_key: int, fields: dict[str, Any], group: list[ConfigResource]) -> dict[ConfigResource, KafkaError | None]:
        """One (Incremental)AlterConfigs request for ``group``; each resource's error or None."""
        try:
            answer = await self.cluster.call(node, api_key, fields)
        except KafkaError as exc:
            return {r: exc for r in group}
        return _alter_results(answer, group)

    async def _alter_by_replacing(
        self, node: int | None, group: list[ConfigResource], changes: Mapping[ConfigResource, Sequence[ConfigOp]], validate_only: bool
    ) -> dict[ConfigResource, KafkaError | None]:
        described = await self.describe_configs(group)
        results: dict[ConfigResource, KafkaError | None] = {}
        replacements: dict[ConfigResource, dict[str, str]] = {}
        for resource in group:
            current = described[resource]
            if current.error is not None:
                results[resource] = current.error
                continue
            try:
                replacements[resource] = _apply_ops(resource, current, changes[resource])
            except KafkaError as exc:
                results[resource] = exc
        if replacements:
            results.update(await self.alter_configs(replacements, validate_only=validate_only))
        return results

    # -- offsets and records -------------------------------------------------------------------------

    async def list_offsets(self, specs: Mapping[TopicPartition, int], *, isolation_level: int = 0) -> dict[TopicPartition, ListedOffset]:
        """The offset each partition's timestamp names: LATEST (-1), EARLIEST (-2),
        MAX_TIMESTAMP (-3), EARLIEST_LOCAL (-4), LATEST_TIERED (-5) or a timestamp in ms.
        One request per leader; the offset is -1 when no record matches a timestamp."""

        async def send(leader: int, partitions: list[TopicPartition]) -> dict[TopicPartition, ListedOffset]:
            at_least = max((_OFFSET_SPEC_VERSIONS.get(specs[tp], 1) for tp in partitions), default=1)
            if at_least > CLIENT_MAX_VERSIONS[LIST_OFFSETS]:
                error = KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"this offset spec needs ListOffsets v{at_least}, which kcli's client does not send")
                return {tp: ListedOffset(error=error) for tp in partitions}
            fields = {
                "replica_id": -1,
                "isolation_level": isolation_level,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": tp.partition, "timestamp": specs[tp], "current_leader_epoch": -1} for tp in tps]}
                    for topic, tps in _by_topic(partitions).items()
                ],
                "timeout": self.timeout_ms,
            }
            try:
                answer = await self.cluster.call(leader, LIST_OFFSETS, fields, at_least=at_least)
            except KafkaError as exc:
                return {tp: ListedOffset(error=exc) for tp in partitions}
            results = {}
            for topic in answer.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, int(p.partition_index))
                    code = error_code(p.error_code)
                    if code:
                        results[tp] = ListedOffset(error=failure(code))
                    else:
                        results[tp] = ListedOffset(int(p.offset), int(getattr(p, "timestamp", -1)), int(getattr(p, "leader_epoch", -1)))
            return results

        return await self._by_leader(list(specs), send, lambda error: ListedOffset(error=error))

    async def fetch_records(self, offsets: Mapping[TopicPartition, int], *, partition_max_bytes: int = 8 << 20) -> dict[TopicPartition, FetchedRecords]:
        """The batches from each partition's offset on, up to ``partition_max_bytes`` each (at least
        one whole batch, KIP-74), as its leader sends them: one Fetch per leader, as a consumer
        (replica id -1), read_uncommitted (every batch below the high watermark, control batches
        included), without waiting for data."""

        async def send(leader: int, partitions: list[TopicPartition]) -> dict[TopicPartition, FetchedRecords]:
            fields = fetch_request(
                {tp: FetchPosition(offsets[tp], -1, partition_max_bytes) for tp in partitions},
                max_wait_ms=0, min_bytes=0, max_bytes=max(FETCH_MAX_BYTES, partition_max_bytes),
            )
            try:
                answer = await self.cluster.call(leader, FETCH, fields, at_least=4)
            except KafkaError as exc:
                return {tp: FetchedRecords(error=exc) for tp in partitions}
            code = error_code(answer.error_code) if hasattr(answer, "error_code") else 0
            if code:
                return {tp: FetchedRecords(error=failure(code)) for tp in partitions}
            results = {}
            for topic in answer.responses:
                for p in topic.partitions:
                    tp = TopicPartition(topic.topic, int(p.partition_index))
                    code = error_code(p.error_code)
                    if code:
                        results[tp] = FetchedRecords(error=failure(code))
                    else:
                        results[tp] = FetchedRecords(bytes(p.records or b""), int(p.high_watermark), int(getattr(p, "log_start_offset", -1)))
            return results

        return await self._by_leader(list(offsets), send, lambda error: FetchedRecords(error=error))

    async def delete_records(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, DeletedRecords]:
        """Move each partition's log start offset up to the given offset (-1: the high watermark)."""

        async def send(leader: int, partitions: list[TopicPartition]) -> dict[TopicPartition, DeletedRecords]:
            fields = {
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": tp.partition, "offset": offsets[tp]} for tp in tps]}
                    for topic, tps in _by_topic(partitions).items()
                ],
                "timeout": self.timeout_ms,
            }
            try:
                answer = await self.cluster.call(leader, DELETE_RECORDS, fields)
            except KafkaError as exc:
                return {tp: DeletedRecords(error=exc) for tp in partitions}
            results = {}
            for topic in answer.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, int(p.partition_index))
                    code = error_code(p.error_code)
                    results[tp] = DeletedRecords(error=failure(code)) if code else DeletedRecords(int(p.low_watermark))
            return results

        return await self._by_leader(list(offsets), send, lambda error: DeletedRecords(error=error))

    # -- log dirs ------------------------------------------------------------------------------------

    async def describe_log_dirs(self, brokers: Iterable[int]) -> dict[int, dict[str, LogDirDescription] | KafkaError]:
        """Every log dir of each broker, with every partition in it (DescribeLogDirs with null
        topics, as Kafka's admin client asks), or the error asking that broker."""

        async def one(broker: int) -> dict[str, LogDirDescription] | KafkaError:
            try:
                answer = await self.cluster.call(broker, DESCRIBE_LOG_DIRS, {"topics": None})
            except KafkaError as exc:
                return exc
            dirs = {}
            for result in answer.results:
                replicas = {
                    TopicPartition(topic.name, int(p.partition_index)): ReplicaInfo(int(p.partition_size), int(p.offset_lag), bool(p.is_future_key))
                    for topic in result.topics
                    for p in topic.partitions
                }
                code = error_code(result.error_code)
                dirs[result.log_dir] = LogDirDescription(
                    ErrorCode.for_code(code) if code else None,
                    replicas,
                    int(getattr(result, "total_bytes", -1)),
                    int(getattr(result, "usable_bytes", -1)),
                )
            if not dirs:
                # Kafka's admin client: no dirs at all is the top-level error (v3+), or before v3
                # (no such field) a refused authorization.
                code = error_code(getattr(answer, "error_code", 0))
                return failure(code or ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            return dirs

        wanted = list(dict.fromkeys(brokers))
        return dict(zip(wanted, await asyncio.gather(*(one(broker) for broker in wanted))))

    # -- SCRAM credentials (KIP-554) -----------------------------------------------------------------

    async def describe_user_scram_credentials(self, users: Iterable[str] | None = None) -> dict[str, list[tuple[str, int]] | KafkaError]:
        """Each user's SCRAM mechanisms and iterations (every user with credentials when
        ``users`` is None); a user without any is RESOURCE_NOT_FOUND, as the broker answers."""
        from kcli.security.scram import MECHANISM_TYPES

        fields = {"users": None if users is None else [{"name": user} for user in users]}
        answer = await self.cluster.call(None, DESCRIBE_USER_SCRAM_CREDENTIALS, fields)
        code = error_code(answer.error_code)
        if code:
            raise failure(code, answer.error_message)
        results: dict[str, list[tuple[str, int]] | KafkaError] = {}
        for result in answer.results:
            code = error_code(result.error_code)
            if code:
                results[result.user] = failure(code, result.error_message)
            else:
                results[result.user] = [
                    (MECHANISM_TYPES[int(info.mechanism)].name if int(info.mechanism) in MECHANISM_TYPES else str(info.mechanism), int(info.iterations))
                    for info in result.credential_infos
                ]
        return results

    async def alter_user_scram_credentials(
        self, deletions: Iterable[tuple[str, str]] = (), upsertions: Iterable[tuple[str, str, int, str]] = ()
    ) -> dict[str, KafkaError | None]:
        """Delete ``(user, mechanism)`` credentials and set ``(user, mechanism, iterations,
        password)`` ones, as Kafka's admin client does: the salt is made here and only the salted
        password is sent. One result per user (None: done)."""
        from kcli.security import scram

        def mechanism_id(name: str) -> int:
            if name not in scram.MECHANISM_TYPE_IDS:
                raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {name}")
            return scram.MECHANISM_TYPE_IDS[name]

        upserting = []
        for user, mechanism, iterations, password in upsertions:
            salt = scram.new_salt()
            salted = scram.salted_password(scram.MECHANISMS[mechanism], password.encode(), salt, iterations) if mechanism in scram.MECHANISMS else b""
            upserting.append({"name": user, "mechanism": mechanism_id(mechanism), "iterations": iterations, "salt": salt, "salted_password": salted})
        fields = {
            "deletions": [{"name": user, "mechanism": mechanism_id(mechanism)} for user, mechanism in deletions],
            "upsertions": upserting,
        }
        answer = await self.cluster.call(None, ALTER_USER_SCRAM_CREDENTIALS, fields)
        return {result.user: (failure(error_code(result.error_code), result.error_message) if error_code(result.error_code) else None) for result in answer.results}

    # -- cluster -------------------------------------------------------------------------------------

    async def describe_cluster(self) -> ClusterDescription:
        """The cluster id, the controller and the live brokers (DescribeCluster, or Metadata on
        brokers without it)."""
        connection = await self.cluster.any_connection()
        if DESCRIBE_CLUSTER in connection.versions:
            answer = await connection.call(DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False, "endpoint_type": 1}, timeout=self.cluster.request_timeout)
            code = error_code(answer.error_code)
            if code:
                raise failure(code, answer.error_message)
            nodes = {int(b.broker_id): Node(int(b.broker_id), b.host, int(b.port), b.rack) for b in answer.brokers}
            return ClusterDescription(answer.cluster_id, int(answer.controller_id), nodes)
        metadata = await self.cluster.retrying(lambda: self.cluster.refresh([]))
        return ClusterDescription(metadata.cluster_id, metadata.controller_id, dict(metadata.brokers))

    async def broker_api_versions(self) -> list[BrokerVersions]:
        """Every live broker's API version ranges, as its ApiVersions answer gave them (see
        ``usable_version`` for the version kcli uses of each)."""
        metadata = await self.cluster.retrying(lambda: self.cluster.refresh([]))

        async def one(node: Node) -> BrokerVersions:
            try:
                connection = await self.cluster.connection(node.node_id)
            except KafkaError as exc:
                return BrokerVersions(node, None, exc)
            return BrokerVersions(node, dict(connection.versions))

        return list(await asyncio.gather(*(one(node) for node in metadata.brokers.values())))

    async def describe_features(self) -> FeatureMetadata:
        """The feature flags of some broker, from its ApiVersions answer (Kafka's describeFeatures
        asks the least loaded node)."""
        connection = await self.cluster.any_connection()
        return connection.features

    # -- plumbing ------------------------------------------------------------------------------------

    async def _controller(self) -> int | None:
        metadata = self.cluster.metadata
        if metadata.controller_id < 0 or metadata.controller_id not in metadata.brokers:
            metadata = await self.cluster.refresh([])
        controller = metadata.controller_id
        return controller if controller >= 0 and controller in metadata.brokers else None

    async def _rounds(self, items: list[K], attempt: Callable[[list[K]], Awaitable[dict[K, R]]], retry: Callable[[R], bool]) -> dict[K, R]:
        """``attempt`` the pending items until none fails retriably or the retries are spent;
        metadata is refreshed before each new round."""
        results: dict[K, R] = {}
        pending = items
        backoff = self.cluster.retry_backoff
        for tries in range(self.cluster.retries + 1):
            try:
                answered = await attempt(pending)
            except KafkaError as exc:
                if not _retriable(exc) or tries == self.cluster.retries:
                    raise
                answered = {}
            results.update(answered)
            pending = [k for k in pending if k not in answered or retry(answered[k])]
            if not pending or tries == self.cluster.retries:
                break
            await asyncio.sleep(backoff * (0.8 + 0.4 * random.random()))
            backoff = min(backoff * 2, self.cluster.retry_backoff_max)
            try:
                await self.cluster.refresh([])
            except KafkaError:
                pass
        return results

    async def _by_resource_node(self, resources: list[ConfigResource], send: Callable[[int | None, list[ConfigResource]], Awaitable[dict[ConfigResource, R]]]) -> dict[ConfigResource, R]:
        """Broker and broker-logger resources of one broker go to that broker; the rest, together,
        to any broker."""
        groups: dict[int | None, list[ConfigResource]] = {}
        for resource in resources:
            groups.setdefault(_node_for(resource), []).append(resource)
        answers = await asyncio.gather(*(send(node, group) for node, group in groups.items()))
        results: dict[ConfigResource, R] = {}
        for answer in answers:
            results.update(answer)
        return {r: results[r] for r in resources}

    async def _by_leader(
        self,
        partitions: list[TopicPartition],
        send: Callable[[int, list[TopicPartition]], Awaitable[dict[TopicPartition, R]]],
        failed: Callable[[KafkaError], R],
    ) -> dict[TopicPartition, R]:
        if not partitions:
            return {}

        async def attempt(pending: list[TopicPartition]) -> dict[TopicPartition, R]:
            topics = sorted({tp.topic for tp in pending})
            metadata = await self.cluster.refresh(topics)
            results: dict[TopicPartition, R] = {}
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in pending:
                info = metadata.topics.get(tp.topic)
                if info is None or info.error:
                    code = info.error if info is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    results[tp] = failed(failure(code))
                    continue
                partition = info.partitions.get(tp.partition)
                if partition is None:
                    results[tp] = failed(failure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{tp.topic}' has no partition {tp.partition}"))
                elif partition.leader < 0 or partition.leader not in metadata.brokers:
                    results[tp] = failed(failure(ErrorCode.LEADER_NOT_AVAILABLE, f"partition {tp} has no leader"))
                else:
                    by_leader.setdefault(partition.leader, []).append(tp)
            answers = await asyncio.gather(*(send(leader, tps) for leader, tps in by_leader.items()))
            for leader_tps, answer in zip(by_leader.values(), answers):
                for tp in leader_tps:
                    results[tp] = answer.get(tp) or failed(failure(ErrorCode.UNKNOWN_SERVER_ERROR, f"the broker did not answer for partition {tp}"))
            return results

        results = await self._rounds(list(dict.fromkeys(partitions)), attempt, lambda r: _retriable(getattr(r, "error", None)))
        return {tp: results[tp] for tp in partitions}


def usable_version(api_key: int, broker_min: int, broker_max: int) -> int | str:
    """The version of ``api_key`` kcli uses with a broker serving ``broker_min``..``broker_max``:
    the highest version both speak, capped by ``CLIENT_MAX_VERSIONS`` for the APIs kcli's client
    sends and by the highest version kcli's protocol layer knows for the others (the counterpart
    of the Java client's latest version). When there is none, why: "node too new" (the broker's
    lowest version is above kcli's highest), "node too old" (the broker's highest is below kcli's
    lowest) or "unknown to kcli" (kcli knows no version of the API)."""
    known = messages.known_versions(api_key)
    if not known:
        return "unknown to kcli"
    cap = CLIENT_MAX_VERSIONS.get(api_key, known[-1])
    usable = [v for v in known if v <= cap and broker_min <= v <= broker_max]
    if usable:
        return usable[-1]
    return "node too new" if broker_min > cap else "node too old"


def _retriable(error: KafkaError | None) -> bool:
    return error is not None and error.error_code in _RETRY_ITEM


def _node_for(resource: ConfigResource) -> int | None:
    if resource.type in (BROKER, BROKER_LOGGER) and resource.name.lstrip("-").isdigit():
        return int(resource.name)
    return None


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[TopicPartition]]:
    grouped: dict[str, list[TopicPartition]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp)
    return grouped


def _creatable(topic: NewTopic) -> dict[str, Any]:
    if topic.assignments is not None:
        assignments = [{"partition_index": p, "broker_ids": list(brokers)} for p, brokers in topic.assignments.items()]
        partitions, replication = -1, -1
    else:
        assignments, partitions, replication = [], topic.num_partitions, topic.replication_factor
    return {
        "name": topic.name,
        "num_partitions": partitions,
        "replication_factor": replication,
        "assignments": assignments,
        "configs": [{"name": k, "value": v} for k, v in topic.configs.items()],
    }


def _config_entry(item: Any) -> ConfigEntry:
    source = getattr(item, "config_source", None)
    if source is None or int(source) < 0:
        # Version 0 answers carry only is_default.
        source = ConfigSource.DEFAULT_CONFIG if getattr(item, "is_default", False) else ConfigSource.UNKNOWN
    return ConfigEntry(
        item.name,
        item.value,
        ConfigSource.of(int(source)),
        bool(item.read_only),
        bool(item.is_sensitive),
        tuple(ConfigSynonym(s.name, s.value, ConfigSource.of(int(s.source))) for s in getattr(item, "synonyms", ())),
        int(getattr(item, "config_type", 0)),
        getattr(item, "documentation", None),
    )


def _alter_results(answer: Any, group: list[ConfigResource]) -> dict[ConfigResource, KafkaError | None]:
    results: dict[ConfigResource, KafkaError | None] = {}
    for item in answer.responses:
        results[ConfigResource(int(item.resource_type), item.resource_name)] = _error_of(item)
    for resource in group:
        results.setdefault(resource, failure(ErrorCode.UNKNOWN_SERVER_ERROR, "the broker did not answer for this resource"))
    return results


_DYNAMIC_SOURCES = {
    TOPIC: {ConfigSource.DYNAMIC_TOPIC_CONFIG},
    BROKER: {ConfigSource.DYNAMIC_BROKER_CONFIG},
    BROKER_LOGGER: set(ConfigSource),
}


def _apply_ops(resource: ConfigResource, current: ConfigResult, ops: Sequence[ConfigOp]) -> dict[str, str]:
    """The whole dynamic config set of ``resource`` after ``ops``, for AlterConfigs."""
    if resource.type == BROKER and not resource.name:
        sources = {ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG}
    else:
        sources = _DYNAMIC_SOURCES.get(resource.type, {ConfigSource.DYNAMIC_TOPIC_CONFIG})
    dynamic = {e.name: e for e in current.entries if e.source in sources}
    result: dict[str, str | None] = {name: e.value for name, e in dynamic.items()}
    for op in ops:
        if op.op is AlterOp.SET:
            result[op.name] = op.value
        elif op.op is AlterOp.DELETE:
            result.pop(op.name, None)
        else:
            entry = current.get(op.name)
            items = [i for i in ((result.get(op.name) if op.name in result else (entry.value if entry else None)) or "").split(",") if i]
            given = [i for i in (op.value or "").split(",") if i]
            if op.op is AlterOp.APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            result[op.name] = ",".join(items)
    hidden = sorted(name for name, value in result.items() if value is None)
    if hidden:
        raise KafkaError(
            ErrorCode.INVALID_CONFIG,
            f"the broker hides the value of sensitive config(s) {', '.join(hidden)} and lacks IncrementalAlterConfigs, "
            "so they would be lost: set them too",
        )
    return {k: v for k, v in result.items() if v is not None}
