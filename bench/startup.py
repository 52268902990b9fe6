"""Start-up benchmark: how long ``kcli --help`` (and a few other quick commands) take as whole processes.

Runs each command ``--runs`` times after two untimed runs (the page cache warm), one at a time,
and prints the wall time's minimum, median and maximum, the process's CPU seconds (user + sys, from
the kernel's accounting of the finished child) and its peak RSS; then the goal's verdict: the
median of ``kcli --help`` under 0.3 s. The commands run through the ``kcli`` entry point beside
this interpreter, as a user runs them (``python -m kcli`` when there is none).

Usage: .venv/bin/python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HELP_GOAL_SECONDS = 0.3


def kcli_command() -> list[str]:
    beside = Path(sys.executable).with_name("kcli")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("kcli")
    return [found] if found else [sys.executable, "-m", "kcli"]


def time_once(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB) of one run of ``argv``."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs per command (default 20)")
    args = parser.parse_args()
    kcli = kcli_command()
    commands = [["--help"], ["topics", "--help"], ["broker", "start", "--help"], ["--version"]]
    print(f"{' '.join(kcli)}; {os.cpu_count()} cores; {args.runs} runs each after 2 untimed")
    print(f"{'command':<28} {'wall min':>9} {'median':>9} {'max':>9} {'CPU s':>7} {'RSS MB':>7}")
    medians = {}
    for extra in commands:
        argv = kcli + extra
        for _ in range(2):
            time_once(argv)
        runs = [time_once(argv) for _ in range(args.runs)]
        walls = sorted(run[0] for run in runs)
        medians[tuple(extra)] = statistics.median(walls)
        print(f"{'kcli ' + ' '.join(extra):<28} {walls[0]:>9.3f} {statistics.median(walls):>9.3f} {walls[-1]:>9.3f} "
              f"{statistics.median(run[1] for run in runs):>7.3f} {statistics.median(run[2] for run in runs):>7.1f}")
    help_median = medians[("--help",)]
    print(f"kcli --help, median {help_median:.3f} s: goal < {HELP_GOAL_SECONDS} s: {'ok' if help_median < HELP_GOAL_SECONDS else 'MISSED'}")


if __name__ == "__main__":
    main()
