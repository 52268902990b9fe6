"""Scaling benchmark: kcli's broker (and Tansu's memory engine beside it) as partitions and connections grow.

Two sweeps, each point on a freshly started broker, the load from bench/_loadgen.py
(confluent-kafka, the same for every broker):
  - partitions: one topic of 1, 10, 100, 1,000 and 10,000 partitions;
  - connections: a topic of 100 partitions written by 1, 10, 100 and 500 producers (each
    producer its own client, so its own connection), taking the runs of records in turn.
At each point: one untimed record to every partition (the files come into being), then
500,000 x 100 B produced (linger.ms=5, acks=1, values spread evenly over the partitions) and
read back (counted against what was acknowledged, as bench/broker.py does; a broker that returns
otherwise is marked INVALID), then end-to-end latency at 1,000 msg/s for 5 s spread over every
partition (producers linger.ms=0, consumer fetch.wait.max.ms=1). Printed per point and broker:
the time CreateTopics took, produce and consume msgs/s, p50/p99 latency, RSS after, the broker's
CPU seconds per GB produced, and the cost per partition or per connection relative to the first
point (how far from flat the curve is); kcli's produce ratio against Tansu. ``--plot FILE`` draws
the curves as a PNG (matplotlib, installed into the benchmark's environment when missing).

Usage: .venv/bin/python bench/scaling.py [--quick] [--no-tansu] [--plot FILE] [--partitions 1,10,...] [--producers 1,10,...]
  --quick  10x fewer records and 2 s of latency per point (a smoke run)
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import confluent_kafka  # noqa: E402

from broker import (  # noqa: E402
    GOAL_FETCH_WAIT_MS,
    KcliBroker,
    TansuBroker,
    cpu_seconds,
    kcli_create_topics,
    machine_line,
    kcli_source,
    measure_consume,
    measure_latency,
    produce_one_each,
    run_loadgen,
    tansu_binary,
    tansu_version,
    vm_rss_mb,
)

PARTITION_POINTS = (1, 10, 100, 1_000, 10_000)
PRODUCER_POINTS = (1, 10, 100, 500)
CONNECTION_SWEEP_PARTITIONS = 100
RECORDS, VALUE_SIZE = 500_000, 100
CONNECTION_RUN_BYTES = 16 * 1024  # values a producer sends to one partition before the next producer takes over
MATPLOTLIB = "matplotlib>=3.8,<4"
OPEN_FILES = 65_536


@dataclass
class Point:
    broker: str
    sweep: str  # "partitions" or "producers"
    x: int
    partitions: int
    producers: int
    create_seconds: float = math.nan
    produce_msgs: float = math.nan
    consume_msgs: float = math.nan
    p50_ms: float = math.nan
    p99_ms: float = math.nan
    latency_samples: str = ""
    rss_mb: float = math.nan
    rss_anon_mb: float = math.nan  # the process's own memory; the rest of rss_mb is log and index pages it maps
    cpu_per_gb: float = math.nan
    problem: str = ""


def start_broker(name: str, workdir: Path, tansu: Path | None):
    if name == "kcli":
        return KcliBroker(Path(tempfile.mkdtemp(prefix="kcli-", dir=workdir))).start()
    return TansuBroker(tansu, workdir).start()


def measure_point(name: str, sweep: str, partitions: int, producers: int, records: int, latency_seconds: float, workdir: Path, tansu: Path | None) -> Point:
    point = Point(name, sweep, partitions if sweep == "partitions" else producers, partitions, producers)
    topic = f"scale-{sweep}-{point.x}"
    broker = start_broker(name, workdir, tansu)
    try:
        started = time.perf_counter()
        kcli_create_topics(broker.bootstrap, {topic: partitions})
        point.create_seconds = time.perf_counter() - started
        produce_one_each(broker.bootstrap, {topic: partitions})
        layout = [(topic, p) for p in range(partitions)]
        per_partition = -(-records // partitions)
        run_bytes = CONNECTION_RUN_BYTES if sweep == "producers" else per_partition * VALUE_SIZE
        os.sync()
        cpu_before = cpu_seconds(broker.pid)
        produced = run_loadgen("produce", {"bootstrap": broker.bootstrap, "partitions": layout, "count": records, "value_size": VALUE_SIZE, "compression": "none",
                                           "run_bytes": run_bytes, "warmup": False, "producers": producers, "timeout": 840})
        cpu_after = cpu_seconds(broker.pid)
        point.produce_msgs = produced["records"] / produced["seconds"]
        point.cpu_per_gb = (cpu_after - cpu_before) / (produced["bytes"] / 1e9)
        if produced["undelivered"] or produced["errors"]:
            point.problem = f"{produced['undelivered']:,} unacknowledged, errors {produced['errors'][:3]}"
            return point
        rate, problem = measure_consume(broker.bootstrap, layout, records + partitions)
        point.consume_msgs = rate.msgs_per_s
        point.problem = problem
        latency = measure_latency(broker.bootstrap, layout, latency_seconds, GOAL_FETCH_WAIT_MS, producers=producers, from_end=True)
        if latency.get("samples"):
            point.p50_ms, point.p99_ms = latency["p50_ms"], latency["p99_ms"]
        point.latency_samples = f"{latency.get('samples', 0):,}/{latency['expected']:,}"
        point.rss_mb = vm_rss_mb(broker.pid)
        point.rss_anon_mb = vm_rss_mb(broker.pid, "RssAnon")
    except (RuntimeError, confluent_kafka.KafkaException, subprocess.TimeoutExpired) as e:
        point.problem = point.problem or f"failed: {str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}"
    finally:
        broker.stop()
    return point


def cost_growth(points: list[Point], unit: str) -> list[str]:
    """Per point: how the broker's CPU per GB and its RSS above the first point grow per unit
    (partition or producer), next to what linear growth would give."""
    notes = []
    first = points[0]
    for point in points[1:]:
        extra_rss = point.rss_anon_mb - first.rss_anon_mb
        cpu = f"x{point.cpu_per_gb / first.cpu_per_gb:.2f}" if first.cpu_per_gb > 0 else "n/a"
        notes.append(f"{point.x:>6,} {unit}: CPU/GB {cpu} of {first.x:,}'s, own memory (RssAnon) +{extra_rss:.1f} MB ({extra_rss * 1024 / (point.x - first.x):.1f} KiB per added {unit.rstrip('s')})")
    return notes


def print_sweep(points: list[Point], sweep: str, names: list[str]) -> None:
    unit = "partitions" if sweep == "partitions" else "producers"
    print(f"\n{unit:>10} broker        create s  produce msgs/s  consume msgs/s  p50 ms  p99 ms  samples       RSS MB (anon)  CPU s/GB  kcli/tansu")
    by_key = {(p.broker, p.x): p for p in points if p.sweep == sweep}
    xs = sorted({p.x for p in points if p.sweep == sweep})
    for x in xs:
        for name in names:
            point = by_key.get((name, x))
            if point is None:
                continue
            ratio = ""
            peer = by_key.get(("tansu-memory", x))
            if name == "kcli" and peer is not None and not peer.problem and not point.problem:
                ratio = f"{point.produce_msgs / peer.produce_msgs:.2f}"
            print(f"{x:>10,} {name:<13} {point.create_seconds:>8.2f} {point.produce_msgs:>15,.0f} {point.consume_msgs:>15,.0f} {point.p50_ms:>7.2f} {point.p99_ms:>7.2f}  {point.latency_samples:<13} {point.rss_mb:>6.1f} ({point.rss_anon_mb:>5.1f}) {point.cpu_per_gb:>9.1f}  {ratio:>10}"
                  + (f"  INVALID: {point.problem}" if point.problem else ""))
    for name in names:
        mine = [by_key[(name, x)] for x in xs if (name, x) in by_key and not by_key[(name, x)].problem]
        if len(mine) > 1:
            print(f"  {name}, against {mine[0].x:,} {unit}:")
            for note in cost_growth(mine, unit):
                print(f"    {note}")


def pyplot():
    try:
        import matplotlib
    except ImportError:
        print(f"installing {MATPLOTLIB} into {sys.prefix} for the plot", flush=True)
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", MATPLOTLIB], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            print(f"no plot: pip install {MATPLOTLIB} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            return None
        importlib.invalidate_caches()
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot(points: list[Point], names: list[str], path: Path, title: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    figure, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    metrics = (("produce_msgs", f"produce, msgs/s ({RECORDS:,} x {VALUE_SIZE} B)"), ("p99_ms", "p99 latency, ms (1,000 msg/s, fetch.wait.max.ms=1)"), ("cpu_per_gb", "broker CPU s per GB produced"))
    for row, sweep in enumerate(("partitions", "producers")):
        for column, (field, label) in enumerate(metrics):
            axis = axes[row][column]
            for name in names:
                # A point whose records did not all come back is drawn dashed, as the tables mark it INVALID.
                mine = sorted((p for p in points if p.sweep == sweep and p.broker == name and not math.isnan(getattr(p, field))), key=lambda p: p.x)
                valid = all(not p.problem for p in mine)
                if mine:
                    axis.plot([p.x for p in mine], [getattr(p, field) for p in mine], marker="o", linestyle="-" if valid else "--",
                              label=name if valid else f"{name} (INVALID: records miscounted)")
            axis.set_xscale("log")
            if field != "produce_msgs":
                axis.set_yscale("log")
            axis.set_xlabel(sweep if sweep == "partitions" else f"producers (connections), {CONNECTION_SWEEP_PARTITIONS} partitions")
            axis.set_title(label, fontsize=10)
            axis.grid(True, which="both", alpha=0.3)
            axis.legend(fontsize=8)
    figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    print(f"plot written to {path}")


def open_file_limit() -> str:
    """Raise this process's open-file limit (which the brokers inherit) to OPEN_FILES when allowed, as
    an operator does for a broker with many partitions (kcli, as Kafka, keeps a log's files open:
    three per partition); what the brokers get."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, OPEN_FILES), max(hard, OPEN_FILES)))
    except (ValueError, OSError) as e:
        return f"open-file limit {soft:,} (could not raise it to {OPEN_FILES:,}: {e})"
    return f"open-file limit raised from {soft:,} to {resource.getrlimit(resource.RLIMIT_NOFILE)[0]:,} for the brokers"


def parse_points(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer records and 2 s of latency per point")
    parser.add_argument("--no-tansu", action="store_true", help="kcli alone")
    parser.add_argument("--plot", type=Path, default=None, help="draw the curves into this PNG file")
    parser.add_argument("--partitions", type=parse_points, default=PARTITION_POINTS, help="the partition sweep's points (default 1,10,100,1000,10000)")
    parser.add_argument("--producers", type=parse_points, default=PRODUCER_POINTS, help="the connection sweep's points (default 1,10,100,500)")
    parser.add_argument("--dir", default=None, help="where kcli's log dirs go (default: a temporary directory)")
    args = parser.parse_args()
    records = RECORDS // (10 if args.quick else 1)
    latency_seconds = 2.0 if args.quick else 5.0
    workdir = Path(tempfile.mkdtemp(prefix="kcli-bench-scaling-", dir=args.dir)).resolve()
    header = machine_line()
    print(header)
    print(open_file_limit())
    print(f"kcli: {kcli_source()}")
    tansu = None if args.no_tansu else tansu_binary()
    names = ["kcli"] + (["tansu-memory"] if tansu is not None else [])
    if tansu is not None:
        print(f"peer: {tansu_version(tansu)}, memory engine")
    print(f"each point: a fresh broker, {records:,} x {VALUE_SIZE} B produced and read back, then {latency_seconds:.0f} s at 1,000 msg/s")
    points: list[Point] = []
    try:
        plan = [("partitions", n, 1) for n in args.partitions] + [("producers", CONNECTION_SWEEP_PARTITIONS, n) for n in args.producers]
        for sweep, partitions, producers in plan:
            for name in names:
                point = measure_point(name, sweep, partitions, producers, records, latency_seconds, workdir, tansu)
                points.append(point)
                print(f"  {sweep:<10} {point.x:>6,} {name:<13} produce {point.produce_msgs:>10,.0f} msgs/s  p99 {point.p99_ms:>8.2f} ms  RSS {point.rss_mb:>6.1f} MB"
                      + (f"  INVALID: {point.problem}" if point.problem else ""), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_sweep(points, "partitions", names)
    print_sweep(points, "producers", names)
    if args.plot is not None:
        plot(points, names, args.plot, header)


if __name__ == "__main__":
    main()
