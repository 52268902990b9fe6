"""kafka-python's transactional producer against a real kcli broker: commit and abort across
partitions, and offsets sent to the transaction, read back by kafka-python's and confluent-kafka's
read_committed consumers."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from test_confluent_kafka_transactions import TIMEOUT, create_topics, read_all


def kafka_python_read(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, isolation_level=isolation,
                             fetch_max_wait_ms=100, request_timeout_ms=30000)
    assignment = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(assignment)
    consumer.seek_to_beginning()
    ends = consumer.end_offsets(assignment)  # read_committed: the last stable offsets
    values = []
    deadline = time.monotonic() + TIMEOUT
    while any(consumer.position(tp) < ends[tp] for tp in assignment) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            values.extend(r.value for r in records)
    consumer.close()
    return values


def test_kafka_python_commits_and_aborts(broker, unique_topic):
    topic, group = unique_topic(), unique_topic("group")
    create_topics(broker.bootstrap, {topic: 2})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=unique_topic("txn"), request_timeout_ms=20000)
    producer.init_transactions()
    committed = []
    for round_, (commit, offset) in enumerate([(True, 5), (False, 50), (True, 7), (False, 60)]):
        producer.begin_transaction()
        for i in range(10):
            value = f"{'c' if commit else 'a'}{round_}-{i}".encode()
            producer.send(topic, value=value, partition=i % 2)
            if commit:
                committed.append(value)
        producer.flush()
        producer.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)}, group)
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
    producer.close()
    assert sorted(kafka_python_read(broker.bootstrap, topic, 2, "read_committed")) == sorted(committed)
    assert sorted(read_all(broker.bootstrap, {topic: 2}, "read_committed")) == sorted(committed)
    assert len(kafka_python_read(broker.bootstrap, topic, 2, "read_uncommitted")) == 40
    # The offsets of the committed transactions were committed with them; the aborted one's were not.
    reader = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    assert reader.committed(TopicPartition(topic, 0)) == 7
    reader.close()
