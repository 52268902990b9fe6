"""The work behind ``kcli verifiable-producer``: Kafka's VerifiableProducer loop on kcli's
producer, and its event lines."""

from __future__ import annotations

import time
from dataclasses import dataclass

import typer

from kcli.errors import KcliError
from kcli.output import Output
from kcli.tools.verifiable_events import event


@dataclass(frozen=True)
class ProducerOptions:
    topic: str
    bootstrap_servers: str
    max_messages: int
    throughput: int
    acks: int
    producer_config: str | None
    create_time: int | None
    value_prefix: int | None
    repeating_keys: int | None


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class VerifiableProducer:
    def __init__(self, options: ProducerOptions, out: Output) -> None:
        self.options = options
        self.out = out
        self.num_sent = 0
        self.num_acked = 0
        self.key_counter = 0
        self.create_time = options.create_time
        self.start_ms = _now_ms()

    def value(self, i: int) -> str:
        return str(i) if self.options.value_prefix is None else f"{self.options.value_prefix}.{i}"

    def key(self) -> str | None:
        """0, 1, ... up to --repeating-keys (exclusive), then 0 again; None without it."""
        if self.options.repeating_keys is None:
            return None
        key = str(self.key_counter)
        self.key_counter += 1
        if self.key_counter == self.options.repeating_keys:
            self.key_counter = 0
        return key

    def print(self, name: str, **fields) -> None:  # noqa: A003 - Kafka's printJson
        self.out.now(event(name, **fields))

    async def send(self, producer, key: str | None, value: str) -> None:
        timestamp = None
        if self.create_time is not None:
            timestamp = self.create_time
            self.create_time += _now_ms() - self.start_ms  # Kafka's own arithmetic
        self.num_sent += 1
        topic = self.options.topic
        try:
            future = await producer.send(topic, value.encode(), None if key is None else key.encode(), timestamp=timestamp)
        except Exception as exc:
            self._failed(key, value, exc)
            return
        future.add_done_callback(self._answered, key, value)

    def _answered(self, future, key: str | None, value: str) -> None:
        exc = future.exception()
        if exc is not None:
            self._failed(key, value, exc)
            return
        self.num_acked += 1
        metadata = future.result()
        self.print("producer_send_success", key=key, value=value, topic=metadata.topic, partition=metadata.partition, offset=metadata.offset)

    def _failed(self, key: str | None, value: str, exc: BaseException) -> None:
        java_class = getattr(exc, "java_class", None) or f"{type(exc).__module__}.{type(exc).__name__}"
        self.print("producer_send_error", key=key, value=value, topic=self.options.topic, exception=f"class {java_class}", message=str(exc))


def run(options: ProducerOptions) -> None:
    from kcli.client.sync import SyncRunner

    out = Output()
    try:
        with SyncRunner() as runner:
            code = runner.run(_produce(options, out))
    finally:
        out.flush()
    if code:
        raise typer.Exit(code)


async def _produce(options: ProducerOptions, out: Output) -> int:
    from kcli.client.producer import Producer
    from kcli.config import read_properties
    from kcli.tools.console_producer import producer_config_warning
    from kcli.tools.producer_perf_test import Throttler
    from kcli.tools.stop_signals import StopSignals, Stopped

    props = {"bootstrap.servers": options.bootstrap_servers, "acks": str(options.acks), "retries": "0"}
    if options.producer_config is not None:
        props.update(read_properties(options.producer_config))
    producer = Producer.from_properties(None, props, warn=producer_config_warning)
    tool = VerifiableProducer(options, out)
    start_ms = _now_ms()
    throttler = Throttler(options.throughput, start_ms)
    with StopSignals() as stop:
        try:
            await stop.until(producer.start())
            tool.print("startup_complete")
            limit = options.max_messages if options.max_messages >= 0 else None
            i = 0
            while limit is None or i < limit:
                if stop.requested:
                    break
                send_start_ms = _now_ms()
                await stop.until(tool.send(producer, tool.key(), tool.value(i)))
                if throttler.should_throttle(i, send_start_ms):
                    await stop.until(throttler.throttle())
                i += 1
        except Stopped:
            pass
        except KcliError:
            await producer.close()
            raise
        # Kafka's shutdown hook: close (answering what is in flight), then the summary.
        await producer.close()
        tool.print("shutdown_complete")
        stop_ms = _now_ms()
        elapsed = stop_ms - start_ms
        avg = 1000 * (tool.num_acked / elapsed) if elapsed else (float("nan") if tool.num_acked == 0 else float("inf"))
        tool.print("tool_data", sent=tool.num_sent, acked=tool.num_acked, target_throughput=options.throughput, avg_throughput=avg)
        return stop.exit_code
