"""The controller role: election, partition and replica state changes, and what brokers are told.

One broker at a time is the controller: the one that created the ephemeral ``/controller`` znode,
in the same transaction that bumped ``/controller_epoch`` (conditional on its version, so two
brokers cannot both win an epoch). Every broker runs for it at start and again whenever
``/controller`` goes away. Every write the controller makes is one transaction that also checks
``/controller_epoch``'s version, as Kafka 2.8's controller does: a deposed controller's writes
fail, and it resigns. Everything it does runs on the broker's metadata thread, one event at a
time; the tree's watches only queue events.

When elected it reads the whole cluster once, pipelined, into its ``ControllerContext``, and from
then on decides on that copy, keeping it current from its watches and its own writes. It follows
``/brokers/ids``, ``/brokers/topics``, ``/admin/delete_topics`` and ``/isr_change_notification``:

* a new topic or partition (written by an admin request with its first state, or by a
  ZooKeeper-era tool without one) goes NewPartition -> OnlinePartition: the first live replica
  leads, the live replicas in the ISR; a topic written without an id gets one;
* when a broker fails (onBrokerFailure) the partitions it led elect another live replica of their
  ISR (OfflinePartitionLeaderElection), or, with the topic's ``unclean.leader.election.enable``
  (its override, else the brokers' default), the first live replica alone in the ISR, or go
  offline (leader -1), and its replicas go OfflineReplica, leaving the ISRs they were in;
* a topic whose override becomes true, or a brokers' default that does, has its offline
  partitions elected again (TopicUncleanLeaderElectionEnable, UncleanLeaderElectionEnable);
* when a broker starts (onBrokerStartup) its replicas go OnlineReplica and offline partitions it
  can lead come back online;
* a topic marked under ``/admin/delete_topics/T`` is deleted (``TopicDeletionManager``); with
  ``delete.topic.enable=false`` the mark is removed and nothing is deleted;
* a topic znode removed any other way (by hand) is forgotten: no broker is told to delete its
  replicas, whose logs stay;
* an ISR change notification (``/isr_change_notification/isr_change_N``, written by a broker that
  changes ISRs itself, before AlterIsr) has its partitions' states read again and sent to every
  broker, then is deleted (IsrChangeNotification).

With a channel (cluster mode, ``channel_manager``) the controller tells brokers what it decided,
batched per event (``request_batch``), as Kafka's controller does: LeaderAndIsr to the replicas of
every partition whose state it wrote, UpdateMetadata to every live broker; on becoming controller,
every partition's state to its replicas and the whole cluster to every broker; to a broker that
starts, the partitions it holds and the whole cluster. A broker stopping cleanly asks first
(ControlledShutdown, ``controlled_shutdown``): its partitions of more than one replica move to
another live in-sync replica, or, with none, stay led by it and are listed as remaining (the
broker tries again); those of one replica stay led by it until it goes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from kcli.broker.controller import leader_selectors
from kcli.broker.controller.controller_context import ControllerContext, TopicPartition, read_topics
from kcli.broker.controller.partition_state import PartitionState, PartitionStateMachine
from kcli.broker.controller.replica_state import ReplicaState, ReplicaStateMachine
from kcli.broker.controller.request_batch import ControllerBrokerRequestBatch, LiveBroker
from kcli.broker.controller.topic_deletion_manager import TopicDeletionManager
from kcli.broker.metadata.metadata_thread import InlineMetadataThread
from kcli.errors import ErrorCode, KafkaError
from kcli.metadata import zk_paths as zk
from kcli.metadata.store import (
    BadVersionError, ChangeEvent, ChangeKind, CheckOp, CreateOp, DeleteOp, NodeExistsError, NoNodeError,
    Op, SetDataOp,
)
from kcli.metadata.topics import random_uuid
from kcli.metadata.zk_client import KafkaZkClient, LoadedState, decoded
from kcli.storage.log_config import LogConfig

log = logging.getLogger("kcli.broker.controller")

# How a partition's leader is chosen, by reason (Kafka's PartitionLeaderElectionStrategy).
OFFLINE, CONTROLLED_SHUTDOWN, PREFERRED = "offline", "controlled-shutdown", "preferred"
# Kafka's names for them, as its state-change log lines print them.
_STRATEGY_NAMES = {
    OFFLINE: "OfflinePartitionLeaderElectionStrategy(false)",
    CONTROLLED_SHUTDOWN: "ControlledShutdownPartitionLeaderElectionStrategy",
    PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
}
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


class ControllerMovedError(Exception):
    """``/controller_epoch`` moved past this controller's epoch: another broker is controller."""


class KafkaController:
    def __init__(
        self,
        zk_client: KafkaZkClient,
        broker_id: int,
        thread: InlineMetadataThread | None = None,
        *,
        channel=None,
        inter_broker_listener: str = "PLAINTEXT",
        delete_topic_enable: bool = True,
        unclean_leader_election_enable: Callable[[], bool] | bool = False,
    ) -> None:
        self.zk_client = zk_client
        self.thread = thread if thread is not None else InlineMetadataThread()
        self.broker_id = broker_id
        self.active = False
        self._lock = threading.RLock()
        self._unwatch: list[Callable[[], None]] = []
        self._unwatch_controller: Callable[[], None] | None = None
        self._pending: list[ChangeEvent] = []
        # None: no brokers to tell (the embedded single-process mode, the tools).
        self.channel = channel
        self.inter_broker_listener = inter_broker_listener.upper()
        # ``delete.topic.enable``: when false a deletion mark is removed and nothing is deleted.
        self.delete_topic_enable = delete_topic_enable
        # The broker's ``unclean.leader.election.enable`` (a callable: the dynamic cluster-wide
        # default, read at each election as Kafka's controller reads its KafkaConfig's originals).
        self._unclean_default = unclean_leader_election_enable if callable(unclean_leader_election_enable) else (
            lambda: bool(unclean_leader_election_enable)
        )
        self._batch = ControllerBrokerRequestBatch(broker_id, channel)
        self.context = ControllerContext()
        self.partition_states = PartitionStateMachine(broker_id)
        self.replica_states = ReplicaStateMachine(broker_id)
        # With a channel, deletions go through the brokers (StopReplica); without, at once.
        self.deletion = TopicDeletionManager(self)

    @property
    def epoch(self) -> int:
        return self.context.epoch

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
            self.thread.submit(lambda: self.run_event(self._controller_gone, "Reelect"))

    def _controller_gone(self) -> None:
        if self.active and self.zk_client.controller_id() != self.broker_id:
            self.resign()
        self.try_elect()

    def elect(self) -> int:
        """Take the controller role; NOT_CONTROLLER when another broker holds it. Returns the new
        epoch. The new controller reads the cluster, brings every partition it can online and
        carries out pending deletions (Kafka's onControllerFailover)."""
        try:
            epoch, epoch_zk_version = self.zk_client.register_controller_and_increment_epoch(self.broker_id)
        except (NodeExistsError, BadVersionError):
            holder = self.zk_client.controller_id()
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"Broker {holder} is already the controller") from None
        with self._lock:
            self.active = True
        log.info("[Controller id=%d] %d successfully elected as the controller. Epoch incremented to %d and epoch zk version is now %d",
                 self.broker_id, self.broker_id, epoch, epoch_zk_version)
        try:
            self.zk_client.enable_feature_versioning()
        except zk.ZNodeFormatError as e:
            log.error("[Controller id=%d] Cannot read %s, left as it is: %s", self.broker_id, zk.FEATURE, e)
        self._run(lambda: self._on_controller_failover(epoch, epoch_zk_version))
        return epoch

    def _on_controller_failover(self, epoch: int, epoch_zk_version: int) -> None:
        store = self.zk_client.store
        context = self.context
        context.reset()
        context.epoch, context.epoch_zk_version = epoch, epoch_zk_version
        self._unwatch.append(store.watch(zk.TOPICS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.DELETE_TOPICS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.BROKER_IDS, self._on_tree_change))
        self._unwatch.append(store.watch(zk.ISR_CHANGE_NOTIFICATION, self._on_tree_change))
        # Kafka's onControllerFailover deletes the ISR change notifications left: the states they
        # point at are read in full below.
        self._delete_isr_change_notifications(self._isr_change_notifications())
        context.live_brokers = self._read_live_brokers()
        for live in context.live_brokers.values():
            self._add_channel(live)
        self.partition_states.reset()
        self.replica_states.reset()
        self.deletion.reset()
        for name, read in read_topics(self.zk_client, self.zk_client.topic_names(), self._report).items():
            context.put_topic(name, read)
        # Kafka's initializePartitionState and initializeReplicaState.
        live = context.live_brokers
        for key in context.partitions():
            loaded = context.leadership.get(key)
            if loaded is None:
                self.partition_states.transition(*key, PartitionState.NEW_PARTITION)
            else:
                self.partition_states.observe(*key, loaded[0].leader if loaded[0].leader in live else zk.NO_LEADER)
            for replica in context.replicas(key):
                self.replica_states.states[(*key, replica)] = (
                    ReplicaState.ONLINE_REPLICA if replica in live else ReplicaState.OFFLINE_REPLICA
                )
        marked = store.get_children(zk.DELETE_TOPICS)
        if self.channel is not None and self.delete_topic_enable:
            self.deletion.topics_to_delete.update(marked)
        # Every partition's state to its live replicas, the whole cluster to every broker (nothing
        # is taken as sent by an earlier controller).
        every = [p for p in context.elected_partition_states() if p.topic not in self.deletion.topics_to_delete]
        for partition in every:
            self._batch.add_leader_and_isr(self._live_replicas(partition.state.replicas), partition)
        self._batch.add_update_metadata(live, every)
        self._elect(list(context.partitions()))
        self._handle_marked(marked)
        self._send_batch()

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

    def _run(self, event: Callable[[], object]):
        """Process one event; a write refused for an older controller epoch means another broker
        was elected meanwhile: this one resigns (Kafka's ControllerMovedException)."""
        try:
            return event()
        except ControllerMovedError:
            log.info("[Controller id=%d] Controller moved to another broker: resigning", self.broker_id)
            self.resign()
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"Broker {self.broker_id} is no longer the controller") from None

    def run_event(self, event: Callable[[], object], name: str) -> None:
        """``_run`` for an event nobody waits on, ``name`` being Kafka's name for it: a resignation
        ends it quietly; any other failure is logged in one line and the requests it gathered are
        dropped, so the next event starts afresh (Kafka's ControllerEventManager, "Uncaught error
        processing event", and the batch it clears on an illegal state)."""
        try:
            self._run(event)
        except KafkaError as e:
            if e.error_code != ErrorCode.NOT_CONTROLLER:
                self._uncaught(name, e)
        except Exception as e:
            self._uncaught(name, e)

    def _uncaught(self, name: str, error: Exception) -> None:
        log.error("[Controller id=%d] Uncaught error processing event %s: %s: %s", self.broker_id, name, type(error).__name__, error)
        log.debug("[Controller id=%d] Uncaught error processing event %s", self.broker_id, name, exc_info=error)
        self._batch.clear()

    # -- following the tree -----------------------------------------------------------------------

    def _on_tree_change(self, events: list[ChangeEvent]) -> None:
        # On the store's thread: the events are queued for the metadata thread, in order; events
        # noted before the work starts are handled together.
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
        if events and self.active:
            self.run_event(lambda: self._process(events), _event_name(events))

    def _process(self, events: list[ChangeEvent]) -> None:
        changed: set[str] = set()
        deleted: set[str] = set()
        marked: set[str] = set()
        brokers_changed = isr_changed = False
        for event in events:
            parts = event.path.split("/")
            if event.path.startswith(zk.BROKER_IDS + "/"):
                brokers_changed = True
            elif event.path.startswith(zk.ISR_CHANGE_NOTIFICATION + "/") and event.kind is ChangeKind.CREATED:
                isr_changed = True
            elif event.path.startswith(zk.TOPICS + "/") and len(parts) == 4:
                (deleted if event.kind is ChangeKind.DELETED else changed).add(parts[3])
            elif event.path.startswith(zk.DELETE_TOPICS + "/") and len(parts) == 4 and event.kind is ChangeKind.CREATED:
                marked.add(parts[3])
        if brokers_changed:
            self._refresh_brokers()
        for name in sorted(deleted - changed):
            if name in self.context.assignments and self.zk_client.store.exists(zk.topic_path(name)) is None:
                self._topic_znode_removed(name)
        if changed:
            self._on_topics_changed(changed)
        if isr_changed:
            self._on_isr_change_notification()
        self._handle_marked(sorted(marked))
        self._send_batch()

    # -- ISR changes from brokers before AlterIsr -----------------------------------------------------

    def _isr_change_notifications(self) -> list[str]:
        try:
            names = self.zk_client.store.get_children(zk.ISR_CHANGE_NOTIFICATION)
        except NoNodeError:
            return []
        return [f"{zk.ISR_CHANGE_NOTIFICATION}/{name}" for name in sorted(names) if name.startswith(zk.ISR_CHANGE_PREFIX)]

    def _delete_isr_change_notifications(self, paths: list[str]) -> None:
        for path in paths:
            try:
                self.multi([DeleteOp(path)])
            except NoNodeError:
                pass

    def _on_isr_change_notification(self) -> None:
        """Kafka 2.8's processIsrChangeNotification: a broker that changes ISRs in the state
        znodes itself (inter.broker.protocol.version before 2.7, no AlterIsr) lists the partitions
        under ``/isr_change_notification``; the controller reads their states again, tells every
        live broker (UpdateMetadata) and deletes the notifications. One that does not parse, or
        names a partition the cluster does not have, is deleted with an ERROR line: it stalls
        nothing."""
        paths = self._isr_change_notifications()
        if not paths:
            return
        context = self.context
        partitions: set[TopicPartition] = set()
        for path, answer in self.zk_client.store.get_many(paths).items():
            if answer is None:
                continue
            try:
                partitions.update(zk.decode_isr_change_notification(answer[0]))
            except zk.ZNodeFormatError as e:
                log.error("[Controller id=%d] Ignoring the ISR change notification %s: %s", self.broker_id, path, e)
        refreshed = []
        for key in sorted(partitions):
            if key not in context.leadership:
                log.error("[Controller id=%d] Ignoring the ISR change of %s-%d: the partition has no state here", self.broker_id, *key)
                continue
            try:
                loaded = self.zk_client.partition_state(*key)
            except zk.ZNodeFormatError as e:
                log.error("[Controller id=%d] Cannot read the state of %s-%d after its ISR change: %s", self.broker_id, *key, e)
                continue
            if loaded is not None:
                context.leadership[key] = loaded
                refreshed.append(key)
        if refreshed:
            log.info("[Controller id=%d] ISR changes notified for %s", self.broker_id, ", ".join(f"{t}-{p}" for t, p in refreshed))
            if self.channel is not None:
                self._batch.add_update_metadata(context.live_brokers, context.elected_partition_states(refreshed))
        self._delete_isr_change_notifications(paths)

    def _topic_znode_removed(self, name: str) -> None:
        """The topic's znode went without the topic-deletion procedure (by hand, or by a deletion
        without a channel): the controller forgets the topic, as Kafka's processTopicChange does,
        and tells no broker to stop or delete anything, so every replica's log stays on disk."""
        if self.channel is not None and name not in self.deletion.topics_to_delete:
            log.warning(
                "[Controller id=%d] Topic %s was removed from %s without being marked under %s: forgetting it; "
                "its replicas' logs stay on the brokers", self.broker_id, name, zk.TOPICS, zk.DELETE_TOPICS,
            )
        self.forget_topic(name)

    def _handle_marked(self, names) -> None:
        names = list(names)
        if names and not self.delete_topic_enable:
            self._remove_marks(names)
            return
        if self.channel is not None:
            self.deletion.enqueue(names)
        else:
            for name in names:
                self._delete_marked(name)

    # -- brokers ----------------------------------------------------------------------------------

    def _read_live_brokers(self) -> dict[int, LiveBroker]:
        """The registered brokers, each with its epoch and inter-broker endpoint (pipelined reads)."""
        live: dict[int, LiveBroker] = {}
        for broker_id, (registration, stat) in self.zk_client.live_brokers(self._report).items():
            endpoint = next((e for e in registration.endpoints if e.listener_name.upper() == self.inter_broker_listener), registration.endpoints[0])
            live[broker_id] = LiveBroker(broker_id, registration, stat.czxid, endpoint.host, endpoint.port)
        return live

    def _refresh_brokers(self) -> None:
        """Read the registrations again and handle the brokers that started and failed since."""
        context = self.context
        live = self._read_live_brokers()
        # A broker that registered again (a new session) is a new broker: its epoch changed.
        started = sorted(b for b in live if b not in context.live_brokers or live[b].epoch != context.live_brokers[b].epoch)
        failed = sorted(b for b in context.live_brokers if b not in live or b in started)
        context.live_brokers = live
        context.shutting_down &= live.keys() - set(started)
        if failed:
            log.info("[Controller id=%d] Broker failure callback for %s", self.broker_id, ",".join(map(str, failed)))
            self._on_broker_failure(failed)
        if started:
            log.info("[Controller id=%d] Newly added brokers: %s", self.broker_id, ",".join(map(str, started)))
            self._on_broker_startup(started)
        if not started and not failed:
            self._batch.add_update_metadata(live)

    def _on_broker_failure(self, failed: list[int]) -> None:
        """Kafka's onBrokerFailure: partitions the brokers led elect another leader or go offline,
        their replicas go OfflineReplica and leave the ISRs (one write per partition); every broker
        is told the partitions that lost a replica."""
        context = self.context
        for broker_id in failed:
            if self.channel is not None and broker_id not in context.live_brokers:
                self.channel.remove_broker(broker_id)
        lost = set(failed)
        affected = [key for key in context.partitions() if lost & set(context.replicas(key))]
        self._elect(affected)
        replicas = [(*key, broker) for key in affected for broker in context.replicas(key) if broker in lost]
        self.replica_states.transition([r for r in replicas if r[0] not in self.deletion.topics_to_delete], ReplicaState.OFFLINE_REPLICA)
        self._batch.add_update_metadata(
            context.live_brokers, [p for p in context.elected_partition_states(affected) if p.topic not in self.deletion.topics_to_delete]
        )
        if self.channel is not None:
            self.deletion.on_broker_failure(failed)

    def _on_broker_startup(self, started: list[int]) -> None:
        """Kafka's onBrokerStartup: the new list of brokers to every broker, the whole cluster and
        their replicas' states to the new ones (OnlineReplica), then offline partitions they can
        lead elect them."""
        context = self.context
        for broker_id in started:
            self._add_channel(context.live_brokers[broker_id])
        self._batch.add_update_metadata(context.live_brokers)
        every = [p for p in context.elected_partition_states() if p.topic not in self.deletion.topics_to_delete]
        self._batch.add_update_metadata(started, every)
        for partition in every:
            self._batch.add_leader_and_isr([b for b in started if b in partition.state.replicas], partition)
        starting = set(started)
        replicas = [(*key, b) for key in context.partitions() for b in context.replicas(key) if b in starting]
        self.replica_states.transition([r for r in replicas if r[0] not in self.deletion.topics_to_delete], ReplicaState.ONLINE_REPLICA)
        self._elect([key for key in context.partitions() if self.partition_states.state(*key) is not PartitionState.ONLINE_PARTITION])
        if self.channel is not None:
            self.deletion.on_broker_startup(started)

    def _add_channel(self, live: LiveBroker) -> None:
        if self.channel is not None:
            self.channel.add_broker(live.broker_id, live.host, live.port)

    def _live_replicas(self, replicas) -> list[int]:
        return [replica for replica in replicas if replica in self.context.live_brokers]

    # -- topics -----------------------------------------------------------------------------------

    def _on_topics_changed(self, names: Iterable[str]) -> None:
        """Topics created or changed in the tree: read them again; partitions new to the
        controller go through onNewPartitionCreation, a topic without an id gets one."""
        context = self.context
        reads = read_topics(self.zk_client, sorted(names), self._report)
        new: list[TopicPartition] = []
        for name, read in sorted(reads.items()):
            known = context.assignments.get(name)
            if known is not None and known.topic_id not in (None, read.assignment.topic_id) and read.assignment.topic_id is not None:
                self.forget_topic(name)  # deleted and created again since the controller last read it
                known = None
            new.extend((name, index) for index in sorted(read.assignment.partitions) if known is None or index not in known.partitions)
            context.put_topic(name, read)
        if new or reads:
            self._on_new_partitions(new, topics=reads.keys())

    def _on_new_partitions(self, keys: list[TopicPartition], topics: Iterable[str] = ()) -> None:
        """Kafka's onNewPartitionCreation: NewPartition and NewReplica, then the partitions with no
        state yet elect their first leader; those an admin request wrote with a live leader are
        published as written. Replicas then go OnlineReplica (OfflineReplica on brokers down)."""
        context = self.context
        for key in keys:
            if self.partition_states.state(*key) is PartitionState.NON_EXISTENT_PARTITION:
                self.partition_states.transition(*key, PartitionState.NEW_PARTITION)
        replicas = [(*key, broker) for key in keys for broker in context.replicas(key)]
        self.replica_states.transition(replicas, ReplicaState.NEW_REPLICA)
        written = set(self._elect(keys, topics=topics, is_new=True))
        as_written = [key for key in keys if key in context.leadership and key not in written]
        for key in as_written:
            self.partition_states.observe(*key, context.leadership[key][0].leader)
        self._publish(as_written, is_new=True)
        live = context.live_brokers
        self.replica_states.transition([r for r in replicas if r[2] in live], ReplicaState.ONLINE_REPLICA)
        self.replica_states.transition([r for r in replicas if r[2] not in live], ReplicaState.OFFLINE_REPLICA)

    def _remove_marks(self, names: list[str]) -> None:
        """``delete.topic.enable=false``: the deletion marks go and the topics stay (Kafka's
        processTopicDeletion and TopicDeletionManager.init)."""
        log.info("[Controller id=%d] Removing %s since delete topic is disabled", self.broker_id, ",".join(names))
        for name in names:
            try:
                self.multi([DeleteOp(zk.delete_topic_path(name))])
            except NoNodeError:
                pass  # removed meanwhile

    def _delete_marked(self, name: str) -> None:
        """Carry out a deletion a ZooKeeper-era tool requested by creating /admin/delete_topics/T."""
        store = self.zk_client.store
        ops = self.zk_client.topic_deletion_ops(name) if self.zk_client.topic_exists(name) else []
        if not ops and store.exists(zk.delete_topic_path(name)) is not None:
            ops = [DeleteOp(zk.delete_topic_path(name))]
        if ops:
            try:
                self.multi(ops)
            except (NoNodeError, BadVersionError):
                return
        self.forget_topic(name)

    def _report(self, error: zk.ZNodeFormatError) -> None:
        self.zk_client.report_malformed(error, log)

    # -- what the deletion manager uses ---------------------------------------------------------------

    @property
    def batch(self) -> ControllerBrokerRequestBatch:
        return self._batch

    @property
    def live_brokers(self) -> dict[int, LiveBroker]:
        return self.context.live_brokers

    def send_batch(self) -> None:
        self._send_batch()

    def forget_topic(self, name: str) -> None:
        self.context.remove_topic(name)
        self.partition_states.remove_topic(name)
        self.replica_states.remove_topic(name)

    def multi(self, ops: Sequence[Op]) -> None:
        """Write ``ops`` in one transaction that also checks ``/controller_epoch`` is still this
        controller's: ``ControllerMovedError`` when it is not."""
        try:
            self.zk_client.store.multi([CheckOp(zk.CONTROLLER_EPOCH, self.context.epoch_zk_version), *ops])
        except (BadVersionError, NoNodeError) as e:
            if e.path == zk.CONTROLLER_EPOCH:
                raise ControllerMovedError() from None
            raise

    def _send_batch(self) -> None:
        if self.channel is not None and self.active:
            self._batch.send(self.epoch, self.context.live_brokers)

    # -- leader elections -------------------------------------------------------------------------

    def _elect(
        self, keys: Iterable[TopicPartition], reason: str = OFFLINE, *, topics: Iterable[str] = (), is_new: bool = False
    ) -> list[TopicPartition]:
        """Decide each partition's next state for ``reason`` (``_decide``) and write the changes
        (``_write``), then tell the brokers; a topic whose write met a change made meanwhile is
        read again and decided once more. ``topics`` without a topic id get one. Returns the
        partitions whose state was written."""
        context = self.context
        keys = [
            key for key in keys
            if key[0] in context.assignments and key[0] not in self.deletion.topics_to_delete and key not in context.unreadable
        ]
        topics = {name for name in topics if name in context.assignments and name not in self.deletion.topics_to_delete}
        before = {key: (self.partition_states.state(*key), context.leadership[key][0]) for key in keys if key in context.leadership}
        written, failed = self._write(self._decisions(keys, reason), topics)
        if failed:
            for name, read in read_topics(self.zk_client, sorted(failed), self._report).items():
                context.put_topic(name, read)
            retry = [key for key in keys if key[0] in failed and key[0] in context.assignments]
            again, still = self._write(self._decisions(retry, reason), failed & topics)
            written += again
            for name in sorted(still):
                log.warning("[Controller id=%d] The state of topic %s changed while it was being written; left for the next event",
                            self.broker_id, name)
        self._log_elections(before, written, reason)
        self._publish(written, is_new=is_new)
        return written

    def _log_elections(self, before: dict, written: list[TopicPartition], reason: str) -> None:
        """Kafka's state-change log lines for the partitions an election moved: "Changed
        partition ... to OnlinePartition with state LeaderAndIsr(...)" for a new leader, "failed
        to change state" for a partition the offline election left without one."""
        context = self.context
        strategy = _STRATEGY_NAMES.get(reason, reason)
        prefix = f"[Controller id={self.broker_id} epoch={context.epoch}]"
        for key in written:
            if key not in before:
                continue
            previous_state, previous = before[key]
            if previous.leader not in context.live_brokers:
                # Kafka first moves a partition whose leader died to OfflinePartition, then elects.
                previous_state = PartitionState.OFFLINE_PARTITION
            state, version = context.leadership[key]
            name = f"{key[0]}-{key[1]}"
            if state.leader >= 0 and state.leader != previous.leader:
                log.info("%s Changed partition %s from %s to OnlinePartition with state LeaderAndIsr(leader=%d, leaderEpoch=%d, isr=List(%s), zkVersion=%d)",
                         prefix, name, previous_state.value, state.leader, state.leader_epoch, ", ".join(map(str, state.isr)), version)
            elif state.leader < 0 and previous.leader >= 0:
                log.error("%s Controller %d epoch %d failed to change state for partition %s from %s to OnlinePartition: "
                          "Failed to elect leader for partition %s under strategy %s",
                          prefix, self.broker_id, context.epoch, name, previous_state.value, name, strategy)

    def _decisions(self, keys: Iterable[TopicPartition], reason: str) -> dict[TopicPartition, zk.LeaderAndIsr]:
        keys = list(keys)
        unclean = self._unclean_topics(keys) if reason == OFFLINE else set()
        return {key: state for key in keys if (state := self._decide(key, reason, key[0] in unclean)) is not None}

    def _unclean_topics(self, keys: list[TopicPartition]) -> set[str]:
        """The topics, among those of ``keys`` that the offline election cannot lead from their
        ISR (an existing state, a leader gone, no live replica in sync), whose
        ``unclean.leader.election.enable`` is true: the topic's override when it has one, else the
        broker's default. As Kafka 2.8's collectUncleanLeaderElectionState, the topics' configs are
        read from the tree then, and only for such partitions; a value that does not parse leaves
        the partition to a clean election (an ERROR line names it)."""
        context = self.context
        eligible = context.eligible_brokers
        names = sorted({
            key[0] for key in keys
            if (loaded := context.leadership.get(key)) is not None
            and loaded[0].leader not in eligible
            and not (loaded[0].leader in context.shutting_down and loaded[0].leader in context.live_brokers)
            and not any(r in eligible for r in loaded[0].isr)
            and any(r in eligible for r in context.replicas(key))
        })
        if not names:
            return set()
        default = self._unclean_default()
        paths = {zk.config_entity_path(zk.CONFIG_TYPE_TOPICS, name): name for name in names}
        enabled: set[str] = set()
        for path, answer in self.zk_client.store.get_many(list(paths)).items():
            name = paths[path]
            value = None
            if answer is not None:
                try:
                    value = decoded(path, zk.decode_entity_config, answer[0]).get(UNCLEAN_LEADER_ELECTION_ENABLE)
                except zk.ZNodeFormatError as e:
                    self._report(e)
                    continue
            if value is None:
                if default:
                    enabled.add(name)
                continue
            try:
                if LogConfig.from_properties({UNCLEAN_LEADER_ELECTION_ENABLE: value}).unclean_leader_election_enable:
                    enabled.add(name)
            except KafkaError as e:
                log.error("[Controller id=%d] Topic %s has an invalid %s=%s (%s): its offline partitions are not elected uncleanly",
                          self.broker_id, name, UNCLEAN_LEADER_ELECTION_ENABLE, value, e)
        return enabled

    def _decide(self, key: TopicPartition, reason: str, unclean: bool = False) -> zk.LeaderAndIsr | None:
        """The partition's next leader and ISR, or None to leave it as it is:

        * no state yet (NewPartition -> OnlinePartition): the first live replica leads, the live
          replicas in the ISR (Kafka's initializeLeaderAndIsrForPartitions: empty logs agree);
        * its leader is shutting down: the first live, in-sync replica that is not
          (ControlledShutdownPartitionLeaderElection), the brokers shutting down leaving the ISR;
          with none, the partition stays led by it (Kafka's failed election: the broker lists it
          as remaining and tries again, giving its followers time to join the ISR);
        * its leader is not live: the first live replica of its ISR, in assignment order
          (OfflinePartitionLeaderElection); with none and ``unclean`` (the topic's
          ``unclean.leader.election.enable``, for ``reason`` OFFLINE only), the first live
          replica of the assignment, alone in the ISR;
        * with neither, it goes offline: leader -1, the ISR keeping its last member, as Kafka's
          controller takes a failed replica out of the ISR;
        * its leader is live: followers that died or are shutting down leave the ISR
          (OfflineReplica), with a new leader epoch;
        * ``reason`` PREFERRED: the first replica of the assignment leads if it is live and in
          sync (PreferredReplicaPartitionLeaderElection).
        """
        context = self.context
        replicas = context.replicas(key)
        eligible = context.eligible_brokers
        loaded = context.leadership.get(key)
        if loaded is None:
            live = tuple(replica for replica in replicas if replica in eligible)
            return zk.LeaderAndIsr(live[0], 0, live, context.epoch) if live else None
        current, _ = loaded
        if reason == PREFERRED:
            election = leader_selectors.preferred_replica_partition_leader(replicas, current.isr, eligible)
            if election is None or election.leader == current.leader:
                return None
        elif current.leader in context.shutting_down and current.leader in context.live_brokers:
            election = leader_selectors.controlled_shutdown_partition_leader(replicas, current.isr, context.live_brokers.keys(), context.shutting_down)
            if election is None:
                name = f"{key[0]}-{key[1]}"
                log.error("[Controller id=%d epoch=%d] Controller %d epoch %d failed to change state for partition %s from "
                          "OnlinePartition to OnlinePartition: Failed to elect leader for partition %s under strategy %s",
                          self.broker_id, context.epoch, self.broker_id, context.epoch, name, name, _STRATEGY_NAMES[CONTROLLED_SHUTDOWN])
                return None
        elif current.leader in eligible:
            isr = tuple(r for r in current.isr if r in eligible or r == current.leader)
            if isr == current.isr:
                return None
            return replace(current, leader_epoch=current.leader_epoch + 1, isr=isr, controller_epoch=context.epoch)
        else:
            election = leader_selectors.offline_partition_leader(replicas, current.isr, eligible, unclean=unclean)
        if election is not None:
            leader, isr = election
        elif current.leader == zk.NO_LEADER:
            if reason == OFFLINE:
                log.error("[Controller id=%d epoch=%d] Controller %d epoch %d failed to change state for partition %s-%d from "
                          "OfflinePartition to OnlinePartition: Failed to elect leader for partition %s-%d under strategy %s",
                          self.broker_id, context.epoch, self.broker_id, context.epoch, key[0], key[1], key[0], key[1], _STRATEGY_NAMES[OFFLINE])
            return None  # offline already, and still no live replica in sync
        else:
            leader = zk.NO_LEADER
            isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != current.leader)
        return replace(current, leader=leader, leader_epoch=current.leader_epoch + 1, isr=isr, controller_epoch=context.epoch)

    def _write(
        self, decisions: dict[TopicPartition, zk.LeaderAndIsr], topics: Iterable[str] = ()
    ) -> tuple[list[TopicPartition], set[str]]:
        """Write the partitions' states, one transaction per topic (creating the znodes of a
        partition's first state, conditional on the version of a state it replaces), and a topic
        id for each of ``topics`` that has none; record what was written in the context. Returns
        the partitions written and the topics whose write met a change made meanwhile."""
        context = self.context
        by_topic: dict[str, dict[int, zk.LeaderAndIsr]] = {name: {} for name in topics}
        for (name, index), state in decisions.items():
            by_topic.setdefault(name, {})[index] = state
        written: list[TopicPartition] = []
        failed: set[str] = set()
        for name, states in sorted(by_topic.items()):
            assignment = context.assignments[name]
            ops: list[Op] = []
            if assignment.topic_id is None:
                assignment = replace(assignment, topic_id=random_uuid())
                ops.append(SetDataOp(zk.topic_path(name), zk.encode_topic_assignment(assignment), context.assignment_versions[name]))
            nodes = context.partition_nodes.get(name)
            if states and nodes is None:
                ops.append(CreateOp(zk.topic_partitions_path(name)))
            for index, state in sorted(states.items()):
                loaded = context.leadership.get((name, index))
                if loaded is None:
                    if nodes is None or index not in nodes:
                        ops.append(CreateOp(zk.topic_partition_path(name, index)))
                    ops.append(CreateOp(zk.partition_state_path(name, index), zk.encode_leader_and_isr(state)))
                else:
                    ops.append(SetDataOp(zk.partition_state_path(name, index), zk.encode_leader_and_isr(state), loaded[1]))
            if not ops:
                continue
            try:
                self.multi(ops)
            except (NodeExistsError, BadVersionError, NoNodeError):
                failed.add(name)
                continue
            if assignment is not context.assignments[name]:
                context.assignments[name] = assignment
                context.assignment_versions[name] += 1
            context.partition_nodes[name] = (nodes or set()) | set(states)
            for index, state in states.items():
                loaded = context.leadership.get((name, index))
                context.leadership[(name, index)] = (state, 0 if loaded is None else loaded[1] + 1)
                self.partition_states.observe(name, index, state.leader)
                written.append((name, index))
        return written, failed

    def _publish(self, keys: Iterable[TopicPartition], *, is_new: bool = False, leader_and_isr: bool = True) -> None:
        """LeaderAndIsr of each partition to its live replicas (unless ``leader_and_isr`` is
        False: an ISR the leader itself asked for), UpdateMetadata of them to every live broker."""
        if self.channel is None:
            return
        states = self.context.elected_partition_states(keys)
        for partition in states if leader_and_isr else ():
            self._batch.add_leader_and_isr(self._live_replicas(partition.state.replicas), partition, is_new=is_new)
        if states:
            self._batch.add_update_metadata(self.context.live_brokers, states)

    # -- unclean leader election enabled --------------------------------------------------------

    def enable_topic_unclean_leader_election(self, topic: str) -> None:
        """A topic config change set ``unclean.leader.election.enable`` true (Kafka 2.8's
        TopicConfigHandler and TopicUncleanLeaderElectionEnable event): the active controller
        elects the topic's offline partitions again, now allowed to choose an out-of-sync replica.
        Any thread; the event runs on the metadata thread."""
        if self.active:
            self.thread.submit(lambda: self.run_event(lambda: self._unclean_enabled(topic), "TopicUncleanLeaderElectionEnable"))

    def enable_default_unclean_leader_election(self) -> None:
        """The brokers' default ``unclean.leader.election.enable`` became true (Kafka 2.8's
        DynamicLogConfig.reconfigure and UncleanLeaderElectionEnable event): every offline
        partition is elected again."""
        if self.active:
            self.thread.submit(lambda: self.run_event(lambda: self._unclean_enabled(None), "UncleanLeaderElectionEnable"))

    def _unclean_enabled(self, topic: str | None) -> None:
        """Kafka's processTopicUncleanLeaderElectionEnable / processUncleanLeaderElectionEnable:
        the partitions in NewPartition or OfflinePartition go through the offline election (which
        reads the topics' configs again)."""
        if not self.active:
            return
        if topic is None:
            log.info("[Controller id=%d] Unclean leader election has been enabled by default", self.broker_id)
        else:
            log.info("[Controller id=%d] Unclean leader election has been enabled for topic %s", self.broker_id, topic)
        waiting = (PartitionState.NEW_PARTITION, PartitionState.OFFLINE_PARTITION)
        self._elect([key for key in self.context.partitions(topic) if self.partition_states.state(*key) in waiting])
        self._send_batch()

    # -- preferred replica election ---------------------------------------------------------------

    def check_leader_imbalance(self, percentage: int) -> list[tuple[str, int]]:
        """Kafka's checkAndTriggerAutoLeaderRebalance, on the metadata thread: for each live
        broker, the share of the partitions it is the preferred (first) replica of that it does
        not lead; past ``percentage`` percent, those partitions elect their preferred replica
        where it is live and in sync. Returns the partitions moved."""
        if not self.active:
            return []
        context = self.context
        preferred: dict[int, list[TopicPartition]] = {}
        for key in context.partitions():
            replicas = context.replicas(key)
            if replicas and key in context.leadership and key[0] not in self.deletion.topics_to_delete:
                preferred.setdefault(replicas[0], []).append(key)
        eligible = context.eligible_brokers
        moved: list[TopicPartition] = []
        for broker_id, keys in sorted(preferred.items()):
            if broker_id not in eligible:
                continue
            imbalanced = [key for key in keys if context.leadership[key][0].leader != broker_id]
            ratio = len(imbalanced) / len(keys)
            log.debug("[Controller id=%d] Leader imbalance ratio for broker %d is %.3f", self.broker_id, broker_id, ratio)
            if ratio * 100 > percentage:
                self.run_event(lambda keys=imbalanced: moved.extend(self._elect(keys, PREFERRED)), "AutoPreferredReplicaLeaderElection")
                if not self.active:
                    return moved  # resigned
        self._send_batch()
        if moved:
            log.info("[Controller id=%d] Preferred replica election moved %d partition(s)", self.broker_id, len(moved))
        return moved

    # -- ISR changes from leaders ---------------------------------------------------------------------

    async def alter_partitions(self, broker_id: int, broker_epoch: int, changes) -> list[dict]:
        """AlterPartition's changes ``(topic id, partition, leader epoch, new ISR, leader recovery
        state, partition epoch)``, checked and written on the metadata thread; one answer each
        (error code and the partition's state)."""
        return await self.thread.call(lambda: self._run(lambda: self._alter_partitions(broker_id, broker_epoch, changes)))

    def _alter_partitions(self, broker_id: int, broker_epoch: int, changes) -> list[dict]:
        if not self.active:
            raise KafkaError(ErrorCode.NOT_CONTROLLER)
        live = self.context.live_brokers.get(broker_id)
        if live is None or (broker_epoch != -1 and broker_epoch != live.epoch):
            raise KafkaError(ErrorCode.STALE_BROKER_EPOCH)
        names = {assignment.topic_id: name for name, assignment in self.context.assignments.items()}
        results = []
        written: list[TopicPartition] = []
        for topic_id, index, leader_epoch, isr, recovery, partition_epoch in changes:
            name = names.get(topic_id)
            result = self._alter_partition(broker_id, name, index, leader_epoch, isr, recovery, partition_epoch)
            if result.pop("written", False):
                written.append((name, index))
            results.append(result)
        # Kafka 2.8's processAlterIsr: the leader learns its new ISR from the answer; the other
        # brokers from UpdateMetadata.
        self._publish(written, leader_and_isr=False)
        self._send_batch()
        return results

    def _alter_partition(self, broker_id, name, index, leader_epoch, isr, recovery, partition_epoch) -> dict:
        def refused(error: ErrorCode) -> dict:
            return {"error_code": error, "leader_id": -1, "leader_epoch": -1, "isr": [], "leader_recovery_state": 0, "partition_epoch": -1}

        def answered(state: zk.LeaderAndIsr, epoch: int, **extra) -> dict:
            return {"error_code": ErrorCode.NONE, "leader_id": state.leader, "leader_epoch": state.leader_epoch,
                    "isr": list(state.isr), "leader_recovery_state": state.leader_recovery_state, "partition_epoch": epoch, **extra}

        context = self.context
        if name is None or name in self.deletion.topics_to_delete:
            return refused(ErrorCode.UNKNOWN_TOPIC_ID)
        key = (name, index)
        loaded = context.leadership.get(key)
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
        replicas = context.replicas(key)
        eligible = context.eligible_brokers
        if not isr or any(r not in replicas or r not in eligible for r in isr):
            return refused(ErrorCode.INELIGIBLE_REPLICA)
        updated = replace(current, isr=tuple(isr), leader_recovery_state=recovery, controller_epoch=context.epoch)
        written, failed = self._write({key: updated})
        if failed:
            for topic, read in read_topics(self.zk_client, [name], self._report).items():
                context.put_topic(topic, read)
            return refused(ErrorCode.INVALID_UPDATE_VERSION)
        log.info("[Controller id=%d] ISR of %s-%d changed to %s", self.broker_id, name, index, ",".join(map(str, isr)))
        return answered(updated, version + 1, written=True)

    # -- controlled shutdown ----------------------------------------------------------------------

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        """A broker asks to stop (Kafka's KafkaController.controlledShutdown). As Kafka 2.8's
        doControlledShutdown, it acts only on the broker's partitions with more than one replica
        (that have a leader and are not being deleted): those it leads move to another live
        in-sync replica, and it leaves the ISRs of those it follows. A partition with one replica
        stays led by the broker until the broker really goes (then onBrokerFailure takes it
        offline). Returns the partitions of more than one replica it still leads (Kafka's
        partitionLeadersOnBroker): among them those with no other live replica in sync, whose
        election failed. Runs on the metadata thread."""
        return await self.thread.call(lambda: self._run(lambda: self._controlled_shutdown(broker_id, broker_epoch)))

    def _controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        if not self.active:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, f"Broker {self.broker_id} is not the controller")
        context = self.context
        # The newest registrations: a broker may ask before its registration's watch arrived here.
        self._refresh_brokers()
        live = context.live_brokers.get(broker_id)
        if live is None:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"Broker id {broker_id} does not exist.")
        if broker_epoch != -1 and broker_epoch < live.epoch:
            raise KafkaError(
                ErrorCode.STALE_BROKER_EPOCH,
                f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker {broker_id}. "
                f"Current broker epoch is {live.epoch}.",
            )
        log.info("[Controller id=%d] Shutting down broker %d", self.broker_id, broker_id)
        context.shutting_down.add(broker_id)
        to_act_on = [key for key in context.partitions_on_broker(broker_id) if self._moves_on_controlled_shutdown(key)]
        self._elect(to_act_on, CONTROLLED_SHUTDOWN)
        followed = [(*key, broker_id) for key in to_act_on if context.leadership[key][0].leader != broker_id]
        self.replica_states.transition(followed, ReplicaState.OFFLINE_REPLICA)
        self._send_batch()
        remaining = [key for key in context.partitions_led_by(broker_id) if self._moves_on_controlled_shutdown(key)]
        log.info("[Controller id=%d] Broker %d leaves %d partition(s) led after its controlled shutdown", self.broker_id, broker_id, len(remaining))
        return remaining

    def _moves_on_controlled_shutdown(self, key: TopicPartition) -> bool:
        """More than one replica, a leader, and not being deleted (Kafka's partitionsToActOn)."""
        return len(self.context.replicas(key)) > 1 and key in self.context.leadership and key[0] not in self.deletion.topics_to_delete

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
        if (name, partition) in self.context.leadership:
            self.context.leadership[(name, partition)] = (updated, version + 1)
        return updated, version + 1


def _event_name(events: Iterable[ChangeEvent]) -> str:
    """Kafka's names for the controller events a set of tree changes makes."""
    names = []
    kinds = (
        (zk.BROKER_IDS, "BrokerChange"), (zk.TOPICS, "TopicChange"), (zk.DELETE_TOPICS, "TopicDeletion"),
        (zk.ISR_CHANGE_NOTIFICATION, "IsrChangeNotification"),
    )
    for prefix, name in kinds:
        if any(event.path.startswith(prefix + "/") for event in events):
            names.append(name)
    return "+".join(names) or "TreeChange"
