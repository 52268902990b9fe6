"""The controller role: election, topics' first leaders, topic deletion, partition state writes.

Its tree reads and writes run on the broker's metadata thread (``metadata_thread``).

One broker at a time is the controller: the one that created the ephemeral ``/controller`` znode,
in the same transaction that bumped ``/controller_epoch`` (conditional on its version, so two
brokers cannot both win an epoch). The epoch fences a deposed controller's writes: every
partition state it writes carries it.

While active, the controller follows ``/brokers/topics``, ``/admin/delete_topics`` and
``/brokers/ids``:

* a topic that ZooKeeper-era tools created by writing only ``/brokers/topics/T`` gets a topic id
  and its partitions' first state (the first live replica as leader, the live replicas as ISR),
  as Kafka's controller moves new partitions online; so do partitions that had no live replica
  when a broker registers;
* a topic marked under ``/admin/delete_topics/T`` is deleted with its partitions and config.

Election on failover, the partition and replica state machines and the channel to brokers come
with the cluster mode (``docs/architecture.md``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

from kcli.broker.metadata_thread import InlineMetadataThread
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import BadVersionError, ChangeEvent, ChangeKind, CreateOp, DeleteOp, NodeExistsError, NoNodeError, Op, SetDataOp
from kcli.metadata.topics import random_uuid
from kcli.metadata.zk_client import KafkaZkClient, LoadedState

log = logging.getLogger("kcli.broker.controller")


class KafkaController:
    def __init__(self, zk_client: KafkaZkClient, broker_id: int, thread: InlineMetadataThread | None = None) -> None:
        self.zk_client = zk_client
        self.thread = thread if thread is not None else InlineMetadataThread()
        self.broker_id = broker_id
        self.epoch = 0
        self.active = False
        self._lock = threading.RLock()
        self._unwatch: list[Callable[[], None]] = []

    def elect(self) -> int:
        """Take the controller role; NOT_CONTROLLER when another broker holds it. Returns the new
        epoch. The active controller then completes unfinished topics and pending deletions."""
        try:
            epoch = self.zk_client.register_controller_and_increment_epoch(self.broker_id)
        except (NodeExistsError, BadVersionError):
            holder = self.zk_client.controller_id()
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"Broker {holder} is already the controller") from None
        with self._lock:
            self.epoch = epoch
            self.active = True
        log.info("[Controller id=%d] %d successfully elected as the controller. Epoch incremented to %d",
                 self.broker_id, self.broker_id, epoch)
        store = self.zk_client.store
        self._unwatch.append(store.watch(zk.TOPICS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.DELETE_TOPICS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.BROKER_IDS, self._on_tree_change))
        for name in self.zk_client.topic_names():
            self._complete_topic(name)
        for name in store.get_children(zk.DELETE_TOPICS):
            self._delete_marked(name)
        return epoch

    def resign(self) -> None:
        with self._lock:
            self.active = False
        for unwatch in self._unwatch:
            unwatch()
        self._unwatch.clear()

    # -- following the tree -----------------------------------------------------------------------

    def _on_tree_change(self, events: list[ChangeEvent]) -> None:
        # On the store's thread: the controller's work (tree reads and writes) is queued on the
        # metadata thread, in order.
        if self.active:
            self.thread.submit(lambda: self._process(events))

    def _process(self, events: list[ChangeEvent]) -> None:
        if not self.active:
            return
        topics: set[str] = set()
        marked: set[str] = set()
        for event in events:
            parts = event.path.split("/")
            if event.path.startswith(zk.BROKER_IDS + "/") and event.kind is ChangeKind.CREATED:
                # A broker came up: partitions that had no live replica may get a leader now.
                topics.update(self.zk_client.topic_names())
            elif event.path.startswith(zk.TOPICS + "/") and len(parts) == 4 and event.kind is not ChangeKind.DELETED:
                topics.add(parts[3])
            elif event.path.startswith(zk.DELETE_TOPICS + "/") and len(parts) == 4 and event.kind is ChangeKind.CREATED:
                marked.add(parts[3])
        for name in sorted(topics):
            self._complete_topic(name)
        for name in sorted(marked):
            self._delete_marked(name)

    def _complete_topic(self, name: str) -> None:
        """Give a topic written without them an id and its partitions' first state."""
        try:
            assignment, stat = self.zk_client.topic_assignment(name)
        except KafkaError:
            return
        states = {partition: self.zk_client.partition_state(name, partition) for partition in assignment.partitions}
        if assignment.topic_id is not None and None not in states.values():
            return
        store = self.zk_client.store
        ops: list[Op] = []
        if assignment.topic_id is None:
            assignment = replace(assignment, topic_id=random_uuid())
            ops.append(SetDataOp(zk.topic_path(name), zk.encode_topic_assignment(assignment), stat.version))
        if store.exists(zk.topic_partitions_path(name)) is None:
            ops.append(CreateOp(zk.topic_partitions_path(name)))
        live = set(self.zk_client.registered_brokers())
        for partition, state in states.items():
            in_sync = tuple(replica for replica in assignment.partitions[partition] if replica in live)
            if state is not None or not in_sync:
                continue
            first = zk.LeaderAndIsr(in_sync[0], 0, in_sync, self.epoch)
            if store.exists(zk.topic_partition_path(name, partition)) is None:
                ops.append(CreateOp(zk.topic_partition_path(name, partition)))
            ops.append(CreateOp(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(first)))
        if ops:
            try:
                store.multi(ops)
            except (NodeExistsError, BadVersionError, NoNodeError):
                pass  # someone else changed the topic meanwhile; their change brings another event

    def _delete_marked(self, name: str) -> None:
        """Carry out a deletion a ZooKeeper-era tool requested by creating /admin/delete_topics/T."""
        store = self.zk_client.store
        ops = self.zk_client.topic_deletion_ops(name) if self.zk_client.topic_exists(name) else []
        if not ops and store.exists(zk.delete_topic_path(name)) is not None:
            ops = [DeleteOp(zk.delete_topic_path(name))]
        if ops:
            try:
                store.multi(ops)
            except (NoNodeError, BadVersionError):
                pass

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
    ) -> LoadedState:
        """Change a partition's leader and/or ISR with a conditional write of its state znode.

        The leader epoch grows by one when the leader changes (or when ``bump_leader_epoch``);
        the partition epoch (the znode's version) grows with every update. A stale
        ``expected_partition_epoch`` or a concurrent update fails with INVALID_UPDATE_VERSION.
        Returns the state written and its partition epoch.
        """
        loaded = self.zk_client.partition_state(name, partition)
        if loaded is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current, version = loaded
        if expected_partition_epoch is not None and expected_partition_epoch != version:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION)
        new_leader = current.leader if leader is None else leader
        bump = new_leader != current.leader if bump_leader_epoch is None else bump_leader_epoch
        updated = zk.LeaderAndIsr(
            leader=new_leader,
            leader_epoch=current.leader_epoch + 1 if bump else current.leader_epoch,
            isr=current.isr if isr is None else tuple(isr),
            controller_epoch=self.epoch,
            leader_recovery_state=(
                current.leader_recovery_state if leader_recovery_state is None else leader_recovery_state
            ),
        )
        try:
            self.zk_client.set_partition_state(name, partition, updated, version)
        except BadVersionError:
            raise KafkaError(ErrorCode.INVALID_UPDATE_VERSION) from None
        return updated, version + 1

