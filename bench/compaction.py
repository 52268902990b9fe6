"""Compaction benchmark: how fast the log cleaner compacts a log, and the memory it takes.

Builds a compacted log of SIZE bytes (uncompressed ~16 KiB batches of VALUE_SIZE-byte values whose
keys are drawn at random from UNIQUE x records keys), in a child process so that the figures below
are the cleaner's alone. Then cleans it with Kafka's default cleaner settings (128 MiB dedupe
buffer, 512 KiB I/O buffer, one thread) until the whole log below the active segment is clean,
and prints: passes, seconds (offset map build and recopy), MiB/s and records/s of the original
log, the size after cleaning, and the process's peak RSS.

Usage: .venv/bin/python bench/compaction.py [--quick | --size-mib 1024] [--unique 0.1] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kcli.storage.log import Log
from kcli.storage.log_cleaner import CleanerConfig, Cleaner, Throttler
from kcli.storage.log_cleaner_manager import LogToClean, cleanable_offsets
from kcli.storage.log_config import LogConfig
from kcli.storage.offset_map import OffsetMap
from kcli.storage.records import NewRecord, build_batch

BATCH_TARGET = 16 * 1024
MIB = 1024 * 1024


def log_config(segment_mib: int) -> LogConfig:
    return LogConfig(cleanup_policy=("compact",), segment_bytes=segment_mib * MIB, file_delete_delay_ms=0)


def build(directory: Path, size: int, unique: float, value_size: int, segment_mib: int) -> None:
    log = Log.open(directory, log_config(segment_mib))
    record_size = value_size + 25  # key, framing and varints
    per_batch = max(1, BATCH_TARGET // record_size)
    total_records = size // record_size
    keys = max(1, int(total_records * unique))
    rng = random.Random(42)
    value = bytes(value_size)
    now = int(time.time() * 1000)
    written = 0
    while log.size < size:
        batch = build_batch([NewRecord(b"key-%010d" % rng.randrange(keys), value, now) for _ in range(per_batch)])
        log.append(batch)
        written += per_batch
    log.roll()
    log.flush()
    log.close()
    print(f"built {log.size / MIB:,.0f} MiB, {written:,} records, {keys:,} keys in {directory}", flush=True)


def clean(directory: Path, segment_mib: int) -> None:
    config = CleanerConfig()
    log = Log.open(directory, log_config(segment_mib), had_clean_shutdown=True)
    log.update_high_watermark(log.log_end_offset)
    size_before = log.size
    records_before = log.log_end_offset
    cleaner = Cleaner(
        0, OffsetMap(config.dedupe_buffer_size), config.io_buffer_size // 2, config.max_message_size,
        config.dedupe_buffer_load_factor, Throttler(config.max_io_bytes_per_second),
    )
    first_dirty = log.log_start_offset
    passes = 0
    map_secs = clean_secs = 0.0
    started = time.perf_counter()
    while True:
        offsets = cleanable_offsets(log, first_dirty, cleaner.clock())
        if offsets.first_dirty_offset >= offsets.first_uncleanable_dirty_offset:
            break
        cleanable = LogToClean((log.topic, log.partition), log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset)
        first_dirty, stats = cleaner.clean(cleanable)
        passes += 1
        map_secs += stats.elapsed_index_secs
        clean_secs += stats.elapsed_secs - stats.elapsed_index_secs
    elapsed = time.perf_counter() - started
    size_after = log.size
    records_after = sum(b.record_count for s in log.segments for _, b in s.log.batches())
    log.close()
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"passes: {passes} (offset map holds {int(OffsetMap(config.dedupe_buffer_size).slots * config.dedupe_buffer_load_factor):,} keys per pass)")
    print(f"time: {elapsed:.1f} s (offset map {map_secs:.1f} s, recopy {clean_secs:.1f} s)")
    print(f"throughput: {size_before / MIB / elapsed:,.1f} MiB/s, {records_before / elapsed:,.0f} records/s of the original log")
    print(f"size: {size_before / MIB:,.1f} MiB -> {size_after / MIB:,.1f} MiB, {records_before:,} -> {records_after:,} records")
    print(f"peak RSS while cleaning: {peak_rss / MIB:,.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--quick", action="store_true", help="a 64 MiB log")
    parser.add_argument("--unique", type=float, default=0.1, help="distinct keys as a share of records")
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--segment-mib", type=int, default=128)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--build-only", metavar="LOG_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    size = 64 * MIB if args.quick else args.size_mib * MIB
    segment_mib = min(args.segment_mib, 16) if args.quick else args.segment_mib
    if args.build_only:
        build(Path(args.build_only), size, args.unique, args.value_size, segment_mib)
        return
    workdir = Path(tempfile.mkdtemp(prefix="kcli-compaction-", dir=args.dir))
    directory = workdir / "bench-0"
    try:
        command = [sys.executable, __file__, "--build-only", str(directory), "--size-mib", str(size // MIB), "--unique", str(args.unique),
                   "--value-size", str(args.value_size), "--segment-mib", str(segment_mib)]
        subprocess.run(command, check=True)
        clean(directory, segment_mib)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
