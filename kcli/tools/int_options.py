"""Integer flags typed as Kafka types them: every integer option of every tool declares one of
these as its ``click_type``, so a value outside its Kafka type (a Java ``Integer`` or ``Long``
option, an int16/int32/int64 field on the wire) is a usage error before any tool code runs::

    partitions: Annotated[Optional[int], typer.Option("--partitions", click_type=INT32)] = None

The error is a ``UsageError`` (one line on stderr, exit 2, through ``kcli.cli.main``), never a
``struct.error`` from encoding the value later. Ranges narrower than the type (a partition count
of at least 1, a replication factor up to 32767) stay with the tools, in Kafka's words.
"""

from __future__ import annotations

from typing import Any

import click


class KafkaInt(click.ParamType):
    """An integer within a Kafka type's range, and at least ``minimum`` when one is given."""

    def __init__(self, kafka_type: str, bits: int, minimum: int | None = None) -> None:
        self.kafka_type = kafka_type
        self.low = -(1 << (bits - 1)) if minimum is None else minimum
        self.high = (1 << (bits - 1)) - 1
        self.name = kafka_type

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        from kcli.errors import UsageError

        what = f"Invalid value for '{param.opts[0]}'" if param is not None and param.opts else "Invalid value"
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise UsageError(f"{what}: {value!r} is not a valid integer")
        if isinstance(value, str):
            text = value.strip()
            body = text[1:] if text[:1] in "+-" else text
            if not (body.isascii() and body.isdigit()):
                raise UsageError(f"{what}: {value!r} is not a valid integer")
            value = int(text)
        if not self.low <= value <= self.high:
            raise UsageError(f"{what}: {value} is not in the range of {self.describe()} ({self.low} to {self.high})")
        return value

    def describe(self) -> str:
        full_low = -(1 << (int(self.kafka_type[3:]) - 1))
        if self.low == full_low:
            return f"an {self.kafka_type}"
        if self.low == 0:
            return f"a non-negative {self.kafka_type}"
        return f"an {self.kafka_type} of at least {self.low}"

    def __repr__(self) -> str:
        return f"KafkaInt({self.kafka_type}, {self.low}..{self.high})"


INT16 = KafkaInt("int16", 16)
INT32 = KafkaInt("int32", 32)  # Java's Integer
INT64 = KafkaInt("int64", 64)  # Java's Long
NON_NEGATIVE_INT32 = KafkaInt("int32", 32, minimum=0)  # a partition id
