"""Consumer-group benchmark: kcli's broker against librdkafka's mock cluster, with the same clients.

Prints, measured in one run on the same machine, each broker in its own process and the clients
in another (bench/_loadgen.py, confluent-kafka):
  - the time a 10-member group takes to settle after a member joins: 9 members subscribed and
    settled, a 10th subscribes, and the clock stops when every member holds its part of the new
    assignment (each partition owned exactly once); the newcomer then leaves and the round repeats.
    Members use the range assignor, heartbeat.interval.ms=100 and session.timeout.ms=10000, so
    the figure is the coordinator's and the protocol's, not a default heartbeat interval's;
  - synchronous offset commits per second from one simple consumer (assign(), 8 partitions per
    commit);
  - and the speed ratio kcli/mock of each (goal >= 0.8): mock time / kcli time for the join,
    kcli rate / mock rate for commits;
  - then the log cleaner's throughput on a 1 GiB log with 10% unique keys (bench/compaction.py,
    64 MiB with --quick); the mock has no compaction to compare with.

The mock settles a join by a timer: when a member joins a group that has members, it waits
session.timeout.ms - 1 s for the others to rejoin (librdkafka's rdkafka_mock_cgrp.c), where Kafka
completes the join as soon as every known member has rejoined. Its join figure is that timer.

Usage: .venv/bin/python bench/groups.py [--quick] [--rounds N] [--dir DIR] [--override K=V ...]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker import KcliBroker, MockCluster, filesystem_of, machine_line, run_loadgen, same_topics, verdict  # noqa: E402

RATIO_GOAL = 0.8
MEMBERS = 10
JOIN_PARTITIONS = 20
COMMIT_PARTITIONS = 8


def measure_join(bootstrap: str, layout: list[tuple[str, int]], group: str, rounds: int) -> list[float]:
    topics = sorted({topic for topic, _ in layout})
    result = run_loadgen("group-join", {"bootstrap": bootstrap, "group": group, "topics": topics, "partitions": layout, "members": MEMBERS, "rounds": rounds})
    return result["seconds"]


def measure_commits(bootstrap: str, layout: list[tuple[str, int]], group: str, count: int) -> float:
    result = run_loadgen("commit", {"bootstrap": bootstrap, "group": group, "partitions": layout, "count": count})
    if result["last_committed"] != [count]:
        raise RuntimeError(f"{bootstrap}: after {count} commits the committed offsets are {result['last_committed']}")
    return result["commits"] / result["seconds"]


def run(quick: bool, rounds: int, workdir: Path, overrides: list[str]) -> None:
    commits = 500 if quick else 3000
    print(machine_line())
    print(f"kcli's log dirs under {workdir} ({filesystem_of(workdir)}); the mock keeps its state in memory")
    joins: dict[str, list[float]] = {"kcli": [], "mock": []}
    rates: dict[str, list[float]] = {"kcli": [], "mock": []}
    mock = kcli = None
    try:
        mock = MockCluster().start()
        kcli = KcliBroker(workdir / "kcli", overrides=overrides).start()
        brokers = [("kcli", kcli.bootstrap), ("mock", mock.bootstrap)]
        join_layout = same_topics("groups-join", JOIN_PARTITIONS, mock, kcli)
        commit_layout = same_topics("groups-commit", COMMIT_PARTITIONS, mock, kcli)
        for round_ in range(rounds):
            for name, bootstrap in brokers if round_ % 2 == 0 else brokers[::-1]:
                seconds = measure_join(bootstrap, join_layout, f"bench-join-{round_}", 3 if quick else 5)
                joins[name].extend(seconds)
                rates[name].append(measure_commits(bootstrap, commit_layout, f"bench-commit-{round_}", commits))
                print(f"  round {round_ + 1} {name}: join settles in {', '.join(f'{s * 1000:.0f}' for s in seconds)} ms; {rates[name][-1]:,.0f} commits/s", flush=True)
    finally:
        if kcli is not None:
            kcli.stop()
        if mock is not None:
            mock.stop()
    print_results(joins, rates, commits)
    print("\ncompaction (bench/compaction.py):", flush=True)
    subprocess.run([sys.executable, str(Path(__file__).with_name("compaction.py")), *(["--quick"] if quick else []), "--dir", str(workdir)], check=True)


def print_results(joins: dict[str, list[float]], rates: dict[str, list[float]], commits: int) -> None:
    join_ms = {name: statistics.median(values) * 1000 for name, values in joins.items()}
    rate = {name: statistics.median(values) for name, values in rates.items()}
    print(f"\n{'measure':<58} {'kcli':>10} {'mock':>10} {'ratio':>6}  goal >= {RATIO_GOAL}")
    ratio = join_ms["mock"] / join_ms["kcli"]
    print(f"{f'{MEMBERS}-member group settles after a join, median ms':<58} {join_ms['kcli']:>10.0f} {join_ms['mock']:>10.0f} {ratio:>6.2f}  {verdict(ratio >= RATIO_GOAL)}")
    ratio = rate["kcli"] / rate["mock"]
    print(f"{f'synchronous offset commits/s ({COMMIT_PARTITIONS} partitions, {commits:,} commits)':<58} {rate['kcli']:>10,.0f} {rate['mock']:>10,.0f} {ratio:>6.2f}  {verdict(ratio >= RATIO_GOAL)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and commits, for a smoke run")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per broker, alternating which goes first (default 3, 1 with --quick)")
    parser.add_argument("--dir", default=None, help="where kcli's log dirs go (default: a temporary directory)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="a broker config for kcli's broker (repeatable)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kcli-bench-groups-", dir=args.dir))
    try:
        run(args.quick, args.rounds or (1 if args.quick else 3), workdir, args.override)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
