"""Topic and config administration in the metadata tree (Kafka's ``AdminZkClient``).

Each operation is validated as Kafka 3.9 validates it and fails with ``KafkaError`` carrying
Kafka's error code and message: ``create_topic`` (the KRaft controller's checks and wording),
``create_partitions`` (the ZooKeeper-mode wording), ``delete_topic``, ``set_topic_configs`` and
``set_broker_configs``. Each is one tree transaction, however many partitions it touches, and
returns what it wrote; brokers learn of it through their metadata caches, as of any change
written by anyone (another broker, a ZooKeeper-era tool).

New partitions lead on their first replica, at leader epoch 0 and the controller epoch of
``/controller_epoch``. Their ISR is the leader alone: kcli does not replicate yet, and a replica
that holds no data is never reported in sync (the tools show such partitions under-replicated).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import topic_names
from kcli.metadata import zk_paths as zk
from kcli.metadata.replica_assignment import (
    NewPartitionsCheck,
    assign_replicas_to_brokers,
    check_manual_replicas,
    check_partitions_per_request,
    manual_new_partitions,
    placed_new_partitions,
)
from kcli.metadata.store import NodeExistsError, Op, SetDataOp
from kcli.metadata.topics import ConfigValidator, PartitionState, TopicInfo, random_uuid
from kcli.metadata.zk_client import KafkaZkClient, partition_creation_ops


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
        the registered brokers.
        """
        self._check_new_topic_name(name)
        overrides = checked_configs(configs or {}, config_validator)
        brokers = sorted(set(live_brokers)) if live_brokers is not None else self.zk_client.registered_brokers()
        if assignment:
            replicas = _manual_assignment(assignment, num_partitions, replication_factor, brokers)
        else:
            replicas = self._placed_assignment(num_partitions, replication_factor, brokers)
        if self._new_partitions_check is not None:
            self._new_partitions_check(replicas)
        controller_epoch = self.zk_client.controller_epoch()[0]
        partitions = {p: new_partition(replicas[p], controller_epoch) for p in sorted(replicas)}
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
        brokers = sorted(set(live_brokers)) if live_brokers is not None else self.zk_client.registered_brokers()
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
        controller_epoch = self.zk_client.controller_epoch()[0]
        partitions = dict(topic.partitions)
        partitions.update({p: new_partition(replicas, controller_epoch) for p, replicas in added.items()})
        grown = replace(topic, partitions=partitions)
        if validate_only:
            return grown
        assignment_now = replace(current, partitions={**current.partitions, **added})
        ops: list[Op] = [SetDataOp(zk.topic_path(name), zk.encode_topic_assignment(assignment_now), stat.version)]
        ops.extend(partition_creation_ops(name, {partition: partitions[partition] for partition in added}))
        self.zk_client.store.multi(ops)
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


def new_partition(replicas: tuple[int, ...], controller_epoch: int) -> PartitionState:
    return PartitionState(
        replicas=replicas,
        isr=replicas[:1],
        leader=replicas[0],
        leader_epoch=0,
        partition_epoch=0,
        controller_epoch=controller_epoch,
    )


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
