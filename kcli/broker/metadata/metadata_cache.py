"""What a broker knows of the cluster: Kafka's ``MetadataCache``.

Every topic (``TopicInfo``: id, partitions with replicas, leader, ISR and epochs, config
overrides), the live brokers (``/brokers/ids``), the controller's id (``/controller``) and the
brokers' dynamic configs (``/config/brokers``) are
loaded from the tree at ``start`` and kept current by watching it, so a change written by anyone
(this broker's admin requests, the controller, another broker, a ZooKeeper-era tool) reaches the
cache and the ``on_topic_change`` listeners, and requests are answered without reading the tree.

Threads (``metadata_thread``): a store's watch callback only notes what changed; the tree is read
on the metadata thread and the cache changes, and its listeners run, on the event loop.
``refresh_topic_async`` reads one topic again at once, so that a request that just wrote it
answers with what it wrote, whatever the store's watch latency.

In cluster mode (``fed_by_controller``) the live brokers, the controller and the changes of
partition states come from the controller's UpdateMetadata (``update_metadata``, Kafka's
MetadataCache.updateMetadata), as on a ZooKeeper-mode Kafka broker; the tree is still followed
for what UpdateMetadata does not carry (a topic's id, assignment and configs, brokers' dynamic
configs). Until the first UpdateMetadata arrives, the live brokers and the controller are taken
from the tree, so a client asking right after the broker starts is not told of an empty cluster.
A topic read from the tree comes with its partitions' states; every state carries its
partition epoch (the state znode's version) and the cache keeps, per partition, the newer of what
it has and what arrives, so the two sources may interleave in any order.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kcli.broker.metadata.metadata_thread import InlineMetadataThread
from kcli.broker.config.tree_configs import TreeConfigs
from kcli.common import uuid_to_string
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import ChangeEvent, ChangeKind
from kcli.metadata.topics import ZERO_UUID, PartitionState, TopicChange, TopicChangeKind, TopicInfo, TopicListener
from kcli.metadata.zk_client import TOPIC_CONFIGS, KafkaZkClient, LoadedState, partition_state

log = logging.getLogger("kcli.broker.metadata")

BROKER_CONFIGS = zk.config_entity_type_path(zk.CONFIG_TYPE_BROKERS)


@dataclass
class _Changed:
    """What a watch reported: the parts of the tree to read again."""

    brokers: bool = False
    controller: bool = False
    broker_configs: bool = False
    topics: set[str] = field(default_factory=set)
    states: dict[str, set[int]] = field(default_factory=dict)


@dataclass
class _Read:
    """The tree's state of what changed, read on the metadata thread."""

    brokers: dict[int, zk.BrokerRegistration] | None = None
    controller: tuple[int | None] | None = None
    broker_configs: dict[int | None, dict[str, str]] | None = None
    topics: dict[str, TopicInfo | None] = field(default_factory=dict)
    states: dict[str, dict[int, LoadedState | None]] = field(default_factory=dict)


class MetadataCache:
    def __init__(self, zk_client: KafkaZkClient, thread: InlineMetadataThread | None = None, *, fed_by_controller: bool = False) -> None:
        self.zk_client = zk_client
        # Cluster mode: the live brokers, the controller and partition state changes come from the
        # controller's UpdateMetadata; the tree is followed for topics (ids, assignment, configs)
        # and broker configs only.
        self.fed_by_controller = fed_by_controller
        # Until the controller's first UpdateMetadata reaches it, a broker in cluster mode answers
        # with the live brokers and the controller the tree names, so that a client asking at once
        # is not told of a cluster without brokers or controller.
        self._updated_by_controller = False
        self.thread = thread if thread is not None else InlineMetadataThread()
        self._lock = threading.RLock()
        self._topics: dict[str, TopicInfo] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}
        self._listeners: list[TopicListener] = []
        self._broker_config_listeners: list[Callable[[], None]] = []
        self._unwatch: list[Callable[[], None]] = []
        self._brokers: dict[int, zk.BrokerRegistration] = {}
        self._controller_id: int | None = None
        self._broker_configs: dict[int | None, dict[str, str]] = {}
        self._pending: _Changed | None = None
        # Config overrides read from the tree are checked key by key (``tree_configs``).
        self._tree_configs = TreeConfigs()

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Watch the tree, then load all of it (on the metadata thread, before serving)."""
        for prefix in (zk.TOPICS, TOPIC_CONFIGS, BROKER_CONFIGS, zk.BROKER_IDS, zk.CONTROLLER):
            self._unwatch.append(self.zk_client.store.watch(prefix, self._on_tree_change))
        self._broker_configs = self._read_broker_configs()
        self._brokers = self._read_brokers()
        self._controller_id = self.zk_client.controller_id()
        for name in self.zk_client.topic_names():
            try:
                self.refresh_topic(name)
            except zk.ZNodeFormatError as e:
                self.zk_client.report_malformed(e, log)

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

    def on_broker_config_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (on the loop) after the brokers' dynamic configs read from the tree
        changed, whoever wrote them."""
        with self._lock:
            self._broker_config_listeners.append(listener)

    def _set_broker_configs(self, configs: dict[int | None, dict[str, str]]) -> None:
        with self._lock:
            changed = configs != self._broker_configs
            self._broker_configs = configs
            listeners = list(self._broker_config_listeners) if changed else []
        for listener in listeners:
            try:
                listener()
            except Exception:
                log.exception("A broker config listener failed")

    # -- reads ------------------------------------------------------------------------------------

    def topics(self) -> dict[str, TopicInfo]:
        with self._lock:
            return dict(self._topics)

    def topic(self, name: str) -> TopicInfo | None:
        with self._lock:
            return self._topics.get(name)

    def alive_brokers(self) -> dict[int, zk.BrokerRegistration]:
        """The registered brokers by id, ascending."""
        with self._lock:
            return dict(self._brokers)

    def broker_configs(self, broker_id: int | None) -> dict[str, str]:
        """The dynamic config overrides of one broker, or the cluster-wide defaults for None."""
        with self._lock:
            return dict(self._broker_configs.get(broker_id, {}))

    def controller_id(self) -> int | None:
        """The broker id in ``/controller``, or None while no broker holds the role."""
        return self._controller_id

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        with self._lock:
            name = self._names_by_id.get(topic_id)
            return self._topics.get(name) if name is not None else None

    def find_topic(self, name: str | None = None, topic_id: uuid.UUID | None = None) -> TopicInfo:
        """The topic named, or with ``topic_id``, with the errors Kafka answers a request that
        names a topic one way or the other (DeleteTopics)."""
        if name is not None and topic_id is not None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
        if name is None and topic_id is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
        if topic_id is not None:
            if topic_id == ZERO_UUID:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST, f"Attempt to find topic with invalid topicId {uuid_to_string(topic_id)}"
                )
            found = self.topic_by_id(topic_id)
            if found is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
            return found
        assert name is not None
        found = self.topic(name)
        if found is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return found

    # -- following the tree -----------------------------------------------------------------------

    def refresh_topic(self, name: str) -> TopicInfo | None:
        """Read ``name`` from the tree and apply it at once (None: the topic is gone): at start,
        and where tree reads may block (the tools and tests); requests use the async form."""
        topic = self._load_topic(name)
        self._apply(name, topic)
        return topic

    async def refresh_topic_async(self, name: str) -> TopicInfo | None:
        """Read ``name`` on the metadata thread, then apply it on the loop."""
        topic = await self.thread.call(self._load_topic, name)
        self._apply(name, topic)
        return topic

    async def refresh_broker_configs_async(self) -> None:
        """Read the brokers' dynamic configs on the metadata thread, then apply them on the loop."""
        self._set_broker_configs(await self.thread.call(self._read_broker_configs))

    def _on_tree_change(self, events: list[ChangeEvent]) -> None:
        """A store's watch, on its thread: note what changed and have it read. Changes noted
        before the read starts are read together (ZooKeeper reports a topic of 1,000 partitions
        as some 3,000 node events: one read of the topic, not one per node)."""
        with self._lock:
            first = self._pending is None
            if first:
                self._pending = _Changed()
            self._note(self._pending, events, self.fed_by_controller, self.fed_by_controller and self._updated_by_controller)
        if first:
            self.thread.submit(self._read_pending)

    def _read_pending(self) -> None:
        with self._lock:
            changed, self._pending = self._pending, None
        if changed is not None:
            self._read(changed)

    @staticmethod
    def _note(changed: _Changed, events: list[ChangeEvent], fed_by_controller: bool = False, updated: bool = False) -> None:
        for event in events:
            parts = event.path.split("/")
            if event.path.startswith(BROKER_CONFIGS + "/"):
                changed.broker_configs = True
            elif event.path.startswith(zk.BROKER_IDS + "/"):
                changed.brokers = changed.brokers or not updated
            elif event.path == zk.CONTROLLER:
                changed.controller = changed.controller or not updated
            elif event.path.startswith(zk.TOPICS + "/"):
                if len(parts) == 7 and parts[6] == "state" and event.kind is ChangeKind.CHANGED and parts[5].isdigit():
                    if not fed_by_controller:
                        changed.states.setdefault(parts[3], set()).add(int(parts[5]))
                else:
                    changed.topics.add(parts[3])
            elif event.path.startswith(TOPIC_CONFIGS + "/") and len(parts) == 4:
                changed.topics.add(parts[3])

    async def refresh_cluster_async(self) -> None:
        """Read the live brokers and the controller on the metadata thread and apply them on the
        loop (until the controller's UpdateMetadata takes over): at the end of a broker's start,
        so that its first answers name it and the controller it just saw elected, whenever the
        store's watches report them."""
        self._apply_read(await self.thread.call(self._read_now, _Changed(brokers=True, controller=True)))

    def _read(self, changed: _Changed) -> None:
        """On the metadata thread: the tree's current state of what changed, handed to the loop."""
        self.thread.to_loop(self._apply_read, self._read_now(changed))

    def _read_now(self, changed: _Changed) -> _Read:
        read = _Read()
        if changed.brokers:
            read.brokers = self._read_brokers()
        if changed.controller:
            read.controller = (self.zk_client.controller_id(),)
        if changed.broker_configs:
            read.broker_configs = self._read_broker_configs()
        # A znode that cannot be read is reported and skipped: the cache keeps what it had of it.
        for name in sorted(changed.topics):
            try:
                read.topics[name] = self._load_topic(name)
            except zk.ZNodeFormatError as e:
                self.zk_client.report_malformed(e, log)
        for name in sorted(changed.states.keys() - changed.topics):
            try:
                read.states[name] = {p: self.zk_client.partition_state(name, p) for p in changed.states[name]}
            except zk.ZNodeFormatError as e:
                self.zk_client.report_malformed(e, log)
        return read

    def _report_malformed(self, error: zk.ZNodeFormatError) -> None:
        self.zk_client.report_malformed(error, log)

    def _load_topic(self, name: str) -> TopicInfo | None:
        """The topic as the tree holds it, on the metadata thread, its config overrides checked
        against the ones in effect."""
        topic = self.zk_client.load_topic(name, self._report_malformed)
        if topic is None:
            return None
        cached = self.topic(name)
        configs = self._tree_configs.topic(name, topic.configs, cached.configs if cached is not None else None)
        return topic if configs == topic.configs else replace(topic, configs=configs)

    def _read_broker_configs(self) -> dict[int | None, dict[str, str]]:
        with self._lock:
            in_effect = dict(self._broker_configs)
        configs: dict[int | None, dict[str, str]] = {}
        for broker_id in [None, *self.zk_client.brokers_with_configs()]:
            try:
                read = self.zk_client.broker_configs(broker_id)
            except zk.ZNodeFormatError as e:
                self.zk_client.report_malformed(e, log)  # the overrides in effect stay
                read = in_effect.get(broker_id, {})
            configs[broker_id] = self._tree_configs.broker(broker_id, read, in_effect.get(broker_id))
        return configs

    def _read_brokers(self) -> dict[int, zk.BrokerRegistration]:
        return {broker_id: registration for broker_id, (registration, _) in self.zk_client.live_brokers(self._report_malformed).items()}

    def _apply_read(self, read: _Read) -> None:
        from_tree = not (self.fed_by_controller and self._updated_by_controller)
        if read.brokers is not None and from_tree:
            with self._lock:
                self._brokers = read.brokers
        if read.controller is not None and from_tree:
            self._controller_id = read.controller[0]
        if read.broker_configs is not None:
            self._set_broker_configs(read.broker_configs)
        for name, topic in read.topics.items():
            self._apply(name, topic)
        for name, states in read.states.items():
            self._apply_states(name, states)

    def _apply_states(self, name: str, states: dict[int, LoadedState | None]) -> None:
        topic = self.topic(name)
        if topic is None or not states.keys() <= topic.partitions.keys() or None in states.values():
            # A partition the cache does not know, or a state gone: read the whole topic again.
            self.thread.submit(lambda: self._read(_Changed(topics={name})))
            return
        updated = dict(topic.partitions)
        for partition, loaded in states.items():
            previous = updated[partition]
            updated[partition] = partition_state(
                previous.replicas, previous.adding_replicas, previous.removing_replicas, loaded
            )
        self._apply(name, replace(topic, partitions=updated))

    def update_metadata(
        self,
        controller_id: int,
        brokers: dict[int, zk.BrokerRegistration],
        topics: dict[str, tuple[uuid.UUID | None, dict[int, PartitionState | None]]],
    ) -> None:
        """Apply an UpdateMetadata request's content, on the loop: the live brokers, the
        controller, and per topic the partition states (None: the partition is being deleted,
        Kafka's LeaderDuringDelete), each kept only when not older than the cached one."""
        with self._lock:
            self._brokers = dict(sorted(brokers.items()))
            self._updated_by_controller = True
        self._controller_id = controller_id if controller_id >= 0 else None
        for name, (topic_id, states) in topics.items():
            previous = self.topic(name)
            if previous is None or (topic_id not in (None, ZERO_UUID) and topic_id != previous.topic_id):
                # A topic is known from the tree (its id, configs and assignment) before its
                # states are taken from UpdateMetadata: one the cache has not read yet, or has
                # seen deleted, is left to the tree's watch.
                continue
            partitions = dict(previous.partitions)
            for index, state in states.items():
                if state is None:
                    partitions.pop(index, None)
                elif index not in partitions or state.partition_epoch >= partitions[index].partition_epoch:
                    partitions[index] = state
            self._apply(name, replace(previous, partitions=partitions) if partitions else None)

    @staticmethod
    def _newer_states(previous: TopicInfo | None, topic: TopicInfo | None) -> TopicInfo | None:
        """``topic`` as read from the tree, keeping the cached state of any partition whose
        cached state is newer (an UpdateMetadata applied after the read was made)."""
        if previous is None or topic is None or previous.topic_id != topic.topic_id:
            return topic
        kept = {
            index: previous.partitions[index]
            for index, state in topic.partitions.items()
            if index in previous.partitions and previous.partitions[index].partition_epoch > state.partition_epoch
        }
        if not kept:
            return topic
        return replace(topic, partitions={**topic.partitions, **kept})

    @staticmethod
    def _sendable(topic: TopicInfo | None, previous: TopicInfo | None) -> TopicInfo | None:
        """``topic`` with each partition state a response could not encode named in one error line
        and replaced by the cached one (left out when there is none). The tree's decoders and the
        wire already refuse such numbers: this keeps one bad entry that got in another way from
        failing every Metadata answer."""
        if topic is None:
            return None
        bad = {index: reason for index, state in topic.partitions.items() if (reason := state.out_of_range(index)) is not None}
        if not bad:
            return topic
        partitions = dict(topic.partitions)
        for index, reason in sorted(bad.items()):
            log.error("Ignoring the state of partition %s-%d: %s", topic.name, index, reason)
            if previous is not None and index in previous.partitions:
                partitions[index] = previous.partitions[index]
            else:
                del partitions[index]
        return replace(topic, partitions=partitions)

    def _apply(self, name: str, topic: TopicInfo | None) -> None:
        with self._lock:
            previous = self._topics.get(name)
            topic = self._sendable(topic, previous)
            topic = self._newer_states(previous, topic)
            if previous == topic:
                return
            if previous is not None:
                self._names_by_id.pop(previous.topic_id, None)
            if topic is None:
                del self._topics[name]
            else:
                self._topics[name] = topic
                self._names_by_id[topic.topic_id] = name
        if previous is None:
            kind = TopicChangeKind.CREATED
        elif topic is None:
            kind = TopicChangeKind.DELETED
        else:
            kind = TopicChangeKind.UPDATED
        self._notify(TopicChange(kind, name, topic, previous))

    def _notify(self, change: TopicChange) -> None:
        with self._lock:
            listeners = list(self._listeners)
        kind, name = change.kind, change.name
        for listener in listeners:
            try:
                listener(change)
            except Exception:
                log.exception("A topic listener failed on %s of topic %s", kind.value, name)
