"""``kcli topics --zookeeper HOST:PORT[/chroot]``: Kafka 2.8's TopicCommand through ZooKeeper.

Kafka 2.8's ZookeeperTopicService: the tool reads and writes the cluster's znodes itself, through
``AdminZkClient``'s ZooKeeper-era path, and the active controller does the rest (topic id,
leaders, deletion). Its lines:

- ``--create``: ``Created topic T.``; it writes ``/config/topics/T`` and ``/brokers/topics/T``
  (placed by Kafka's AdminUtils, rack-aware when every broker has a rack, unless
  ``--disable-rack-aware``).
- ``--list``: sorted names, one a line, ``T - marked for deletion`` for a topic being deleted.
- ``--describe``: per topic, sorted by name, ``Topic: T\\tTopicId: ID\\tPartitionCount: N\\t
  ReplicationFactor: R\\tConfigs: k=v,...`` (the ``/config/topics/T`` overrides; ``TopicId`` left
  out while the topic has none) and per partition ``\\tTopic: T\\tPartition: P\\tLeader: L\\t
  Replicas: a,b\\tIsr: a,b``; both end in ``\\tMarkedForDeletion: true`` for a topic being deleted.
  ``--under-replicated-partitions`` (ISR smaller than the assignment) or ``--unavailable-partitions``
  (no leader, or one not registered), one at a time as 2.8 allows, print the matching partition
  lines alone; 2.8 refuses the min-ISR filters with ``--zookeeper``.
- ``--alter``: ``--config``/``--delete-config`` print the deprecation warning and ``Updated config
  for topic T.``; ``--partitions`` prints the key-ordering warning and ``Adding partitions
  succeeded!``.
- ``--delete``: ``Topic T is marked for deletion.`` and the ``delete.topic.enable`` note, or
  ``Topic T is already marked for deletion.``.

A failure prints ``Error while executing topic command : <message>`` (stdout), exit 1, as the
``--bootstrap-server`` path. ZooKeeper unreachable within ``ZK_CONNECTION_TIMEOUT_MS`` (Kafka's
tool waits 30 s), a malformed connect string or chroot, or a chroot that does not exist: one
line, exit 1 (``kcli.tools.zk_session``).
"""

from __future__ import annotations

from kcli.tools.topics import (
    COLLISION_WARNING,
    ActionFailed,
    TopicService,
    parse_replica_assignment,
    parse_topic_configs,
)

# Kafka 2.8's TopicCommand opens its ZooKeeper session with these (zookeeper.connection.timeout.ms
# and zookeeper.session.timeout.ms).
ZK_CONNECTION_TIMEOUT_MS = 30_000
ZK_SESSION_TIMEOUT_MS = 30_000

MESSAGE_FORMAT_WARNING_28 = (
    "WARNING: The configuration message.format.version={} is specified. This configuration will be ignored if the "
    "version is newer than the inter.broker.protocol.version specified in the broker."
)
CONFIG_DEPRECATION_WARNING = (
    "WARNING: Altering topic configuration from this script has been deprecated and may be removed in future releases.",
    "         Going forward, please use kafka-configs.sh for this functionality",
)
PARTITIONS_WARNING = (
    "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the messages will be affected"
)
DELETE_NOTE = "Note: This will have no impact if delete.topic.enable is not set to true."


def open_store(connect: str):
    """A session on ``connect``'s chroot, which must exist (brokers create it; a tool does not)."""
    from kcli.tools.zk_session import open_cluster_store

    return open_cluster_store(connect, session_timeout_ms=ZK_SESSION_TIMEOUT_MS, connection_timeout_ms=ZK_CONNECTION_TIMEOUT_MS)


class ZookeeperTopicService(TopicService):
    """Kafka 2.8's ZookeeperTopicService over one ZooKeeper session."""

    def __init__(self, out, connect: str, topic: str | None, exclude_internal: bool, if_exists: bool) -> None:
        from kcli.metadata.admin_zk_client import AdminZkClient
        from kcli.metadata.zk_client import KafkaZkClient

        self.out = out
        self.topic = topic
        self.exclude_internal = exclude_internal
        self.if_exists = if_exists
        self.store = open_store(connect)
        self.zk_client = KafkaZkClient(self.store)
        self.admin = AdminZkClient(self.zk_client)

    def close(self) -> None:
        self.store.close()

    # -- shared steps --------------------------------------------------------------------------------

    def _topics(self) -> list[str]:
        """Kafka's getTopics: the sorted names in ZooKeeper the --topic regex allows."""
        from kcli.common import is_internal
        from kcli.metadata import zk_paths as zk
        from kcli.tools._admin_common import TopicFilter

        names = sorted(self.zk_client.topic_names()) if self.store.exists(zk.TOPICS) is not None else []
        if self.topic is not None:
            wanted = TopicFilter(self.topic)
            return [name for name in names if wanted.allows(name, self.exclude_internal)]
        return [name for name in names if not (self.exclude_internal and is_internal(name))]

    def _ensure_found(self, names: list[str]) -> list[str]:
        if self.topic is not None and not self.if_exists and not names:
            raise ActionFailed([f"Topic '{self.topic}' does not exist as expected"])
        return names

    def _configs(self, items: list[str]) -> dict[str, str]:
        overrides = parse_topic_configs(items)
        validate_log_config(overrides)
        if "message.format.version" in overrides:
            self.out.line(MESSAGE_FORMAT_WARNING_28.format(overrides["message.format.version"]))
        return overrides

    # -- actions -------------------------------------------------------------------------------------

    def create(self, partitions: int | None, replication_factor: int | None, assignment_text: str | None, configs: list[str], if_not_exists: bool, rack_aware: bool) -> None:
        self._guard(lambda: self._create(partitions, replication_factor, assignment_text, configs, if_not_exists, rack_aware))

    def _create(self, partitions, replication_factor, assignment_text, configs, if_not_exists, rack_aware) -> None:
        from kcli.errors import ErrorCode, KafkaError
        from kcli.metadata import topic_names

        name = self.topic
        overrides = self._configs(configs)
        assignment = parse_replica_assignment(assignment_text) if assignment_text else None
        if topic_names.has_collision_chars(name):
            self.out.line(COLLISION_WARNING)
        try:
            if assignment is None:
                racks = self.admin.zk_broker_racks(rack_aware)
                assignment = self.admin.zk_assign_new_topic(racks, partitions, replication_factor)
            self.admin.zk_create_topic(name, assignment, overrides, config_validator=validate_log_config)
        except KafkaError as error:
            if error.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and if_not_exists:
                return
            raise
        self.out.line(f"Created topic {name}.")

    def list(self) -> None:
        self._guard(self._list)

    def _list(self) -> None:
        for name in self._topics():
            self.out.line(f"{name} - marked for deletion" if self.zk_client.is_marked_for_deletion(name) else name)

    def alter(self, partitions: int | None, assignment_text: str | None, configs: list[str], deleted_configs: list[str]) -> None:
        self._guard(lambda: self._alter(partitions, assignment_text, configs, deleted_configs))

    def _alter(self, partitions, assignment_text, configs, deleted_configs) -> None:
        from kcli.common import is_internal

        names = self._topics()
        overrides = self._configs(configs)
        assignment = parse_replica_assignment(assignment_text) if assignment_text else None
        removed = [name.strip() for name in deleted_configs]
        validate_log_config(dict.fromkeys(removed, ""), names_only=True)
        self._ensure_found(names)
        for name in names:
            if configs or deleted_configs:
                for line in CONFIG_DEPRECATION_WARNING:
                    self.out.line(line)
                merged = {**self.zk_client.topic_configs(name), **overrides}
                for key in removed:
                    merged.pop(key, None)
                self.admin.zk_change_topic_config(name, merged, config_validator=validate_log_config)
                self.out.line(f"Updated config for topic {name}.")
            if partitions is not None:
                if is_internal(name):
                    raise ActionFailed([f"The number of partitions for the internal topic {name} cannot be changed."])
                self.out.line(PARTITIONS_WARNING)
                self.admin.zk_add_partitions(name, partitions, self.admin.zk_broker_racks(), assignment)
                self.out.line("Adding partitions succeeded!")

    def describe(self, under_replicated: bool, unavailable: bool, overrides_only: bool) -> None:
        self._guard(lambda: self._describe(under_replicated, unavailable, overrides_only))

    def _describe(self, under_replicated: bool, unavailable: bool, overrides_only: bool) -> None:
        from kcli.common import uuid_to_string
        from kcli.java_compat import hash_map_order

        names = self._ensure_found(self._topics())
        live = set(self.zk_client.registered_brokers())
        describe_configs = not (under_replicated or unavailable)
        for name in names:
            topic = self.zk_client.load_topic(name)
            if topic is None or not topic.partitions:
                self.out.line(f"Topic {name} doesn't exist!")
                continue
            marked = "\tMarkedForDeletion: true" if self.zk_client.is_marked_for_deletion(name) else ""
            partitions = [topic.partitions[p] for p in sorted(topic.partitions)]
            if describe_configs and (not overrides_only or topic.configs):
                line = f"Topic: {name}"
                if topic.topic_id.int != 0:
                    line += f"\tTopicId: {uuid_to_string(topic.topic_id)}"
                # Kafka's Config keeps the overrides in a HashMap.
                configs = ",".join(f"{key}={topic.configs[key]}" for key in hash_map_order(topic.configs))
                self.out.line(f"{line}\tPartitionCount: {len(partitions)}\tReplicationFactor: {len(partitions[0].replicas)}\tConfigs: {configs}{marked}")
            if overrides_only:
                continue
            for number, state in zip(sorted(topic.partitions), partitions):
                has_leader = state.leader >= 0
                shown = (
                    describe_configs
                    or (under_replicated and len(state.replicas) - len(state.isr) > 0)
                    or (unavailable and (not has_leader or state.leader not in live))
                )
                if shown:
                    self.out.line(
                        f"\tTopic: {name}\tPartition: {number}\tLeader: {state.leader if has_leader else 'none'}"
                        f"\tReplicas: {','.join(map(str, state.replicas))}\tIsr: {','.join(map(str, state.isr))}{marked}"
                    )

    def delete(self) -> None:
        self._guard(self._delete)

    def _delete(self) -> None:
        from kcli.common import is_internal
        from kcli.metadata.store import NodeExistsError

        for name in self._ensure_found(self._topics()):
            if is_internal(name):
                raise ActionFailed([f"Topic {name} is a kafka internal topic and is not allowed to be marked for deletion."])
            try:
                self.admin.zk_mark_for_deletion(name)
            except NodeExistsError:
                self.out.line(f"Topic {name} is already marked for deletion.")
                continue
            self.out.line(f"Topic {name} is marked for deletion.")
            self.out.line(DELETE_NOTE)


def validate_log_config(configs, *, names_only: bool = False) -> None:
    """Kafka's LogConfig.validate (LogConfig.validateNames with ``names_only``)."""
    from kcli.errors import ErrorCode, KafkaError
    from kcli.storage.log_config import TOPIC_CONFIG_KEYS

    if names_only:
        for key in configs:
            if key not in TOPIC_CONFIG_KEYS:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        return
    from kcli.storage.log_config import validate_topic_configs

    validate_topic_configs(dict(configs))
