"""spark.read/readStream.format("kcli") against a real kcli broker process, and the kcli sink.

Records are produced with confluent-kafka (an independent client), so every expected row comes
from what was sent: per partition, offsets count up from 0 in send order.
"""

from __future__ import annotations

import json
import threading

import pytest
from kafka_data import create_topic, produce

from kcli.spark.options import parse_source_options

T0 = 1_700_000_000_000


def records_for(partitions: int, per_partition: int, t0: int = T0, label: str = "") -> list[dict]:
    out = []
    for p in range(partitions):
        for i in range(per_partition):
            out.append(
                {
                    "partition": p,
                    "key": None if i % 5 == 0 else f"k{p}-{i}".encode(),
                    "value": None if i % 7 == 3 else f"{label}value-{p}-{i}".encode() * (1 + i % 3),
                    "headers": [("h", f"{i}".encode()), ("empty", None)] if i % 4 == 1 else None,
                    "timestamp": t0 + i * 1000 + p,
                }
            )
    return out


def expected_rows(topic: str, records: list[dict], first_offsets: dict[int, int] | None = None) -> list[tuple]:
    offsets = dict(first_offsets or {})
    rows = []
    for r in records:
        offset = offsets.get(r["partition"], 0)
        offsets[r["partition"]] = offset + 1
        rows.append((r["key"], r["value"], topic, r["partition"], offset, r["timestamp"], 0, r["headers"]))
    return sorted(rows, key=lambda row: (row[3], row[4]))


def as_tuples(rows, headers: bool = True) -> list[tuple]:
    out = []
    for row in rows:
        stamp = round(row["timestamp"].timestamp() * 1000)
        hs = [(h["key"], None if h["value"] is None else bytes(h["value"])) for h in row["headers"]] if headers and row["headers"] is not None else None
        key = None if row["key"] is None else bytes(row["key"])
        value = None if row["value"] is None else bytes(row["value"])
        out.append((key, value, row["topic"], row["partition"], row["offset"], stamp, row["timestampType"], hs))
    return sorted(out, key=lambda row: (row[3], row[4]))


def reader(spark, broker, **options):
    read = spark.read.format("kcli").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


@pytest.fixture
def topic3(broker, unique_topic):
    """A topic of 3 partitions holding 40 records each."""
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 3)
    records = records_for(3, 40)
    produce(broker.bootstrap, topic, records)
    return topic, records


# -- batch ---------------------------------------------------------------------------------------------


def test_batch_read_gives_every_record_with_headers_one_spark_partition_per_topic_partition(spark, broker, topic3):
    topic, records = topic3
    df = reader(spark, broker, subscribe=topic, includeHeaders="true")
    assert df.rdd.getNumPartitions() == 3
    assert as_tuples(df.collect()) == expected_rows(topic, records)
    per_task = df.rdd.mapPartitions(lambda rows: [sorted({(r["partition"]) for r in rows})]).collect()
    assert sorted(map(tuple, per_task)) == [(0,), (1,), (2,)]


def test_min_partitions_splits_the_ranges_and_the_rows_stay_the_same(spark, broker, topic3):
    topic, records = topic3
    df = reader(spark, broker, subscribe=topic, minPartitions="7")
    # Spark's range calculator: each 40-record range gets round(40 / 120 * 7) = 2 pieces.
    assert df.rdd.getNumPartitions() == 6
    rows = as_tuples(df.collect(), headers=False)
    assert rows == [r[:7] + (None,) for r in expected_rows(topic, records)]


def test_starting_and_ending_offsets_json_read_exactly_that_range(spark, broker, topic3):
    topic, records = topic3
    starting = json.dumps({topic: {"0": 5, "1": -2, "2": 39}})
    ending = json.dumps({topic: {"0": 17, "1": 3, "2": -1}})
    rows = reader(spark, broker, assign=json.dumps({topic: [0, 1, 2]}), startingOffsets=starting, endingOffsets=ending).select("partition", "offset").collect()
    got = sorted((r["partition"], r["offset"]) for r in rows)
    assert got == [(0, o) for o in range(5, 17)] + [(1, o) for o in range(0, 3)] + [(2, 39)]


def test_starting_and_ending_timestamps_resolve_like_offsets_for_times(spark, broker, topic3):
    topic, _records = topic3
    # Partition p's record i has timestamp T0 + i*1000 + p.
    df = reader(spark, broker, subscribe=topic, startingTimestamp=str(T0 + 10_000), endingTimestamp=str(T0 + 12_500))
    got = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())
    assert got == [(p, o) for p in range(3) for o in (10, 11, 12)]
    by_partition = json.dumps({topic: {"0": T0 + 38_000, "1": T0 + 39_001, "2": T0 + 39_003}})
    # Partition 2's last record is at T0 + 39_002: nothing at or after T0 + 39_003.
    with pytest.raises(Exception, match=rf"No offset matched from request of topic-partition {topic}-2 and timestamp {T0 + 39_003}"):
        reader(spark, broker, subscribe=topic, startingOffsetsByTimestamp=by_partition).collect()
    df = reader(spark, broker, subscribe=topic, startingOffsetsByTimestamp=by_partition, startingOffsetsByTimestampStrategy="latest")
    got = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())
    assert got == [(0, 38), (0, 39), (1, 39)]


def test_subscribe_pattern_reads_only_matching_topics(spark, broker, unique_topic):
    prefix = unique_topic("pat")
    for suffix, count in (("a", 3), ("b", 4)):
        create_topic(broker.bootstrap, f"{prefix}.{suffix}", 1)
        produce(broker.bootstrap, f"{prefix}.{suffix}", [{"value": b"v", "partition": 0}] * count)
    create_topic(broker.bootstrap, f"{prefix}x", 1)
    produce(broker.bootstrap, f"{prefix}x", [{"value": b"v", "partition": 0}])
    df = reader(spark, broker, subscribePattern=prefix.replace(".", r"\.") + r"\.[ab]")
    counts = {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {f"{prefix}.a": 3, f"{prefix}.b": 4}


def test_the_offline_read_of_the_log_dir_equals_the_online_read(spark, broker, topic3):
    topic, _records = topic3
    online = as_tuples(reader(spark, broker, subscribe=topic, includeHeaders="true").collect())
    offline = spark.read.format("kcli").option("path", str(broker.log_dir)).option("subscribe", topic).option("includeHeaders", "true").load()
    assert as_tuples(offline.collect()) == online
    assert len(online) == 120


def test_fail_on_data_loss_for_deleted_records_and_offsets_beyond_the_end(spark, broker, unique_topic):
    from kcli.client.admin import Admin, TopicPartition
    from kcli.client.network_client import NetworkClient
    from kcli.client.sync import SyncRunner

    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [{"value": str(i).encode(), "partition": 0} for i in range(20)])
    with SyncRunner() as runner:
        cluster = NetworkClient(broker.bootstrap)

        async def delete() -> None:
            async with cluster:
                result = await Admin(cluster).delete_records({TopicPartition(topic, 0): 8})
                assert result[TopicPartition(topic, 0)].error is None

        runner.run(delete())
    starting = json.dumps({topic: {"0": 2}})
    with pytest.raises(Exception, match="below its earliest offset 8"):
        reader(spark, broker, subscribe=topic, startingOffsets=starting).collect()
    rows = reader(spark, broker, subscribe=topic, startingOffsets=starting, failOnDataLoss="false").collect()
    assert [r["offset"] for r in rows] == list(range(8, 20))
    beyond = json.dumps({topic: {"0": 25}})
    with pytest.raises(Exception, match="beyond its latest offset 20"):
        reader(spark, broker, subscribe=topic, endingOffsets=beyond).collect()


def test_a_range_whose_records_vanish_before_the_read_is_data_loss(broker, unique_topic):
    from kcli.spark.online import BrokerRange, read_broker_range
    from kcli.spark.options import DataLossError

    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [{"value": b"x", "partition": 0}] * 5)
    gone = BrokerRange(topic, 0, 3, 9, broker.bootstrap, ())
    with pytest.raises(DataLossError, match=r"offsets 5..8 are not in the log"):
        list(read_broker_range(gone))
    batches = list(read_broker_range(gone, fail_on_data_loss=False))
    assert sum(b.num_rows for b in batches) == 2


# -- streaming -----------------------------------------------------------------------------------------


def run_available_now(spark, broker, topic, checkpoint, **options):
    """One availableNow run into foreachBatch; returns {batch id: sorted (partition, offset)}."""
    seen: dict[int, list] = {}
    lock = threading.Lock()

    def sink(df, batch_id):
        rows = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())
        with lock:
            seen[batch_id] = rows

    stream = spark.readStream.format("kcli").option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
    for key, value in options.items():
        stream = stream.option(key, value)
    query = stream.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(180)
    finally:
        query.stop()
    return seen


def test_available_now_then_a_restart_reads_only_the_new_records(spark, broker, unique_topic, tmp_path):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, records_for(2, 30))
    first = run_available_now(spark, broker, topic, tmp_path / "ck", startingOffsets="earliest")
    assert sorted(x for rows in first.values() for x in rows) == [(p, o) for p in range(2) for o in range(30)]
    produce(broker.bootstrap, topic, records_for(2, 12, label="new-"))
    second = run_available_now(spark, broker, topic, tmp_path / "ck", startingOffsets="earliest")
    assert min(second) > max(first)
    assert sorted(x for rows in second.values() for x in rows) == [(p, o) for p in range(2) for o in range(30, 42)]
    third = run_available_now(spark, broker, topic, tmp_path / "ck", startingOffsets="earliest")
    assert sum(len(rows) for rows in third.values()) == 0


def test_max_offsets_per_trigger_limits_every_micro_batch(spark, broker, unique_topic, tmp_path):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, records_for(2, 50))
    seen = run_available_now(spark, broker, topic, tmp_path / "ck", startingOffsets="earliest", maxOffsetsPerTrigger="30")
    sizes = [len(seen[b]) for b in sorted(seen) if seen[b]]
    assert sizes == [30, 30, 30, 10]
    assert sorted(x for rows in seen.values() for x in rows) == [(p, o) for p in range(2) for o in range(50)]


def test_a_failed_batch_is_replayed_over_the_same_range_without_duplicates(spark, broker, unique_topic, tmp_path):
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, records_for(2, 40))
    delivered: dict[int, list] = {}  # an idempotent sink: one entry per batch id
    attempts: dict[int, list] = {}
    fail_batch = {"id": 2}

    def sink(df, batch_id):
        rows = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())
        attempts.setdefault(batch_id, []).append(rows)
        if batch_id == fail_batch["id"]:
            fail_batch["id"] = None
            raise RuntimeError("injected sink failure")
        delivered[batch_id] = rows

    def run():
        stream = (
            spark.readStream.format("kcli").option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "25").load()
        )
        query = stream.writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start()
        try:
            query.awaitTermination(180)
        finally:
            query.stop()

    with pytest.raises(Exception, match="injected sink failure"):
        run()
    assert 2 not in delivered and len(attempts[2]) == 1
    run()
    assert len(attempts[2]) == 2 and attempts[2][0] == attempts[2][1]
    offsets = [x for rows in delivered.values() for x in rows]
    assert sorted(offsets) == [(p, o) for p in range(2) for o in range(40)]
    assert len(offsets) == len(set(offsets))


def test_latest_is_resolved_once_when_initial_offsets_path_is_set(broker, unique_topic, tmp_path):
    from kcli.spark.source import KafkaStreamReader

    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [{"value": b"a", "partition": 0}] * 4)
    options = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic, "initialOffsetsPath": str(tmp_path / "initial.json")}
    unpinned = dict(options)
    del unpinned["initialOffsetsPath"]

    def initial(opts: dict) -> dict:
        stream_reader = KafkaStreamReader(parse_source_options(opts, streaming=True))
        try:
            return stream_reader.initialOffset()
        finally:
            stream_reader.stop()

    assert initial(options) == {topic: {"0": 4}}
    produce(broker.bootstrap, topic, [{"value": b"b", "partition": 0}] * 3)
    assert initial(options) == {topic: {"0": 4}}
    assert initial(unpinned) == {topic: {"0": 7}}


# -- the sink ------------------------------------------------------------------------------------------


def consume_all(bootstrap: str, topic: str, count: int) -> list:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-sink-check", "enable.auto.commit": False})
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    consumer.assign([TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions])
    out = []
    try:
        for _ in range(200):
            for message in consumer.consume(1000, timeout=0.5):
                assert message.error() is None
                out.append(message)
            if len(out) >= count:
                break
    finally:
        consumer.close()
    return out


def test_batch_write_takes_strings_or_bytes_headers_partitions_and_the_topic_option(spark, broker, unique_topic):
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType

    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 3)
    schema = StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", StringType()),
            StructField("partition", IntegerType()),
            StructField("headers", ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))),
            StructField("topic", StringType()),
        ]
    )
    rows = [
        (None if i % 3 == 0 else f"k{i}".encode(), None if i == 4 else f"välue-{i}", i % 3, [("n", str(i).encode()), ("z", None)] if i % 2 else None, "ignored-by-option")
        for i in range(30)
    ]
    df = spark.createDataFrame(rows, schema)
    df.write.format("kcli").option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic).mode("append").save()
    got = consume_all(broker.bootstrap, topic, 30)
    assert len(got) == 30
    seen = sorted(
        (m.partition(), m.key(), m.value(), [(k, v) for k, v in (m.headers() or [])] or None) for m in got
    )
    assert seen == sorted(
        (p, k, None if v is None else v.encode(), [(hk, hv) for hk, hv in h] if h else None) for k, v, p, h, _t in rows
    )


def test_the_sink_refuses_a_frame_without_value_or_topic(spark, broker):
    df = spark.createDataFrame([("k",)], "key STRING")
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        df.write.format("kcli").option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "t").mode("append").save()
    df = spark.createDataFrame([("v",)], "value STRING")
    with pytest.raises(Exception, match="topic option required when no 'topic' attribute is present"):
        df.write.format("kcli").option("kafka.bootstrap.servers", broker.bootstrap).mode("append").save()


def test_a_stream_copies_a_topic_through_the_streaming_sink(spark, broker, unique_topic, tmp_path):
    source, target = unique_topic("src"), unique_topic("dst")
    create_topic(broker.bootstrap, source, 2)
    create_topic(broker.bootstrap, target, 2)
    records = records_for(2, 25)
    produce(broker.bootstrap, source, records)
    stream = (
        spark.readStream.format("kcli").option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", source)
        .option("startingOffsets", "earliest").option("includeHeaders", "true").load()
        .selectExpr("key", "value", "headers", "partition", "timestamp")
    )
    query = (
        stream.writeStream.format("kcli").option("kafka.bootstrap.servers", broker.bootstrap).option("topic", target)
        .option("includeTimestamp", "true").option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start()
    )
    try:
        assert query.awaitTermination(180)
    finally:
        query.stop()
    copied = as_tuples(reader(spark, broker, subscribe=target, includeHeaders="true").collect())
    assert [row[:2] + row[3:] for row in copied] == [row[:2] + row[3:] for row in expected_rows(target, records)]
    assert all(row[2] == target for row in copied)


def test_timestamps_are_the_record_create_times(spark, broker, topic3):
    topic, _records = topic3
    first = reader(spark, broker, assign=json.dumps({topic: [0]}), endingOffsets=json.dumps({topic: {"0": 1}})).collect()[0]
    assert round(first["timestamp"].timestamp() * 1000) == T0
    assert first["timestampType"] == 0
