"""The controller role: election, partition leadership, topic deletion, partition state writes.

One broker at a time is the controller: the one that created the ephemeral ``/controller`` znode,
in the same transaction that bumped ``/controller_epoch`` (conditional on its version, so two
brokers cannot both win an epoch). Every broker runs for it at start and again whenever
``/controller`` goes away. The epoch fences a deposed controller's writes: every partition state
it writes carries it. Its tree reads and writes run on the broker's metadata thread.

While active, the controller follows ``/brokers/topics``, ``/admin/delete_topics`` and
``/brokers/ids``:

* a topic created by writing only ``/brokers/topics/T`` (ZooKeeper-era tools) gets a topic id and
  its partitions' first state, as Kafka's controller moves new partitions online;
* when a broker fails, the partitions it led elect another live replica of their ISR, or go
  offline (leader -1); when a broker starts, offline partitions it can lead come back online;
* a topic marked under ``/admin/delete_topics/T`` is deleted with its partitions and config.

The channel that tells brokers of their leadership (LeaderAndIsr, UpdateMetadata) comes with the
cluster mode's next step (``docs/architecture.md``); until then brokers follow the partition
state znodes through their metadata caches.
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
        self._unwatch_controller: Callable[[], None] | None = None
        self._live: set[int] = set()
        self._pending: list[ChangeEvent] = []

    # -- election ---------------------------------------------------------------------------------

    def startup(self) -> None:
        """Run for controller now, and again whenever ``/controller`` goes away (Kafka's
        ControllerChangeHandler); call on the metadata thread."""
        self._unwatch_controller = self.zk_client.store.watch(zk.CONTROLLER, self._on_controller_change)
        self.try_elect()

    def try_elect(self) -> None:
        """Elect this broker unless another holds the role (then follow it)."""
        if self.active:
            return
        try:
            self.elect()
        except KafkaError as e:
            if e.error_code != ErrorCode.NOT_CONTROLLER:
                raise

    def _on_controller_change(self, events: list[ChangeEvent]) -> None:
        if any(event.kind is ChangeKind.DELETED for event in events):
            self.thread.submit(self._controller_gone)

    def _controller_gone(self) -> None:
        if self.active and self.zk_client.controller_id() != self.broker_id:
            self.resign()
        self.try_elect()

    def elect(self) -> int:
        """Take the controller role; NOT_CONTROLLER when another broker holds it. Returns the new
        epoch. The active controller then brings every partition it can online and carries out
        pending deletions (Kafka's onControllerFailover)."""
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
        try:
            self.zk_client.enable_feature_versioning()
        except zk.ZNodeFormatError as e:
            log.error("[Controller id=%d] Cannot read %s, left as it is: %s", self.broker_id, zk.FEATURE, e)
        store = self.zk_client.store
        self._live = set(self.zk_client.registered_brokers())
        self._unwatch.append(store.watch(zk.TOPICS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.DELETE_TOPICS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.BROKER_IDS, self._on_tree_change))
        for name in self.zk_client.topic_names():
            self._elect_leaders(name)
        for name in store.get_children(zk.DELETE_TOPICS):
            self._delete_marked(name)
        return epoch

    def resign(self) -> None:
        """Stop acting as controller (Kafka's onControllerResignation)."""
        with self._lock:
            was_active, self.active = self.active, False
        for unwatch in self._unwatch:
            unwatch()
        self._unwatch.clear()
        if was_active:
            log.info("[Controller id=%d] Resigned", self.broker_id)

    def shutdown(self) -> None:
        if self._unwatch_controller is not None:
            self._unwatch_controller()
            self._unwatch_controller = None
        self.resign()

    # -- following the tree -----------------------------------------------------------------------

    def _on_tree_change(self, events: list[ChangeEvent]) -> None:
        # On the store's thread: the controller's work (tree reads and writes) is queued on the
        # metadata thread, in order.
        # Events noted before the work starts are handled together.
        if not self.active:
            return
        with self._lock:
            first = not self._pending
            self._pending.extend(events)
        if first:
            self.thread.submit(self._process_pending)

    def _process_pending(self) -> None:
        with self._lock:
            events, self._pending = self._pending, []
        if events:
            self._process(events)

    def _process(self, events: list[ChangeEvent]) -> None:
        if not self.active:
            return
        topics: set[str] = set()
        marked: set[str] = set()
        brokers_changed = False
        for event in events:
            parts = event.path.split("/")
            if event.path.startswith(zk.BROKER_IDS + "/"):
                brokers_changed = True
            elif event.path.startswith(zk.TOPICS + "/") and len(parts) == 4 and event.kind is not ChangeKind.DELETED:
                topics.add(parts[3])
            elif event.path.startswith(zk.DELETE_TOPICS + "/") and len(parts) == 4 and event.kind is ChangeKind.CREATED:
                marked.add(parts[3])
        if brokers_changed:
            live = set(self.zk_client.registered_brokers())
            started, failed = sorted(live - self._live), sorted(self._live - live)
            self._live = live
            if started:
                log.info("[Controller id=%d] Newly added brokers: %s", self.broker_id, ",".join(map(str, started)))
            if failed:
                log.info("[Controller id=%d] Broker failure callback for %s", self.broker_id, ",".join(map(str, failed)))
            if started or failed:
                # onBrokerStartup / onBrokerFailure: every partition may change leader.
                topics.update(self.zk_client.topic_names())
        for name in sorted(topics):
            self._elect_leaders(name)
        for name in sorted(marked):
            self._delete_marked(name)

    def _elect_leaders(self, name: str) -> None:
        """Bring the topic's partitions to the state the live brokers allow, in one transaction:

        * a topic written without an id gets one, and a partition without a state znode its first
          state: the first live replica leads, alone in the ISR until replication exists
          (NewPartition -> OnlinePartition);
        * a partition whose leader is not live elects the first live replica of its ISR, in
          assignment order (OfflinePartitionLeaderElection, unclean election disabled); with none,
          it goes offline: leader -1, the ISR keeping its last member, as Kafka's controller
          removes a failed replica from the ISR.
        """
        try:
            assignment, stat = self.zk_client.topic_assignment(name)
        except KafkaError:
            return
        store = self.zk_client.store
        live = self._live
        ops: list[Op] = []
        if assignment.topic_id is None:
            assignment = replace(assignment, topic_id=random_uuid())
            ops.append(SetDataOp(zk.topic_path(name), zk.encode_topic_assignment(assignment), stat.version))
        if store.exists(zk.topic_partitions_path(name)) is None:
            ops.append(CreateOp(zk.topic_partitions_path(name)))
        for partition, replicas in assignment.partitions.items():
            loaded = self.zk_client.partition_state(name, partition)
            if loaded is None:
                in_sync = tuple(replica for replica in replicas if replica in live)
                if not in_sync:
                    continue
                # The leader alone is in sync: kcli does not replicate yet.
                first = zk.LeaderAndIsr(in_sync[0], 0, in_sync[:1], self.epoch)
                if store.exists(zk.topic_partition_path(name, partition)) is None:
                    ops.append(CreateOp(zk.topic_partition_path(name, partition)))
                ops.append(CreateOp(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(first)))
                continue
            current, version = loaded
            if current.leader in live:
                continue
            electable = [replica for replica in replicas if replica in live and replica in current.isr]
            if electable:
                leader = electable[0]
                isr = tuple(replica for replica in current.isr if replica in live)
            elif current.leader == zk.NO_LEADER:
                continue  # offline already, and still no live replica in sync
            else:
                leader = zk.NO_LEADER
                isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != current.leader)
            updated = replace(current, leader=leader, leader_epoch=current.leader_epoch + 1, isr=isr, controller_epoch=self.epoch)
            ops.append(SetDataOp(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(updated), version))
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

