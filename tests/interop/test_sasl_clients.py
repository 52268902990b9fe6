"""confluent-kafka, kafka-python and aiokafka over SASL_PLAINTEXT and SASL_SSL with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512: each produces and consumes back through the broker. SCRAM users
are made with confluent-kafka's AdminClient (AlterUserScramCredentials) over the PLAINTEXT
listener; a wrong password is refused to each client."""

from __future__ import annotations

import asyncio
import re
import uuid

import pytest

from broker_process import BrokerProcess
from certs import make_certs, tls_overrides

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
PROTOCOLS = ["SASL_PLAINTEXT", "SASL_SSL"]
USER, PASSWORD = "alice", "alice-pw-1"
VALUES = [f"value-{i}".encode() for i in range(20)]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory, certs):
    broker = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "sasl.jaas.config": f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{USER}="{PASSWORD}";',
        **tls_overrides(certs),
    }).start()
    ports = broker.listener_ports
    broker.ports = dict(zip(["PLAINTEXT", *PROTOCOLS], ports))
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.ports['PLAINTEXT']}"})
    upsertions = [UserScramCredentialUpsertion(USER, ScramCredentialInfo(mechanism, 4096), PASSWORD.encode())
                  for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)]
    for future in admin.alter_user_scram_credentials(upsertions).values():
        future.result(30)
    yield broker
    broker.stop()


def _confluent(broker, certs, protocol, mechanism, password=PASSWORD) -> dict:
    config = {"bootstrap.servers": f"127.0.0.1:{broker.ports[protocol]}", "security.protocol": protocol,
              "sasl.mechanism": mechanism, "sasl.username": USER, "sasl.password": password}
    if protocol == "SASL_SSL":
        config["ssl.ca.location"] = str(certs / "ca.pem")
    return config


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka(sasl_broker, certs, protocol, mechanism):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = f"confluent-{uuid.uuid4().hex[:8]}"
    config = _confluent(sasl_broker, certs, protocol, mechanism)
    producer = Producer(config)
    for value in VALUES:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": topic, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    received = []
    try:
        while len(received) < len(VALUES):
            message = consumer.poll(10)
            assert message is not None and message.error() is None, message and message.error()
            received.append(message.value())
    finally:
        consumer.close()
    assert received == VALUES


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_with_a_wrong_password_is_refused(sasl_broker, certs, mechanism):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(_confluent(sasl_broker, certs, "SASL_PLAINTEXT", mechanism, password="wrong"))
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    assert any("Failed authentication" in line and f"as User:{USER}" in line for line in sasl_broker.log_lines)


def _kafka_python(broker, certs, protocol, mechanism) -> dict:
    config = {"bootstrap_servers": f"127.0.0.1:{broker.ports[protocol]}", "security_protocol": protocol,
              "sasl_mechanism": mechanism, "sasl_plain_username": USER, "sasl_plain_password": PASSWORD,
              "request_timeout_ms": 20000}
    if protocol == "SASL_SSL":
        config["ssl_cafile"] = str(certs / "ca.pem")
    return config


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python(sasl_broker, certs, protocol, mechanism):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"kafka-python-{uuid.uuid4().hex[:8]}"
    config = _kafka_python(sasl_broker, certs, protocol, mechanism)
    producer = KafkaProducer(**config)
    futures = [producer.send(topic, value) for value in VALUES]
    producer.flush(30)
    assert [f.get(timeout=10).offset for f in futures] == list(range(len(VALUES)))
    producer.close()
    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, consumer_timeout_ms=10000, **config)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    received = []
    for record in consumer:
        received.append(record.value)
        if len(received) == len(VALUES):
            break
    consumer.close()
    assert received == VALUES


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka(sasl_broker, certs, protocol, mechanism):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.helpers import create_ssl_context

    topic = f"aiokafka-{uuid.uuid4().hex[:8]}"

    async def run() -> list[bytes]:
        config = {"bootstrap_servers": f"127.0.0.1:{sasl_broker.ports[protocol]}", "security_protocol": protocol,
                  "sasl_mechanism": mechanism, "sasl_plain_username": USER, "sasl_plain_password": PASSWORD}
        if protocol == "SASL_SSL":
            config["ssl_context"] = create_ssl_context(cafile=str(certs / "ca.pem"))
        producer = AIOKafkaProducer(**config)
        await producer.start()
        try:
            for value in VALUES:
                await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(enable_auto_commit=False, **config)
        await consumer.start()
        received: list[bytes] = []
        try:
            consumer.assign([TopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
            while len(received) < len(VALUES):
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    received.extend(r.value for r in records)
        finally:
            await consumer.stop()
        return received

    assert asyncio.run(asyncio.wait_for(run(), 60)) == VALUES


def test_confluent_kafka_re_authenticates_before_its_session_ends(tmp_path):
    """KIP-368 with librdkafka: a producer running past several session lifetimes keeps its
    connection by re-authenticating, and none of its sends fails."""
    import time

    from confluent_kafka import Producer

    broker = BrokerProcess(tmp_path / "broker", {
        "broker.id": "0",
        "num.partitions": "1",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,PLAIN",
        "sasl.jaas.config": f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{USER}="{PASSWORD}";',
        "connections.max.reauth.ms": "1500",
    }, log_level="DEBUG").start()
    try:
        port = broker.listener_ports[1]
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "PLAIN", "sasl.username": USER, "sasl.password": PASSWORD})
        failures: list = []
        end = time.monotonic() + 5  # more than three session lifetimes
        sent = 0
        while time.monotonic() < end:
            producer.produce("reauth", b"x", on_delivery=lambda error, _message: error and failures.append(error))
            sent += 1
            producer.poll(0.1)
            time.sleep(0.1)
        assert producer.flush(30) == 0 and failures == []
    finally:
        broker.stop()
    peers = [m.group(1) for line in broker.log_lines if (m := re.search(rf"Connection from (\S+) on listener \S+ authenticated as User:{USER}", line))]
    assert len(peers) > len(set(peers))  # a connection authenticated again, rather than a new one
    assert not any("SASL session expired" in line or "Failed authentication" in line for line in broker.log_lines)
