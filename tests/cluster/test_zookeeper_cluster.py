"""Several kcli brokers coordinated through a real ZooKeeper, as a ZooKeeper-era Kafka cluster is.

The znodes are checked against the reference's JSON (kafka-tools.md section 6.2); clients are the
real libraries; failures are real kill -9 and SIGTERM of broker processes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import SESSION_TIMEOUT_MS, wait_until


def metadata(bootstrap: str, topic: str | None = None):
    return AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=20)


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    return {p.id: p.leader for p in metadata(bootstrap, topic).topics[topic].partitions.values()}


def create_topic(bootstrap: str, name: str, partitions: int, replication_factor: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the answer comes
    admin.create_topics([NewTopic(name, partitions, replication_factor)])[name].result(30)


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(count):
        producer.produce(topic, key=b"%d" % i, value=b"value-%d" % i)
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, count: int, group: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        wait_until(lambda: _poll_into(consumer, values) >= count, timeout=60, interval=0)
    finally:
        consumer.close()
    return values


def _poll_into(consumer, values: list[bytes]) -> int:
    message = consumer.poll(0.5)
    if message is not None and not message.error():
        values.append(message.value())
    return len(values)


def test_brokers_register_kafkas_znodes_and_elect_one_controller(cluster):
    cluster.start(3)
    zk = cluster.zk()
    try:
        assert sorted(zk.get_children("/brokers/ids")) == ["0", "1", "2"]
        registration = json.loads(zk.get("/brokers/ids/1")[0])
        # Kafka 2.8's version 5 registration (reference 6.2).
        assert set(registration) == {"listener_security_protocol_map", "endpoints", "jmx_port", "features", "host",
                                     "timestamp", "port", "version"}
        assert registration["version"] == 5 and registration["port"] == cluster.brokers[1].port
        assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{cluster.brokers[1].port}"]
        assert zk.get("/brokers/ids/1")[1].ephemeralOwner != 0
        controller = json.loads(zk.get("/controller")[0])
        assert controller["version"] in (1, 2) and controller["brokerid"] in (0, 1, 2)
        assert int(zk.get("/controller_epoch")[0]) >= 1
        cluster_id = json.loads(zk.get("/cluster/id")[0])
        assert cluster_id["version"] == "1" and len(cluster_id["id"]) == 22
        for path in ("/brokers/topics", "/config/changes", "/admin/delete_topics", "/isr_change_notification",
                     "/latest_producer_id_block", "/brokers/seqid", "/config/topics", "/config/brokers"):
            assert zk.exists(path) is not None, path
    finally:
        zk.stop()
        zk.close()
    for broker in cluster.brokers.values():
        seen = metadata(broker.bootstrap)
        assert sorted(seen.brokers) == [0, 1, 2]
        assert seen.controller_id == controller["brokerid"]
        assert seen.cluster_id == cluster_id["id"]


def test_partitions_spread_over_the_brokers_serve_real_clients(cluster):
    cluster.start(3)
    create_topic(cluster.brokers[1].bootstrap, "spread", 6)
    placed = wait_until(lambda: (lambda l: l if -1 not in l.values() else None)(leaders(cluster.bootstrap, "spread")))
    assert sorted(set(placed.values())) == [0, 1, 2]
    # Every broker answers Metadata alike; the clients find each partition's leader.
    for broker in cluster.brokers.values():
        assert leaders(broker.bootstrap, "spread") == placed
    produce(cluster.brokers[0].bootstrap, "spread", 300)
    values = consume(cluster.brokers[2].bootstrap, "spread", 300, "readers")
    assert sorted(values) == sorted(b"value-%d" % i for i in range(300))


def test_a_topic_written_in_zookeeper_by_hand_comes_online(cluster):
    cluster.start(2)
    zk = cluster.zk()
    try:
        zk.create("/config/topics/legacy", b'{"version":1,"config":{}}', makepath=True)
        zk.create("/brokers/topics/legacy", b'{"version":1,"partitions":{"0":[0],"1":[1]}}')
        state = wait_until(lambda: zk.exists("/brokers/topics/legacy/partitions/1/state") and
                           json.loads(zk.get("/brokers/topics/legacy/partitions/1/state")[0]))
        assert state["leader"] == 1 and state["isr"] == [1] and state["leader_epoch"] == 0
        assert "topic_id" in json.loads(zk.get("/brokers/topics/legacy")[0])
    finally:
        zk.stop()
        zk.close()
    assert wait_until(lambda: leaders(cluster.bootstrap, "legacy") == {0: 0, 1: 1})
    produce(cluster.bootstrap, "legacy", 20)


def test_killing_the_controller_elects_another_and_takes_its_partitions_offline_until_it_returns(cluster):
    cluster.start(3)
    zk = cluster.zk()
    try:
        first = json.loads(zk.get("/controller")[0])["brokerid"]
        first_epoch = int(zk.get("/controller_epoch")[0])
        create_topic(cluster.brokers[(first + 1) % 3].bootstrap, "orders", 6)
        placed = wait_until(lambda: (lambda l: l if -1 not in l.values() else None)(leaders(cluster.bootstrap, "orders")))
        produce(cluster.bootstrap, "orders", 120)
        cluster.brokers[first].kill()
        survivors = ",".join(b.bootstrap for i, b in cluster.brokers.items() if i != first)
        # A new controller, with a higher epoch, within the session timeout.
        second = wait_until(lambda: zk.exists("/controller") and json.loads(zk.get("/controller")[0])["brokerid"])
        assert second != first
        assert int(zk.get("/controller_epoch")[0]) > first_epoch
        # The dead broker's RF=1 partitions are offline (leader -1), the others keep their leaders.
        expected = {p: (-1 if leader == first else leader) for p, leader in placed.items()}
        assert wait_until(lambda: leaders(survivors, "orders") == expected)
        state = json.loads(zk.get(f"/brokers/topics/orders/partitions/{min(p for p, l in placed.items() if l == first)}/state")[0])
        assert state["leader"] == -1 and state["isr"] == [first]
        listed = subprocess.run(
            [sys.executable, "-m", "kcli", "topics", "--bootstrap-server", survivors, "--describe",
             "--unavailable-partitions", "--topic", "orders"],
            capture_output=True, text=True, timeout=60,
        )
        offline = sorted(int(line.split("Partition: ")[1].split()[0]) for line in listed.stdout.splitlines() if "Partition:" in line)
        assert offline == sorted(p for p, leader in placed.items() if leader == first)
        # Back with its data.
        cluster.brokers[first].restart()
        assert wait_until(lambda: leaders(cluster.bootstrap, "orders") == placed)
        values = consume(cluster.bootstrap, "orders", 120, "after-restart")
        assert sorted(values) == sorted(b"value-%d" % i for i in range(120))
    finally:
        zk.stop()
        zk.close()


def test_a_controller_paused_past_its_session_is_deposed_and_rejoins_as_a_broker(cluster):
    """SIGSTOP of the controller: the others elect a new one when its session expires, and a
    broker dies meanwhile, so the paused controller wakes to a cluster that changed without it.
    Its writes carry the old /controller_epoch version and are refused; it re-registers and
    follows the new controller."""
    cluster.start(3)
    zk = cluster.zk()
    first = json.loads(zk.get("/controller")[0])["brokerid"]
    paused = cluster.brokers[first]
    try:
        create_topic(cluster.brokers[(first + 1) % 3].bootstrap, "orders", 6)
        placed = wait_until(lambda: (lambda l: l if -1 not in l.values() else None)(leaders(cluster.bootstrap, "orders")))
        produce(cluster.bootstrap, "orders", 60)
        epoch = int(zk.get("/controller_epoch")[0])
        paused.process.send_signal(signal.SIGSTOP)
        second = wait_until(lambda: (lambda c: c if c not in (None, first) else None)(
            zk.exists("/controller") and json.loads(zk.get("/controller")[0])["brokerid"]), timeout=SESSION_TIMEOUT_MS / 1000 + 30)
        assert int(zk.get("/controller_epoch")[0]) == epoch + 1
        third = ({0, 1, 2} - {first, second}).pop()
        cluster.brokers[third].kill()
        wait_until(lambda: str(third) not in zk.get_children("/brokers/ids"))
        paused.process.send_signal(signal.SIGCONT)
        # It registers again with a new session and the new controller brings its partitions back.
        wait_until(lambda: str(first) in zk.get_children("/brokers/ids"), timeout=SESSION_TIMEOUT_MS / 1000 + 30)
        live = ",".join(cluster.brokers[b].bootstrap for b in (first, second))
        expected = {p: (-1 if leader == third else leader) for p, leader in placed.items()}
        assert wait_until(lambda: leaders(live, "orders") == expected)
        assert json.loads(zk.get("/controller")[0])["brokerid"] == second
        assert int(zk.get("/controller_epoch")[0]) == epoch + 1
        for partition in range(6):
            state = json.loads(zk.get(f"/brokers/topics/orders/partitions/{partition}/state")[0])
            assert state["controller_epoch"] <= epoch + 1
        assert paused.process.poll() is None
        cluster.brokers[third].restart()
        assert wait_until(lambda: leaders(cluster.bootstrap, "orders") == placed)
        values = consume(cluster.bootstrap, "orders", 60, "after-pause")
        assert sorted(values) == sorted(b"value-%d" % i for i in range(60))
    finally:
        paused.process.send_signal(signal.SIGCONT)
        zk.stop()
        zk.close()


def test_a_clean_stop_of_the_controller_moves_the_role_at_once(cluster):
    cluster.start(2)
    zk = cluster.zk()
    try:
        first = json.loads(zk.get("/controller")[0])["brokerid"]
        assert cluster.brokers[first].stop() == 0
        # Its session is closed at shutdown: no session timeout to wait for.
        second = wait_until(lambda: zk.exists("/controller") and json.loads(zk.get("/controller")[0])["brokerid"],
                            timeout=3, interval=0.02)
        assert second == 1 - first
        assert zk.get_children("/brokers/ids") == [str(1 - first)]
    finally:
        zk.stop()
        zk.close()


def test_a_broker_id_held_by_another_broker_is_refused_before_anything_is_loaded(cluster, tmp_path):
    cluster.start(1)
    result = subprocess.run(
        [sys.executable, "-m", "kcli", "broker", "start", "--override", "broker.id=0",
         "--override", f"zookeeper.connect={cluster.connect}", "--override", f"log.dirs={tmp_path / 'other'}",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    owner = None
    zk = cluster.zk()
    try:
        owner = zk.get("/brokers/ids/0")[1].ephemeralOwner
    finally:
        zk.stop()
        zk.close()
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: Error while creating ephemeral at /brokers/ids/0, node already exists and owner '{owner}' "
                           "does not match current session '")
    assert not list((tmp_path / "other").glob("*-0"))  # no partition log was created


def test_zookeeper_unreachable_at_start_is_one_line_and_exit_1(tmp_path):
    from tests.zookeeper_process import free_port

    result = subprocess.run(
        [sys.executable, "-m", "kcli", "broker", "start", "--override", f"zookeeper.connect=127.0.0.1:{free_port()}",
         "--override", "zookeeper.connection.timeout.ms=1500", "--override", f"log.dirs={tmp_path}",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: Timed out waiting for connection to ZooKeeper at 127.0.0.1:")
    assert last.endswith("while in state: CONNECTING")
    assert "Traceback" not in result.stderr


def test_meta_properties_of_another_cluster_is_refused(cluster, tmp_path):
    cluster.start(1)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "meta.properties").write_text("version=0\nbroker.id=5\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    result = subprocess.run(
        [sys.executable, "-m", "kcli", "broker", "start", "--override", "broker.id=5",
         "--override", f"zookeeper.connect={cluster.connect}", "--override", f"log.dirs={other}",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "doesn't match stored clusterId AAAAAAAAAAAAAAAAAAAAAA" in last
    assert "The broker is trying to join the wrong cluster. Configured zookeeper.connect may be wrong." in last


def test_a_group_resumes_from_its_committed_offsets_when_its_coordinators_broker_restarts(cluster):
    import threading

    cluster.start(3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    group = "resuming"
    # Creates __consumer_offsets (6 partitions over the three brokers) and names the coordinator.
    (coordinator,) = wait_until(lambda: _coordinator_of(admin, group))
    data_broker = next(b for b in cluster.brokers if b != coordinator)
    # The topic's partitions live on another broker, so only the coordinator goes away.
    admin.create_topics([NewTopic("events", num_partitions=2, replica_assignment=[[data_broker], [data_broker]])])["events"].result(30)
    wait_until(lambda: -1 not in leaders(cluster.bootstrap, "events").values())
    produce(cluster.bootstrap, "events", 100)
    first = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
    first.subscribe(["events"])
    seen: list[bytes] = []
    wait_until(lambda: _poll_into(first, seen) >= 100, timeout=60, interval=0)
    first.commit(asynchronous=False)
    first.close()

    cluster.brokers[coordinator].kill()
    produce(cluster.brokers[data_broker].bootstrap, "events", 50)
    # A member that joins while the coordinator is away waits (COORDINATOR_NOT_AVAILABLE) ...
    second = Consumer({"bootstrap.servers": cluster.brokers[data_broker].bootstrap, "group.id": group,
                       "auto.offset.reset": "earliest"})
    second.subscribe(["events"])
    resumed: list[bytes] = []
    restarter = threading.Timer(3.0, cluster.brokers[coordinator].restart)
    restarter.start()
    try:
        # ... and resumes from the committed offsets once it is back: only the 50 new records.
        wait_until(lambda: _poll_into(second, resumed) >= 50, timeout=90, interval=0)
        extra: list[bytes] = []
        for _ in range(4):
            _poll_into(second, extra)
        assert sorted(resumed + extra) == sorted(b"value-%d" % i for i in range(50))
    finally:
        restarter.join()
        second.close()


def _coordinator_of(admin: AdminClient, group: str) -> tuple[int] | None:
    """(the coordinator's broker id,) once the group's coordinator is known (broker 0 is falsy)."""
    try:
        return (admin.describe_consumer_groups([group], request_timeout=10)[group].result(15).coordinator.id,)
    except Exception:
        return None


def test_brokers_keep_serving_through_a_zookeeper_restart(tmp_path):
    from tests.cluster.conftest import Cluster
    from tests.zookeeper_process import ZooKeeperProcess

    zookeeper = ZooKeeperProcess(tmp_path / "zookeeper").start()
    cluster = Cluster(zookeeper, "/restarting", tmp_path)
    try:
        cluster.start(2)
        create_topic(cluster.bootstrap, "steady", 4)
        wait_until(lambda: -1 not in leaders(cluster.bootstrap, "steady").values())
        produce(cluster.bootstrap, "steady", 40)
        zookeeper.stop()
        # Without ZooKeeper the brokers still serve what they lead.
        produce(cluster.bootstrap, "steady", 40)
        zookeeper.start()
        # Their sessions outlived the restart (or were renewed): both stay registered.
        zk = cluster.zk()
        try:
            assert wait_until(lambda: sorted(zk.get_children("/brokers/ids")) == ["0", "1"])
            assert wait_until(lambda: zk.exists("/controller") is not None)
        finally:
            zk.stop()
            zk.close()
        produce(cluster.bootstrap, "steady", 20)
        values = consume(cluster.bootstrap, "steady", 100, "after-zookeeper")
        assert sorted(values) == sorted([b"value-%d" % i for i in range(40)] * 2 + [b"value-%d" % i for i in range(20)])
        assert not [line for b in cluster.brokers.values() for line in b.log_lines if "Traceback" in line]
    finally:
        cluster.stop()
        zookeeper.stop()


def test_a_replica_holding_no_data_is_never_reported_in_sync(cluster):
    cluster.start(1)
    zk = cluster.zk()
    try:
        # Replica 1's broker never starts: it never fetches, so it never joins an ISR.
        zk.create("/config/topics/doubled", b'{"version":1,"config":{}}', makepath=True)
        zk.create("/brokers/topics/doubled", b'{"version":1,"partitions":{"0":[0,1],"1":[1,0]}}')
    finally:
        zk.stop()
        zk.close()
    wait_until(lambda: (lambda t: t.partitions and all(p.leader != -1 for p in t.partitions.values()))(
        metadata(cluster.bootstrap, "doubled").topics["doubled"]))
    produce(cluster.bootstrap, "doubled", 20)
    seen = metadata(cluster.bootstrap, "doubled").topics["doubled"]
    for partition in seen.partitions.values():
        assert sorted(partition.replicas) == [0, 1] and partition.isrs == [0]
    listed = subprocess.run(
        [sys.executable, "-m", "kcli", "topics", "--bootstrap-server", cluster.bootstrap, "--describe",
         "--under-replicated-partitions", "--topic", "doubled"],
        capture_output=True, text=True, timeout=60,
    )
    assert sum("Partition:" in line for line in listed.stdout.splitlines()) == 2
