"""How a consumer's reads are shaped, kcli's broker against librdkafka's mock: the same records
read back from the beginning with the same consumer, counting what librdkafka itself reports
(statistics.interval.ms): Fetch requests sent, bytes received, and so records and bytes per Fetch
and Fetches per second, beside msgs/s and the broker's CPU seconds for the read.

Each case is bench/broker.py's (same layout, same producer and consumer settings); the broker
that goes first alternates from round to round.

Usage: .venv/bin/python bench/fetch_shape.py [--rounds N] [--case SLUG ...] [--quick] [--override K=V ...]
  --override  a config for kcli's broker (repeatable), e.g. fetch.max.bytes=1048576 to answer with
              at most 1 MiB per Fetch
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker import (  # noqa: E402
    LOADGEN_TIMEOUT,
    KcliBroker,
    MockCluster,
    all_cases,
    cpu_seconds,
    kcli_delete_topics,
    machine_line,
    measure_produce,
    partitions_needed,
    run_loadgen,
    same_topics,
)


def read_back(bootstrap: str, layout: list[tuple[str, int]], count: int, pid: int) -> dict:
    cpu_before = cpu_seconds(pid)
    result = run_loadgen("consume", {"bootstrap": bootstrap, "partitions": layout, "count": count, "timeout": LOADGEN_TIMEOUT - 60, "fetch_statistics": True})
    if result["records"] != count or result["extra"]:
        raise RuntimeError(f"returned {result['records'] + result['extra']:,} records of {count:,}")
    shape = result["fetch_statistics"]
    return {
        "msgs_per_s": result["records"] / result["seconds"],
        "fetches": shape["fetches"],
        "records_per_fetch": result["records"] / max(shape["fetches"], 1),
        "kb_per_fetch": shape["rx_bytes"] / max(shape["fetches"], 1) / 1024,
        "fetches_per_s": shape["fetches"] / result["seconds"],
        "broker_cpu_s": cpu_seconds(pid) - cpu_before if pid else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--case", action="append", help="a case slug, e.g. 100b-none (repeatable; default: the 100 B cases)")
    parser.add_argument("--quick", action="store_true", help="10x fewer records")
    parser.add_argument("--override", action="append", default=[], help="a config for kcli's broker, key=value (repeatable)")
    options = parser.parse_args()
    only = options.case or ["100b-none", "100b-lz4"]
    cases = [case for case in all_cases(options.quick) if case.slug in only]
    print(machine_line())
    print(f"median of {options.rounds} rounds; librdkafka's own statistics of the consumer; kcli overrides: {' '.join(options.override) or 'none'}")
    workdir = Path(tempfile.mkdtemp(prefix="kcli-bench-fetch-"))
    mock = kcli = None
    try:
        mock = MockCluster().start()
        kcli = KcliBroker(workdir / "kcli", overrides=options.override).start()
        brokers = {"kcli": kcli, "mock": mock}
        print(f"{'case':<30} {'broker':<6} {'msgs/s':>10} {'Fetches':>8} {'records/Fetch':>14} {'KiB/Fetch':>10} {'Fetches/s':>10} {'broker CPU s':>13}")
        for case in cases:
            rows: dict[str, list[dict]] = {name: [] for name in brokers}
            for round_ in range(options.rounds):
                layout = same_topics(f"shape-{case.slug}-r{round_}", partitions_needed(case), mock, kcli)
                order = list(brokers) if round_ % 2 == 0 else list(reversed(brokers))
                for name in order:
                    broker = brokers[name]
                    os.sync()
                    produced = measure_produce(broker.bootstrap, case, layout)
                    if produced.problem:
                        raise RuntimeError(f"{name}: {produced.problem}")
                    rows[name].append(read_back(broker.bootstrap, layout, case.count + produced.warmup_records, broker.pid))
                kcli_delete_topics(kcli.bootstrap, sorted({topic for topic, _ in layout}))
            for name, runs in rows.items():
                m = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
                print(f"{'consume ' + case.label:<30} {name:<6} {m['msgs_per_s']:>10,.0f} {m['fetches']:>8,.0f} {m['records_per_fetch']:>14,.0f} "
                      f"{m['kb_per_fetch']:>10,.1f} {m['fetches_per_s']:>10,.0f} {m['broker_cpu_s']:>13.2f}", flush=True)
    finally:
        if kcli is not None:
            kcli.stop()
        if mock is not None:
            mock.stop()


if __name__ == "__main__":
    main()
