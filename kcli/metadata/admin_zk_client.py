"""Topic and config administration in the metadata tree (Kafka's ``AdminZkClient``).

Each operation is validated as Kafka 3.9 validates it and fails with ``KafkaError`` carrying
Kafka's error code and message: ``create_topic`` (the KRaft controller's checks and wording),
``create_partitions`` (the ZooKeeper-mode wording), ``delete_topic``, ``set_topic_configs`` and
``set_broker_configs``. Each is one tree transaction, however many partitions it touches, and
returns what it wrote; brokers learn of it through their metadata caches, as of any change
written by anyone (another broker, a ZooKeeper-era tool).

New topics and partitions are written as Kafka 2.8 writes them: the assignment (with the topic
id) and the configs, no partition state. The active controller sees the assignment, elects each
new partition's first leader and writes its state under its epoch check (Kafka's
onNewPartitionCreation), and tells the brokers.

The ZooKeeper-era tools' path (``kcli topics --zookeeper``) is Kafka 2.8's AdminZkClient, with its
checks and wording: ``zk_broker_racks``, ``zk_assign_new_topic``, ``zk_create_topic``,
``zk_add_partitions``, ``zk_change_topic_config``, ``zk_change_broker_config`` and
``zk_mark_for_deletion``. It writes only
what Kafka 2.8's tools write (a topic's config and assignment, without topic id or partition
states; a deletion mark) and leaves the rest to the active controller: the topic id, leader
election, the deletion itself.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.metadata import topic_names
from kcli.metadata import zk_paths as zk
from kcli.metadata.replica_assignment import (
    NewPartitionsCheck,
    assign_replicas_rack_aware,
    assign_replicas_to_brokers,
    check_manual_replicas,
    check_partitions_per_request,
    manual_new_partitions,
    placed_new_partitions,
)
from kcli.metadata.store import CreateOp, NodeExistsError
from kcli.metadata.topics import ConfigValidator, PartitionState, TopicInfo, random_uuid
from kcli.metadata.zk_client import TOPIC_CONFIGS, KafkaZkClient

log = logging.getLogger("kcli.metadata.admin")


class AdminZkClient:
    """``default_num_partitions`` and ``default_replication_factor`` (``num.partitions``,
    ``default.replication.factor``) stand in for -1 in ``create_topic``."""

    def __init__(
        self,
        zk_client: KafkaZkClient,
        *,
        default_num_partitions: int = 1,
        default_replication_factor: int = 1,
        rng: random.Random | None = None,
        new_partitions_check: NewPartitionsCheck | None = None,
    ) -> None:
        self.zk_client = zk_client
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor
        self._rng = rng if rng is not None else random.Random()
        self._new_partitions_check = new_partitions_check

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

        -1 for ``num_partitions`` or ``replication_factor`` means the default; a manual
        ``assignment`` (partition -> replicas) requires both to be -1. ``live_brokers`` defaults to
        the brokers the controller counts alive (``KafkaZkClient.live_brokers``).
        """
        self._check_new_topic_name(name)
        overrides = checked_configs(configs or {}, config_validator)
        brokers = sorted(set(live_brokers)) if live_brokers is not None else sorted(self._live_brokers())
        if assignment:
            replicas = _manual_assignment(assignment, num_partitions, replication_factor, brokers)
        else:
            replicas = self._placed_assignment(num_partitions, replication_factor, brokers)
        if self._new_partitions_check is not None:
            self._new_partitions_check(replicas)
        partitions = {p: unelected_partition(replicas[p]) for p in sorted(replicas)}
        topic = TopicInfo(name=name, topic_id=random_uuid(), partitions=partitions, configs=dict(overrides))
        if validate_only:
            return topic
        try:
            self.zk_client.store.multi(self.zk_client.topic_creation_ops(topic))
        except NodeExistsError as error:
            if error.path == zk.topic_path(name):
                raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None
            raise
        return topic

    def _check_new_topic_name(self, name: str) -> None:
        if name == topic_names.CLUSTER_METADATA_TOPIC_NAME:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        topic_names.validate(name)
        existing = self.zk_client.topic_names()
        if name in existing:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        colliding = topic_names.colliding_topics(name, existing)
        if colliding:
            raise KafkaError(
                ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {colliding[0]}"
            )

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

    def _live_brokers(self) -> dict[int, zk.BrokerRegistration]:
        """The brokers replicas may be placed on: those the controller counts alive."""
        live = self.zk_client.live_brokers(lambda error: self.zk_client.report_malformed(error, log))
        return {broker: registration for broker, (registration, _) in live.items()}

    # -- delete topics ----------------------------------------------------------------------------

    def delete_topic(self, topic: TopicInfo) -> None:
        """Delete a topic with its partitions, config and deletion mark, in one transaction.

        Internal topics can be deleted, as on a Kafka 3.9 broker (only the tools refuse).
        """
        self.zk_client.store.multi(self.zk_client.topic_deletion_ops(topic.name))

    # -- create partitions ------------------------------------------------------------------------

    def create_partitions(
        self,
        topic: TopicInfo | None,
        name: str,
        new_total: int,
        assignment: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
        live_brokers: Iterable[int] | None = None,
    ) -> TopicInfo:
        """Grow ``topic`` (as cached; read from the tree when None) to ``new_total`` partitions
        (``assignment``: replicas of each new one)."""
        current, stat = self.zk_client.topic_assignment(name)
        self._check_growable(name, current, new_total)
        brokers = sorted(set(live_brokers)) if live_brokers is not None else sorted(self._live_brokers())
        existing = len(current.partitions)
        check_partitions_per_request(new_total - existing)
        first_replicas = current.partitions[min(current.partitions)]
        if assignment is not None:
            added = manual_new_partitions(assignment, existing, new_total - existing, len(first_replicas), brokers)
        else:
            added = placed_new_partitions(brokers, first_replicas, existing, new_total - existing)
        if self._new_partitions_check is not None:
            self._new_partitions_check(added)
        topic = topic or self.zk_client.load_topic(name)
        assert topic is not None
        partitions = dict(topic.partitions)
        partitions.update({p: unelected_partition(replicas) for p, replicas in added.items()})
        grown = replace(topic, partitions=partitions)
        if validate_only:
            return grown
        assignment_now = replace(current, partitions={**current.partitions, **added})
        self.zk_client.store.set(zk.topic_path(name), zk.encode_topic_assignment(assignment_now), stat.version)
        return grown

    def _check_growable(self, name: str, current: zk.TopicAssignment, new_total: int) -> None:
        if not current.partitions:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if self.zk_client.is_marked_for_deletion(name):
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
    ) -> None:
        """Replace a topic's config overrides (and notify other brokers through /config/changes)."""
        if not self.zk_client.topic_exists(name):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        overrides = checked_configs(configs, config_validator)
        self.zk_client.write_entity_config(zk.CONFIG_TYPE_TOPICS, name, overrides)

    def set_broker_configs(self, broker_id: int | None, configs: Mapping[str, str]) -> None:
        """Replace one broker's dynamic config overrides, or the cluster-wide defaults for None."""
        self.zk_client.write_entity_config(zk.CONFIG_TYPE_BROKERS, zk.broker_entity_name(broker_id), dict(configs))


    # -- the ZooKeeper-era tools' path (Kafka 2.8) ------------------------------------------------

    def zk_broker_racks(self, rack_aware: bool = True) -> dict[int, str | None]:
        """The registered brokers and their racks (Kafka 2.8's getBrokerMetadatas); racks dropped
        when not ``rack_aware``; refused when only some brokers have one."""
        racks: dict[int, str | None] = {}
        for broker, registration in sorted(self._live_brokers().items()):
            racks[broker] = registration.rack if rack_aware else None
        with_rack = [broker for broker, rack in racks.items() if rack is not None]
        if with_rack and len(with_rack) < len(racks):
            raise KcliError(
                "Not all brokers have rack information. Add --disable-rack-aware in command line"
                " to make replica assignment without rack information."
            )
        return racks

    def zk_assign_new_topic(
        self, racks: Mapping[int, str | None], num_partitions: int, replication_factor: int, *, start_index: int = -1, start_partition_id: int = -1
    ) -> dict[int, tuple[int, ...]]:
        """Kafka 2.8's AdminUtils.assignReplicasToBrokers over the brokers of ``zk_broker_racks``."""
        if num_partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if replication_factor <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        if replication_factor > len(racks):
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Replication factor: {replication_factor} larger than available brokers: {len(racks)}.",
            )
        placement = {"start_index": start_index, "start_partition_id": start_partition_id, "rng": self._rng}
        if all(rack is None for rack in racks.values()):
            return assign_replicas_to_brokers(sorted(racks), num_partitions, replication_factor, **placement)
        return assign_replicas_rack_aware({b: r for b, r in racks.items() if r is not None}, num_partitions, replication_factor, **placement)

    def zk_create_topic(
        self,
        name: str,
        assignment: Mapping[int, Sequence[int]],
        configs: Mapping[str, str],
        *,
        config_validator: ConfigValidator | None = None,
    ) -> None:
        """Kafka 2.8's createTopicWithAssignment: validate, then write the config and the
        assignment (no topic id, no partition state: the controller adds both)."""
        _validate_name_28(name)
        existing = self.zk_client.topic_names() if self.zk_client.store.exists(zk.TOPICS) is not None else []
        if name in existing:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        colliding = topic_names.colliding_topics(name, existing)
        if colliding:
            raise KafkaError(
                ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topics: {', '.join(colliding)}"
            )
        if len({len(replicas) for replicas in assignment.values()}) != 1:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas")
        overrides = checked_configs(configs, config_validator)
        store = self.zk_client.store
        store.ensure_path(TOPIC_CONFIGS)
        store.ensure_path(zk.TOPICS)
        written = zk.TopicAssignment(partitions={p: tuple(assignment[p]) for p in sorted(assignment)})
        try:
            store.multi(
                [
                    self.zk_client.upsert(zk.topic_config_path(name), zk.encode_entity_config(overrides)),
                    CreateOp(zk.topic_path(name), zk.encode_topic_assignment(written)),
                ]
            )
        except NodeExistsError:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from None

    def zk_add_partitions(
        self, name: str, new_total: int, racks: Mapping[int, str | None], manual: Mapping[int, Sequence[int]] | None = None
    ) -> dict[int, tuple[int, ...]]:
        """Kafka 2.8's addPartitions: grow the assignment to ``new_total`` partitions; the
        controller elects their leaders. ``manual`` is the tool's --replica-assignment (replicas by
        partition id, existing partitions included): its entries past the existing partitions are
        the new ones. Returns the new partitions' replicas."""
        try:
            current, stat = self.zk_client.topic_assignment(name)
        except KafkaError:
            current, stat = zk.TopicAssignment({}), None
        if not current.partitions or stat is None:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"The topic {name} does not exist")
        first = current.partitions.get(0)
        if first is None:
            raise KcliError(f"Unexpected existing replica assignment for topic '{name}', partition id 0 is missing.")
        existing = len(current.partitions)
        if new_total - existing <= 0:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                f"The number of partitions for a topic can only be increased. Topic {name} currently has "
                f"{existing} partitions, {new_total} would not be an increase.",
            )
        manual = {p: replicas for p, replicas in (manual or {}).items() if p >= existing}
        if manual:
            _validate_new_replicas_28(manual, len(first), sorted(racks))
            added = {p: tuple(replicas) for p, replicas in manual.items()}
        else:
            brokers = sorted(racks)
            start = max(0, next((index for index, broker in enumerate(brokers) if broker >= first[0]), -1))
            added = self.zk_assign_new_topic(racks, new_total - existing, len(first), start_index=start, start_partition_id=existing)
        grown = replace(current, partitions={**current.partitions, **added})
        self.zk_client.store.set(zk.topic_path(name), zk.encode_topic_assignment(grown), stat.version)
        return added

    def zk_change_topic_config(
        self, name: str, configs: Mapping[str, str], *, config_validator: ConfigValidator | None = None
    ) -> None:
        """Kafka 2.8's changeTopicConfig: replace the overrides and notify through /config/changes."""
        _validate_name_28(name)
        if not self.zk_client.topic_exists(name):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        overrides = checked_configs(configs, config_validator)
        self.zk_client.store.ensure_path(zk.CONFIG_CHANGES)
        self.zk_client.write_entity_config(zk.CONFIG_TYPE_TOPICS, name, overrides)

    def zk_change_broker_config(
        self, broker_id: int | None, configs: Mapping[str, str], *, config_validator: ConfigValidator | None = None
    ) -> None:
        """Kafka 2.8's changeBrokerConfig: replace one broker's dynamic overrides (the
        cluster-wide defaults for None) and notify through /config/changes."""
        overrides = checked_configs(configs, config_validator)
        self.zk_client.store.ensure_path(zk.config_entity_type_path(zk.CONFIG_TYPE_BROKERS))
        self.zk_client.store.ensure_path(zk.CONFIG_CHANGES)
        self.zk_client.write_entity_config(zk.CONFIG_TYPE_BROKERS, zk.broker_entity_name(broker_id), overrides)

    def zk_mark_for_deletion(self, name: str) -> None:
        """Create ``/admin/delete_topics/<name>`` for the controller to act on; NodeExistsError
        when it is marked already."""
        self.zk_client.store.create(zk.delete_topic_path(name), zk.DELETE_TOPIC_MARKER, makepath=True)


def _validate_name_28(name: str) -> None:
    """Kafka 2.8's Topic.validate, with its wording (lengths in UTF-16 units, as Java counts)."""
    if topic_names.is_valid(name):
        return
    if not name:
        message = "Topic name is illegal, it can't be empty"
    elif name in (".", ".."):
        message = 'Topic name cannot be "." or ".."'
    elif len(name.encode("utf-16-le")) // 2 > topic_names.MAX_NAME_LENGTH:
        message = f"Topic name is illegal, it can't be longer than {topic_names.MAX_NAME_LENGTH} characters, topic name: {name}"
    else:
        message = f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, message)


def _validate_new_replicas_28(manual: Mapping[int, Sequence[int]], replication_factor: int, brokers: Sequence[int]) -> None:
    """Kafka 2.8's validateReplicaAssignment of the replicas given for new partitions."""
    available = set(brokers)
    for partition, replicas in manual.items():
        if not replicas:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Cannot have replication factor of 0 for partition id {partition}.")
        if len(set(replicas)) != len(replicas):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} for partition id {partition}.",
            )
        if not available.issuperset(replicas):
            raise KafkaError(
                ErrorCode.BROKER_NOT_AVAILABLE,
                f"Some brokers specified for partition id {partition} are not available. Specified brokers: "
                f"{', '.join(map(str, replicas))}, available brokers: {', '.join(map(str, brokers))}.",
            )
    bad = {partition: len(replicas) for partition, replicas in sorted(manual.items()) if len(replicas) != replication_factor}
    if bad:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Inconsistent replication factor between partitions, partition 0 has {replication_factor} while partitions "
            f"[{', '.join(map(str, bad))}] have replication factors [{', '.join(map(str, bad.values()))}], respectively.",
        )


def unelected_partition(replicas: tuple[int, ...]) -> PartitionState:
    """A new partition as the admin path leaves it: assigned, with no state until the controller
    elects its first leader (Kafka 2.8's AdminZkClient writes the assignment alone)."""
    return PartitionState(replicas=replicas, isr=(), leader=zk.NO_LEADER, leader_epoch=-1, partition_epoch=-1)


def checked_configs(configs: Mapping[str, str | None], validator: ConfigValidator | None) -> dict[str, str]:
    nulls = [key for key, value in configs.items() if value is None]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(nulls)}")
    checked = {key: value for key, value in configs.items() if value is not None}
    if validator is not None:
        validator(checked)
    return checked


def _manual_assignment(
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
        check_manual_replicas(replicas, expected, registered)
        expected = len(replicas)
    if any(partition not in assignment for partition in range(len(assignment))):
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
        )
    return {partition: tuple(assignment[partition]) for partition in sorted(assignment)}
