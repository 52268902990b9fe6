"""Spark benchmark: kcli's data source reading Kafka log dirs and a broker into DataFrames.

Phase 1 (offline, no broker): a log dir of RECORDS records (8-byte-ish keys, 100-byte values, in
~16 KiB batches like a Java producer's default batch.size, spread over PARTITIONS partitions) is
written with kcli's storage package, then read with
``spark.read.format("kcli").option("path", ...)`` into Spark's ``noop`` sink, which makes Spark
consume every row. Prints rows/s per round and the median (goal >= 1,000,000 rows/s), after one
warm-up read that starts the Python workers. The compressed variant (``--codec lz4`` etc.) shows
what decompression costs.

Online (``--online``, the default; ``--no-online`` skips it): a kcli broker process is started on
127.0.0.1, a topic of RECORDS 100-byte values in PARTITIONS partitions is produced with
confluent-kafka, then read two ways: ``format("kcli").option("kafka.bootstrap.servers", ...)``
``.load().count()`` (rows/s, median of the rounds after a warm-up), and a confluent-kafka consumer
loop (``consume()`` of 10,000 messages at a time, every value touched) in its own process. The
ratio kcli/confluent has a goal of >= 1.0.

Export: the offline read written to Parquet (``df.write.parquet``), MB/s of Parquet written and of
log read, and rows/s.

Usage: .venv/bin/python bench/spark.py [--records 2000000] [--partitions 4] [--rounds 3]
                                       [--master local[2]] [--codec none] [--dir /tmp] [--no-online]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kcli.storage.compression import CompressionType
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.records import NewRecord, build_batch

BATCH_TARGET = 16 * 1024
VALUE_SIZE = 100
TOPIC = "bench"


def make_pool(codec: CompressionType) -> tuple[list[bytes], int]:
    """Distinct ~16 KiB batches (keys and values differ), appended round-robin."""
    pool = []
    per_batch = 0
    for b in range(32):
        records = []
        size = 61
        i = 0
        while size < BATCH_TARGET - 150:
            key = b"k%d-%d" % (b, i)
            value = (b"v%d-%d-" % (b, i)).ljust(VALUE_SIZE, b"x")
            records.append(NewRecord(key, value, 1_700_000_000_000 + i))
            size += len(key) + len(value) + 10
            i += 1
        per_batch = len(records)
        pool.append(build_batch(records, compression=codec))
    return pool, per_batch


def write_log_dir(directory: Path, records: int, partitions: int, codec: CompressionType) -> int:
    """Appends whole batches until ``records`` are written; returns the exact record count."""
    pool, per_batch = make_pool(codec)
    manager = LogManager([directory], LogConfig())
    written = 0
    try:
        logs = [manager.get_or_create_log(TOPIC, p) for p in range(partitions)]
        n = 0
        while written < records:
            logs[n % partitions].append(pool[n % len(pool)])
            written += per_batch
            n += 1
    finally:
        manager.shutdown()
    return written


def offline_read(spark, directory: Path) -> float:
    """Seconds to read the whole topic into the noop sink."""
    start = time.perf_counter()
    (
        spark.read.format("kcli")
        .option("path", str(directory))
        .option("subscribe", TOPIC)
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    return time.perf_counter() - start


def online_count(spark, bootstrap: str, topic: str) -> tuple[float, int]:
    """Seconds to count the topic through the kcli source, and the count."""
    start = time.perf_counter()
    count = spark.read.format("kcli").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load().count()
    return time.perf_counter() - start, count


def parquet_export(spark, directory: Path, target: Path) -> float:
    """Seconds to write the offline read of the topic to Parquet."""
    start = time.perf_counter()
    spark.read.format("kcli").option("path", str(directory)).option("subscribe", TOPIC).load().write.mode("overwrite").parquet(str(target))
    return time.perf_counter() - start


def online(spark, work: Path, records: int, partitions: int, rounds: int) -> None:
    from broker import KcliBroker, kcli_create_topics, run_loadgen

    broker = KcliBroker(work / "broker-logs").start()
    try:
        topic = "online"
        kcli_create_topics(broker.bootstrap, {topic: partitions})
        layout = [(topic, p) for p in range(partitions)]
        produced = run_loadgen("produce", {
            "bootstrap": broker.bootstrap, "partitions": layout, "count": records, "value_size": VALUE_SIZE,
            "compression": "none", "run_bytes": 256 * 1024, "linger_ms": 5, "warmup": False,
        })
        if produced.get("undelivered") or produced.get("errors"):
            raise RuntimeError(f"producing the topic failed: {produced}")
        print(f"broker topic: {records:,} records of {VALUE_SIZE} B in {partitions} partitions (produced in {produced['seconds']:.1f} s)")

        warm, count = online_count(spark, broker.bootstrap, topic)
        if count != records:
            raise RuntimeError(f"the kcli source counted {count} records, expected {records}")
        print(f"online warm-up count: {warm:.2f} s ({records / warm:,.0f} rows/s)")
        rates = []
        for n in range(rounds):
            seconds, count = online_count(spark, broker.bootstrap, topic)
            assert count == records
            rates.append(records / seconds)
            print(f"online round {n + 1}: {seconds:.2f} s, {records / seconds:,.0f} rows/s")
        kcli_rate = statistics.median(rates)

        confluent = []
        for n in range(rounds):
            result = run_loadgen("consume", {"bootstrap": broker.bootstrap, "partitions": layout, "count": records})
            if result["records"] != records or result.get("errors"):
                raise RuntimeError(f"the confluent-kafka consumer read {result['records']} of {records}: {result.get('errors')}")
            confluent.append(records / result["seconds"])
            print(f"confluent-kafka consumer round {n + 1}: {result['seconds']:.2f} s, {records / result['seconds']:,.0f} rows/s")
        confluent_rate = statistics.median(confluent)
        ratio = kcli_rate / confluent_rate
        verdict = "meets" if ratio >= 1.0 else "misses"
        print(f"online count(): median {kcli_rate:,.0f} rows/s vs confluent-kafka loop {confluent_rate:,.0f} rows/s: "
              f"ratio {ratio:.2f} ({verdict} the goal of 1.0)")
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--codec", default="none", choices=[c.name.lower() for c in CompressionType])
    parser.add_argument("--dir", default=None, help="where to write the log dir (default: a temporary directory)")
    parser.add_argument("--online", action=argparse.BooleanOptionalAction, default=True, help="also benchmark the online source against a broker")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kcli-bench-spark-", dir=args.dir))
    try:
        log_dir = work / "kafka-logs"
        t = time.perf_counter()
        written = write_log_dir(log_dir, args.records, args.partitions, CompressionType[args.codec.upper()])
        size = sum(f.stat().st_size for f in log_dir.rglob("*.log"))
        print(f"log dir: {written:,} records in {args.partitions} partitions, {size / 2**20:.0f} MiB, codec {args.codec} "
              f"(written in {time.perf_counter() - t:.1f} s)")

        from kcli.spark.session import get_spark, stop_spark

        t = time.perf_counter()
        spark = get_spark(args.master)
        print(f"session: {args.master}, started in {time.perf_counter() - t:.1f} s")
        try:
            warm = offline_read(spark, log_dir)
            print(f"warm-up read: {warm:.2f} s ({written / warm:,.0f} rows/s, includes starting the Python workers)")
            rates = []
            for n in range(args.rounds):
                seconds = offline_read(spark, log_dir)
                rates.append(written / seconds)
                print(f"round {n + 1}: {seconds:.2f} s, {written / seconds:,.0f} rows/s")
            median = statistics.median(rates)
            verdict = "meets" if median >= 1_000_000 else "misses"
            print(f"offline log-dir read: median {median:,.0f} rows/s, best {max(rates):,.0f} rows/s ({verdict} the goal of 1,000,000 rows/s)")


            log_size = sum(f.stat().st_size for f in log_dir.rglob("*.log"))
            exports = []
            for n in range(args.rounds):
                seconds = parquet_export(spark, log_dir, work / "parquet")
                parquet_size = sum(f.stat().st_size for f in (work / "parquet").rglob("*.parquet"))
                exports.append((seconds, parquet_size))
                print(f"parquet export round {n + 1}: {seconds:.2f} s, {parquet_size / 1e6 / seconds:.1f} MB/s of Parquet, "
                      f"{log_size / 1e6 / seconds:.1f} MB/s of log read, {written / seconds:,.0f} rows/s")
            seconds, parquet_size = sorted(exports)[len(exports) // 2]
            print(f"parquet export: median {parquet_size / 1e6 / seconds:.1f} MB/s written ({parquet_size / 1e6:.0f} MB), "
                  f"{log_size / 1e6 / seconds:.1f} MB/s of log read, {written / seconds:,.0f} rows/s")

            if args.online:
                online(spark, work, args.records, args.partitions, args.rounds)
        finally:
            stop_spark(spark)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
