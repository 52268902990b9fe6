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

With a channel (cluster mode, ``channel_manager``) the controller tells brokers what it decided,
batched per event (``request_batch``), as Kafka's controller does: LeaderAndIsr to the replicas
of every partition whose state it wrote, UpdateMetadata to every live broker; on becoming
controller, every partition's state to its replicas and the whole cluster to every broker; to a
broker that starts, the partitions it holds and the whole cluster. A broker stopping cleanly asks
first (ControlledShutdown, ``controlled_shutdown``): its partitions move to another live in-sync
replica, or go offline at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

from kcli.broker.controller import leader_selectors
from kcli.broker.controller.partition_state import PartitionStateMachine
from kcli.broker.controller.topic_deletion_manager import TopicDeletionManager
from kcli.broker.controller.request_batch import ControllerBrokerRequestBatch, LiveBroker, TopicPartitionState
from kcli.broker.metadata_thread import InlineMetadataThread
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import BadVersionError, ChangeEvent, ChangeKind, CreateOp, DeleteOp, NodeExistsError, NoNodeError, Op, SetDataOp
from kcli.metadata.topics import PartitionState, TopicInfo, random_uuid
from kcli.metadata.zk_client import KafkaZkClient, LoadedState

log = logging.getLogger("kcli.broker.controller")


class KafkaController:
    def __init__(
        self,
        zk_client: KafkaZkClient,
        broker_id: int,
        thread: InlineMetadataThread | None = None,
        *,
        channel=None,
        inter_broker_listener: str = "PLAINTEXT",
    ) -> None:
        self.zk_client = zk_client
        self.thread = thread if thread is not None else InlineMetadataThread()
        self.broker_id = broker_id
        self.epoch = 0
        self.active = False
        self._lock = threading.RLock()
        self._unwatch: list[Callable[[], None]] = []
        self._unwatch_controller: Callable[[], None] | None = None
        self._live: dict[int, LiveBroker] = {}
        self._shutting_down: set[int] = set()
        self._pending: list[ChangeEvent] = []
        # None: no brokers to tell (the embedded single-process mode, the tools).
        self.channel = channel
        self.inter_broker_listener = inter_broker_listener.upper()
        self._batch = ControllerBrokerRequestBatch(broker_id, channel)
        # (topic, partition) -> (topic id, partition epoch) of the state last sent to the brokers.
        self._published: dict[tuple[str, int], tuple] = {}
        # With a channel, deletions go through the brokers (StopReplica); without, at once.
        self.deletion = TopicDeletionManager(self)
        self.partition_states = PartitionStateMachine(broker_id)

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
        self._unwatch.append(store.watch(zk.TOPICS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.DELETE_TOPICS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.BROKER_IDS, self._on_tree_change))
        self._live = self._read_live_brokers()
        self._shutting_down.clear()
        for live in self._live.values():
            self._add_channel(live)
        # Kafka's onControllerFailover: every partition's state to its live replicas, the whole
        # cluster to every broker (nothing is taken as sent by an earlier controller).
        self._published.clear()
        self.deletion.reset()
        self.partition_states.reset()
        marked = store.get_children(zk.DELETE_TOPICS)
        if self.channel is not None:
            self.deletion.topics_to_delete.update(marked)
        for name in self.zk_client.topic_names():
            self._elect_leaders(name)
        self._batch.add_update_metadata(self._live)
        self._handle_marked(marked)
        self._send_batch()
        return epoch

    def resign(self) -> None:
        """Stop acting as controller (Kafka's onControllerResignation)."""
        with self._lock:
            was_active, self.active = self.active, False
        for unwatch in self._unwatch:
            unwatch()
        self._unwatch.clear()
        if self.channel is not None and was_active:
            self.channel.shutdown()
        self._batch = ControllerBrokerRequestBatch(self.broker_id, self.channel)
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
        started: list[int] = []
        if brokers_changed:
            live = self._read_live_brokers()
            # A broker that registered again (a new session) is a new broker: its epoch changed.
            started = sorted(b for b in live if b not in self._live or live[b].epoch != self._live[b].epoch)
            failed = sorted(b for b in self._live if b not in live or b in started)
            self._live = live
            self._shutting_down &= live.keys() - set(started)
            if started:
                log.info("[Controller id=%d] Newly added brokers: %s", self.broker_id, ",".join(map(str, started)))
            if failed:
                log.info("[Controller id=%d] Broker failure callback for %s", self.broker_id, ",".join(map(str, failed)))
            for broker_id in failed:
                if self.channel is not None and broker_id not in live:
                    self.channel.remove_broker(broker_id)
            for broker_id in started:
                self._add_channel(live[broker_id])
            if started or failed:
                # onBrokerStartup / onBrokerFailure: every partition may change leader.
                topics.update(self.zk_client.topic_names())
        for name in sorted(topics):
            self._elect_leaders(name)
        if started and self.channel is not None:
            # onBrokerStartup: the whole cluster and its replicas' states to the new brokers, the
            # new list of brokers to the others.
            every = self._all_partition_states()
            for partition in every:
                self._batch.add_leader_and_isr([b for b in started if b in partition.state.replicas], partition)
            self._batch.add_update_metadata(started, every)
            self._batch.add_update_metadata(self._live)
        elif brokers_changed:
            self._batch.add_update_metadata(self._live)
        if self.channel is not None and brokers_changed:
            if failed:
                self.deletion.on_broker_failure(failed)
            if started:
                self.deletion.on_broker_startup(started)
        self._handle_marked(sorted(marked))
        self._send_batch()

    def _handle_marked(self, names) -> None:
        if self.channel is not None:
            self.deletion.enqueue(names)
        else:
            for name in names:
                self._delete_marked(name)

    # -- what the deletion manager uses ---------------------------------------------------------------

    @property
    def batch(self) -> ControllerBrokerRequestBatch:
        return self._batch

    @property
    def live_brokers(self) -> dict[int, LiveBroker]:
        return self._live

    def send_batch(self) -> None:
        self._send_batch()

    def forget_topic(self, name: str) -> None:
        for key in [key for key in self._published if key[0] == name]:
            del self._published[key]
        self.partition_states.remove_topic(name)

    # -- the brokers and the channel ----------------------------------------------------------------

    def _read_live_brokers(self) -> dict[int, LiveBroker]:
        """The registered brokers, each with its epoch and inter-broker endpoint (tree reads)."""
        live: dict[int, LiveBroker] = {}
        store = self.zk_client.store
        for broker_id in self.zk_client.registered_brokers():
            try:
                registration = self.zk_client.broker_registration(broker_id)
                stat = store.exists(zk.broker_id_path(broker_id))
            except KafkaError:
                continue
            except zk.ZNodeFormatError as e:
                self.zk_client.report_malformed(e, log)
                continue
            if registration is None or stat is None or not registration.endpoints:
                continue
            endpoint = next((e for e in registration.endpoints if e.listener_name.upper() == self.inter_broker_listener), registration.endpoints[0])
            live[broker_id] = LiveBroker(broker_id, registration, stat.czxid, endpoint.host, endpoint.port)
        return live

    def _add_channel(self, live: LiveBroker) -> None:
        if self.channel is not None:
            self.channel.add_broker(live.broker_id, live.host, live.port)

    def _live_replicas(self, replicas) -> list[int]:
        return [replica for replica in replicas if replica in self._live]

    def _send_batch(self) -> None:
        if self.channel is not None and self.active:
            self._batch.send(self.epoch, self._live)

    def _all_partition_states(self) -> list[TopicPartitionState]:
        """Every partition with a state, as the tree holds it (the controller's context)."""
        result = []
        for name in self.zk_client.topic_names():
            if name in self.deletion.topics_to_delete:
                continue
            topic = self.load_topic_or_none(name)
            if topic is not None:
                result.extend(self._states_of(topic, topic.partitions))
        return result

    def load_topic_or_none(self, name: str) -> TopicInfo | None:
        """The topic as the tree holds it; None when it is gone, or cannot be read (reported)."""
        try:
            return self.zk_client.load_topic(name, on_malformed_state=lambda e: self.zk_client.report_malformed(e, log))
        except KafkaError:
            return None
        except zk.ZNodeFormatError as e:
            self.zk_client.report_malformed(e, log)
            return None

    @staticmethod
    def _states_of(topic: TopicInfo, indexes) -> list[TopicPartitionState]:
        return [
            TopicPartitionState(topic.name, topic.topic_id, index, topic.partitions[index])
            for index in sorted(indexes)
            if index in topic.partitions and topic.partitions[index].leader_epoch >= 0
        ]

    def _publish(self, name: str) -> None:
        """LeaderAndIsr to the live replicas of every partition of the topic whose state the
        brokers have not been sent yet (written by this controller, or by an admin request that
        created the topic), UpdateMetadata of them to every live broker; a partition gone from the
        topic leaves what was sent."""
        if self.channel is None:
            return
        topic = self.load_topic_or_none(name)
        if topic is None:
            return
        changed = [
            partition
            for partition in self._states_of(topic, topic.partitions)
            if self._published.get((name, partition.index)) != (topic.topic_id, partition.state.partition_epoch)
        ]
        for partition in changed:
            self._published[(name, partition.index)] = (topic.topic_id, partition.state.partition_epoch)
            self._batch.add_leader_and_isr(self._live_replicas(partition.state.replicas), partition)
        if changed:
            self._batch.add_update_metadata(self._live, changed)

    def _elect_leaders(self, name: str) -> None:
        """Bring the topic's partitions to the state the live brokers allow, in one transaction:

        * a topic written without an id gets one, and a partition without a state znode its first
          state: the first live replica leads, alone in the ISR until replication exists
          (NewPartition -> OnlinePartition);
        * a partition whose leader is not live elects the first live replica of its ISR, in
          assignment order (OfflinePartitionLeaderElection, unclean election disabled); with none,
          it goes offline: leader -1, the ISR keeping its last member, as Kafka's controller
          removes a failed replica from the ISR;

        then tells the brokers of every partition state they were not sent yet (``_publish``).
        """
        if self.channel is not None and name in self.deletion.topics_to_delete:
            return  # being deleted: its partitions are not elected again
        try:
            assignment, stat = self.zk_client.topic_assignment(name)
        except KafkaError:
            return
        except zk.ZNodeFormatError as e:
            self.zk_client.report_malformed(e, log)
            return
        try:
            self._write_leaders(name, assignment, stat)
        except zk.ZNodeFormatError as e:
            self.zk_client.report_malformed(e, log)
        finally:
            self._publish(name)

    def _write_leaders(self, name: str, assignment, stat) -> None:
        store = self.zk_client.store
        # Kafka's live brokers exclude those shutting down.
        live = self._live.keys() - self._shutting_down
        ops: list[Op] = []
        written: list[tuple[int, int]] = []
        if assignment.topic_id is None:
            assignment = replace(assignment, topic_id=random_uuid())
            ops.append(SetDataOp(zk.topic_path(name), zk.encode_topic_assignment(assignment), stat.version))
        if store.exists(zk.topic_partitions_path(name)) is None:
            ops.append(CreateOp(zk.topic_partitions_path(name)))
        for partition, replicas in assignment.partitions.items():
            try:
                loaded = self.zk_client.partition_state(name, partition)
            except zk.ZNodeFormatError as e:
                self.zk_client.report_malformed(e, log)  # that partition waits; the others go on
                continue
            if loaded is None:
                # NewPartition -> OnlinePartition: the first live replica leads, alone in the ISR
                # until replication exists.
                in_sync = tuple(replica for replica in replicas if replica in live)
                self.partition_states.observe(name, partition, None)
                if not in_sync:
                    continue
                first = zk.LeaderAndIsr(in_sync[0], 0, in_sync[:1], self.epoch)
                if store.exists(zk.topic_partition_path(name, partition)) is None:
                    ops.append(CreateOp(zk.topic_partition_path(name, partition)))
                ops.append(CreateOp(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(first)))
                written.append((partition, first.leader))
                continue
            current, version = loaded
            if current.leader in live:
                self.partition_states.observe(name, partition, current.leader)
                # Followers on brokers that died or are shutting down leave the ISR (their
                # replicas go OfflineReplica), with a new leader epoch, as Kafka's
                # removeReplicasFromIsr.
                isr = tuple(r for r in current.isr if r in live or r == current.leader)
                if isr != current.isr:
                    updated = replace(current, leader_epoch=current.leader_epoch + 1, isr=isr, controller_epoch=self.epoch)
                    ops.append(SetDataOp(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(updated), version))
                    written.append((partition, current.leader))
                continue
            if current.leader in self._shutting_down and current.leader in self._live:
                election = leader_selectors.controlled_shutdown_partition_leader(replicas, current.isr, self._live.keys(), self._shutting_down)
            else:
                election = leader_selectors.offline_partition_leader(replicas, current.isr, live)
            if election is not None:
                leader, isr = election
            elif current.leader == zk.NO_LEADER:
                self.partition_states.observe(name, partition, current.leader)
                continue  # offline already, and still no live replica in sync
            else:
                # No replica may lead: offline (leader -1), the ISR keeping its last member, as
                # Kafka's controller takes a failed replica out of the ISR.
                leader = zk.NO_LEADER
                isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != current.leader)
            updated = replace(current, leader=leader, leader_epoch=current.leader_epoch + 1, isr=isr, controller_epoch=self.epoch)
            ops.append(SetDataOp(zk.partition_state_path(name, partition), zk.encode_leader_and_isr(updated), version))
            written.append((partition, leader))
        if ops:
            try:
                store.multi(ops)
            except (NodeExistsError, BadVersionError, NoNodeError):
                return  # someone else changed the topic meanwhile; their change brings another event
            for partition, leader in written:
                self.partition_states.observe(name, partition, leader)

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

    # -- preferred replica election ---------------------------------------------------------------

    def check_leader_imbalance(self, percentage: int) -> list[tuple[str, int]]:
        """Kafka's checkAndTriggerAutoLeaderRebalance, on the metadata thread: for each live
        broker, the share of the partitions it is the preferred (first) replica of that it does
        not lead; past ``percentage`` percent, those partitions elect their preferred replica
        where it is live and in sync. Returns the partitions moved."""
        if not self.active:
            return []
        live = self._live.keys() - self._shutting_down
        preferred: dict[int, list[tuple[TopicInfo, int]]] = {}
        for name in self.zk_client.topic_names():
            if name in self.deletion.topics_to_delete:
                continue
            topic = self.load_topic_or_none(name)
            if topic is None:
                continue
            for index, state in topic.partitions.items():
                if state.replicas and state.leader_epoch >= 0:
                    preferred.setdefault(state.replicas[0], []).append((topic, index))
        moved: list[tuple[str, int]] = []
        for broker_id, partitions in sorted(preferred.items()):
            if broker_id not in live:
                continue
            imbalanced = [(topic, index) for topic, index in partitions if topic.partitions[index].leader != broker_id]
            ratio = len(imbalanced) / len(partitions)
            log.debug("[Controller id=%d] Leader imbalance ratio for broker %d is %.3f", self.broker_id, broker_id, ratio)
            if ratio * 100 <= percentage:
                continue
            for topic, index in imbalanced:
                if self._elect_preferred(topic.name, index, live):
                    moved.append((topic.name, index))
        for name in sorted({name for name, _ in moved}):
            self._publish(name)
        self._send_batch()
        if moved:
            log.info("[Controller id=%d] Preferred replica election moved %d partition(s)", self.broker_id, len(moved))
        return moved

    def _elect_preferred(self, name: str, index: int, live) -> bool:
        loaded = self.zk_client.partition_state(name, index)
        try:
            assignment, _ = self.zk_client.topic_assignment(name)
        except KafkaError:
            return False
        if loaded is None or index not in assignment.partitions:
            return False
        current, version = loaded
        election = leader_selectors.preferred_replica_partition_leader(assignment.partitions[index], current.isr, live)
        if election is None or election.leader == current.leader:
            return False
        updated = replace(current, leader=election.leader, leader_epoch=current.leader_epoch + 1, isr=election.isr, controller_epoch=self.epoch)
        try:
            self.zk_client.set_partition_state(name, index, updated, version)
        except (BadVersionError, NoNodeError):
            return False
        self.partition_states.observe(name, index, election.leader)
        return True

    # -- ISR changes from leaders ---------------------------------------------------------------------

    async def alter_partitions(self, broker_id: int, broker_epoch: int, changes) -> list[dict]:
        """AlterPartition's changes ``(topic id, partition, leader epoch, new ISR, leader recovery
        state, partition epoch)``, checked and written on the metadata thread; one answer each
        (error code and the partition's state)."""
        return await self.thread.call(self._alter_partitions, broker_id, broker_epoch, changes)

    def _alter_partitions(self, broker_id: int, broker_epoch: int, changes) -> list[dict]:
        if not self.active:
            raise KafkaError(ErrorCode.NOT_CONTROLLER)
        live = self._live.get(broker_id)
        if live is None or (broker_epoch != -1 and broker_epoch != live.epoch):
            raise KafkaError(ErrorCode.STALE_BROKER_EPOCH)
        names = {}
        for name in self.zk_client.topic_names():
            topic = self.load_topic_or_none(name)
            if topic is not None:
                names[topic.topic_id] = name
        results = []
        changed: set[str] = set()
        for topic_id, index, leader_epoch, isr, recovery, partition_epoch in changes:
            name = names.get(topic_id)
            result = self._alter_partition(broker_id, name, index, leader_epoch, isr, recovery, partition_epoch)
            if result.pop("written", False):
                changed.add(name)
            results.append(result)
        for name in sorted(changed):
            self._publish(name)
        self._send_batch()
        return results

    def _alter_partition(self, broker_id, name, index, leader_epoch, isr, recovery, partition_epoch) -> dict:
        def refused(error: ErrorCode) -> dict:
            return {"error_code": error, "leader_id": -1, "leader_epoch": -1, "isr": [], "leader_recovery_state": 0, "partition_epoch": -1}

        def answered(state: zk.LeaderAndIsr, epoch: int, **extra) -> dict:
            return {"error_code": ErrorCode.NONE, "leader_id": state.leader, "leader_epoch": state.leader_epoch,
                    "isr": list(state.isr), "leader_recovery_state": state.leader_recovery_state, "partition_epoch": epoch, **extra}

        if name is None:
            return refused(ErrorCode.UNKNOWN_TOPIC_ID)
        loaded = self.zk_client.partition_state(name, index)
        if loaded is None:
            return refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current, version = loaded
        if partition_epoch > version or leader_epoch > current.leader_epoch:
            return refused(ErrorCode.NOT_CONTROLLER)
        if leader_epoch < current.leader_epoch:
            return refused(ErrorCode.FENCED_LEADER_EPOCH)
        if current.leader != broker_id:
            log.info("[Controller id=%d] Rejecting AlterPartition from broker %d for %s-%d: the leader is %d",
                     self.broker_id, broker_id, name, index, current.leader)
            return refused(ErrorCode.INVALID_REQUEST)
        if tuple(isr) == current.isr and recovery == current.leader_recovery_state:
            return answered(current, version)  # already so: answered as it is, whatever the partition epoch
        if partition_epoch < version:
            return refused(ErrorCode.INVALID_UPDATE_VERSION)
        if recovery == zk.LEADER_RECOVERING and len(isr) > 1:
            return refused(ErrorCode.INVALID_REQUEST)
        if current.leader_recovery_state == zk.LEADER_RECOVERED and recovery == zk.LEADER_RECOVERING:
            return refused(ErrorCode.INVALID_REQUEST)
        assignment, _ = self.zk_client.topic_assignment(name)
        replicas = assignment.partitions.get(index, ())
        eligible = self._live.keys() - self._shutting_down
        if not isr or any(r not in replicas or r not in eligible for r in isr):
            return refused(ErrorCode.INELIGIBLE_REPLICA)
        updated = replace(current, isr=tuple(isr), leader_recovery_state=recovery, controller_epoch=self.epoch)
        try:
            self.zk_client.set_partition_state(name, index, updated, version)
        except (BadVersionError, NoNodeError):
            return refused(ErrorCode.INVALID_UPDATE_VERSION)
        log.info("[Controller id=%d] ISR of %s-%d changed to %s", self.broker_id, name, index, ",".join(map(str, isr)))
        return answered(updated, version + 1, written=True)

    # -- controlled shutdown ----------------------------------------------------------------------

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        """A broker asks to stop (Kafka's KafkaController.controlledShutdown): the partitions it
        leads move to another live in-sync replica, or go offline at once; the partitions it
        still leads afterwards are returned. Runs on the metadata thread."""
        return await self.thread.call(self._controlled_shutdown, broker_id, broker_epoch)

    def _controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        if not self.active:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"Broker {self.broker_id} is not the controller")
        # The newest registrations: a broker may ask before its registration's watch arrived here.
        self._live = self._read_live_brokers()
        live = self._live.get(broker_id)
        if live is None:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"Broker id {broker_id} does not exist.")
        if broker_epoch != -1 and broker_epoch < live.epoch:
            raise KafkaError(
                ErrorCode.STALE_BROKER_EPOCH,
                f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker {broker_id}. "
                f"Current broker epoch is {live.epoch}.",
            )
        log.info("[Controller id=%d] Shutting down broker %d", self.broker_id, broker_id)
        self._shutting_down.add(broker_id)
        for name in self.zk_client.topic_names():
            self._elect_leaders(name)
        self._send_batch()
        remaining = []
        for name in self.zk_client.topic_names():
            topic = self.load_topic_or_none(name)
            if topic is not None:
                remaining.extend((name, index) for index, state in sorted(topic.partitions.items()) if state.leader == broker_id)
        log.info("[Controller id=%d] Broker %d leaves %d partition(s) led after its controlled shutdown", self.broker_id, broker_id, len(remaining))
        return remaining

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

