"""``kcli e2e-latency`` against a kcli broker: Kafka 3.9's EndToEndLatency arguments, lines and
messages (tools/src/main/java/org/apache/kafka/tools/EndToEndLatency.java), with the records it
wrote read back through confluent-kafka."""

from __future__ import annotations

import re
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

pytestmark = pytest.mark.timeout(180)

USAGE = (
    "USAGE: java org.apache.kafka.tools.EndToEndLatency broker_list topic num_messages producer_acks "
    "message_size_bytes [optional] properties_file"
)
# "i\t<elapsed ms as Java's Double.toString>"
PROGRESS = re.compile(r"\d+\t\d+\.\d+(E-?\d+)?")
AVERAGE = re.compile(r"Avg latency: \d+\.\d{4} ms")
PERCENTILES = re.compile(r"Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)")


def read_back(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, low)])
        values = []
        while len(values) < high - low:
            message = consumer.poll(10)
            assert message is not None and message.error() is None
            values.append(message.value())
        return values
    finally:
        consumer.close()


def test_a_missing_topic_is_created_and_every_record_measured(kcli, broker):
    topic = f"e2e-{uuid.uuid4().hex[:8]}"
    result = kcli("e2e-latency", broker.bootstrap, topic, "3", "1", "20")
    assert (result.returncode, result.stderr) == (0, ""), result
    lines = result.lines
    assert lines[0] == f'Topic "{topic}" does not exist. Will create topic with 1 partition(s) and replication factor = 1'
    assert lines[1].startswith("0\t") and PROGRESS.fullmatch(lines[1]), lines  # record 0 is the only 1000th
    assert AVERAGE.fullmatch(lines[2]), lines
    low, mid, high = map(int, PERCENTILES.fullmatch(lines[3]).groups())
    assert low <= mid <= high
    assert len(lines) == 4
    values = read_back(broker.bootstrap, topic)
    assert len(values) == 3
    for value in values:  # randomBytesOfLen: one upper-case letter, message_size_bytes times
        assert len(value) == 20 and len(set(value)) == 1 and 65 <= value[0] <= 90


def test_a_progress_line_every_1000_records(kcli, broker):
    topic = f"e2e-{uuid.uuid4().hex[:8]}"
    result = kcli("e2e-latency", broker.bootstrap, topic, "1001", "all", "1", timeout=170)
    assert result.returncode == 0, result
    progress = [line for line in result.lines[1:] if PROGRESS.fullmatch(line)]
    assert [line.split("\t")[0] for line in progress] == ["0", "1000"]
    assert AVERAGE.fullmatch(result.lines[-2]) and PERCENTILES.fullmatch(result.lines[-1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("localhost:1", "t", "10", "1"), USAGE),
        (("localhost:1", "t", "10", "1", "20", "p.properties", "extra"), USAGE),
        (("localhost:1", "t", "10", "0", "20"), "Latency testing requires synchronous acknowledgement. Please use 1 or all"),
        (("localhost:1", "t", "ten", "1", "20"), 'For input string: "ten"'),
    ],
)
def test_arguments_kafka_refuses(inproc, args, message):
    result = inproc("e2e-latency", *args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"Error: {message}"
