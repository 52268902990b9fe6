"""consumer-groups --reset-offsets planning: Kafka's scenarios, clamping, its CSV, dates and durations."""

from __future__ import annotations

import datetime

import pytest

from kcli.client.group_admin import TopicPartition
from kcli.errors import KcliError, UsageError
from kcli.tools import consumer_groups_reset as reset

T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)
U0 = TopicPartition("users", 0)


def epoch_ms(*args: int, tz: datetime.tzinfo = datetime.timezone.utc) -> int:
    moment = datetime.datetime(*args, tzinfo=tz)
    return int(moment.timestamp()) * 1000 + moment.microsecond // 1000


# -- --topic arguments ---------------------------------------------------------------------------------


def test_topic_arg_without_partitions_means_every_partition():
    assert reset.parse_topic_arg("orders") == ("orders", None)


def test_topic_arg_with_partitions():
    assert reset.parse_topic_arg("orders:0,2,5") == ("orders", [0, 2, 5])


@pytest.mark.parametrize("arg", ["orders:", "a:b:c"])
def test_topic_arg_needs_exactly_one_partition_list(arg):
    with pytest.raises(UsageError, match=f"Invalid topic arg '{arg}', expected topic name and partitions"):
        reset.parse_topic_arg(arg)


def test_topic_arg_partition_must_be_a_number():
    with pytest.raises(UsageError, match="Invalid partition 'x' specified in topic arg 'orders:0,x'"):
        reset.parse_topic_arg("orders:0,x")


# -- --to-datetime ------------------------------------------------------------------------------------


def test_datetime_without_zone_is_utc():
    assert reset.parse_datetime("2024-03-05T10:20:30.456") == epoch_ms(2024, 3, 5, 10, 20, 30, 456000)


def test_datetime_with_zones():
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    minus_half = datetime.timezone(-datetime.timedelta(hours=5, minutes=30))
    assert reset.parse_datetime("2024-03-05T10:20:30.000Z") == epoch_ms(2024, 3, 5, 10, 20, 30)
    assert reset.parse_datetime("2024-03-05T10:20:30.000+02:00") == epoch_ms(2024, 3, 5, 10, 20, 30, tz=plus_two)
    assert reset.parse_datetime("2024-03-05T10:20:30.000+02") == epoch_ms(2024, 3, 5, 10, 20, 30, tz=plus_two)
    assert reset.parse_datetime("2024-03-05T10:20:30.000-05:30") == epoch_ms(2024, 3, 5, 10, 20, 30, tz=minus_half)


def test_datetime_milliseconds_are_a_count_as_java_reads_them():
    assert reset.parse_datetime("2024-03-05T10:20:30.5") - reset.parse_datetime("2024-03-05T10:20:30.000") == 5


def test_datetime_needs_a_t():
    with pytest.raises(UsageError, match="Error parsing timestamp. It does not contain a 'T' according to ISO8601 format"):
        reset.parse_datetime("2024-03-05 10:20:30.000")


@pytest.mark.parametrize("text", ["2024-03-05T10:20:30", "2024-02-30T10:20:30.000", "2024-03-05T24:00:00.000", "2024-03-05T10:20:30.1000"])
def test_datetime_is_parsed_strictly(text):
    with pytest.raises(UsageError, match="Unparseable date"):
        reset.parse_datetime(text)


# -- --by-duration --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT0.5S", 500),
        ("PT1H", 3_600_000),
        ("P1DT2H3M4S", 93_784_000),
        ("p2d", 172_800_000),
        ("-PT10S", -10_000),
        ("PT-1.5S", -1_500),
        ("PT1M-30S", 30_000),
    ],
)
def test_duration(text, ms):
    assert reset.parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["P", "PT", "1H", "PT1.5H", "P1W"])
def test_duration_rejects_what_java_rejects(text):
    with pytest.raises(UsageError, match="Text cannot be parsed to a Duration"):
        reset.parse_duration_ms(text)


# -- CSV ----------------------------------------------------------------------------------------------


def test_export_single_group_has_three_columns_sorted():
    lines = reset.export_csv({"g": {T1: 7, T0: 3}}, single_group=True)
    assert lines == ["orders,0,3", "orders,1,7"]


def test_export_several_groups_leads_with_the_group():
    lines = reset.export_csv({"g2": {U0: 1}, "g1": {T0: 3}}, single_group=False)
    assert lines == ["g1,orders,0,3", "g2,users,0,1"]


def test_export_quotes_a_group_holding_a_comma():
    lines = reset.export_csv({"a,b": {T0: 3}}, single_group=False)
    assert lines == ['"a,b",orders,0,3']
    assert reset.parse_reset_csv("\n".join(lines), []) == {"a,b": {T0: 3}}


def test_csv_round_trip_single_group():
    plan = {"g": {T0: 3, T1: 9, U0: 0}}
    text = "\n".join(reset.export_csv(plan, single_group=True)) + "\n\n"
    assert reset.parse_reset_csv(text, ["g"]) == plan


def test_csv_round_trip_several_groups():
    plan = {"g1": {T0: 3}, "g2": {T1: 4, U0: 5}}
    text = "\n".join(reset.export_csv(plan, single_group=False))
    assert reset.parse_reset_csv(text, ["g1", "g2"]) == plan
    assert reset.parse_reset_csv(text, []) == plan


def test_csv_with_groups_read_for_one_group_keeps_each_lines_group():
    assert reset.parse_reset_csv("g1,orders,0,3\ng2,orders,1,4\n", ["g1"]) == {"g1": {T0: 3}, "g2": {T1: 4}}


def test_csv_rejects_wrong_column_counts_and_numbers():
    with pytest.raises(UsageError, match="line 2"):
        reset.parse_reset_csv("orders,0,3\norders,1\n", ["g"])
    with pytest.raises(UsageError, match="group,topic,partition,offset"):
        reset.parse_reset_csv("orders,0,3\n", ["g1", "g2"])
    with pytest.raises(UsageError, match="must be integers"):
        reset.parse_reset_csv("g,orders,x,3\n", [])


# -- planning -------------------------------------------------------------------------------------


START = {T0: 2, T1: 0}
END = {T0: 10, T1: 5}


def plan(scenario, value=None, partitions=(T0, T1), **kwargs):
    kwargs.setdefault("committed", {})
    kwargs.setdefault("log_start", START)
    kwargs.setdefault("log_end", END)
    return reset.plan_offsets(scenario, value, partitions, **kwargs)


def test_to_offset_is_clamped_with_kafkas_warnings():
    result = plan(reset.TO_OFFSET, 7)
    assert result.offsets == {T0: 7, T1: 5}
    assert result.warnings == ["New offset (7) is higher than latest offset for topic partition orders-1. Value will be set to 5"]
    low = plan(reset.TO_OFFSET, 1)
    assert low.offsets == {T0: 2, T1: 1}
    assert low.warnings == ["New offset (1) is lower than earliest offset for topic partition orders-0. Value will be set to 2"]


def test_earliest_and_latest():
    assert plan(reset.TO_EARLIEST).offsets == {T0: 2, T1: 0}
    assert plan(reset.TO_LATEST).offsets == {T0: 10, T1: 5}


def test_earliest_without_a_log_start_offset_is_an_error():
    with pytest.raises(KcliError, match="Error getting starting offset of topic partition: orders-1"):
        plan(reset.TO_EARLIEST, log_start={T0: 2, T1: None})


def test_shift_by_moves_the_committed_offset_and_clamps():
    result = plan(reset.SHIFT_BY, -3, committed={T0: 4, T1: 4})
    assert result.offsets == {T0: 2, T1: 1}
    assert len(result.warnings) == 1 and "orders-0" in result.warnings[0]


def test_shift_by_needs_a_committed_offset():
    with pytest.raises(KcliError, match="Cannot shift offset for partition orders-1 since there is no current committed offset"):
        plan(reset.SHIFT_BY, 1, committed={T0: 4})


def test_to_current_falls_back_to_the_log_end():
    assert plan(reset.TO_CURRENT, committed={T0: 4}).offsets == {T0: 4, T1: 5}


def test_by_time_falls_back_to_the_log_end_with_kafkas_note():
    result = plan(reset.TO_DATETIME, by_timestamp={T0: 6, T1: -1})
    assert result.offsets == {T0: 6, T1: 5}
    assert result.notes == ["Warn: Partition 1 from topic orders is empty. Falling back to latest known offset."]
    assert result.warnings == []


def test_by_time_without_an_answer_is_an_error():
    with pytest.raises(KcliError, match="Error getting offset by timestamp of topic partition: orders-0"):
        plan(reset.BY_DURATION, by_timestamp={T0: None, T1: 1})


def test_from_file_takes_the_files_partitions_and_clamps():
    result = plan(reset.FROM_FILE, partitions=(), from_file={T1: 99})
    assert result.offsets == {T1: 5}
    assert result.warnings == ["New offset (99) is higher than latest offset for topic partition orders-1. Value will be set to 5"]
