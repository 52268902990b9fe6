"""The cluster as the broker's handlers see it, kept in the metadata tree.

``ClusterMetadata`` is written only against ``MetadataStore``, so it runs the same on the embedded
tree and on ZooKeeper. It owns:

* the cluster id (``/cluster/id``), this broker's registration (``/brokers/ids/N``, ephemeral) and,
  in single-process mode, the controller role (``/controller``, ``/controller_epoch``);
* a cache of every topic (``TopicInfo``: id, partitions with replicas, leader, ISR and epochs,
  config overrides), rebuilt from the tree at ``start`` and kept current by watching it, so a
  change written by anyone (another broker, a ZooKeeper-era tool) reaches the cache and the
  ``on_topic_change`` listeners;
* the controller's operations, validated as Kafka 3.9 validates them and failing with
  ``KafkaError`` carrying Kafka's error code and message: ``create_topic`` (the KRaft controller's
  checks and wording), ``create_partitions`` (the ZooKeeper-mode wording), ``delete_topic``,
  ``set_topic_configs``, ``set_broker_configs`` and ``update_partition_state``. Each operation is one
  tree transaction, however many partitions it touches.

While this process is the controller it also finishes topics that ZooKeeper-era tools create by
writing only ``/brokers/topics/T`` (a topic id, partition state znodes with the first live replica
as leader) and deletes topics marked under ``/admin/delete_topics``, as Kafka's controller does.
In a ZooKeeper-mode tree, a partition's epoch is the version of its state znode.
"""

from __future__ import annotations

import enum
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kcli.metadata import topic_names
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import (
    BadVersionError,
    ChangeEvent,
    ChangeKind,
    CreateOp,
    DeleteOp,
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    Op,
    SetDataOp,
    Stat,
    join,
)
from kcli.errors import ErrorCode, KafkaError
from kcli.common import uuid_to_string

log = logging.getLogger("kcli.broker.metadata")

ZERO_UUID = uuid.UUID(int=0)
_ONE_UUID = uuid.UUID(int=1)
# Kafka purges config change notifications older than this (ZkNodeChangeNotificationListener).
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
_TOPIC_CONFIGS = zk.config_entity_type_path(zk.CONFIG_TYPE_TOPICS)
# Kafka's controller creates at most this many partitions per CreateTopics or CreatePartitions
# request (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH) and refuses a larger request whole
# with POLICY_VIOLATION. Checked before anything is allocated for the new partitions.
MAX_PARTITIONS_PER_REQUEST = 10_000

# Called with the replicas of the partitions an operation is about to add; raises KafkaError to
# refuse them (the broker checks its open-file budget).
NewPartitionsCheck = Callable[[Mapping[int, Sequence[int]]], None]


def check_partitions_per_request(new_partitions: int) -> None:
    """POLICY_VIOLATION when one request would create more than MAX_PARTITIONS_PER_REQUEST."""
    if new_partitions > MAX_PARTITIONS_PER_REQUEST:
        raise KafkaError(
            ErrorCode.POLICY_VIOLATION,
            f"Excessively large number of partitions per request: {new_partitions} new partitions, "
            f"at most {MAX_PARTITIONS_PER_REQUEST}.",
        )


def random_uuid() -> uuid.UUID:
    """Kafka's Uuid.randomUuid: never the reserved 0 or 1, never one whose string starts with '-'."""
    while True:
        candidate = uuid.uuid4()
        if candidate not in (ZERO_UUID, _ONE_UUID) and not uuid_to_string(candidate).startswith("-"):
            return candidate


def assign_replicas_to_brokers(
    brokers: Sequence[int],
    num_partitions: int,
    replication_factor: int,
    *,
    start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Kafka's rack-unaware AdminUtils placement.

    First replicas go round-robin over ``brokers`` from ``start_index`` (random when negative);
    the other replicas follow at a shift that grows by one each time the partition id wraps
    around the broker list, so followers of one broker's partitions spread over the others.
    """
    count = len(brokers)
    chooser = rng if rng is not None else random
    first_index = start_index if start_index >= 0 else chooser.randrange(count)
    shift = start_index if start_index >= 0 else chooser.randrange(count)
    partition = max(0, start_partition_id)
    assignment: dict[int, tuple[int, ...]] = {}
    for _ in range(num_partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        leader_index = (partition + first_index) % count
        followers = (brokers[_follower_index(leader_index, shift, j, count)] for j in range(replication_factor - 1))
        assignment[partition] = (brokers[leader_index], *followers)
        partition += 1
    return assignment


def _follower_index(leader_index: int, shift: int, replica: int, count: int) -> int:
    return (leader_index + 1 + (shift + replica) % (count - 1)) % count


# -- the model ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition: replicas in preference order, ISR, leader and the epochs that fence them.

    A partition whose state znode is missing (not yet elected) has leader -1 and epochs -1.
    """

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = zk.LEADER_RECOVERED
    controller_epoch: int = 0


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic as cached: treat ``partitions`` and ``configs`` as read-only."""

    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionState]
    configs: Mapping[str, str]

    @property
    def is_internal(self) -> bool:
        return topic_names.is_internal(self.name)

    @property
    def replication_factor(self) -> int:
        """Replicas of the first partition, minus any being added (what Kafka's describe shows)."""
        first = self.partitions.get(0) or next(iter(self.partitions.values()), None)
        return len(first.replicas) - len(first.adding_replicas) if first is not None else 0


class TopicChangeKind(enum.Enum):
    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class TopicChange:
    kind: TopicChangeKind
    name: str
    topic: TopicInfo | None
    previous: TopicInfo | None


TopicListener = Callable[[TopicChange], None]
ConfigValidator = Callable[[Mapping[str, str]], None]
# A state znode as read: its content and version (the partition epoch).
_LoadedState = tuple[zk.LeaderAndIsr, int]


class ClusterMetadata:
    """The cluster's metadata over a ``MetadataStore``; see the module docstring.

    ``default_num_partitions`` and ``default_replication_factor`` (``num.partitions``,
    ``default.replication.factor``) stand in for -1 in ``create_topic``.
    """

    def __init__(
        self,
        store: MetadataStore,
        *,
        default_num_partitions: int = 1,
        default_replication_factor: int = 1,
        rng: random.Random | None = None,
        new_partitions_check: NewPartitionsCheck | None = None,
    ) -> None:
        self.store = store
        self._new_partitions_check = new_partitions_check
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.RLock()
        self._topics: dict[str, TopicInfo] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}
        self._listeners: list[TopicListener] = []
        self._unwatch: list[Callable[[], None]] = []
        self._controller_id: int | None = None
        self._controller_epoch = 0

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Create Kafka's persistent paths, watch the tree and load every topic."""
        for path in zk.PERSISTENT_PATHS:
            self.store.ensure_path(path)
        for prefix in (zk.TOPICS, _TOPIC_CONFIGS, zk.DELETE_TOPICS):
            self._unwatch.append(self.store.watch(prefix, self._on_tree_change))
        for name in self.store.get_children(zk.TOPICS):
            self._refresh_topic(name)

    def close(self) -> None:
        for unwatch in self._unwatch:
            unwatch()
        self._unwatch.clear()

    def on_topic_change(self, listener: TopicListener) -> Callable[[], None]:
        """Call ``listener`` after each topic is created, updated or deleted; returns the remover."""
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    # -- cluster id, brokers, controller ----------------------------------------------------------

    def get_or_create_cluster_id(self) -> str:
        """The cluster id, created as a random 22-character id by the first broker to ask."""
        try:
            return zk.decode_cluster_id(self.store.get(zk.CLUSTER_ID)[0])
        except NoNodeError:
            pass
        cluster_id = uuid_to_string(random_uuid())
        try:
            self.store.create(zk.CLUSTER_ID, zk.encode_cluster_id(cluster_id), makepath=True)
        except NodeExistsError:
            return zk.decode_cluster_id(self.store.get(zk.CLUSTER_ID)[0])
        return cluster_id

    def register_broker(
        self,
        broker_id: int,
        endpoints: Sequence[zk.Endpoint],
        *,
        rack: str | None = None,
        jmx_port: int = -1,
        features: Mapping[str, Mapping[str, int]] | None = None,
    ) -> zk.BrokerRegistration:
        """Register this broker under ``/brokers/ids`` for as long as the store's session lives."""
        registration = zk.BrokerRegistration(
            endpoints=tuple(endpoints),
            timestamp=_now_ms(),
            jmx_port=jmx_port,
            rack=rack,
            features=dict(features or {}),
        )
        path = zk.broker_id_path(broker_id)
        try:
            self.store.create(path, zk.encode_broker_registration(registration), makepath=True, ephemeral=True)
        except NodeExistsError:
            raise NodeExistsError(path, f"Broker id {broker_id} is already registered at {path}") from None
        return registration

    def registered_brokers(self) -> list[int]:
        """The ids of the registered (live) brokers, ascending."""
        try:
            names = self.store.get_children(zk.BROKER_IDS)
        except NoNodeError:
            return []
        return sorted(int(name) for name in names if name.lstrip("-").isdigit())

    def broker_registration(self, broker_id: int) -> zk.BrokerRegistration | None:
        try:
            data, _ = self.store.get(zk.broker_id_path(broker_id))
        except NoNodeError:
            return None
        return zk.decode_broker_registration(data, broker_id)

    def become_controller(self, broker_id: int) -> int:
        """Take the controller role: ``/controller`` (ephemeral) and the next controller epoch.

        Raises NOT_CONTROLLER when another broker holds the role. Returns the new epoch.
        """
        epoch, version = self._controller_epoch_znode()
        registration = zk.ControllerRegistration(broker_id=broker_id, timestamp=_now_ms())
        ops: list[Op] = [
            CreateOp(zk.CONTROLLER, zk.encode_controller(registration), ephemeral=True),
            SetDataOp(zk.CONTROLLER_EPOCH, zk.encode_controller_epoch(epoch + 1), version),
        ]
        try:
            self.store.multi(ops)
        except (NodeExistsError, BadVersionError):
            holder = self.controller_id()
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"Broker {holder} is already the controller") from None
        with self._lock:
            self._controller_id = broker_id
            self._controller_epoch = epoch + 1
        for name in self.store.get_children(zk.TOPICS):
            self._refresh_topic(name)
        return epoch + 1

    def _controller_epoch_znode(self) -> tuple[int, int]:
        try:
            data, stat = self.store.get(zk.CONTROLLER_EPOCH)
            return zk.decode_controller_epoch(data), stat.version
        except NoNodeError:
            pass
        try:
            self.store.create(zk.CONTROLLER_EPOCH, zk.encode_controller_epoch(0))
            return 0, 0
        except NodeExistsError:
            return self._controller_epoch_znode()

    def controller_id(self) -> int | None:
        """The broker id in ``/controller``, or None when no broker holds the role."""
        try:
            return zk.decode_controller(self.store.get(zk.CONTROLLER)[0]).broker_id
        except NoNodeError:
            return None

    @property
    def is_controller(self) -> bool:
        return self._controller_id is not None

    @property
    def controller_epoch(self) -> int:
        return self._controller_epoch

    # -- reads ------------------------------------------------------------------------------------

    def topics(self) -> dict[str, TopicInfo]:
        with self._lock:
            return dict(self._topics)

    def topic(self, name: str) -> TopicInfo | None:
        with self._lock:
            return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        with self._lock:
            name = self._names_by_id.get(topic_id)
            return self._topics.get(name) if name is not None else None

    def broker_configs(self, broker_id: int | None) -> dict[str, str]:
        """The dynamic config overrides of one broker, or the cluster-wide defaults for None."""
        try:
            return zk.decode_entity_config(self.store.get(zk.broker_config_path(broker_id))[0])
        except NoNodeError:
            return {}

    # -- create topics ----------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str | None] | None = None,
        *,
        validate_only: bool = False,
        live_brokers: Iterable[int] | None = None,
        config_validator: ConfigValidator | None = None,
    ) -> TopicInfo:
        """Create a topic in one transaction, or with ``validate_only`` only check that it could be.

        -1 for ``num_partitions`` or ``replication_factor`` means the broker default; a manual
        ``assignment`` (partition -> replicas) requires both to be -1. ``live_brokers`` defaults to
        the registered brokers. New partitions lead on their first replica with every replica in
        sync, at leader epoch 0.
        """
        self._check_new_topic_name(name)
        overrides = _checked_configs(configs or {}, config_validator)
        brokers = sorted(set(live_brokers)) if live_brokers is not None else self.registered_brokers()
        if assignment:
            replicas = self._manual_assignment(assignment, num_partitions, replication_factor, brokers)
        else:
            replicas = self._placed_assignment(num_partitions, replication_factor, brokers)
        if self._new_partitions_check is not None:
            self._new_partitions_check(replicas)
        topic = self._new_topic(name, random_uuid(), replicas, overrides)
        if validate_only:
            return topic
        try:
            self.store.multi(self._creation_ops(topic))
        except NodeExistsError as error:
            if error.path == zk.topic_path(name):
                raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None
            raise
        self._apply(name, topic)
        return topic

    def _check_new_topic_name(self, name: str) -> None:
        if name == topic_names.CLUSTER_METADATA_TOPIC_NAME:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        topic_names.validate(name)
        existing = self.store.get_children(zk.TOPICS)
        if name in existing:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        colliding = topic_names.colliding_topics(name, existing)
        if colliding:
            raise KafkaError(
                ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {colliding[0]}"
            )

    def _manual_assignment(
        self,
        assignment: Mapping[int, Sequence[int]],
        num_partitions: int,
        replication_factor: int,
        brokers: Sequence[int],
    ) -> dict[int, tuple[int, ...]]:
        if replication_factor != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor was not set to -1.",
            )
        if num_partitions != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        check_partitions_per_request(len(assignment))
        registered = set(brokers)
        expected: int | None = None
        for replicas in assignment.values():
            _check_manual_replicas(replicas, expected, registered)
            expected = len(replicas)
        if any(partition not in assignment for partition in range(len(assignment))):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
            )
        return {partition: tuple(assignment[partition]) for partition in sorted(assignment)}

    def _placed_assignment(
        self, num_partitions: int, replication_factor: int, brokers: Sequence[int]
    ) -> dict[int, tuple[int, ...]]:
        if replication_factor < -1 or replication_factor == 0:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if num_partitions < -1 or num_partitions == 0:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        if num_partitions == -1:
            num_partitions = self.default_num_partitions
        if replication_factor == -1:
            replication_factor = self.default_replication_factor
        prefix = f"Unable to replicate the partition {replication_factor} time(s): "
        if not brokers:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, prefix + "All brokers are currently fenced.")
        if replication_factor > len(brokers):
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                prefix + f"The target replication factor of {replication_factor} cannot be reached because "
                f"only {len(brokers)} broker(s) are registered.",
            )
        check_partitions_per_request(num_partitions)
        return assign_replicas_to_brokers(brokers, num_partitions, replication_factor, rng=self._rng)

    def _new_topic(
        self, name: str, topic_id: uuid.UUID, replicas: Mapping[int, tuple[int, ...]], configs: Mapping[str, str]
    ) -> TopicInfo:
        partitions = {partition: self._new_partition(replicas[partition]) for partition in sorted(replicas)}
        return TopicInfo(name=name, topic_id=topic_id, partitions=partitions, configs=dict(configs))

    def _new_partition(self, replicas: tuple[int, ...]) -> PartitionState:
        return PartitionState(
            replicas=replicas,
            isr=replicas,
            leader=replicas[0],
            leader_epoch=0,
            partition_epoch=0,
            controller_epoch=self._controller_epoch,
        )

    def _creation_ops(self, topic: TopicInfo) -> list[Op]:
        name = topic.name
        ops: list[Op] = [self._upsert(zk.topic_config_path(name), zk.encode_entity_config(topic.configs))]
        assignment = zk.TopicAssignment(
            partitions={partition: state.replicas for partition, state in topic.partitions.items()},
            topic_id=topic.topic_id,
        )
        ops.append(CreateOp(zk.topic_path(name), zk.encode_topic_assignment(assignment)))
        ops.append(CreateOp(zk.topic_partitions_path(name)))
        ops.extend(self._partition_ops(name, topic.partitions))
        return ops

    @staticmethod
    def _partition_ops(name: str, partitions: Mapping[int, PartitionState]) -> list[Op]:
        ops: list[Op] = []
        for partition, state in partitions.items():
            leader_and_isr = zk.LeaderAndIsr(state.leader, state.leader_epoch, state.isr, state.controller_epoch)
            ops.append(CreateOp(zk.topic_partition_path(name, partition)))
            ops.append(CreateOp(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(leader_and_isr)))
        return ops

    def _upsert(self, path: str, value: bytes) -> Op:
        return SetDataOp(path, value) if self.store.exists(path) is not None else CreateOp(path, value)

    # -- delete topics ----------------------------------------------------------------------------

    def delete_topic(self, name: str | None = None, topic_id: uuid.UUID | None = None) -> TopicInfo:
        """Delete a topic, named or by id, with its partitions and config, in one transaction.

        Internal topics can be deleted, as on a Kafka 3.9 broker (only the tools refuse).
        """
        if name is not None and topic_id is not None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
        if name is None and topic_id is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
        if topic_id is not None:
            topic = self._topic_for_id(topic_id)
        else:
            assert name is not None
            found = self.topic(name)
            if found is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            topic = found
        self.store.multi(self._deletion_ops(topic.name))
        self._apply(topic.name, None)
        return topic

    def _topic_for_id(self, topic_id: uuid.UUID) -> TopicInfo:
        if topic_id == ZERO_UUID:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, f"Attempt to find topic with invalid topicId {uuid_to_string(topic_id)}"
            )
        topic = self.topic_by_id(topic_id)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
        return topic

    def _deletion_ops(self, name: str) -> list[Op]:
        ops: list[Op] = [DeleteOp(path) for path in self._subtree_deepest_first(zk.topic_path(name))]
        for path in (zk.topic_config_path(name), zk.delete_topic_path(name)):
            if self.store.exists(path) is not None:
                ops.append(DeleteOp(path))
        return ops

    def _subtree_deepest_first(self, root: str) -> list[str]:
        ordered: list[str] = []
        stack = [root]
        while stack:
            path = stack.pop()
            ordered.append(path)
            try:
                stack.extend(join(path, child) for child in self.store.get_children(path))
            except NoNodeError:
                ordered.pop()
        return ordered[::-1]

    def _delete_marked(self, name: str) -> None:
        """Carry out a deletion a ZooKeeper-era tool requested by creating /admin/delete_topics/T."""
        ops = self._deletion_ops(name) if self.store.exists(zk.topic_path(name)) is not None else []
        if not ops and self.store.exists(zk.delete_topic_path(name)) is not None:
            ops = [DeleteOp(zk.delete_topic_path(name))]
        if ops:
            try:
                self.store.multi(ops)
            except (NoNodeError, BadVersionError):
                return
        self._apply(name, None)

    # -- create partitions ------------------------------------------------------------------------

    def create_partitions(
        self,
        name: str,
        new_total: int,
        assignment: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
        live_brokers: Iterable[int] | None = None,
    ) -> TopicInfo:
        """Grow a topic to ``new_total`` partitions (``assignment``: replicas of each new one)."""
        data, stat = self._topic_znode(name)
        current = zk.decode_topic_assignment(data, name)
        self._check_growable(name, current, new_total)
        brokers = sorted(set(live_brokers)) if live_brokers is not None else self.registered_brokers()
        existing = len(current.partitions)
        check_partitions_per_request(new_total - existing)
        first_replicas = current.partitions[min(current.partitions)]
        if assignment is not None:
            added = _manual_new_partitions(assignment, existing, new_total - existing, len(first_replicas), brokers)
        else:
            added = _placed_new_partitions(brokers, first_replicas, existing, new_total - existing)
        if self._new_partitions_check is not None:
            self._new_partitions_check(added)
        topic = self.topic(name) or self._load_topic(name)
        assert topic is not None
        partitions = dict(topic.partitions)
        partitions.update({partition: self._new_partition(replicas) for partition, replicas in added.items()})
        grown = replace(topic, partitions=partitions)
        if validate_only:
            return grown
        assignment_now = replace(current, partitions={**current.partitions, **added})
        ops: list[Op] = [SetDataOp(zk.topic_path(name), zk.encode_topic_assignment(assignment_now), stat.version)]
        ops.extend(self._partition_ops(name, {partition: partitions[partition] for partition in added}))
        self.store.multi(ops)
        self._apply(name, grown)
        return grown

    def _topic_znode(self, name: str) -> tuple[bytes, Stat]:
        try:
            return self.store.get(zk.topic_path(name))
        except NoNodeError:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.") from None

    def _check_growable(self, name: str, current: zk.TopicAssignment, new_total: int) -> None:
        if not current.partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if self.store.exists(zk.delete_topic_path(name)) is not None:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
        if any(current.adding_replicas.values()) or any(current.removing_replicas.values()):
            raise KafkaError(
                ErrorCode.REASSIGNMENT_IN_PROGRESS, f"A partition reassignment is in progress for the topic '{name}'."
            )
        existing = len(current.partitions)
        if new_total < existing:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {existing} partitions, which is higher than the requested {new_total}.",
            )
        if new_total == existing:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {existing} partitions.")

    # -- configs ----------------------------------------------------------------------------------

    def set_topic_configs(
        self, name: str, configs: Mapping[str, str], *, config_validator: ConfigValidator | None = None
    ) -> TopicInfo:
        """Replace a topic's config overrides (and notify other brokers through /config/changes)."""
        if self.store.exists(zk.topic_path(name)) is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        overrides = _checked_configs(configs, config_validator)
        self._write_entity_config(zk.CONFIG_TYPE_TOPICS, name, overrides)
        topic = self._refresh_topic(name)
        assert topic is not None
        return topic

    def set_broker_configs(self, broker_id: int | None, configs: Mapping[str, str]) -> None:
        """Replace one broker's dynamic config overrides, or the cluster-wide defaults for None."""
        self._write_entity_config(zk.CONFIG_TYPE_BROKERS, zk.broker_entity_name(broker_id), dict(configs))

    def _write_entity_config(self, entity_type: str, entity_name: str, configs: Mapping[str, str]) -> None:
        path = zk.config_entity_path(entity_type, entity_name)
        change = zk.encode_config_change(f"{entity_type}/{entity_name}")
        ops: list[Op] = [self._upsert(path, zk.encode_entity_config(configs))]
        ops.append(CreateOp(zk.config_change_path(), change, sequence=True))
        ops.extend(DeleteOp(expired) for expired in self._expired_config_changes())
        self.store.multi(ops)

    def _expired_config_changes(self) -> list[str]:
        horizon = _now_ms() - CONFIG_CHANGE_EXPIRATION_MS
        expired = []
        for child in self.store.get_children(zk.CONFIG_CHANGES):
            path = join(zk.CONFIG_CHANGES, child)
            stat = self.store.exists(path)
            if stat is not None and stat.ctime < horizon:
                expired.append(path)
        return expired

    # -- partition state --------------------------------------------------------------------------

    def update_partition_state(
        self,
        name: str,
        partition: int,
        *,
        leader: int | None = None,
        isr: Sequence[int] | None = None,
        leader_recovery_state: int | None = None,
        bump_leader_epoch: bool | None = None,
        expected_partition_epoch: int | None = None,
    ) -> PartitionState:
        """Change a partition's leader and/or ISR with a conditional write of its state znode.

        The leader epoch grows by one when the leader changes (or when ``bump_leader_epoch``);
        the partition epoch (the znode's version) grows with every update. A stale
        ``expected_partition_epoch`` or a concurrent update fails with INVALID_UPDATE_VERSION.
        """
        path = zk.partition_state_path(name, partition)
        try:
            data, stat = self.store.get(path)
        except NoNodeError:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
        if expected_partition_epoch is not None and expected_partition_epoch != stat.version:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION)
        current = zk.decode_leader_and_isr(data)
        new_leader = current.leader if leader is None else leader
        bump = new_leader != current.leader if bump_leader_epoch is None else bump_leader_epoch
        updated = zk.LeaderAndIsr(
            leader=new_leader,
            leader_epoch=current.leader_epoch + 1 if bump else current.leader_epoch,
            isr=current.isr if isr is None else tuple(isr),
            controller_epoch=self._controller_epoch,
            leader_recovery_state=(
                current.leader_recovery_state if leader_recovery_state is None else leader_recovery_state
            ),
        )
        try:
            self.store.set(path, zk.encode_leader_and_isr(updated), stat.version)
        except BadVersionError:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION) from None
        self._refresh_partitions(name, {partition})
        topic = self.topic(name)
        assert topic is not None
        return topic.partitions[partition]

    # -- cache ------------------------------------------------------------------------------------

    def _on_tree_change(self, events: list[ChangeEvent]) -> None:
        whole: set[str] = set()
        states: dict[str, set[int]] = {}
        marked: set[str] = set()
        for event in events:
            parts = event.path.split("/")
            if event.path.startswith(zk.TOPICS + "/"):
                if len(parts) == 7 and parts[6] == "state" and event.kind is ChangeKind.CHANGED and parts[5].isdigit():
                    states.setdefault(parts[3], set()).add(int(parts[5]))
                else:
                    whole.add(parts[3])
            elif event.path.startswith(_TOPIC_CONFIGS + "/") and len(parts) == 4:
                whole.add(parts[3])
            elif event.path.startswith(zk.DELETE_TOPICS + "/") and len(parts) == 4:
                if event.kind is ChangeKind.CREATED:
                    marked.add(parts[3])
        for name in sorted(whole):
            self._refresh_topic(name)
        for name in sorted(states.keys() - whole):
            self._refresh_partitions(name, states[name])
        if self.is_controller:
            for name in sorted(marked):
                self._delete_marked(name)

    def _refresh_topic(self, name: str) -> TopicInfo | None:
        topic = self._load_topic(name)
        self._apply(name, topic)
        return topic

    def _refresh_partitions(self, name: str, partitions: set[int]) -> None:
        topic = self.topic(name)
        if topic is None or not partitions <= topic.partitions.keys():
            self._refresh_topic(name)
            return
        updated = dict(topic.partitions)
        for partition in partitions:
            loaded = self._load_state(name, partition)
            if loaded is None:
                self._refresh_topic(name)
                return
            previous = updated[partition]
            updated[partition] = _partition_state(
                previous.replicas, previous.adding_replicas, previous.removing_replicas, loaded
            )
        self._apply(name, replace(topic, partitions=updated))

    def _load_topic(self, name: str) -> TopicInfo | None:
        try:
            data, stat = self.store.get(zk.topic_path(name))
        except NoNodeError:
            return None
        assignment = zk.decode_topic_assignment(data, name)
        states = {partition: self._load_state(name, partition) for partition in assignment.partitions}
        if self.is_controller and (assignment.topic_id is None or None in states.values()):
            assignment, states = self._complete_topic(name, assignment, stat.version, states)
        try:
            configs = zk.decode_entity_config(self.store.get(zk.topic_config_path(name))[0])
        except NoNodeError:
            configs = {}
        partitions = {}
        for partition in sorted(assignment.partitions):
            partitions[partition] = _partition_state(
                assignment.partitions[partition],
                assignment.adding_replicas.get(partition, ()),
                assignment.removing_replicas.get(partition, ()),
                states[partition],
            )
        return TopicInfo(name, assignment.topic_id or ZERO_UUID, partitions, configs)

    def _load_state(self, name: str, partition: int) -> _LoadedState | None:
        try:
            data, stat = self.store.get(zk.partition_state_path(name, partition))
        except NoNodeError:
            return None
        return zk.decode_leader_and_isr(data), stat.version

    def _complete_topic(
        self,
        name: str,
        assignment: zk.TopicAssignment,
        version: int,
        states: dict[int, _LoadedState | None],
    ) -> tuple[zk.TopicAssignment, dict[int, _LoadedState | None]]:
        """As controller, give a topic written without them an id and its partitions' first state."""
        ops: list[Op] = []
        if assignment.topic_id is None:
            assignment = replace(assignment, topic_id=random_uuid())
            ops.append(SetDataOp(zk.topic_path(name), zk.encode_topic_assignment(assignment), version))
        if self.store.exists(zk.topic_partitions_path(name)) is None:
            ops.append(CreateOp(zk.topic_partitions_path(name)))
        live = set(self.registered_brokers())
        completed = dict(states)
        for partition, state in states.items():
            in_sync = tuple(replica for replica in assignment.partitions[partition] if replica in live)
            if state is not None or not in_sync:
                continue
            first = zk.LeaderAndIsr(in_sync[0], 0, in_sync, self._controller_epoch)
            if self.store.exists(zk.topic_partition_path(name, partition)) is None:
                ops.append(CreateOp(zk.topic_partition_path(name, partition)))
            ops.append(CreateOp(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(first)))
            completed[partition] = (first, 0)
        if ops:
            try:
                self.store.multi(ops)
            except (NodeExistsError, BadVersionError, NoNodeError):
                # Someone else changed the topic meanwhile; their change brings another refresh.
                return assignment, states
        return assignment, completed

    def _apply(self, name: str, topic: TopicInfo | None) -> None:
        with self._lock:
            previous = self._topics.get(name)
            if previous == topic:
                return
            if previous is not None:
                self._names_by_id.pop(previous.topic_id, None)
            if topic is None:
                del self._topics[name]
            else:
                self._topics[name] = topic
                self._names_by_id[topic.topic_id] = name
            listeners = list(self._listeners)
        if previous is None:
            kind = TopicChangeKind.CREATED
        elif topic is None:
            kind = TopicChangeKind.DELETED
        else:
            kind = TopicChangeKind.UPDATED
        change = TopicChange(kind, name, topic, previous)
        for listener in listeners:
            try:
                listener(change)
            except Exception:
                log.exception("A topic listener failed on %s of topic %s", kind.value, name)


# -- validation helpers ---------------------------------------------------------------------------


def _checked_configs(configs: Mapping[str, str | None], validator: ConfigValidator | None) -> dict[str, str]:
    nulls = [key for key, value in configs.items() if value is None]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(nulls)}")
    checked = {key: value for key, value in configs.items() if value is not None}
    if validator is not None:
        validator(checked)
    return checked


def _check_manual_replicas(replicas: Sequence[int], expected: int | None, registered: set[int]) -> None:
    """The KRaft controller's checks of one manually assigned partition."""
    if not replicas:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        )
    previous = None
    for broker in sorted(replicas):
        if broker not in registered:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker}, but no such broker is registered.",
            )
        if broker == previous:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker} more than once.",
            )
        previous = broker
    if expected is not None and len(replicas) != expected:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is "
            f"not consistent with previous partitions, which have {expected} replica(s).",
        )


def _manual_new_partitions(
    assignment: Sequence[Sequence[int]], existing: int, increment: int, replication_factor: int, brokers: Sequence[int]
) -> dict[int, tuple[int, ...]]:
    """The ZooKeeper-mode checks of the replicas given for new partitions."""
    available = set(brokers)
    unknown = list(dict.fromkeys(broker for replicas in assignment for broker in replicas if broker not in available))
    if unknown:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
        )
    if len(assignment) != increment:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Increasing the number of partitions by {increment} but {len(assignment)} assignments provided.",
        )
    added = {existing + index: tuple(replicas) for index, replicas in enumerate(assignment)}
    for partition, replicas in added.items():
        if not replicas:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Cannot have replication factor of 0 for partition id {partition}.",
            )
        if len(set(replicas)) != len(replicas):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} "
                f"for partition id {partition}.",
            )
    mismatched = {
        partition: len(replicas) for partition, replicas in added.items() if len(replicas) != replication_factor
    }
    if mismatched:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Inconsistent replication factor between partitions, partition 0 has {replication_factor} while "
            f"partitions [{', '.join(map(str, mismatched))}] have replication factors "
            f"[{', '.join(map(str, mismatched.values()))}], respectively.",
        )
    return added


def _placed_new_partitions(
    brokers: Sequence[int], first_replicas: tuple[int, ...], existing: int, increment: int
) -> dict[int, tuple[int, ...]]:
    """ZooKeeper-mode placement of new partitions: round-robin continuing from partition 0's leader."""
    replication_factor = len(first_replicas)
    if replication_factor > len(brokers):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.",
        )
    start = next((index for index, broker in enumerate(brokers) if broker >= first_replicas[0]), 0)
    return assign_replicas_to_brokers(
        brokers, increment, replication_factor, start_index=start, start_partition_id=existing
    )


def _partition_state(
    replicas: tuple[int, ...],
    adding: tuple[int, ...],
    removing: tuple[int, ...],
    loaded: _LoadedState | None,
) -> PartitionState:
    if loaded is None:
        return PartitionState(replicas, (), zk.NO_LEADER, -1, -1, adding, removing)
    state, version = loaded
    return PartitionState(
        replicas=replicas,
        isr=state.isr,
        leader=state.leader,
        leader_epoch=state.leader_epoch,
        partition_epoch=version,
        adding_replicas=adding,
        removing_replicas=removing,
        leader_recovery_state=state.leader_recovery_state,
        controller_epoch=state.controller_epoch,
    )


def _now_ms() -> int:
    return int(time.time() * 1000)
