"""Kafka log dirs read as DataFrames with no broker: spark.read.format("kcli").option("path", ...).

The log dirs are written with kcli's storage package (LogManager, Log.append) and, when
../shared/kafka-segments exists, are the data directories real Kafka brokers wrote. Every
expected row comes from kcli's storage reader over the same files (FileRecords, batch.records()),
so the DataFrame is compared column by column with what the format says the files hold.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import struct
import sys
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.errors import KcliError
from kcli.spark.arrow_rows import RowBatchBuilder, arrow_schema, schema_ddl
from kcli.spark.columnar import ColumnarChunk, Refused
from kcli.spark.offline import DataLossError, SegmentRange, read_range
from kcli.storage.compression import CompressionType
from kcli.storage.file_records import FileRecords
from kcli.storage.log import parse_topic_partition_name
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.records import (
    ControlType,
    NewRecord,
    RecordBatch,
    build_batch,
    control_record,
    end_txn_marker_value,
)

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
T0 = 1_700_000_000_000
CODECS = list(CompressionType)


# -- writing log dirs --------------------------------------------------------------------------------


def random_records(rng: random.Random, count: int, t: int) -> list[NewRecord]:
    records = []
    for i in range(count):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 20))
        roll = rng.random()
        if roll < 0.1:
            value = None
        elif roll < 0.15:
            value = b""
        elif roll < 0.4 and i == 0:
            value = rng.randbytes(9_000)  # a 3-byte length varint
        else:
            value = rng.randbytes(rng.choice([3, 12, 13, 60, 100]))
        headers = []
        if rng.random() < 0.3:
            headers = [(f"h{j}-é", None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 9))) for j in range(rng.randint(1, 3))]
        t += rng.randint(-3_000, 900_000_000)  # deltas of either sign, up to ten days
        records.append(NewRecord(key, value, t, headers))
    return records


def legacy_message(offset: int, magic: int, key: bytes | None, value: bytes | None, timestamp: int = -1) -> bytes:
    """A magic 0 or 1 message, from the layout in records.py's docstring."""
    body = struct.pack(">bb", magic, 0) + (struct.pack(">q", timestamp) if magic == 1 else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


@pytest.fixture(scope="module")
def log_dirs(tmp_path_factory) -> tuple[Path, Path]:
    """Two log dirs. A: orders-0..2 (keys, null keys and values, headers, every codec, several
    segments), events-0 (LogAppendTime, a committed transaction: a control batch), legacy-0 (magic
    0 and 1 messages), __consumer_offsets-0. B: audit-0."""
    root = tmp_path_factory.mktemp("logdirs")
    a, b = root / "a", root / "b"
    rng = random.Random(6)
    manager = LogManager([a], LogConfig(segment_bytes=20_000))
    try:
        for partition in range(3):
            log = manager.get_or_create_log("orders", partition)
            t = T0
            for n in range(14):
                records = random_records(rng, rng.randint(1, 40), t)
                t = records[-1].timestamp
                log.append(build_batch(records, compression=CODECS[(n + partition) % len(CODECS)]))
        events = manager.get_or_create_log("events", 0, config=LogConfig(message_timestamp_type="LogAppendTime"))
        events.append(build_batch([NewRecord(b"e", b"before", T0)]), log_append_time=T0 + 5)
        txn = dict(producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
        events.append(build_batch([NewRecord(b"t", b"in-txn-%d" % i, T0) for i in range(3)], **txn), origin="coordinator")
        marker = control_record(ControlType.COMMIT, end_txn_marker_value(0), T0)
        events.append(build_batch([marker], producer_id=7, producer_epoch=0, transactional=True, control=True), origin="coordinator")
        events.append(build_batch([NewRecord(None, b"after", T0)], compression=CompressionType.ZSTD), log_append_time=T0 + 9)
        offsets = manager.get_or_create_log("__consumer_offsets", 0)
        offsets.append(build_batch([NewRecord(b"\x00\x01group", b"commit", T0)]))
    finally:
        manager.shutdown()
    legacy = a / "legacy-0"
    legacy.mkdir()
    (legacy / "00000000000000000000.log").write_bytes(
        legacy_message(0, 0, b"k0", b"magic zero") + legacy_message(1, 1, None, b"magic one", T0) + legacy_message(2, 1, b"k2", None, T0 + 1)
    )
    manager = LogManager([b], LogConfig())
    try:
        manager.get_or_create_log("audit", 0).append(build_batch([NewRecord(b"who", b"what", T0 + i) for i in range(5)]))
    finally:
        manager.shutdown()
    assert len(list((a / "orders-0").glob("*.log"))) >= 3, "orders-0 spans several segments"
    return a, b


# -- the expected rows: kcli's storage reader ----------------------------------------------------------------


def storage_rows(*log_dirs: Path, topics: set[str] | None = None, include_headers: bool = True) -> list[dict]:
    rows = []
    for log_dir in log_dirs:
        for directory in sorted(p for p in log_dir.iterdir() if p.is_dir()):
            try:
                topic, partition = parse_topic_partition_name(directory.name)
            except KcliError:
                continue
            if topics is not None and topic not in topics:
                continue
            for segment in sorted(directory.glob("*.log")):
                with FileRecords.open(segment) as records:
                    for _, batch in records.batches():
                        if batch.is_control:
                            continue
                        for record in batch.records():
                            row = {
                                "key": None if record.key is None else bytes(record.key),
                                "value": None if record.value is None else bytes(record.value),
                                "topic": topic,
                                "partition": partition,
                                "offset": record.offset,
                                "timestamp": EPOCH + timedelta(milliseconds=record.timestamp),
                                "timestampType": int(batch.timestamp_type),
                            }
                            if include_headers:
                                row["headers"] = [{"key": k, "value": v} for k, v in record.headers] or None
                            rows.append(row)
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))


def spark_rows(df) -> list[dict]:
    return sorted(df.toArrow().to_pylist(), key=lambda r: (r["topic"], r["partition"], r["offset"]))


def read(spark, *paths: Path, **options):
    reader = spark.read.format("kcli").option("path", ",".join(str(p) for p in paths))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def partition_offsets(rows: list[dict], topic: str, partition: int) -> list[int]:
    return [r["offset"] for r in rows if r["topic"] == topic and r["partition"] == partition]


# -- batch reads through Spark ------------------------------------------------------------------------------


def test_every_column_matches_the_storage_reader(spark, log_dirs):
    a, b = log_dirs
    df = read(spark, a, b, subscribe="orders,events,legacy,audit", includeHeaders="true")
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,timestampType:int,"
        "headers:array<struct<key:string,value:binary>>>"
    )
    expected = storage_rows(a, b, topics={"orders", "events", "legacy", "audit"})
    got = spark_rows(df)
    assert len(got) == len(expected) > 300
    assert got == expected
    # What the data holds: every codec, headers, nulls; transaction data without its marker; LogAppendTime.
    events = [r for r in got if r["topic"] == "events"]
    assert [r["value"] for r in events] == [b"before", b"in-txn-0", b"in-txn-1", b"in-txn-2", b"after"]
    assert [r["offset"] for r in events] == [0, 1, 2, 3, 5]  # offset 4 is the commit marker
    assert events[0]["timestampType"] == 1 and events[0]["timestamp"] == EPOCH + timedelta(milliseconds=T0 + 5)
    legacy = [r for r in got if r["topic"] == "legacy"]
    assert [(r["value"], r["timestampType"]) for r in legacy] == [(b"magic zero", -1), (b"magic one", 0), (None, 0)]
    assert any(r["headers"] for r in got) and any(r["key"] is None for r in got) and any(r["value"] is None for r in got)


def test_without_include_headers_the_columns_are_sparks_seven(spark, log_dirs):
    a, _ = log_dirs
    df = read(spark, a, subscribe="orders")
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert spark_rows(df) == storage_rows(a, topics={"orders"}, include_headers=False)


def test_the_arrow_schema_is_the_one_spark_derives(spark):
    from pyspark.sql.pandas.types import to_arrow_schema

    for headers in (False, True):
        for corrupt in (False, True):
            struct_type = spark.createDataFrame([], schema_ddl(headers, corrupt)).schema
            assert arrow_schema(headers, corrupt) == to_arrow_schema(struct_type, timezone="UTC")


def test_one_input_partition_per_segment_range_and_min_partitions_splits_further(spark, log_dirs):
    a, _ = log_dirs
    segments = [p for d in sorted(a.glob("orders-*")) for p in sorted(d.glob("*.log")) if p.stat().st_size]
    df = read(spark, a, subscribe="orders")
    assert df.rdd.getNumPartitions() == len(segments)
    split = read(spark, a, subscribe="orders", minPartitions=str(3 * len(segments)))
    assert split.rdd.getNumPartitions() > len(segments)
    assert spark_rows(split) == spark_rows(df)


def test_offsets_json_bounds_each_partition(spark, log_dirs):
    a, _ = log_dirs
    everything = storage_rows(a, topics={"orders"}, include_headers=False)
    last0 = partition_offsets(everything, "orders", 0)[-1]
    starting = {"orders": {"0": 5, "1": -2, "2": 17}}
    ending = {"orders": {"0": 40, "1": 9, "2": -1}}
    df = read(spark, a, subscribe="orders", startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending))
    got = spark_rows(df)
    bounds = {0: (5, 40), 1: (0, 9), 2: (17, 1 << 62)}
    assert got == [r for r in everything if bounds[r["partition"]][0] <= r["offset"] < bounds[r["partition"]][1]]
    assert 5 < last0 and partition_offsets(got, "orders", 0)[0] == 5


def test_timestamps_resolve_to_the_first_offset_at_or_after_them(spark, log_dirs):
    a, _ = log_dirs
    everything = storage_rows(a, topics={"orders"}, include_headers=False)
    stamps = sorted(r["timestamp"] for r in everything)
    t1, t2 = stamps[len(stamps) // 4], stamps[len(stamps) // 2]
    ms = lambda t: (t - EPOCH) // timedelta(milliseconds=1)  # noqa: E731
    df = read(spark, a, subscribe="orders", startingTimestamp=str(ms(t1)), endingTimestamp=str(ms(t2)))

    def first_at_or_after(partition: int, t: datetime) -> int:
        rows = [r for r in everything if r["partition"] == partition]
        return next((r["offset"] for r in rows if r["timestamp"] >= t), rows[-1]["offset"] + 1)

    expected = [r for r in everything if first_at_or_after(r["partition"], t1) <= r["offset"] < first_at_or_after(r["partition"], t2)]
    assert spark_rows(df) == expected and expected


def test_assign_patterns_and_internal_topics(spark, log_dirs):
    a, b = log_dirs
    assigned = spark_rows(read(spark, a, assign=json.dumps({"orders": [1], "events": [0]})))
    assert {(r["topic"], r["partition"]) for r in assigned} == {("orders", 1), ("events", 0)}
    every = spark_rows(read(spark, a, b, subscribePattern=".*"))
    assert {r["topic"] for r in every} == {"orders", "events", "legacy", "audit"}  # never __consumer_offsets
    internal = spark_rows(read(spark, a, subscribe="__consumer_offsets"))
    assert [(r["key"], r["value"]) for r in internal] == [(b"\x00\x01group", b"commit")]
    assert spark_rows(read(spark, a, subscribe="no-such-topic")) == []
    with pytest.raises(Exception, match=r"assigned partitions not found in the log dirs: orders-7"):
        read(spark, a, assign=json.dumps({"orders": [7]})).collect()


def test_offsets_that_are_not_in_the_files_are_data_loss(spark, log_dirs, tmp_path):
    a, _ = log_dirs
    copy = tmp_path / "logs"
    shutil.copytree(a / "orders-0", copy / "orders-0")
    first = sorted((copy / "orders-0").glob("*.log"))[0]
    first.unlink()  # the oldest segment is gone (retention, or never copied)
    earliest = min(int(p.name.split(".")[0]) for p in (copy / "orders-0").glob("*.log"))
    starting = json.dumps({"orders": {"0": 0}})
    with pytest.raises(Exception, match=rf"startingOffsets 0 of orders-0 is below its earliest offset {earliest}.*failOnDataLoss=false"):
        read(spark, copy, subscribe="orders", startingOffsets=starting).collect()
    rows = spark_rows(read(spark, copy, subscribe="orders", startingOffsets=starting, failOnDataLoss="false"))
    assert rows[0]["offset"] == earliest and rows == storage_rows(copy, topics={"orders"}, include_headers=False)


def test_bad_batches_fail_the_read_or_are_skipped_or_shown(spark, log_dirs, tmp_path):
    a, _ = log_dirs
    copy = tmp_path / "logs"
    shutil.copytree(a / "orders-0", copy / "orders-0")
    for segment in sorted((copy / "orders-0").glob("*.log")):
        with FileRecords.open(segment) as records:
            batches = list(records.batches())
        if len(batches) >= 3:
            break
    position, victim = batches[1]
    raw = bytes(victim.buffer[victim.position : victim.position + victim.size_in_bytes])
    first, last = victim.base_offset, victim.last_offset
    data = bytearray(segment.read_bytes())
    data[position + 70] ^= 0xFF  # inside the CRC-covered part
    segment.write_bytes(bytes(data))
    intact = [r for r in storage_rows(a, topics={"orders"}, include_headers=False) if r["partition"] == 0]

    with pytest.raises(Exception, match=rf"corrupt record batch in {segment} at position {position} \(offset {first}\).*crc"):
        read(spark, copy, subscribe="orders").collect()
    skipped = spark_rows(read(spark, copy, subscribe="orders", failOnDataLoss="false"))
    assert skipped == [r for r in intact if not first <= r["offset"] <= last]
    shown = spark_rows(read(spark, copy, subscribe="orders", includeCorrupt="true"))
    bad = [r for r in shown if r["corrupt"] is not None]
    assert len(bad) == 1 and bad[0]["offset"] == first and bad[0]["value"] == bytes(data[position : position + len(raw)])
    assert bad[0]["timestamp"] is None and str(position) in bad[0]["corrupt"] and "crc" in bad[0]["corrupt"]
    assert [{k: v for k, v in r.items() if k != "corrupt"} for r in shown if r["corrupt"] is None] == skipped


# -- real Kafka data directories ----------------------------------------------------------------------------


def kafka_log_dirs() -> list[Path]:
    return sorted(SEGMENTS.glob("*/kafka-logs")) if SEGMENTS.is_dir() else []


@pytest.mark.skipif(not SEGMENTS.is_dir(), reason="../shared/kafka-segments (real Kafka data) is not present")
def test_log_dirs_written_by_kafka_read_as_the_storage_reader_reads_them(spark):
    for log_dir in kafka_log_dirs():
        topics = {parse_topic_partition_name(p.name)[0] for p in log_dir.iterdir() if p.is_dir()}
        df = read(spark, log_dir, subscribe=",".join(sorted(topics)), includeHeaders="true")
        expected = storage_rows(log_dir)
        assert spark_rows(df) == expected, log_dir
    cities = spark_rows(read(spark, SEGMENTS / "zk-3.1.0-bheem6005/kafka-logs", subscribe="cities"))
    assert [(r["offset"], r["key"]) for r in cities] == [(i, None) for i in range(11)]
    assert cities[0]["value"] == b"New York"
    snappy = spark_rows(read(spark, SEGMENTS / "zk-2.8.0-seanorth/kafka-logs", subscribe="some-topic"))
    assert len(snappy) == 9


# -- streaming ------------------------------------------------------------------------------------------------


def append_stream_data(log_dir: Path, first: int, count: int) -> None:
    manager = LogManager([log_dir], LogConfig(segment_bytes=2048))
    try:
        for partition in range(2):
            log = manager.get_or_create_log("s", partition)
            for i in range(first, first + count, 10):
                log.append(build_batch([NewRecord(b"p%d" % partition, b"v%d" % j, T0 + j) for j in range(i, i + 10)]))
    finally:
        manager.shutdown()


class Collector:
    """A foreachBatch sink that keeps each micro-batch's rows by batch id (a replay overwrites)."""

    def __init__(self, fail_batch: int | None = None) -> None:
        self.batches: dict[int, list[tuple[int, int, bytes]]] = {}
        self.attempts: list[int] = []
        self.fail_batch = fail_batch

    def __call__(self, df, batch_id: int) -> None:
        rows = sorted((r["partition"], r["offset"], bytes(r["value"])) for r in df.collect())
        self.attempts.append(batch_id)
        self.batches[batch_id] = rows
        if batch_id == self.fail_batch:
            self.fail_batch = None
            raise RuntimeError("the sink fails once")

    def rows(self) -> list[tuple[int, int, bytes]]:
        return sorted(row for rows in self.batches.values() for row in rows)


def run_stream(spark, log_dir: Path, checkpoint: Path, sink: Collector, **options):
    reader = spark.readStream.format("kcli").option("path", str(log_dir)).option("subscribe", "s").option("startingOffsets", "earliest")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    return query


def expected_stream_rows(count: int) -> list[tuple[int, int, bytes]]:
    return sorted((p, j, b"v%d" % j) for p in range(2) for j in range(count))


def test_stream_available_now_limits_restarts_and_replays_exactly(spark, tmp_path):
    log_dir, checkpoint = tmp_path / "logs", tmp_path / "checkpoint"
    append_stream_data(log_dir, 0, 50)

    first = Collector()
    run_stream(spark, log_dir, checkpoint, first, maxOffsetsPerTrigger="30")
    # 30 per trigger split evenly over two partitions that each have 50 waiting: 15 + 15, three times, then 5 + 5.
    assert [len(first.batches[i]) for i in sorted(first.batches) if first.batches[i]] == [30, 30, 30, 10]
    assert first.rows() == expected_stream_rows(50)
    offsets = json.loads((checkpoint / "offsets" / str(max(first.batches))).read_text().splitlines()[-1])
    assert offsets == {"s": {"0": 50, "1": 50}}

    append_stream_data(log_dir, 50, 30)
    second = Collector(fail_batch=max(first.batches) + 1)
    with pytest.raises(Exception, match="the sink fails once"):
        run_stream(spark, log_dir, checkpoint, second)
    failed_rows = second.batches[second.attempts[-1]]
    assert failed_rows == sorted((p, j, b"v%d" % j) for p in range(2) for j in range(50, 80))

    third = Collector()
    run_stream(spark, log_dir, checkpoint, third)
    assert third.attempts[0] == second.attempts[-1]  # the failed batch again, over the same range
    assert third.batches[third.attempts[0]] == failed_rows
    assert sorted(first.rows() + third.rows()) == expected_stream_rows(80)  # each record exactly once

    fourth = Collector()
    run_stream(spark, log_dir, checkpoint, fourth)
    assert fourth.rows() == []  # nothing new


def test_a_stream_resolves_latest_and_reads_only_what_comes_after(spark, tmp_path):
    log_dir, checkpoint = tmp_path / "logs", tmp_path / "checkpoint"
    append_stream_data(log_dir, 0, 20)
    sink = Collector()
    run_stream(spark, log_dir, checkpoint, sink, startingOffsets="latest")
    assert sink.rows() == []
    append_stream_data(log_dir, 20, 10)
    run_stream(spark, log_dir, checkpoint, sink, startingOffsets="latest")
    assert sink.rows() == sorted((p, j, b"v%d" % j) for p in range(2) for j in range(20, 30))


# -- registration ---------------------------------------------------------------------------------------------


def test_spark_finds_the_source_by_its_pyspark_module(monkeypatch):
    """What Spark's lookup worker does with every installed ``pyspark_*`` module, on the
    directory the ``pyspark_kcli`` package is installed from."""
    import pickle

    from pyspark.sql.worker import lookup_data_sources

    import pyspark_kcli
    from kcli.spark.source import KcliSource

    monkeypatch.syspath_prepend(str(Path(pyspark_kcli.__file__).parents[1]))
    out = io.BytesIO()
    lookup_data_sources._main(io.BytesIO(), out)
    out.seek(0)
    found = {}
    for _ in range(struct.unpack(">i", out.read(4))[0]):
        name = out.read(struct.unpack(">i", out.read(4))[0]).decode()
        found[name] = pickle.loads(out.read(struct.unpack(">i", out.read(4))[0]))
    assert found["kcli"] is KcliSource


def test_the_schema_is_fixed(spark, log_dirs):
    with pytest.raises(Exception, match="Kafka source has a fixed schema and cannot be set with a custom one"):
        spark.read.format("kcli").schema("value BINARY").option("path", str(log_dirs[0])).option("subscribe", "orders").load().collect()


def test_missing_java_or_pyspark_is_one_line_naming_the_install(tmp_path):
    import subprocess

    code = "from kcli.spark.session import get_spark\ntry:\n    get_spark()\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    env = {"PATH": "/usr/bin:/bin", "JAVA_HOME": str(tmp_path / "no-java"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.strip() == (
        "SparkUnavailableError Spark needs a Java runtime (17 or newer) and found no JAVA_HOME/bin/java: apt-get install default-jre-headless"
    )
    blocked = "import sys; sys.modules['pyspark'] = None\n" + code
    out = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60)
    root = Path(__file__).resolve().parents[2]
    assert out.stdout.strip() == f"SparkUnavailableError kcli's Spark features need PySpark: {root}/scripts/install --spark"


# -- the decoders, without Spark -----------------------------------------------------------------------------


def write_segment(directory: Path, batches: list[bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    return path


def whole(path: Path, topic: str = "t", partition: int = 0, start: int = 0, end: int = 1 << 62) -> SegmentRange:
    return SegmentRange(topic, partition, str(path), 0, start, end)


def slow_table(path: Path, **kwargs) -> pa.Table:
    """The same range read with the vectorised decoder refusing everything: records.py decodes it all."""
    original = ColumnarChunk.build

    def refuse(self):
        pending = self.pending
        self._reset()
        raise Refused(pending)

    ColumnarChunk.build = refuse
    try:
        return pa.Table.from_batches(list(read_range(**kwargs)), schema=arrow_schema(kwargs.get("include_headers", False)))
    finally:
        ColumnarChunk.build = original


record_strategy = st.builds(
    NewRecord,
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=300) | st.integers(8200, 8300).map(lambda n: b"z" * n),
    timestamp=st.integers(min_value=0, max_value=2**41),
    headers=st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2),
    offset_delta=st.none(),
)


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(
        st.tuples(st.lists(record_strategy, min_size=1, max_size=12), st.sampled_from(CODECS), st.booleans(), st.integers(0, 3)),
        min_size=1,
        max_size=6,
    ),
    rows_per_batch=st.sampled_from([7, 64, 65536]),
    cut=st.tuples(st.integers(0, 40), st.integers(0, 400)),
)
def test_the_vectorised_decoder_gives_what_records_py_gives(tmp_path_factory, batches, rows_per_batch, cut):
    encoded = []
    offset = 0
    for records, codec, log_append, gap in batches:
        offset += gap  # offsets skipped, as compaction leaves them
        deltas = [i * 2 if gap % 2 else i for i in range(len(records))]
        records = [r._replace(offset_delta=d) for r, d in zip(records, deltas)]
        kwargs = dict(timestamp_type=1, log_append_time=2**40) if log_append else {}
        encoded.append(build_batch(records, base_offset=offset, compression=codec, **kwargs))
        offset += deltas[-1] + 1
    path = write_segment(tmp_path_factory.mktemp("seg") / "t-0", encoded)
    start, end = cut[0], cut[0] + cut[1]
    for headers in (False, True):
        args = dict(r=whole(path, start=start, end=end), include_headers=headers, rows_per_batch=rows_per_batch)
        fast = pa.Table.from_batches(list(read_range(**args)), schema=arrow_schema(headers))
        assert fast.equals(slow_table(path, **args))


@pytest.mark.parametrize("key_size", [None, 0, 5])
@pytest.mark.parametrize("value_size", [0, 3, 100])
def test_records_of_one_shape_read_as_records_py_reads_them(tmp_path, key_size, value_size):
    """Equal-length keys and values are copied out run by run: over batches, over the widths of the
    offset deltas (a batch of 9,000 records reaches three bytes) and over a range cut mid-batch."""
    encoded, offset = [], 0
    for n, gap in ((9000, 0), (50, 3), (200, 0)):
        offset += gap
        records = [
            NewRecord(None if key_size is None else bytes([i % 251]) * key_size, bytes([(i * 7) % 256]) * value_size, T0 + i // 100)
            for i in range(n)
        ]
        encoded.append(build_batch(records, base_offset=offset))
        offset += n
    path = write_segment(tmp_path / "t-0", encoded)
    for start, end in ((0, 1 << 62), (4000, 9100)):
        args = dict(r=whole(path, start=start, end=end), rows_per_batch=65536)
        fast = pa.Table.from_batches(list(read_range(**args)), schema=arrow_schema(False))
        assert fast.equals(slow_table(path, **args))
        assert fast.num_rows == min(end, offset) - start - (3 if start < 9000 < end else 0)


def test_a_record_that_does_not_frame_is_left_to_records_py(tmp_path):
    good = build_batch([NewRecord(b"k", b"v" * 20, T0), NewRecord(b"k2", b"w", T0 + 1)])
    broken = bytearray(good)
    broken[61] = 0x7E  # the first record's length, now past the batch: the CRC still matches after the fix-up
    from crc32c import crc32c

    struct.pack_into(">I", broken, 17, crc32c(bytes(broken[21:])))
    following = build_batch([NewRecord(None, b"after", T0)], base_offset=2)
    path = write_segment(tmp_path / "t-0", [bytes(broken), following])
    with pytest.raises(DataLossError, match="at position 0 \\(offset 0\\): record of length 63 runs past the end of its batch"):
        list(read_range(whole(path)))
    rows = pa.Table.from_batches(list(read_range(whole(path), fail_on_data_loss=False))).to_pylist()
    assert [(r["offset"], r["value"]) for r in rows] == [(2, b"after")]
    rows = pa.Table.from_batches(list(read_range(whole(path), include_corrupt=True))).to_pylist()
    assert [(r["offset"], r["corrupt"] is not None) for r in rows] == [(0, True), (2, False)]


def test_a_size_that_cannot_frame_ends_the_file_and_a_partial_tail_is_just_the_end(tmp_path):
    first = build_batch([NewRecord(b"a", b"1", T0)])
    second = build_batch([NewRecord(b"b", b"2", T0)], base_offset=1)
    path = write_segment(tmp_path / "t-0", [first, second, second[:30]])
    assert [r["value"] for r in pa.Table.from_batches(list(read_range(whole(path)))).to_pylist()] == [b"1", b"2"]
    garbage = bytearray(second)
    struct.pack_into(">i", garbage, 8, 3)  # a batch size below any batch's
    path = write_segment(tmp_path / "u-0", [first, bytes(garbage)])
    with pytest.raises(DataLossError, match=rf"at position {len(first)}: Found record size 3 smaller than minimum record overhead"):
        list(read_range(whole(path)))
    rows = pa.Table.from_batches(list(read_range(whole(path), include_corrupt=True))).to_pylist()
    assert [(r["offset"], r["value"]) for r in rows][0] == (0, b"1")
    assert rows[1]["offset"] is None and "cannot be read as batches" in rows[1]["corrupt"]


def test_row_batch_builder_marks_nothing_corrupt_on_good_rows():
    builder = RowBatchBuilder("t", 3, include_corrupt=True)
    builder.add_fields(10, T0, None, 0, [(0, 0, b"k", b"v", ()), (2, 5, None, None, ())])
    batch = builder.build()
    assert batch.to_pylist() == [
        {"key": b"k", "value": b"v", "topic": "t", "partition": 3, "offset": 10, "timestamp": EPOCH + timedelta(milliseconds=T0),
         "timestampType": 0, "corrupt": None},
        {"key": None, "value": None, "topic": "t", "partition": 3, "offset": 12, "timestamp": EPOCH + timedelta(milliseconds=T0 + 5),
         "timestampType": 0, "corrupt": None},
    ]


def test_the_columnar_chunk_decodes_every_varint_width_itself():
    """Lengths of one to three bytes, deltas of up to nine, negative timestamp deltas, nulls, empty
    values, offset gaps: decoded by the vectorised path (no refusal), as records.py decodes them."""
    records = [
        NewRecord(None, b"", T0),
        NewRecord(b"k" * 12, b"v" * 13, T0 - 5),  # inline and not inline in a binary view
        NewRecord(b"k" * 70, b"v" * 9000, T0 + 2**40),
        NewRecord(b"", None, T0 + 1, offset_delta=300),
    ]
    chunk = ColumnarChunk("t", 0, 0, 1 << 62)
    builder = RowBatchBuilder("t", 0)
    for base, codec in ((0, CompressionType.NONE), (400, CompressionType.LZ4)):
        batch = RecordBatch(build_batch(records, base_offset=base, compression=codec))
        chunk.add(batch, 0, base, batch.base_timestamp, None, 0)
        builder.add_fields(base, batch.base_timestamp, None, 0, batch.record_fields())
    fast = chunk.build()
    assert fast.equals(builder.build())
    assert fast.column("offset").to_pylist() == [0, 1, 2, 300, 400, 401, 402, 700]


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(record_strategy.map(lambda r: r._replace(headers=())), min_size=1, max_size=8),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=3),
)
def test_records_damaged_under_a_valid_crc_read_as_records_py_reads_them(tmp_path_factory, records, flips):
    from crc32c import crc32c

    data = bytearray(build_batch(records))
    for where, mask in flips:
        data[61 + where % (len(data) - 61)] ^= mask
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    path = write_segment(tmp_path_factory.mktemp("seg") / "t-0", [bytes(data)])
    args = dict(r=whole(path), include_headers=True, fail_on_data_loss=False)
    fast = pa.Table.from_batches(list(read_range(**args)), schema=arrow_schema(True))
    assert fast.equals(slow_table(path, **args))
    # Without headers asked for, header bytes are only skipped: the read may keep more, never crash.
    list(read_range(whole(path), fail_on_data_loss=False))


@pytest.mark.parametrize("index", ["none", "good", "pointing-mid-batch", "zero-tail"])
def test_a_range_starting_inside_a_segment_finds_its_batch_whatever_the_index_says(tmp_path, index):
    batches = [build_batch([NewRecord(b"k", b"v%d" % (b * 5 + i), T0) for i in range(5)], base_offset=b * 5) for b in range(6)]
    path = write_segment(tmp_path / "t-0", batches)
    positions = [sum(map(len, batches[:b])) for b in range(6)]
    entries = {
        "none": None,
        "good": [(14, positions[2]), (24, positions[4])],  # the last offset of the batch starting there
        "pointing-mid-batch": [(14, positions[2] + 7), (24, positions[4] + 3)],
        "zero-tail": [(14, positions[2]), (0, 0), (0, 0)],
    }[index]
    if entries is not None:
        path.with_suffix(".index").write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries))
    rows = pa.Table.from_batches(list(read_range(whole(path, start=22, end=27)))).to_pylist()
    assert [(r["offset"], r["value"]) for r in rows] == [(o, b"v%d" % o) for o in range(22, 27)]


# -- the stream reader's offset logic, called as Spark calls it (no session) -------------------------------------


def stream_reader(log_dir: Path, **options):
    from kcli.spark.options import parse_source_options
    from kcli.spark.source import OfflineStreamReader

    return OfflineStreamReader(parse_source_options({"path": str(log_dir), "subscribe": "s", **options}, streaming=True))


def planned(reader, start: dict, end: dict) -> list[tuple[int, int, int]]:
    return [(p.value.partition, p.value.start, p.value.end) for p in reader.partitions(start, end)]


def test_stream_offsets_limits_and_available_now(tmp_path):
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

    append_stream_data(tmp_path, 0, 40)
    reader = stream_reader(tmp_path, startingOffsets="earliest", maxOffsetsPerTrigger="20")
    start = reader.initialOffset()
    assert start == {"s": {"0": 0, "1": 0}}
    assert reader.getDefaultReadLimit() == ReadMaxRows(20)
    assert reader.latestOffset(start, ReadMaxRows(20)) == {"s": {"0": 10, "1": 10}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"s": {"0": 40, "1": 40}}
    assert reader.reportLatestOffset() == {"s": {"0": 40, "1": 40}}
    assert planned(reader, start, {"s": {"0": 10, "1": 40}})[:1] == [(0, 0, 10)]
    assert sum(e - s for _, s, e in planned(reader, start, {"s": {"0": 10, "1": 40}})) == 50

    reader.prepareForTriggerAvailableNow()
    assert reader.latestOffset(start, ReadAllAvailable()) == {"s": {"0": 40, "1": 40}}
    append_stream_data(tmp_path, 40, 10)
    assert reader.latestOffset({"s": {"0": 40, "1": 40}}, ReadAllAvailable()) == {"s": {"0": 40, "1": 40}}  # the target holds

    assert stream_reader(tmp_path).initialOffset() == {"s": {"0": 50, "1": 50}}  # latest, by default
    waiting = stream_reader(tmp_path, minOffsetsPerTrigger="30", maxTriggerDelay="1h")
    assert waiting.getDefaultReadLimit() == ReadMinRows(30)
    begin = {"s": {"0": 45, "1": 45}}
    assert waiting.latestOffset(begin, ReadMinRows(30)) == {"s": {"0": 50, "1": 50}}  # the first trigger never waits
    assert waiting.latestOffset(begin, ReadMinRows(30)) == begin  # 10 waiting, fewer than 30: hold
    assert waiting.latestOffset({"s": {"0": 30, "1": 30}}, ReadMinRows(30)) == {"s": {"0": 50, "1": 50}}


def test_stream_partitions_report_data_loss(tmp_path):
    append_stream_data(tmp_path, 0, 20)
    reader = stream_reader(tmp_path)
    with pytest.raises(DataLossError, match="s-0: the start offset 20 is beyond the end offset 10"):
        reader.partitions({"s": {"0": 20, "1": 0}}, {"s": {"0": 10, "1": 20}})
    with pytest.raises(DataLossError, match=r"s-7 are gone"):
        reader.partitions({"s": {"0": 0, "1": 0, "7": 3}}, {"s": {"0": 10, "1": 20}})
    lenient = planned(stream_reader(tmp_path, failOnDataLoss="false"), {"s": {"0": 20, "1": 0}}, {"s": {"0": 10, "1": 20}})
    assert {p for p, _, _ in lenient} == {1} and sum(e - s for _, s, e in lenient) == 20  # s-0 skipped
    # A partition that appeared since the start is read from its earliest offset.
    assert {p for p, _, _ in planned(reader, {"s": {"0": 0}}, {"s": {"0": 10, "1": 20}})} == {0, 1}
    assert min(s for p, s, _ in planned(reader, {"s": {"0": 0}}, {"s": {"0": 10, "1": 20}}) if p == 1) == 0
