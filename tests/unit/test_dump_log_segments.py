"""kcli dump-log-segments against Kafka's published output lines and templates (reference section 3)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from kcli.storage.compression import CompressionType
from kcli.storage.records import ControlType, NewRecord, build_batch, control_record, end_txn_marker_value

LOG = "00000000000000000000.log"


@pytest.fixture
def dump(kcli_run):
    return lambda *args: kcli_run("dump-log-segments", *args)


def write_log(tmp_path: Path, *batches: bytes, name: str = LOG) -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(batches))
    return path


def published_3_0_batch() -> bytes:
    # Kafka 3.0 printed this batch (reference 3.4): count 2, size 88, crc 873053997, record 0
    # payload "drfverv". The second record's 5-byte payload is not printed there; "rberb" is the
    # lower-case payload whose CRC-32C gives the printed crc.
    return build_batch(
        [NewRecord(None, b"drfverv", 1632815303637), NewRecord(None, b"rberb", 1632815304456)],
        partition_leader_epoch=0,
    )


def test_published_kafka_3_0_dump_in_3_9_form(tmp_path, dump):
    path = write_log(tmp_path, published_3_0_batch())
    code, out, err = dump("--files", str(path), "--print-data-log")
    assert code == 0 and err == []
    assert out == [
        f"Dumping {path}",
        "Log starting offset: 0",
        # The published 3.0 line plus the deleteHorizonMs field Kafka added in 3.2.
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        "position: 0 CreateTime: 1632815304456 size: 88 magic: 2 compresscodec: none crc: 873053997 isvalid: true",
        "| offset: 0 CreateTime: 1632815303637 keySize: -1 valueSize: 7 sequence: -1 headerKeys: [] payload: drfverv",
        "| offset: 1 CreateTime: 1632815304456 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: rberb",
    ]


def test_kafka_dump_log_sh_name_prints_the_same_lines(tmp_path, kcli_run):
    """kafka-dump-log.sh is the script's name since Kafka 2.0: ``kcli dump-log`` takes its flags and
    prints its lines (the published 3.0 batch, in 3.9's form)."""
    path = write_log(tmp_path, published_3_0_batch())
    code, out, err = kcli_run("dump-log", "--files", str(path), "--print-data-log")
    assert code == 0 and err == []
    assert out[:2] == [f"Dumping {path}", "Log starting offset: 0"]
    assert out[2].endswith("position: 0 CreateTime: 1632815304456 size: 88 magic: 2 compresscodec: none crc: 873053997 isvalid: true")
    assert out[3] == "| offset: 0 CreateTime: 1632815303637 keySize: -1 valueSize: 7 sequence: -1 headerKeys: [] payload: drfverv"


def test_published_kafka_2_x_record_in_3_9_form(tmp_path, dump):
    path = write_log(tmp_path, build_batch([NewRecord(b"DemoKey", b"DemoValue", 1599887411245)], partition_leader_epoch=0))
    code, out, _ = dump("--files", str(path), "--print-data-log")
    assert code == 0
    assert out[2].endswith("position: 0 CreateTime: 1599887411245 size: 84 magic: 2 compresscodec: none crc: 3888717251 isvalid: true")
    assert out[3] == "| offset: 0 CreateTime: 1599887411245 keySize: 7 valueSize: 9 sequence: -1 headerKeys: [] key: DemoKey payload: DemoValue"


def test_shallow_dump_prints_only_batches(tmp_path, dump):
    path = write_log(tmp_path, published_3_0_batch())
    _, out, _ = dump("--files", str(path))
    assert len(out) == 3 and out[2].startswith("baseOffset: 0 lastOffset: 1 count: 2")


def test_deep_iteration_without_data(tmp_path, dump):
    path = write_log(tmp_path, build_batch([NewRecord(b"k", b"v", 5, (("h1", b"x"), ("h2", None)))], producer_id=3, producer_epoch=1, base_sequence=7))
    _, out, _ = dump("--files", str(path), "--deep-iteration")
    assert out[3] == "| offset: 0 CreateTime: 5 keySize: 1 valueSize: 1 sequence: 7 headerKeys: [h1,h2]"


def test_skip_record_metadata(tmp_path, dump):
    path = write_log(tmp_path, build_batch([NewRecord(b"k", b"v", 5), NewRecord(None, b"w", 6)]))
    _, out, _ = dump("--files", str(path), "--print-data-log", "--skip-record-metadata")
    assert out[3:] == ["| key: k payload: v", " payload: w"]


def test_control_batch(tmp_path, dump):
    marker = control_record(ControlType.COMMIT, end_txn_marker_value(17), 55)
    path = write_log(tmp_path, build_batch([marker], producer_id=4, producer_epoch=0, control=True, transactional=True, base_offset=0))
    _, out, _ = dump("--files", str(path), "--print-data-log")
    assert "isTransactional: true isControl: true" in out[2]
    assert out[3] == "| offset: 0 CreateTime: 55 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 17"


def test_compressed_batch_codec_name(tmp_path, dump):
    path = write_log(tmp_path, build_batch([NewRecord(None, b"x" * 100, 1)] * 3, compression=CompressionType.LZ4))
    _, out, _ = dump("--files", str(path), "--print-data-log")
    assert " compresscodec: lz4 " in out[2]
    assert out[3:] == [f"| offset: {i} CreateTime: 1 keySize: -1 valueSize: 100 sequence: -1 headerKeys: [] payload: {'x' * 100}" for i in range(3)]


def legacy_message(offset: int, magic: int, value: bytes, timestamp: int = -1) -> bytes:
    body = struct.pack(">bb", magic, 0) + (struct.pack(">q", timestamp) if magic == 1 else b"")
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def test_legacy_messages(tmp_path, dump):
    v0 = legacy_message(0, 0, b"a")
    v1 = legacy_message(1, 1, b"b", timestamp=100)
    path = write_log(tmp_path, v0, v1)
    _, out, _ = dump("--files", str(path), "--print-data-log")
    crc0 = struct.unpack_from(">I", v0, 12)[0]
    crc1 = struct.unpack_from(">I", v1, 12)[0]
    assert out[2:] == [
        f"offset: 0 position: 0 NoTimestampType: -1 size: {len(v0)} magic: 0 compresscodec: none crc: {crc0} isvalid: true",
        # Kafka 3.x prints a stray "}" after a legacy record's crc.
        f"| offset: 0 NoTimestampType: -1 keySize: -1 valueSize: 1 isValid: true crc: {crc0}}} payload: a",
        f"offset: 1 position: {len(v0)} CreateTime: 100 size: {len(v1)} magic: 1 compresscodec: none crc: {crc1} isvalid: true",
        f"| offset: 1 CreateTime: 100 keySize: -1 valueSize: 1 isValid: true crc: {crc1}}} payload: b",
    ]


def test_trailing_bytes_and_max_bytes(tmp_path, dump):
    batch = published_3_0_batch()
    path = write_log(tmp_path, batch, batch[:20])
    _, out, _ = dump("--files", str(path))
    assert out[-1] == f"Found 20 invalid bytes at the end of {LOG}"
    _, out, _ = dump("--files", str(path), "--max-bytes", "50")
    assert out == [f"Dumping {path}", "Log starting offset: 0"]


def test_non_consecutive_offsets_reported_on_stderr(tmp_path, dump):
    path = write_log(
        tmp_path,
        build_batch([NewRecord(None, b"a", 1)], base_offset=0),
        build_batch([NewRecord(None, b"b", 1)], base_offset=5),
        build_batch([NewRecord(None, b"c", 1)], base_offset=9),
    )
    _, _, err = dump("--files", str(path), "--deep-iteration")
    assert err == [f"Non-consecutive offsets in {path.absolute()}", "  5 is followed by 9", "  0 is followed by 5"]


def test_corrupt_batch_is_printed_invalid(tmp_path, dump):
    data = bytearray(published_3_0_batch())
    data[70] ^= 0xFF
    path = write_log(tmp_path, bytes(data))
    _, out, _ = dump("--files", str(path))
    assert out[2].endswith("isvalid: false")


def test_random_bytes_file(tmp_path, dump):
    # The size field reads as 134810123, past the end: Kafka treats that as a partial tail.
    path = write_log(tmp_path, bytes(range(256)) * 4)
    code, out, err = dump("--files", str(path))
    assert (code, err) == (0, [])
    assert out == [f"Dumping {path}", "Log starting offset: 0", f"Found 1024 invalid bytes at the end of {LOG}"]


def test_size_below_minimum_is_reported_with_its_position(tmp_path, dump):
    batch = published_3_0_batch()
    path = write_log(tmp_path, batch, struct.pack(">qi", 2, 5) + b"\x02" * 40)
    code, out, err = dump("--files", str(path))
    assert code == 1
    assert err == [f"Error: {path}: Found record size 5 smaller than minimum record overhead (14) at position 88."]
    assert out[-1] == f"Found 52 invalid bytes at the end of {LOG}"


def test_unknown_suffix_and_directory(tmp_path, dump):
    other = tmp_path / "notes.txt"
    other.write_text("x")
    code, out, err = dump("--files", f"{other},{tmp_path}")
    assert out == [f"Dumping {other}", f"Dumping {tmp_path}"]
    assert err[0] == f"Ignoring unknown file {other}"
    assert "is a directory" in err[1]
    assert code == 1


def test_bad_file_name(tmp_path, dump):
    path = write_log(tmp_path, published_3_0_batch(), name="segment.log")
    code, _, err = dump("--files", str(path))
    assert code == 1 and "base offset" in err[0]


def test_several_files_in_order(tmp_path, dump):
    a = write_log(tmp_path, published_3_0_batch())
    sub = tmp_path / "b"
    sub.mkdir()
    b = write_log(sub, build_batch([NewRecord(None, b"z", 1)], base_offset=7), name="00000000000000000007.log")
    _, out, _ = dump("--files", f"{a},{b}")
    assert [line for line in out if line.startswith(("Dumping", "Log starting"))] == [
        f"Dumping {a}", "Log starting offset: 0", f"Dumping {b}", "Log starting offset: 7",
    ]


def test_decoder_classes(tmp_path, dump):
    path = write_log(tmp_path, build_batch([NewRecord(struct.pack(">i", -5), struct.pack(">q", 2**40), 1)]))
    _, out, _ = dump(
        "--files", str(path),
        "--key-decoder-class", "org.apache.kafka.tools.api.IntegerDecoder",
        "--value-decoder-class", "kafka.serializer.LongDecoder",
    )
    assert out[0] == "kafka.serializer.LongDecoder is deprecated. Please use org.apache.kafka.tools.api.LongDecoder instead"
    assert out[-1].endswith(f"key: -5 payload: {2**40}")
    code, _, err = dump("--files", str(path), "--value-decoder-class", "com.example.Nope")
    assert code == 2 and "com.example.Nope" in err[0]


def test_json_output(tmp_path, dump):
    path = write_log(tmp_path, published_3_0_batch())
    _, out, _ = dump("--files", str(path), "--print-data-log", "--output", "json")
    objects = [json.loads(line) for line in out]
    assert [o["type"] for o in objects] == ["file", "log", "batch", "record", "record"]
    assert objects[2]["crc"] == 873053997 and objects[2]["compressCodec"] == "none" and objects[2]["isValid"] is True
    assert objects[3]["payload"] == "drfverv" and objects[3]["key"] is None and objects[3]["offset"] == 0


# -- indexes ------------------------------------------------------------------------------------------


def write_index(path: Path, entries: list[tuple[int, int]], fmt: str) -> None:
    path.write_bytes(b"".join(struct.pack(fmt, *e) for e in entries))


def three_batches(tmp_path: Path) -> tuple[Path, list[int]]:
    batches = [build_batch([NewRecord(None, b"v", 1000 + 10 * i), NewRecord(None, b"w", 1001 + 10 * i)], base_offset=2 * i) for i in range(3)]
    positions = [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    return write_log(tmp_path, *batches), positions


def test_offset_index_dump_and_mismatch(tmp_path, dump):
    log, positions = three_batches(tmp_path)
    index = tmp_path / "00000000000000000000.index"
    # Entries are (relative last offset of the batch, position); the second is wrong on purpose.
    write_index(index, [(1, positions[0]), (2, positions[1]), (5, positions[2])], ">ii")
    code, out, err = dump("--files", str(index))
    assert out == [f"Dumping {index}", f"offset: 1 position: {positions[0]}", f"offset: 2 position: {positions[1]}", f"offset: 5 position: {positions[2]}"]
    assert err == [f"Mismatches in :{index.absolute()}", "  Index offset: 2, log offset: 3"]
    _, out, _ = dump("--files", str(index), "--verify-index-only")
    assert out == [f"Dumping {index}"]


def test_offset_index_stops_at_zero_tail_and_empty_index(tmp_path, dump):
    log, positions = three_batches(tmp_path)
    index = tmp_path / "00000000000000000000.index"
    write_index(index, [(1, 0), (3, positions[1]), (0, 0), (0, 0)], ">ii")
    _, out, err = dump("--files", str(index))
    assert out[1:] == ["offset: 1 position: 0", f"offset: 3 position: {positions[1]}"] and err == []
    index.write_bytes(b"")
    _, out, _ = dump("--files", str(index))
    assert out == [f"Dumping {index}", f"{index} is empty."]


def test_time_index_dump_and_problems(tmp_path, dump):
    log, positions = three_batches(tmp_path)
    write_index(tmp_path / "00000000000000000000.index", [(1, 0), (3, positions[1]), (5, positions[2])], ">ii")
    tindex = tmp_path / "00000000000000000000.timeindex"
    # Right, wrong timestamp, and an offset that is not a batch's last offset.
    write_index(tindex, [(1001, 1), (1005, 3), (1021, 4)], ">qi")
    _, out, err = dump("--files", str(tindex))
    assert out[1:] == ["timestamp: 1001 offset: 1", "timestamp: 1005 offset: 3", "timestamp: 1021 offset: 4"]
    assert err == [
        f"Found timestamp mismatch in :{tindex.absolute()}",
        "  Index timestamp: 1005, log timestamp: 1011",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 4, found log offset: 5",
    ]


def test_index_sanity_check(tmp_path, dump):
    three_batches(tmp_path)
    index = tmp_path / "00000000000000000000.index"
    write_index(index, [(1, 0)], ">ii")
    _, out, _ = dump("--files", str(index), "--index-sanity-check")
    assert out == [f"Dumping {index}", f"{index} passed sanity check."]
    index.write_bytes(struct.pack(">ii", 1, 0) + b"\x00\x00\x00")
    code, _, err = dump("--files", str(index), "--index-sanity-check")
    assert code == 1
    assert err == [f"Error: Index file {index.absolute()} is corrupt, found 11 bytes which is neither positive nor a multiple of 8."]


def test_txn_index(tmp_path, dump):
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0, 42, 10, 20, 9) + struct.pack(">hqqqq", 0, 43, 30, 31, 25))
    _, out, _ = dump("--files", str(path))
    assert out[1:] == [
        "version: 0 producerId: 42 firstOffset: 10 lastOffset: 20 lastStableOffset: 9",
        "version: 0 producerId: 43 firstOffset: 30 lastOffset: 31 lastStableOffset: 25",
    ]


def test_empty_producer_snapshot(tmp_path, dump):
    path = tmp_path / "00000000000000000010.snapshot"
    path.write_bytes(bytes.fromhex("0001 48674bc7 00000000"))
    code, out, err = dump("--files", str(path))
    assert (code, out, err) == (0, [f"Dumping {path}"], [])


def test_corrupt_producer_snapshot(tmp_path, dump):
    path = tmp_path / "00000000000000000010.snapshot"
    path.write_bytes(bytes.fromhex("0001 48674bc8 00000000"))
    code, out, err = dump("--files", str(path))
    assert code == 1 and "Snapshot is corrupt (CRC is no longer valid)" in err[0]


@pytest.mark.parametrize("cut", [1, 30, 61, 80])
def test_truncated_segment_reports_invalid_bytes(tmp_path, dump, cut):
    batch = published_3_0_batch()
    path = write_log(tmp_path, batch, batch[:cut])
    code, out, _ = dump("--files", str(path), "--print-data-log")
    assert code == 0
    assert out[-1] == f"Found {cut} invalid bytes at the end of {LOG}"


def test_undecodable_records_report_the_file_position(tmp_path, dump):
    good = published_3_0_batch()
    bad = bytearray(build_batch([NewRecord(b"k", b"v", 1)], base_offset=2))
    bad[61] = 0x7E  # record length 63: past the end of the batch
    path = write_log(tmp_path, good, bytes(bad))
    code, out, err = dump("--files", str(path), "--deep-iteration")
    assert code == 1
    assert out[-1].endswith("isvalid: false")
    assert err[0].startswith(f"Error: cannot read the records of the batch at position {len(good)}:")
