"""``__consumer_offsets`` logs written by real Kafka brokers (2.x ZooKeeper to 4.x KRaft).

The files are read in place from the shared fixtures directory (see its ORIGIN.md); the facts
checked here are the ones ORIGIN.md records from decoding them by hand. Every record of every
offsets log must decode, re-encode to the same bytes, and print as Kafka 3.9's --offsets-decoder
JSON without an error line.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from kcli.protocol.coordinator_records import (
    GROUP_METADATA,
    OFFSET_COMMIT,
    decode_offsets_key,
    decode_offsets_value,
    encode_offsets_key,
    encode_offsets_value,
    format_offsets_record,
)
from kcli.protocol.schema import kafka_json_dumps
from kcli.storage.records import iter_batches

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"
# Why this module may skip: its subject is bytes a real Kafka broker wrote. They live in
# ../shared beside the project and may not be copied into it, so on a checkout without ../shared
# there is nothing Kafka wrote to compare with; wherever ../shared is present the module runs.
if not SEGMENTS.is_dir():
    pytest.skip(f"Kafka segment fixtures not found at {SEGMENTS}", allow_module_level=True)


OFFSETS_LOGS = sorted(SEGMENTS.glob("*/kafka-logs/__consumer_offsets-*/*.log"))
KEY_LINE = re.compile(r'\{"type":"(\d+)","data":\{.*\}\}')
VALUE_LINE = re.compile(r'\{"version":"(\d+)","data":\{.*\}\}')


def log_path(fixture: str, partition: str, segment: int = 0) -> Path:
    return SEGMENTS / fixture / "kafka-logs" / partition / f"{segment:020d}.log"


@cache
def records(path: Path) -> list:
    return [record for batch in iter_batches(path.read_bytes()) for record in batch.records()]


def decoded(path: Path) -> list[tuple[int, str, int, dict, int | None, dict | None]]:
    """(offset, kind, record type, key, value version, value) for every record of a log."""
    out = []
    for record in records(path):
        kind, record_type, key = decode_offsets_key(record.key)
        version, value = (None, None) if record.value is None else decode_offsets_value(record_type, record.value)
        out.append((record.offset, kind, record_type, key, version, value))
    return out


def test_fixtures_are_present():
    assert len(OFFSETS_LOGS) == 9


@pytest.mark.parametrize("path", OFFSETS_LOGS, ids=lambda p: f"{p.parents[2].name}/{p.parent.name}/{p.stem[-2:]}")
def test_every_record_decodes_and_re_encodes_byte_identical(path):
    assert records(path)
    for record in records(path):
        kind, record_type, key = decode_offsets_key(record.key)
        assert kind in (OFFSET_COMMIT, GROUP_METADATA)
        assert encode_offsets_key(record_type, key) == bytes(record.key)
        if record.value is not None:
            version, value = decode_offsets_value(record_type, record.value)
            assert encode_offsets_value(record_type, version, value) == bytes(record.value)


@pytest.mark.parametrize("path", OFFSETS_LOGS, ids=lambda p: f"{p.parents[2].name}/{p.parent.name}/{p.stem[-2:]}")
def test_every_record_prints_as_kafka_39_json(path):
    for record in records(path):
        key, payload = format_offsets_record(record.key, record.value, record.offset)
        assert KEY_LINE.fullmatch(key), key
        if record.value is None:
            assert payload == "<DELETE>"
        else:
            assert VALUE_LINE.fullmatch(payload), payload
            assert kafka_json_dumps(json.loads(payload)) == payload  # compact, Jackson-style text
        assert kafka_json_dumps(json.loads(key)) == key


def test_zk_2x_flink_group_offset_commits():
    rows = decoded(log_path("zk-2.x-iechenyb", "__consumer_offsets-36"))
    assert [offset for offset, *_ in rows] == list(range(16))
    for _, kind, record_type, key, version, _value in rows:
        assert (kind, record_type, version) == (OFFSET_COMMIT, 1, 3)
        assert key == {"Group": "flink-group", "Topic": "test-0921", "Partition": 0}
    committed = [value["Offset"] for *_, value in rows]
    assert committed[:3] == [35, 85, 100]
    record = records(log_path("zk-2.x-iechenyb", "__consumer_offsets-36"))[0]
    key_line, payload = format_offsets_record(record.key, record.value, record.offset)
    assert key_line == '{"type":"1","data":{"group":"flink-group","topic":"test-0921","partition":0}}'
    assert payload.startswith('{"version":"3","data":{"offset":35,"leaderEpoch":')


def test_kraft_demo_group_with_flexible_offset_commit_values():
    path = log_path("kraft-cleanshutdown-nomanazeem", "__consumer_offsets-15")
    rows = decoded(path)
    assert [offset for offset, *_ in rows] == list(range(256))
    groups = [row for row in rows if row[1] == GROUP_METADATA]
    commits = [row for row in rows if row[1] == OFFSET_COMMIT]
    assert groups and commits and len(groups) + len(commits) == 256
    assert {(row[2], row[4]) for row in groups} == {(2, 3)}
    assert {row[3]["Group"] for row in groups} == {"demo-group"}
    assert {(row[2], row[4]) for row in commits} == {(1, 4)}
    assert {(row[3]["Group"], row[3]["Topic"]) for row in commits} == {("demo-group", "demo-topic")}
    assert {row[3]["Partition"] for row in commits} == {0, 1, 2}
    commit = next(r for r in records(path) if decode_offsets_key(r.key)[0] == OFFSET_COMMIT)
    assert format_offsets_record(commit.key, commit.value, commit.offset)[1].startswith('{"version":"4","data":{"offset":')


def test_kraft_compacted_tombstones():
    rows = decoded(log_path("kraft-compacted-ronem123", "__consumer_offsets-44", 9))
    assert sorted(row[0] for row in rows) == [9, 10]
    assert sorted(row[1] for row in rows) == [GROUP_METADATA, OFFSET_COMMIT]
    assert all(version is None and value is None for *_, version, value in rows)
    keys = {row[1]: row[3] for row in rows}
    assert keys[OFFSET_COMMIT] == {"Group": "rupia-transaction-group", "Topic": "topic_transactions", "Partition": 0}
    assert keys[GROUP_METADATA]["Group"] == "rupia-transaction-group"
    for record in records(log_path("kraft-compacted-ronem123", "__consumer_offsets-44", 9)):
        assert format_offsets_record(record.key, record.value, record.offset)[1] == "<DELETE>"


def test_kraft_compacted_segments_keep_their_offset_gaps():
    assert [row[0] for row in decoded(log_path("kraft-compacted-ronem123", "__consumer_offsets-31"))] == [2]
    assert [row[0] for row in decoded(log_path("kraft-compacted-ronem123", "__consumer_offsets-31", 3))] == [3, 4]
    assert [row[0] for row in decoded(log_path("kraft-compacted-ronem123", "__consumer_offsets-44"))] == [6, 8]
    for segment in (0, 3):
        for _, kind, record_type, key, version, _value in decoded(
                log_path("kraft-compacted-ronem123", "__consumer_offsets-31", segment)):
            assert (kind, record_type, version) == (GROUP_METADATA, 2, 3)
            assert key == {"Group": "console-consumer-7889"}


def test_zk_280_offset_commits_and_group_metadata():
    rows = decoded(log_path("zk-2.8.0-seanorth", "__consumer_offsets-16"))
    assert len(rows) == 69
    kinds = [(kind, record_type, version) for _, kind, record_type, _, version, _ in rows]
    assert kinds.count((OFFSET_COMMIT, 1, 3)) == 42
    assert kinds.count((GROUP_METADATA, 2, 3)) == 27


@pytest.mark.parametrize("partition", ["__consumer_offsets-0", "__consumer_offsets-2"])
def test_zk_310_console_consumer_groups_embed_the_consumer_protocol(partition):
    path = log_path("zk-3.1.0-bheem6005", partition)
    rows = decoded(path)
    assert len(rows) == 2
    for _, kind, record_type, key, version, value in rows:
        assert (kind, record_type, version) == (GROUP_METADATA, 2, 3)
        assert key["Group"].startswith("console-consumer-")
    members = 0
    for record in records(path):
        _, payload = format_offsets_record(record.key, record.value, record.offset)
        data = json.loads(payload)["data"]
        assert list(data) == ["protocolType", "generation", "protocol", "leader", "currentStateTimestamp", "members"]
        assert data["protocolType"] == "consumer"
        for member in data["members"]:
            members += 1
            assert list(member) == ["memberId", "groupInstanceId", "clientId", "clientHost", "rebalanceTimeout",
                                    "sessionTimeout", "subscription", "assignment"]
            assert member["clientId"] == "console-consumer"
            assert isinstance(member["subscription"], dict) and member["subscription"]["topics"]
            assert isinstance(member["assignment"], dict)
    assert members
