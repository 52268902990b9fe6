"""Java's (and Scala's) behaviour that Kafka's output inherits, checked against values Java gives."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcli.java_compat import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    date_to_string,
    double_to_string,
    float_to_string,
    format_fixed,
    hash_map_capacity,
    hash_map_order,
    long_hash,
    parse_int,
    parse_long,
    scala_hash_map_order,
    split,
    string_hash,
    topic_partition_hash,
    utils_abs,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("abc", 96354),
        ("Aa", 2112),
        ("BB", 2112),
        ("hello", 99162322),
        ("hello world", 1794106052),
        ("é", 233),
        ("\U0001F600", 0xD83D * 31 + 0xDE00),  # one code point, two UTF-16 code units
        ("polygenelubricants", -(2**31)),  # the well-known string whose hashCode is Integer.MIN_VALUE
    ],
)
def test_string_hash_known_values(text, expected):
    assert string_hash(text) == expected


def _polynomial_hash(text: str) -> int:
    units = text.encode("utf-16-be", "surrogatepass")
    values = [int.from_bytes(units[i:i + 2], "big") for i in range(0, len(units), 2)]
    n = len(values)
    total = sum(v * pow(31, n - 1 - i, 2**32) for i, v in enumerate(values)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@given(st.text(max_size=40))
def test_string_hash_is_the_polynomial_over_utf16_units(text):
    assert string_hash(text) == _polynomial_hash(text)


def test_topic_partition_hash_follows_its_formula():
    # TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode(), in int arithmetic.
    assert topic_partition_hash("hello", 0) == 31 * 31 + 99162322
    assert topic_partition_hash("", 5) == 31 * 36
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE: the sum wraps to the negative side.
    assert topic_partition_hash("polygenelubricants", 0) == -(2**31) + 961


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (5, 5),
        (2**31, -(2**31)),  # bit 31 set: the low word is Integer.MIN_VALUE
        (2**32, 1),  # the high word folded into the low one
        (-1, 0),  # 0xFFFFFFFF ^ 0xFFFFFFFF
        (LONG_MIN, -(2**31)),
        (LONG_MAX, -(2**31)),  # 0x7FFFFFFF ^ 0xFFFFFFFF
    ],
)
def test_long_hash_is_javas_long_hash_code(value, expected):
    # Long.hashCode: (int) (value ^ (value >>> 32)).
    assert long_hash(value) == expected


def test_utils_abs_maps_min_value_to_zero():
    assert utils_abs(-(2**31)) == 0
    assert utils_abs(-5) == 5
    assert utils_abs(7) == 7


def test_hash_map_order_is_bucket_order_then_insertion_order():
    # One-character keys hash to their code point: bucket = code point mod 16.
    assert hash_map_order(["c", "b", "a"]) == ["a", "b", "c"]
    # "a" (97) and "q" (113) share bucket 1 of 16, "b" (98) is in bucket 2.
    assert hash_map_order(["q", "b", "a"]) == ["q", "a", "b"]
    assert hash_map_order(["a", "q", "b"]) == ["a", "q", "b"]
    # "Aa" and "BB" have the same hash (2112).
    assert hash_map_order(["BB", "Aa"]) == ["BB", "Aa"]
    # new HashMap<>(3) is a table of 4: 97 & 3 = 1, 98 & 3 = 2, 100 & 3 = 0.
    assert hash_map_order(["a", "b", "d"], initial_capacity=3) == ["d", "a", "b"]


def test_hash_map_capacity_grows_past_three_quarters():
    assert hash_map_capacity(12) == 16  # threshold 12: the 13th put resizes
    assert hash_map_capacity(13) == 32
    assert hash_map_capacity(0, initial_capacity=5) == 8  # tableSizeFor(5)
    assert hash_map_capacity(7, initial_capacity=5) == 16  # threshold 6 of 8


def test_java_hashtable_order_follows_puts_rehash_and_removes():
    # Orders printed by java.util.Hashtable (OpenJDK 17, whose Hashtable is Java 8's) after the
    # same puts and removes: the first grows past 8 entries (capacity 11 -> 23).
    from kcli.java_compat import JavaHashtable

    table = JavaHashtable()
    for key in ("retention.ms", "cleanup.policy", "segment.bytes", "compression.type", "min.insync.replicas", "max.message.bytes",
                "segment.ms", "flush.ms", "flush.messages", "retention.bytes", "delete.retention.ms"):
        table.put(key)
    table.remove("flush.ms")
    table.put("file.delete.delay.ms")
    assert table.keys() == [
        "file.delete.delay.ms", "segment.bytes", "delete.retention.ms", "retention.bytes", "min.insync.replicas", "cleanup.policy",
        "segment.ms", "max.message.bytes", "flush.messages", "compression.type", "retention.ms",
    ]
    assert JavaHashtable(["compression.type", "cleanup.policy", "segment.bytes"]).keys() == ["segment.bytes", "cleanup.policy", "compression.type"]


def test_scala_hash_map_order_sorts_a_bucket_by_hash():
    # Scala 2.13's mutable.HashMap keeps a bucket sorted by the improved hash, not by insertion:
    # "q" (113) and "a" (97) share bucket 1 of 16, and 97 < 113.
    assert scala_hash_map_order(["q", "a"]) == ["a", "q"]
    assert hash_map_order(["q", "a"]) == ["q", "a"]
    # The table doubles before the 12th put (size + 1 >= 12). "\x91" (145) shares bucket 1 with
    # "a" (97) in a table of 16, and sits in bucket 17, after "a".."k" (buckets 1..11), in one of 32.
    assert scala_hash_map_order([chr(ord("a") + i) for i in range(10)] + ["\x91"])[:2] == ["a", "\x91"]
    assert scala_hash_map_order([chr(ord("a") + i) for i in range(11)] + ["\x91"])[-1] == "\x91"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.5, "0.5"),
        (100.0, "100.0"),
        (1e-4, "1.0E-4"),
        (0.001, "0.001"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (4.9e-324, "4.9E-324"),
        (-1.5, "-1.5"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_double_to_string(value, expected):
    assert double_to_string(value) == expected


def test_float_to_string():
    # Float.toString: the shortest digits of the float, at least two: Float.MIN_VALUE is 1.4E-45.
    assert [float_to_string(x) for x in (1.0, 1e10, 3.4028234663852886e38, 1.401298464324817e-45, -2.5)] == [
        "1.0", "1.0E10", "3.4028235E38", "1.4E-45", "-2.5"]


@pytest.mark.parametrize(
    ("value", "digits", "expected"),
    [
        (0.125, 2, "0.13"),  # HALF_UP, where Python's round-half-even would give 0.12
        (0.15, 1, "0.2"),  # on Double.toString's 0.15, not the binary 0.1499999...
        (2.5, 0, "3"),
        (-2.5, 0, "-3"),
        (1234.5678, 4, "1234.5678"),
        (0.0, 3, "0.000"),
        (float("inf"), 1, "Infinity"),
        (float("-inf"), 1, "-Infinity"),
        (float("nan"), 2, "NaN"),
    ],
)
def test_format_fixed_is_javas_percent_f(value, digits, expected):
    assert format_fixed(value, digits) == expected


def test_split_semantics():
    assert split("a,b,,c,,", ",") == ["a", "b", "", "c"]
    assert split(",a", ",") == ["", "a"]
    assert split("", ",") == [""]
    assert split(",", ",") == []
    assert split("abc", ",") == ["abc"]
    assert split("abc", "") == ["a", "b", "c"]
    assert split("a;;b", re.compile(";+")) == ["a", "b"]


@pytest.mark.parametrize(("text", "expected"), [("0", 0), ("+7", 7), ("-7", -7), ("007", 7), ("2147483647", INT_MAX), ("-2147483648", INT_MIN)])
def test_parse_int_accepts_what_integer_parse_int_does(text, expected):
    assert parse_int(text) == expected


@pytest.mark.parametrize("text", ["", "+", "-", " 1", "1 ", "1_000", "0x10", "1.0", "2147483648", "-2147483649"])
def test_parse_int_refuses_what_integer_parse_int_does(text):
    with pytest.raises(ValueError, match="For input string"):
        parse_int(text)


def test_parse_long_is_long_parse_long():
    assert parse_long("9223372036854775807") == LONG_MAX
    assert parse_long("-9223372036854775808") == LONG_MIN
    with pytest.raises(ValueError):
        parse_long("9223372036854775808")
    with pytest.raises(ValueError):
        parse_int("2147483648")


@pytest.mark.parametrize(
    ("zone", "epoch_ms", "expected"),
    [
        # java.util.Date.toString: EEE MMM dd HH:mm:ss zzz yyyy, English names, the default zone.
        ("UTC", 0, "Thu Jan 01 00:00:00 UTC 1970"),
        ("UTC", 1764043200999, "Tue Nov 25 04:00:00 UTC 2025"),
        ("Europe/Paris", 1751328000000, "Tue Jul 01 02:00:00 CEST 2025"),
        ("America/New_York", 1735689600000, "Tue Dec 31 19:00:00 EST 2024"),
    ],
)
def test_date_to_string_is_java_dates_text_in_the_local_zone(monkeypatch, zone, epoch_ms, expected):
    import time

    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        assert date_to_string(epoch_ms) == expected
    finally:
        monkeypatch.undo()
        time.tzset()


def test_java_random_matches_the_jdk():
    from kcli.java_compat import JavaRandom

    # new Random(0).nextInt() x3, as the JDK gives them.
    seeded = JavaRandom(0)
    assert [seeded.next_int() for _ in range(3)] == [-1155484576, -723955400, 1033096058]
    # nextInt(bound) for a power of two takes the high bits of next(31): (8 * next(31)) >> 31.
    first = JavaRandom(0)._next(31)
    assert JavaRandom(0).next_int(8) == (8 * first) >> 31
    # Otherwise next(31) % bound.
    assert JavaRandom(0).next_int(26) == first % 26
