"""Kafka's znodes, read and written as values (Kafka's ``KafkaZkClient``).

``KafkaZkClient`` is the one place that knows which znode holds what: the cluster id, broker
registrations, the controller and its epoch, topic assignments, partition states, entity configs
and their change notifications, topic deletion marks. It works on any ``MetadataStore`` (the
embedded tree or ZooKeeper) and makes no decisions: validation lives in ``admin_zk_client``,
elections in the broker's controller. Each multi-node change is one tree transaction.
In a ZooKeeper-mode tree, a partition's epoch is the version of its state znode.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from kcli.common import uuid_to_string
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import (
    BadVersionError,
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
from kcli.metadata.topics import ZERO_UUID, PartitionState, TopicInfo, random_uuid

log = logging.getLogger("kcli.metadata")

# Kafka purges config change notifications older than this (ZkNodeChangeNotificationListener).
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
TOPIC_CONFIGS = zk.config_entity_type_path(zk.CONFIG_TYPE_TOPICS)

# A state znode as read: its content and version (the partition epoch).
LoadedState = tuple[zk.LeaderAndIsr, int]


def now_ms() -> int:
    return int(time.time() * 1000)


class KafkaZkClient:
    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self._reported_malformed: set[str] = set()

    def report_malformed(self, error: zk.ZNodeFormatError, logger: logging.Logger) -> None:
        """Log a znode that holds no JSON Kafka would write there, once per content: whoever reads
        it skips it and goes on with the rest, until it is written again."""
        text = str(error)
        if text not in self._reported_malformed:
            self._reported_malformed.add(text)
            logger.error("Skipping a malformed znode until it is written again: %s", text)

    def create_top_level_paths(self) -> None:
        """The persistent paths a Kafka broker creates at start-up."""
        for path in zk.PERSISTENT_PATHS:
            self.store.ensure_path(path)

    # -- cluster id, brokers ------------------------------------------------------------------------

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
        """Register a broker under ``/brokers/ids`` for as long as the store's session lives."""
        registration = zk.BrokerRegistration(
            endpoints=tuple(endpoints),
            timestamp=now_ms(),
            jmx_port=jmx_port,
            rack=rack,
            features=dict(features or {}),
        )
        path = zk.broker_id_path(broker_id)
        try:
            self.store.create(path, zk.encode_broker_registration(registration), makepath=True, ephemeral=True)
        except NodeExistsError:
            # Kafka's checked ephemeral create: this session's own node (a retry after a lost
            # answer) stands; another session's stops the broker.
            self.check_broker_id_free(broker_id)
        return registration

    def generate_broker_sequence_id(self) -> int:
        """The next broker sequence number: ``/brokers/seqid`` is written (empty, any version) and
        its new version is the number, as Kafka's KafkaZkClient.generateBrokerSequenceId; a
        generated broker id is this plus ``reserved.broker.max.id``."""
        try:
            return self.store.set(zk.BROKER_SEQUENCE_ID, b"").version
        except NoNodeError:
            self.store.ensure_path(zk.BROKER_SEQUENCE_ID)
            return self.store.set(zk.BROKER_SEQUENCE_ID, b"").version

    def check_broker_id_free(self, broker_id: int) -> None:
        """Kafka's refusal (KafkaZkClient.checkedEphemeralCreate) when another session holds
        ``/brokers/ids/<id>``: checked before a broker loads anything, and at registration."""
        path = zk.broker_id_path(broker_id)
        stat = self.store.exists(path)
        if stat is not None and stat.ephemeral_owner != self.store.session_id:
            raise NodeExistsError(
                path,
                f"Error while creating ephemeral at {path}, node already exists and owner '{stat.ephemeral_owner}' "
                f"does not match current session '{self.store.session_id}'",
            )

    def registered_brokers(self) -> list[int]:
        """The ids of the registered (live) brokers, ascending."""
        try:
            names = self.store.get_children(zk.BROKER_IDS)
        except NoNodeError:
            return []
        ids = []
        for name in names:
            if _is_int32(name):
                ids.append(int(name))
            elif name.lstrip("-").isdigit():
                self.report_malformed(zk.ZNodeFormatError(f"{zk.BROKER_IDS}/{name}: the broker id is out of range [{zk.INT32[0]}, {zk.INT32[1]}]"), log)
        return sorted(ids)

    def live_brokers(
        self, on_malformed: Callable[[zk.ZNodeFormatError], None]
    ) -> dict[int, tuple[zk.BrokerRegistration, Stat]]:
        """The brokers alive as the controller counts them, by id, each with its registration and
        the registration's Stat (its czxid is the broker's epoch): the registered brokers whose
        ``/brokers/ids/N`` reads and names an endpoint (pipelined reads). A registration that
        cannot be read is handed to ``on_malformed`` and left out. Every broker's metadata cache
        learns the same set from the controller, and replicas are placed on it alone."""
        paths = {zk.broker_id_path(broker_id): broker_id for broker_id in self.registered_brokers()}
        live: dict[int, tuple[zk.BrokerRegistration, Stat]] = {}
        for path, answer in self.store.get_many(list(paths)).items():
            if answer is None:
                continue
            broker_id = paths[path]
            try:
                registration = decoded(path, zk.decode_broker_registration, answer[0], broker_id)
            except zk.ZNodeFormatError as e:
                on_malformed(e)
                continue
            if registration.endpoints:
                live[broker_id] = (registration, answer[1])
        return live

    def broker_registration(self, broker_id: int) -> zk.BrokerRegistration | None:
        try:
            data, _ = self.store.get(zk.broker_id_path(broker_id))
        except NoNodeError:
            return None
        return decoded(zk.broker_id_path(broker_id), zk.decode_broker_registration, data, broker_id)

    # -- controller -------------------------------------------------------------------------------

    def controller_id(self) -> int | None:
        """The broker id in ``/controller``, or None when no broker holds the role."""
        try:
            return zk.decode_controller(self.store.get(zk.CONTROLLER)[0]).broker_id
        except NoNodeError:
            return None

    def controller_epoch(self) -> tuple[int, int]:
        """``/controller_epoch`` and its znode version, created as 0 when missing."""
        try:
            data, stat = self.store.get(zk.CONTROLLER_EPOCH)
            return zk.decode_controller_epoch(data), stat.version
        except NoNodeError:
            pass
        try:
            self.store.create(zk.CONTROLLER_EPOCH, zk.encode_controller_epoch(0))
            return 0, 0
        except NodeExistsError:
            return self.controller_epoch()

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """Create ``/controller`` and bump ``/controller_epoch`` in one transaction, conditional on
        the epoch's version; ``NodeExistsError`` or ``BadVersionError`` when another broker won.
        Returns the new epoch and ``/controller_epoch``'s new version (the controller's later
        writes check it)."""
        epoch, version = self.controller_epoch()
        registration = zk.ControllerRegistration(broker_id=broker_id, timestamp=now_ms())
        results = self.store.multi(
            [
                CreateOp(zk.CONTROLLER, zk.encode_controller(registration), ephemeral=True),
                SetDataOp(zk.CONTROLLER_EPOCH, zk.encode_controller_epoch(epoch + 1), version),
            ]
        )
        return epoch + 1, results[1].version

    def enable_feature_versioning(self) -> None:
        """``/feature`` as a Kafka 2.8 controller leaves it on election (IBP 2.7+): created enabled
        with no finalized features (``{"features":{},"version":1,"status":1}``), or switched to
        enabled when found disabled; an enabled one is left as it is."""
        enabled = zk.FeatureZNode(status=zk.FEATURE_ENABLED, features={}, version=1)
        try:
            data, stat = self.store.get(zk.FEATURE)
        except NoNodeError:
            try:
                self.store.create(zk.FEATURE, zk.encode_feature_znode(enabled))
            except NodeExistsError:
                pass
            return
        current = zk.decode_feature_znode(data)
        if current.status != zk.FEATURE_ENABLED:
            try:
                self.store.set(zk.FEATURE, zk.encode_feature_znode(replace(current, status=zk.FEATURE_ENABLED)), stat.version)
            except BadVersionError:
                pass  # changed meanwhile: whoever changed it decided

    # -- topics -----------------------------------------------------------------------------------

    def topic_names(self) -> list[str]:
        return self.store.get_children(zk.TOPICS)

    def topic_exists(self, name: str) -> bool:
        return self.store.exists(zk.topic_path(name)) is not None

    def is_marked_for_deletion(self, name: str) -> bool:
        return self.store.exists(zk.delete_topic_path(name)) is not None

    def topic_assignment(self, name: str) -> tuple[zk.TopicAssignment, Stat]:
        """``/brokers/topics/T`` decoded, with its Stat; UNKNOWN_TOPIC_OR_PARTITION when missing."""
        try:
            data, stat = self.store.get(zk.topic_path(name))
        except NoNodeError:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.") from None
        return decoded(zk.topic_path(name), zk.decode_topic_assignment, data, name), stat

    def partition_state(self, name: str, partition: int) -> LoadedState | None:
        try:
            data, stat = self.store.get(zk.partition_state_path(name, partition))
        except NoNodeError:
            return None
        return decoded(zk.partition_state_path(name, partition), zk.decode_leader_and_isr, data), stat.version

    def topic_configs(self, name: str) -> dict[str, str]:
        return self.entity_configs(zk.CONFIG_TYPE_TOPICS, name)

    def broker_configs(self, broker_id: int | None) -> dict[str, str]:
        """The dynamic config overrides of one broker, or the cluster-wide defaults for None."""
        return self.entity_configs(zk.CONFIG_TYPE_BROKERS, zk.broker_entity_name(broker_id))

    def entity_configs(self, entity_type: str, entity_name: str) -> dict[str, str]:
        """``/config/<type>/<name>``'s overrides in the znode's order; empty when it is missing
        (Kafka's getEntityConfigs)."""
        path = zk.config_entity_path(entity_type, entity_name)
        try:
            data = self.store.get(path)[0]
        except NoNodeError:
            return {}
        return decoded(path, zk.decode_entity_config, data)

    def entities_with_config(self, entity_type: str) -> list[str]:
        """The names under ``/config/<type>`` (Kafka's getAllEntitiesWithConfig)."""
        try:
            return self.store.get_children(zk.config_entity_type_path(entity_type))
        except NoNodeError:
            return []

    def brokers_with_configs(self) -> list[int]:
        """The broker ids that have a ``/config/brokers/<id>`` node."""
        try:
            names = self.store.get_children(zk.config_entity_type_path(zk.CONFIG_TYPE_BROKERS))
        except NoNodeError:
            return []
        return sorted(int(name) for name in names if _is_int32(name) and int(name) >= 0)

    def load_topic(self, name: str, on_malformed_state: Callable[[zk.ZNodeFormatError], None] | None = None) -> TopicInfo | None:
        """The topic as the tree holds it now, or None; partitions without a state znode yet have
        leader -1. With ``on_malformed_state``, a state znode that cannot be read is handed to it
        and its partition read as one without a state; without, the error is raised."""
        try:
            assignment, _ = self.topic_assignment(name)
        except KafkaError:
            return None
        states = {}
        for partition in assignment.partitions:
            try:
                states[partition] = self.partition_state(name, partition)
            except zk.ZNodeFormatError as e:
                if on_malformed_state is None:
                    raise
                on_malformed_state(e)
                states[partition] = None
        return self.topic_info(name, assignment, states)

    def topic_info(
        self, name: str, assignment: zk.TopicAssignment, states: Mapping[int, LoadedState | None]
    ) -> TopicInfo:
        partitions = {}
        for partition in sorted(assignment.partitions):
            partitions[partition] = partition_state(
                assignment.partitions[partition],
                assignment.adding_replicas.get(partition, ()),
                assignment.removing_replicas.get(partition, ()),
                states[partition],
            )
        return TopicInfo(name, assignment.topic_id or ZERO_UUID, partitions, self.topic_configs(name))

    def topic_creation_ops(self, topic: TopicInfo) -> list[Op]:
        """Config and assignment of a new topic (Kafka's createTopicWithAssignment): its partition
        states are the controller's to write."""
        name = topic.name
        ops: list[Op] = [self.upsert(zk.topic_config_path(name), zk.encode_entity_config(topic.configs))]
        assignment = zk.TopicAssignment(
            partitions={partition: state.replicas for partition, state in topic.partitions.items()},
            topic_id=topic.topic_id,
        )
        ops.append(CreateOp(zk.topic_path(name), zk.encode_topic_assignment(assignment)))
        return ops

    def topic_deletion_ops(self, name: str) -> list[Op]:
        """Everything of a topic: its subtree deepest first, its config and its deletion mark."""
        ops: list[Op] = [DeleteOp(path) for path in self.subtree_deepest_first(zk.topic_path(name))]
        for path in (zk.topic_config_path(name), zk.delete_topic_path(name)):
            if self.store.exists(path) is not None:
                ops.append(DeleteOp(path))
        return ops

    def subtree_deepest_first(self, root: str) -> list[str]:
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

    def upsert(self, path: str, value: bytes) -> Op:
        return SetDataOp(path, value) if self.store.exists(path) is not None else CreateOp(path, value)

    def set_partition_state(self, name: str, partition: int, state: zk.LeaderAndIsr, version: int) -> None:
        """A conditional write of a state znode; ``BadVersionError`` when someone wrote it first."""
        self.store.set(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(state), version)

    # -- configs ----------------------------------------------------------------------------------

    def write_entity_config(self, entity_type: str, entity_name: str, configs: Mapping[str, str]) -> None:
        """An entity's config and the change notification other brokers follow, in one transaction
        that also purges expired notifications."""
        path = zk.config_entity_path(entity_type, entity_name)
        change = zk.encode_config_change(f"{entity_type}/{entity_name}")
        ops: list[Op] = [self.upsert(path, zk.encode_entity_config(configs))]
        ops.append(CreateOp(zk.config_change_path(), change, sequence=True))
        ops.extend(DeleteOp(expired) for expired in self._expired_config_changes())
        self.store.multi(ops)

    def _expired_config_changes(self) -> list[str]:
        horizon = now_ms() - CONFIG_CHANGE_EXPIRATION_MS
        expired = []
        for child in self.store.get_children(zk.CONFIG_CHANGES):
            path = join(zk.CONFIG_CHANGES, child)
            stat = self.store.exists(path)
            if stat is not None and stat.ctime < horizon:
                expired.append(path)
        return expired


def _is_int32(name: str) -> bool:
    """Whether a znode's name is a number an int32 field can carry (a broker id)."""
    return name.lstrip("-").isascii() and name.lstrip("-").isdigit() and zk.INT32[0] <= int(name) <= zk.INT32[1]


def decoded(path: str, decode, data: bytes, *args):
    """``decode(data, *args)``, a ``ZNodeFormatError`` naming the znode's path."""
    try:
        return decode(data, *args)
    except zk.ZNodeFormatError as e:
        raise zk.ZNodeFormatError(f"{path}: {e}") from None


def partition_state(
    replicas: tuple[int, ...],
    adding: tuple[int, ...],
    removing: tuple[int, ...],
    loaded: LoadedState | None,
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
