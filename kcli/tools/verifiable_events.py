"""The JSON event lines of Kafka's VerifiableProducer and VerifiableConsumer, as Jackson writes them:
compact, ``timestamp`` and ``name`` first, then the event's fields in Kafka's order; doubles as
Java's Double.toString spells them (non-finite ones as strings, Jackson's default)."""

from __future__ import annotations

import json
import math
import time
from typing import Any

from kcli.java_compat import double_to_string


def event(name: str, **fields: Any) -> str:
    """One event line: ``{"timestamp":<now ms>,"name":<name>,<fields...>}``."""
    return _value({"timestamp": time.time_ns() // 1_000_000, "name": name, **fields})


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if isinstance(value, float):
        return double_to_string(value) if math.isfinite(value) else json.dumps(double_to_string(value))
    return json.dumps(value, ensure_ascii=False)
