"""Records as Arrow columns in the exact schema Spark's Kafka source reads.

Spark checks the first Arrow batch a Python data source yields against
``to_arrow_schema(schema, timezone="UTC")`` and refuses anything else, so the Arrow schema here is
spelled out field for field: ``binary``/``string`` (not the large types), ``timestamp[us, UTC]``,
every field nullable, and the headers list's item named ``element``.

``RowBatchBuilder`` collects decoded record batches and turns them into one ``pyarrow.RecordBatch``
at a time: keys and values become one ``pa.array`` each, offsets and timestamps are computed with
numpy from the per-batch base values and the per-record deltas, and topic and partition are
repeated scalars. No Python object is built per row beyond what the record decoder returns.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import pyarrow as pa

HEADER_STRUCT = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_STRUCT))

_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]
HEADERS_FIELD = pa.field("headers", HEADERS_TYPE)
# kcli's addition for forensic reads: why a batch could not be read (null on every good row).
CORRUPT_FIELD = pa.field("corrupt", pa.string())

# Spark keeps microseconds in a long: a millisecond timestamp beyond this cannot be shown.
MAX_TIMESTAMP_MS = (2**63 - 1) // 1000

BASE_DDL = "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, timestampType INT"
HEADERS_DDL = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
CORRUPT_DDL = "corrupt STRING"


def arrow_schema(include_headers: bool = False, include_corrupt: bool = False) -> pa.Schema:
    fields = list(_BASE_FIELDS)
    if include_headers:
        fields.append(HEADERS_FIELD)
    if include_corrupt:
        fields.append(CORRUPT_FIELD)
    return pa.schema(fields)


def schema_ddl(include_headers: bool = False, include_corrupt: bool = False) -> str:
    """The same schema as Spark DDL (what the data source's ``schema()`` can return)."""
    parts = [BASE_DDL]
    if include_headers:
        parts.append(HEADERS_DDL)
    if include_corrupt:
        parts.append(CORRUPT_DDL)
    return ", ".join(parts)


class RowBatchBuilder:
    """Rows of one topic-partition, gathered a record batch at a time, built into Arrow batches.

    Each ``add_*`` call adds a block of rows that share a base offset, a base timestamp and a
    timestamp type; ``build`` returns everything added since the last ``build`` as one
    ``pyarrow.RecordBatch`` and starts over.
    """

    def __init__(self, topic: str, partition: int, *, include_headers: bool = False, include_corrupt: bool = False) -> None:
        self.topic = topic
        self.partition = partition
        self.include_headers = include_headers
        self.include_corrupt = include_corrupt
        self.schema = arrow_schema(include_headers, include_corrupt)
        self._reset()

    def _reset(self) -> None:
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self._offset_deltas: list[int] = []
        self._timestamp_deltas: list[int] = []
        self._headers: list[tuple] = []
        # One entry per block.
        self._counts: list[int] = []
        self._base_offsets: list[int] = []
        self._base_timestamps: list[int] = []
        self._use_deltas: list[bool] = []
        self._timestamp_types: list[int] = []
        self._valid: list[bool] = []
        self._reasons: list[str | None] = []
        self._rows = 0

    def __len__(self) -> int:
        return self._rows

    def _block(self, count: int, base_offset: int, base_timestamp: int, use_deltas: bool, timestamp_type: int, reason: str | None = None) -> None:
        self._counts.append(count)
        self._base_offsets.append(base_offset)
        self._base_timestamps.append(base_timestamp)
        self._use_deltas.append(use_deltas)
        self._timestamp_types.append(timestamp_type)
        self._valid.append(reason is None)
        self._reasons.append(reason)
        self._rows += count

    def add_fields(self, base_offset: int, base_timestamp: int, log_append_time: int | None, timestamp_type: int, fields: list) -> None:
        """A v2 batch's records as ``RecordBatch.record_fields`` gives them:
        ``(offset_delta, timestamp_delta, key, value, headers)`` tuples. With ``log_append_time``
        every record carries that time, as the consumer reports it."""
        if not fields:
            return
        offset_deltas, timestamp_deltas, keys, values, headers = zip(*fields)
        self._offset_deltas += offset_deltas
        self._timestamp_deltas += timestamp_deltas
        self._keys += keys
        self._values += values
        if self.include_headers:
            self._headers += headers
        if log_append_time is None:
            self._block(len(fields), base_offset, base_timestamp, True, timestamp_type)
        else:
            self._block(len(fields), base_offset, log_append_time, False, timestamp_type)

    def add_records(self, records: list, timestamp_type: int) -> None:
        """Records with absolute offsets and timestamps (legacy messages: ``Record`` tuples)."""
        if not records:
            return
        self.add_fields(0, 0, None, timestamp_type, [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records])

    def add_corrupt(self, offset: int | None, raw: bytes | None, reason: str) -> None:
        """One row standing for a batch that could not be read: its raw bytes as the value."""
        self._offset_deltas.append(0)
        self._timestamp_deltas.append(0)
        self._keys.append(None)
        self._values.append(raw)
        if self.include_headers:
            self._headers.append(())
        self._block(1, -1 if offset is None else offset, 0, False, 0, reason)

    def build(self) -> pa.RecordBatch:
        n = self._rows
        counts = np.array(self._counts, dtype=np.int64)
        offsets = np.repeat(np.array(self._base_offsets, dtype=np.int64), counts)
        offsets += np.array(self._offset_deltas, dtype=np.int64)
        timestamps = np.repeat(np.array(self._base_timestamps, dtype=np.int64), counts)
        deltas = np.array(self._timestamp_deltas, dtype=np.int64)
        use_deltas = np.array(self._use_deltas, dtype=bool)
        if use_deltas.all():
            timestamps += deltas
        else:
            timestamps += np.where(np.repeat(use_deltas, counts), deltas, 0)
        timestamps *= 1000  # milliseconds to Spark's microseconds
        types = np.repeat(np.array(self._timestamp_types, dtype=np.int32), counts)
        valid = np.array(self._valid, dtype=bool)
        row_mask = None if valid.all() else ~np.repeat(valid, counts)
        offset_mask = None
        if row_mask is not None:
            offset_mask = row_mask & (offsets < 0)
        columns = [
            pa.array(self._keys, type=pa.binary()),
            pa.array(self._values, type=pa.binary()),
            repeated_string(self.topic, n),
            pa.array(np.full(n, self.partition, dtype=np.int32)),
            pa.array(offsets, type=pa.int64(), mask=offset_mask),
            pa.array(timestamps, type=pa.timestamp("us", tz="UTC"), mask=row_mask),
            pa.array(types, type=pa.int32(), mask=row_mask),
        ]
        if self.include_headers:
            columns.append(_headers_array(self._headers))
        if self.include_corrupt:
            columns.append(pa.array(np.repeat(np.array(self._reasons, dtype=object), counts), type=pa.string()))
        batch = pa.RecordBatch.from_arrays(columns, schema=self.schema)
        self._reset()
        return batch


def repeated_string(value: str, n: int) -> pa.Array:
    """``value`` ``n`` times as a string array (``pa.repeat`` builds strings one by one)."""
    encoded = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * n)])


def _headers_array(headers: list[tuple]) -> pa.Array:
    """Spark's headers column: a list of (key, value) structs, null for a record without headers."""
    n = len(headers)
    lengths = np.fromiter(map(len, headers), dtype=np.int32, count=n)
    if not lengths.any():
        return pa.nulls(n, type=HEADERS_TYPE)
    pairs = list(chain.from_iterable(headers))
    keys, values = zip(*pairs)
    items = pa.StructArray.from_arrays([pa.array(keys, type=pa.string()), pa.array(values, type=pa.binary())], fields=list(HEADER_STRUCT))
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), items, type=HEADERS_TYPE, mask=pa.array(lengths == 0))
