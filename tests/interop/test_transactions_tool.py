"""``kcli transactions`` (Kafka 3.9's kafka-transactions.sh) and ``kcli dump-log-segments`` on
the transactions of a real kcli broker: an ongoing transaction of a confluent-kafka producer
killed with SIGKILL, listed, described and aborted; a hanging transaction (a transactional write
its coordinator never heard of, with partition verification off) found by ``find-hanging`` and
aborted by its start offset; the markers and ``.txnindex`` entries those aborts leave, as Kafka's
DumpLogSegments prints them; and Kafka's error lines.

Expected tables follow Kafka's ToolsUtils.prettyPrintTable: a header row, then one row per item,
each cell padded with spaces to the widest cell of its column and followed by a tab."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from broker_process import BrokerProcess
from conftest import start_broker
from test_confluent_kafka_transactions import TIMEOUT, create_topics
from wire_client import WireClient, code

from kcli.storage.records import NewRecord, build_batch

LIST = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE = [
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState", "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
]
PRODUCERS = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"]
HANGING = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)"]
DEBUG_HINT = ". Enable debug logging for additional detail."

KILLED_PRODUCER = textwrap.dedent(
    """
    import sys, time
    from confluent_kafka import Producer
    bootstrap, transactional_id, topic = sys.argv[1:4]
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in (b"x0", b"x1", b"x2"):
        producer.produce(topic, value=value, partition=1)
    assert producer.flush(30) == 0
    print("open", flush=True)
    time.sleep(120)
    """
)


def kcli(bootstrap: str | None, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kcli", "transactions"]
    if bootstrap is not None:
        command += ["--bootstrap-server", bootstrap]
    result = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def table(result: subprocess.CompletedProcess, headers: list[str]) -> list[list[str]]:
    """The rows of a table the tool printed, after checking Kafka's layout: the given header,
    every cell of a column padded to one width, and a tab after every cell."""
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[-1] == "", "the output ends with a line end"
    cells = [line.split("\t") for line in lines[:-1]]
    for row in cells:
        assert len(row) == len(headers) + 1 and row[-1] == "", f"not one tab after each of {len(headers)} cells: {row}"
    widths = [max(len(row[i].rstrip(" ")) for row in cells) for i in range(len(headers))]
    for row in cells:
        assert [len(cell) for cell in row[:-1]] == widths, f"cells not padded to their column's width: {row}"
    assert [cell.rstrip(" ") for cell in cells[0][:-1]] == headers
    return [[cell.rstrip(" ") for cell in row[:-1]] for row in cells[1:]]


def failure(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    return result.stderr


@pytest.fixture
def killed_producer(broker, unique_topic) -> Iterator[tuple[str, str]]:
    """(topic, transactional id) of a producer killed with an open transaction on partition 1."""
    topic, transactional_id = unique_topic(), unique_topic("txn")
    create_topics(broker.bootstrap, {topic: 2})
    process = subprocess.Popen([sys.executable, "-c", KILLED_PRODUCER, broker.bootstrap, transactional_id, topic], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "open"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(TIMEOUT)
        yield topic, transactional_id
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(TIMEOUT)
        process.stdout.close()


def test_list_describe_and_describe_producers_show_an_open_transaction(broker, killed_producer):
    topic, transactional_id = killed_producer
    before = int(time.time() * 1000)

    listed = table(kcli(broker.bootstrap, "list"), LIST)
    ours = [row for row in listed if row[0] == transactional_id]
    assert len(ours) == 1
    _, coordinator, producer_id, state = ours[0]
    assert (coordinator, state) == ("0", "Ongoing")
    # --duration-filter (ListTransactions v1): only transactions open longer than it.
    assert transactional_id in [row[0] for row in table(kcli(broker.bootstrap, "list", "--duration-filter", "0"), LIST)]
    assert transactional_id not in [row[0] for row in table(kcli(broker.bootstrap, "list", "--duration-filter", "3600000"), LIST)]

    [row] = table(kcli(broker.bootstrap, "describe", "--transactional-id", transactional_id), DESCRIBE)
    assert row[:6] == ["0", transactional_id, producer_id, "0", "Ongoing", "60000"]  # librdkafka's transaction.timeout.ms
    start, duration = int(row[6]), int(row[7])
    assert start <= before and 0 <= duration
    assert row[8] == f"{topic}-1"

    [producer] = table(kcli(broker.bootstrap, "describe-producers", "--topic", topic, "--partition", "1"), PRODUCERS)
    # No marker yet: no coordinator epoch (-1); sequences 0..2; the transaction starts at offset 0.
    assert producer[:4] == [producer_id, "0", "-1", "2"] and producer[5] == "0"
    assert table(kcli(broker.bootstrap, "describe-producers", "--topic", topic, "--partition", "0", "--broker-id", "0"), PRODUCERS) == []

    # Its coordinator still expects to write the marker: not hanging, as Kafka judges it.
    assert table(kcli(broker.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"), HANGING) == []


def test_abort_by_producer_id_and_epochs_writes_an_abort_marker_dump_log_segments_shows(broker, killed_producer):
    topic, _transactional_id = killed_producer
    [producer] = table(kcli(broker.bootstrap, "describe-producers", "--topic", topic, "--partition", "1"), PRODUCERS)
    producer_id, epoch = producer[0], producer[1]

    result = kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "1", "--producer-id", producer_id,
                  "--producer-epoch", epoch, "--coordinator-epoch", "-1")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    [after] = table(kcli(broker.bootstrap, "describe-producers", "--topic", topic, "--partition", "1"), PRODUCERS)
    assert after[0] == producer_id and after[2] == "0" and after[5] == "None"

    directory = broker.log_dir / f"{topic}-1"
    dumped = subprocess.run(
        [sys.executable, "-m", "kcli", "dump-log-segments", "--print-data-log", "--files",
         f"{directory / '00000000000000000000.log'},{directory / '00000000000000000000.txnindex'}"],
        capture_output=True, text=True, timeout=60,
    )
    assert dumped.returncode == 0, dumped.stderr
    lines = dumped.stdout.splitlines()
    # Kafka 3.9's DumpLogSegments: the marker's batch is transactional and control; its record
    # line names the marker (no key or payload, even with --print-data-log).
    assert re.fullmatch(
        rf"baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: {producer_id} producerEpoch: {epoch} "
        r"partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: \d+ "
        r"CreateTime: \d+ size: \d+ magic: 2 compresscodec: none crc: \d+ isvalid: true",
        lines[-4],
    ), lines[-4]
    assert re.fullmatch(r"\| offset: 3 CreateTime: \d+ keySize: 4 valueSize: 6 sequence: -1 headerKeys: \[\] endTxnMarker: ABORT coordinatorEpoch: 0", lines[-3]), lines[-3]
    assert lines[-2] == f"Dumping {directory / '00000000000000000000.txnindex'}"
    assert lines[-1] == f"version: 0 producerId: {producer_id} firstOffset: 0 lastOffset: 3 lastStableOffset: 4"
    payloads = [re.fullmatch(r"\| offset: (\d) CreateTime: \d+ keySize: -1 valueSize: 2 sequence: (\d) headerKeys: \[\] payload: (x\d)", line) for line in lines if "payload:" in line]
    assert [m.groups() if m else None for m in payloads] == [("0", "0", "x0"), ("1", "1", "x1"), ("2", "2", "x2")]


def test_dump_log_segments_shows_a_commit_marker_with_its_coordinator_epoch(broker, unique_topic):
    from test_confluent_kafka_transactions import transactional_producer

    topic = unique_topic()
    create_topics(broker.bootstrap, {topic: 1})
    producer = transactional_producer(broker.bootstrap, unique_topic("txn"))
    producer.begin_transaction()
    producer.produce(topic, value=b"kept", partition=0)
    producer.commit_transaction(TIMEOUT)
    directory = broker.log_dir / f"{topic}-0"
    dumped = subprocess.run(
        [sys.executable, "-m", "kcli", "dump-log-segments", "--files", str(directory / "00000000000000000000.log")],
        capture_output=True, text=True, timeout=60,
    )
    assert dumped.returncode == 0, dumped.stderr
    batches = [line for line in dumped.stdout.splitlines() if line.startswith("baseOffset: ")]
    assert [("isTransactional: true" in b, "isControl: true" in b) for b in batches] == [(True, False), (True, True)]
    # Without --print-data-log or --deep-iteration, Kafka prints batch lines only: no marker line.
    assert "endTxnMarker" not in dumped.stdout
    deep = subprocess.run(
        [sys.executable, "-m", "kcli", "dump-log-segments", "--deep-iteration", "--files", str(directory / "00000000000000000000.log")],
        capture_output=True, text=True, timeout=60,
    )
    assert re.search(r"^\| offset: 1 CreateTime: \d+ keySize: 4 valueSize: 6 sequence: -1 headerKeys: \[\] endTxnMarker: COMMIT coordinatorEpoch: 0$", deep.stdout, re.M), deep.stdout
    assert not (directory / "00000000000000000000.txnindex").exists() or (directory / "00000000000000000000.txnindex").stat().st_size == 0


# -- a hanging transaction ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unverified_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker that takes transactional writes without asking the coordinator (Kafka's
    transaction.partition.verification.enable=false), so a write can open a transaction no
    coordinator knows: a hanging transaction."""
    process = start_broker(tmp_path_factory.mktemp("unverified"), {"transaction.partition.verification.enable": "false"})
    yield process
    process.stop()


def hanging_write(broker: BrokerProcess, topic: str, minutes_ago: int) -> tuple[int, int, int]:
    """A committed plain record, then a transactional write of a producer id no transactional
    id owns: (producer id, epoch, the transaction's first offset)."""
    with WireClient("127.0.0.1", broker.port) as client:
        assert code(client.create_topic(topic, 1).error_code) == 0
        assert code(client.produce(topic, 0, build_batch([NewRecord(None, b"plain", int(time.time() * 1000))])).error_code) == 0
        init = client.call(22, 4, {"transactional_id": None, "transaction_timeout_ms": -1, "producer_id": -1, "producer_epoch": -1})
        assert code(init.error_code) == 0
        producer_id, epoch = init.producer_id, init.producer_epoch
        written = int(time.time() * 1000) - minutes_ago * 60_000
        batch = build_batch([NewRecord(None, b"hanging", written)], producer_id=producer_id, producer_epoch=epoch, base_sequence=0, transactional=True)
        answer = client.produce(topic, 0, batch)
        assert code(answer.error_code) == 0, answer
        return producer_id, epoch, answer.base_offset


def last_stable_offset(broker: BrokerProcess, topic: str) -> int:
    with WireClient("127.0.0.1", broker.port) as client:
        answer = client.call(2, 7, {"replica_id": -1, "isolation_level": 1, "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
        return answer.topics[0].partitions[0].offset


def test_find_hanging_finds_a_transaction_no_coordinator_knows_and_abort_by_start_offset_ends_it(unverified_broker, unique_topic):
    broker = unverified_broker
    topic = unique_topic()
    producer_id, epoch, start = hanging_write(broker, topic, minutes_ago=20)
    assert start == 1 and last_stable_offset(broker, topic) == 1

    expected = [topic, "0", str(producer_id), str(epoch), "-1", "1"]
    for scope in (["--topic", topic], ["--topic", topic, "--partition", "0"], ["--broker-id", "0"]):
        rows = [row for row in table(kcli(broker.bootstrap, "find-hanging", *scope), HANGING) if row[0] == topic]
        assert len(rows) == 1, scope
        assert rows[0][:6] == expected
        assert int(rows[0][7]) == 20  # Duration(min): whole minutes since the write's timestamp
    # Open for 20 minutes: within a 30-minute transaction timeout, so not yet suspect.
    assert table(kcli(broker.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "30"), HANGING) == []

    missing = failure(kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0"))
    assert missing == f"Could not find any open transactions starting at offset 0 on partition {topic}-0\n"

    result = kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", str(start))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert table(kcli(broker.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"), HANGING) == []
    assert last_stable_offset(broker, topic) == 3  # past the hanging record and its ABORT marker

    # The abort is done: the same start offset is no open transaction any more.
    again = failure(kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", str(start)))
    assert again == f"Could not find any open transactions starting at offset {start} on partition {topic}-0\n"


def test_an_abort_with_a_stale_producer_epoch_is_kafkas_error_line(unverified_broker, unique_topic):
    broker = unverified_broker
    topic = unique_topic()
    producer_id, epoch, _start = hanging_write(broker, topic, minutes_ago=0)
    result = kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--producer-id", str(producer_id),
                  "--producer-epoch", str(epoch - 1), "--coordinator-epoch", "0")
    spec = f"AbortTransactionSpec(topicPartition={topic}-0, producerId={producer_id}, producerEpoch={epoch - 1}, coordinatorEpoch=0)"
    assert failure(result) == f"Failed to abort transaction {spec}: WriteTxnMarkers request with {spec} failed due an invalid producer epoch{DEBUG_HINT}\n"


# -- bad input -----------------------------------------------------------------------------------------


def test_bad_input_is_kafkas_one_line_and_a_non_zero_exit(broker, unique_topic):
    topic = unique_topic()
    create_topics(broker.bootstrap, {topic: 1})
    assert failure(kcli(broker.bootstrap, "describe", "--transactional-id", "no-such-id")) == (
        "Failed to describe transaction state of transactional-id `no-such-id`: DescribeTransactions request for "
        f"transactionalId `no-such-id` failed because the ID could not be found{DEBUG_HINT}\n"
    )
    assert failure(kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0")) == (
        "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or with "
        "--producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)\n"
    )
    assert failure(kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--producer-id", "5")) == "Missing required argument --producer-epoch\n"
    assert failure(kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--producer-id", "5", "--producer-epoch", "0")) == (
        "Missing required argument --coordinator-epoch\n"
    )
    assert failure(kcli(broker.bootstrap, "find-hanging")) == (
        "The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search\n"
    )
    assert failure(kcli(broker.bootstrap, "find-hanging", "--partition", "0", "--broker-id", "0")) == "The --partition argument requires --topic to be provided\n"
    unknown = failure(kcli(broker.bootstrap, "describe-producers", "--topic", "no-such-topic", "--partition", "0"))
    assert unknown.startswith("Failed to describe producers for partition no-such-topic-0 on leader: ") and unknown.endswith(DEBUG_HINT + "\n")
    assert unknown.count("\n") == 1

    # A wrong command line is a usage error (exit 2), as for every kcli tool.
    missing_server = kcli(None, "list")
    assert missing_server.returncode == 2 and "argument --bootstrap-server is required" in missing_server.stderr
    missing_topic = kcli(broker.bootstrap, "describe-producers", "--partition", "0")
    assert missing_topic.returncode == 2 and "argument --topic is required" in missing_topic.stderr
    out_of_range = kcli(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--producer-id", "1", "--producer-epoch", "40000", "--coordinator-epoch", "0")
    assert out_of_range.returncode == 2 and "int16" in out_of_range.stderr


def test_output_json_writes_one_object_per_row(broker, killed_producer):
    topic, transactional_id = killed_producer
    import json

    result = kcli(broker.bootstrap, "--output", "json", "describe", "--transactional-id", transactional_id)
    assert result.returncode == 0, result.stderr
    [row] = [json.loads(line) for line in result.stdout.splitlines()]
    assert list(row) == DESCRIBE
    assert row["TransactionalId"] == transactional_id and row["TransactionState"] == "Ongoing"
    assert row["TopicPartitions"] == f"{topic}-1" and isinstance(row["ProducerId"], int)


def test_describe_lists_the_partitions_in_the_order_of_kafkas_hash_set(broker):
    """TransactionDescription.topicPartitions is a java.util.HashSet: for topic "t" the hash
    codes 31 * (31 + p) + "t".hashCode() are 1077, 1108 and 1139 for partitions 0, 1 and 2,
    which fall in buckets 5, 4 and 3 of its 16: Kafka prints t-2,t-1,t-0."""
    from test_confluent_kafka_transactions import transactional_producer

    create_topics(broker.bootstrap, {"t": 3})
    producer = transactional_producer(broker.bootstrap, "hash-set-order")
    producer.begin_transaction()
    for partition in range(3):
        producer.produce("t", value=b"v", partition=partition)
    producer.flush(TIMEOUT)
    try:
        [row] = table(kcli(broker.bootstrap, "describe", "--transactional-id", "hash-set-order"), DESCRIBE)
        assert row[8] == "t-2,t-1,t-0"
    finally:
        producer.abort_transaction(TIMEOUT)


def test_find_hanging_truncates_durations_toward_zero_as_java_does(unverified_broker, unique_topic):
    """A write stamped 3 minutes ahead, searched with a negative timeout: Duration(min) is
    TimeUnit.MILLISECONDS.toMinutes of a little under -3 minutes, which Java truncates to -2."""
    broker = unverified_broker
    topic = unique_topic()
    producer_id, _epoch, _start = hanging_write(broker, topic, minutes_ago=-3)
    [row] = table(kcli(broker.bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "-10"), HANGING)
    assert row[2] == str(producer_id) and row[7] == "-2"
