"""kcli's own client as a load generator, the counterpart of bench/_loadgen.py's confluent-kafka
modes: same parameters, same JSON result line.

    python bench/_kcli_client.py {produce,consume} JSON
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _loadgen import partition_shares, value_pool  # noqa: E402

from kcli.client.cluster import Cluster  # noqa: E402
from kcli.client.consumer import Consumer, TopicPartition  # noqa: E402
from kcli.client.producer import Producer  # noqa: E402


def emit(result: dict[str, Any]) -> None:
    print(json.dumps(result), flush=True)


async def produce(params: dict[str, Any]) -> None:
    targets = [tuple(t) for t in params["partitions"]]
    count, size = params["count"], params["value_size"]
    async with Cluster(params["bootstrap"]) as cluster:
        producer = Producer.from_properties(cluster, {
            "linger.ms": str(params.get("linger_ms", 5)),
            "batch.size": str(1 << 20),
            "acks": "1",
            "compression.type": params["compression"],
            "enable.idempotence": "false",
        })
        pool = value_pool(size)
        mask = len(pool) - 1
        gc.freeze()  # a million live record futures would otherwise be walked by full collections
        run = max(1, params["run_bytes"] // size)
        remaining = partition_shares(count, len(targets))
        send = producer.send
        pending = []
        sent = 0
        start = time.perf_counter()
        while sent < count:
            for index, (topic, partition) in enumerate(targets):
                n = min(run, remaining[index])
                remaining[index] -= n
                for _ in range(n):
                    pending.append(await send(topic, pool[sent & mask], partition=partition))
                    sent += 1
        await producer.flush()
        elapsed = time.perf_counter() - start
        # flush() returned: every record is answered. (asyncio.gather over a million futures
        # would cost seconds of its own; the confluent-kafka side gets its errors in callbacks.)
        errors = [str(e) for e in (f.exception() for f in pending) if e is not None][:20]
        await producer.close()
    emit({"seconds": elapsed, "records": count, "bytes": count * size, "undelivered": len(errors), "errors": errors})


async def consume(params: dict[str, Any]) -> None:
    count = params["count"]
    async with Cluster(params["bootstrap"]) as cluster:
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
