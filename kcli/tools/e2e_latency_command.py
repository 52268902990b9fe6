"""The work behind ``kcli e2e-latency``: Kafka's EndToEndLatency loop over kcli's producer and
consumer, and its lines."""

from __future__ import annotations

import time

import typer

from kcli.common import TopicPartition
from kcli.errors import KcliError
from kcli.java_compat import JavaRandom, double_to_string, format_fixed
from kcli.output import Output

POLL_TIMEOUT_MS = 60000
DEFAULT_NUM_PARTITIONS = 1
DEFAULT_REPLICATION_FACTOR = 1
LONG_MAX = 2**63 - 1


class LatencyTestFailed(KcliError):
    """A run EndToEndLatency stops, in its own words."""


def run(brokers: str, topic: str, num_messages: int, acks: str, message_size: int, properties_file: str | None) -> None:
    from kcli.client.sync import SyncRunner

    out = Output()
    try:
        with SyncRunner() as runner:
            runner.run(_measure(out, brokers, topic, num_messages, acks, message_size, properties_file))
    except LatencyTestFailed as exc:
        out.flush()
        out.diag(str(exc))
        raise typer.Exit(1) from None
    finally:
        out.flush()


def message_bytes(random: JavaRandom, length: int) -> bytes:
    """EndToEndLatency.randomBytesOfLen: one upper-case letter, ``length`` times."""
    return bytes([random.next_int(26) + 65]) * length


async def _measure(out: Output, brokers: str, topic: str, num_messages: int, acks: str, message_size: int, properties_file: str | None) -> None:
    from kcli.client.admin import Admin, NewTopic
    from kcli.client.consumer import Consumer
    from kcli.client.network_client import NetworkClient
    from kcli.client.producer import Producer
    from kcli.config import read_properties
    from kcli.tools._admin_common import client_settings
    from kcli.tools.console_producer import producer_config_warning

    props = read_properties(properties_file) if properties_file is not None else {}
    props["bootstrap.servers"] = brokers
    cluster = NetworkClient(**client_settings(props, bootstrap=brokers, warn=lambda _line: None))
    try:
        consumer = Consumer.from_properties(
            cluster, props, warn=lambda _line: None,
            group_id=f"test-group-{time.time_ns() // 1_000_000}", enable_auto_commit=False, auto_offset_reset="latest", fetch_max_wait_ms=0,
        )
        producer = Producer.from_properties(
            brokers, {**props, "linger.ms": "0", "max.block.ms": str(LONG_MAX), "acks": acks}, warn=producer_config_warning
        )
        try:
            admin = Admin(cluster)
            # Kafka asks the consumer for the topics first: an unreachable cluster fails here, in
            # the request timeout, not in the producer's unbounded max.block.ms.
            if topic not in await admin.list_topics():
                out.now(
                    f'Topic "{topic}" does not exist. Will create topic with {DEFAULT_NUM_PARTITIONS} partition(s) '
                    f"and replication factor = {DEFAULT_REPLICATION_FACTOR}"
                )
                created = (await admin.create_topics([NewTopic(topic, DEFAULT_NUM_PARTITIONS, DEFAULT_REPLICATION_FACTOR)]))[topic]
                if created.error is not None:
                    out.now(f"Creation of topic {topic} failed")
                    raise created.error
                cluster.forget(topic)
            await producer.start()
            info = await cluster.topic(topic)
            partitions = [TopicPartition(topic, p) for p in sorted(info.partitions)]
            consumer.assign(partitions)
            await consumer.seek_to_end(partitions)
            for tp in partitions:
                await consumer.position(tp)

            random = JavaRandom(0)
            total_time = 0.0
            latencies = []
            for i in range(num_messages):
                message = message_bytes(random, message_size)
                begin = time.perf_counter_ns()
                await (await producer.send(topic, message))
                records = await consumer.poll(POLL_TIMEOUT_MS / 1000)
                elapsed = time.perf_counter_ns() - begin
                await _validate(consumer, message, records)
                if i % 1000 == 0:
                    out.now(f"{i}\t{double_to_string(elapsed / 1000.0 / 1000.0)}")
                total_time += elapsed
                latencies.append(elapsed // 1000 // 1000)

            out.line(f"Avg latency: {format_fixed(total_time / num_messages / 1000.0 / 1000.0 if num_messages else float('nan'), 4)} ms")
            latencies.sort()
            if not latencies:
                raise LatencyTestFailed("Index 0 out of bounds for length 0")  # Kafka's percentile of no latencies
            n = len(latencies)
            out.line(f"Percentiles: 50th = {latencies[int(n * 0.5)]}, 99th = {latencies[int(n * 0.99)]}, 99.9th = {latencies[int(n * 0.999)]}")
            await consumer.commit()
        finally:
            await producer.close()
            await consumer.close(commit=False)
    finally:
        await cluster.close()


async def _validate(consumer, message: bytes, records: list) -> None:
    """EndToEndLatency.validate: exactly the record sent, alone (offsets committed before failing)."""
    if not records:
        await consumer.commit()
        raise LatencyTestFailed(f"poll() timed out before finding a result (timeout:[{POLL_TIMEOUT_MS}])")
    sent = message.decode("utf-8", "replace")
    read = (records[0].value or b"").decode("utf-8", "replace")
    if read != sent:
        await consumer.commit()
        raise LatencyTestFailed(f"The message read [{read}] did not match the message sent [{sent}]")
    if len(records) != 1:
        await consumer.commit()
        raise LatencyTestFailed(f"Only one result was expected during this test. We found [{len(records)}]")
