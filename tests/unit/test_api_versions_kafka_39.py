"""The versions the broker serves, against Kafka 3.9's and against SKIPPED.md.

``tests/data/kafka-3.9-api-versions.json`` holds, for each API kcli implements, the
``validVersions`` and ``deprecatedVersions`` of Kafka 3.9.0's message files: the ranges a 3.9
broker advertises in ApiVersions. The broker must serve every one of those versions, unless
SKIPPED.md's row for the API names it as left out, Kafka 3.9 deprecated it (or only brokers send
the API) and kio (the message layer) has no schema for it; SKIPPED.md's columns must say what is served and what 3.9 serves.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kcli.broker.handlers import load_registry
from kcli.protocol import messages, stated_apis

ROOT = Path(__file__).resolve().parents[2]
KAFKA_39 = {api["api_key"]: api for api in json.loads((ROOT / "tests/data/kafka-3.9-api-versions.json").read_text())["apis"]}
REGISTRY = load_registry()
ROW = re.compile(r"^\| (\w+) \((\d+)\) \| ([\d-]+) \| ([\d-]+) \| (.*) \|$")


def _range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _versions(low: int, high: int) -> str:
    return f"v{low}" if low == high else f"v{low}-{high}"


def _skipped_rows() -> dict[int, tuple[str, tuple[int, int], tuple[int, int], str]]:
    rows = {}
    for line in (ROOT / "SKIPPED.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            name, key, served, kafka_39, left_out = match.groups()
            rows[int(key)] = (name, _range(served), _range(kafka_39), left_out)
    return rows


ROWS = _skipped_rows()
# APIs only brokers send each other (a 3.9 broker sends its latest version): an old version the
# message layer cannot read may be left out without being deprecated.
BROKER_TO_BROKER = {27, 56}  # WriteTxnMarkers, AlterPartition


def test_the_table_covers_exactly_the_apis_kcli_implements():
    assert set(KAFKA_39) == set(REGISTRY) == set(ROWS)


@pytest.mark.parametrize("api_key", sorted(REGISTRY))
def test_every_kafka_39_version_is_served_or_documented_as_left_out(api_key):
    api, kafka_39, (name, served, documented_39, left_out) = REGISTRY[api_key], KAFKA_39[api_key], ROWS[api_key]
    low_39, high_39 = kafka_39["valid_versions"]
    assert name == kafka_39["name"]
    assert served == (api.min_version, api.max_version), f"SKIPPED.md's served versions of {name}"
    assert documented_39 == (low_39, high_39), f"SKIPPED.md's Kafka 3.9 versions of {name}"
    assert api.max_version >= high_39, f"{name} {_versions(api.max_version + 1, high_39)} is served by Kafka 3.9"
    if api.min_version > low_39:
        missing = _versions(low_39, api.min_version - 1)
        assert left_out.startswith(missing + " "), f"SKIPPED.md does not name {name} {missing} as left out"
        deprecated = kafka_39["deprecated_versions"]
        if api_key not in BROKER_TO_BROKER:
            assert deprecated is not None and deprecated[0] <= low_39 and api.min_version - 1 <= deprecated[1], f"{name} {missing} is not deprecated in 3.9"
        assert not any(messages.has_version(api_key, v) for v in range(low_39, api.min_version)), f"kio has {name} {missing}: serve it"


def test_versions_stated_below_kio_are_the_deprecated_ones_3_9_still_serves():
    """OffsetCommit v0-1 and OffsetFetch v0 (ZooKeeper-era versions, removed in 4.0): kio lacks
    them, kcli states their 3.9 schemas and serves them, down to Kafka 3.9's lowest version."""
    assert set(stated_apis.OLDER_VERSIONS) == {8, 9}
    for api_key in stated_apis.OLDER_VERSIONS:
        versions = stated_apis.older_versions(api_key)
        deprecated = KAFKA_39[api_key]["deprecated_versions"]
        assert versions == tuple(range(deprecated[0], deprecated[1] + 1))
        assert REGISTRY[api_key].min_version == KAFKA_39[api_key]["valid_versions"][0] == versions[0]
        assert all(messages.has_version(api_key, v) for v in range(versions[0], REGISTRY[api_key].max_version + 1))
