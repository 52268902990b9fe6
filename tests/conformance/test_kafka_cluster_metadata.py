"""``kcli dump-log-segments --cluster-metadata-decoder`` on a ``__cluster_metadata`` log written by
a real KRaft broker (Confluent cp-kafka, metadata.version 29, so newer than Kafka 3.9).

The file is read in place from the shared fixtures directory. The facts checked are established
from the bytes here, without the decoder under test: a record value starts with the uvarint frame
version (1), api key and version, all single bytes in this log; a TopicRecord v0 continues with its
compact name (uvarint length+1) and 16-byte topic id; a PartitionRecord with its int32 partition id
and topic id.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from kcli.storage.records import iter_batches

SEGMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "kafka-segments"
LOG = SEGMENTS / "kraft-cleanshutdown-nomanazeem" / "kafka-logs" / "__cluster_metadata-0" / "00000000000000000000.log"
# Why this module may skip: its subject is bytes a real Kafka broker wrote. They live in
# ../shared beside the project and may not be copied into it, so on a checkout without ../shared
# there is nothing Kafka wrote to compare with; wherever ../shared is present the module runs.
if not LOG.is_file():
    pytest.skip(f"Kafka cluster metadata fixture not found at {LOG}", allow_module_level=True)


# Record type ids and MetadataRecordType names as Kafka 3.9 defines them.
TYPE_NAMES = {0: "REGISTER_BROKER_RECORD", 2: "TOPIC_RECORD", 3: "PARTITION_RECORD", 4: "CONFIG_RECORD",
              5: "PARTITION_CHANGE_RECORD", 12: "FEATURE_LEVEL_RECORD", 17: "BROKER_REGISTRATION_CHANGE_RECORD",
              20: "NO_OP_RECORD", 23: "BEGIN_TRANSACTION_RECORD", 24: "END_TRANSACTION_RECORD",
              27: "REGISTER_CONTROLLER_RECORD"}
RECORD_LINE = re.compile(r"^\| offset: (\d+) CreateTime: -?\d+ keySize: (-?\d+) valueSize: (\d+) sequence: -1 "
                         r"headerKeys: \[\] payload: (.*)$")


def kafka_uuid(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@cache
def data_records() -> list[tuple[int, bytes]]:
    """(offset, value) of every non-control record, straight from the batches."""
    out = []
    for batch in iter_batches(LOG.read_bytes()):
        if batch.is_control:
            continue
        out.extend((r.offset, r.value) for r in batch.records())
    return out


@pytest.fixture
def dump(kcli_run):
    code, out, err = kcli_run("dump-log-segments", "--files", str(LOG), "--cluster-metadata-decoder")
    assert code == 0
    assert err == []
    payloads = {}
    for line in out:
        if "payload: " in line:
            m = RECORD_LINE.match(line)
            assert m, line
            payloads[int(m.group(1))] = (int(m.group(3)), m.group(4))
    return out, payloads


def test_every_data_record_prints_one_json_payload_and_no_key(dump):
    out, payloads = dump
    records = data_records()
    assert len(records) == 2066
    assert sorted(payloads) == [offset for offset, _ in records]
    assert not any(" key: " in line for line in out)
    for offset, value in records:
        size, text = payloads[offset]
        assert size == len(value)
        assert not text.startswith("Error at")
        parsed = json.loads(text)
        assert list(parsed) == ["type", "version", "data"]
        assert value[0] == 1  # frame version
        assert parsed["type"] == TYPE_NAMES[value[1]]
        assert parsed["version"] == value[2]


def test_record_type_counts(dump):
    _, payloads = dump
    printed = Counter(json.loads(text)["type"] for _, text in payloads.values())
    from_bytes = Counter(TYPE_NAMES[value[1]] for _, value in data_records())
    assert printed == from_bytes
    assert printed["TOPIC_RECORD"] == 2
    assert printed["PARTITION_RECORD"] == 53
    assert printed["REGISTER_BROKER_RECORD"] == 1


def topics_from_bytes() -> dict[str, str]:
    topics = {}
    for _, value in data_records():
        if value[:3] == b"\x01\x02\x00":
            length = value[3] - 1
            name = value[4:4 + length].decode()
            topics[name] = kafka_uuid(value[4 + length:4 + length + 16])
    return topics


def test_topic_records(dump):
    _, payloads = dump
    topics = topics_from_bytes()
    assert set(topics) == {"demo-topic", "__consumer_offsets"}
    printed = [json.loads(t)["data"] for _, t in payloads.values() if '"type":"TOPIC_RECORD"' in t]
    assert {d["name"]: d["topicId"] for d in printed} == topics


def test_consumer_offsets_has_50_partition_records(dump):
    _, payloads = dump
    topic_id = topics_from_bytes()["__consumer_offsets"]
    printed = [json.loads(t)["data"] for _, t in payloads.values() if '"type":"PARTITION_RECORD"' in t]
    partitions = sorted(d["partitionId"] for d in printed if d["topicId"] == topic_id)
    assert partitions == list(range(50))
    from_bytes = sorted(struct.unpack_from(">i", v, 3)[0] for _, v in data_records()
                        if v[1] == 3 and kafka_uuid(v[7:23]) == topic_id)
    assert from_bytes == partitions


def test_broker_and_controller_registration(dump):
    _, payloads = dump
    parsed = [json.loads(t) for _, t in payloads.values()]
    brokers = [p["data"] for p in parsed if p["type"] == "REGISTER_BROKER_RECORD"]
    assert [b["brokerId"] for b in brokers] == [1]
    assert brokers[0]["endPoints"][0]["name"] == "PLAINTEXT"
    controllers = [p["data"] for p in parsed if p["type"] == "REGISTER_CONTROLLER_RECORD"]
    assert [c["controllerId"] for c in controllers] == [1]
    levels = {p["data"]["name"]: p["data"]["featureLevel"] for p in parsed if p["type"] == "FEATURE_LEVEL_RECORD"}
    assert levels["metadata.version"] == 29


def test_skip_record_metadata_prints_payload_only(kcli_run):
    code, out, _ = kcli_run("dump-log-segments", "--files", str(LOG), "--cluster-metadata-decoder",
                            "--skip-record-metadata", "--max-bytes", "421")
    assert code == 0
    lines = [line for line in out if "payload:" in line]
    assert len(lines) == 9  # the first data batch (offsets 1-9) ends at byte 421
    assert all(line.startswith(' payload: {"type":"') for line in lines)
