"""Storage benchmark: the log's append and read paths against plain file I/O, and dump-log-segments.

Prints, measured in one run on the same machine and disk:
  - append throughput of SIZE bytes in 16 KiB batches through Log.append vs a plain sequential
    write of the same bytes (goal: ratio >= 0.7);
  - read throughput through the log's fetch path (Log.read + reading the returned file ranges) vs a
    plain sequential read of the segment files (goal: ratio >= 0.7);
  - dump-log-segments --print-data-log --deep-iteration records/s with stdout to /dev/null
    (goal >= 300,000 records/s) and its peak RSS from /usr/bin/time -v (goal < 100 MB).

Usage: .venv/bin/python bench/storage.py [--size-mib 1024] [--rounds 3] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.records import NewRecord, build_batch, peek_batch_header

BATCH_TARGET = 16 * 1024
VALUE_SIZE = 100
CHUNK = 1024 * 1024


def make_batches(count: int) -> tuple[list[bytearray], int]:
    """A pool of distinct ~16 KiB batches (keys and values differ), reused round-robin."""
    pool = []
    records_per_batch = 0
    for b in range(64):
        records = []
        size = 61
        i = 0
        while size < BATCH_TARGET - 150:
            key = b"key-%d-%d" % (b, i)
            value = (b"v%d-%d-" % (b, i)).ljust(VALUE_SIZE, b"x")
            records.append(NewRecord(key, value, 1_700_000_000_000 + i))
            size += len(key) + len(value) + 10
            i += 1
        records_per_batch = len(records)
        pool.append(bytearray(build_batch(records)))
    return pool, records_per_batch


def timed(fn, *args):
    """(wall seconds, process CPU seconds incl. kernel time, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def bench_append(directory: Path, pool: list[bytearray], count: int) -> Log:
    # One segment holds everything, so the dump below reads the whole volume from one file.
    config = LogConfig(segment_bytes=min(2**31 - 1, count * len(pool[0]) + (1 << 20)))
    log = Log.open(directory, config)
    for i in range(count):
        log.append(pool[i & 63])
    return log


def bench_plain_write(path: Path, pool: list[bytearray], count: int) -> None:
    with open(path, "wb", buffering=0) as f:
        for i in range(count):
            f.write(pool[i & 63])


def bench_log_read(log: Log) -> tuple[float, int]:
    start = time.perf_counter()
    offset = log.log_start_offset
    end = log.log_end_offset
    total = 0
    while offset < end:
        data = log.read(offset, CHUNK).read()
        total += len(data)
        offset = _next_offset(data)
    return time.perf_counter() - start, total


def _next_offset(data: bytes) -> int:
    """The offset after the last batch in ``data``, as a consumer finds it (v2 batches)."""
    position = 0
    while True:
        _, size, _ = peek_batch_header(data, position)
        if position + size >= len(data):
            return int.from_bytes(data[position : position + 8], "big") + int.from_bytes(data[position + 23 : position + 27], "big") + 1
        position += size


def bench_plain_read(paths: list[Path]) -> tuple[float, int]:
    start = time.perf_counter()
    total = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            position = 0
            while True:
                data = os.pread(fd, CHUNK, position)
                if not data:
                    break
                position += len(data)
                total += len(data)
        finally:
            os.close(fd)
    return time.perf_counter() - start, total


def bench_dump(segment: Path, records: int) -> tuple[float, int]:
    kcli = Path(sys.executable).with_name("kcli")
    cmd = ["/usr/bin/time", "-v", str(kcli), "dump-log-segments", "--files", str(segment), "--print-data-log", "--deep-iteration"]
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        result = subprocess.run(cmd, stdout=devnull, stderr=subprocess.PIPE, text=True, check=True)
    elapsed = time.perf_counter() - start
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))
    return records / elapsed, rss_kb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3, help="alternating write rounds; the median is reported")
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args()
    if not Path("/usr/bin/time").exists():
        sys.exit("bench/storage.py needs /usr/bin/time (Debian package 'time')")

    pool, records_per_batch = make_batches(64)
    batch_size = len(pool[0])
    count = args.size_mib * 1024 * 1024 // batch_size
    total_bytes = count * batch_size
    workdir = Path(tempfile.mkdtemp(prefix="kcli-bench-", dir=args.dir))
    try:
        print(f"{count} batches of {batch_size} bytes ({records_per_batch} records each), {total_bytes / 2**20:.0f} MiB, in {workdir}")

        # Rounds alternate the two writers; each starts after os.sync() (untimed) so neither pays
        # for the other's dirty pages being written back. Wall time on a shared disk swings from
        # run to run; CPU time (user + kernel) is the work each writer does and is steady.
        plain, logged = [], []
        log = None
        for round_ in range(args.rounds):
            os.sync()
            wall, cpu, _ = timed(bench_plain_write, workdir / "plain.bin", pool, count)
            plain.append((wall, cpu))
            (workdir / "plain.bin").unlink()
            if log is not None:
                log.close()
                shutil.rmtree(workdir / "bench-0")
            os.sync()
            wall, cpu, log = timed(bench_append, workdir / "bench-0", pool, count)
            logged.append((wall, cpu))
            print(f"  round {round_ + 1}: log {total_bytes / wall / 2**20:7.1f} MiB/s ({cpu:.2f} s CPU)   "
                  f"plain {total_bytes / plain[-1][0] / 2**20:7.1f} MiB/s ({plain[-1][1]:.2f} s CPU)")
        plain_wall, plain_cpu = (statistics.median(x) for x in zip(*plain))
        log_wall, log_cpu = (statistics.median(x) for x in zip(*logged))
        print(f"append      log {total_bytes / log_wall / 2**20:8.1f} MiB/s   plain write {total_bytes / plain_wall / 2**20:8.1f} MiB/s   "
              f"wall ratio {plain_wall / log_wall:.2f}, CPU ratio {plain_cpu / log_cpu:.2f} (medians of {args.rounds}; goal >= 0.7)")

        segments = sorted((workdir / "bench-0").glob("*.log"))
        plain_read, plain_total = bench_plain_read(segments)
        log_read, log_total = bench_log_read(log)
        assert log_total == plain_total, (log_total, plain_total)
        print(f"read        log {log_total / log_read / 2**20:8.1f} MiB/s   plain read  {plain_total / plain_read / 2**20:8.1f} MiB/s   ratio {plain_read / log_read:.2f} (goal >= 0.7)")

        log.close()
        (segment,) = segments
        records = count * records_per_batch
        rate, rss_kb = bench_dump(segment, records)
        print(f"dump        {rate:,.0f} records/s (goal >= 300,000)   peak RSS {rss_kb / 1024:.1f} MB (goal < 100)   {segment.stat().st_size / 2**20:.0f} MiB segment")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
