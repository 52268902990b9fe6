"""The broker's configuration: Kafka 3.9's KafkaConfig catalog and its precedence rules.

``BROKER_CONFIG_DEF`` holds every key a Kafka 3.9 broker defines, with Kafka's name, type,
default, validator and importance (the docs are one line each). ``update_mode`` says whether a
key can be changed while the broker runs, as Kafka's DynamicBrokerConfig decides: read-only,
per-broker or cluster-wide.

``BrokerConfig`` is one broker's effective configuration. It is built from the static
properties (``server.properties`` plus ``--override``), optionally overlaid with the dynamic
cluster-default and per-broker configs, and applies Kafka's precedence: ``log.retention.ms`` over
``.minutes`` over ``.hours``, ``log.roll.ms`` over ``.hours``, ``log.dirs`` over ``log.dir``,
``advertised.listeners`` falling back to ``listeners``, and ``broker.id``/``node.id`` standing in
for each other. An invalid value raises KafkaError(INVALID_CONFIG) whose one-line message names
the key.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kcli.config import (
    DOUBLE_MAX,
    INT_MAX,
    LONG_MAX,
    Check,
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    NonEmptyString,
    Validator,
    at_least,
    between,
    list_of,
    one_of,
    parse_override,
    read_properties,
    render_value,
)
from kcli.errors import ErrorCode, KafkaError
from kcli.storage.log_config import TOPIC_BROKER_SYNONYMS, LogConfig, metadata_version_problem, topic_properties_from_broker

_B, _S, _I, _SH, _L, _D, _LI, _C, _P = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.CLASS,
    ConfigType.PASSWORD,
)
_HIGH, _MEDIUM, _LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
LATEST_METADATA_VERSION = "3.9-IV0"


class UpdateMode(enum.Enum):
    """Whether a broker key can change at run time (the "Update Mode" of Kafka's broker docs)."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


def _k(
    name: str,
    config_type: ConfigType,
    default: Any,
    importance: Importance,
    doc: str,
    validator: Validator | None = None,
    *,
    internal: bool = False,
) -> ConfigKey:
    return ConfigKey(name, config_type, default, doc, validator, importance, internal=internal)


def _gzip_level_problem(level: int) -> str | None:
    if level > 9 or (level < 1 and level != -1):
        return "Value must be between 1 and 9 or equal to -1"
    return None


def _thread_pool_size_problem(size: int) -> str | None:
    return "Value can be -1 or greater than 0" if size < -1 or size == 0 else None


class _QuorumVoters(Validator):
    """``{id}@{host}:{port}`` entries; Kafka's message names the config but not the value."""

    def check(self, name: str, value: Any) -> None:
        for entry in value:
            parts = entry.split("@")
            if len(parts) != 2 or not parts[0].strip().lstrip("-").isdigit():
                raise KafkaError(
                    ErrorCode.INVALID_CONFIG,
                    f"Invalid configuration value for {name}. Each entry should be in the form `{{id}}@{{host}}:{{port}}`.",
                )
            if _HOST_PORT.match(parts[1]) is None:
                raise KafkaError(
                    ErrorCode.INVALID_CONFIG,
                    f"Failed to parse host name from entry {entry} for the configuration {name}. "
                    "Each entry should be in the form `{id}@{host}:{port}`.",
                )

    def __str__(self) -> str:
        return "non-empty list"


class _QuorumBootstrapServers(Validator):
    def check(self, name: str, value: Any) -> None:
        for entry in value:
            if _HOST_PORT.match(entry) is None:
                raise KafkaError(
                    ErrorCode.INVALID_CONFIG,
                    f"Failed to parse host name from {entry} for the configuration {name}. "
                    'Each entry should be in the form "{host}:{port}"',
                )

    def __str__(self) -> str:
        return "non-empty list"


_HOST_PORT = re.compile(r"^(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)")
_GZIP_LEVEL = Check(_gzip_level_problem, "[1,...,9] or -1")
_POOL_SIZE = Check(_thread_pool_size_problem, "-1 or [1,...]")
_METADATA_VERSION = Check(metadata_version_problem, "a metadata version such as 3.9-IV0")
_COMPRESSION_TYPES = one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_DEFAULT_ASSIGNORS = (
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
)

# fmt: off
_CATALOG: tuple[ConfigKey, ...] = (
    # -- identity, roles and listeners
    _k("broker.id", _I, -1, _HIGH, "Id of this broker; -1 leaves it to node.id (or to ZooKeeper's generator)."),
    _k("node.id", _I, -1, _HIGH, "Id of this node in KRaft mode; stands in for broker.id when only one is set."),
    _k("broker.id.generation.enable", _B, True, _MEDIUM, "Let ZooKeeper mode generate a broker id when none is configured."),
    _k("reserved.broker.max.id", _I, 1000, _MEDIUM, "Highest id a configured broker.id may use; generated ids start above it.", at_least(0)),
    _k("broker.rack", _S, None, _MEDIUM, "Rack (or zone) of this broker, used for rack-aware replica placement."),
    _k("process.roles", _LI, (), _HIGH, "KRaft roles of this process: broker, controller, or both; empty means ZooKeeper mode.", list_of("broker", "controller")),
    _k("listeners", _S, "PLAINTEXT://:9092", _HIGH, "Comma-separated NAME://host:port addresses the broker accepts connections on."),
    _k("advertised.listeners", _S, None, _HIGH, "Addresses handed to clients in metadata; when unset the listeners are advertised."),
    _k("listener.security.protocol.map", _S, DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP, _LOW, "Listener name to security protocol pairs, NAME:PROTOCOL separated by commas."),
    _k("inter.broker.listener.name", _S, None, _MEDIUM, "Listener brokers use to talk to each other; defaults to security.inter.broker.protocol's."),
    _k("security.inter.broker.protocol", _S, "PLAINTEXT", _MEDIUM, "Security protocol between brokers when inter.broker.listener.name is not set.", one_of(*SECURITY_PROTOCOLS)),
    _k("control.plane.listener.name", _S, None, _HIGH, "Listener dedicated to controller-to-broker traffic in ZooKeeper mode."),
    _k("controller.listener.names", _S, None, _HIGH, "Listener names used by the KRaft controller; required in KRaft mode."),
    _k("early.start.listeners", _S, None, _HIGH, "Listeners that may start before the authorizer has loaded."),
    _k("inter.broker.protocol.version", _S, LATEST_METADATA_VERSION, _MEDIUM, "Version of the inter-broker protocol this broker speaks.", _METADATA_VERSION),
    # -- network and request handling
    _k("num.network.threads", _I, 3, _HIGH, "Threads per listener that read requests and write responses.", at_least(1)),
    _k("num.io.threads", _I, 8, _HIGH, "Threads that process requests, including disk I/O.", at_least(1)),
    _k("background.threads", _I, 10, _HIGH, "Threads for background work such as deleting files.", at_least(1)),
    _k("queued.max.requests", _I, 500, _HIGH, "Requests that may wait for an I/O thread before the network threads stop reading.", at_least(1)),
    _k("queued.max.request.bytes", _L, -1, _MEDIUM, "Bytes of queued requests allowed before reading stops; -1 means no limit."),
    _k("socket.send.buffer.bytes", _I, 102400, _HIGH, "SO_SNDBUF of server sockets; -1 uses the operating system's default."),
    _k("socket.receive.buffer.bytes", _I, 102400, _HIGH, "SO_RCVBUF of server sockets; -1 uses the operating system's default."),
    _k("socket.request.max.bytes", _I, 104857600, _HIGH, "Largest request the broker accepts, in bytes.", at_least(1)),
    _k("socket.listen.backlog.size", _I, 50, _MEDIUM, "Pending-connection backlog of each listening socket.", at_least(1)),
    _k("socket.connection.setup.timeout.ms", _L, 10000, _MEDIUM, "First wait for an outgoing connection to be established."),
    _k("socket.connection.setup.timeout.max.ms", _L, 30000, _MEDIUM, "Longest wait for an outgoing connection after exponential backoff."),
    _k("connections.max.idle.ms", _L, 600000, _MEDIUM, "Idle connections are closed after this many milliseconds."),
    _k("connection.failed.authentication.delay.ms", _I, 100, _LOW, "Delay before closing a connection whose authentication failed.", at_least(0)),
    _k("max.connections", _I, INT_MAX, _MEDIUM, "Most connections the broker accepts at once, over all listeners.", at_least(0)),
    _k("max.connections.per.ip", _I, INT_MAX, _MEDIUM, "Most connections accepted from one IP address.", at_least(0)),
    _k("max.connections.per.ip.overrides", _S, "", _MEDIUM, "Per-host or per-IP exceptions to max.connections.per.ip, host:count pairs."),
    _k("max.connection.creation.rate", _I, INT_MAX, _MEDIUM, "Most new connections accepted per second.", at_least(0)),
    _k("request.timeout.ms", _I, 30000, _HIGH, "How long the broker's own clients wait for a response."),
    _k("max.request.partition.size.limit", _I, 2000, _MEDIUM, "Most partitions one request may name.", at_least(1)),
    _k("message.max.bytes", _I, 1048588, _HIGH, "Largest record batch accepted; topics override it with max.message.bytes.", at_least(0)),
    _k("fetch.max.bytes", _I, 57671680, _MEDIUM, "Most bytes one fetch response carries.", at_least(1024)),
    _k("max.incremental.fetch.session.cache.slots", _I, 1000, _MEDIUM, "Incremental fetch sessions the broker keeps.", at_least(0)),
    # -- topics and logs
    _k("num.partitions", _I, 1, _MEDIUM, "Partitions of a topic created without a partition count.", at_least(1)),
    _k("default.replication.factor", _I, 1, _MEDIUM, "Replication factor of a topic created without one."),
    _k("auto.create.topics.enable", _B, True, _HIGH, "Create a topic when a client asks for one that does not exist."),
    _k("delete.topic.enable", _B, True, _HIGH, "Allow topics to be deleted."),
    _k("log.dir", _S, "/tmp/kafka-logs", _HIGH, "Data directory used when log.dirs is not set."),
    _k("log.dirs", _S, None, _HIGH, "Comma-separated data directories; when unset, log.dir is used."),
    _k("log.segment.bytes", _I, 1073741824, _HIGH, "Size at which a log segment is rolled.", at_least(14)),
    _k("log.roll.ms", _L, None, _HIGH, "Age at which a segment is rolled, in ms; when unset log.roll.hours applies."),
    _k("log.roll.hours", _I, 168, _HIGH, "Age at which a segment is rolled, in hours; below log.roll.ms.", at_least(1)),
    _k("log.roll.jitter.ms", _L, None, _HIGH, "Most random time taken off the roll age, in ms; when unset the hours key applies."),
    _k("log.roll.jitter.hours", _I, 0, _HIGH, "Most random time taken off the roll age, in hours.", at_least(0)),
    _k("log.retention.ms", _L, None, _HIGH, "How long segments are kept, in ms (-1: forever); above the minutes and hours keys."),
    _k("log.retention.minutes", _I, None, _HIGH, "How long segments are kept, in minutes; used when log.retention.ms is unset."),
    _k("log.retention.hours", _I, 168, _HIGH, "How long segments are kept, in hours; the last of the three retention keys."),
    _k("log.retention.bytes", _L, -1, _HIGH, "Size a partition may reach before old segments go; -1 means no limit."),
    _k("log.retention.check.interval.ms", _L, 300000, _MEDIUM, "How often segments are checked for deletion.", at_least(1)),
    _k("log.cleanup.policy", _LI, "delete", _MEDIUM, "What happens to old segments: delete, compact, or both.", list_of("compact", "delete")),
    _k("log.index.size.max.bytes", _I, 10485760, _MEDIUM, "Largest offset index file.", at_least(4)),
    _k("log.index.interval.bytes", _I, 4096, _MEDIUM, "Bytes appended between two index entries.", at_least(0)),
    _k("log.flush.interval.messages", _L, LONG_MAX, _HIGH, "Messages appended to a partition before it is flushed.", at_least(1)),
    _k("log.flush.interval.ms", _L, None, _HIGH, "Longest time data stays unflushed; when unset log.flush.scheduler.interval.ms applies."),
    _k("log.flush.scheduler.interval.ms", _L, LONG_MAX, _HIGH, "How often the flusher looks for logs to flush."),
    _k("log.flush.offset.checkpoint.interval.ms", _I, 60000, _HIGH, "How often the recovery-point checkpoint is written.", at_least(0)),
    _k("log.flush.start.offset.checkpoint.interval.ms", _I, 60000, _HIGH, "How often the log-start-offset checkpoint is written.", at_least(0)),
    _k("log.segment.delete.delay.ms", _L, 60000, _HIGH, "Wait before a deleted segment's files are removed from disk.", at_least(0)),
    _k("log.preallocate", _B, False, _MEDIUM, "Preallocate segment files when they are created."),
    _k("log.message.format.version", _S, "3.0-IV1", _MEDIUM, "Deprecated record format version; ignored from 3.0 on.", _METADATA_VERSION),
    _k("log.message.timestamp.type", _S, "CreateTime", _MEDIUM, "Whether record timestamps come from the producer or the append time.", one_of("CreateTime", "LogAppendTime")),
    _k("log.message.timestamp.difference.max.ms", _L, LONG_MAX, _MEDIUM, "Deprecated: largest gap between a CreateTime and the broker clock.", at_least(0)),
    _k("log.message.timestamp.before.max.ms", _L, LONG_MAX, _MEDIUM, "How far in the past a CreateTime may be.", at_least(0)),
    _k("log.message.timestamp.after.max.ms", _L, LONG_MAX, _MEDIUM, "How far in the future a CreateTime may be.", at_least(0)),
    _k("log.message.downconversion.enable", _B, True, _LOW, "Convert records to old formats for old consumers."),
    _k("log.dir.failure.timeout.ms", _L, 30000, _LOW, "Wait for the controller to learn of a failed log dir before shutting down.", at_least(1)),
    _k("log.initial.task.delay.ms", _L, 30000, _LOW, "Delay before the first retention and flush tasks run.", at_least(0), internal=True),
    _k("log.local.retention.ms", _L, -2, _MEDIUM, "Local retention of tiered topics, in ms; -2 means use log.retention.ms.", at_least(-2)),
    _k("log.local.retention.bytes", _L, -2, _MEDIUM, "Local retention of tiered topics, in bytes; -2 means use log.retention.bytes.", at_least(-2)),
    _k("num.recovery.threads.per.data.dir", _I, 1, _HIGH, "Threads per data directory that recover and flush logs.", at_least(1)),
    _k("min.insync.replicas", _I, 1, _HIGH, "In-sync replicas an acks=all write needs.", at_least(1)),
    _k("unclean.leader.election.enable", _B, False, _HIGH, "Allow an out-of-sync replica to become leader, losing data."),
    _k("compression.type", _S, "producer", _HIGH, "Compression of stored batches; producer keeps what the producer used.", _COMPRESSION_TYPES),
    _k("compression.gzip.level", _I, -1, _MEDIUM, "Level used when compression.type is gzip.", _GZIP_LEVEL),
    _k("compression.lz4.level", _I, 9, _MEDIUM, "Level used when compression.type is lz4.", between(1, 17)),
    _k("compression.zstd.level", _I, 3, _MEDIUM, "Level used when compression.type is zstd.", between(-131072, 22)),
    _k("create.topic.policy.class.name", _C, None, _LOW, "Policy class that vets CreateTopics requests."),
    _k("alter.config.policy.class.name", _C, None, _LOW, "Policy class that vets AlterConfigs requests."),
    # -- log cleaner
    _k("log.cleaner.enable", _B, True, _MEDIUM, "Run the log cleaner that compacts compacted topics."),
    _k("log.cleaner.threads", _I, 1, _MEDIUM, "Threads that compact logs.", at_least(0)),
    _k("log.cleaner.dedupe.buffer.size", _L, 134217728, _MEDIUM, "Memory for key deduplication, shared by all cleaner threads."),
    _k("log.cleaner.io.buffer.size", _I, 524288, _MEDIUM, "I/O buffer memory shared by all cleaner threads.", at_least(0)),
    _k("log.cleaner.io.buffer.load.factor", _D, 0.9, _MEDIUM, "How full the dedupe buffer may get."),
    _k("log.cleaner.io.max.bytes.per.second", _D, DOUBLE_MAX, _MEDIUM, "Cleaner read plus write throughput cap."),
    _k("log.cleaner.backoff.ms", _L, 15000, _MEDIUM, "Sleep of a cleaner thread that found nothing to clean.", at_least(0)),
    _k("log.cleaner.min.cleanable.ratio", _D, 0.5, _MEDIUM, "Dirty share of a log at which it becomes eligible for cleaning.", between(0, 1)),
    _k("log.cleaner.min.compaction.lag.ms", _L, 0, _MEDIUM, "Youngest age a record must reach before it can be compacted.", at_least(0)),
    _k("log.cleaner.max.compaction.lag.ms", _L, LONG_MAX, _MEDIUM, "Age at which a record must become eligible for compaction.", at_least(1)),
    _k("log.cleaner.delete.retention.ms", _L, 86400000, _MEDIUM, "How long tombstones are kept in compacted topics.", at_least(0)),
    # -- replication
    _k("replica.lag.time.max.ms", _L, 30000, _HIGH, "A follower that has not caught up for this long leaves the ISR."),
    _k("replica.socket.timeout.ms", _I, 30000, _HIGH, "Socket timeout of follower fetch connections."),
    _k("replica.socket.receive.buffer.bytes", _I, 65536, _HIGH, "Receive buffer of follower fetch connections."),
    _k("replica.fetch.max.bytes", _I, 1048576, _MEDIUM, "Bytes a follower fetches per partition per request.", at_least(0)),
    _k("replica.fetch.wait.max.ms", _I, 500, _HIGH, "Longest wait of a follower fetch for data."),
    _k("replica.fetch.min.bytes", _I, 1, _HIGH, "Least data a follower fetch waits for."),
    _k("replica.fetch.backoff.ms", _I, 1000, _MEDIUM, "Pause after a follower fetch error.", at_least(0)),
    _k("replica.fetch.response.max.bytes", _I, 10485760, _MEDIUM, "Most bytes of one follower fetch response.", at_least(0)),
    _k("num.replica.fetchers", _I, 1, _HIGH, "Fetcher threads per source broker."),
    _k("num.replica.alter.log.dirs.threads", _I, None, _HIGH, "Threads that move replicas between log dirs; defaults to one per dir."),
    _k("replica.high.watermark.checkpoint.interval.ms", _L, 5000, _HIGH, "How often high watermarks are checkpointed."),
    _k("replica.selector.class", _S, None, _MEDIUM, "Class choosing which replica a consumer fetches from."),
    _k("fetch.purgatory.purge.interval.requests", _I, 1000, _MEDIUM, "Purge interval, in requests, of the fetch purgatory."),
    _k("producer.purgatory.purge.interval.requests", _I, 1000, _MEDIUM, "Purge interval, in requests, of the produce purgatory."),
    _k("delete.records.purgatory.purge.interval.requests", _I, 1, _MEDIUM, "Purge interval, in requests, of the delete-records purgatory."),
    _k("auto.leader.rebalance.enable", _B, True, _HIGH, "Move leadership back to preferred replicas when it drifts."),
    _k("leader.imbalance.per.broker.percentage", _I, 10, _HIGH, "Leader imbalance, in percent, that triggers a rebalance."),
    _k("leader.imbalance.check.interval.seconds", _L, 300, _HIGH, "How often leader balance is checked.", at_least(1)),
    _k("unclean.leader.election.interval.ms", _L, 300000, _MEDIUM, "How often the controller tries unclean elections.", at_least(1), internal=True),
    _k("controller.socket.timeout.ms", _I, 30000, _MEDIUM, "Socket timeout of controller-to-broker connections."),
    _k("controlled.shutdown.enable", _B, True, _MEDIUM, "Move leadership away before shutting down."),
    _k("controlled.shutdown.max.retries", _I, 3, _MEDIUM, "Attempts at a controlled shutdown."),
    _k("controlled.shutdown.retry.backoff.ms", _L, 5000, _MEDIUM, "Pause between controlled shutdown attempts."),
    # -- group coordinator and offsets
    _k("group.initial.rebalance.delay.ms", _I, 3000, _MEDIUM, "Wait for more members before the first rebalance of a new group."),
    _k("group.min.session.timeout.ms", _I, 6000, _MEDIUM, "Shortest session timeout a classic group member may ask for."),
    _k("group.max.session.timeout.ms", _I, 1800000, _MEDIUM, "Longest session timeout a classic group member may ask for."),
    _k("group.max.size", _I, INT_MAX, _MEDIUM, "Most members of one classic group.", at_least(1)),
    _k("group.coordinator.rebalance.protocols", _LI, "classic", _MEDIUM, "Rebalance protocols the group coordinator offers.", list_of("consumer", "classic", "share", "unknown")),
    _k("group.coordinator.threads", _I, 1, _MEDIUM, "Threads of the new group coordinator.", at_least(1)),
    _k("group.coordinator.append.linger.ms", _I, 10, _MEDIUM, "Wait for more coordinator records before writing a batch.", at_least(0)),
    _k("group.coordinator.new.enable", _B, False, _MEDIUM, "Run the new group coordinator.", internal=True),
    _k("group.consumer.session.timeout.ms", _I, 45000, _MEDIUM, "Session timeout of consumer-protocol group members.", at_least(1)),
    _k("group.consumer.min.session.timeout.ms", _I, 45000, _MEDIUM, "Shortest consumer-protocol session timeout.", at_least(1)),
    _k("group.consumer.max.session.timeout.ms", _I, 60000, _MEDIUM, "Longest consumer-protocol session timeout.", at_least(1)),
    _k("group.consumer.heartbeat.interval.ms", _I, 5000, _MEDIUM, "Heartbeat interval of consumer-protocol members.", at_least(1)),
    _k("group.consumer.min.heartbeat.interval.ms", _I, 5000, _MEDIUM, "Shortest consumer-protocol heartbeat interval.", at_least(1)),
    _k("group.consumer.max.heartbeat.interval.ms", _I, 15000, _MEDIUM, "Longest consumer-protocol heartbeat interval.", at_least(1)),
    _k("group.consumer.max.size", _I, INT_MAX, _MEDIUM, "Most members of one consumer-protocol group.", at_least(1)),
    _k("group.consumer.assignors", _LI, _DEFAULT_ASSIGNORS, _MEDIUM, "Server-side assignors of consumer-protocol groups; the first is the default."),
    _k("group.consumer.migration.policy", _S, "disabled", _MEDIUM, "When classic and consumer groups convert into each other.", one_of("bidirectional", "upgrade", "downgrade", "disabled", case_insensitive=True), internal=True),
    _k("group.share.enable", _B, False, _MEDIUM, "Enable share groups (early access).", internal=True),
    _k("group.share.session.timeout.ms", _I, 45000, _MEDIUM, "Session timeout of share group members.", at_least(1)),
    _k("group.share.min.session.timeout.ms", _I, 45000, _MEDIUM, "Shortest share group session timeout.", at_least(1)),
    _k("group.share.max.session.timeout.ms", _I, 60000, _MEDIUM, "Longest share group session timeout.", at_least(1)),
    _k("group.share.heartbeat.interval.ms", _I, 5000, _MEDIUM, "Heartbeat interval of share group members.", at_least(1)),
    _k("group.share.min.heartbeat.interval.ms", _I, 5000, _MEDIUM, "Shortest share group heartbeat interval.", at_least(1)),
    _k("group.share.max.heartbeat.interval.ms", _I, 15000, _MEDIUM, "Longest share group heartbeat interval.", at_least(1)),
    _k("group.share.max.size", _SH, 200, _MEDIUM, "Most members of one share group.", between(10, 1000)),
    _k("group.share.delivery.count.limit", _I, 5, _MEDIUM, "Deliveries of a record to share consumers before it is given up.", between(2, 10)),
    _k("group.share.record.lock.duration.ms", _I, 30000, _MEDIUM, "How long a share consumer holds a record.", between(1000, 60000)),
    _k("group.share.min.record.lock.duration.ms", _I, 15000, _MEDIUM, "Shortest record lock a share group may use.", between(1000, 30000)),
    _k("group.share.max.record.lock.duration.ms", _I, 60000, _MEDIUM, "Longest record lock a share group may use.", between(30000, 3600000)),
    _k("group.share.max.groups", _SH, 10, _MEDIUM, "Most share groups.", between(1, 100)),
    _k("group.share.partition.max.record.locks", _I, 200, _MEDIUM, "Most records locked at once per share partition.", between(100, 10000)),
    _k("offsets.topic.num.partitions", _I, 50, _HIGH, "Partitions of __consumer_offsets.", at_least(1)),
    _k("offsets.topic.replication.factor", _SH, 3, _HIGH, "Replication factor of __consumer_offsets.", at_least(1)),
    _k("offsets.topic.segment.bytes", _I, 104857600, _HIGH, "Segment size of __consumer_offsets.", at_least(1)),
    _k("offsets.topic.compression.codec", _I, 0, _HIGH, "Compression codec id of __consumer_offsets writes (0: none)."),
    _k("offsets.load.buffer.size", _I, 5242880, _HIGH, "Read size used when loading offsets into the cache.", at_least(1)),
    _k("offsets.retention.minutes", _I, 10080, _HIGH, "How long committed offsets of an empty group are kept.", at_least(1)),
    _k("offsets.retention.check.interval.ms", _L, 600000, _HIGH, "How often stale offsets are looked for.", at_least(1)),
    _k("offsets.commit.timeout.ms", _I, 5000, _HIGH, "Wait for an offset commit to be replicated.", at_least(1)),
    _k("offsets.commit.required.acks", _SH, -1, _HIGH, "Deprecated: acks needed before an offset commit is accepted."),
    _k("offset.metadata.max.bytes", _I, 4096, _HIGH, "Largest metadata string stored with a committed offset."),
    # -- transactions and producer ids
    _k("transaction.state.log.num.partitions", _I, 50, _HIGH, "Partitions of __transaction_state.", at_least(1)),
    _k("transaction.state.log.replication.factor", _SH, 3, _HIGH, "Replication factor of __transaction_state.", at_least(1)),
    _k("transaction.state.log.segment.bytes", _I, 104857600, _HIGH, "Segment size of __transaction_state.", at_least(1)),
    _k("transaction.state.log.min.isr", _I, 2, _HIGH, "min.insync.replicas of __transaction_state.", at_least(1)),
    _k("transaction.state.log.load.buffer.size", _I, 5242880, _HIGH, "Read size used when loading transaction state.", at_least(1)),
    _k("transaction.max.timeout.ms", _I, 900000, _HIGH, "Longest transaction timeout a producer may ask for.", at_least(1)),
    _k("transactional.id.expiration.ms", _I, 604800000, _HIGH, "Idle time after which a transactional id is forgotten.", at_least(1)),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", _I, 10000, _LOW, "How often timed-out transactions are aborted.", at_least(1)),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", _I, 3600000, _LOW, "How often expired transactional ids are removed.", at_least(1)),
    _k("transaction.partition.verification.enable", _B, True, _LOW, "Check that a partition is in the transaction before a transactional write."),
    _k("producer.id.expiration.ms", _I, 86400000, _LOW, "Idle time after which a producer id's state is dropped.", at_least(1)),
    _k("producer.id.expiration.check.interval.ms", _I, 600000, _LOW, "How often idle producer ids are looked for.", at_least(1), internal=True),
    # -- ZooKeeper
    _k("zookeeper.connect", _S, None, _HIGH, "ZooKeeper connection string (host:port[,host:port][/chroot])."),
    _k("zookeeper.session.timeout.ms", _I, 18000, _HIGH, "ZooKeeper session timeout."),
    _k("zookeeper.connection.timeout.ms", _I, None, _HIGH, "Wait for a ZooKeeper connection; defaults to the session timeout."),
    _k("zookeeper.set.acl", _B, False, _HIGH, "Create znodes with secure ACLs."),
    _k("zookeeper.max.in.flight.requests", _I, 10, _HIGH, "Unanswered requests the ZooKeeper client may have.", at_least(1)),
    _k("zookeeper.metadata.migration.enable", _B, False, _HIGH, "Take part in a ZooKeeper to KRaft migration."),
    _k("zookeeper.metadata.migration.min.batch.size", _I, 200, _MEDIUM, "Records per batch written during migration.", at_least(1), internal=True),
    _k("zookeeper.clientCnxnSocket", _S, None, _MEDIUM, "ZooKeeper client socket class, needed for TLS."),
    _k("zookeeper.ssl.client.enable", _B, False, _MEDIUM, "Use TLS to reach ZooKeeper."),
    _k("zookeeper.ssl.keystore.location", _S, None, _MEDIUM, "Keystore for TLS to ZooKeeper."),
    _k("zookeeper.ssl.keystore.password", _P, None, _MEDIUM, "Password of that keystore."),
    _k("zookeeper.ssl.keystore.type", _S, None, _MEDIUM, "Type of that keystore."),
    _k("zookeeper.ssl.truststore.location", _S, None, _MEDIUM, "Truststore for TLS to ZooKeeper."),
    _k("zookeeper.ssl.truststore.password", _P, None, _MEDIUM, "Password of that truststore."),
    _k("zookeeper.ssl.truststore.type", _S, None, _MEDIUM, "Type of that truststore."),
    _k("zookeeper.ssl.protocol", _S, "TLSv1.2", _LOW, "TLS protocol used with ZooKeeper."),
    _k("zookeeper.ssl.enabled.protocols", _LI, None, _LOW, "TLS protocols enabled with ZooKeeper."),
    _k("zookeeper.ssl.cipher.suites", _LI, None, _LOW, "Cipher suites enabled with ZooKeeper."),
    _k("zookeeper.ssl.endpoint.identification.algorithm", _S, "HTTPS", _LOW, "Host name verification with ZooKeeper."),
    _k("zookeeper.ssl.crl.enable", _B, False, _LOW, "Check certificate revocation lists with ZooKeeper."),
    _k("zookeeper.ssl.ocsp.enable", _B, False, _LOW, "Use OCSP with ZooKeeper."),
    # -- KRaft
    _k("controller.quorum.voters", _LI, (), _HIGH, "Static controller quorum, {id}@{host}:{port} entries.", _QuorumVoters()),
    _k("controller.quorum.bootstrap.servers", _LI, (), _HIGH, "Addresses used to find the controller quorum, {host}:{port}.", _QuorumBootstrapServers()),
    _k("controller.quorum.election.timeout.ms", _I, 1000, _HIGH, "Wait without a leader before starting an election."),
    _k("controller.quorum.fetch.timeout.ms", _I, 2000, _HIGH, "Wait without a successful fetch before becoming a candidate."),
    _k("controller.quorum.election.backoff.max.ms", _I, 1000, _HIGH, "Longest backoff before a new election."),
    _k("controller.quorum.append.linger.ms", _I, 25, _MEDIUM, "Wait for more records before the quorum leader writes."),
    _k("controller.quorum.request.timeout.ms", _I, 2000, _MEDIUM, "Timeout of quorum requests."),
    _k("controller.quorum.retry.backoff.ms", _I, 20, _LOW, "Pause before retrying a failed quorum request."),
    _k("initial.broker.registration.timeout.ms", _I, 60000, _MEDIUM, "Wait for the first registration with the controller."),
    _k("broker.heartbeat.interval.ms", _I, 2000, _MEDIUM, "Interval of broker heartbeats to the controller."),
    _k("broker.session.timeout.ms", _I, 9000, _MEDIUM, "Broker lease length without a heartbeat."),
    _k("sasl.mechanism.controller.protocol", _S, "GSSAPI", _HIGH, "SASL mechanism used to reach the controller."),
    _k("metadata.log.dir", _S, None, _HIGH, "Directory of the metadata log; defaults to the first log dir."),
    _k("metadata.log.segment.bytes", _I, 1073741824, _HIGH, "Segment size of the metadata log.", at_least(12)),
    _k("metadata.log.segment.min.bytes", _I, 8388608, _HIGH, "Smallest metadata log segment size allowed.", at_least(12), internal=True),
    _k("metadata.log.segment.ms", _L, 604800000, _HIGH, "Roll age of metadata log segments."),
    _k("metadata.max.retention.bytes", _L, 104857600, _HIGH, "Size of metadata log and snapshots kept."),
    _k("metadata.max.retention.ms", _L, 604800000, _HIGH, "Age of metadata log files and snapshots kept."),
    _k("metadata.max.idle.interval.ms", _I, 500, _LOW, "How often the controller writes a no-op record when idle.", at_least(0)),
    _k("metadata.log.max.record.bytes.between.snapshots", _L, 20971520, _HIGH, "Metadata bytes written before a new snapshot.", at_least(1)),
    _k("metadata.log.max.snapshot.interval.ms", _L, 3600000, _HIGH, "Longest time between metadata snapshots; 0 disables the timer.", at_least(0)),
    _k("eligible.leader.replicas.enable", _B, False, _HIGH, "Enable eligible leader replicas."),
    _k("server.max.startup.time.ms", _L, LONG_MAX, _MEDIUM, "Longest time to catch up with metadata at start-up.", at_least(0), internal=True),
    # -- quotas and metrics
    _k("quota.window.num", _I, 11, _LOW, "Samples kept for client quotas.", at_least(1)),
    _k("quota.window.size.seconds", _I, 1, _LOW, "Length of one client quota sample.", at_least(1)),
    _k("replication.quota.window.num", _I, 11, _LOW, "Samples kept for replication quotas.", at_least(1)),
    _k("replication.quota.window.size.seconds", _I, 1, _LOW, "Length of one replication quota sample.", at_least(1)),
    _k("alter.log.dirs.replication.quota.window.num", _I, 11, _LOW, "Samples kept for log dir move quotas.", at_least(1)),
    _k("alter.log.dirs.replication.quota.window.size.seconds", _I, 1, _LOW, "Length of one log dir move quota sample.", at_least(1)),
    _k("controller.quota.window.num", _I, 11, _LOW, "Samples kept for controller mutation quotas.", at_least(1)),
    _k("controller.quota.window.size.seconds", _I, 1, _LOW, "Length of one controller mutation quota sample.", at_least(1)),
    _k("client.quota.callback.class", _C, None, _LOW, "Class that decides client quotas."),
    _k("metric.reporters", _LI, "", _LOW, "Classes that receive metrics."),
    _k("metrics.num.samples", _I, 2, _LOW, "Samples kept to compute a metric.", at_least(1)),
    _k("metrics.sample.window.ms", _L, 30000, _LOW, "Length of one metric sample.", at_least(1)),
    _k("metrics.recording.level", _S, "INFO", _LOW, "Highest recording level of metrics."),
    _k("auto.include.jmx.reporter", _B, True, _LOW, "Deprecated: always add the JMX reporter."),
    _k("kafka.metrics.reporters", _LI, "", _LOW, "Yammer metrics reporter classes."),
    _k("kafka.metrics.polling.interval.secs", _I, 10, _LOW, "Polling interval of the Yammer reporters.", at_least(1)),
    _k("telemetry.max.bytes", _I, 1048576, _LOW, "Largest client telemetry push accepted.", at_least(1)),
    # -- tiered storage
    _k("remote.log.storage.system.enable", _B, False, _MEDIUM, "Enable tiered storage on this broker."),
    _k("remote.log.storage.manager.class.name", _S, None, _MEDIUM, "RemoteStorageManager implementation.", NonEmptyString()),
    _k("remote.log.storage.manager.class.path", _S, None, _MEDIUM, "Class path of the RemoteStorageManager."),
    _k("remote.log.storage.manager.impl.prefix", _S, "rsm.config.", _MEDIUM, "Prefix of properties passed to the RemoteStorageManager.", NonEmptyString()),
    _k("remote.log.metadata.manager.class.name", _S, "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager", _MEDIUM, "RemoteLogMetadataManager implementation.", NonEmptyString()),
    _k("remote.log.metadata.manager.class.path", _S, None, _MEDIUM, "Class path of the RemoteLogMetadataManager."),
    _k("remote.log.metadata.manager.impl.prefix", _S, "rlmm.config.", _MEDIUM, "Prefix of properties passed to the RemoteLogMetadataManager.", NonEmptyString()),
    _k("remote.log.metadata.manager.listener.name", _S, None, _MEDIUM, "Listener the RemoteLogMetadataManager's clients connect to.", NonEmptyString()),
    _k("remote.log.metadata.custom.metadata.max.bytes", _I, 128, _LOW, "Largest custom metadata of a remote segment.", at_least(0)),
    _k("remote.log.index.file.cache.total.size.bytes", _L, 1073741824, _LOW, "Disk used to cache remote index files.", at_least(1)),
    _k("remote.log.manager.thread.pool.size", _I, 10, _MEDIUM, "Threads that schedule tiered-storage tasks.", at_least(1)),
    _k("remote.log.manager.copier.thread.pool.size", _I, -1, _MEDIUM, "Threads that copy segments; -1 uses the pool size above.", _POOL_SIZE),
    _k("remote.log.manager.expiration.thread.pool.size", _I, -1, _MEDIUM, "Threads that expire remote segments; -1 uses the pool size above.", _POOL_SIZE),
    _k("remote.log.manager.task.interval.ms", _L, 30000, _LOW, "Interval of tiered-storage tasks.", at_least(1)),
    _k("remote.log.manager.task.retry.backoff.ms", _L, 500, _LOW, "First backoff of a failed tiered-storage task.", at_least(1), internal=True),
    _k("remote.log.manager.task.retry.backoff.max.ms", _L, 30000, _LOW, "Longest backoff of a failed tiered-storage task.", at_least(1), internal=True),
    _k("remote.log.manager.task.retry.jitter", _D, 0.2, _LOW, "Random share added to tiered-storage task backoff.", between(0, 0.5), internal=True),
    _k("remote.log.reader.threads", _I, 10, _MEDIUM, "Threads that read from remote storage.", at_least(1)),
    _k("remote.log.reader.max.pending.tasks", _I, 100, _MEDIUM, "Queued remote reads allowed.", at_least(1)),
    _k("remote.log.manager.copy.max.bytes.per.second", _L, LONG_MAX, _MEDIUM, "Copy-to-remote throughput cap.", at_least(1)),
    _k("remote.log.manager.copy.quota.window.num", _I, 11, _MEDIUM, "Samples kept for the copy quota.", at_least(1)),
    _k("remote.log.manager.copy.quota.window.size.seconds", _I, 1, _MEDIUM, "Length of one copy quota sample.", at_least(1)),
    _k("remote.log.manager.fetch.max.bytes.per.second", _L, LONG_MAX, _MEDIUM, "Fetch-from-remote throughput cap.", at_least(1)),
    _k("remote.log.manager.fetch.quota.window.num", _I, 11, _MEDIUM, "Samples kept for the remote fetch quota.", at_least(1)),
    _k("remote.log.manager.fetch.quota.window.size.seconds", _I, 1, _MEDIUM, "Length of one remote fetch quota sample.", at_least(1)),
    _k("remote.fetch.max.wait.ms", _I, 500, _MEDIUM, "Longest wait of a fetch for remote data.", at_least(1)),
    # -- security: authorizer, principals, delegation tokens, password encoding
    _k("authorizer.class.name", _S, "", _LOW, "Authorizer class; empty means no authorization."),
    _k("principal.builder.class", _C, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", _MEDIUM, "Class that builds the principal of a connection."),
    _k("connections.max.reauth.ms", _L, 0, _MEDIUM, "Longest session before SASL clients must re-authenticate; 0 disables."),
    _k("security.providers", _S, None, _LOW, "Security provider creator classes."),
    _k("delegation.token.master.key", _P, None, _MEDIUM, "Deprecated alias of delegation.token.secret.key."),
    _k("delegation.token.secret.key", _P, None, _MEDIUM, "Secret that signs delegation tokens."),
    _k("delegation.token.max.lifetime.ms", _L, 604800000, _MEDIUM, "Longest life of a delegation token.", at_least(1)),
    _k("delegation.token.expiry.time.ms", _L, 86400000, _MEDIUM, "Renewal interval of a delegation token.", at_least(1)),
    _k("delegation.token.expiry.check.interval.ms", _L, 3600000, _LOW, "How often expired tokens are removed.", at_least(1)),
    _k("password.encoder.secret", _P, None, _MEDIUM, "Secret that encrypts dynamically configured passwords."),
    _k("password.encoder.old.secret", _P, None, _MEDIUM, "Previous password encoder secret, for rotation."),
    _k("password.encoder.keyfactory.algorithm", _S, None, _LOW, "Key factory algorithm of the password encoder."),
    _k("password.encoder.cipher.algorithm", _S, "AES/CBC/PKCS5Padding", _LOW, "Cipher of the password encoder."),
    _k("password.encoder.key.length", _I, 128, _LOW, "Key length of the password encoder.", at_least(8)),
    _k("password.encoder.iterations", _I, 4096, _LOW, "Iterations of the password encoder.", at_least(1024)),
    # -- SSL
    _k("ssl.protocol", _S, "TLSv1.3", _MEDIUM, "TLS protocol used to build the SSLContext."),
    _k("ssl.provider", _S, None, _MEDIUM, "Security provider of TLS connections."),
    _k("ssl.enabled.protocols", _LI, "TLSv1.2,TLSv1.3", _MEDIUM, "TLS protocols enabled for connections."),
    _k("ssl.cipher.suites", _LI, (), _MEDIUM, "Cipher suites enabled; empty enables all supported."),
    _k("ssl.keystore.type", _S, "JKS", _MEDIUM, "Keystore file format."),
    _k("ssl.keystore.location", _S, None, _MEDIUM, "Keystore file."),
    _k("ssl.keystore.password", _P, None, _MEDIUM, "Keystore password."),
    _k("ssl.key.password", _P, None, _MEDIUM, "Password of the private key in the keystore."),
    _k("ssl.keystore.key", _P, None, _MEDIUM, "Private key in PEM form."),
    _k("ssl.keystore.certificate.chain", _P, None, _MEDIUM, "Certificate chain in PEM form."),
    _k("ssl.truststore.type", _S, "JKS", _MEDIUM, "Truststore file format."),
    _k("ssl.truststore.location", _S, None, _MEDIUM, "Truststore file."),
    _k("ssl.truststore.password", _P, None, _MEDIUM, "Truststore password."),
    _k("ssl.truststore.certificates", _P, None, _MEDIUM, "Trusted certificates in PEM form."),
    _k("ssl.keymanager.algorithm", _S, "SunX509", _MEDIUM, "Key manager factory algorithm."),
    _k("ssl.trustmanager.algorithm", _S, "PKIX", _MEDIUM, "Trust manager factory algorithm."),
    _k("ssl.endpoint.identification.algorithm", _S, "https", _LOW, "Host name verification of peers; empty disables it."),
    _k("ssl.secure.random.implementation", _S, None, _LOW, "SecureRandom implementation for TLS."),
    _k("ssl.engine.factory.class", _C, None, _LOW, "Custom SSLEngine factory."),
    _k("ssl.client.auth", _S, "none", _MEDIUM, "Whether TLS clients must present a certificate.", one_of("required", "requested", "none")),
    _k("ssl.principal.mapping.rules", _S, "DEFAULT", _LOW, "Rules mapping certificate names to principals."),
    _k("ssl.allow.dn.changes", _B, False, _LOW, "Allow a reloaded keystore to change the certificate's DN."),
    _k("ssl.allow.san.changes", _B, False, _LOW, "Allow a reloaded keystore to change the certificate's SANs."),
    # -- SASL
    _k("sasl.enabled.mechanisms", _LI, "GSSAPI", _MEDIUM, "SASL mechanisms the broker accepts."),
    _k("sasl.mechanism.inter.broker.protocol", _S, "GSSAPI", _MEDIUM, "SASL mechanism between brokers."),
    _k("sasl.jaas.config", _P, None, _MEDIUM, "JAAS login context in the JAAS file format."),
    _k("sasl.server.callback.handler.class", _C, None, _MEDIUM, "Server-side SASL callback handler."),
    _k("sasl.client.callback.handler.class", _C, None, _MEDIUM, "Client-side SASL callback handler."),
    _k("sasl.login.class", _C, None, _MEDIUM, "SASL Login implementation."),
    _k("sasl.login.callback.handler.class", _C, None, _MEDIUM, "SASL login callback handler."),
    _k("sasl.server.max.receive.size", _I, 524288, _MEDIUM, "Largest SASL message accepted before authentication."),
    _k("sasl.kerberos.service.name", _S, None, _MEDIUM, "Kerberos principal name Kafka runs as."),
    _k("sasl.kerberos.kinit.cmd", _S, "/usr/bin/kinit", _MEDIUM, "Kerberos kinit command."),
    _k("sasl.kerberos.ticket.renew.window.factor", _D, 0.8, _MEDIUM, "Share of the ticket life after which renewal starts."),
    _k("sasl.kerberos.ticket.renew.jitter", _D, 0.05, _MEDIUM, "Random share added to the renewal time."),
    _k("sasl.kerberos.min.time.before.relogin", _L, 60000, _MEDIUM, "Least time between refresh attempts of the login thread."),
    _k("sasl.kerberos.principal.to.local.rules", _LI, "DEFAULT", _MEDIUM, "Rules mapping Kerberos principals to short names."),
    _k("sasl.login.refresh.window.factor", _D, 0.8, _MEDIUM, "Share of a credential's life after which it is refreshed."),
    _k("sasl.login.refresh.window.jitter", _D, 0.05, _MEDIUM, "Random share added to the refresh time."),
    _k("sasl.login.refresh.min.period.seconds", _SH, 60, _MEDIUM, "Least wait before refreshing a credential."),
    _k("sasl.login.refresh.buffer.seconds", _SH, 300, _MEDIUM, "Time kept before expiry when refreshing a credential."),
    _k("sasl.login.connect.timeout.ms", _I, None, _LOW, "Connect timeout of the OAuth login provider."),
    _k("sasl.login.read.timeout.ms", _I, None, _LOW, "Read timeout of the OAuth login provider."),
    _k("sasl.login.retry.backoff.ms", _L, 100, _LOW, "First backoff when the OAuth login provider fails."),
    _k("sasl.login.retry.backoff.max.ms", _L, 10000, _LOW, "Longest backoff when the OAuth login provider fails."),
    _k("sasl.oauthbearer.scope.claim.name", _S, "scope", _LOW, "JWT claim holding the scopes."),
    _k("sasl.oauthbearer.sub.claim.name", _S, "sub", _LOW, "JWT claim holding the subject."),
    _k("sasl.oauthbearer.token.endpoint.url", _S, None, _MEDIUM, "OAuth token endpoint, or a file with a token."),
    _k("sasl.oauthbearer.jwks.endpoint.url", _S, None, _MEDIUM, "JWKS endpoint used to verify tokens."),
    _k("sasl.oauthbearer.jwks.endpoint.refresh.ms", _L, 3600000, _LOW, "How often the JWKS keys are refreshed."),
    _k("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", _L, 100, _LOW, "First backoff when the JWKS endpoint fails."),
    _k("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", _L, 10000, _LOW, "Longest backoff when the JWKS endpoint fails."),
    _k("sasl.oauthbearer.clock.skew.seconds", _I, 30, _LOW, "Clock difference tolerated when checking tokens."),
    _k("sasl.oauthbearer.expected.audience", _LI, None, _LOW, "Audiences a token must name."),
    _k("sasl.oauthbearer.expected.issuer", _S, None, _LOW, "Issuer a token must name."),
    # -- internal switches
    _k("unstable.api.versions.enable", _B, False, _HIGH, "Advertise API versions still under development.", internal=True),
    _k("unstable.feature.versions.enable", _B, False, _HIGH, "Allow feature versions still under development.", internal=True),
)
# fmt: on

BROKER_CONFIG_DEF = ConfigDef(_CATALOG)

# Broker keys that exist only as dynamic configs (Kafka's QuotaConfigs.brokerQuotaConfigs).
BROKER_QUOTA_CONFIG_DEF = ConfigDef(
    (
        _k("leader.replication.throttled.rate", _L, LONG_MAX, _MEDIUM, "Replication bytes/s a throttled leader may send.", at_least(0)),
        _k("follower.replication.throttled.rate", _L, LONG_MAX, _MEDIUM, "Replication bytes/s a throttled follower may fetch.", at_least(0)),
        _k("replica.alter.log.dirs.io.max.bytes.per.second", _L, LONG_MAX, _MEDIUM, "Bytes/s of replica moves between log dirs.", at_least(0)),
    )
)

# -- dynamic update modes (Kafka's DynamicBrokerConfig) -------------------------------------------

# SSL keystore/truststore keys: dynamic, but only with a listener prefix.
DYNAMIC_SECURITY_CONFIGS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
})  # fmt: skip
_LISTENER_CONFIGS = frozenset({
    "advertised.listeners", "listeners", "listener.security.protocol.map", "principal.builder.class",
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds", "max.connections", "max.connection.creation.rate",
    "num.network.threads",
})  # fmt: skip
CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
_LOG_CLEANER_CONFIGS = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
})  # fmt: skip
# The highest-precedence broker synonym of every topic config except message.format.version.
_DYNAMIC_LOG_CONFIGS = frozenset(keys[0] for topic_key, keys in TOPIC_BROKER_SYNONYMS.items() if topic_key != "message.format.version")
THREAD_POOL_CONFIGS = frozenset({"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads"})
_SOCKET_SERVER_CONFIGS = frozenset({"max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections", "max.connection.creation.rate"})
_OTHER_DYNAMIC_CONFIGS = frozenset({
    "metric.reporters", "producer.id.expiration.ms", "transaction.partition.verification.enable",
    "remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
    "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second",
})  # fmt: skip

ALL_DYNAMIC_CONFIGS = (
    DYNAMIC_SECURITY_CONFIGS
    | _LISTENER_CONFIGS
    | _LOG_CLEANER_CONFIGS
    | _DYNAMIC_LOG_CONFIGS
    | THREAD_POOL_CONFIGS
    | _SOCKET_SERVER_CONFIGS
    | _OTHER_DYNAMIC_CONFIGS
)
PER_BROKER_CONFIGS = (DYNAMIC_SECURITY_CONFIGS | _LISTENER_CONFIGS) - CLUSTER_LEVEL_LISTENER_CONFIGS
# Catalog keys that can never change while the broker runs.
NON_DYNAMIC_CONFIGS = frozenset(BROKER_CONFIG_DEF.names()) - ALL_DYNAMIC_CONFIGS - frozenset(BROKER_QUOTA_CONFIG_DEF.names())

LISTENER_CONFIG_PREFIX = re.compile(r"listener\.name\.[^.]*\.(.*)")


def update_mode(name: str) -> UpdateMode:
    """How ``name`` may be changed at run time (read-only for keys Kafka never reloads)."""
    if name in PER_BROKER_CONFIGS:
        return UpdateMode.PER_BROKER
    if name in ALL_DYNAMIC_CONFIGS:
        return UpdateMode.CLUSTER_WIDE
    return UpdateMode.READ_ONLY


def broker_config_key(name: str) -> ConfigKey | None:
    """The definition of a broker key, including dynamic-only ones and ``listener.name.X.`` forms."""
    key = BROKER_CONFIG_DEF.get(name) or BROKER_QUOTA_CONFIG_DEF.get(name)
    if key is None:
        match = LISTENER_CONFIG_PREFIX.fullmatch(name)
        if match is not None:
            return broker_config_key(match.group(1))
    return key


def broker_config_synonyms(name: str, match_listener_override: bool = True) -> list[str]:
    """The broker keys that set the same value as ``name``, highest precedence first."""
    for group in (
        ("log.roll.ms", "log.roll.hours"),
        ("log.roll.jitter.ms", "log.roll.jitter.hours"),
        ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    ):
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":
        return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    match = LISTENER_CONFIG_PREFIX.fullmatch(name)
    if match is not None and match_listener_override:
        return [name, _listener_base_name(match.group(1))]
    return [name]


_LISTENER_MECHANISM_CONFIGS = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)


def _listener_base_name(suffix: str) -> str:
    # Mechanism configs are written listener.name.X.<mechanism>.<config>; their base is <config>.
    for config in _LISTENER_MECHANISM_CONFIGS:
        if suffix.endswith(config):
            return config
    return suffix


# -- listeners --------------------------------------------------------------------------------------


class Endpoint(NamedTuple):
    """One listener: its upper-case name, host ("" binds every interface) and port."""

    listener_name: str
    host: str
    port: int


_LISTENER_URI = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


def parse_listeners(text: str, protocol_map: Mapping[str, str], config_name: str = "listeners") -> list[Endpoint]:
    """``PLAINTEXT://:9092,SSL://host:9093`` as endpoints, as Kafka parses listener lists.

    Raises INVALID_CONFIG for an entry that is not NAME://host:port, a name missing from
    ``protocol_map``, a name used twice, or (for ``listeners``) a port used twice other than by
    one IPv4 and one IPv6 address.
    """
    endpoints = []
    for entry in (item for item in re.split(r"\s*,\s*", text.strip()) if item):
        match = _LISTENER_URI.match(entry)
        if match is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unable to parse {entry} to a broker endpoint (in {config_name})")
        name = match.group(1).upper()
        if name not in protocol_map:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"No security protocol defined for listener {name} (in {config_name})")
        endpoints.append(Endpoint(name, match.group(2), int(match.group(3))))
    if len({endpoint.listener_name for endpoint in endpoints}) != len(endpoints):
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Each listener must have a different name, {config_name}: {text}")
    if config_name == "listeners":
        _check_distinct_ports(endpoints, text)
    return endpoints


def _ip_version(host: str) -> int | None:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _check_distinct_ports(endpoints: list[Endpoint], text: str) -> None:
    by_port: dict[int, list[Endpoint]] = {}
    for endpoint in endpoints:
        if endpoint.port != 0:  # port 0 picks a free port each time
            by_port.setdefault(endpoint.port, []).append(endpoint)
    for port, sharing in by_port.items():
        if len(sharing) < 2:
            continue
        versions = sorted(_ip_version(endpoint.host) or 0 for endpoint in sharing)
        if versions != [4, 6]:
            raise KafkaError(
                ErrorCode.INVALID_CONFIG,
                f"Each listener must have a different port unless one is IPv4 and the other IPv6, listeners: {text}, port: {port}",
            )


def parse_protocol_map(text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` as an upper-case listener name -> security protocol dict."""
    protocols = {}
    for entry in (item for item in re.split(r"\s*,\s*", text.strip()) if item):
        name, separator, protocol = entry.partition(":")
        if not separator or not name.strip():
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {text} for configuration listener.security.protocol.map: Map entry '{entry}' is not of the form name:protocol")
        protocol = protocol.strip()
        if protocol.upper() not in SECURITY_PROTOCOLS:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid security protocol `{protocol}` defined in listener.security.protocol.map")
        protocols[name.strip().upper()] = protocol.upper()
    return protocols


# -- the effective configuration ---------------------------------------------------------------------


def merge_layers(static: Mapping[str, str], dynamic_default: Mapping[str, str], dynamic: Mapping[str, str]) -> dict[str, str]:
    """Static properties overlaid with the dynamic cluster defaults, then the per-broker dynamic
    configs. A dynamic key removes its synonyms from below so that it wins (``log.retention.ms``
    set dynamically hides a static ``log.retention.hours``)."""
    merged = dict(static)
    for layer in (dynamic_default, dynamic):
        for key, value in layer.items():
            for synonym in broker_config_synonyms(key, match_listener_override=False):
                merged.pop(synonym, None)
            merged[key] = value
    return merged


def _populate_id_synonyms(props: Mapping[str, str]) -> dict[str, str]:
    out = dict(props)
    if "broker.id" not in out and "node.id" in out:
        out["broker.id"] = out["node.id"]
    elif "broker.id" in out and "node.id" not in out:
        out["node.id"] = out["broker.id"]
    return out


# What Kafka 3.9's own config/server.properties sets (ZooKeeper settings aside): ``kcli broker
# start`` with no file runs as kafka-server-start.sh config/server.properties does, a single
# broker whose internal topics have one replica and whose new groups start without delay.
STOCK_SERVER_PROPERTIES: Mapping[str, str] = {
    "broker.id": "0",
    "num.network.threads": "3",
    "num.io.threads": "8",
    "socket.send.buffer.bytes": "102400",
    "socket.receive.buffer.bytes": "102400",
    "socket.request.max.bytes": "104857600",
    "log.dirs": "/tmp/kafka-logs",
    "num.partitions": "1",
    "num.recovery.threads.per.data.dir": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "log.retention.hours": "168",
    "log.retention.check.interval.ms": "300000",
    "group.initial.rebalance.delay.ms": "0",
}


class BrokerConfig:
    """One broker's configuration: typed values by Kafka key with Kafka's precedence applied.

    ``originals`` are the static properties as given (file plus overrides, with ``broker.id`` and
    ``node.id`` filled in from each other); ``dynamic_default_configs`` and
    ``dynamic_broker_configs`` are the run-time layers (see ``with_dynamic``).
    """

    def __init__(
        self,
        originals: Mapping[str, str],
        dynamic_default: Mapping[str, str] | None = None,
        dynamic: Mapping[str, str] | None = None,
    ) -> None:
        self.originals: dict[str, str] = _populate_id_synonyms(originals)
        self.dynamic_default_configs: dict[str, str] = dict(dynamic_default or {})
        self.dynamic_broker_configs: dict[str, str] = dict(dynamic or {})
        self.effective_properties: dict[str, str] = merge_layers(self.originals, self.dynamic_default_configs, self.dynamic_broker_configs)
        self.values: dict[str, Any] = BROKER_CONFIG_DEF.parse(self.effective_properties)
        # The dynamic-only keys (Kafka's DynamicConfig.Broker: the replication throttles' rates)
        # from the dynamic layers, the broker's own over the cluster default.
        dynamic_layers = {**self.dynamic_default_configs, **self.dynamic_broker_configs}
        self.values.update(BROKER_QUOTA_CONFIG_DEF.parse({k: v for k, v in dynamic_layers.items() if k in BROKER_QUOTA_CONFIG_DEF}))
        self.listener_security_protocol_map = self._protocol_map()
        self.listeners: list[Endpoint] = parse_listeners(self.values["listeners"] or "", self.listener_security_protocol_map)
        self._check_consistency()

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        return cls(props)

    @classmethod
    def from_file(cls, path: str | Path | None, overrides: Iterable[str] = ()) -> BrokerConfig:
        """``server.properties`` plus ``key=value`` overrides, which win. Without a file, the
        settings of the ``config/server.properties`` Kafka ships (``STOCK_SERVER_PROPERTIES``)."""
        props = read_properties(path) if path is not None else dict(STOCK_SERVER_PROPERTIES)
        for override in overrides:
            key, value = parse_override(override)
            props[key] = value
        return cls(props)

    def with_dynamic(self, dynamic_default: Mapping[str, str] | None = None, dynamic: Mapping[str, str] | None = None) -> BrokerConfig:
        """This configuration with new dynamic layers (None keeps the current layer)."""
        return BrokerConfig(
            self.originals,
            self.dynamic_default_configs if dynamic_default is None else dynamic_default,
            self.dynamic_broker_configs if dynamic is None else dynamic,
        )

    # -- lookup

    def get(self, name: str) -> Any:
        """The typed value of a catalog key (None when it is unset and has no default)."""
        if name not in self.values:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {name}")
        return self.values[name]

    def get_string(self, name: str) -> str | None:
        """A catalog key's value in Kafka's string form."""
        return render_value(self.get(name))

    def __contains__(self, name: object) -> bool:
        return name in self.values

    # -- precedence rules

    @property
    def log_retention_ms(self) -> int:
        """``log.retention.ms``, else minutes, else hours, in ms; any negative value is -1."""
        millis = self.values["log.retention.ms"]
        if millis is None:
            minutes = self.values["log.retention.minutes"]
            millis = minutes * 60_000 if minutes is not None else self.values["log.retention.hours"] * 3_600_000
        return -1 if millis < 0 else millis

    @property
    def log_roll_ms(self) -> int:
        millis = self.values["log.roll.ms"]
        return millis if millis is not None else self.values["log.roll.hours"] * 3_600_000

    @property
    def log_roll_jitter_ms(self) -> int:
        millis = self.values["log.roll.jitter.ms"]
        return millis if millis is not None else self.values["log.roll.jitter.hours"] * 3_600_000

    @property
    def log_flush_interval_ms(self) -> int:
        millis = self.values["log.flush.interval.ms"]
        return millis if millis is not None else self.values["log.flush.scheduler.interval.ms"]

    @property
    def log_dirs(self) -> list[str]:
        """``log.dirs`` split on commas, else ``log.dir``."""
        text = self.values["log.dirs"] if self.values["log.dirs"] is not None else self.values["log.dir"]
        return [item for item in re.split(r"\s*,\s*", (text or "").strip()) if item]

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        """``advertised.listeners``, else ``listeners``; controller listeners are not advertised to clients."""
        text = self.values["advertised.listeners"]
        endpoints = self.listeners if text is None else parse_listeners(text, self.listener_security_protocol_map, "advertised.listeners")
        return [endpoint for endpoint in endpoints if endpoint.listener_name not in self.controller_listener_names]

    @property
    def controller_listener_names(self) -> list[str]:
        text = self.values["controller.listener.names"] or ""
        return [item.strip().upper() for item in text.split(",") if item.strip()]

    def security_protocol(self, listener_name: str) -> str:
        return self.listener_security_protocol_map[listener_name.upper()]

    @property
    def inter_broker_listener_name(self) -> str:
        """``inter.broker.listener.name``, else the listener named after
        ``security.inter.broker.protocol`` (Kafka's ListenerName.forSecurityProtocol)."""
        return (self.values["inter.broker.listener.name"] or self.values["security.inter.broker.protocol"]).upper()

    @property
    def offsets_retention_ms(self) -> int:
        return self.values["offsets.retention.minutes"] * 60_000

    # -- common keys

    @property
    def broker_id(self) -> int:
        """This broker's id: ``broker.id`` or ``node.id``; 0 when neither is set (a single-node broker)."""
        broker_id = self.values["broker.id"]
        return broker_id if broker_id >= 0 else 0

    @property
    def node_id(self) -> int:
        return self.values["node.id"] if self.values["node.id"] >= 0 else self.broker_id

    @property
    def num_partitions(self) -> int:
        return self.values["num.partitions"]

    @property
    def default_replication_factor(self) -> int:
        return self.values["default.replication.factor"]

    @property
    def auto_create_topics_enable(self) -> bool:
        return self.values["auto.create.topics.enable"]

    @property
    def delete_topic_enable(self) -> bool:
        return self.values["delete.topic.enable"]

    @property
    def message_max_bytes(self) -> int:
        return self.values["message.max.bytes"]

    @property
    def socket_request_max_bytes(self) -> int:
        return self.values["socket.request.max.bytes"]

    @property
    def fetch_max_bytes(self) -> int:
        return self.values["fetch.max.bytes"]

    @property
    def broker_rack(self) -> str | None:
        return self.values["broker.rack"]

    @property
    def offsets_topic_num_partitions(self) -> int:
        return self.values["offsets.topic.num.partitions"]

    @property
    def offsets_topic_replication_factor(self) -> int:
        return self.values["offsets.topic.replication.factor"]

    @property
    def transaction_state_log_num_partitions(self) -> int:
        return self.values["transaction.state.log.num.partitions"]

    @property
    def group_initial_rebalance_delay_ms(self) -> int:
        return self.values["group.initial.rebalance.delay.ms"]

    @property
    def group_min_session_timeout_ms(self) -> int:
        return self.values["group.min.session.timeout.ms"]

    @property
    def group_max_session_timeout_ms(self) -> int:
        return self.values["group.max.session.timeout.ms"]

    @property
    def max_incremental_fetch_session_cache_slots(self) -> int:
        return self.values["max.incremental.fetch.session.cache.slots"]

    # -- topic defaults

    def topic_properties(self) -> dict[str, str]:
        """The topic configs the broker's keys set, by topic key (Kafka's extractLogConfigMap,
        for the keys that are given; every other topic key keeps LogConfig's default)."""
        return topic_properties_from_broker(self.effective_properties)

    def log_config(self) -> LogConfig:
        """The LogConfig every topic starts from before its own overrides."""
        return LogConfig.from_properties(self.topic_properties())

    # -- validation across keys

    def _protocol_map(self) -> dict[str, str]:
        protocols = parse_protocol_map(self.values["listener.security.protocol.map"])
        if "listener.security.protocol.map" not in self.effective_properties:
            # With the default map, controller listeners are taken to be PLAINTEXT.
            for name in self.controller_listener_names:
                protocols.setdefault(name, "PLAINTEXT")
        return protocols

    def _check_consistency(self) -> None:
        problem = self._first_problem()
        if problem is not None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, problem)

    def _first_problem(self) -> str | None:
        values = self.values
        given_broker, given_node = self.originals.get("broker.id"), self.originals.get("node.id")
        if given_broker is not None and given_node is not None and values["broker.id"] != values["node.id"]:
            return "You must set `node.id` to the same value as `broker.id`."
        if values["broker.id"] > values["reserved.broker.max.id"] or values["broker.id"] < -1:
            return "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id"
        if self.log_roll_ms < 1:
            return "log.roll.ms must be greater than or equal to 1"
        if self.log_roll_jitter_ms < 0:
            return "log.roll.jitter.ms must be greater than or equal to 0"
        if self.log_retention_ms < 1 and self.log_retention_ms != -1:
            return "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"
        if not self.log_dirs:
            return "At least one log directory must be defined via log.dirs or log.dir."
        threads = values["log.cleaner.threads"]
        if threads > 0 and values["log.cleaner.dedupe.buffer.size"] // threads <= 1024 * 1024:
            return "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
        if values["replica.fetch.wait.max.ms"] > values["replica.socket.timeout.ms"]:
            return "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts"
        if values["replica.fetch.wait.max.ms"] > values["replica.lag.time.max.ms"]:
            return "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR"
        if any(endpoint.host == "0.0.0.0" for endpoint in self.advertised_listeners):
            return "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."
        if 0 < values["queued.max.request.bytes"] < values["socket.request.max.bytes"]:
            return "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"
        acks = values["offsets.commit.required.acks"]
        if not -1 <= acks <= values["offsets.topic.replication.factor"]:
            return "offsets.commit.required.acks must be greater or equal to -1 and less or equal to offsets.topic.replication.factor"
        return None


# -- what kcli refuses, and keys nobody defines --------------------------------------------------------


def inter_broker_listener_problem(config: BrokerConfig) -> str | None:
    """Kafka's checks of the inter-broker listener (KafkaConfig, ZooKeeper mode): only one of the
    two keys set, a named listener known to the protocol map and among the advertised ones."""
    name = config.values["inter.broker.listener.name"]
    if name is not None and "security.inter.broker.protocol" in config.originals:
        return "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."
    if name is not None and name.upper() not in config.listener_security_protocol_map:
        return f"Listener with name {name.upper()} defined in inter.broker.listener.name not found in listener.security.protocol.map."
    advertised = [endpoint.listener_name for endpoint in config.advertised_listeners]
    if config.inter_broker_listener_name not in advertised:
        return (
            "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
            f"The valid options based on currently configured listeners are {','.join(advertised)}"
        )
    return None


SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def unsupported_security(config: BrokerConfig) -> str | None:
    """Why the broker must not start, when its configuration asks for a security protocol kcli
    does not have: serving it as plaintext would be a silent downgrade. The listeners' own
    mechanisms and stores, and the inter-broker client's, are checked with them
    (``broker.network.listeners``)."""
    for endpoint in config.listeners:
        protocol = config.security_protocol(endpoint.listener_name)
        if protocol not in SUPPORTED_SECURITY_PROTOCOLS:
            return (
                f"listener {endpoint.listener_name} uses security protocol {protocol}, which kcli does not support "
                f"(PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners are served)"
            )
    protocol = config.get("security.inter.broker.protocol")
    if protocol not in SUPPORTED_SECURITY_PROTOCOLS and config.get("inter.broker.listener.name") is None:
        return f"security.inter.broker.protocol={protocol} is a security protocol kcli does not support"
    return None


def unknown_keys(config: BrokerConfig) -> list[str]:
    """Supplied keys no Kafka broker defines (Kafka logs each as "supplied but isn't a known
    config"). Keys Kafka defines are known even where kcli has no use for them, as are the
    ``listener.name.<listener>.`` forms of known keys, the authorizer's own keys and the properties
    passed to tiered-storage plugins under their configured prefixes."""
    prefixes = tuple(
        prefix
        for prefix in (config.get("remote.log.storage.manager.impl.prefix"), config.get("remote.log.metadata.manager.impl.prefix"))
        if prefix
    )
    from kcli.broker.security.authorizer import AUTHORIZER_KEYS

    unknown = []
    for key in config.originals:
        if broker_config_key(key) is not None or key.startswith(prefixes) or key in AUTHORIZER_KEYS:
            continue
        match = LISTENER_CONFIG_PREFIX.fullmatch(key)
        if match is not None and broker_config_key(_listener_base_name(match.group(1))) is not None:
            continue
        unknown.append(key)
    return sorted(unknown)
