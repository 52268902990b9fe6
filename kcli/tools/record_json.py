"""The JSON shape of one record, shared by ``console-consumer --output json`` (writer) and
``console-producer --input json`` (reader), so a consume -> produce round trip loses nothing.

One object per line::

    {"topic": "orders", "partition": 0, "offset": 42, "timestamp": 1700000000000,
     "timestampType": "CreateTime", "key": "k1", "value": "v1",
     "headers": [{"key": "h", "value": "x"}]}

Keys, values and header values are ``null`` when null, a string when the bytes are valid UTF-8,
and ``{"base64": "..."}`` otherwise. The reader needs only ``value``; ``key``, ``headers``,
``partition`` and ``timestamp`` are used when present, and the other fields are ignored (they
describe where the record was, not where it goes). ``partition`` is a non-negative int32 and
``timestamp`` a non-negative int64 (or -1, a record without one), as Kafka's ProducerRecord
checks them.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, NamedTuple

from kcli.errors import UsageError

TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP: the timestamp of a record without one


def encode_bytes(data: bytes | None) -> str | dict[str, str] | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_bytes(value: Any, what: str) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and set(value) == {"base64"} and isinstance(value["base64"], str):
        try:
            return base64.b64decode(value["base64"], validate=True)
        except binascii.Error:
            raise UsageError(f"{what} is not valid base64") from None
    raise UsageError(f"{what} must be null, a string or {{\"base64\": ...}}")


def record_to_json(
    topic: str, partition: int, offset: int, timestamp: int, timestamp_type: int,
    key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]],
) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp": timestamp,
        "timestampType": TIMESTAMP_TYPES.get(timestamp_type, "NoTimestampType"),
        "key": encode_bytes(key),
        "value": encode_bytes(value),
        "headers": [{"key": k, "value": encode_bytes(v)} for k, v in headers],
    }


class JsonRecord(NamedTuple):
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    partition: int | None
    timestamp: int | None


def record_from_json(obj: Any) -> JsonRecord:
    """A record to produce from one decoded JSON line; raises UsageError naming what is wrong."""
    if not isinstance(obj, dict):
        raise UsageError("a JSON record must be an object")
    if "value" not in obj:
        raise UsageError("a JSON record needs a \"value\" field")
    headers = []
    for header in obj.get("headers") or []:
        if not isinstance(header, dict) or not isinstance(header.get("key"), str):
            raise UsageError("each header must be an object with a string \"key\"")
        headers.append((header["key"], decode_bytes(header.get("value"), f"header {header['key']!r} value")))
    partition = obj.get("partition")
    timestamp = obj.get("timestamp")
    # Kafka's types (partition int32, timestamp int64), and ProducerRecord's checks and words.
    for name, number, bits in (("partition", partition, 32), ("timestamp", timestamp, 64)):
        if number is None:
            continue
        if not isinstance(number, int) or isinstance(number, bool) or number >= 1 << (bits - 1):
            raise UsageError(f"\"{name}\" must be an int{bits}")
        if name == "timestamp" and number == NO_TIMESTAMP:
            timestamp = None  # a record that had none (magic 0) gets one when sent, as a null does
        elif number < 0:
            what = "Partition number" if name == "partition" else "Timestamp"
            raise UsageError(f"Invalid {name}: {number}. {what} should always be non-negative or null.")
    return JsonRecord(decode_bytes(obj.get("key"), "key"), decode_bytes(obj["value"], "value"), headers, partition, timestamp)
