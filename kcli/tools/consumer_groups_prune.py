"""``consumer-groups --delete --inactive-for DURATION [--dry-run]`` (kcli's own): delete the
consumer groups nobody has used for a while.

A group's last activity is its newest offset commit: the largest ``commitTimestamp`` among the
offset commit records of ``__consumer_offsets`` still in effect for it (the last record of each
of its partitions, a tombstone meaning that partition's offset is gone). A group is pruned when
it is Empty (no member: a running consumer is activity whatever its commits) and its newest
commit is older than DURATION; a group with no commit left is never pruned, since nothing says
when it was last used. ``__consumer_offsets`` is read through Fetch from its log start offset to
its high watermark, every partition (read access to the internal topic is needed), and each
offset commit record decoded (``protocol.coordinator_records``); control batches are skipped.

DURATION: a number and a unit (``ms``, ``s``, ``m``, ``h``, ``d``, ``w``: ``7d``, ``36h``) or
Java's ISO form (``P7D``, ``PT36H``).
"""

from __future__ import annotations

import re

from kcli.common import GROUP_METADATA_TOPIC_NAME, TopicPartition
from kcli.errors import UsageError

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_SIMPLE = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
EARLIEST, LATEST = -2, -1


def parse_inactive_for(text: str) -> int:
    """The duration in ms; a usage error naming the forms when it is none of them."""
    match = _SIMPLE.fullmatch(text.strip())
    if match is not None:
        return int(match.group(1)) * _UNITS[match.group(2)]
    if text.strip().upper().startswith("P"):
        from kcli.tools.consumer_groups_reset import parse_duration_ms

        try:
            value = parse_duration_ms(text.strip())
        except UsageError:
            value = -1
        if value >= 0:
            return value
    raise UsageError(f"--inactive-for takes a duration such as 7d, 36h, 30m, 45s, 500ms or PT36H, not {text}")


async def newest_commits(cluster, groups: set[str]) -> dict[str, int]:
    """The newest commit timestamp of each of ``groups`` that has an offset left."""
    from kcli.client.admin import Admin
    from kcli.errors import KafkaError

    admin = Admin(cluster)
    described = (await admin.describe_topics([GROUP_METADATA_TOPIC_NAME]))[GROUP_METADATA_TOPIC_NAME]
    if isinstance(described, Exception):
        raise described
    partitions = [TopicPartition(GROUP_METADATA_TOPIC_NAME, p) for p in sorted(described.partitions)]
    starts = await admin.list_offsets({tp: EARLIEST for tp in partitions})
    ends = await admin.list_offsets({tp: LATEST for tp in partitions})
    for listed in (*starts.values(), *ends.values()):
        if listed.error is not None:
            raise listed.error
    latest: dict[tuple[str, str, int], int | None] = {}
    fetching = {tp: starts[tp].offset for tp in partitions if starts[tp].offset < ends[tp].offset}
    while fetching:
        answers = await admin.fetch_records(fetching)
        for tp, answer in answers.items():
            if answer.error is not None:
                raise KafkaError(answer.error.error_code, f"reading {tp}: {answer.error}")
            next_offset = _read_commits(answer.records, fetching[tp], groups, latest)
            if next_offset is None or next_offset >= ends[tp].offset:
                del fetching[tp]
            else:
                fetching[tp] = next_offset
    newest: dict[str, int] = {}
    for (group, _topic, _partition), timestamp in latest.items():
        if timestamp is not None:
            newest[group] = max(newest.get(group, timestamp), timestamp)
    return newest


def _read_commits(data: bytes, start: int, groups: set[str], latest: dict) -> int | None:
    """Each offset commit record of ``groups`` at or after ``start`` into ``latest``; the offset
    after the last whole batch, None when there was none."""
    from kcli.protocol.coordinator_records import OFFSET_COMMIT, decode_offset_commit_value, decode_offsets_key
    from kcli.storage import records as rec

    pos, end, next_offset = 0, len(data), None
    while end - pos >= rec.HEADER_SIZE_UP_TO_MAGIC:
        _base, size, _magic = rec.peek_batch_header(data, pos)
        if pos + size > end:
            break
        batch = rec.read_batch(data, pos)
        next_offset = batch.last_offset + 1
        pos += size
        if batch.is_control:
            continue
        for record in batch.records():
            if record.offset < start or record.key is None:
                continue
            kind, _type, key = decode_offsets_key(record.key)
            if kind != OFFSET_COMMIT or key["Group"] not in groups:
                continue
            place = (key["Group"], key["Topic"], key["Partition"])
            latest[place] = None if record.value is None else decode_offset_commit_value(record.value)[1]["CommitTimestamp"]
    return next_offset
