"""What ``kcli stats`` computes, on Spark: per-partition record statistics and a batch histogram.

Records (a DataFrame over the ``kcli`` source): per topic-partition the record count, key and
value bytes, distinct keys (exact; a null key counts as no key), the offset range and the
earliest and latest timestamps.

Batches (a second job over the same planned ranges, reading batch headers only): per topic and
codec, how many batches and records, their bytes, and how many records the batches hold
(buckets 1, 2-10, 11-100, 101-1000, 1001+). Control batches (transaction markers) are counted
under ``control``.
"""

from __future__ import annotations

from collections.abc import Iterator

from kcli.spark.options import SourceOptions

BUCKETS = ((1, "1"), (10, "2-10"), (100, "11-100"), (1000, "101-1000"), (None, "1001+"))


def bucket(records: int) -> str:
    for limit, name in BUCKETS:
        if limit is None or records <= limit:
            return name
    return BUCKETS[-1][1]


def record_stats(df) -> list[dict]:
    from pyspark.sql import functions as F

    rows = (
        df.groupBy("topic", "partition")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.sum(F.coalesce(F.length("key"), F.lit(0))).alias("key_bytes"),
            F.sum(F.coalesce(F.length("value"), F.lit(0))).alias("value_bytes"),
            F.countDistinct("key").alias("distinct_keys"),
            F.min("offset").alias("first_offset"),
            F.max("offset").alias("last_offset"),
            F.min(F.unix_millis("timestamp")).alias("first_timestamp"),
            F.max(F.unix_millis("timestamp")).alias("last_timestamp"),
        )
        .orderBy("topic", "partition")
        .collect()
    )
    return [row.asDict() for row in rows]


def _range_batches(options: SourceOptions, r) -> Iterator:
    if options.offline:
        from kcli.spark.offline import _start_position
        from kcli.storage.file_records import FileRecords

        with FileRecords.open(r.path) as records:
            for _position, batch in records.batches(_start_position(records, r)):
                yield batch
        return
    from kcli.spark.online import _RangeFetcher

    fetcher = _RangeFetcher(r, dict(r.params), options.fail_on_data_loss, options.poll_timeout_ms)
    for _position, batch in fetcher.batches():
        yield batch


def _batch_counts(options: SourceOptions, ranges: Iterator) -> Iterator[tuple]:
    counts: dict[tuple, list[int]] = {}
    for r in ranges:
        for batch in _range_batches(options, r):
            # A batch belongs to the range holding its last offset, so each is counted once.
            if batch.last_offset >= r.end:
                break
            if batch.last_offset < r.start:
                continue
            codec = "control" if getattr(batch, "is_control", False) else batch.compression.name.lower()
            entry = counts.setdefault((r.topic, codec, bucket(batch.record_count)), [0, 0, 0])
            entry[0] += 1
            entry[1] += batch.record_count
            entry[2] += batch.size_in_bytes
    for key, (batches, records, size) in counts.items():
        yield (*key, batches, records, size)


def batch_stats(spark, options: SourceOptions, ranges: list) -> dict[str, dict[str, dict]]:
    """``{topic: {codec: {"batches", "records", "bytes", "records_per_batch": {bucket: n}}}}``."""
    if not ranges:
        return {}
    found = spark.sparkContext.parallelize(ranges, len(ranges)).mapPartitions(lambda part: _batch_counts(options, part)).collect()
    out: dict[str, dict[str, dict]] = {}
    for topic, codec, size_bucket, batches, records, size in found:
        entry = out.setdefault(topic, {}).setdefault(codec, {"batches": 0, "records": 0, "bytes": 0, "records_per_batch": {}})
        entry["batches"] += batches
        entry["records"] += records
        entry["bytes"] += size
        entry["records_per_batch"][size_bucket] = entry["records_per_batch"].get(size_bucket, 0) + batches
    return out
