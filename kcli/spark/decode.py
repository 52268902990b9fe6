"""Record batches, from segment files or Fetch answers, to Arrow batches in Spark's Kafka schema.

The offline reader hands over the batches of a ``.log`` file, the online reader those of the
Fetch answers it receives; either way they come as ``(position, batch)`` pairs in offset order
and leave as ``pyarrow.RecordBatch``es of about ``rows_per_batch`` rows, covering exactly the
offsets ``[start, end)``.

v2 batches go to the vectorised decoder (``columnar.py``); what it refuses, legacy messages and
rows for bad batches go through ``records.py``'s decoder and ``RowBatchBuilder``. Rows are
flushed whenever the path changes, so they leave in order. Control batches (transaction
markers) are skipped, as consumers skip them. A batch that cannot be read is an error naming
where it is (``failOnDataLoss=true``), is skipped (false), or becomes one row with its raw bytes
and the reason in ``corrupt`` (``includeCorrupt=true``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kcli.errors import CorruptRecordError
from kcli.spark.arrow_rows import MAX_TIMESTAMP_MS, RowBatchBuilder
from kcli.spark.columnar import ColumnarChunk, PendingBatch, Refused
from kcli.spark.options import DataLossError
from kcli.storage.records import RecordBatch, TimestampType

ROWS_PER_ARROW_BATCH = 65536


def decode_batches(
    batches: Iterable[tuple[int, object]],
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    where: str,
    size: int | None = None,
    include_headers: bool = False,
    include_corrupt: bool = False,
    fail_on_data_loss: bool = True,
    rows_per_batch: int = ROWS_PER_ARROW_BATCH,
) -> Iterator:
    """The records of ``batches`` with offsets in ``[start, end)``, as Arrow batches.

    ``where`` names the source in errors (a file path, or a broker partition); ``size`` is the
    length of that file, when there is one, to say how many bytes a framing error makes unreadable.
    """
    fast = ColumnarChunk(topic, partition, start, end, include_headers=include_headers, include_corrupt=include_corrupt)
    slow = RowBatchBuilder(topic, partition, include_headers=include_headers, include_corrupt=include_corrupt)
    use_fast = True

    def bad(offset: int | None, raw: bytes | None, position: int, why: str) -> None:
        at = f"{where} at position {position}" + ("" if offset is None else f" (offset {offset})")
        if include_corrupt:
            slow.add_corrupt(offset, raw, f"{at}: {why}")
        elif fail_on_data_loss:
            raise DataLossError(f"corrupt record batch in {at}: {why}; set failOnDataLoss=false to skip bad batches")

    def decode_slowly(pending: PendingBatch) -> None:
        batch, base = pending.batch, pending.base_offset
        try:
            fields = batch.record_fields()
        except CorruptRecordError as exc:
            bad(base, _raw(batch), pending.position, str(exc))
            return
        fields = [f for f in fields if start <= base + f[0] < end]
        times = [pending.log_append_time] if pending.log_append_time is not None else [pending.base_timestamp + f[1] for f in fields]
        if any(not -MAX_TIMESTAMP_MS <= t <= MAX_TIMESTAMP_MS for t in times):
            bad(base, _raw(batch), pending.position, "a record timestamp is out of range")
            return
        slow.add_fields(base, pending.base_timestamp, pending.log_append_time, pending.timestamp_type, fields)

    def flush_fast() -> Iterator:
        nonlocal use_fast
        if len(fast):
            try:
                yield fast.build()
            except Refused as refused:
                use_fast = use_fast and not refused.headers
                for pending in refused.pending:
                    decode_slowly(pending)
                yield from flush_slow()

    def flush_slow() -> Iterator:
        if len(slow):
            yield slow.build()

    batches = iter(batches)
    position = 0
    while True:
        try:
            position, batch = next(batches)
        except StopIteration:
            break
        except CorruptRecordError as exc:
            at = exc.position if exc.position is not None else position
            yield from flush_fast()
            rest = "" if size is None else f"; the {size - at} bytes from there on cannot be read as batches"
            bad(None, None, at, f"{exc}{rest}")
            break
        if batch.last_offset < start:
            continue
        if isinstance(batch, RecordBatch):
            base = batch.base_offset
            if base >= end:
                break
            try:
                batch.validate()
            except CorruptRecordError as exc:
                yield from flush_fast()
                bad(base, _raw(batch), position, str(exc))
                continue
            if batch.is_control:
                continue
            timestamp_type = batch.timestamp_type
            log_append_time = batch.max_timestamp if timestamp_type == TimestampType.LOG_APPEND_TIME else None
            pending = PendingBatch(batch, position, base, batch.base_timestamp, log_append_time, int(timestamp_type), batch.record_count)
            if use_fast:
                yield from flush_slow()
                try:
                    fast.add(batch, position, base, pending.base_timestamp, log_append_time, pending.timestamp_type)
                except CorruptRecordError as exc:
                    yield from flush_fast()
                    bad(base, _raw(batch), position, str(exc))
                    continue
                if len(fast) >= rows_per_batch:
                    yield from flush_fast()
            else:
                decode_slowly(pending)
        else:
            yield from flush_fast()
            try:
                batch.validate()
                inner = batch.records()
            except CorruptRecordError as exc:
                bad(batch.offset, _raw(batch), position, str(exc))
                continue
            if inner and inner[0].offset >= end:
                break
            if any(not -MAX_TIMESTAMP_MS <= rec.timestamp <= MAX_TIMESTAMP_MS for rec in inner):
                bad(batch.offset, _raw(batch), position, "a message timestamp is out of range")
                continue
            slow.add_records([rec for rec in inner if start <= rec.offset < end], int(batch.timestamp_type))
        if len(slow) >= rows_per_batch:
            yield from flush_slow()
    yield from flush_fast()
    yield from flush_slow()


def _raw(batch) -> bytes:
    return bytes(batch.buffer[batch.position : batch.position + batch.size_in_bytes])
