"""The controller's leader selectors, partition states, requests to brokers, preferred replica
election and topic deletion, over the embedded tree with a channel that records what it is asked
to send.

The selector cases are Kafka's (PartitionLeaderElectionAlgorithms: offline, reassigned,
preferred and controlled-shutdown elections, and the ISR each leaves).
"""

from __future__ import annotations

import dataclasses
import random
import types

import pytest

from kcli.broker.controller import leader_selectors as selectors
from kcli.broker.controller.kafka_controller import KafkaController
from kcli.broker.controller.partition_state import PartitionState, PartitionStateMachine
from kcli.broker.controller.replica_state import ReplicaState, ReplicaStateMachine
from kcli.metadata import zk_paths as zk
from kcli.metadata.admin_zk_client import AdminZkClient
from kcli.metadata.embedded import EmbeddedStore
from kcli.metadata.zk_client import KafkaZkClient

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6

# -- selectors --------------------------------------------------------------------------------------


def test_offline_election_takes_the_first_live_in_sync_replica_of_the_assignment():
    assert selectors.offline_partition_leader([2, 4], [2, 4], {4}) == (4, (4,))
    assert selectors.offline_partition_leader([2, 4, 5], [5, 4], {4, 5}) == (4, (5, 4))


def test_offline_election_without_a_live_in_sync_replica_is_unclean_or_none():
    assert selectors.offline_partition_leader([2, 4], [2], {4}) is None
    assert selectors.offline_partition_leader([2, 4], [2], {4}, unclean=True) == (4, (4,))
    assert selectors.offline_partition_leader([2, 4], [2], set(), unclean=True) is None


def test_reassigned_election_takes_the_first_live_in_sync_target_replica():
    assert selectors.reassigned_partition_leader([2, 4], [2, 4], {2, 4}) == (2, (2, 4))
    assert selectors.reassigned_partition_leader([2, 4], [4, 2], {4}) == (4, (4, 2))
    assert selectors.reassigned_partition_leader([2, 4], [2, 4], set()) is None


def test_preferred_election_takes_only_the_first_replica():
    assert selectors.preferred_replica_partition_leader([2, 4], [2, 4], {2, 4}) == (2, (2, 4))
    assert selectors.preferred_replica_partition_leader([2, 4], [4], {2, 4}) is None
    assert selectors.preferred_replica_partition_leader([2, 4], [2, 4], {4}) is None


def test_controlled_shutdown_election_skips_brokers_shutting_down_and_drops_them_from_the_isr():
    assert selectors.controlled_shutdown_partition_leader([2, 4], [2, 4], {2, 4}, {2}) == (4, (4,))
    assert selectors.controlled_shutdown_partition_leader([2, 4], [2], {2, 4}, {2}) is None


# -- partition states -------------------------------------------------------------------------------


def test_partition_states_follow_kafkas_transitions():
    machine = PartitionStateMachine(0)
    assert machine.state("t", 0) is PartitionState.NON_EXISTENT_PARTITION
    assert not machine.transition("t", 0, PartitionState.ONLINE_PARTITION)  # not created yet
    assert machine.transition("t", 0, PartitionState.NEW_PARTITION)
    assert machine.transition("t", 0, PartitionState.ONLINE_PARTITION)
    assert not machine.transition("t", 0, PartitionState.NEW_PARTITION)
    assert not machine.transition("t", 0, PartitionState.NON_EXISTENT_PARTITION)  # only from offline
    assert machine.transition("t", 0, PartitionState.OFFLINE_PARTITION)
    assert machine.transition("t", 0, PartitionState.NON_EXISTENT_PARTITION)
    machine.observe("t", 1, 3)
    assert machine.state("t", 1) is PartitionState.ONLINE_PARTITION
    machine.observe("t", 1, -1)
    assert machine.state("t", 1) is PartitionState.OFFLINE_PARTITION


# -- the controller and its requests ----------------------------------------------------------------


class RecordingChannel:
    def __init__(self) -> None:
        self.brokers: set[int] = set()
        self.sent: list[tuple[int, int, dict, object]] = []

    def add_broker(self, broker_id, host, port):
        self.brokers.add(broker_id)

    def remove_broker(self, broker_id):
        self.brokers.discard(broker_id)

    def shutdown(self):
        self.brokers.clear()

    def send(self, broker_id, api_key, fields, callback=None):
        self.sent.append((broker_id, api_key, fields, callback))

    def take(self, api_key=None):
        taken = [s for s in self.sent if api_key is None or s[1] == api_key]
        self.sent = [s for s in self.sent if s not in taken]
        return taken


def partitions_of(fields) -> dict[tuple[str, int], dict]:
    return {(t["topic_name"], p["partition_index"]): p for t in fields["topic_states"] for p in t["partition_states"]}


@pytest.fixture
def tree(tmp_path):
    with EmbeddedStore(tmp_path) as store:
        client = KafkaZkClient(store)
        client.create_top_level_paths()
        yield client


def register(client, broker_id):
    client.register_broker(broker_id, [zk.Endpoint("PLAINTEXT", "127.0.0.1", 9092 + broker_id)])


def controller_of(client, brokers=(0, 1, 2), **options):
    for broker_id in brokers:
        register(client, broker_id)
    channel = RecordingChannel()
    controller = KafkaController(client, 0, channel=channel, **options)
    controller.elect()
    return controller, channel


def create(client, name, assignment):
    AdminZkClient(client, rng=random.Random(1)).create_topic(name, assignment=assignment)


def test_a_new_controller_sends_every_broker_the_cluster(tree):
    controller, channel = controller_of(tree)
    assert channel.brokers == {0, 1, 2}
    sent = channel.take(UPDATE_METADATA)
    assert sorted(b for b, *_ in sent) == [0, 1, 2]
    fields = sent[0][2]
    assert fields["controller_id"] == 0 and fields["controller_epoch"] == controller.epoch
    assert [b["id"] for b in fields["live_brokers"]] == [0, 1, 2]
    assert fields["live_brokers"][1]["endpoints"][0]["port"] == 9093
    controller.resign()


def test_a_new_topic_sends_leader_and_isr_to_its_replicas_and_update_metadata_to_all(tree):
    controller, channel = controller_of(tree)
    channel.take()
    create(tree, "orders", {0: [1], 1: [2]})
    to_leaders = {b: partitions_of(f) for b, api, f, _ in channel.take(LEADER_AND_ISR)}
    assert set(to_leaders) == {1, 2}
    assert to_leaders[1][("orders", 0)]["leader"] == 1 and to_leaders[1][("orders", 0)]["isr"] == [1]
    assert to_leaders[2][("orders", 1)]["replicas"] == [2]
    updates = channel.take(UPDATE_METADATA)
    assert sorted(b for b, *_ in updates) == [0, 1, 2]
    assert set(partitions_of(updates[0][2])) == {("orders", 0), ("orders", 1)}
    assert controller.partition_states.state("orders", 0) is PartitionState.ONLINE_PARTITION
    controller.resign()


def test_controlled_shutdown_leaves_rf1_partitions_led_by_the_broker_until_it_goes(tree):
    # Kafka 2.8's doControlledShutdown acts only on partitions with more than one replica.
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1], 1: [2]})
    channel.take()
    before, version = tree.partition_state("orders", 0)
    assert controller._controlled_shutdown(1, tree.store.exists(zk.broker_id_path(1)).czxid) == []
    assert tree.partition_state("orders", 0) == (before, version)
    assert controller.partition_states.state("orders", 0) is PartitionState.ONLINE_PARTITION
    assert controller.replica_states.state(("orders", 0, 1)) is ReplicaState.ONLINE_REPLICA
    assert channel.take(LEADER_AND_ISR) == []
    # When the broker really goes, the broker-failure path takes the partition offline.
    tree.store.delete(zk.broker_id_path(1))
    state, _ = tree.partition_state("orders", 0)
    assert (state.leader, state.isr) == (-1, (1,))
    assert controller.partition_states.state("orders", 0) is PartitionState.OFFLINE_PARTITION
    controller.resign()


def test_controlled_shutdown_answers_remaining_only_partitions_of_more_than_one_replica(tree):
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1, 0]})
    create(tree, "single", {0: [1]})
    channel.take()
    controller.update_partition_state("orders", 0, leader=1, isr=(1,))
    # The broker keeps leading its one-replica partition, which is not listed as remaining (Kafka's
    # partitionLeadersOnBroker); the partition of two replicas with no other replica in sync
    # stays led by it too (Kafka's failed election) and is listed, so the broker tries again.
    assert controller._controlled_shutdown(1, tree.store.exists(zk.broker_id_path(1)).czxid) == [("orders", 0)]
    assert tree.partition_state("single", 0)[0].leader == 1
    assert tree.partition_state("orders", 0)[0].leader == 1
    # Its follower caught up meanwhile: the next try moves the leadership.
    controller.update_partition_state("orders", 0, isr=(1, 0))
    assert controller._controlled_shutdown(1, tree.store.exists(zk.broker_id_path(1)).czxid) == []
    assert tree.partition_state("orders", 0)[0].leader == 0
    controller.resign()


def test_controlled_shutdown_moves_leadership_to_an_in_sync_replica_and_drops_the_broker_from_isrs(tree):
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1, 0], 1: [0, 1]})
    for index, leader in ((0, 1), (1, 0)):
        controller.update_partition_state("orders", index, leader=leader, isr=(leader, 1 - leader))
    before = {index: tree.partition_state("orders", index)[0] for index in (0, 1)}
    channel.take()
    assert controller._controlled_shutdown(1, tree.store.exists(zk.broker_id_path(1)).czxid) == []
    led, followed = tree.partition_state("orders", 0)[0], tree.partition_state("orders", 1)[0]
    # It led partition 0: broker 0, in sync, takes over; it followed partition 1: it leaves the ISR.
    assert (led.leader, led.isr, led.leader_epoch) == (0, (0,), before[0].leader_epoch + 1)
    assert (followed.leader, followed.isr, followed.leader_epoch) == (0, (0,), before[1].leader_epoch + 1)
    to_brokers = {b: partitions_of(f) for b, api, f, _ in channel.take(LEADER_AND_ISR)}
    assert to_brokers[0][("orders", 0)]["leader"] == 0 and to_brokers[1][("orders", 0)]["leader"] == 0
    controller.resign()


def test_preferred_replica_election_moves_leadership_back_past_the_imbalance_threshold(tree):
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1, 0], 1: [1, 0]})
    for index in (0, 1):
        controller.update_partition_state("orders", index, leader=0, isr=(0, 1))
    channel.take()
    moved = controller.check_leader_imbalance(10)
    assert sorted(moved) == [("orders", 0), ("orders", 1)]
    state, _ = tree.partition_state("orders", 0)
    assert (state.leader, state.isr) == (1, (0, 1))
    assert {b for b, *_ in channel.take(LEADER_AND_ISR)} == {0, 1}
    assert controller.check_leader_imbalance(10) == []  # balanced now
    controller.resign()


def test_preferred_replica_election_waits_for_the_threshold(tree):
    controller, _ = controller_of(tree)
    create(tree, "orders", {p: [1, 0] for p in range(10)})
    controller.update_partition_state("orders", 0, leader=0, isr=(0, 1))
    # 1 of the 10 partitions broker 1 prefers is led elsewhere: 10 %, not past 10 %.
    assert controller.check_leader_imbalance(10) == []
    assert controller.check_leader_imbalance(9) == [("orders", 0)]
    controller.resign()


def answer(fields, error=0):
    return types.SimpleNamespace(
        error_code=error,
        partition_errors=[
            types.SimpleNamespace(topic_name=t["topic_name"], partition_index=p["partition_index"], error_code=error)
            for t in fields["topic_states"]
            for p in t["partition_states"]
        ],
    )


def test_deletion_waits_for_every_replica_including_a_broker_that_was_down(tree):
    controller, channel = controller_of(tree)
    create(tree, "doomed", {0: [0], 1: [1], 2: [2]})
    tree.store.delete(zk.broker_id_path(2))  # broker 2 dies
    channel.take()
    tree.store.create(zk.delete_topic_path("doomed"), zk.DELETE_TOPIC_MARKER, makepath=True)
    announced = channel.take(UPDATE_METADATA)
    assert {p["leader"] for p in partitions_of(announced[0][2]).values()} == {-2}
    stops = channel.take(STOP_REPLICA)
    assert sorted(b for b, *_ in stops) == [0, 1]
    assert all(p["delete_partition"] and p["leader_epoch"] == -2 for _, _, f, _ in stops for p in partitions_of(f).values())
    states = controller.replica_states
    assert states.state(("doomed", 2, 2)) is ReplicaState.REPLICA_DELETION_INELIGIBLE
    for broker_id, _, fields, callback in stops:
        callback(answer(fields))
    assert states.state(("doomed", 0, 0)) is ReplicaState.REPLICA_DELETION_SUCCESSFUL
    assert tree.topic_exists("doomed")  # broker 2 still holds its replica
    register(tree, 2)
    (broker_id, _, fields, callback), = channel.take(STOP_REPLICA)
    assert broker_id == 2 and set(partitions_of(fields)) == {("doomed", 2)}
    callback(answer(fields))
    assert not tree.topic_exists("doomed")
    assert tree.store.exists(zk.delete_topic_path("doomed")) is None
    assert controller.replica_states.topic_replicas("doomed") == {}  # NonExistentReplica
    assert controller.partition_states.state("doomed", 0) is PartitionState.NON_EXISTENT_PARTITION
    controller.resign()


def test_a_failed_replica_deletion_is_ineligible_and_tried_again_when_its_broker_returns(tree):
    controller, channel = controller_of(tree, brokers=(0,))
    create(tree, "doomed", {0: [0]})
    channel.take()
    tree.store.create(zk.delete_topic_path("doomed"), zk.DELETE_TOPIC_MARKER, makepath=True)
    (_, _, fields, callback), = channel.take(STOP_REPLICA)
    callback(answer(fields, error=56))  # KAFKA_STORAGE_ERROR
    assert controller.replica_states.state(("doomed", 0, 0)) is ReplicaState.REPLICA_DELETION_INELIGIBLE
    assert tree.topic_exists("doomed")
    assert channel.take(STOP_REPLICA) == []  # not tried again while its broker stays up
    controller.deletion.on_broker_startup([0])
    controller.send_batch()
    (_, _, fields, callback), = channel.take(STOP_REPLICA)
    callback(answer(fields))
    assert not tree.topic_exists("doomed")
    controller.resign()


def test_a_deletion_mark_is_removed_and_nothing_deleted_when_topic_deletion_is_disabled(tree, caplog):
    controller, channel = controller_of(tree, delete_topic_enable=False)
    create(tree, "kept", {0: [0], 1: [1]})
    channel.take()
    with caplog.at_level("INFO", logger="kcli.broker.controller"):
        tree.store.create(zk.delete_topic_path("kept"), zk.DELETE_TOPIC_MARKER, makepath=True)
    assert tree.store.exists(zk.delete_topic_path("kept")) is None
    assert tree.topic_exists("kept") and tree.partition_state("kept", 0)[0].leader == 0
    assert channel.take(STOP_REPLICA) == [] and channel.take(UPDATE_METADATA) == []
    assert "kept" not in controller.deletion.topics_to_delete
    assert any("Removing kept since delete topic is disabled" in r.getMessage() for r in caplog.records)
    controller.resign()


def test_a_deletion_mark_found_by_a_new_controller_is_removed_when_topic_deletion_is_disabled(tree):
    register(tree, 0)
    create(tree, "kept", {0: [0]})
    tree.store.create(zk.delete_topic_path("kept"), zk.DELETE_TOPIC_MARKER, makepath=True)
    controller, channel = controller_of(tree, brokers=(), delete_topic_enable=False)
    assert tree.store.exists(zk.delete_topic_path("kept")) is None
    assert tree.topic_exists("kept")
    assert channel.take(STOP_REPLICA) == []
    controller.resign()


def test_a_topic_znode_removed_by_hand_is_forgotten_and_no_replica_is_deleted(tree, caplog):
    controller, channel = controller_of(tree)
    create(tree, "gone", {0: [0], 1: [1]})
    channel.take()
    with caplog.at_level("WARNING", logger="kcli.broker.controller"):
        tree.store.multi(tree.topic_deletion_ops("gone"))
    assert "gone" not in controller.context.assignments
    assert channel.take(STOP_REPLICA) == []
    assert any("Topic gone was removed" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)
    controller.resign()


# -- AlterPartition -------------------------------------------------------------------------------


def alter(controller, tree, broker_id, name, index, isr, *, leader_epoch=None, partition_epoch=None, broker_epoch=None):
    state, version = tree.partition_state(name, index)
    topic_id = tree.load_topic(name).topic_id
    epoch = tree.store.exists(zk.broker_id_path(broker_id)).czxid if broker_epoch is None else broker_epoch
    change = (topic_id, index, state.leader_epoch if leader_epoch is None else leader_epoch, tuple(isr), 0,
              version if partition_epoch is None else partition_epoch)
    return controller._alter_partitions(broker_id, epoch, [change])[0]


def test_alter_partition_writes_the_leaders_new_isr_and_tells_every_broker_by_update_metadata(tree):
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1, 0]})
    controller.update_partition_state("orders", 0, isr=(1,))  # the follower fell behind
    channel.take()
    _, version = tree.partition_state("orders", 0)
    result = alter(controller, tree, 1, "orders", 0, [1, 0])
    assert result["error_code"] == 0 and result["isr"] == [1, 0] and result["partition_epoch"] == version + 1
    state, written_version = tree.partition_state("orders", 0)
    assert (state.leader, state.isr, written_version) == (1, (1, 0), version + 1)
    updates = channel.take(UPDATE_METADATA)
    assert sorted(b for b, *_ in updates) == [0, 1, 2]
    assert partitions_of(updates[0][2])[("orders", 0)]["isr"] == [1, 0]
    # Kafka 2.8's processAlterIsr: UpdateMetadata only; the leader has the answer.
    assert channel.take(LEADER_AND_ISR) == []
    # Asked again with the old partition epoch: already so, answered as it is.
    again = alter(controller, tree, 1, "orders", 0, [1, 0], partition_epoch=version)
    assert again["error_code"] == 0 and again["partition_epoch"] == version + 1
    controller.resign()


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("older leader epoch", 74),  # FENCED_LEADER_EPOCH
        ("newer leader epoch", 41),  # NOT_CONTROLLER
        ("older partition epoch", 95),  # INVALID_UPDATE_VERSION
        ("not the leader", 42),  # INVALID_REQUEST
        ("replica not assigned", 107),  # INELIGIBLE_REPLICA
        ("replica down", 107),
    ],
)
def test_alter_partition_refusals(tree, case, error):
    controller, _ = controller_of(tree)
    create(tree, "orders", {0: [1, 0]})
    controller.update_partition_state("orders", 0, bump_leader_epoch=True, isr=(1,))
    state, version = tree.partition_state("orders", 0)
    if case == "older leader epoch":
        result = alter(controller, tree, 1, "orders", 0, [1, 0], leader_epoch=state.leader_epoch - 1)
    elif case == "newer leader epoch":
        result = alter(controller, tree, 1, "orders", 0, [1, 0], leader_epoch=state.leader_epoch + 1)
    elif case == "older partition epoch":
        result = alter(controller, tree, 1, "orders", 0, [1, 0], partition_epoch=version - 1)
    elif case == "not the leader":
        result = alter(controller, tree, 0, "orders", 0, [1, 0])
    elif case == "replica not assigned":
        result = alter(controller, tree, 1, "orders", 0, [1, 2])
    else:
        tree.store.delete(zk.broker_id_path(0))
        result = alter(controller, tree, 1, "orders", 0, [1, 0])
    assert result["error_code"] == error
    assert tree.partition_state("orders", 0) == (state, version)
    controller.resign()


def test_alter_partition_from_an_older_registration_is_a_stale_broker_epoch(tree):
    controller, _ = controller_of(tree)
    create(tree, "orders", {0: [1, 0]})
    stale = tree.store.exists(zk.broker_id_path(1)).czxid - 1
    with pytest.raises(Exception) as caught:
        alter(controller, tree, 1, "orders", 0, [1, 0], broker_epoch=stale)
    assert caught.value.error_code == 77  # STALE_BROKER_EPOCH
    controller.resign()


# -- replica states ---------------------------------------------------------------------------------


def test_replica_states_follow_kafkas_transitions():
    machine = ReplicaStateMachine(0)
    replica = ("t", 0, 1)
    assert machine.state(replica) is ReplicaState.NON_EXISTENT_REPLICA
    assert machine.transition([replica], ReplicaState.ONLINE_REPLICA) == []  # not created yet
    assert machine.transition([replica], ReplicaState.NEW_REPLICA) == [replica]
    assert machine.transition([replica], ReplicaState.REPLICA_DELETION_STARTED) == []  # only from offline
    assert machine.transition([replica], ReplicaState.ONLINE_REPLICA) == [replica]
    assert machine.transition([replica], ReplicaState.NEW_REPLICA) == []
    assert machine.transition([replica], ReplicaState.OFFLINE_REPLICA) == [replica]
    assert machine.transition([replica], ReplicaState.REPLICA_DELETION_STARTED) == [replica]
    assert machine.transition([replica], ReplicaState.NON_EXISTENT_REPLICA) == []  # only once deleted
    assert machine.transition([replica], ReplicaState.REPLICA_DELETION_INELIGIBLE) == [replica]
    assert machine.transition([replica], ReplicaState.OFFLINE_REPLICA) == [replica]  # its broker is back
    assert machine.transition([replica], ReplicaState.REPLICA_DELETION_STARTED) == [replica]
    assert machine.transition([replica], ReplicaState.REPLICA_DELETION_SUCCESSFUL) == [replica]
    assert machine.transition([replica], ReplicaState.NON_EXISTENT_REPLICA) == [replica]
    assert machine.states == {}


def test_replicas_go_online_on_creation_offline_when_their_broker_dies_and_online_when_it_returns(tree):
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1, 2], 1: [2, 0]})
    states = controller.replica_states
    assert {r: s for r, s in states.topic_replicas("orders").items()} == {
        ("orders", 0, 1): ReplicaState.ONLINE_REPLICA, ("orders", 0, 2): ReplicaState.ONLINE_REPLICA,
        ("orders", 1, 2): ReplicaState.ONLINE_REPLICA, ("orders", 1, 0): ReplicaState.ONLINE_REPLICA,
    }
    controller.update_partition_state("orders", 1, isr=(2,))
    channel.take()
    tree.store.delete(zk.broker_id_path(2))  # broker 2 dies: it led partition 1, alone in its ISR
    assert states.state(("orders", 0, 2)) is ReplicaState.OFFLINE_REPLICA
    assert states.state(("orders", 1, 2)) is ReplicaState.OFFLINE_REPLICA
    assert states.state(("orders", 0, 1)) is ReplicaState.ONLINE_REPLICA
    assert controller.partition_states.state("orders", 1) is PartitionState.OFFLINE_PARTITION
    updates = channel.take(UPDATE_METADATA)
    assert {partitions_of(f)[("orders", 1)]["leader"] for _, _, f, _ in updates} == {-1}
    assert partitions_of(updates[0][2])[("orders", 0)]["offline_replicas"] == [2]
    register(tree, 2)  # and comes back: its partition leads again, its replicas are told
    assert states.state(("orders", 0, 2)) is ReplicaState.ONLINE_REPLICA
    assert tree.partition_state("orders", 1)[0].leader == 2
    assert controller.partition_states.state("orders", 1) is PartitionState.ONLINE_PARTITION
    to_2 = [partitions_of(f) for b, _, f, _ in channel.take(LEADER_AND_ISR) if b == 2]
    assert {("orders", 0), ("orders", 1)} <= set().union(*to_2)
    controller.resign()


class CountingStore:
    """The embedded tree, counting the reads made through it."""

    def __init__(self, store):
        self._store = store
        self.reads = 0

    def __getattr__(self, name):
        return getattr(self._store, name)

    def get(self, path):
        self.reads += 1
        return self._store.get(path)

    def get_many(self, paths):
        self.reads += len(paths)
        return self._store.get_many(paths)


def test_a_broker_failure_is_decided_on_the_controllers_copy_of_the_cluster(tree):
    counting = CountingStore(tree.store)
    client = KafkaZkClient(counting)
    for broker_id in (0, 1, 2):
        register(client, broker_id)
    controller = KafkaController(client, 0, channel=RecordingChannel())
    controller.elect()
    create(client, "wide", {p: [p % 3] for p in range(300)})
    counting.reads = 0
    client.store.delete(zk.broker_id_path(1))
    # The registrations are read again; the 300 partition states are not.
    assert 0 < counting.reads < 10
    assert sum(1 for p in range(300) if client.partition_state("wide", p)[0].leader == -1) == 100
    controller.resign()


def test_a_controller_whose_epoch_moved_on_resigns_without_writing(tree):
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1]})
    # Another broker is elected while this one still believes it is the controller (a zombie).
    tree.store.delete(zk.CONTROLLER)
    rival = KafkaController(tree, 2, channel=RecordingChannel())
    assert rival.elect() == controller.epoch + 1
    before = tree.partition_state("orders", 0)
    tree.store.delete(zk.broker_id_path(1))  # the zombie hears of it too, and would take orders-0 offline
    assert not controller.active
    assert tree.partition_state("orders", 0)[0].controller_epoch == rival.epoch  # the rival's write
    assert before[0].controller_epoch == controller.epoch
    rival.resign()


def test_a_new_controller_reads_every_partition_once(tree):
    counting = CountingStore(tree.store)
    client = KafkaZkClient(counting)
    for broker_id in (0, 1):
        register(client, broker_id)
    AdminZkClient(client, rng=random.Random(1)).create_topic("wide", assignment={p: [p % 2] for p in range(200)})
    first = KafkaController(client, 1, channel=RecordingChannel())
    first.elect()  # elects the new partitions' leaders: 200 state znodes
    first.resign()
    client.store.delete("/controller")
    counting.reads = 0
    controller = KafkaController(client, 0, channel=RecordingChannel())
    controller.elect()
    # 200 states, the topic, the registrations and the controller's own znodes; nothing twice.
    assert 200 < counting.reads < 220
    assert len(controller.context.leadership) == 200
    controller.resign()


# -- unclean leader election (Kafka 2.8's offlinePartitionLeaderElection and its config) -------------


def _out_of_sync_leader_dies(tree, controller, name="orders", topic_configs=None):
    """``name``-0 on brokers 1 and 2, led by 1 alone in the ISR (2 dropped out); then broker 1
    dies. Returns the partition's state before the death."""
    if not tree.topic_exists(name):
        create(tree, name, {0: [1, 2]})
    if topic_configs is not None:
        tree.write_entity_config(zk.CONFIG_TYPE_TOPICS, name, topic_configs)
    controller.update_partition_state(name, 0, leader=1, isr=(1,))
    before, _ = tree.partition_state(name, 0)
    tree.store.delete(zk.broker_id_path(1))
    return before


def test_without_unclean_election_a_partition_whose_isr_died_stays_offline_until_it_returns(tree, caplog):
    controller, channel = controller_of(tree)
    before = _out_of_sync_leader_dies(tree, controller)
    state, _ = tree.partition_state("orders", 0)
    # Kafka 2.8: leader -1, the ISR keeping its last member, a new leader epoch.
    assert (state.leader, state.isr, state.leader_epoch) == (-1, (1,), before.leader_epoch + 1)
    assert controller.partition_states.state("orders", 0) is PartitionState.OFFLINE_PARTITION
    assert "failed to change state for partition orders-0 from OfflinePartition to OnlinePartition" in caplog.text
    assert "under strategy OfflinePartitionLeaderElectionStrategy(false)" in caplog.text
    # Broker 2 is live but out of sync: a broker event elects nothing.
    register(tree, 0)
    tree.store.delete(zk.broker_id_path(0))
    assert tree.partition_state("orders", 0)[0].leader == -1
    register(tree, 1)  # the in-sync replica returns and leads again
    state, _ = tree.partition_state("orders", 0)
    assert (state.leader, state.isr) == (1, (1,))
    assert controller.partition_states.state("orders", 0) is PartitionState.ONLINE_PARTITION
    controller.resign()


def test_the_topic_override_elects_the_first_live_out_of_sync_replica_alone_in_the_isr(tree, caplog):
    caplog.set_level("INFO", logger="kcli.broker.controller")
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1, 2]})
    channel.take()
    before = _out_of_sync_leader_dies(tree, controller, topic_configs={"unclean.leader.election.enable": "true"})
    state, version = tree.partition_state("orders", 0)
    assert (state.leader, state.isr, state.leader_epoch) == (2, (2,), before.leader_epoch + 1)
    assert controller.partition_states.state("orders", 0) is PartitionState.ONLINE_PARTITION
    assert (
        f"Changed partition orders-0 from OfflinePartition to OnlinePartition with state "
        f"LeaderAndIsr(leader=2, leaderEpoch={state.leader_epoch}, isr=List(2), zkVersion={version})"
    ) in caplog.text
    to_2 = [partitions_of(f)[("orders", 0)] for b, _, f, _ in channel.take(LEADER_AND_ISR) if b == 2]
    assert [(p["leader"], p["isr"]) for p in to_2] == [(2, [2])]
    controller.resign()


def test_the_broker_default_applies_to_topics_without_an_override_and_an_override_wins(tree):
    controller, _ = controller_of(tree, unclean_leader_election_enable=lambda: True)
    _out_of_sync_leader_dies(tree, controller, "open")
    register(tree, 1)
    _out_of_sync_leader_dies(tree, controller, "kept", topic_configs={"unclean.leader.election.enable": "false"})
    assert tree.partition_state("open", 0)[0].leader == 2
    assert tree.partition_state("kept", 0)[0].leader == -1
    controller.resign()


def test_a_live_in_sync_replica_is_always_preferred_to_an_unclean_choice(tree):
    controller, _ = controller_of(tree, unclean_leader_election_enable=lambda: True)
    create(tree, "orders", {0: [1, 2, 0]})
    controller.update_partition_state("orders", 0, leader=1, isr=(1, 0))
    tree.store.delete(zk.broker_id_path(1))
    state, _ = tree.partition_state("orders", 0)
    assert (state.leader, state.isr) == (0, (0,))  # broker 2 comes first in the assignment, but is out of sync
    controller.resign()


def test_an_invalid_override_leaves_the_partition_offline(tree, caplog):
    controller, _ = controller_of(tree, unclean_leader_election_enable=lambda: True)
    _out_of_sync_leader_dies(tree, controller, topic_configs={"unclean.leader.election.enable": "maybe"})
    assert tree.partition_state("orders", 0)[0].leader == -1
    assert "Topic orders has an invalid unclean.leader.election.enable=maybe" in caplog.text
    controller.resign()


def test_enabling_unclean_election_for_a_topic_elects_its_offline_partitions_only(tree, caplog):
    caplog.set_level("INFO", logger="kcli.broker.controller")
    controller, _ = controller_of(tree)
    _out_of_sync_leader_dies(tree, controller, "orders")
    register(tree, 1)
    _out_of_sync_leader_dies(tree, controller, "other")
    assert tree.partition_state("orders", 0)[0].leader == -1 and tree.partition_state("other", 0)[0].leader == -1
    tree.write_entity_config(zk.CONFIG_TYPE_TOPICS, "orders", {"unclean.leader.election.enable": "true"})
    controller.enable_topic_unclean_leader_election("orders")  # the broker's topic config handler calls this
    assert "Unclean leader election has been enabled for topic orders" in caplog.text
    state, _ = tree.partition_state("orders", 0)
    assert (state.leader, state.isr) == (2, (2,))
    assert tree.partition_state("other", 0)[0].leader == -1
    controller.resign()


def test_enabling_unclean_election_by_default_elects_every_offline_partition(tree, caplog):
    caplog.set_level("INFO", logger="kcli.broker.controller")
    enabled = [False]
    controller, _ = controller_of(tree, unclean_leader_election_enable=lambda: enabled[0])
    _out_of_sync_leader_dies(tree, controller, "orders")
    register(tree, 1)
    _out_of_sync_leader_dies(tree, controller, "other", topic_configs={"unclean.leader.election.enable": "false"})
    enabled[0] = True
    controller.enable_default_unclean_leader_election()
    assert "Unclean leader election has been enabled by default" in caplog.text
    assert tree.partition_state("orders", 0)[0].leader == 2
    assert tree.partition_state("other", 0)[0].leader == -1  # its own override says no
    controller.resign()


def test_a_controlled_shutdown_never_elects_uncleanly(tree):
    controller, _ = controller_of(tree, unclean_leader_election_enable=lambda: True)
    create(tree, "orders", {0: [1, 2]})
    controller.update_partition_state("orders", 0, leader=1, isr=(1,))
    assert controller._controlled_shutdown(1, tree.store.exists(zk.broker_id_path(1)).czxid) == [("orders", 0)]
    assert tree.partition_state("orders", 0)[0].leader == 1  # still led by it: never an unclean election
    controller.resign()


def test_a_broker_tells_its_controller_when_the_default_turns_unclean_election_on(tree):
    """Kafka 2.8's DynamicLogConfig.reconfigure: only a change from false to true of the brokers'
    effective default has the controller elect again; the controller reads that default at each
    election."""
    from kcli.broker.broker import Broker
    from kcli.broker.config.broker_config import BrokerConfig

    dynamic = {None: {}, 0: {}}
    broker = Broker.__new__(Broker)
    broker.config, broker.id, broker.replica_manager = BrokerConfig({}), 0, None
    broker.metadata = types.SimpleNamespace(broker_configs=lambda broker_id: dynamic[broker_id])
    controller, _ = controller_of(tree, unclean_leader_election_enable=broker._unclean_leader_election_default)
    broker.controller, broker._unclean_default_seen = controller, False
    elected: list[str] = []
    controller.enable_default_unclean_leader_election = lambda: elected.append("default")
    _out_of_sync_leader_dies(tree, controller)
    assert tree.partition_state("orders", 0)[0].leader == -1
    dynamic[0] = {"log.retention.ms": "100"}
    broker._on_broker_config_change()
    assert elected == []
    dynamic[None] = {"unclean.leader.election.enable": "true"}
    broker._on_broker_config_change()
    broker._on_broker_config_change()
    assert elected == ["default"]  # once, on the change to true
    dynamic[0] = {"unclean.leader.election.enable": "false"}  # this broker's own layer wins
    broker._on_broker_config_change()
    assert not broker._unclean_leader_election_default()
    controller.resign()


# -- /isr_change_notification (brokers before AlterIsr) -------------------------------------------


def test_an_isr_change_notification_makes_the_controller_read_the_state_again_and_tell_every_broker(tree, caplog):
    """Kafka 2.8's processIsrChangeNotification: a broker of an older inter-broker protocol writes
    the ISR into the state znode itself and lists the partition under /isr_change_notification; a
    notification that does not parse is deleted with an ERROR line, the others still handled."""
    caplog.set_level("INFO", logger="kcli.broker.controller")
    controller, channel = controller_of(tree)
    create(tree, "orders", {0: [1, 0], 1: [0, 1]})
    channel.take()
    state, version = tree.partition_state("orders", 0)
    tree.set_partition_state("orders", 0, dataclasses.replace(state, isr=(1,)), version)  # as the leader wrote it
    tree.store.create(zk.isr_change_path(), b"not json", sequence=True)
    tree.store.create(zk.isr_change_path(), zk.encode_isr_change_notification([("orders", 0), ("gone", 3)]), sequence=True)
    updates = channel.take(UPDATE_METADATA)
    assert sorted(b for b, *_ in updates) == [0, 1, 2]
    assert partitions_of(updates[0][2])[("orders", 0)]["isr"] == [1]
    assert ("orders", 1) not in partitions_of(updates[0][2])
    assert controller.context.leadership[("orders", 0)][0].isr == (1,)
    assert tree.store.get_children(zk.ISR_CHANGE_NOTIFICATION) == []
    assert "Ignoring the ISR change notification /isr_change_notification/isr_change_" in caplog.text
    assert "Ignoring the ISR change of gone-3" in caplog.text
    controller.resign()


def test_a_new_controller_deletes_the_isr_change_notifications_left(tree):
    tree.store.create(zk.isr_change_path(), zk.encode_isr_change_notification([("orders", 0)]), sequence=True)
    controller, _ = controller_of(tree)
    assert tree.store.get_children(zk.ISR_CHANGE_NOTIFICATION) == []
    controller.resign()
