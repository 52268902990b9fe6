"""``kcli topics --zookeeper``: Kafka 2.8's TopicCommand through ZooKeeper, on a real ZooKeeper.

Expected lines come from Kafka 2.8.2's TopicCommand.scala (ZookeeperTopicService) and AdminZkClient
and the reference (kafka-tools.md sections 1.3 and 6.2): ``Created topic T.``; describe
``Topic: T\\tTopicId: ID\\tPartitionCount: N\\tReplicationFactor: R\\tConfigs: k=v`` and
``\\tTopic: T\\tPartition: P\\tLeader: L\\tReplicas: a,b\\tIsr: a,b`` (no Elr fields on 2.8), with
``\\tMarkedForDeletion: true`` on a topic being deleted. Tests that need leaders run real
ZooKeeper-mode brokers (one cluster of two for the module); the others work on ZooKeeper alone,
writing by hand what a broker would (registrations, partition states), each in its own chroot.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid

import pytest
from kazoo.client import KazooClient

from tests.cluster.conftest import Cluster, wait_until

CONFIG_WARNING = [
    "WARNING: Altering topic configuration from this script has been deprecated and may be removed in future releases.",
    "         Going forward, please use kafka-configs.sh for this functionality",
]
PARTITIONS_WARNING = (
    "WARNING: If partitions are increased for a topic that has a key, the partition logic or ordering of the messages will be affected"
)


@pytest.fixture(scope="module")
def brokers(zookeeper_server, tmp_path_factory):
    """Two ZooKeeper-mode kcli brokers (ids 0 and 1) under a chroot of their own."""
    cluster = Cluster(zookeeper_server, "/topics-zk-cluster", tmp_path_factory.mktemp("cluster"))
    try:
        cluster.start(2)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def chroot(zookeeper_server):
    """A fresh chroot with no broker: ``(connect, kazoo client on the chroot)``."""
    connect = f"{zookeeper_server.connect}/topics-zk-{uuid.uuid4().hex[:8]}"
    client = KazooClient(hosts=connect.split("/")[0])
    client.start(timeout=15)
    client.ensure_path("/" + connect.split("/", 1)[1])
    client.stop()
    client.close()
    client = KazooClient(hosts=connect)
    client.start(timeout=15)
    try:
        yield connect, client
    finally:
        client.stop()
        client.close()


def fresh(label: str = "t") -> str:
    """A topic name of its own, without '.' or '_' (which would add Kafka's collision warning)."""
    return f"zk-{label}-{uuid.uuid4().hex[:8]}"


def znode(client: KazooClient, path: str):
    return json.loads(client.get(path)[0])


def register(client: KazooClient, broker_id: int, rack: str | None = None) -> None:
    """A broker registration as a Kafka 2.8 broker writes it (reference 6.2), for the placement."""
    document = {"listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "endpoints": [f"PLAINTEXT://127.0.0.1:{9092 + broker_id}"],
                "jmx_port": -1, "features": {}, "host": "127.0.0.1", "timestamp": "1643692590218", "port": 9092 + broker_id, "version": 5}
    if rack is not None:
        document["rack"] = rack
    client.create(f"/brokers/ids/{broker_id}", json.dumps(document).encode(), ephemeral=True, makepath=True)


def states_written(client: KazooClient, topic: str, count: int):
    return all(client.exists(f"/brokers/topics/{topic}/partitions/{p}/state") for p in range(count))


def test_create_then_describe_in_kafka_28_form(kcli, brokers):
    topic = fresh()
    created = kcli("topics", "--zookeeper", brokers.connect, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "2")
    assert (created.returncode, created.stdout, created.stderr) == (0, f"Created topic {topic}.\n", "")
    zk = brokers.zk()
    try:
        # The tool writes the config and the assignment only; the controller adds the topic id and
        # the partition states (Kafka 2.8's TopicCommand creates without a topic id).
        wait_until(lambda: states_written(zk, topic, 3))
        wait_until(lambda: "topic_id" in znode(zk, f"/brokers/topics/{topic}"))
        assert znode(zk, f"/config/topics/{topic}") == {"version": 1, "config": {}}
        assignment = znode(zk, f"/brokers/topics/{topic}")
        assert set(assignment) == {"version", "partitions", "topic_id", "adding_replicas", "removing_replicas"}
        assert assignment["version"] == 3 and assignment["adding_replicas"] == {} and assignment["removing_replicas"] == {}
        replicas = {int(p): r for p, r in assignment["partitions"].items()}
        assert sorted(replicas) == [0, 1, 2] and all(sorted(r) == [0, 1] for r in replicas.values())
        # AdminUtils' round robin: the first replicas of consecutive partitions alternate.
        assert replicas[0][0] != replicas[1][0] and replicas[1][0] != replicas[2][0]
        # The followers join the ISRs a fetch after the leaders are elected: the states read once
        # they have, so that what the tool prints next is what was read.
        wait_until(lambda: all(len(znode(zk, f"/brokers/topics/{topic}/partitions/{p}/state")["isr"]) == 2 for p in range(3)))
        states = {p: znode(zk, f"/brokers/topics/{topic}/partitions/{p}/state") for p in range(3)}
    finally:
        zk.stop()
        zk.close()
    assert all(set(s) == {"controller_epoch", "leader", "version", "leader_epoch", "isr"} for s in states.values())
    described = kcli("topics", "--zookeeper", brokers.connect, "--describe", "--topic", topic)
    assert described.returncode == 0, described
    assert described.lines[0] == f"Topic: {topic}\tTopicId: {assignment['topic_id']}\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: "
    assert described.lines[1:] == [
        f"\tTopic: {topic}\tPartition: {p}\tLeader: {states[p]['leader']}\tReplicas: {','.join(map(str, replicas[p]))}"
        f"\tIsr: {','.join(map(str, states[p]['isr']))}"
        for p in range(3)
    ]


def test_replica_assignment_and_configs_on_create(kcli, chroot):
    connect, zk = chroot
    topic = fresh("a")
    created = kcli("topics", "--zookeeper", connect, "--create", "--topic", topic, "--replica-assignment", "1:0,0:1",
                   "--config", "cleanup.policy=compact", "--config", "retention.ms = 1000")
    assert (created.returncode, created.stdout) == (0, f"Created topic {topic}.\n"), created
    assert znode(zk, f"/config/topics/{topic}") == {"version": 1, "config": {"cleanup.policy": "compact", "retention.ms": "1000"}}
    assert znode(zk, f"/brokers/topics/{topic}") == {"partitions": {"0": [1, 0], "1": [0, 1]}, "adding_replicas": {}, "removing_replicas": {}, "version": 3}
    plain = fresh("b")
    assert kcli("topics", "--zookeeper", connect, "--create", "--topic", plain, "--replica-assignment", "0").returncode == 0
    # No broker has elected anything yet: no topic id, no leader, an empty ISR.
    described = kcli("topics", "--zookeeper", connect, "--describe")
    assert described.lines == [
        f"Topic: {topic}\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: cleanup.policy=compact,retention.ms=1000",
        f"\tTopic: {topic}\tPartition: 0\tLeader: none\tReplicas: 1,0\tIsr: ",
        f"\tTopic: {topic}\tPartition: 1\tLeader: none\tReplicas: 0,1\tIsr: ",
        f"Topic: {plain}\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: ",
        f"\tTopic: {plain}\tPartition: 0\tLeader: none\tReplicas: 0\tIsr: ",
    ]
    overrides = kcli("topics", "--zookeeper", connect, "--describe", "--topics-with-overrides")
    assert overrides.lines == [f"Topic: {topic}\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: cleanup.policy=compact,retention.ms=1000"]
    bad = kcli("topics", "--zookeeper", connect, "--create", "--topic", fresh("bad"), "--replica-assignment", "0", "--config", "no.such=1")
    assert (bad.returncode, bad.lines) == (1, ["Error while executing topic command : Unknown topic config name: no.such"])


def test_alter_partitions_and_configs(kcli, brokers):
    topic = fresh()
    assert kcli("topics", "--zookeeper", brokers.connect, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1",
                "--config", "cleanup.policy=compact").returncode == 0
    grown = kcli("topics", "--zookeeper", brokers.connect, "--alter", "--topic", topic, "--partitions", "3")
    assert (grown.returncode, grown.lines) == (0, [PARTITIONS_WARNING, "Adding partitions succeeded!"]), grown
    zk = brokers.zk()
    try:
        wait_until(lambda: states_written(zk, topic, 3))
        replicas = znode(zk, f"/brokers/topics/{topic}")["partitions"]
        # New partitions continue the round robin from partition 0's replica.
        assert replicas["1"] != replicas["0"] and replicas["2"] == replicas["0"]
        changed = kcli("topics", "--zookeeper", brokers.connect, "--alter", "--topic", topic, "--config", "retention.ms=5000",
                       "--delete-config", "cleanup.policy")
        assert (changed.returncode, changed.lines) == (0, [*CONFIG_WARNING, f"Updated config for topic {topic}."]), changed
        assert znode(zk, f"/config/topics/{topic}") == {"version": 1, "config": {"retention.ms": "5000"}}
        notifications = [znode(zk, f"/config/changes/{name}") for name in zk.get_children("/config/changes")]
        assert {"version": 2, "entity_path": f"topics/{topic}"} in notifications
    finally:
        zk.stop()
        zk.close()
    fewer = kcli("topics", "--zookeeper", brokers.connect, "--alter", "--topic", topic, "--partitions", "2")
    assert fewer.returncode == 1
    assert fewer.lines == [PARTITIONS_WARNING, ("Error while executing topic command : The number of partitions for a topic can only be increased. "
                           f"Topic {topic} currently has 3 partitions, 2 would not be an increase.")]
    manual = kcli("topics", "--zookeeper", brokers.connect, "--alter", "--topic", topic, "--partitions", "4", "--replica-assignment", "0,0,0,7")
    assert manual.lines[-1] == ("Error while executing topic command : Some brokers specified for partition id 3 are not available. "
                                "Specified brokers: 7, available brokers: 0, 1.")


def test_list_marks_deletion_and_excludes_internal(kcli, chroot):
    connect, zk = chroot
    assert kcli("topics", "--zookeeper", connect, "--list").stdout == ""
    first, second = sorted([fresh("a"), fresh("b")])
    for name in (second, "__consumer_offsets", first):
        assert kcli("topics", "--zookeeper", connect, "--create", "--topic", name, "--replica-assignment", "0").returncode == 0
    assert kcli("topics", "--zookeeper", connect, "--list").lines == ["__consumer_offsets", first, second]
    assert kcli("topics", "--zookeeper", connect, "--list", "--exclude-internal").lines == [first, second]
    # No controller runs under this chroot: the mark stays, as a pending deletion.
    deleted = kcli("topics", "--zookeeper", connect, "--delete", "--topic", second)
    assert (deleted.returncode, deleted.lines) == (0, [f"Topic {second} is marked for deletion.",
                                                       "Note: This will have no impact if delete.topic.enable is not set to true."])
    assert zk.exists(f"/admin/delete_topics/{second}") is not None
    assert kcli("topics", "--zookeeper", connect, "--list").lines == ["__consumer_offsets", first, f"{second} - marked for deletion"]
    again = kcli("topics", "--zookeeper", connect, "--delete", "--topic", second)
    assert (again.returncode, again.lines) == (0, [f"Topic {second} is already marked for deletion."])
    described = kcli("topics", "--zookeeper", connect, "--describe", "--topic", second)
    assert described.lines == [f"Topic: {second}\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \tMarkedForDeletion: true",
                               f"\tTopic: {second}\tPartition: 0\tLeader: none\tReplicas: 0\tIsr: \tMarkedForDeletion: true"]
    internal = kcli("topics", "--zookeeper", connect, "--delete", "--topic", "__consumer_offsets")
    assert (internal.returncode, internal.lines) == (1, [("Error while executing topic command : Topic __consumer_offsets is a kafka "
                                                          "internal topic and is not allowed to be marked for deletion.")])


def test_delete_is_carried_out_by_the_controller(kcli, brokers):
    topic = fresh()
    assert kcli("topics", "--zookeeper", brokers.connect, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1").returncode == 0
    zk = brokers.zk()
    try:
        wait_until(lambda: states_written(zk, topic, 2))
        deleted = kcli("topics", "--zookeeper", brokers.connect, "--delete", "--topic", topic)
        assert deleted.lines[0] == f"Topic {topic} is marked for deletion."
        wait_until(lambda: zk.exists(f"/brokers/topics/{topic}") is None and zk.exists(f"/admin/delete_topics/{topic}") is None)
        assert zk.exists(f"/config/topics/{topic}") is None
    finally:
        zk.stop()
        zk.close()
    assert topic not in kcli("topics", "--zookeeper", brokers.connect, "--list").lines


def test_kafka_28_validation_messages(kcli, chroot):
    connect, zk = chroot
    register(zk, 0)
    args = ("topics", "--zookeeper", connect)

    def error(*more: str) -> list[str]:
        result = kcli(*args, *more)
        assert result.returncode == 1, result
        return result.lines

    assert error("--create", "--topic", "bad name!", "--replica-assignment", "0") == [
        ("Error while executing topic command : Topic name \"bad name!\" is illegal, it contains a character other than ASCII "
         "alphanumerics, '.', '_' and '-'")
    ]
    assert error("--create", "--topic", "zero", "--partitions", "0", "--replication-factor", "1") == [
        "Error while executing topic command : Number of partitions must be larger than 0."
    ]
    assert error("--create", "--topic", "zero", "--partitions", "1", "--replication-factor", "0") == [
        "Error while executing topic command : Replication factor must be larger than 0."
    ]
    assert kcli(*args, "--create", "--topic", "__consumer_offsets", "--replica-assignment", "0").returncode == 0
    assert error("--alter", "--topic", "__consumer_offsets", "--partitions", "2") == [
        "Error while executing topic command : The number of partitions for the internal topic __consumer_offsets cannot be changed."
    ]
    assert error("--alter", "--topic", "nothing-here", "--partitions", "2") == [
        "Error while executing topic command : Topic 'nothing-here' does not exist as expected"
    ]
    for action in ("--alter", "--delete"):
        quiet = kcli(*args, action, "--topic", "nothing-here", "--if-exists", *(("--partitions", "2") if action == "--alter" else ()))
        assert (quiet.returncode, quiet.stdout) == (0, "")


def test_describe_filters_read_partition_states_and_live_brokers(kcli, chroot):
    connect, zk = chroot
    topic = fresh()
    assert kcli("topics", "--zookeeper", connect, "--create", "--topic", topic, "--replica-assignment", "0:1,1:0,2:0").returncode == 0
    register(zk, 0)
    register(zk, 1)
    # States as a controller writes them: partition 0 fully in sync, 1 led by a broker that is not
    # registered (2 has no state yet, so no leader).
    for partition, leader, isr in ((0, 0, [0, 1]), (1, 5, [1])):
        state = {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr}
        zk.create(f"/brokers/topics/{topic}/partitions/{partition}/state", json.dumps(state).encode(), makepath=True)
    unavailable = kcli("topics", "--zookeeper", connect, "--describe", "--unavailable-partitions")
    assert unavailable.lines == [f"\tTopic: {topic}\tPartition: 1\tLeader: 5\tReplicas: 1,0\tIsr: 1",
                                 f"\tTopic: {topic}\tPartition: 2\tLeader: none\tReplicas: 2,0\tIsr: "]
    under = kcli("topics", "--zookeeper", connect, "--describe", "--topic", topic, "--under-replicated-partitions")
    assert [line.split("\t")[2] for line in under.lines] == ["Partition: 1", "Partition: 2"]


def test_rack_aware_placement(kcli, chroot):
    connect, zk = chroot
    for broker, rack in ((0, "r1"), (1, "r1"), (2, "r2"), (3, "r2")):
        register(zk, broker, rack)
    topic = fresh()
    assert kcli("topics", "--zookeeper", connect, "--create", "--topic", topic, "--partitions", "8", "--replication-factor", "2").returncode == 0
    racks = {0: "r1", 1: "r1", 2: "r2", 3: "r2"}
    replicas = znode(zk, f"/brokers/topics/{topic}")["partitions"]
    assert all({racks[b] for b in r} == {"r1", "r2"} for r in replicas.values()), replicas
    register(zk, 4)
    mixed = kcli("topics", "--zookeeper", connect, "--create", "--topic", fresh("mixed"), "--partitions", "1", "--replication-factor", "1")
    assert mixed.lines == [("Error while executing topic command : Not all brokers have rack information. Add --disable-rack-aware "
                            "in command line to make replica assignment without rack information.")]
    assert kcli("topics", "--zookeeper", connect, "--create", "--topic", fresh("plain"), "--partitions", "1",
                "--replication-factor", "1", "--disable-rack-aware").returncode == 0


def test_kafka_28_errors(kcli, brokers):
    topic = fresh()
    args = ("topics", "--zookeeper", brokers.connect)
    assert kcli(*args, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1").returncode == 0
    exists = kcli(*args, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    assert (exists.returncode, exists.lines) == (1, [f"Error while executing topic command : Topic '{topic}' already exists."])
    assert exists.stderr == ""
    quiet = kcli(*args, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1", "--if-not-exists")
    assert (quiet.returncode, quiet.stdout) == (0, "")
    unknown = kcli(*args, "--describe", "--topic", "no-such-topic")
    assert (unknown.returncode, unknown.lines) == (1, ["Error while executing topic command : Topic 'no-such-topic' does not exist as expected"])
    assert unknown.stderr == ""
    assert kcli(*args, "--describe", "--topic", "no-such-topic", "--if-exists").returncode == 0
    too_many = kcli(*args, "--create", "--topic", fresh("rf"), "--partitions", "1", "--replication-factor", "3")
    assert (too_many.returncode, too_many.lines) == (1, ["Error while executing topic command : Replication factor: 3 larger than available brokers: 2."])
    colliding = kcli(*args, "--create", "--topic", topic.replace("-", "."), "--partitions", "1", "--replication-factor", "1")
    assert colliding.returncode == 0  # no '.' or '_' in the first name: no collision
    dotted, underscored = f"{topic}.x", f"{topic}_x"
    assert kcli(*args, "--create", "--topic", dotted, "--partitions", "1", "--replication-factor", "1").returncode == 0
    collision = kcli(*args, "--create", "--topic", underscored, "--partitions", "1", "--replication-factor", "1")
    assert collision.lines[-1] == f"Error while executing topic command : Topic '{underscored}' collides with existing topics: {dotted}"


@pytest.mark.parametrize(
    "args, message",
    [
        (("--create", "--topic", "t", "--partitions", "1"), 'Missing required argument "[replication-factor]"'),
        (("--create", "--topic", "t"), 'Missing required argument "[partitions]"'),
        (("--describe", "--under-min-isr-partitions"), 'Option "[under-min-isr-partitions]" can\'t be used with option "[zookeeper]"'),
        (("--describe", "--at-min-isr-partitions"), 'Option "[at-min-isr-partitions]" can\'t be used with option "[zookeeper]"'),
        # Kafka 2.8 takes one report filter at a time (3.9 combines them); with several
        # conflicts, the one its HashSet of conflicting options yields first is named.
        (("--describe", "--under-replicated-partitions", "--unavailable-partitions"),
         'Option "[under-replicated-partitions]" can\'t be used with option "[unavailable-partitions]"'),
        (("--describe", "--unavailable-partitions", "--topics-with-overrides"),
         'Option "[unavailable-partitions]" can\'t be used with option "[topics-with-overrides]"'),
        (("--describe", "--at-min-isr-partitions", "--unavailable-partitions"),
         'Option "[at-min-isr-partitions]" can\'t be used with option "[zookeeper]"'),
        (("--describe", "--under-min-isr-partitions", "--topics-with-overrides"),
         'Option "[under-min-isr-partitions]" can\'t be used with option "[topics-with-overrides]"'),
        (("--list", "--bootstrap-server", "127.0.0.1:9"), "Only one of --bootstrap-server or --zookeeper must be specified"),
    ],
)
def test_kafka_28_option_checks(inproc, args, message):
    result = inproc("topics", "--zookeeper", "127.0.0.1:9", *args)
    assert result.returncode != 0 and message in result.stderr, result


# ``kcli topics ARGS`` as its own process, with the tool's connection timeout shortened (Kafka's
# 30 s would dominate the test).
SHORT_TIMEOUT_KCLI = (
    "import sys; import kcli.tools.topics_zookeeper as tool; tool.ZK_CONNECTION_TIMEOUT_MS = 1000; "
    "from kcli.cli import main; sys.argv = ['kcli', *sys.argv[1:]]; main()"
)


def test_unreachable_zookeeper_and_bad_chroots_are_one_line(chroot):
    from tests.zookeeper_process import free_port

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", SHORT_TIMEOUT_KCLI, "topics", *args], check=False, capture_output=True, text=True, timeout=60)

    unreachable = run("--zookeeper", f"127.0.0.1:{free_port()}", "--list")
    assert (unreachable.returncode, unreachable.stdout) == (1, "")
    [line] = unreachable.stderr.splitlines()  # kazoo's connection warnings stay out
    assert re.fullmatch(r"Error: Timed out waiting for connection to ZooKeeper at 127\.0\.0\.1:\d+ while in state: CONNECTING", line)
    hosts = chroot[0].split("/")[0]
    malformed = run("--zookeeper", f"{hosts}/a//b", "--list")
    assert (malformed.returncode, malformed.stdout) == (1, "")
    [line] = malformed.stderr.splitlines()
    assert "Invalid chroot" in line
    absent = f"/no-such-chroot-{uuid.uuid4().hex[:6]}"
    missing = run("--zookeeper", f"{hosts}{absent}", "--list")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.splitlines() == [f"Error: ZooKeeper at {hosts} has no {absent}: no Kafka cluster uses the chroot of {hosts}{absent}"]
