"""The controller's channel to the brokers (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown), over the wire between real broker processes on a real ZooKeeper.

The requests sent by hand here are built byte by byte from Kafka 3.9's message definitions
(``clients/src/main/resources/common/message/<Name>Request.json``: fields in order, non-flexible
versions, request header v1, response header v0), so they check the brokers against Kafka's
layout, not against kcli's own encoder. Error codes are Kafka's: STALE_CONTROLLER_EPOCH 11,
NOT_CONTROLLER 41, STALE_BROKER_EPOCH 77.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import uuid

from tests.cluster.conftest import wait_until
from tests.cluster.test_zookeeper_cluster import create_topic, leaders, metadata
from tests.kafka_wire import array, boolean, i16, i32, i64, string
from tests.wire_client import WireClient, recv_exactly

STALE_CONTROLLER_EPOCH = 11
NOT_CONTROLLER = 41
STALE_BROKER_EPOCH = 77


def exchange(bootstrap: str, api_key: int, version: int, body: bytes) -> bytes:
    """Send one request (header v1, client id "hand-built") and return the response body after its
    correlation id, which must match."""
    host, port = bootstrap.rsplit(":", 1)
    header = i16(api_key) + i16(version) + i32(7) + string("hand-built")
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(i32(len(header) + len(body)) + header + body)
        size = struct.unpack(">i", recv_exactly(sock, 4))[0]
        frame = recv_exactly(sock, size)
    assert struct.unpack_from(">i", frame)[0] == 7
    return frame[4:]



def update_metadata_v5(controller_id: int, controller_epoch: int, broker_epoch: int) -> bytes:
    # ControllerId, ControllerEpoch, BrokerEpoch, TopicStates[], LiveBrokers[] (none: a broker
    # that applied this would know no broker at all).
    return i32(controller_id) + i32(controller_epoch) + i64(broker_epoch) + array([]) + array([])


def leader_and_isr_v2(controller_id: int, controller_epoch: int, broker_epoch: int, topic: str, partition: int,
                      leader: int, leader_epoch: int, replicas: list[int]) -> bytes:
    # TopicStates[TopicName, PartitionStates[PartitionIndex, ControllerEpoch, Leader, LeaderEpoch,
    # Isr[], ZkVersion, Replicas[], IsNew]], LiveLeaders[BrokerId, HostName, Port].
    state = (i32(partition) + i32(controller_epoch) + i32(leader) + i32(leader_epoch) + array([i32(leader)])
             + i32(leader_epoch) + array([i32(r) for r in replicas]) + boolean(False))
    return (i32(controller_id) + i32(controller_epoch) + i64(broker_epoch)
            + array([string(topic) + array([state])]) + array([]))


def stop_replica_v1(controller_id: int, controller_epoch: int, broker_epoch: int, topic: str, partition: int) -> bytes:
    # DeletePartitions, Topics[Name, PartitionIndexes[]].
    return (i32(controller_id) + i32(controller_epoch) + i64(broker_epoch) + boolean(True)
            + array([string(topic) + array([i32(partition)])]))


def test_requests_from_an_older_controller_epoch_or_for_an_older_broker_epoch_change_nothing(cluster):
    cluster.start(2)
    zk = cluster.zk()
    try:
        create_topic(cluster.bootstrap, "fenced", 2)
        placed = wait_until(lambda: (lambda l: l if -1 not in l.values() else None)(leaders(cluster.bootstrap, "fenced")))
        controller = json.loads(zk.get("/controller")[0])["brokerid"]
        epoch = int(zk.get("/controller_epoch")[0])
        target = placed[0]
        broker_epoch = zk.exists(f"/brokers/ids/{target}").czxid
        address = cluster.brokers[target].bootstrap
        other = 1 - target
        log_dir = cluster.brokers[target].log_dir / "fenced-0"
        # The leader hosts the partition once the controller's LeaderAndIsr reached it.
        wait_until(log_dir.is_dir)

        # UpdateMetadata v5 from the epoch before: STALE_CONTROLLER_EPOCH; the broker still knows both brokers.
        answer = exchange(address, 6, 5, update_metadata_v5(controller, epoch - 1, broker_epoch))
        assert struct.unpack(">h", answer)[0] == STALE_CONTROLLER_EPOCH
        # The current epoch but an older registration of the broker: STALE_BROKER_EPOCH.
        answer = exchange(address, 6, 5, update_metadata_v5(controller, epoch, broker_epoch - 1))
        assert struct.unpack(">h", answer)[0] == STALE_BROKER_EPOCH
        assert sorted(metadata(address).brokers) == [0, 1]

        # LeaderAndIsr v2 moving partition 0 to the other broker, from the epoch before.
        answer = exchange(address, 4, 2, leader_and_isr_v2(controller, epoch - 1, broker_epoch, "fenced", 0, other, 99, [target, other]))
        error, count = struct.unpack_from(">hi", answer)
        assert error == STALE_CONTROLLER_EPOCH and count == 1
        name_length = struct.unpack_from(">h", answer, 6)[0]
        assert answer[8:8 + name_length] == b"fenced"
        assert struct.unpack_from(">ih", answer, 8 + name_length) == (0, STALE_CONTROLLER_EPOCH)

        # StopReplica v1 deleting partition 0, from the epoch before: refused, no partitions listed.
        answer = exchange(address, 5, 1, stop_replica_v1(controller, epoch - 1, broker_epoch, "fenced", 0))
        assert struct.unpack(">hi", answer) == (STALE_CONTROLLER_EPOCH, 0)

        # Nothing changed: the same leaders, the log still there.
        assert leaders(cluster.bootstrap, "fenced") == placed
        assert log_dir.is_dir()

        # ControlledShutdown v1 to a broker that is not the controller: NOT_CONTROLLER.
        not_controller = cluster.brokers[1 - controller].bootstrap
        answer = exchange(not_controller, 7, 1, i32(controller))
        assert struct.unpack(">hi", answer) == (NOT_CONTROLLER, 0)
    finally:
        zk.stop()
        zk.close()


def _controller(zk) -> int:
    return json.loads(zk.get("/controller")[0])["brokerid"]


def _placed(cluster, topic: str) -> dict[int, int]:
    return wait_until(lambda: (lambda l: l if -1 not in l.values() else None)(leaders(cluster.bootstrap, topic)))


def test_a_clean_stop_keeps_rf1_partitions_led_through_controlled_shutdown_then_takes_them_offline(cluster):
    cluster.start(3)
    zk = cluster.zk()
    try:
        create_topic(cluster.bootstrap, "shut", 6)
        placed = _placed(cluster, "shut")
        controller = _controller(zk)
        stopping = next(b for b in sorted(set(placed.values())) if b != controller)
        assert cluster.brokers[stopping].stop() == 0
        # The broker asked the controller before stopping; its one-replica partitions stayed led
        # by it (nothing remained to move), and went offline when its failure was handled.
        assert any("Controlled shutdown request returned successfully" in line for line in cluster.brokers[stopping].log_lines)
        controller_log = cluster.brokers[controller].log_lines
        asked = next(i for i, line in enumerate(controller_log) if f"Shutting down broker {stopping}" in line)
        failed = wait_until(lambda: next((i for i, line in enumerate(controller_log) if f"Broker failure callback for {stopping}" in line), None))
        assert asked < failed
        offline = sorted(p for p, leader in placed.items() if leader == stopping)
        state = wait_until(lambda: (lambda s: s if s["leader"] == -1 else None)(
            json.loads(zk.get(f"/brokers/topics/shut/partitions/{offline[0]}/state")[0])))
        assert state["isr"] == [stopping]
        survivors = ",".join(b.bootstrap for i, b in cluster.brokers.items() if i != stopping)
        expected = {p: (-1 if leader == stopping else leader) for p, leader in placed.items()}
        assert wait_until(lambda: leaders(survivors, "shut") == expected)
    finally:
        zk.stop()
        zk.close()


def test_topic_deletion_removes_the_logs_on_every_broker_including_one_down_at_the_time(cluster):
    cluster.start(3)
    zk = cluster.zk()
    try:
        create_topic(cluster.bootstrap, "doomed", 6)
        placed = _placed(cluster, "doomed")
        dirs = {p: cluster.brokers[leader].log_dir / f"doomed-{p}" for p, leader in placed.items()}
        wait_until(lambda: all(d.is_dir() for d in dirs.values()))
        down = next(b for b in sorted(set(placed.values())) if b != _controller(zk))
        cluster.brokers[down].kill()
        wait_until(lambda: zk.get_children("/brokers/ids") == sorted(str(b) for b in range(3) if b != down))
        # Marked as a ZooKeeper-era tool marks it; the controller deletes it through the brokers.
        zk.create("/admin/delete_topics/doomed")
        live_dirs = [d for p, d in dirs.items() if placed[p] != down]
        down_dirs = [d for p, d in dirs.items() if placed[p] == down]
        wait_until(lambda: not any(d.exists() for d in live_dirs))
        # The replicas of the broker that is down are ineligible: the deletion waits for it.
        assert zk.exists("/brokers/topics/doomed") and zk.exists("/admin/delete_topics/doomed")
        assert all(d.is_dir() for d in down_dirs)
        cluster.brokers[down].restart()
        wait_until(lambda: not any(d.exists() for d in down_dirs))
        wait_until(lambda: not zk.exists("/brokers/topics/doomed") and not zk.exists("/admin/delete_topics/doomed"))
        wait_until(lambda: "doomed" not in metadata(cluster.bootstrap).topics)
    finally:
        zk.stop()
        zk.close()


def test_alter_partition_is_answered_by_the_controller_and_reaches_every_brokers_metadata(cluster):
    cluster.start(2)
    zk = cluster.zk()
    try:
        create_topic(cluster.bootstrap, "isr", 1, replication_factor=2)
        wait_until(lambda: leaders(cluster.bootstrap, "isr")[0] != -1)
        # A new partition's ISR is its live replicas; the request below shrinks it to the leader
        # (as a leader whose follower fell behind would ask).
        data, stat = zk.get("/brokers/topics/isr/partitions/0/state")
        state = json.loads(data)
        assignment = json.loads(zk.get("/brokers/topics/isr")[0])
        leader = state["leader"]
        (follower,) = [r for r in assignment["partitions"]["0"] if r != leader]
        topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(assignment["topic_id"] + "=="))
        fields = {
            "broker_id": leader,
            "broker_epoch": zk.exists(f"/brokers/ids/{leader}").czxid,
            "topics": [{"topic_id": topic_id, "partitions": [{
                "partition_index": 0, "leader_epoch": state["leader_epoch"], "new_isr": [leader],
                "leader_recovery_state": 0, "partition_epoch": stat.version,
            }]}],
        }
        controller = _controller(zk)
        host, port = cluster.brokers[1 - controller].bootstrap.rsplit(":", 1)
        with WireClient(host, int(port)) as client:
            assert client.call(56, 2, fields).error_code == NOT_CONTROLLER
        host, port = cluster.brokers[controller].bootstrap.rsplit(":", 1)
        with WireClient(host, int(port)) as client:
            versions = client.call(18, 3, {"client_software_name": "kcli-tests", "client_software_version": "1"})
            advertised = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
            assert [advertised.get(key) for key in (4, 5, 6, 7, 56)] == [(0, 7), (0, 4), (0, 8), (0, 3), (2, 3)]
            answer = client.call(56, 2, fields)
        assert answer.error_code == 0
        (partition,) = answer.topics[0].partitions
        assert (partition.error_code, list(partition.isr), partition.partition_epoch) == (0, [leader], stat.version + 1)
        assert json.loads(zk.get("/brokers/topics/isr/partitions/0/state")[0])["isr"] == [leader]
        for broker in cluster.brokers.values():
            wait_until(lambda: list(metadata(broker.bootstrap, "isr").topics["isr"].partitions[0].isrs) == [leader])
    finally:
        zk.stop()
        zk.close()
