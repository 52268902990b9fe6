"""The kcli source and sink on a standalone Spark cluster: a Master and a Worker started with
``spark-class`` on 127.0.0.1 (random ports, REST server off), used by a separate driver process
through ``kcli export``/``kcli import`` with ``--master spark://...``, and stopped by PID.

The driver runs in its own process because this test process already holds the local session.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from kafka_data import create_topic, produce

KCLI = [sys.executable, "-m", "kcli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    import pyspark

    home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("standalone")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
           "SPARK_LOG_DIR": str(work / "logs"), "PYSPARK_PYTHON": sys.executable}
    port, ui, worker_ui = free_port(), free_port(), free_port()
    spark_class = str(home / "bin" / "spark-class")
    log = open(work / "cluster.log", "wb")
    master = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
        env=env, stdout=log, stderr=log,
    )
    worker = None
    try:
        worker = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2", "--memory", "2g",
             "--webui-port", str(worker_ui), "--work-dir", str(work / "work"), f"spark://127.0.0.1:{port}"],
            env=env, stdout=log, stderr=log,
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as answer:
                    if json.load(answer).get("aliveworkers") == 1:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or master.poll() is not None or worker.poll() is not None:
                raise RuntimeError("the standalone cluster did not come up:\n" + (work / "cluster.log").read_text()[-3000:])
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{port}", env
    finally:
        if worker is not None:
            stop(worker)
        stop(master)
        log.close()


def test_export_and_import_on_a_standalone_cluster(standalone, broker, unique_topic, tmp_path):
    master, env = standalone
    topic, copy = unique_topic("src"), unique_topic("copy")
    create_topic(broker.bootstrap, topic, 2)
    create_topic(broker.bootstrap, copy, 2)
    records = [{"partition": i % 2, "key": f"k{i}".encode(), "value": None if i == 7 else f"v{i}".encode(), "timestamp": 1_650_000_000_000 + i,
                "headers": [("h", b"x")] if i % 3 == 0 else None} for i in range(300)]
    produce(broker.bootstrap, topic, records)
    files = tmp_path / "files"
    common = ["--master", master, "--conf", "spark.executor.memory=1g"]
    done = subprocess.run([*KCLI, "export", "--output-dir", str(files), "--bootstrap-server", broker.bootstrap, "--topic", topic, *common],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1].startswith("Exported 300 records (")
    done = subprocess.run([*KCLI, "import", "--input", str(files), "--bootstrap-server", broker.bootstrap, "--topic", copy, *common],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1].startswith("Imported 300 records (")

    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "standalone-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(copy, p, 0) for p in range(2)])
    got = []
    try:
        deadline = time.monotonic() + 60
        while len(got) < 300 and time.monotonic() < deadline:
            for m in consumer.consume(500, timeout=0.5):
                assert m.error() is None
                got.append((m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1], m.headers()))
    finally:
        consumer.close()
    per_partition: dict[int, int] = {}
    expected = []
    for r in records:
        offset = per_partition.get(r["partition"], 0)
        per_partition[r["partition"]] = offset + 1
        expected.append((r["partition"], offset, r["key"], r["value"], r["timestamp"], r["headers"]))
    assert sorted(got) == sorted(expected)


def test_a_plain_pyspark_session_finds_the_kcli_format_without_registering(broker, unique_topic, tmp_path):
    """Spark registers the DefaultSource of every installed top-level pyspark_* module."""
    topic = unique_topic()
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [{"value": f"{i}".encode(), "partition": 0} for i in range(12)])
    code = (
        "import sys\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        f"df = spark.read.format('kcli').option('kafka.bootstrap.servers', '{broker.bootstrap}').option('subscribe', '{topic}').load()\n"
        "print('rows', df.count())\n"
        "spark.stop()\n"
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rows 12" in done.stdout.splitlines()
