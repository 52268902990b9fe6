"""dump-log-segments over data directories written by real Kafka brokers (../shared/kafka-segments).

The files are read in place, never copied into the project. The expected facts come from the
fixtures' ORIGIN.md (decoded by hand from the bytes) and from the output templates of Kafka 3.9.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"
pytestmark = pytest.mark.skipif(not SEGMENTS.is_dir(), reason="../shared/kafka-segments (real Kafka data) is not present")

BATCH_LINE = re.compile(
    r"baseOffset: (\d+) lastOffset: (\d+) count: (\d+) baseSequence: (-?\d+) lastSequence: (-?\d+) producerId: (-?\d+) "
    r"producerEpoch: (-?\d+) partitionLeaderEpoch: (-?\d+) isTransactional: (true|false) isControl: (true|false) "
    r"deleteHorizonMs: (OptionalLong\.empty|OptionalLong\[\d+\]) position: (\d+) (CreateTime|LogAppendTime): (-?\d+) "
    r"size: (\d+) magic: 2 compresscodec: (none|gzip|snappy|lz4|zstd) crc: (\d+) isvalid: (true|false)$"
)


@pytest.fixture
def dump(kcli_run):
    return lambda *args: kcli_run("dump-log-segments", *args)


def batches(lines: list[str]) -> list[re.Match]:
    return [m for m in map(BATCH_LINE.match, lines) if m]


def every_file(suffix: str) -> list[Path]:
    return sorted(SEGMENTS.glob(f"*/kafka-logs/*/*{suffix}"))


@pytest.mark.parametrize("path", every_file(".log"), ids=lambda p: str(p.relative_to(SEGMENTS)))
def test_every_kafka_log_dumps_cleanly(dump, path):
    code, out, err = dump("--files", str(path), "--deep-iteration")
    assert code == 0, err
    assert out[0] == f"Dumping {path}"
    assert out[1] == f"Log starting offset: {int(path.name.split('.')[0])}"
    assert not any(line.startswith("Found ") for line in out), "every batch of a Kafka-written log is whole"
    found = batches(out)
    assert all(m.group(18) == "true" for m in found), "every CRC Kafka wrote verifies"
    positions = [int(m.group(12)) for m in found]
    sizes = [int(m.group(15)) for m in found]
    assert positions == [sum(sizes[:i]) for i in range(len(sizes))]
    assert sum(sizes) == path.stat().st_size
    record_lines = [line for line in out if line.startswith("| offset: ")]
    assert len(record_lines) == sum(int(m.group(3)) for m in found)


def test_cities_keyless_records(dump):
    path = SEGMENTS / "zk-3.1.0-bheem6005/kafka-logs/cities-0/00000000000000000000.log"
    _, out, _ = dump("--files", str(path), "--print-data-log")
    found = batches(out)
    assert [(int(m.group(1)), int(m.group(3))) for m in found] == [(i, 1) for i in range(11)]
    assert all(m.group(4) == "-1" and m.group(16) == "none" for m in found)
    records = [line for line in out if line.startswith("| offset:")]
    assert records[0].endswith("keySize: -1 valueSize: 8 sequence: -1 headerKeys: [] payload: New York")
    assert records[1].endswith("payload: Berlin")
    assert all(" key: " not in line for line in records)


def test_snappy_batches_from_kafka_2_8(dump):
    path = SEGMENTS / "zk-2.8.0-seanorth/kafka-logs/some-topic-0/00000000000000000000.log"
    _, out, _ = dump("--files", str(path), "--print-data-log")
    found = batches(out)
    assert len(found) == 9
    assert {m.group(16) for m in found} == {"snappy"}
    assert all(m.group(3) == "1" for m in found)
    assert len([line for line in out if line.startswith("| offset:")]) == 9


def test_consumer_offsets_segment_with_index_and_time_index(dump):
    directory = SEGMENTS / "kraft-cleanshutdown-nomanazeem/kafka-logs/__consumer_offsets-15"
    log = directory / "00000000000000000000.log"
    _, out, _ = dump("--files", str(log))
    found = batches(out)
    assert len(found) == 88
    assert (int(found[0].group(1)), int(found[-1].group(2))) == (0, 255)
    assert {m.group(4) for m in found[:1]} == {"0"}  # 4.x coordinator writes baseSequence 0
    assert {m.group(8) for m in found} == {"0", "2"}

    index = directory / "00000000000000000000.index"
    code, out, err = dump("--files", str(index))
    assert code == 0 and err == []
    assert out[1:] == [f"offset: {o} position: {p}" for o, p in [(49, 4131), (100, 8279), (151, 12427), (198, 16566), (249, 20714)]]

    time_index = directory / "00000000000000000000.timeindex"
    code, out, err = dump("--files", str(time_index))
    assert code == 0 and err == []
    assert out[1:] == [
        f"timestamp: {t} offset: {o}"
        for t, o in [(1779276005670, 49), (1779276090681, 100), (1779276175691, 151), (1779276469791, 198), (1779276554804, 249), (1779276564803, 255)]
    ]
    for path in (index, time_index):
        _, out, _ = dump("--files", str(path), "--index-sanity-check")
        assert out[1] == f"{path} passed sanity check."


def test_compacted_segments_report_offset_gaps(dump):
    directory = SEGMENTS / "kraft-compacted-ronem123/kafka-logs/__consumer_offsets-44"
    segment0 = directory / "00000000000000000000.log"
    code, out, err = dump("--files", str(segment0), "--deep-iteration")
    assert code == 0
    assert [int(m.group(1)) for m in batches(out)] == [6, 8]
    assert err == [f"Non-consecutive offsets in {segment0.absolute()}", "  6 is followed by 8"]

    segment9 = directory / "00000000000000000009.log"
    _, out, _ = dump("--files", str(segment9), "--print-data-log")
    records = [line for line in out if line.startswith("| offset:")]
    assert [r.split()[2] for r in records] == ["9", "10"]
    assert all("valueSize: -1" in r and " payload: " not in r for r in records), "tombstones have no payload"

    empty_index = directory / "00000000000000000000.index"
    _, out, _ = dump("--files", str(empty_index))
    assert out == [f"Dumping {empty_index}", f"{empty_index} is empty."]

    time_index = SEGMENTS / "kraft-compacted-ronem123/kafka-logs/__consumer_offsets-31/00000000000000000003.timeindex"
    code, out, err = dump("--files", str(time_index))
    assert (code, out[1:], err) == (0, ["timestamp: 1767085787771 offset: 4"], [])


def test_empty_producer_snapshots(dump):
    paths = every_file(".snapshot")
    assert paths
    code, out, err = dump("--files", ",".join(map(str, paths)))
    assert code == 0 and err == []
    assert out == [f"Dumping {p}" for p in paths]


def test_json_output_over_a_kafka_segment(dump):
    path = SEGMENTS / "zk-2.x-iechenyb/kafka-logs/__consumer_offsets-36/00000000000000000000.log"
    _, out, _ = dump("--files", str(path), "--deep-iteration", "--output", "json")
    objects = [json.loads(line) for line in out]
    batch_objects = [o for o in objects if o["type"] == "batch"]
    assert len(batch_objects) == 16
    assert [o["offset"] for o in objects if o["type"] == "record"] == list(range(16))
    assert all(o["isValid"] and o["baseSequence"] == 0 for o in batch_objects)


def test_offsets_decoder_over_kafka_written_commits(dump):
    path = SEGMENTS / "zk-2.x-iechenyb/kafka-logs/__consumer_offsets-36/00000000000000000000.log"
    code, out, err = dump("--files", str(path), "--offsets-decoder")
    assert code == 0 and err == []
    records = [line for line in out if line.startswith("| offset:")]
    assert len(records) == 16
    key = ' key: {"type":"1","data":{"group":"flink-group","topic":"test-0921","partition":0}}'
    assert all(key + ' payload: {"version":"3","data":{"offset":' in line for line in records)
    assert ' payload: {"version":"3","data":{"offset":35,' in records[0]
    assert ' payload: {"version":"3","data":{"offset":85,' in records[1]


def test_offsets_decoder_prints_tombstones_as_delete(dump):
    path = SEGMENTS / "kraft-compacted-ronem123/kafka-logs/__consumer_offsets-44/00000000000000000009.log"
    _, out, _ = dump("--files", str(path), "--offsets-decoder")
    records = [line for line in out if line.startswith("| offset:")]
    assert len(records) == 2
    assert all(line.endswith(" payload: <DELETE>") for line in records)
    assert '"group":"rupia-transaction-group"' in records[0] or '"group":"rupia-transaction-group"' in records[1]
