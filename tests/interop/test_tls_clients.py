"""confluent-kafka, kafka-python and aiokafka over an SSL listener that requires client
certificates (mutual TLS): each creates, produces (a record larger than a TLS piece of a file
range among them) and consumes back through the broker's TLS endpoint."""

from __future__ import annotations

import asyncio

import pytest

from broker_process import BrokerProcess
from certs import make_certs, tls_overrides

LARGE = bytes(range(256)) * 1600  # 400 KiB: sent as more than one piece over TLS
VALUES = [f"value-{i}".encode() for i in range(50)] + [LARGE]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory, certs):
    broker = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.client.auth": "required",
        **tls_overrides(certs),
    }).start()
    broker.ssl_port = broker.listener_ports[1]
    yield broker
    broker.stop()


def test_confluent_kafka_over_mutual_tls(tls_broker, certs):
    from confluent_kafka import Consumer, Producer, TopicPartition

    config = {
        "bootstrap.servers": f"127.0.0.1:{tls_broker.ssl_port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs / "ca.pem"),
        "ssl.certificate.location": str(certs / "client.keystore.pem"),
        "ssl.key.location": str(certs / "client.keystore.pem"),
    }
    producer = Producer({**config, "message.max.bytes": 1_000_000})
    for value in VALUES:
        producer.produce("tls-confluent", value)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": "tls-confluent", "enable.auto.commit": False})
    consumer.assign([TopicPartition("tls-confluent", 0, 0)])
    received = []
    try:
        while len(received) < len(VALUES):
            message = consumer.poll(10)
            assert message is not None and message.error() is None, message and message.error()
            received.append(message.value())
    finally:
        consumer.close()
    assert received == VALUES


def test_kafka_python_over_mutual_tls(tls_broker, certs):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    config = {
        "bootstrap_servers": f"127.0.0.1:{tls_broker.ssl_port}",
        "security_protocol": "SSL",
        "ssl_cafile": str(certs / "ca.pem"),
        "ssl_certfile": str(certs / "client.keystore.pem"),
        "ssl_keyfile": str(certs / "client.keystore.pem"),
        "request_timeout_ms": 20000,
    }
    producer = KafkaProducer(max_request_size=1_000_000, **config)
    futures = [producer.send("tls-kafka-python", value) for value in VALUES]
    producer.flush(30)
    assert [f.get(timeout=10).offset for f in futures] == list(range(len(VALUES)))
    producer.close()
    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, consumer_timeout_ms=10000, **config)
    consumer.assign([TopicPartition("tls-kafka-python", 0)])
    consumer.seek_to_beginning()
    received = []
    for record in consumer:
        received.append(record.value)
        if len(received) == len(VALUES):
            break
    consumer.close()
    assert received == VALUES


def test_aiokafka_over_mutual_tls(tls_broker, certs):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.helpers import create_ssl_context

    async def run() -> list[bytes]:
        context = create_ssl_context(cafile=str(certs / "ca.pem"), certfile=str(certs / "client.keystore.pem"),
                                     keyfile=str(certs / "client.keystore.pem"))
        config = {"bootstrap_servers": f"127.0.0.1:{tls_broker.ssl_port}", "security_protocol": "SSL", "ssl_context": context}
        producer = AIOKafkaProducer(max_request_size=1_000_000, **config)
        await producer.start()
        try:
            for value in VALUES:
                await producer.send_and_wait("tls-aiokafka", value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(enable_auto_commit=False, **config)
        await consumer.start()
        received: list[bytes] = []
        try:
            consumer.assign([TopicPartition("tls-aiokafka", 0)])
            await consumer.seek_to_beginning()
            while len(received) < len(VALUES):
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    received.extend(r.value for r in records)
        finally:
            await consumer.stop()
        return received

    assert asyncio.run(asyncio.wait_for(run(), 60)) == VALUES
