"""A broker under a low open-file limit (RLIMIT_NOFILE set in the broker process): creations that
would not fit are refused whole with POLICY_VIOLATION, requests asking for more than Kafka's
10,000 partitions are refused before anything is allocated, and a broker whose logs need more
files than the limit allows says so in one line instead of failing part-way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kcli.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient, code

METADATA, CREATE_TOPICS, CREATE_PARTITIONS = 3, 19, 37
LIMIT = 1024


def start(log_dir: Path, open_files: int = LIMIT) -> BrokerProcess:
    return BrokerProcess(log_dir, {"broker.id": "0"}, open_files=open_files).start()


def open_descriptors(broker: BrokerProcess) -> int:
    return len(os.listdir(f"/proc/{broker.process.pid}/fd"))


def partition_dirs(log_dir: Path, topic: str) -> list[str]:
    return [p.name for p in log_dir.iterdir() if p.is_dir() and p.name.rsplit("-", 1)[0] == topic]


def create_topics(client: WireClient, partitions: dict[str, int], validate_only: bool = False):
    topics = [{"name": name, "num_partitions": count, "replication_factor": 1} for name, count in partitions.items()]
    return client.call(CREATE_TOPICS, 7, {"topics": topics, "timeout": 10000, "validate_only": validate_only}).topics


def create_partitions(client: WireClient, topic: str, count: int):
    request = {"topics": [{"name": topic, "count": count, "assignments": None}], "timeout": 10000, "validate_only": False}
    return client.call(CREATE_PARTITIONS, 3, request).results[0]


def partition_count(client: WireClient, topic: str) -> int:
    response = client.call(METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    found = response.topics[0]
    return -1 if code(found.error_code) else len(found.partitions)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "logs"


def test_a_create_that_would_exceed_the_open_file_limit_is_refused_whole_and_the_broker_restarts(log_dir):
    broker = start(log_dir)
    try:
        assert broker.wait_for(rf"RLIMIT_NOFILE\D+{LIMIT}")
        with WireClient("127.0.0.1", broker.port, timeout=60) as client:
            before = open_descriptors(broker)
            [refused] = create_topics(client, {"wide": 10000})
            assert code(refused.error_code) == ErrorCode.POLICY_VIOLATION
            assert "RLIMIT_NOFILE" in refused.error_message and str(LIMIT) in refused.error_message
            assert partition_count(client, "wide") == -1
            assert partition_dirs(log_dir, "wide") == []
            assert open_descriptors(broker) <= before + 2
            [created] = create_topics(client, {"fits": 100})
            assert code(created.error_code) == ErrorCode.NONE
            grown = create_partitions(client, "fits", 5000)
            assert code(grown.error_code) == ErrorCode.POLICY_VIOLATION
            assert "RLIMIT_NOFILE" in grown.error_message
            assert partition_count(client, "fits") == 100
        broker.restart()
        with WireClient("127.0.0.1", broker.port) as client:
            assert partition_count(client, "fits") == 100
            assert code(client.produce("fits", 99, _batch()).error_code) == ErrorCode.NONE
    finally:
        broker.stop()


def test_more_than_kafkas_partitions_per_request_are_refused_before_any_is_created(log_dir):
    broker = start(log_dir)
    try:
        with WireClient("127.0.0.1", broker.port, timeout=60) as client:
            results = create_topics(client, {"half-a": 5000, "half-b": 5000, "one": 1})
            assert [code(r.error_code) for r in results] == [ErrorCode.POLICY_VIOLATION] * 3
            assert all("Excessively large number of partitions per request" in r.error_message for r in results)
            assert partition_count(client, "one") == -1
            [small] = create_topics(client, {"small": 2})
            assert code(small.error_code) == ErrorCode.NONE
            rss_before = _rss_kb(broker)
            huge = create_partitions(client, "small", 2**31 - 1)
            assert code(huge.error_code) == ErrorCode.POLICY_VIOLATION
            assert "Excessively large number of partitions per request" in huge.error_message
            assert _rss_kb(broker) < rss_before + 50_000
            assert partition_count(client, "small") == 2
    finally:
        broker.stop()


def test_a_broker_whose_logs_need_more_files_than_the_limit_refuses_to_start_in_one_line(log_dir):
    broker = start(log_dir)
    try:
        with WireClient("127.0.0.1", broker.port) as client:
            [created] = create_topics(client, {"held": 150})
            assert code(created.error_code) == ErrorCode.NONE
    finally:
        broker.stop()
    lowered = BrokerProcess(log_dir, {"broker.id": "0"}, open_files=256)
    with pytest.raises(RuntimeError):
        lowered.start(timeout=30)
    assert lowered.process.returncode not in (None, 0)
    errors = [line for line in lowered.log_lines if "cannot open the logs" in line]
    assert len(errors) == 1
    assert "RLIMIT_NOFILE) is 256" in errors[0] and "150 partitions" in errors[0]
    assert not any("Traceback" in line or "Too many open files" in line for line in lowered.log_lines)
    broker = start(log_dir)
    try:
        with WireClient("127.0.0.1", broker.port) as client:
            assert partition_count(client, "held") == 150
    finally:
        broker.stop()


def _rss_kb(broker: BrokerProcess) -> int:
    for line in Path(f"/proc/{broker.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _batch() -> bytes:
    from kcli.storage.records import NewRecord, build_batch

    return build_batch([NewRecord(None, b"value", 0)])
