"""What Kafka's output and files inherit from Java (and Scala): written once, here.

Kafka's tools print, and its files hold, values whose shape Java decides: a ``String.hashCode``
picks a partition, a ``HashMap``'s iteration order is the order lines are printed in,
``Double.toString`` spells a number, ``String.split`` and ``Integer.parseInt`` decide what a
line or a flag means. Every layer may import this module; it imports nothing of kcli.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import struct
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def signed32(n: int) -> int:
    """The low 32 bits of ``n`` as Java's ``int``."""
    n &= 0xFFFFFFFF
    return n - 0x1_0000_0000 if n & 0x8000_0000 else n


# -- hashing -----------------------------------------------------------------------------------------


def string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``h = 31 * h + c`` over the UTF-16 code units, as a signed int."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return signed32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """Kafka's ``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return signed32(31 * signed32(31 + partition) + string_hash(topic))


def long_hash(n: int) -> int:
    """Java's ``Long.hashCode``: ``(int) (value ^ (value >>> 32))``."""
    n &= 0xFFFF_FFFF_FFFF_FFFF
    return signed32(n ^ (n >> 32))


def utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` becomes 0 (``Math.abs`` would leave it negative)."""
    return 0 if n == INT_MIN else abs(n)


# -- hash-table iteration orders ---------------------------------------------------------------------


def hash_spread(h: int) -> int:
    """``java.util.HashMap.hash``: the high half folded into the low (``h ^ (h >>> 16)``), unsigned."""
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def hash_map_capacity(size: int, initial_capacity: int | None = None) -> int:
    """The table length of a ``java.util.HashMap`` (or ``HashSet``) after ``size`` distinct puts:
    ``tableSizeFor(initial_capacity)`` (16 for the default constructor), doubled while the size is
    over three quarters of it."""
    capacity = 16
    if initial_capacity is not None:
        capacity = 1
        while capacity < initial_capacity:
            capacity *= 2
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def hash_map_order(
    keys: Iterable[K], hash_of: Callable[[K], int] = string_hash, capacity: int | None = None, *, initial_capacity: int | None = None
) -> list[K]:
    """The order a ``java.util.HashMap`` (or ``HashSet``) iterates the keys put in this order:
    buckets (``hash_spread(h) & (length - 1)``) in index order, insertion order within a bucket
    (a resize splits a bucket's list keeping its order). ``capacity`` is the table length when the
    caller knows it (a table never shrinks); otherwise it follows from the puts."""
    ordered = list(dict.fromkeys(keys))
    length = capacity or hash_map_capacity(len(ordered), initial_capacity)
    mask = length - 1
    return [key for _, key in sorted(enumerate(ordered), key=lambda pair: (hash_spread(hash_of(pair[1])) & mask, pair[0]))]


def scala_improved_hash(h: int) -> int:
    """Scala 2.13's ``mutable.HashMap``/``HashSet`` ``improveHash``: ``h ^ (h >>> 16)``, signed."""
    return signed32(hash_spread(h))


def scala_hash_table_order(improved: dict[K, int], length: int) -> list[K]:
    """The order a Scala 2.13 ``mutable.HashMap``/``HashSet`` of table ``length`` iterates in,
    given each key's improved hash in insertion order: buckets by index, each bucket sorted by
    the improved hash, ties in insertion order."""
    mask = length - 1
    position = {key: index for index, key in enumerate(improved)}
    return sorted(improved, key=lambda key: (improved[key] & mask, improved[key], position[key]))


def scala_hash_map_order(keys: Iterable[K], hash_of: Callable[[K], int] = string_hash) -> list[K]:
    """The order a Scala 2.13 ``mutable.HashMap`` iterates the keys ``put`` one by one into an
    empty map: the table starts at 16 and doubles before a put once size + 1 reaches 3/4 of it."""
    length, improved = 16, {}
    for key in keys:
        if key in improved:
            continue
        if len(improved) + 1 >= int(length * 0.75):
            length *= 2
        improved[key] = scala_improved_hash(hash_of(key))
    return scala_hash_table_order(improved, length)


class JavaHashtable:
    """The iteration order of a Java 8 ``java.util.Hashtable`` (and so of ``Properties``), kept
    as keys are put and removed: buckets ``(h & 0x7FFFFFFF) % length`` enumerated from the
    highest index down, the newest entry first within a bucket; the table starts at 11 and
    becomes ``2 * length + 1`` (rehashed old bucket by old bucket, from the top) when a put
    finds the count at three quarters of it."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._table: list[list[str]] = [[] for _ in range(11)]
        self._count = 0
        for key in keys:
            self.put(key)

    def _bucket(self, key: str, length: int) -> int:
        return (string_hash(key) & 0x7FFFFFFF) % length

    def put(self, key: str) -> None:
        if key in self._table[self._bucket(key, len(self._table))]:
            return
        if self._count >= int(len(self._table) * 0.75):
            old = self._table
            self._table = [[] for _ in range(2 * len(old) + 1)]
            for chain in reversed(old):
                for moved in chain:
                    self._table[self._bucket(moved, len(self._table))].insert(0, moved)
        self._table[self._bucket(key, len(self._table))].insert(0, key)
        self._count += 1

    def remove(self, key: str) -> None:
        chain = self._table[self._bucket(key, len(self._table))]
        if key in chain:
            chain.remove(key)
            self._count -= 1

    def keys(self) -> list[str]:
        return [key for chain in reversed(self._table) for key in chain]


# -- random numbers ----------------------------------------------------------------------------------


class JavaRandom:
    """``java.util.Random``: the 48-bit linear congruential generator, so a tool seeded as Kafka's
    is (``new Random(0)``) makes the same values."""

    _MULTIPLIER = 0x5DEECE66D
    _MASK = (1 << 48) - 1

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ self._MULTIPLIER) & self._MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * self._MULTIPLIER + 0xB) & self._MASK
        return signed32(self._seed >> (48 - bits))

    def next_int(self, bound: int | None = None) -> int:
        """``nextInt()``, or ``nextInt(bound)``: uniform in [0, bound), rejecting the values that
        would favour the low ones."""
        if bound is None:
            return self._next(32)
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:
            return signed32((bound * r) >> 31)
        u = r
        r = u % bound
        while signed32(u - r + m) < 0:
            u = self._next(31)
            r = u % bound
        return r


# -- text --------------------------------------------------------------------------------------------


def double_to_string(value: float) -> str:
    """Java's ``Double.toString``: ``0.5``, ``100.0``, ``1.0E-4``, ``1.7976931348623157E308``,
    ``NaN``, ``-Infinity``, ``-0.0`` (positional in [1e-3, 1e7), computerized notation outside)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        # Python's repr is the shortest round-trip form and stays positional in this range.
        return repr(value)
    shortest = decimal.Decimal(repr(abs(value))).normalize()
    if len(shortest.as_tuple().digits) == 1:
        # Java picks among the decimals of one or two digits the one nearest the double:
        # Double.MIN_VALUE is 4.9E-324, where the shortest form would be 5E-324.
        two_digits = f"{abs(value):.1e}"
        if float(two_digits) == abs(value):
            shortest = decimal.Decimal(two_digits).normalize()
    _sign, digits, exponent = shortest.as_tuple()
    text = "".join(str(d) for d in digits)
    scale = len(text) - 1 + int(exponent)
    return f"{'-' if value < 0 else ''}{text[0]}.{text[1:] or '0'}E{scale}"


def float_to_string(value: float) -> str:
    """Java's ``Float.toString`` of a float held in ``value``: the shortest digits that read back
    as the same float (at least two significant digits: ``1.4E-45``), laid out as a double."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return double_to_string(value)
    packed = struct.pack(">f", value)
    for digits in range(2, 10):
        text = f"{value:.{digits}g}"
        try:
            if struct.pack(">f", float(text)) == packed:
                return double_to_string(float(text))
        except OverflowError:  # rounded past the largest float
            continue
    return double_to_string(value)


def format_fixed(value: float, digits: int) -> str:
    """Java's ``String.format("%.Nf", value)``: HALF_UP on the shortest decimal form of the double
    (``%.2f`` of 0.125 is ``0.13``, of 1.005 ``1.01``); NaN and Infinity spelled out."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    quantum = decimal.Decimal(1).scaleb(-digits)
    return str(decimal.Decimal(repr(float(value))).quantize(quantum, rounding=decimal.ROUND_HALF_UP))


def split(text: str, regex: str | re.Pattern[str]) -> list[str]:
    """Java's ``String.split(regex)`` (and ``Pattern.split``): the whole text when nothing
    matches (``"".split(",")`` is ``[""]``), no empty leading piece from a zero-width match at
    the start, trailing empty pieces dropped (``",".split(",")`` is ``[]``)."""
    pattern = re.compile(regex) if isinstance(regex, str) else regex
    pieces = []
    last = 0
    for match in pattern.finditer(text):
        if match.end() == 0:
            continue  # a zero-width match at the very start splits nothing off
        if match.start() == match.end() == len(text):
            break
        pieces.append(text[last : match.start()])
        last = match.end()
    if not pieces:
        return [text]
    pieces.append(text[last:])
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


_INTEGER = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str, bounds: tuple[int, int] = (INT_MIN, INT_MAX)) -> int:
    """Java's ``Integer.parseInt``: an optional sign and ASCII digits, nothing else (no spaces, no
    ``_``), within ``bounds``; ValueError otherwise."""
    if not _INTEGER.fullmatch(text):
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f'For input string: "{text}"')
    return value


def parse_long(text: str) -> int:
    """Java's ``Long.parseLong``: ``parse_int`` over 64 bits."""
    return parse_int(text, (LONG_MIN, LONG_MAX))


_DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def date_to_string(epoch_ms: int) -> str:
    """``new java.util.Date(epoch_ms).toString()``: ``EEE MMM dd HH:mm:ss zzz yyyy`` in the local
    time zone with English names whatever the locale, e.g. ``Thu Jan 01 00:00:00 UTC 1970``."""
    when = datetime.datetime.fromtimestamp(epoch_ms / 1000).astimezone()
    return f"{_DAY_NAMES[when.weekday()]} {_MONTH_NAMES[when.month - 1]} {when:%d %H:%M:%S} {when.tzname()} {when.year}"
