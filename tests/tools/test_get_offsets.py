"""``kcli get-offsets`` against a kcli broker and librdkafka's mock cluster: Kafka 3.9's
GetOffsetShell lines (``topic:partition:offset`` sorted by ``topic-partition`` text, unknown offsets
left out), filters and messages (reference section 6.1), with records written and offsets checked
through confluent-kafka. Also the admin client's DeleteRecords, seen through the earliest offset."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.timeout(120)

# Records per partition of the shared topic, with their timestamps (ms).
TIMESTAMPS = {0: [1000, 5000, 3000], 1: [2000, 2500], 2: []}


def name(label: str) -> str:
    return f"go-{label}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def make(admin: AdminClient, topic: str, partitions: int) -> None:
    admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=10)[topic].result(10)


def produce(bootstrap: str, topic: str, records: dict[int, list[int]]) -> None:
    """One batch per record, so every record's offset is a batch's last offset too."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, stamps in records.items():
        for ts in stamps:
            producer.produce(topic, b"value", partition=partition, timestamp=ts)
            assert producer.flush(10) == 0


@pytest.fixture(scope="module")
def filled(broker, admin) -> str:
    topic = name("filled")
    make(admin, topic, 3)
    produce(broker.bootstrap, topic, TIMESTAMPS)
    return topic


def test_latest_and_earliest(kcli, broker, filled):
    latest = kcli("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", filled)
    assert (latest.returncode, latest.stderr) == (0, "")
    assert latest.lines == [f"{filled}:{p}:{len(stamps)}" for p, stamps in TIMESTAMPS.items()]
    for spelling in ("-2", "earliest"):
        earliest = kcli("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", filled, "--time", spelling)
        assert earliest.lines == [f"{filled}:{p}:0" for p in TIMESTAMPS]
    assert kcli("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", filled, "--time", "-1").lines == latest.lines


def test_max_timestamp_and_timestamps(inproc, broker, filled):
    def offsets(time: str) -> list[str]:
        result = inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", filled, "--time", time)
        assert result.returncode == 0, result
        return result.lines

    # The offset of each partition's largest timestamp; the empty partition has none.
    expected_max = [f"{filled}:{p}:{stamps.index(max(stamps))}" for p, stamps in TIMESTAMPS.items() if stamps]
    assert offsets("-3") == offsets("max-timestamp") == expected_max
    # The first offset whose timestamp is at least the one asked for; partitions without one are left out.
    for asked in (0, 2200, 4000, 9000):
        expected = [f"{filled}:{p}:{i}" for p, stamps in TIMESTAMPS.items() for i in [next((i for i, ts in enumerate(stamps) if ts >= asked), None)] if i is not None]
        assert offsets(str(asked)) == expected, asked


def test_lines_sort_by_topic_partition_text(inproc, broker, admin):
    topic = name("sorted")
    make(admin, topic, 12)
    result = inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", topic)
    assert result.lines == [f"{topic}:{p}:0" for p in sorted(range(12), key=lambda p: f"{topic}-{p}")]
    assert result.lines[2] == f"{topic}:10:0"  # "-10" sorts before "-2", as in Kafka


def test_topic_partitions_and_partitions_filters(inproc, broker, admin, filled):
    other = name("other")
    make(admin, other, 4)
    base = ("get-offsets", "--bootstrap-server", broker.bootstrap)
    assert inproc(*base, "--topic", filled, "--partitions", "0,2").lines == [f"{filled}:0:3", f"{filled}:2:0"]
    assert inproc(*base, "--topic-partitions", f"{filled}:1").lines == [f"{filled}:1:2"]
    assert inproc(*base, "--topic-partitions", f"{other}:1-3").lines == [f"{other}:1:0", f"{other}:2:0"]
    assert inproc(*base, "--topic-partitions", f"{other}:2-,{filled}:-1").lines == [f"{filled}:0:3", f"{other}:2:0", f"{other}:3:0"]
    assert inproc(*base, "--topic-partitions", f"{other},{filled}:0").lines == [f"{filled}:0:3"] + [f"{other}:{p}:0" for p in range(4)]
    regex = inproc(*base, "--topic", f"{filled}|{other}")
    assert len(regex.lines) == 7
    assert inproc("get-offsets", "--broker-list", broker.bootstrap, "--topic", filled).lines == [f"{filled}:{p}:{len(s)}" for p, s in TIMESTAMPS.items()]


def test_internal_topics_are_included_unless_excluded(inproc, broker, filled):
    from kcli.client.network_client import NetworkClient
    from kcli.errors import KafkaError

    async def offsets_topic():
        async with NetworkClient(broker.bootstrap) as cluster:
            for _ in range(50):
                try:
                    return await cluster.coordinator("get-offsets-test")
                except KafkaError:
                    await asyncio.sleep(0.1)

    asyncio.run(asyncio.wait_for(offsets_topic(), 30))
    everything = inproc("get-offsets", "--bootstrap-server", broker.bootstrap)
    assert any(line.startswith("__consumer_offsets:") for line in everything.lines)
    assert any(line.startswith(f"{filled}:") for line in everything.lines)
    external = inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--exclude-internal-topics")
    assert not any(line.startswith("__consumer_offsets:") for line in external.lines)
    assert everything.lines == sorted(everything.lines, key=lambda line: "-".join(line.rsplit(":", 2)[:2]))


def test_delete_records_moves_the_earliest_offset(inproc, broker, admin):
    from kcli.client.admin import Admin, TopicPartition
    from kcli.client.network_client import NetworkClient

    topic = name("deleted")
    make(admin, topic, 2)
    produce(broker.bootstrap, topic, {0: [1, 2, 3, 4], 1: [1]})

    async def delete():
        async with NetworkClient(broker.bootstrap) as cluster:
            return await Admin(cluster).delete_records({TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 5})

    results = asyncio.run(asyncio.wait_for(delete(), 30))
    assert results[TopicPartition(topic, 0)].low_watermark == 3 and results[TopicPartition(topic, 0)].error is None
    assert results[TopicPartition(topic, 1)].error is not None  # past the high watermark
    earliest = inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--time", "earliest")
    assert earliest.lines == [f"{topic}:0:3", f"{topic}:1:0"]


def test_json_output(inproc, broker, filled):
    result = inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", filled, "--time", "max-timestamp", "--output", "json")
    objects = [json.loads(line) for line in result.lines]
    assert [(o["topic"], o["partition"], o["offset"], o["timestamp"]) for o in objects] == [
        (filled, p, stamps.index(max(stamps)), max(stamps)) for p, stamps in TIMESTAMPS.items() if stamps
    ]
    assert all(o["leader_epoch"] == 0 for o in objects)
    latest = [json.loads(line) for line in inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", filled, "--output", "json").lines]
    assert [(o["partition"], o["offset"], o["timestamp"]) for o in latest] == [(p, len(s), None) for p, s in TIMESTAMPS.items()]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--topic", "x"), 2, "Missing required option(s) [bootstrap-server]"),
        (("--bootstrap-server", "nohost", "--topic", "x"), 2, "Please provide valid host:port like host1:9091,host2:9092"),
        (("--bootstrap-server", "h:1", "--topic-partitions", "x", "--topic", "x"), 2, "--topic-partitions cannot be used with --topic or --partitions"),
        (("--bootstrap-server", "h:1", "--time", "yesterday"), 2,
         "Malformed time argument yesterday. Please use -1 or latest / -2 or earliest / -3 or max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long format timestamp"),
        (("--bootstrap-server", "h:1", "--partitions", "1,x"), 2, "--partitions expects a comma separated list of numeric partition ids, but received: 1,x"),
        (("--bootstrap-server", "h:1", "--topic-partitions", "t:1-2-3"), 2, "Invalid rule specification: t:1-2-3"),
    ],
)
def test_argument_errors(inproc, args, code, message):
    result = inproc("get-offsets", *args)
    assert (result.returncode, result.stdout) == (code, "")
    assert result.stderr.splitlines() == [f"Error occurred: {message}"]


def test_no_match_and_unsupported_specs(inproc, broker, filled):
    nothing = inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", "no-such-topic-.*")
    assert nothing.returncode == 1
    assert nothing.stderr.splitlines() == ["Error occurred: Could not match any topic-partitions with the specified filters"]
    tiered = inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", filled, "--time", "latest-tiered")
    assert tiered.returncode == 1 and tiered.stdout == ""
    lines = tiered.stderr.splitlines()
    assert len(lines) == len(TIMESTAMPS)
    for line, p in zip(lines, TIMESTAMPS):
        assert line.startswith(f"Skip getting offsets for topic-partition {filled}-{p} due to error: ")
    local = inproc("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", filled, "--time", "-4")
    assert local.lines == [f"{filled}:{p}:0" for p in TIMESTAMPS]  # no remote tier: the log start


def test_against_the_mock_cluster(kcli, mock_cluster):
    topic = name("mock")
    produce(mock_cluster.bootstrap, topic, {0: [1, 2, 3], 1: [4], 2: [], 3: [5, 6]})
    latest = kcli("get-offsets", "--bootstrap-server", mock_cluster.bootstrap, "--topic", topic)
    assert (latest.returncode, latest.lines) == (0, [f"{topic}:0:3", f"{topic}:1:1", f"{topic}:2:0", f"{topic}:3:2"]), latest
    earliest = kcli("get-offsets", "--bootstrap-server", mock_cluster.bootstrap, "--topic", topic, "--time", "earliest")
    assert earliest.lines == [f"{topic}:{p}:0" for p in range(4)]
