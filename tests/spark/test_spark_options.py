"""Spark's Kafka option surface (kcli.spark.options), checked without Spark.

Expected messages, precedence and offset arithmetic come from Spark's KafkaSourceProvider,
KafkaMicroBatchStream.rateLimit and the cases of KafkaOffsetRangeCalculatorSuite.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kcli.spark.options import (
    EARLIEST,
    LATEST,
    OffsetRange,
    OptionError,
    Subscription,
    format_partition_offsets,
    offsets_from_json,
    parse_partition_offsets,
    parse_sink_options,
    parse_source_options,
    parse_time_ms,
    rate_limit,
    split_ranges,
)

OFFLINE = {"path": "/data/kafka-logs"}


def batch(**options):
    return parse_source_options({**OFFLINE, **options}, streaming=False)


def stream(**options):
    return parse_source_options({**OFFLINE, **options}, streaming=True)


# -- what to read -----------------------------------------------------------------------------------


def test_exactly_one_of_assign_subscribe_subscribe_pattern():
    with pytest.raises(OptionError, match="One of the following options must be specified for Kafka source: subscribe, subscribePattern, assign"):
        batch()
    with pytest.raises(OptionError, match="Only one of the following options can be specified"):
        batch(subscribe="a", subscribePattern="b.*")


def test_subscribe_takes_a_comma_separated_list_and_refuses_an_empty_one():
    assert batch(subscribe=" a, b ,,a").subscription.topics == ("a", "b")
    with pytest.raises(OptionError, match="No topics to subscribe to as specified value for option 'subscribe' is ' , '"):
        batch(subscribe=" , ")


def test_assign_is_json_of_topic_to_partition_lists():
    options = batch(assign='{"topicA":[0,1],"topicB":[2,4]}')
    assert options.subscription == Subscription("assign", assigned=(("topicA", 0), ("topicA", 1), ("topicB", 2), ("topicB", 4)))
    with pytest.raises(OptionError, match="No topicpartitions to assign as specified value for option 'assign' is 'topicA'"):
        batch(assign="topicA")
    with pytest.raises(OptionError, match=r'expected e.g. \{"topicA":\[0,1\],"topicB":\[0,1\]\}'):
        batch(assign='{"topicA": 0}')


def test_a_pattern_matches_whole_names_and_never_internal_topics():
    sub = batch(subscribePattern="orders.*").subscription
    assert sub.selects_topic("orders-eu") and not sub.selects_topic("old-orders")
    assert not batch(subscribePattern=".*").subscription.selects_topic("__consumer_offsets", internal=True)
    assert batch(subscribe="__consumer_offsets").subscription.selects_topic("__consumer_offsets", internal=True)
    with pytest.raises(OptionError, match="Pattern to subscribe is empty"):
        batch(subscribePattern="  ")
    with pytest.raises(OptionError, match="not a valid regular expression"):
        batch(subscribePattern="(")


def test_option_names_are_case_insensitive():
    options = parse_source_options({"PATH": "/d", "SubScribe": "t", "STARTINGOFFSETS": "earliest", "includeheaders": "TRUE"}, streaming=False)
    assert options.subscription.topics == ("t",) and options.include_headers and options.paths == ("/d",)


def test_paths_come_from_path_as_log_dirs_or_from_a_json_list():
    assert batch(subscribe="t", path="/a, /b,/a").paths == ("/a", "/b")
    assert parse_source_options({"paths": '["/x", "/y"]', "subscribe": "t"}, streaming=False).paths == ("/x", "/y")
    with pytest.raises(OptionError, match="'paths' must be a JSON list"):
        parse_source_options({"paths": "/x", "subscribe": "t"}, streaming=False)


def test_a_broker_or_log_dirs_must_be_named_but_not_both():
    with pytest.raises(OptionError, match="Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"):
        parse_source_options({"subscribe": "t"}, streaming=False)
    online = parse_source_options({"subscribe": "t", "kafka.bootstrap.servers": "h:9092"}, streaming=False)
    assert online.bootstrap_servers == "h:9092" and not online.offline
    with pytest.raises(OptionError, match="exclude each other"):
        batch(subscribe="t", **{"kafka.bootstrap.servers": "h:9092"})


# -- where to start and end -----------------------------------------------------------------------------


def test_defaults_earliest_to_latest_for_batch_and_latest_for_streams():
    options = batch(subscribe="t")
    assert (options.starting.kind, options.ending.kind) == ("earliest", "latest")
    options = stream(subscribe="t")
    assert (options.starting.kind, options.ending) == ("latest", None)


def test_offsets_json_with_minus_two_and_minus_one():
    options = batch(subscribe="t", startingOffsets='{"t":{"0":23,"1":-2}}', endingOffsets='{"t":{"0":50,"1":-1}}')
    assert dict(options.starting.offsets) == {("t", 0): 23, ("t", 1): EARLIEST}
    assert dict(options.ending.offsets) == {("t", 0): 50, ("t", 1): LATEST}
    with pytest.raises(OptionError, match=r'startingOffsets: expected e.g. \{"topicA":\{"0":23,"1":-1\},"topicB":\{"0":-2\}\}, got \{"t":5\}'):
        batch(subscribe="t", startingOffsets='{"t":5}')
    with pytest.raises(OptionError, match="expected e.g."):
        batch(subscribe="t", startingOffsets='{"t":{"x":5}}')


def test_batch_reads_refuse_latest_starts_and_earliest_ends():
    with pytest.raises(OptionError, match="starting offset can't be latest for batch queries on Kafka"):
        batch(subscribe="t", startingOffsets="LATEST")
    with pytest.raises(OptionError, match="startingOffsets for t-1 can't be latest for batch queries on Kafka"):
        batch(subscribe="t", startingOffsets='{"t":{"0":1,"1":-1}}')
    with pytest.raises(OptionError, match="ending offset can't be earliest for batch queries on Kafka"):
        batch(subscribe="t", endingOffsets="earliest")
    with pytest.raises(OptionError, match="ending offset for t-0 can't be earliest for batch queries on Kafka"):
        batch(subscribe="t", endingOffsets='{"t":{"0":-2}}')


def test_start_and_end_offsets_must_name_the_same_partitions_in_order():
    with pytest.raises(OptionError, match="different topic-partitions"):
        batch(subscribe="t", startingOffsets='{"t":{"0":1}}', endingOffsets='{"t":{"1":5}}')
    with pytest.raises(OptionError, match="starting offset 9 of t-0 is greater than the ending offset 5"):
        batch(subscribe="t", startingOffsets='{"t":{"0":9}}', endingOffsets='{"t":{"0":5}}')
    # -2/-1 are not compared
    batch(subscribe="t", startingOffsets='{"t":{"0":9}}', endingOffsets='{"t":{"0":-1}}')


def test_streams_refuse_every_ending_option():
    for key in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp"):
        with pytest.raises(OptionError, match="not valid in streaming queries"):
            stream(subscribe="t", **{key: "1"})


def test_timestamps_take_precedence_global_then_per_partition_then_offsets():
    options = batch(subscribe="t", startingTimestamp=" 1000 ", startingOffsetsByTimestamp='{"t":{"0":5}}', startingOffsets="earliest")
    assert (options.starting.kind, options.starting.timestamp, options.starting.strategy) == ("timestamp", 1000, "error")
    options = batch(subscribe="t", startingOffsetsByTimestamp='{"t":{"0":5}}', startingOffsets="earliest", startingOffsetsByTimestampStrategy="LATEST")
    assert (options.starting.kind, dict(options.starting.offsets), options.starting.strategy) == ("timestamps", {("t", 0): 5}, "latest")
    options = batch(subscribe="t", endingTimestamp="2000", endingOffsets='{"t":{"0":3}}')
    assert (options.ending.kind, options.ending.timestamp) == ("timestamp", 2000)
    with pytest.raises(OptionError, match="Expected a single long value, got yesterday"):
        batch(subscribe="t", startingTimestamp="yesterday")
    with pytest.raises(OptionError, match="'startingOffsetsByTimestampStrategy' must be 'error' or 'latest'"):
        batch(subscribe="t", startingTimestamp="1", startingOffsetsByTimestampStrategy="skip")


# -- the other options -------------------------------------------------------------------------------


def test_flags_and_numbers_are_checked():
    options = stream(subscribe="t", failOnDataLoss="False", includeHeaders="true", minPartitions="8", maxOffsetsPerTrigger="100",
                     minOffsetsPerTrigger="10", maxTriggerDelay="30s", maxRecordsPerPartition="1000")
    assert (options.fail_on_data_loss, options.include_headers, options.min_partitions) == (False, True, 8)
    assert (options.max_offsets_per_trigger, options.min_offsets_per_trigger, options.max_trigger_delay_ms) == (100, 10, 30_000)
    assert options.max_records_per_partition == 1000
    assert stream(subscribe="t").fail_on_data_loss is True and stream(subscribe="t").max_trigger_delay_ms == 15 * 60_000
    with pytest.raises(OptionError, match="'failOnDataLoss' must be true or false, got 'yes'"):
        stream(subscribe="t", failOnDataLoss="yes")
    with pytest.raises(OptionError, match="minPartitions must be positive"):
        batch(subscribe="t", minPartitions="0")
    with pytest.raises(OptionError, match="'minPartitions' must be an integer, got 'many'"):
        batch(subscribe="t", minPartitions="many")
    with pytest.raises(OptionError, match=r"minOffsetPerTrigger\(20\) is higher than the maxOffsetsPerTrigger\(10\)"):
        stream(subscribe="t", minOffsetsPerTrigger="20", maxOffsetsPerTrigger="10")


def test_durations_read_as_spark_reads_them():
    assert [parse_time_ms(v) for v in ("15m", "10s", "250ms", "2h", "1d", "1500", "3 min")] == [900_000, 10_000, 250, 7_200_000, 86_400_000, 1500, 180_000]
    with pytest.raises(OptionError, match="must be a duration"):
        parse_time_ms("soon")


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("auto.offset.reset", "Kafka option 'auto.offset.reset' is not supported"),
        ("key.deserializer", "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays"),
        ("value.deserializer", "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays"),
        ("enable.auto.commit", "Kafka option 'enable.auto.commit' is not supported"),
        ("interceptor.classes", "Kafka option 'interceptor.classes' is not supported"),
    ],
)
def test_consumer_configs_the_source_manages_itself_are_refused(key, message):
    with pytest.raises(OptionError, match=message):
        batch(subscribe="t", **{f"kafka.{key}": "x"})


def test_other_kafka_options_pass_through_without_their_prefix():
    options = batch(subscribe="t", **{"kafka.group.id": "g", "kafka.isolation.level": "read_committed"})
    assert dict(options.kafka_params) == {"group.id": "g", "isolation.level": "read_committed"}


def test_sink_options():
    options = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": " out ", "includeHeaders": "true", "kafka.acks": "all"})
    assert (options.topic, options.include_headers, dict(options.kafka_params)) == ("out", True, {"bootstrap.servers": "h:1", "acks": "all"})
    for key in ("key.serializer", "value.serializer"):
        with pytest.raises(OptionError, match=f"Kafka option '{key}' is not supported"):
            parse_sink_options({"kafka.bootstrap.servers": "h:1", f"kafka.{key}": "x"})
    with pytest.raises(OptionError, match="must be specified for configuring Kafka producer"):
        parse_sink_options({"topic": "t"})


# -- offsets JSON and arithmetic -------------------------------------------------------------------------


def test_offsets_json_round_trips_in_sparks_order():
    offsets = {("b", 10): 7, ("b", 2): 5, ("a", 0): -2}
    formatted = format_partition_offsets(offsets)
    assert json.dumps(formatted) == '{"a": {"0": -2}, "b": {"2": 5, "10": 7}}'
    assert offsets_from_json(json.loads(json.dumps(formatted))) == offsets
    assert parse_partition_offsets(json.dumps(formatted)) == offsets


def test_max_offsets_per_trigger_is_split_in_proportion_to_what_waits():
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    latest = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}  # 300 and 100 waiting, none on t-2
    assert rate_limit(100, start, latest) == {("t", 0): 75, ("t", 1): 125, ("t", 2): 50}
    # A partition whose share rounds below one still gets one record; shares round down.
    assert rate_limit(10, {("t", 0): 0, ("t", 1): 0}, {("t", 0): 1000, ("t", 1): 1}) == {("t", 0): 9, ("t", 1): 1}
    # Never past the end, and nothing waiting means the latest offsets.
    assert rate_limit(1000, {("t", 0): 0}, {("t", 0): 3}) == {("t", 0): 3}
    assert rate_limit(5, {("t", 0): 3}, {("t", 0): 3}) == {("t", 0): 3}


def r(tp: str, start: int, end: int) -> OffsetRange:
    return OffsetRange(tp, 1, start, end)


@pytest.mark.parametrize(
    ("min_partitions", "ranges", "expected"),
    [
        (None, [r("t1", 1, 2), r("t2", 1, 1)], [r("t1", 1, 2)]),
        (3, [r("t1", 1, 2), r("t2", 1, 2), r("t3", 1, 2)], [r("t1", 1, 2), r("t2", 1, 2), r("t3", 1, 2)]),
        (4, [r("t1", 1, 5)], [r("t1", 1, 2), r("t1", 2, 3), r("t1", 3, 4), r("t1", 4, 5)]),
        (4, [r("t1", 1, 5), r("t2", 1, 21)], [r("t1", 1, 5), r("t2", 1, 7), r("t2", 7, 14), r("t2", 14, 21)]),
        (4, [r("t1", 1, 1), r("t2", 1, 21)], [r("t2", 1, 6), r("t2", 6, 11), r("t2", 11, 16), r("t2", 16, 21)]),
        (4, [r("t1", 1, 2), r("t2", 1, 1001)], [r("t1", 1, 2), r("t2", 1, 334), r("t2", 334, 667), r("t2", 667, 1001)]),
        (1, [r("t1", 1, 5), r("t2", 1, 21)], [r("t1", 1, 5), r("t2", 1, 21)]),
        (3, [r("t1", 1, 11)], [r("t1", 1, 4), r("t1", 4, 7), r("t1", 7, 11)]),
        (
            6,
            [r("t1", 0, 10), r("t2", 0, 10), r("t3", 0, 1)],
            [r("t1", 0, 3), r("t1", 3, 6), r("t1", 6, 10), r("t2", 0, 3), r("t2", 3, 6), r("t2", 6, 10), r("t3", 0, 1)],
        ),
        (
            6,
            [r("t1", 0, 500), r("t2", 0, 12000), r("t3", 0, 15001)],
            [r("t1", 0, 500), r("t2", 0, 6000), r("t2", 6000, 12000), r("t3", 0, 5000), r("t3", 5000, 10000), r("t3", 10000, 15001)],
        ),
        (
            6,
            [r("t1", 0, 1), r("t2", 0, 1), r("t3", 0, 10000)],
            [r("t1", 0, 1), r("t2", 0, 1), r("t3", 0, 2500), r("t3", 2500, 5000), r("t3", 5000, 7500), r("t3", 7500, 10000)],
        ),
    ],
)
def test_min_partitions_splits_ranges_as_sparks_range_calculator(min_partitions, ranges, expected):
    assert split_ranges(ranges, min_partitions) == expected


def test_max_records_per_partition_caps_every_range():
    assert split_ranges([r("t1", 0, 10), r("t2", 0, 3)], None, 4) == [r("t1", 0, 3), r("t1", 3, 6), r("t1", 6, 10), r("t2", 0, 3)]


def test_the_option_modules_load_without_pyspark():
    code = (
        "import sys; import kcli.spark, kcli.spark.options, kcli.spark.offline, kcli.spark.arrow_rows, kcli.spark.columnar; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
