"""Every znode path of a ZooKeeper-era Kafka cluster and the JSON each one holds.

This is kcli's ``ZkData.scala``: the single place where a path is spelled or a znode's bytes are
encoded or decoded. The formats are the ones Kafka 3.x in ZooKeeper mode writes, so a tree written
by kcli can be read by Kafka's tools and the reverse. The JSON is compact (no spaces) and keys come
in the order a Kafka 3.x broker was observed to write them, so encoded bytes match Kafka's::

    /brokers/ids/0       {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
                          "endpoints":["PLAINTEXT://host:9092"],"jmx_port":-1,"port":9092,
                          "host":"host","version":5,"timestamp":"1700000000000"}
    /brokers/topics/T    {"partitions":{"0":[1,2]},"topic_id":"<22 chars>","adding_replicas":{},
                          "removing_replicas":{},"version":3}
    .../partitions/P/state  {"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}
    /controller          {"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}
    /controller_epoch    1
    /cluster/id          {"version":"1","id":"<22 chars>"}
    /config/topics/T     {"version":1,"config":{"cleanup.policy":"compact"}}
    /config/changes/config_change_0000000000   {"version":2,"entity_path":"topics/T"}
    /admin/reassign_partitions  {"version":1,"partitions":[{"topic":"T","partition":0,"replicas":[1,2]}]}
    /latest_producer_id_block   {"version":1,"broker":0,"block_start":"0","block_end":"999"}
    /consumers/G/offsets/T/P    42
    /consumers/G/ids/C   {"version":1,"subscription":{"T":1},"pattern":"static","timestamp":"1700000000000"}
    /consumers/G/owners/T/P     C-0
    /feature             {"features":{},"version":2,"status":1}

Decoders accept the older versions Kafka's decoders accept (broker registrations v1-v5, topic
assignments v1-v3, feature znode v1-v2) and raise ``ZNodeFormatError`` naming the znode and
quoting its data when the bytes do not parse, or when a number does not fit the field it is
sent in on the wire (an int32 partition id, broker id or epoch, a port, an int16 feature level):
such a znode is skipped by whoever reads it, as one that does not parse, and never reaches a
request or a response that could not be encoded.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcli.errors import KcliError
from kcli.common import uuid_from_string, uuid_to_string
from kcli.java_compat import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN
from kcli.security.acl import AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType


class ZNodeFormatError(KcliError):
    """Znode data that does not hold the JSON its path calls for."""


# -- paths ----------------------------------------------------------------------------------------

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_SEQUENCE_ID = "/brokers/seqid"
TOPICS = "/brokers/topics"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
CONSUMERS = "/consumers"
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
FEATURE = "/feature"

CONFIG_TYPE_TOPICS = "topics"
CONFIG_TYPE_CLIENTS = "clients"
CONFIG_TYPE_USERS = "users"
CONFIG_TYPE_BROKERS = "brokers"
CONFIG_TYPE_IPS = "ips"
CONFIG_TYPES = (CONFIG_TYPE_TOPICS, CONFIG_TYPE_CLIENTS, CONFIG_TYPE_USERS, CONFIG_TYPE_BROKERS, CONFIG_TYPE_IPS)
# The entity name of the cluster-wide defaults, e.g. /config/brokers/<default>.
DEFAULT_ENTITY = "<default>"


def config_entity_type_path(entity_type: str) -> str:
    return f"{CONFIG}/{entity_type}"


# The persistent paths a ZooKeeper-mode broker creates at start (Kafka's PersistentZkPaths).
PERSISTENT_PATHS = (
    CONSUMERS,
    BROKER_IDS,
    TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKER_SEQUENCE_ID,
    ISR_CHANGE_NOTIFICATION,
    PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
    *(config_entity_type_path(entity_type) for entity_type in CONFIG_TYPES),
)


def broker_id_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def topic_partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def config_entity_path(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG}/{entity_type}/{entity_name}"


def topic_config_path(topic: str) -> str:
    return config_entity_path(CONFIG_TYPE_TOPICS, topic)


def broker_config_path(broker_id: int | None) -> str:
    """``/config/brokers/<id>``, or ``/config/brokers/<default>`` for None."""
    return config_entity_path(CONFIG_TYPE_BROKERS, broker_entity_name(broker_id))


def broker_entity_name(broker_id: int | None) -> str:
    return DEFAULT_ENTITY if broker_id is None else str(broker_id)


def config_change_path() -> str:
    """The path to create sequentially; ZooKeeper appends the 10-digit number."""
    return f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}"


def isr_change_path() -> str:
    return f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}"


def log_dir_event_path() -> str:
    return f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def consumer_group_path(group: str) -> str:
    return f"{CONSUMERS}/{group}"


def consumer_offsets_path(group: str) -> str:
    return f"{CONSUMERS}/{group}/offsets"


def consumer_topic_offsets_path(group: str, topic: str) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic}"


def consumer_offset_path(group: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic}/{partition}"


def consumer_ids_path(group: str) -> str:
    return f"{CONSUMERS}/{group}/ids"


def consumer_id_path(group: str, consumer_id: str) -> str:
    return f"{CONSUMERS}/{group}/ids/{consumer_id}"


def consumer_owners_path(group: str) -> str:
    return f"{CONSUMERS}/{group}/owners"


def consumer_topic_owners_path(group: str, topic: str) -> str:
    return f"{CONSUMERS}/{group}/owners/{topic}"


def consumer_owner_path(group: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group}/owners/{topic}/{partition}"


# -- JSON helpers ---------------------------------------------------------------------------------


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _parse(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ZNodeFormatError(f"Failed to parse {what}: {_text(data)}") from None


def _object(data: bytes, what: str) -> dict[str, Any]:
    value = _parse(data, what)
    if not isinstance(value, dict):
        raise ZNodeFormatError(f"Failed to parse {what}: {_text(data)}")
    return value


def _bad(data: bytes, what: str, reason: str) -> ZNodeFormatError:
    return ZNodeFormatError(f"Failed to parse {what} ({reason}): {_text(data)}")


# The ranges of the wire fields znode numbers are sent in: an id (broker, partition) is a
# non-negative int32, an epoch or a leader an int32, a port an unsigned 16-bit number, a feature
# level an int16.
INT32 = (INT_MIN, INT_MAX)
ID = (0, INT_MAX)
PORT = (0, 65535)
INT16 = (-(2**15), 2**15 - 1)
INT64 = (LONG_MIN, LONG_MAX)


def _int(value: Any, data: bytes, what: str, key: str, bounds: tuple[int, int] = INT32) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(data, what, f"{key} is not an integer")
    return _in_range(value, data, what, key, bounds)


def _in_range(value: int, data: bytes, what: str, key: str, bounds: tuple[int, int]) -> int:
    low, high = bounds
    if not low <= value <= high:
        raise _bad(data, what, f"{key} {value} is out of range [{low}, {high}]")
    return value


def _int_list(value: Any, data: bytes, what: str, key: str, bounds: tuple[int, int] = INT32) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise _bad(data, what, f"{key} is not a list")
    return tuple(_int(item, data, what, key, bounds) for item in value)


def _str(value: Any, data: bytes, what: str, key: str) -> str:
    if not isinstance(value, str):
        raise _bad(data, what, f"{key} is not a string")
    return value


def _long_string(value: Any, data: bytes, what: str, key: str) -> int:
    """A number Kafka writes as a JSON string (timestamps, producer ids)."""
    text = _str(value, data, what, key)
    try:
        number = int(text)
    except ValueError:
        raise _bad(data, what, f"{key} is not a number") from None
    return _in_range(number, data, what, key, INT64)


def _partition_keyed(value: Any, data: bytes, what: str, key: str) -> dict[int, tuple[int, ...]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(data, what, f"{key} is not an object")
    result: dict[int, tuple[int, ...]] = {}
    for partition, replicas in value.items():
        try:
            number = int(partition)
        except ValueError:
            raise _bad(data, what, f"partition {partition!r} is not a number") from None
        _in_range(number, data, what, "partition", ID)
        result[number] = _int_list(replicas, data, what, key, ID)
    return result


def _partition_keyed_json(mapping: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(partition): list(mapping[partition]) for partition in sorted(mapping)}


# -- /controller, /controller_epoch ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    broker_id: int
    timestamp: int
    kraft_controller_epoch: int = -1


def encode_controller(registration: ControllerRegistration) -> bytes:
    return _dumps(
        {
            "version": 2,
            "brokerid": registration.broker_id,
            "timestamp": str(registration.timestamp),
            "kraftControllerEpoch": registration.kraft_controller_epoch,
        }
    )


def decode_controller(data: bytes) -> ControllerRegistration:
    what = "ZooKeeper registration for controller"
    document = _object(data, what)
    timestamp = document.get("timestamp")
    epoch = document.get("kraftControllerEpoch")
    return ControllerRegistration(
        broker_id=_int(document.get("brokerid"), data, what, "brokerid", ID),
        timestamp=_long_string(timestamp, data, what, "timestamp") if timestamp is not None else -1,
        kraft_controller_epoch=_int(epoch, data, what, "kraftControllerEpoch") if epoch is not None else -1,
    )


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    try:
        epoch = int(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ZNodeFormatError(f"Failed to parse the controller epoch: {_text(data)}") from None
    # Every controller request carries the epoch as an int32, and the next controller adds one.
    return _in_range(epoch, data, "the controller epoch", "epoch", (INT_MIN, INT_MAX - 1))


# -- /brokers/ids/N -------------------------------------------------------------------------------

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Before listener names existed (registration v2, v3) a listener was named after its protocol.
_PROTOCOLS_BY_NAME = {name: name for name in SECURITY_PROTOCOLS}
# Kafka's EndPoint pattern: LISTENER://host:port, with an IPv6 host in brackets.
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener: ``PLAINTEXT://host:9092``."""

    listener_name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    @classmethod
    def parse(cls, text: str, security_protocols: Mapping[str, str] | None = None) -> Endpoint:
        """Parse ``LISTENER://host:port``; the listener's protocol comes from the map, or is its name."""
        match = _ENDPOINT.match(text)
        if match is None:
            raise ValueError(f"Unable to parse {text} to a broker endpoint")
        listener, host, port = match.group(1), match.group(2), int(match.group(3))
        protocols = security_protocols if security_protocols is not None else _PROTOCOLS_BY_NAME
        if listener not in protocols:
            raise ValueError(f"No security protocol defined for listener {listener}")
        return cls(listener, host, port, protocols[listener])


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """The ephemeral znode a live broker owns: its listeners, rack and supported features.

    ``features`` maps a feature name to its supported range (``{"min_version": 1,
    "max_version": 3}``).
    """

    endpoints: tuple[Endpoint, ...]
    timestamp: int
    jmx_port: int = -1
    rack: str | None = None
    features: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    version: int = 5

    def _plaintext(self) -> Endpoint | None:
        return next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)

    @property
    def host(self) -> str | None:
        """The first PLAINTEXT endpoint's host, which the top-level ``host`` key carries for old clients."""
        endpoint = self._plaintext()
        return endpoint.host if endpoint is not None else None

    @property
    def port(self) -> int:
        endpoint = self._plaintext()
        return endpoint.port if endpoint is not None else -1


def encode_broker_registration(registration: BrokerRegistration) -> bytes:
    version = registration.version
    document: dict[str, Any] = {}
    if version >= 5:
        document["features"] = {name: dict(ranges) for name, ranges in registration.features.items()}
    if version >= 4:
        document["listener_security_protocol_map"] = {
            endpoint.listener_name: endpoint.security_protocol for endpoint in registration.endpoints
        }
    document["endpoints"] = [endpoint.connection_string for endpoint in registration.endpoints]
    document["jmx_port"] = registration.jmx_port
    document["port"] = registration.port
    document["host"] = registration.host
    document["version"] = version
    document["timestamp"] = str(registration.timestamp)
    if registration.rack is not None and version >= 3:
        document["rack"] = registration.rack
    return _dumps(document)


def decode_broker_registration(data: bytes, broker_id: int | None = None) -> BrokerRegistration:
    what = f"ZooKeeper registration for broker {broker_id}" if broker_id is not None else "broker registration"
    document = _object(data, what)
    version = _int(document.get("version"), data, what, "version")
    if version < 1:
        raise ZNodeFormatError(f"Unsupported version of broker registration: {_text(data)}")
    timestamp = document.get("timestamp")
    rack = document.get("rack")
    features = document.get("features") or {}
    if not isinstance(features, dict):
        raise _bad(data, what, "features is not an object")
    return BrokerRegistration(
        endpoints=_decode_endpoints(document, version, data, what),
        timestamp=_long_string(timestamp, data, what, "timestamp") if timestamp is not None else -1,
        jmx_port=_int(document.get("jmx_port", -1), data, what, "jmx_port"),
        rack=_str(rack, data, what, "rack") if rack is not None else None,
        features=features,
        version=version,
    )


def _decode_endpoints(document: dict[str, Any], version: int, data: bytes, what: str) -> tuple[Endpoint, ...]:
    if version == 1:
        host = _str(document.get("host"), data, what, "host")
        return (Endpoint("PLAINTEXT", host, _int(document.get("port"), data, what, "port", PORT)),)
    protocols = document.get("listener_security_protocol_map")
    if protocols is not None and not isinstance(protocols, dict):
        raise _bad(data, what, "listener_security_protocol_map is not an object")
    listeners = document.get("endpoints")
    if not isinstance(listeners, list):
        raise _bad(data, what, "endpoints is not a list")
    try:
        endpoints = tuple(Endpoint.parse(_str(text, data, what, "endpoints"), protocols) for text in listeners)
    except ValueError as error:
        raise _bad(data, what, str(error)) from None
    for endpoint in endpoints:
        _in_range(endpoint.port, data, what, f"the port of {endpoint.listener_name}", PORT)
    return endpoints


# -- /brokers/topics/T ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """A topic's replica assignment, its id and any reassignment in flight."""

    partitions: Mapping[int, tuple[int, ...]]
    topic_id: uuid.UUID | None = None
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


def encode_topic_assignment(assignment: TopicAssignment) -> bytes:
    document: dict[str, Any] = {"partitions": _partition_keyed_json(assignment.partitions)}
    if assignment.topic_id is not None:
        document["topic_id"] = uuid_to_string(assignment.topic_id)
    document["adding_replicas"] = _partition_keyed_json({p: r for p, r in assignment.adding_replicas.items() if r})
    document["removing_replicas"] = _partition_keyed_json({p: r for p, r in assignment.removing_replicas.items() if r})
    document["version"] = 3
    return _dumps(document)


def decode_topic_assignment(data: bytes, topic: str = "") -> TopicAssignment:
    if not data:
        return TopicAssignment({})
    what = f"the assignment of topic {topic}" if topic else "a topic assignment"
    document = _object(data, what)
    topic_id = document.get("topic_id")
    if topic_id is not None:
        try:
            topic_id = uuid_from_string(_str(topic_id, data, what, "topic_id"))
        except ValueError as error:
            raise _bad(data, what, str(error)) from None
    return TopicAssignment(
        partitions=_partition_keyed(document.get("partitions"), data, what, "partitions"),
        topic_id=topic_id,
        adding_replicas=_partition_keyed(document.get("adding_replicas"), data, what, "adding_replicas"),
        removing_replicas=_partition_keyed(document.get("removing_replicas"), data, what, "removing_replicas"),
    )


# -- /brokers/topics/T/partitions/P/state ---------------------------------------------------------

LEADER_RECOVERED = 0
LEADER_RECOVERING = 1
NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leader, leader epoch and ISR, stamped with the controller epoch that wrote them."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = LEADER_RECOVERED


def encode_leader_and_isr(state: LeaderAndIsr) -> bytes:
    document: dict[str, Any] = {
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "version": 1,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
    }
    if state.leader_recovery_state != LEADER_RECOVERED:
        document["leader_recovery_state"] = state.leader_recovery_state
    return _dumps(document)


def decode_leader_and_isr(data: bytes) -> LeaderAndIsr:
    what = "a partition state"
    document = _object(data, what)
    recovery = document.get("leader_recovery_state", LEADER_RECOVERED)
    return LeaderAndIsr(
        leader=_int(document.get("leader"), data, what, "leader"),
        leader_epoch=_int(document.get("leader_epoch"), data, what, "leader_epoch"),
        isr=_int_list(document.get("isr"), data, what, "isr", ID),
        controller_epoch=_int(document.get("controller_epoch"), data, what, "controller_epoch"),
        leader_recovery_state=_int(recovery, data, what, "leader_recovery_state", (LEADER_RECOVERED, LEADER_RECOVERING)),
    )


# -- /isr_change_notification/isr_change_N -------------------------------------------------------


def encode_isr_change_notification(partitions: Sequence[tuple[str, int]]) -> bytes:
    """What a Kafka broker before AlterIsr (IBP < 2.7) writes when an ISR it leads changed (Kafka's
    IsrChangeNotificationSequenceZNode)."""
    return _dumps({"version": 1, "partitions": [{"topic": topic, "partition": partition} for topic, partition in partitions]})


def decode_isr_change_notification(data: bytes) -> list[tuple[str, int]]:
    what = "an ISR change notification"
    document = _object(data, what)
    partitions = document.get("partitions")
    if not isinstance(partitions, list):
        raise _bad(data, what, "partitions is not a list")
    found = []
    for entry in partitions:
        if not isinstance(entry, dict):
            raise _bad(data, what, "a partition is not an object")
        found.append((_str(entry.get("topic"), data, what, "topic"), _int(entry.get("partition"), data, what, "partition", ID)))
    return found


# -- /cluster/id ----------------------------------------------------------------------------------


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    what = "the cluster id json"
    return _str(_object(data, what).get("id"), data, what, "id")


# -- /config/<type>/<name>, /config/changes -------------------------------------------------------


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    return _dumps({"version": 1, "config": dict(config)})


def decode_entity_config(data: bytes) -> dict[str, str]:
    """The config overrides; empty for an empty znode, as Kafka reads it."""
    if not data:
        return {}
    what = "an entity config"
    config = _object(data, what).get("config")
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise _bad(data, what, "config is not an object")
    return {key: _str(value, data, what, key) for key, value in config.items()}


def encode_config_change(entity_path: str) -> bytes:
    """A change notification for ``entity_path`` (``topics/T``, ``brokers/0``, ``brokers/<default>``)."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    """The changed entity's path; a version 1 notification names its type and name separately."""
    what = "a config change notification"
    document = _object(data, what)
    version = _int(document.get("version"), data, what, "version")
    if version == 1:
        entity_type = _str(document.get("entity_type"), data, what, "entity_type")
        return f"{entity_type}/{_str(document.get('entity_name'), data, what, 'entity_name')}"
    if version == 2:
        return _str(document.get("entity_path"), data, what, "entity_path")
    raise _bad(data, what, f"unsupported version {version}")


# -- /admin ---------------------------------------------------------------------------------------

# /admin/delete_topics/T holds no data: its existence marks T for deletion.
DELETE_TOPIC_MARKER = b""


def encode_reassignment(reassignment: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
    partitions = [
        {"topic": topic, "partition": partition, "replicas": list(replicas)}
        for (topic, partition), replicas in reassignment.items()
    ]
    return _dumps({"version": 1, "partitions": partitions})


def decode_reassignment(data: bytes) -> dict[tuple[str, int], tuple[int, ...]]:
    what = "a partition reassignment"
    result: dict[tuple[str, int], tuple[int, ...]] = {}
    for entry in _partition_entries(data, what):
        key = (_str(entry.get("topic"), data, what, "topic"), _int(entry.get("partition"), data, what, "partition", ID))
        result[key] = _int_list(entry.get("replicas"), data, what, "replicas", ID)
    return result


def encode_partition_list(partitions: Iterable[tuple[str, int]]) -> bytes:
    """The body of an ISR change notification or a preferred replica election."""
    entries = [{"topic": topic, "partition": partition} for topic, partition in partitions]
    return _dumps({"version": 1, "partitions": entries})


def decode_partition_list(data: bytes) -> list[tuple[str, int]]:
    what = "a partition list"
    return [
        (_str(entry.get("topic"), data, what, "topic"), _int(entry.get("partition"), data, what, "partition", ID))
        for entry in _partition_entries(data, what)
    ]


def _partition_entries(data: bytes, what: str) -> list[dict[str, Any]]:
    entries = _object(data, what).get("partitions")
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise _bad(data, what, "partitions is not a list of objects")
    return entries


LOG_DIR_FAILURE_EVENT = 1


def encode_log_dir_event(broker_id: int) -> bytes:
    return _dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes) -> int:
    what = "a log dir event notification"
    return _int(_object(data, what).get("broker"), data, what, "broker", ID)


# -- /latest_producer_id_block --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """The last block of producer ids handed out: ``block_start`` to ``block_end`` inclusive."""

    broker: int
    block_start: int
    block_end: int


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    return _dumps(
        {
            "version": 1,
            "broker": block.broker,
            "block_start": str(block.block_start),
            "block_end": str(block.block_end),
        }
    )


def decode_producer_id_block(data: bytes) -> ProducerIdBlock:
    what = "the producerId block json"
    document = _object(data, what)
    return ProducerIdBlock(
        broker=_int(document.get("broker"), data, what, "broker", ID),
        block_start=_long_string(document.get("block_start"), data, what, "block_start"),
        block_end=_long_string(document.get("block_end"), data, what, "block_end"),
    )


# -- /consumers/G/offsets/T/P ---------------------------------------------------------------------


# The old consumer wrote the next offset to consume as a plain decimal string and read it back
# with Scala's ``toLong`` (Java's Long.parseLong: an optional sign, ASCII digits, 64 bits).
_LONG = re.compile(rb"[+-]?[0-9]+")
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def encode_consumer_offset(offset: int) -> bytes:
    return str(offset).encode("ascii")


def decode_consumer_offset(data: bytes) -> int:
    if _LONG.fullmatch(data or b"") is None or not LONG_MIN <= int(data) <= LONG_MAX:
        raise ZNodeFormatError(f"Failed to parse a consumer offset: {_text(data or b'')!r} is not a decimal number")
    return int(data)


# -- /consumers/G/ids/C and /consumers/G/owners/T/P -------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerRegistration:
    """An old consumer's ``/consumers/G/ids/<consumerId>``: its topics (with stream counts), the
    subscription pattern (``static``, ``white_list`` or ``black_list``) and its start time."""

    subscription: Mapping[str, int]
    pattern: str = "static"
    timestamp: int = 0


def encode_consumer_registration(registration: ConsumerRegistration) -> bytes:
    return _dumps({
        "version": 1,
        "subscription": dict(registration.subscription),
        "pattern": registration.pattern,
        "timestamp": str(registration.timestamp),
    })


def decode_consumer_registration(data: bytes) -> ConsumerRegistration:
    what = "the consumer registration json"
    document = _object(data, what)
    subscription = document.get("subscription")
    if not isinstance(subscription, dict) or not all(isinstance(v, int) for v in subscription.values()):
        raise _bad(data, what, "subscription is not a map of topic to stream count")
    pattern = document.get("pattern", "static")
    timestamp = document.get("timestamp", "0")
    try:
        millis = int(timestamp)
    except (TypeError, ValueError):
        raise _bad(data, what, f"malformed timestamp {timestamp!r}") from None
    return ConsumerRegistration(subscription, str(pattern), millis)


def encode_consumer_owner(thread_id: str) -> bytes:
    """``/consumers/G/owners/T/P`` holds the owning consumer thread id: ``<consumerId>-<n>``."""
    return thread_id.encode("utf-8")


def decode_consumer_owner(data: bytes) -> str:
    return _text(data or b"")


# -- /feature -------------------------------------------------------------------------------------

FEATURE_DISABLED = 0
FEATURE_ENABLED = 1


@dataclass(frozen=True, slots=True)
class FeatureZNode:
    """The cluster's finalized features (name -> max version level) and whether versioning is on."""

    status: int
    features: Mapping[str, int]
    version: int = 2


def encode_feature_znode(znode: FeatureZNode) -> bytes:
    features: dict[str, dict[str, int]] = {}
    for name, level in znode.features.items():
        features[name] = {"max_version_level": level}
        if znode.version == 1:
            features[name]["min_version_level"] = level
    return _dumps({"features": features, "version": znode.version, "status": znode.status})


def decode_feature_znode(data: bytes) -> FeatureZNode:
    what = "feature information"
    document = _object(data, what)
    version = _int(document.get("version"), data, what, "version")
    if version not in (1, 2):
        raise _bad(data, what, f"unsupported version {version}")
    status = _int(document.get("status"), data, what, "status")
    if status not in (FEATURE_DISABLED, FEATURE_ENABLED):
        raise _bad(data, what, f"malformed status {status}")
    features = document.get("features")
    if not isinstance(features, dict):
        raise _bad(data, what, "features map is absent")
    levels: dict[str, int] = {}
    for name, levels_json in features.items():
        if not isinstance(levels_json, dict):
            raise _bad(data, what, f"feature {name} is not an object")
        levels[name] = _int(levels_json.get("max_version_level"), data, what, "max_version_level", INT16)
    return FeatureZNode(status=status, features=levels, version=version)


# -- ACLs: /kafka-acl, /kafka-acl-extended, their change nodes (ZkAclStore, ZkAclChangeStore) -----
#
#   /kafka-acl/Topic/orders                     {"version":1,"acls":[{"principal":"User:alice",
#                                                "permissionType":"Allow","operation":"Read","host":"*"}]}
#   /kafka-acl-extended/prefixed/Topic/team-    the same JSON, for a PREFIXED pattern
#   /kafka-acl-changes/acl_changes_0000000000   TOPIC:orders (LiteralAclChangeStore: ResourceType's
#                                               Java name, read in any case, ":" and the name)
#   /kafka-acl-extended-changes/acl_changes_0000000000
#                                               {"version":1,"resourceType":"TOPIC","name":"team-",
#                                                "patternType":"PREFIXED"}

LITERAL_ACL = "/kafka-acl"
EXTENDED_ACL = "/kafka-acl-extended"
LITERAL_ACL_CHANGES = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
ACL_VERSION = 1


def acl_store_path(pattern_type: PatternType) -> str:
    """The root of one pattern type's ACLs (ZkAclStore.aclPath)."""
    if pattern_type == PatternType.LITERAL:
        return LITERAL_ACL
    if pattern_type == PatternType.PREFIXED:
        return f"{EXTENDED_ACL}/{pattern_type.name.lower()}"
    raise ValueError(f"Invalid pattern type: {pattern_type.name}")


def acl_resource_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    return f"{acl_store_path(pattern_type)}/{resource_type.pascal_name}"


def acl_resource_path(resource: ResourcePattern) -> str:
    return f"{acl_resource_type_path(resource.pattern_type, resource.resource_type)}/{resource.name}"


def acl_change_root(pattern_type: PatternType) -> str:
    """Where a change to a pattern of this type is announced (ZkAclChangeStore.aclChangePath)."""
    return LITERAL_ACL_CHANGES if pattern_type == PatternType.LITERAL else EXTENDED_ACL_CHANGES


def acl_change_path(pattern_type: PatternType) -> str:
    """The path a sequential change node is created at."""
    return f"{acl_change_root(pattern_type)}/{ACL_CHANGE_PREFIX}"


def encode_acls(acls: Iterable[AccessControlEntry]) -> bytes:
    entries = sorted(acls, key=lambda a: (a.principal, a.permission_type, a.operation, a.host))
    return _dumps(
        {
            "version": ACL_VERSION,
            "acls": [
                {
                    "principal": acl.principal,
                    "permissionType": acl.permission_type.pascal_name,
                    "operation": acl.operation.pascal_name,
                    "host": acl.host,
                }
                for acl in entries
            ],
        }
    )


def decode_acls(data: bytes) -> frozenset[AccessControlEntry]:
    """AclEntry.fromBytes: an empty znode holds no ACLs; a version other than 1, a principal not
    of the form ``Type:name``, an operation or permission type Kafka does not name, is refused."""
    if not data:
        return frozenset()
    what = "ACLs"
    document = _object(data, what)
    version = document.get("version")
    if version != ACL_VERSION:
        raise _bad(data, what, f"unsupported version {version}")
    entries = document.get("acls")
    if not isinstance(entries, list):
        raise _bad(data, what, "acls is not an array")
    acls = set()
    for entry in entries:
        if not isinstance(entry, dict):
            raise _bad(data, what, "an ACL is not an object")
        principal = _str(entry.get("principal"), data, what, "principal")
        if ":" not in principal:
            raise _bad(data, what, f"principal {principal} is not of the form principalType:principalName")
        permission = AclPermissionType.from_name(_str(entry.get("permissionType"), data, what, "permissionType"))
        operation = AclOperation.from_name(_str(entry.get("operation"), data, what, "operation"))
        if permission in (AclPermissionType.UNKNOWN, AclPermissionType.ANY):
            raise _bad(data, what, f"unknown permissionType {entry.get('permissionType')}")
        if operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise _bad(data, what, f"unknown operation {entry.get('operation')}")
        acls.add(AccessControlEntry(principal, _str(entry.get("host"), data, what, "host"), operation, permission))
    return frozenset(acls)


def encode_acl_change(resource: ResourcePattern) -> bytes:
    if resource.pattern_type == PatternType.LITERAL:
        return f"{resource.resource_type.name}:{resource.name}".encode("utf-8")
    return _dumps(
        {"version": 1, "resourceType": resource.resource_type.name, "name": resource.name, "patternType": resource.pattern_type.name}
    )


def decode_acl_change(pattern_root: str, data: bytes) -> ResourcePattern:
    """The resource a change node under ``pattern_root`` (one of the two change roots) names."""
    if pattern_root == LITERAL_ACL_CHANGES:
        text = _text(data)
        type_name, sep, name = text.partition(":")
        if not sep:
            raise ZNodeFormatError(f"expected a string in format ResourceType:ResourceName but got {text}")
        return ResourcePattern(ResourceType.from_name(type_name), name, PatternType.LITERAL)
    what = "an ACL change event"
    document = _object(data, what)
    version = _int(document.get("version"), data, what, "version")
    if version > 1:
        raise _bad(data, what, f"unsupported version {version}")
    resource_type = ResourceType.from_name(_str(document.get("resourceType"), data, what, "resourceType"))
    pattern_type = PatternType.from_name(_str(document.get("patternType"), data, what, "patternType"))
    return ResourcePattern(resource_type, _str(document.get("name"), data, what, "name"), pattern_type)
