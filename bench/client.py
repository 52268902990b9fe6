"""Client benchmark: kcli's own client against confluent-kafka (librdkafka), on the same kcli broker.

Prints, measured in one run on the same machine (the broker in its own process, each client in
another):
  - produce throughput (acks=1, linger.ms=5, 1 MiB batches, no idempotence) and consume
    throughput (assign() from the beginning) for 100 B and 1 KiB records: msgs/s, MB/s of values
    and the kcli/confluent ratio (goal >= 0.5). Each client produces into its own fresh topics of
    the same layout; both consume the same topics;
  - start-up time of ``kcli --help`` (goal < 0.3 s) and ``kcli topics --list``: the median
    wall time of 10 runs of the installed console script.

Usage: .venv/bin/python bench/client.py [--quick] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402

from broker import KcliBroker, kcli_create_topics, machine_line, run_loadgen, verdict  # noqa: E402

KCLI_CLIENT = HERE / "_kcli_client.py"
KCLI_BIN = Path(sys.executable).parent / "kcli"
RATIO_GOAL, HELP_GOAL_S = 0.5, 0.3
PARTITIONS = 4
CASES = ((1_000_000, 100), (300_000, 1024))


def run_kcli_client(mode: str, params: dict[str, Any], timeout: float = 900) -> dict[str, Any]:
    result = subprocess.run([sys.executable, str(KCLI_CLIENT), mode, json.dumps(params)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"kcli client {mode} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(lines[-1])


CLIENTS = {"kcli": run_kcli_client, "confluent": run_loadgen}


def rate(result: dict[str, Any], expected: int, what: str) -> tuple[float, float]:
    if result["records"] != expected or result.get("undelivered") or result.get("errors"):
        raise RuntimeError(f"{what}: {result['records']} of {expected} records, errors {result.get('errors')}")
    return result["records"] / result["seconds"], result["bytes"] / result["seconds"] / 1e6


def stored_records(bootstrap: str, layout: list[list[Any]]) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-client-watermarks"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1] for t, p in layout)
    finally:
        consumer.close()


def startup_seconds(args: list[str], runs: int = 10) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        completed = subprocess.run([str(KCLI_BIN), *args], capture_output=True, timeout=60)
        times.append(time.perf_counter() - start)
        if completed.returncode != 0:
            raise RuntimeError(f"kcli {' '.join(args)} failed: {completed.stderr.decode()[-500:]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer records and one round (a smoke run)")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    rounds = 1 if options.quick else options.rounds
    print(machine_line())
    workdir = Path(tempfile.mkdtemp(prefix="kcli-bench-client-"))
    broker = KcliBroker(workdir / "logs").start()
    rows = []
    try:
        for count, size in CASES:
            count = count // 10 if options.quick else count
            results: dict[str, dict[str, list[tuple[float, float]]]] = {c: {"produce": [], "consume": []} for c in CLIENTS}
            for round_ in range(rounds):
                layouts = {}
                for name, client in CLIENTS.items():
                    topic = f"bench-client-{size}-{round_}-{name}"
                    kcli_create_topics(broker.bootstrap, {topic: PARTITIONS})
                    layouts[name] = [[topic, p] for p in range(PARTITIONS)]
                    params = {"bootstrap": broker.bootstrap, "partitions": layouts[name], "count": count, "value_size": size,
                              "compression": "none", "run_bytes": 256 * 1024, "linger_ms": 5}
                    results[name]["produce"].append(rate(client("produce", params), count, f"{name} produce"))
                    stored = stored_records(broker.bootstrap, layouts[name])
                    if stored != count:  # acknowledged is not enough: the broker must hold them all
                        raise RuntimeError(f"{name} produce: {count} records acknowledged, {stored} stored")
                for name, client in CLIENTS.items():
                    # Both read the records confluent-kafka wrote, so they read the same batches.
                    params = {"bootstrap": broker.bootstrap, "partitions": layouts["confluent"], "count": count}
                    results[name]["consume"].append(rate(client("consume", params), count, f"{name} consume"))
                print(f"  round {round_ + 1} {size} B: " + "; ".join(
                    f"{n} produce {results[n]['produce'][-1][0]:,.0f}/s consume {results[n]['consume'][-1][0]:,.0f}/s" for n in CLIENTS), flush=True)
            for op in ("produce", "consume"):
                kcli = statistics.median(r[0] for r in results["kcli"][op])
                peer = statistics.median(r[0] for r in results["confluent"][op])
                kcli_mb = statistics.median(r[1] for r in results["kcli"][op])
                peer_mb = statistics.median(r[1] for r in results["confluent"][op])
                rows.append((f"{op} {count:,} x {size} B", kcli, kcli_mb, peer, peer_mb, kcli / peer))
        topics_list = startup_seconds(["topics", "--list", "--bootstrap-server", broker.bootstrap])
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    help_seconds = startup_seconds(["--help"])
    print()
    print(f"{'case':<28} {'kcli msg/s':>12} {'MB/s':>7} {'confluent':>12} {'MB/s':>7} {'ratio':>6}")
    for label, kcli, kcli_mb, peer, peer_mb, ratio in rows:
        print(f"{label:<28} {kcli:>12,.0f} {kcli_mb:>7.1f} {peer:>12,.0f} {peer_mb:>7.1f} {ratio:>6.2f}  {verdict(ratio >= RATIO_GOAL)}")
    print(f"{'kcli --help':<28} {help_seconds * 1000:>9.0f} ms (goal < {HELP_GOAL_S * 1000:.0f} ms)  {verdict(help_seconds < HELP_GOAL_S)}")
    print(f"{'kcli topics --list':<28} {topics_list * 1000:>9.0f} ms")


if __name__ == "__main__":
    main()
