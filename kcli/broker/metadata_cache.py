"""What a broker knows of the cluster's topics: Kafka's ``MetadataCache``.

Every topic (``TopicInfo``: id, partitions with replicas, leader, ISR and epochs, config
overrides), the live brokers (``/brokers/ids``) and the controller's id (``/controller``) are
loaded from the tree at ``start`` and kept current by watching it, so a change written by anyone
(this broker's admin requests, the controller, another broker, a ZooKeeper-era tool) reaches the
cache and the ``on_topic_change`` listeners, and requests are answered without reading the tree. ``refresh_topic`` reads one topic again at once, so that a
request that just wrote it answers with what it wrote whatever the store's watch latency.

Watch callbacks run on the store's thread; the cache is guarded by a lock and listeners are
called outside it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import replace

from kcli.common import uuid_to_string
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import ChangeEvent, ChangeKind
from kcli.metadata.topics import ZERO_UUID, TopicChange, TopicChangeKind, TopicInfo, TopicListener
from kcli.metadata.zk_client import TOPIC_CONFIGS, KafkaZkClient, partition_state

log = logging.getLogger("kcli.broker.metadata")


class MetadataCache:
    def __init__(self, zk_client: KafkaZkClient) -> None:
        self.zk_client = zk_client
        self._lock = threading.RLock()
        self._topics: dict[str, TopicInfo] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}
        self._listeners: list[TopicListener] = []
        self._unwatch: list[Callable[[], None]] = []
        self._brokers: dict[int, zk.BrokerRegistration] = {}
        self._controller_id: int | None = None

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Watch the tree, then load every topic."""
        for prefix in (zk.TOPICS, TOPIC_CONFIGS, zk.BROKER_IDS, zk.CONTROLLER):
            self._unwatch.append(self.zk_client.store.watch(prefix, self._on_tree_change))
        self.refresh_brokers()
        self.refresh_controller()
        for name in self.zk_client.topic_names():
            self.refresh_topic(name)

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
        """Read ``name`` from the tree now and apply it (None: the topic is gone)."""
        topic = self.zk_client.load_topic(name)
        self._apply(name, topic)
        return topic

    def refresh_brokers(self) -> None:
        brokers = {}
        for broker_id in self.zk_client.registered_brokers():
            registration = self.zk_client.broker_registration(broker_id)
            if registration is not None:
                brokers[broker_id] = registration
        with self._lock:
            self._brokers = brokers

    def refresh_controller(self) -> None:
        self._controller_id = self.zk_client.controller_id()

    def _on_tree_change(self, events: list[ChangeEvent]) -> None:
        whole: set[str] = set()
        states: dict[str, set[int]] = {}
        brokers = controller = False
        for event in events:
            parts = event.path.split("/")
            if event.path.startswith(zk.BROKER_IDS + "/"):
                brokers = True
            elif event.path == zk.CONTROLLER:
                controller = True
            elif event.path.startswith(zk.TOPICS + "/"):
                if len(parts) == 7 and parts[6] == "state" and event.kind is ChangeKind.CHANGED and parts[5].isdigit():
                    states.setdefault(parts[3], set()).add(int(parts[5]))
                else:
                    whole.add(parts[3])
            elif event.path.startswith(TOPIC_CONFIGS + "/") and len(parts) == 4:
                whole.add(parts[3])
        if brokers:
            self.refresh_brokers()
        if controller:
            self.refresh_controller()
        for name in sorted(whole):
            self.refresh_topic(name)
        for name in sorted(states.keys() - whole):
            self._refresh_partitions(name, states[name])

    def _refresh_partitions(self, name: str, partitions: set[int]) -> None:
        topic = self.topic(name)
        if topic is None or not partitions <= topic.partitions.keys():
            self.refresh_topic(name)
            return
        updated = dict(topic.partitions)
        for partition in partitions:
            loaded = self.zk_client.partition_state(name, partition)
            if loaded is None:
                self.refresh_topic(name)
                return
            previous = updated[partition]
            updated[partition] = partition_state(
                previous.replicas, previous.adding_replicas, previous.removing_replicas, loaded
            )
        self._apply(name, replace(topic, partitions=updated))

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
