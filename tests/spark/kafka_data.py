"""Topics and records for the Spark tests, made with confluent-kafka (an independent client)."""

from __future__ import annotations

BROKER_OVERRIDES = {
    "broker.id": "0",
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=30).values():
        future.result(timeout=30)


def produce(bootstrap: str, topic: str, records: list[dict]) -> None:
    """Send ``records`` (dicts of value, key, headers, partition, timestamp) with confluent-kafka
    and wait for every acknowledgement."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    failures = []

    def delivered(err, _msg) -> None:
        if err is not None:
            failures.append(err)

    for record in records:
        kwargs = {k: v for k, v in record.items() if k in ("key", "partition", "timestamp", "headers") and v is not None}
        while True:
            try:
                producer.produce(topic, record.get("value"), on_delivery=delivered, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0
    assert not failures, failures
