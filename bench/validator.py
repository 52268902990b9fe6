"""The produce path's record checks alone: validate_and_assign_offsets on the same batches, for any tree.

Builds compressed batches of bench/broker.py's values (2,600 x 100 B and 256 x 1 KiB records, the
size of librdkafka's batches in its 256 KiB runs) with kcli's own batch builder, then validates a
fresh copy of each, as a leader does before appending, and prints the CPU seconds per GB of
records (the best of ``--repeat``). With ``--callgrind`` only the validation is counted, so that
``valgrind --tool=callgrind`` gives its instructions:

  PYTHONPATH=TREE valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \\
      .venv/bin/python bench/validator.py --callgrind --codec lz4 --value-size 100
  callgrind_annotate /tmp/cg.*.1 | grep 'PROGRAM TOTALS'

Usage: .venv/bin/python bench/validator.py [--codec lz4|gzip|snappy|zstd|none] [--value-size 100|1024] [--batches N] [--repeat N] [--callgrind]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _loadgen import value_pool  # noqa: E402  (the benchmark's own values)

from kcli.storage.compression import CompressionType  # noqa: E402
from kcli.storage.log_config import LogConfig  # noqa: E402
from kcli.storage.log_validator import validate_and_assign_offsets  # noqa: E402
from kcli.storage.records import NewRecord, build_batch  # noqa: E402

NOW = 1_764_000_000_000
RECORDS_PER_BATCH = {100: 2600, 1024: 256}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--codec", default="lz4", choices=[c.label for c in CompressionType])
    parser.add_argument("--value-size", type=int, default=100, choices=sorted(RECORDS_PER_BATCH))
    parser.add_argument("--batches", type=int, default=None, help="batches validated per pass (default: about 5 MB of records)")
    parser.add_argument("--repeat", type=int, default=7, help="passes; the fastest is shown")
    parser.add_argument("--callgrind", action="store_true", help="one pass, counted alone by callgrind_control (run under valgrind)")
    args = parser.parse_args()
    codec = next(c for c in CompressionType if c.label == args.codec)
    count = RECORDS_PER_BATCH[args.value_size]
    batches = args.batches or max(1, 5_000_000 // (count * args.value_size))
    pool = value_pool(args.value_size)
    raw = build_batch([NewRecord(None, pool[i % len(pool)], NOW) for i in range(count)], compression=codec)
    config = LogConfig()
    validate_and_assign_offsets(bytearray(raw), first_offset=0, config=config, partition="bench-0", now=NOW)  # caches warm
    gigabytes = batches * count * args.value_size / 1e9
    if args.callgrind:
        copies = [bytearray(raw) for _ in range(batches)]
        subprocess.run(["callgrind_control", "-z", str(os.getpid())], capture_output=True)
        for copy in copies:
            validate_and_assign_offsets(copy, first_offset=0, config=config, partition="bench-0", now=NOW)
        subprocess.run(["callgrind_control", "-d", str(os.getpid())], capture_output=True)
        print(f"{batches} batches of {count} x {args.value_size} B {args.codec} validated under callgrind")
        return
    best = float("inf")
    for _ in range(args.repeat):
        copies = [bytearray(raw) for _ in range(batches)]
        started = time.process_time()
        for copy in copies:
            validate_and_assign_offsets(copy, first_offset=0, config=config, partition="bench-0", now=NOW)
        best = min(best, time.process_time() - started)
    print(f"{batches} batches of {count} x {args.value_size} B {args.codec} ({len(raw):,} B each): {best / gigabytes:.2f} CPU s per GB of records (best of {args.repeat})")


if __name__ == "__main__":
    main()
