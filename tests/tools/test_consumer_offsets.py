"""``kcli consumer-offsets`` against a real ZooKeeper and a real ZooKeeper-mode kcli broker.

ZooKeeper-stored offsets are written here with kazoo as Kafka's old consumer wrote them
(reference 5.1: ``/consumers/<g>/offsets/<t>/<p>`` holding the next offset as a decimal string);
files in the ``zk`` format are ExportZkOffsets' lines (reference 5.3:
``/consumers/<group>/offsets/<topic>/<partition>:<offset>``), the CSV is kafka-consumer-groups'
``--export`` form for several groups (reference 5.4: ``group,topic,partition,offset``). Kafka-side
offsets are checked with confluent-kafka, a client kcli did not write.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.conftest import Cluster, running_cluster, zk_session


@pytest.fixture(scope="module")
def cluster(zookeeper_server, tmp_path_factory):
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("cluster"), "consumer-offsets") as made:
        yield made


@pytest.fixture
def zk(cluster):
    with zk_session(cluster) as client:
        yield client


def name(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:8]}"


def topic_with_records(cluster: Cluster, partitions: int, records: int) -> str:
    """A topic with ``records`` records in each partition."""
    topic = name("t")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for p in range(partitions):
        for i in range(records):
            producer.produce(topic, f"r{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    return topic


def kafka_offsets(cluster: Cluster, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in committed if tp.offset >= 0}


def store_in_zk(zk, group: str, topic: str, offsets: dict[int, bytes | int]) -> None:
    for p, value in offsets.items():
        zk.create(f"/consumers/{group}/offsets/{topic}/{p}", value if isinstance(value, bytes) else str(value).encode(), makepath=True)


def run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcli", "consumer-offsets", *args], capture_output=True, text=True, timeout=timeout, check=False)


def both(cluster: Cluster) -> list[str]:
    return ["--zookeeper", cluster.connect, "--bootstrap-server", cluster.bootstrap]


def test_migrate_to_kafka_then_a_confluent_consumer_resumes_exactly_there(cluster, zk):
    topic = topic_with_records(cluster, 2, 10)
    group = name("g")
    store_in_zk(zk, group, topic, {0: 3, 1: 7})
    plan = run("migrate", "--group", group, "--to", "kafka", *both(cluster))
    assert plan.returncode == 0, plan.stderr
    assert "No action will be performed as the --execute option is missing." in plan.stderr
    header, *rows = [line.split() for line in plan.stdout.splitlines() if line]
    assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]
    assert rows == [[group, topic, "0", "-", "3"], [group, topic, "1", "-", "7"]]
    assert kafka_offsets(cluster, group, topic, 2) == {}  # a dry run writes nothing

    done = run("migrate", "--group", group, "--to", "kafka", "--execute", *both(cluster))
    assert done.returncode == 0, done.stderr
    assert f"Migrated 2 offset(s) of group '{group}' to kafka." in done.stderr
    assert kafka_offsets(cluster, group, topic, 2) == {0: 3, 1: 7}
    verified = run("migrate", "--group", group, "--verify", *both(cluster))
    assert (verified.returncode, verified.stdout.strip()) == (0, "The offsets of 1 group(s) are the same in zookeeper and kafka.")

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: dict[int, list[int]] = {0: [], 1: []}
    try:
        while len(seen[0]) < 7 or len(seen[1]) < 3:
            message = consumer.poll(30)
            assert message is not None, f"no record within 30 s; seen {seen}"
            assert message.error() is None, message.error()
            seen[message.partition()].append(message.offset())
    finally:
        consumer.close()
    assert seen == {0: list(range(3, 10)), 1: list(range(7, 10))}


def test_migrate_back_to_zookeeper_and_verify_shows_differences(cluster, zk):
    topic = topic_with_records(cluster, 2, 5)
    group = name("g")
    admin = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    admin.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 2)], asynchronous=False)
    admin.close()
    store_in_zk(zk, group, topic, {0: 1})
    diff = run("migrate", "--group", group, "--verify", *both(cluster))
    assert diff.returncode == 1
    lines = [line.split() for line in diff.stdout.splitlines() if line]
    assert lines == [["GROUP", "TOPIC", "PARTITION", "ZOOKEEPER-OFFSET", "KAFKA-OFFSET"],
                     [group, topic, "0", "1", "4"], [group, topic, "1", "-", "2"]]
    done = run("migrate", "--group", group, "--to", "zookeeper", "--execute", *both(cluster))
    assert done.returncode == 0, done.stderr
    assert zk.get(f"/consumers/{group}/offsets/{topic}/0")[0] == b"4"
    assert zk.get(f"/consumers/{group}/offsets/{topic}/1")[0] == b"2"


def test_never_backwards_unless_allow_rewind(cluster, zk):
    topic = topic_with_records(cluster, 1, 10)
    group = name("g")
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, 8)], asynchronous=False)
    c.close()
    store_in_zk(zk, group, topic, {0: 5})
    kept = run("migrate", "--group", group, "--to", "kafka", "--execute", *both(cluster))
    assert kept.returncode == 0, kept.stderr
    assert f"Not moving group '{group}' partition {topic}-0 back from 8 to 5 (use --allow-rewind to do so)" in kept.stderr
    assert kafka_offsets(cluster, group, topic, 1) == {0: 8}
    rewound = run("migrate", "--group", group, "--to", "kafka", "--execute", "--allow-rewind", *both(cluster))
    assert rewound.returncode == 0, rewound.stderr
    assert kafka_offsets(cluster, group, topic, 1) == {0: 5}


def test_bad_znodes_deleted_topics_and_out_of_range_offsets(cluster, zk):
    topic = topic_with_records(cluster, 3, 4)
    gone = name("deleted")
    group = name("g")
    store_in_zk(zk, group, topic, {0: b"not-a-number", 1: 99, 2: -3})
    store_in_zk(zk, group, gone, {0: 1})
    result = run("migrate", "--group", group, "--to", "kafka", "--execute", *both(cluster))
    assert result.returncode == 1
    err = result.stderr
    assert re.search(rf"Error: Skipping /consumers/{group}/offsets/{topic}/0: .*'not-a-number' is not a decimal number", err)
    assert f"Error: Skipping group '{group}' partition {gone}-0: topic {gone} does not exist" in err
    assert f"New offset (99) is higher than latest offset for topic partition {topic}-1. Value will be set to 4" in err
    assert f"New offset (-3) is lower than earliest offset for topic partition {topic}-2. Value will be set to 0" in err
    assert kafka_offsets(cluster, group, topic, 3) == {1: 4, 2: 0}  # the rest migrated


def test_live_members_refused_unless_force(cluster, zk):
    topic = topic_with_records(cluster, 1, 3)
    group = name("g")
    store_in_zk(zk, group, topic, {0: 2})
    zk.create(f"/consumers/{group}/ids/{group}_host-1643692590218-1a2b3c4d",
              b'{"version":1,"subscription":{"%s":1},"pattern":"static","timestamp":"1643692590218"}' % topic.encode(), ephemeral=True, makepath=True)
    refused = run("migrate", "--group", group, "--to", "kafka", "--execute", *both(cluster))
    assert refused.returncode == 1
    assert f"Error: Group '{group}' has live members ({group}_host-1643692590218-1a2b3c4d): stop its consumers first, or use --force" in refused.stderr.splitlines()
    assert kafka_offsets(cluster, group, topic, 1) == {}
    forced = run("migrate", "--group", group, "--to", "kafka", "--execute", "--force", *both(cluster))
    assert forced.returncode == 0, forced.stderr
    assert kafka_offsets(cluster, group, topic, 1) == {0: 2}


def test_group_in_one_store_only(cluster, zk):
    topic = topic_with_records(cluster, 1, 1)
    group = name("g")
    store_in_zk(zk, group, topic, {0: 1})
    only = run("migrate", "--group", group, "--verify", *both(cluster))
    assert only.returncode == 1
    assert f"Group '{group}' has offsets in zookeeper only" in only.stderr
    missing = run("migrate", "--group", group, "--to", "zookeeper", *both(cluster))
    assert missing.returncode == 1
    assert f"Error: Group '{group}' has no offsets stored in kafka; it has offsets in zookeeper only" in missing.stderr


def test_export_formats_and_import_round_trips(cluster, zk, tmp_path):
    topic = topic_with_records(cluster, 2, 3)
    g1, g2 = sorted([name("a"), name("b")])
    store_in_zk(zk, g1, topic, {0: 1, 1: 2})
    store_in_zk(zk, g2, topic, {1: 3})
    zk_file = tmp_path / "offsets.txt"
    exported = run("export", "--zookeeper", cluster.connect, "--group", g1, "--group", g2, "--output-file", str(zk_file))
    assert exported.returncode == 0, exported.stderr
    assert zk_file.read_text() == (
        f"/consumers/{g1}/offsets/{topic}/0:1\n/consumers/{g1}/offsets/{topic}/1:2\n/consumers/{g2}/offsets/{topic}/1:3\n"
    )
    as_csv = run("export", "--zkconnect", cluster.connect, "--group", g1, "--group", g2, "--format", "csv")
    assert as_csv.stdout.splitlines() == [f"{g1},{topic},0,1", f"{g1},{topic},1,2", f"{g2},{topic},1,3"]
    as_json = run("export", "--zookeeper", cluster.connect, "--group", g2, "--format", "json")
    assert as_json.stdout.splitlines() == [f'{{"group":"{g2}","topic":"{topic}","partition":1,"offset":3}}']

    # An ImportZkOffsets file as written by hand, into Kafka storage, then back out of it.
    g3 = name("c")
    hand = tmp_path / "hand.txt"
    hand.write_text(f"/consumers/{g3}/offsets/{topic}/0:2\n/consumers/{g3}/offsets/{topic}/1:1\n\n/consumers/{g3}/offsets/{topic}/0:0\n")
    imported = run("import", "--to", "kafka", "--input-file", str(hand), "--bootstrap-server", cluster.bootstrap)
    assert imported.returncode == 0, imported.stderr
    assert kafka_offsets(cluster, g3, topic, 2) == {0: 2, 1: 1}  # reading stopped at the empty line
    back = run("export", "--from", "kafka", "--group", g3, "--bootstrap-server", cluster.bootstrap)
    assert back.stdout == f"/consumers/{g3}/offsets/{topic}/0:2\n/consumers/{g3}/offsets/{topic}/1:1\n"

    for fmt, text in (("csv", f"{g3},{topic},0,1\n{g3},{topic},1,0\n"),
                      ("json", f'{{"group":"{g3}","topic":"{topic}","partition":0,"offset":1}}\n{{"group":"{g3}","topic":"{topic}","partition":1,"offset":0}}\n')):
        path = tmp_path / f"in.{fmt}"
        path.write_text(text)
        into_zk = run("import", "--zookeeper", cluster.connect, "--input-file", str(path), "--format", fmt)
        assert into_zk.returncode == 0, into_zk.stderr
        assert zk.get(f"/consumers/{g3}/offsets/{topic}/0")[0] == b"1"
        assert zk.get(f"/consumers/{g3}/offsets/{topic}/1")[0] == b"0"
        zk.delete(f"/consumers/{g3}", recursive=True)


def test_malformed_import_files_write_nothing(cluster, zk, tmp_path):
    group = name("g")
    bad = tmp_path / "bad.txt"
    bad.write_text(f"/consumers/{group}/offsets/t/0:5\n/consumers/{group}/offsets/t/1\n/brokers/ids/0:1\n/consumers/{group}/offsets/t/x:1\n/consumers/{group}/offsets/t/2:1.5\n")
    result = run("import", "--zookeeper", cluster.connect, "--input-file", str(bad))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: {bad}: line 2: no ':' between the znode path and the offset: '/consumers/{group}/offsets/t/1'",
        f"Error: {bad}: line 3: '/brokers/ids/0' is not a /consumers/<group>/offsets/<topic>/<partition> path",
        f"Error: {bad}: line 4: partition 'x' is not a partition number",
        f"Error: {bad}: line 5: offset '1.5' is not a decimal number",
        f"Error: {bad}: 4 malformed line(s), nothing imported",
    ]
    assert zk.exists(f"/consumers/{group}") is None
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("g,t,0,1\ng,t,zero,1\n")
    result = run("import", "--zookeeper", cluster.connect, "--input-file", str(bad_csv), "--format", "csv")
    assert result.returncode == 1
    assert "line 2: partition and offset must be integers, got 'g,t,zero,1'" in result.stderr


def test_unreachable_zookeeper_missing_chroot_and_usage(cluster, zk):
    from tests.zookeeper_process import free_port

    down = run("export", "--zookeeper", f"127.0.0.1:{free_port()}", "--timeout", "1500")
    assert down.returncode == 1
    assert re.fullmatch(r"Error: Timed out waiting for connection to ZooKeeper at 127\.0\.0\.1:\d+ while in state: CONNECTING", down.stderr.strip())
    hosts = cluster.zookeeper.connect
    absent = f"{hosts}/no-chroot-{uuid.uuid4().hex[:6]}"
    missing = run("export", "--zookeeper", absent)
    assert (missing.returncode, missing.stderr.strip()) == (1, f"Error: ZooKeeper at {hosts} has no /{absent.split('/', 1)[1]}: no Kafka cluster uses the chroot of {absent}")
    assert run("export", "--zookeeper", f"{hosts}/a//b").stderr.strip().startswith("Error: Invalid chroot")
    usage = run("migrate", "--to", "kafka", *both(cluster))
    assert (usage.returncode, usage.stderr.strip()) == (2, "Error: One of --group or --all-groups is required")
    usage = run("migrate", "--group", "g", "--to", "elsewhere", *both(cluster))
    assert (usage.returncode, usage.stderr.strip()) == (2, "Error: --to must be one of zookeeper, kafka, got 'elsewhere'")


def test_all_groups_verify_agrees_with_execute_on_a_group_without_offsets(zookeeper_server, tmp_path):
    """A Kafka group that never committed (console-consumer without --group leaves one) is
    skipped by --execute --all-groups and so by --verify --all-groups: an empty group is in sync."""
    with running_cluster(zookeeper_server, tmp_path, "all-groups") as cluster, zk_session(cluster) as zk:
        topic = topic_with_records(cluster, 1, 5)
        migrated = name("g")
        store_in_zk(zk, migrated, topic, {0: 3})
        empty = name("console-consumer")
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": empty, "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe([topic])
            message = consumer.poll(30)
            assert message is not None and message.error() is None
        finally:
            consumer.close()  # leaves the group Empty, with no offsets committed
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        assert empty in {g.group_id for g in admin.list_consumer_groups().result(30).valid}

        done = run("migrate", "--all-groups", "--to", "kafka", "--execute", *both(cluster))
        assert done.returncode == 0, done.stderr
        assert kafka_offsets(cluster, migrated, topic, 1) == {0: 3}
        verified = run("migrate", "--all-groups", "--to", "kafka", "--verify", *both(cluster))
        assert (verified.returncode, verified.stderr) == (0, ""), verified
        assert verified.stdout == "The offsets of 1 group(s) are the same in zookeeper and kafka.\n"
        # Named explicitly, a group with no offsets on either side is in sync too.
        named = run("migrate", "--group", empty, "--verify", *both(cluster))
        assert (named.returncode, named.stderr) == (0, ""), named
