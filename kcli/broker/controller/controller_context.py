"""What the active controller knows of the cluster: Kafka's ControllerContext.

The controller reads the tree once when it is elected (every topic's assignment and every
partition's state, pipelined), then keeps this copy current from the watches and from its own
writes; its events are decided on the copy, so handling a broker failure costs the writes it
makes, not a read of every partition. Only the active controller writes partition states, each
write conditional on the state's znode version and on ``/controller_epoch``'s, so the copy cannot
drift from the tree without the next write failing.

A partition whose state znode is missing has no entry in ``leadership``; one whose znode cannot be
read (written by hand) is in ``unreadable`` and is left alone until a new controller reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from kcli.broker.controller.request_batch import LiveBroker
from kcli.metadata.topics import TopicPartitionState
from kcli.metadata import zk_paths as zk
from kcli.metadata.zk_client import KafkaZkClient, LoadedState, decoded, partition_state

TopicPartition = tuple[str, int]


@dataclass
class TopicRead:
    """One topic as the tree held it when read: its assignment and its znode version, each
    partition's state (None: no state znode yet), the partitions whose state could not be read,
    and the partitions that have a ``partitions/P`` znode (None: no ``partitions`` znode)."""

    assignment: zk.TopicAssignment
    version: int
    states: dict[int, LoadedState | None] = field(default_factory=dict)
    unreadable: set[int] = field(default_factory=set)
    partition_nodes: set[int] | None = None


def read_topics(
    zk_client: KafkaZkClient, names: Iterable[str], report: Callable[[zk.ZNodeFormatError], None]
) -> dict[str, TopicRead]:
    """The named topics that exist and can be read, in three pipelined rounds of reads; a znode
    that cannot be decoded is handed to ``report`` (its topic, or its partition, left out)."""
    store = zk_client.store
    names = list(names)
    found: dict[str, TopicRead] = {}
    answers = store.get_many([zk.topic_path(name) for name in names])
    for name in names:
        answer = answers[zk.topic_path(name)]
        if answer is None:
            continue
        try:
            assignment = decoded(zk.topic_path(name), zk.decode_topic_assignment, answer[0], name)
        except zk.ZNodeFormatError as e:
            report(e)
            continue
        found[name] = TopicRead(assignment, answer[1].version)
    children = store.get_children_many([zk.topic_partitions_path(name) for name in found])
    for name, read in found.items():
        listed = children.get(zk.topic_partitions_path(name))
        read.partition_nodes = None if listed is None else {int(child) for child in listed if child.isdigit()}
    paths = {
        zk.partition_state_path(name, index): (name, index)
        for name, read in found.items()
        for index in read.assignment.partitions
        if read.partition_nodes is not None and index in read.partition_nodes
    }
    for name, read in found.items():
        read.states = dict.fromkeys(read.assignment.partitions)
    for path, answer in store.get_many(list(paths)).items():
        name, index = paths[path]
        if answer is None:
            continue
        try:
            found[name].states[index] = (decoded(path, zk.decode_leader_and_isr, answer[0]), answer[1].version)
        except zk.ZNodeFormatError as e:
            report(e)
            found[name].unreadable.add(index)
    return found


class ControllerContext:
    def __init__(self) -> None:
        self.epoch = 0
        self.epoch_zk_version = 0
        self.live_brokers: dict[int, LiveBroker] = {}
        self.shutting_down: set[int] = set()
        self.assignments: dict[str, zk.TopicAssignment] = {}
        self.assignment_versions: dict[str, int] = {}
        self.leadership: dict[TopicPartition, LoadedState] = {}
        self.unreadable: set[TopicPartition] = set()
        # The ``partitions/P`` znodes each topic has (None: not even ``partitions``).
        self.partition_nodes: dict[str, set[int] | None] = {}

    def reset(self) -> None:
        self.live_brokers.clear()
        self.shutting_down.clear()
        self.assignments.clear()
        self.assignment_versions.clear()
        self.leadership.clear()
        self.unreadable.clear()
        self.partition_nodes.clear()

    # -- brokers ----------------------------------------------------------------------------------

    @property
    def eligible_brokers(self) -> set[int]:
        """Live brokers that may lead or join an ISR: those not shutting down (Kafka's
        liveBrokerIds)."""
        return self.live_brokers.keys() - self.shutting_down

    # -- topics and partitions --------------------------------------------------------------------

    def put_topic(self, name: str, read: TopicRead) -> None:
        """The topic as ``read``: its assignment, and the state of every partition read."""
        self.assignments[name] = read.assignment
        self.assignment_versions[name] = read.version
        self.partition_nodes[name] = read.partition_nodes
        for index, loaded in read.states.items():
            key = (name, index)
            self.unreadable.discard(key)
            if loaded is not None:
                self.leadership[key] = loaded
        self.unreadable.update((name, index) for index in read.unreadable)

    def remove_topic(self, name: str) -> None:
        for index in self.assignments.pop(name, zk.TopicAssignment({})).partitions:
            self.leadership.pop((name, index), None)
            self.unreadable.discard((name, index))
        self.assignment_versions.pop(name, None)
        self.partition_nodes.pop(name, None)

    def topic_names(self) -> list[str]:
        return sorted(self.assignments)

    def partitions(self, name: str | None = None) -> Iterator[TopicPartition]:
        names = [name] if name is not None else sorted(self.assignments)
        for topic in names:
            assignment = self.assignments.get(topic)
            if assignment is not None:
                for index in sorted(assignment.partitions):
                    yield topic, index

    def replicas(self, key: TopicPartition) -> tuple[int, ...]:
        assignment = self.assignments.get(key[0])
        return () if assignment is None else tuple(assignment.partitions.get(key[1], ()))

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [key for key in self.partitions() if broker_id in self.replicas(key)]

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return [key for key, (state, _) in sorted(self.leadership.items()) if state.leader == broker_id]

    def partition_state(self, key: TopicPartition) -> TopicPartitionState:
        """The partition as brokers are told it (LeaderAndIsr, UpdateMetadata)."""
        name, index = key
        assignment = self.assignments[name]
        state = partition_state(
            tuple(assignment.partitions.get(index, ())),
            tuple(assignment.adding_replicas.get(index, ())),
            tuple(assignment.removing_replicas.get(index, ())),
            self.leadership.get(key),
        )
        return TopicPartitionState(name, assignment.topic_id, index, state)

    def elected_partition_states(self, keys: Iterable[TopicPartition] | None = None) -> list[TopicPartitionState]:
        """The partitions among ``keys`` (every one by default) that have a state."""
        keys = self.partitions() if keys is None else keys
        return [self.partition_state(key) for key in keys if key in self.leadership and key[0] in self.assignments]
