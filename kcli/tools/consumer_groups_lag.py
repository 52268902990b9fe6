"""Lag in time for ``consumer-groups --describe --lag-time`` (kcli's own): how old the oldest
record a group has not consumed is.

That record is the first one at or after the group's committed offset; its timestamp is read
from a Fetch at that offset (``Admin.fetch_records``), one request per leader for every partition
at once. Groups at different offsets of one partition need as many rounds as the most offsets one
partition is asked at. A batch holding the offset is decoded (decompressed when it is) to reach
the record; control batches are skipped. The lag time is ``now - timestamp`` (never below 0):
0 when nothing is left to consume, None when there is no record to read there (the partition's
end, or a record without a timestamp).
"""

from __future__ import annotations

from collections.abc import Mapping

from kcli.common import TopicPartition
from kcli.errors import CorruptRecordError
from kcli.storage import records as rec

PARTITION_MAX_BYTES = 64 << 10  # a batch above it comes alone, as the first of its answer (KIP-74)


async def record_timestamps(cluster, wanted: Mapping[TopicPartition, set[int]]) -> dict[tuple[TopicPartition, int], int | None]:
    """The timestamp of the first record at or after each (partition, offset) asked, or None."""
    from kcli.client.admin import Admin

    admin = Admin(cluster)
    pending = {tp: sorted(offsets) for tp, offsets in wanted.items() if offsets}
    found: dict[tuple[TopicPartition, int], int | None] = {}
    while pending:
        asked = {tp: offsets[0] for tp, offsets in pending.items()}
        answers = await admin.fetch_records(asked, partition_max_bytes=PARTITION_MAX_BYTES)
        alone = []
        for tp, offset in asked.items():
            answer = answers.get(tp)
            timestamp = None
            if answer is not None and answer.error is None:
                timestamp, whole = first_timestamp(answer.records, offset)
                if timestamp is None and not whole:
                    alone.append(tp)  # a batch larger than the limit, cut: asked again on its own
                    continue
            found[(tp, offset)] = timestamp
            pending[tp].pop(0)
            if not pending[tp]:
                del pending[tp]
        for tp in alone:
            offset = pending[tp].pop(0)
            answer = (await admin.fetch_records({tp: offset}, partition_max_bytes=PARTITION_MAX_BYTES)).get(tp)
            found[(tp, offset)] = first_timestamp(answer.records, offset)[0] if answer is not None and answer.error is None else None
            if not pending[tp]:
                del pending[tp]
    return found


def first_timestamp(data: bytes, offset: int) -> tuple[int | None, bool]:
    """The timestamp of the first non-control record at or after ``offset`` in a Fetch answer's
    batches, and whether the answer held only whole batches (a cut one may hold the record)."""
    pos, end = 0, len(data)
    while end - pos >= rec.HEADER_SIZE_UP_TO_MAGIC:
        _base, size, _magic = rec.peek_batch_header(data, pos)
        if pos + size > end:
            return None, False
        batch = rec.read_batch(data, pos)
        if batch.last_offset >= offset and not batch.is_control:
            try:
                records = batch.records()
            except CorruptRecordError:
                return None, True
            for record in records:
                if record.offset >= offset:
                    return (record.timestamp if record.timestamp >= 0 else None), True
        pos += size
    return None, pos == end


def lag_time_ms(now_ms: int, lag: int | None, timestamp: int | None) -> int | None:
    if lag == 0:
        return 0
    if timestamp is None:
        return None
    return max(0, now_ms - timestamp)
