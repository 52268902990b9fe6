"""kcli's own client as a load generator, the counterpart of bench/_loadgen.py's confluent-kafka
modes: same parameters, same JSON result line.

    python bench/_kcli_client.py {produce,consume} JSON
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _loadgen import produce_runs, value_pool  # noqa: E402

from kcli.client.consumer import Consumer, TopicPartition  # noqa: E402
from kcli.client.network_client import NetworkClient  # noqa: E402
from kcli.client.producer import Producer  # noqa: E402
from kcli.client.record_accumulator import BufferFull  # noqa: E402


def emit(result: dict[str, Any]) -> None:
    print(json.dumps(result), flush=True)


async def produce(params: dict[str, Any]) -> None:
    targets = [tuple(t) for t in params["partitions"]]
    count, size = params["count"], params["value_size"]
    async with NetworkClient(params["bootstrap"]) as cluster:
        producer = Producer.from_properties(cluster, {
            "linger.ms": str(params.get("linger_ms", 5)),
            "batch.size": str(1 << 20),
            "acks": "1",
            "compression.type": params["compression"],
            "enable.idempotence": "false",
        })
        for topic in sorted({t for t, _ in targets}):
            await producer.wait_for_topic(topic)
        pool = value_pool(size)
        mask = len(pool) - 1
        run = max(1, params["run_bytes"] // size)
        # The loop of bench/_loadgen.py's confluent-kafka producer: a call that never waits
        # (send_nowait, like produce()), a short wait while the buffer is full, the event loop given
        # its turn after each run of records (like poll(0)), and no handle kept per record: failures
        # are counted by the producer (confluent-kafka's side counts them in a callback).
        send = producer.send_nowait
        sent = 0
        start = time.perf_counter()
        for topic, partition, n in produce_runs(targets, count, run):
            for _ in range(n):
                while True:
                    try:
                        send(topic, pool[sent & mask], partition=partition)
                        break
                    except BufferFull:
                        await asyncio.sleep(0.001)
                sent += 1
                if producer.needs_yield:
                    await asyncio.sleep(0)
            await asyncio.sleep(0)
        await producer.flush()
        elapsed = time.perf_counter() - start
        undelivered = producer.metrics.record_error_total  # flush() returned: every record is answered
        await producer.close()
    errors = [f"{undelivered} records failed"] if undelivered else []
    emit({"seconds": elapsed, "records": count, "bytes": count * size, "undelivered": undelivered, "errors": errors})


async def consume(params: dict[str, Any]) -> None:
    count = params["count"]
    async with NetworkClient(params["bootstrap"]) as cluster:
        consumer = Consumer(cluster, auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=10_000)
        consumer.assign([TopicPartition(t, p) for t, p in params["partitions"]])
        await consumer.seek_to_beginning()
        received = value_bytes = 0
        deadline = time.monotonic() + params.get("timeout", 300)
        start = time.perf_counter()
        while received < count and time.monotonic() < deadline:
            for record in await consumer.poll(0.5):
                received += 1
                value_bytes += len(record.value)
        elapsed = time.perf_counter() - start
        await consumer.close(commit=False)
    emit({"seconds": elapsed, "records": received, "bytes": value_bytes, "errors": []})


MODES = {"produce": produce, "consume": consume}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in MODES:
        sys.exit(f"usage: _kcli_client.py {{{','.join(MODES)}}} JSON")
    asyncio.run(MODES[sys.argv[1]](json.loads(sys.argv[2])))
