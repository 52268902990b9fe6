"""``kcli get-offsets --count`` against a real kcli broker, through Fetch and from the segment
files of its log dir: a compacted topic, a topic after DeleteRecords and a transactional topic with
an aborted transaction, each count checked against the records confluent-kafka's consumer reads
(read_committed, and read_uncommitted for --isolation-level read_uncommitted)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess
from conftest import BROKER_OVERRIDES

pytestmark = pytest.mark.timeout(180)
TIMEOUT = 30.0
KEYS = [f"key-{i}".encode() for i in range(10)]


def start_broker(log_dir: Path) -> BrokerProcess:
    return BrokerProcess(log_dir, {**BROKER_OVERRIDES, "log.cleaner.backoff.ms": "100"}).start()


@pytest.fixture(scope="module")
def cleaning_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = start_broker(tmp_path_factory.mktemp("broker"))
    yield process
    process.stop()


def create(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])[topic].result(TIMEOUT)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]], *, partition: int = 0, one_batch: bool = False) -> list[int]:
    """The records' offsets; each acknowledged before the next is sent, or all in one batch."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000 if one_batch else 0})
    offsets: list[int] = []

    def delivered(err, msg) -> None:
        if err is not None:
            raise KafkaException(err)
        offsets.append(msg.offset())

    for key, value in records:
        producer.produce(topic, value, key, partition=partition, on_delivery=delivered)
        if not one_batch:
            assert producer.flush(TIMEOUT) == 0
    assert producer.flush(TIMEOUT) == 0
    return offsets


def consumed(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed") -> dict[int, int]:
    """How many records a consumer of ``isolation`` reads from each partition, start to end."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"counter-{time.monotonic_ns()}", "isolation.level": isolation,
        "enable.partition.eof": True, "enable.auto.commit": False,
    })
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    counts = dict.fromkeys(range(partitions), 0)
    pending = set(range(partitions))
    deadline = time.monotonic() + TIMEOUT
    try:
        while pending and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                pending.discard(message.partition())
                continue
            counts[message.partition()] += 1
    finally:
        consumer.close()
    assert not pending, f"did not reach the end of partitions {sorted(pending)}"
    return counts


def offsets_span(bootstrap: str, topic: str, partition: int = 0) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "span"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT)
    finally:
        consumer.close()
    return high - low


def cleaned_past(log_dir: Path, topic: str, offset: int) -> None:
    """Wait until cleaner-offset-checkpoint has partition 0 of ``topic`` cleaned past ``offset``."""
    deadline = time.monotonic() + 60
    while True:
        path = log_dir / "cleaner-offset-checkpoint"
        lines = path.read_text().splitlines()[2:] if path.exists() else []
        if any(line.split()[:2] == [topic, "0"] and int(line.split()[2]) > offset for line in lines):
            return
        assert time.monotonic() < deadline, f"{topic} was not cleaned past {offset}"
        time.sleep(0.1)


# -- the three topics ---------------------------------------------------------------------------


def compacted_topic(broker: BrokerProcess, topic: str) -> None:
    """Keys updated five times, one tombstone-free key of filler that rolls segments, cleaned."""
    create(broker.bootstrap, topic, **{"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01"})
    updates = [(key, f"{key.decode()}-v{version}".encode()) for version in range(5) for key in KEYS]
    offsets = produce(broker.bootstrap, topic, updates)
    produce(broker.bootstrap, topic, [(f"filler-{i}".encode(), b"f" * 200) for i in range(30)])
    cleaned_past(broker.log_dir, topic, offsets[-1])


def deleted_topic(broker: BrokerProcess, topic: str, tmp_path: Path, kcli) -> None:
    """Ten records in one batch, then five one by one; DeleteRecords to offset 4, inside the batch."""
    create(broker.bootstrap, topic)
    assert produce(broker.bootstrap, topic, [(None, f"b{i}".encode()) for i in range(10)], one_batch=True) == list(range(10))
    produce(broker.bootstrap, topic, [(None, f"s{i}".encode()) for i in range(5)])
    plan = tmp_path / f"{topic}.json"
    plan.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 4}], "version": 1}))
    result = kcli("delete-records", "--bootstrap-server", broker.bootstrap, "--offset-json-file", str(plan))
    assert result.returncode == 0, result


def transactional_topic(broker: BrokerProcess, topic: str) -> None:
    """Over two partitions: committed, aborted, committed transactions, and plain records."""
    create(broker.bootstrap, topic, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"{topic}-txn", "linger.ms": 5})
    producer.init_transactions(TIMEOUT)
    for partition_counts, commit in (({0: 5, 1: 2}, True), ({0: 3, 1: 4}, False), ({0: 2, 1: 1}, True)):
        producer.begin_transaction()
        for partition, n in partition_counts.items():
            for i in range(n):
                producer.produce(topic, f"{commit}-{i}".encode(), partition=partition)
        producer.flush(TIMEOUT)
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.abort_transaction(TIMEOUT)
    produce(broker.bootstrap, topic, [(None, b"plain")] * 3, partition=1)


def count(kcli, *args: str) -> dict[str, int]:
    """``get-offsets --count``'s lines as {"topic:partition": n, "total": n}."""
    result = kcli("get-offsets", "--count", *args)
    assert (result.returncode, result.stderr) == (0, ""), result
    lines = dict(line.rsplit(":", 1) for line in result.lines)
    return {key: int(value) for key, value in lines.items()}


def lines_of(topic: str, counts: dict[int, int]) -> dict[str, int]:
    return {**{f"{topic}:{p}": n for p, n in counts.items()}, "total": sum(counts.values())}


# -- through Fetch ------------------------------------------------------------------------------


def test_a_compacted_topic_counts_what_a_consumer_reads_not_the_offset_span(kcli, cleaning_broker, unique_topic):
    topic = unique_topic()
    compacted_topic(cleaning_broker, topic)
    read = consumed(cleaning_broker.bootstrap, topic, 1)
    assert read[0] < offsets_span(cleaning_broker.bootstrap, topic)
    assert count(kcli, "--bootstrap-server", cleaning_broker.bootstrap, "--topic", topic) == lines_of(topic, read)


def test_after_delete_records_inside_a_batch_only_the_records_from_the_start_count(kcli, cleaning_broker, unique_topic, tmp_path):
    topic = unique_topic()
    deleted_topic(cleaning_broker, topic, tmp_path, kcli)
    read = consumed(cleaning_broker.bootstrap, topic, 1)
    assert read == {0: 11}
    assert count(kcli, "--bootstrap-server", cleaning_broker.bootstrap, "--topic", topic) == lines_of(topic, read)


def test_a_transactional_topic_counts_committed_records_and_with_read_uncommitted_the_aborted_too(kcli, cleaning_broker, unique_topic):
    topic = unique_topic()
    transactional_topic(cleaning_broker, topic)
    committed = consumed(cleaning_broker.bootstrap, topic, 2, "read_committed")
    uncommitted = consumed(cleaning_broker.bootstrap, topic, 2, "read_uncommitted")
    assert committed == {0: 7, 1: 6} and uncommitted == {0: 10, 1: 10}
    assert count(kcli, "--bootstrap-server", cleaning_broker.bootstrap, "--topic", topic) == lines_of(topic, committed)
    assert count(kcli, "--bootstrap-server", cleaning_broker.bootstrap, "--topic", topic, "--isolation-level", "read_uncommitted") == lines_of(topic, uncommitted)

    result = kcli("get-offsets", "--count", "--bootstrap-server", cleaning_broker.bootstrap, "--topic", topic, "--output", "json")
    objects = [json.loads(line) for line in result.lines]
    assert [(o["partition"], o["count"], o["committed"], o["aborted"], o["open"], o["control_batches"]) for o in objects[:2]] == [
        (0, 7, 7, 3, 0, 3),
        (1, 6, 6, 4, 0, 3),
    ]
    assert objects[2] == {"total": 13, "aborted": 7, "open": 0}


# -- from the segment files ---------------------------------------------------------------------


def test_the_segment_files_of_a_stopped_broker_count_as_its_consumers_read(kcli, unique_topic, tmp_path):
    broker = start_broker(tmp_path / "broker")
    try:
        compacted, deleted, transactional = unique_topic("c"), unique_topic("d"), unique_topic("t")
        compacted_topic(broker, compacted)
        deleted_topic(broker, deleted, tmp_path, kcli)
        transactional_topic(broker, transactional)
        expected = {
            **lines_of(compacted, consumed(broker.bootstrap, compacted, 1)),
            **lines_of(deleted, consumed(broker.bootstrap, deleted, 1)),
            **lines_of(transactional, consumed(broker.bootstrap, transactional, 2)),
        }
        uncommitted = consumed(broker.bootstrap, transactional, 2, "read_uncommitted")
    finally:
        assert broker.stop() == 0
    expected["total"] = sum(n for key, n in expected.items() if key != "total")
    pattern = "|".join((compacted, deleted, transactional))
    assert count(kcli, "--log-dirs", str(broker.log_dir), "--topic", pattern) == expected
    assert count(kcli, "--log-dirs", str(broker.log_dir), "--topic", transactional, "--isolation-level", "read_uncommitted") == lines_of(transactional, uncommitted)


def test_count_arguments_are_checked(inproc, tmp_path):
    cases = [
        (["--count", "--bootstrap-server", "h:1", "--time", "-2"], "--time cannot be used with --count"),
        (["--count", "--bootstrap-server", "h:1", "--log-dirs", str(tmp_path)], "--log-dirs cannot be used with --bootstrap-server or --broker-list"),
        (["--bootstrap-server", "h:1", "--log-dirs", str(tmp_path)], "--log-dirs can only be used with --count"),
        (["--bootstrap-server", "h:1", "--isolation-level", "read_committed"], "--isolation-level can only be used with --count"),
        (["--count", "--bootstrap-server", "h:1", "--isolation-level", "dirty"], "--isolation-level must be read_committed or read_uncommitted, not dirty"),
        (["--count"], "Missing required option(s) [bootstrap-server]"),
    ]
    for args, message in cases:
        result = inproc("get-offsets", *args)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"Error occurred: {message}\n"), args
    missing = inproc("get-offsets", "--count", "--log-dirs", str(tmp_path / "nothing"))
    assert (missing.returncode, missing.stderr) == (1, f"Error occurred: {tmp_path / 'nothing'} is not a directory\n")


def test_through_fetch_from_another_kafka_implementation(kcli, mock_cluster, unique_topic):
    """librdkafka's mock cluster: its own Fetch answers, gzip batches of several records."""
    topic = unique_topic()
    producer = Producer({"bootstrap.servers": mock_cluster.bootstrap, "linger.ms": 200, "compression.type": "gzip"})
    for partition, n in ((0, 7), (1, 1), (3, 12)):
        for i in range(n):
            producer.produce(topic, f"v{i}".encode(), partition=partition)
    assert producer.flush(TIMEOUT) == 0
    read = consumed(mock_cluster.bootstrap, topic, 4)
    assert read == {0: 7, 1: 1, 2: 0, 3: 12}
    assert count(kcli, "--bootstrap-server", mock_cluster.bootstrap, "--topic", topic) == lines_of(topic, read)


def test_a_corrupt_segment_is_one_line_naming_the_file(inproc, tmp_path):
    from kcli.storage import records as rec

    partition = tmp_path / "logs" / "t-0"
    partition.mkdir(parents=True)
    data = bytearray(rec.build_batch([rec.NewRecord(None, b"v", 1)] * 3))
    data[8:12] = (20).to_bytes(4, "big")  # a batchLength shorter than any batch header
    segment = partition / "00000000000000000000.log"
    segment.write_bytes(bytes(data))
    result = inproc("get-offsets", "--count", "--log-dirs", str(tmp_path / "logs"))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"Error occurred: {segment}: record batch at position 0 has a batchLength of 20, below the header's\n"
