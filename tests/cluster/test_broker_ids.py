"""Broker ids a ZooKeeper-era Kafka broker generates (broker.id.generation.enable, /brokers/seqid)
and the /feature znode its controller writes, checked against the reference (kafka-tools.md 6.2:
"id = seqVersion + reserved.broker.max.id (default 1000) => first auto id 1001";
`{"features":{},"version":1,"status":1}`)."""

from __future__ import annotations

import subprocess
import sys

from tests.broker_process import BrokerProcess
from tests.cluster.conftest import SESSION_TIMEOUT_MS


def unnumbered_broker(cluster, name: str, **overrides: str) -> BrokerProcess:
    """A broker with broker.id -1 (Kafka's code default; the stock server.properties says 0)."""
    process = BrokerProcess(
        cluster.root / name,
        {"broker.id": "-1", "zookeeper.connect": cluster.connect, "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS), **overrides},
    )
    cluster.brokers[len(cluster.brokers) + 100] = process  # stopped with the cluster
    return process


def meta_properties(log_dir) -> dict[str, str]:
    lines = (log_dir / "meta.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_brokers_without_an_id_get_generated_ids_above_the_reserved_range_and_keep_them(cluster):
    first = unnumbered_broker(cluster, "a").start(timeout=60)
    second = unnumbered_broker(cluster, "b").start(timeout=60)
    zk = cluster.zk()
    try:
        assert sorted(zk.get_children("/brokers/ids")) == ["1001", "1002"]
        assert zk.get("/brokers/seqid")[1].version == 2
    finally:
        zk.stop()
        zk.close()
    assert meta_properties(first.log_dir)["broker.id"] == "1001"
    assert meta_properties(second.log_dir)["broker.id"] == "1002"
    # A restart reads its id back from meta.properties: no new number is drawn.
    first.restart()
    zk = cluster.zk()
    try:
        assert sorted(zk.get_children("/brokers/ids")) == ["1001", "1002"]
        assert zk.get("/brokers/seqid")[1].version == 2
    finally:
        zk.stop()
        zk.close()


def test_reserved_broker_max_id_moves_the_generated_range(cluster):
    unnumbered_broker(cluster, "c", **{"reserved.broker.max.id": "5000"}).start(timeout=60)
    zk = cluster.zk()
    try:
        assert zk.get_children("/brokers/ids") == ["5001"]
    finally:
        zk.stop()
        zk.close()


def test_no_id_and_generation_disabled_is_one_line_and_exit_1(cluster, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kcli", "broker", "start", "--override", "broker.id=-1", "--override", "broker.id.generation.enable=false",
         "--override", f"zookeeper.connect={cluster.connect}", "--override", f"log.dirs={tmp_path / 'logs'}",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: broker.id is not set and broker.id.generation.enable is false: set broker.id (0 to reserved.broker.max.id)"
    )


def test_the_controller_writes_the_feature_znode_as_kafka_28(cluster):
    cluster.start(1)
    zk = cluster.zk()
    try:
        assert zk.get("/feature")[0] == b'{"features":{},"version":1,"status":1}'
    finally:
        zk.stop()
        zk.close()
