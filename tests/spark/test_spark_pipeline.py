"""``kcli export`` and ``kcli import`` run in this process on the test session's Spark.

A topic with keys, null keys and values, empty values, headers (one with a null value) and
chosen timestamps is exported and imported into an empty topic; the copy is read back through
the broker and must hold the same records at the same partitions and offsets.
"""

from __future__ import annotations

import json

import pytest
from kafka_data import create_topic, produce

T0 = 1_600_000_000_000


def varied_records(partitions: int, per_partition: int) -> list[dict]:
    out = []
    for p in range(partitions):
        for i in range(per_partition):
            out.append(
                {
                    "partition": p,
                    "key": None if i % 4 == 0 else (b"" if i % 9 == 1 else f"key-{i}".encode()),
                    "value": None if i % 6 == 2 else (b"" if i % 10 == 5 else bytes([i % 256, 0, 255]) + f"v{p}-{i}".encode()),
                    "headers": [("trace", f"{i}".encode()), ("nothing", None), ("trace", b"")] if i % 3 == 1 else None,
                    "timestamp": T0 + i * 7_919 + p,
                }
            )
    return out


def topic_rows(spark, bootstrap: str, topic: str) -> list[tuple]:
    df = spark.read.format("kcli").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).option("includeHeaders", "true").load()
    rows = []
    for r in df.collect():
        headers = None if r["headers"] is None else [(h["key"], None if h["value"] is None else bytes(h["value"])) for h in r["headers"]]
        key = None if r["key"] is None else bytes(r["key"])
        value = None if r["value"] is None else bytes(r["value"])
        rows.append((r["partition"], r["offset"], key, value, headers, round(r["timestamp"].timestamp() * 1000), r["timestampType"]))
    return sorted(rows)


@pytest.fixture
def source_topic(broker, unique_topic):
    topic = unique_topic("src")
    create_topic(broker.bootstrap, topic, 3)
    produce(broker.bootstrap, topic, varied_records(3, 45))
    return topic


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv"])
def test_export_then_import_is_lossless(spark, broker, source_topic, unique_topic, tmp_path, kcli_run, fmt):
    original = topic_rows(spark, broker.bootstrap, source_topic)
    assert len(original) == 135
    code, _out, err = kcli_run("export", "--output-dir", str(tmp_path / "files"), "--bootstrap-server", broker.bootstrap, "--topic", source_topic, "--format", fmt)
    assert code == 0, err
    assert err[-1].startswith("Exported 135 records (") and f"to {tmp_path / 'files'} ({fmt})" in err[-1]
    copy = unique_topic("copy")
    create_topic(broker.bootstrap, copy, 3)
    code, _out, err = kcli_run("import", "--input", str(tmp_path / "files"), "--bootstrap-server", broker.bootstrap, "--topic", copy, "--format", fmt)
    assert code == 0, err
    assert err[-1].startswith("Imported 135 records (") and f"into {copy}" in err[-1]
    assert topic_rows(spark, broker.bootstrap, copy) == original


def test_export_from_a_log_dir_with_offset_and_time_bounds(spark, broker, source_topic, tmp_path, kcli_run):
    starting = json.dumps({source_topic: {"0": 10, "1": -2, "2": 15}})
    # Partition p's record i has timestamp T0 + i * 7919 + p: the end time stops before i = 20.
    code, _out, err = kcli_run(
        "export", "--output-dir", str(tmp_path / "bounded"), "--log-dir", str(broker.log_dir), "--topic", source_topic,
        "--starting-offsets", starting, "--ending-timestamp", str(T0 + 19 * 7_919 + 3),
    )
    assert code == 0, err
    rows = spark.read.parquet(str(tmp_path / "bounded")).select("partition", "offset").collect()
    assert sorted((r["partition"], r["offset"]) for r in rows) == [(0, o) for o in range(10, 20)] + [(1, o) for o in range(20)] + [(2, o) for o in range(15, 20)]
    assert err[-1].startswith("Exported 35 records (")


def test_export_refuses_a_broker_and_a_log_dir_together(kcli_run, tmp_path):
    code, _out, err = kcli_run("export", "--output-dir", str(tmp_path / "x"), "--bootstrap-server", "127.0.0.1:9", "--log-dir", str(tmp_path), "--topic", "t")
    assert code == 2
    assert err == ["Error: give exactly one of --bootstrap-server and --log-dir"]


def test_import_names_a_missing_input(kcli_run, tmp_path):
    code, _out, err = kcli_run("import", "--input", str(tmp_path / "nothing"), "--bootstrap-server", "127.0.0.1:9")
    assert code == 2
    assert err == [f"Error: {tmp_path / 'nothing'}: no such file or directory"]


def test_a_failure_inside_spark_is_one_line(broker, source_topic, tmp_path, kcli_run, spark):
    code, _out, err = kcli_run(
        "export", "--output-dir", str(tmp_path / "none"), "--bootstrap-server", broker.bootstrap, "--topic", source_topic,
        "--starting-timestamp", "2100-01-01T00:00:00",
    )
    assert code == 1
    assert len(err) == 1 and err[0].startswith(f"Error: No offset matched from request of topic-partition {source_topic}-")


@pytest.fixture
def second_broker(tmp_path):
    from broker_process import BrokerProcess
    from kafka_data import BROKER_OVERRIDES

    process = BrokerProcess(tmp_path / "second-broker", BROKER_OVERRIDES).start()
    yield process
    process.stop()


def test_mirror_copies_between_clusters_and_resumes_from_its_checkpoint(spark, broker, second_broker, source_topic, tmp_path, kcli_run):
    create_topic(second_broker.bootstrap, source_topic, 3)
    args = ["mirror", "--source-bootstrap-server", broker.bootstrap, "--target-bootstrap-server", second_broker.bootstrap,
            "--topic", source_topic, "--checkpoint", str(tmp_path / "ck"), "--once"]
    code, _out, err = kcli_run(*args)
    assert code == 0, err
    assert err[-1].startswith(f"Mirrored 135 records from {broker.bootstrap} to {second_broker.bootstrap} in ")
    assert topic_rows(spark, second_broker.bootstrap, source_topic) == topic_rows(spark, broker.bootstrap, source_topic)
    produce(broker.bootstrap, source_topic, [{"partition": 1, "key": b"late", "value": b"v", "timestamp": T0 + 5}] * 4)
    code, _out, err = kcli_run(*args)
    assert code == 0, err
    assert err[-1].startswith("Mirrored 4 records ")
    assert topic_rows(spark, second_broker.bootstrap, source_topic) == topic_rows(spark, broker.bootstrap, source_topic)


def topic_configs(bootstrap: str, topic: str) -> dict[str, tuple[str, bool]]:
    """Each config of ``topic`` as confluent-kafka's admin client describes it: (value, is_default)."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_configs([ConfigResource("topic", topic)], request_timeout=30).values()
    return {name: (entry.value, entry.is_default) for name, entry in future.result(timeout=30).items()}


def test_mirror_creates_a_missing_target_topic_as_mirrormaker_2_does(spark, broker, second_broker, unique_topic, tmp_path, kcli_run):
    # The source's partition count and its non-default configs, except those MirrorMaker 2 keeps
    # to each cluster (min.insync.replicas).
    topic = unique_topic("src")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    wanted = NewTopic(topic, 3, 1, config={"retention.ms": "123456789", "max.message.bytes": "200000", "min.insync.replicas": "1"})
    for future in admin.create_topics([wanted], request_timeout=30).values():
        future.result(timeout=30)
    produce(broker.bootstrap, topic, varied_records(3, 5))
    code, _out, err = kcli_run("mirror", "--source-bootstrap-server", broker.bootstrap, "--target-bootstrap-server", second_broker.bootstrap,
                               "--topic", topic, "--topic-prefix", "copy.", "--checkpoint", str(tmp_path / "ck"), "--once")
    assert code == 0, err
    assert err[0] == f"Created target topic copy.{topic} with 3 partition(s)"
    assert err[-1].startswith("Mirrored 15 records ")
    target = AdminClient({"bootstrap.servers": second_broker.bootstrap}).list_topics(f"copy.{topic}", timeout=20)
    assert len(target.topics[f"copy.{topic}"].partitions) == 3
    configs = topic_configs(second_broker.bootstrap, f"copy.{topic}")
    assert configs["retention.ms"] == ("123456789", False)
    assert configs["max.message.bytes"] == ("200000", False)
    assert configs["min.insync.replicas"][1] is True
    copied = [row[:5] for row in topic_rows(spark, second_broker.bootstrap, f"copy.{topic}")]
    assert copied == [row[:5] for row in topic_rows(spark, broker.bootstrap, topic)]


def test_mirror_grows_a_target_topic_with_fewer_partitions(spark, broker, second_broker, source_topic, tmp_path, kcli_run):
    create_topic(second_broker.bootstrap, source_topic, 1)
    code, _out, err = kcli_run("mirror", "--source-bootstrap-server", broker.bootstrap, "--target-bootstrap-server", second_broker.bootstrap,
                               "--topic", source_topic, "--checkpoint", str(tmp_path / "ck"), "--once")
    assert code == 0, err
    assert err[0] == f"Increased target topic {source_topic} to 3 partitions"
    assert err[-1].startswith("Mirrored 135 records ")
    assert [row[:5] for row in topic_rows(spark, second_broker.bootstrap, source_topic)] == [
        row[:5] for row in topic_rows(spark, broker.bootstrap, source_topic)]


def test_mirror_into_a_topic_the_target_refuses_is_one_line_before_spark(broker, second_broker, source_topic, tmp_path, kcli_run):
    code, out, err = kcli_run("mirror", "--source-bootstrap-server", broker.bootstrap, "--target-bootstrap-server", second_broker.bootstrap,
                              "--topic", source_topic, "--topic-prefix", "bad/", "--checkpoint", str(tmp_path / "ck"), "--once")
    assert (code, out) == (1, [])
    [line] = err
    assert line.startswith(f"Error: cannot create target topic bad/{source_topic} on {second_broker.bootstrap}: ")
    assert line.endswith("; create it there with 3 partition(s) and run the mirror again")
    assert not (tmp_path / "ck").exists()


@pytest.mark.parametrize("where", ["broker", "log-dir"])
def test_stats_counts_records_keys_bytes_times_and_batches(broker, source_topic, kcli_run, spark, where):
    place = ["--bootstrap-server", broker.bootstrap] if where == "broker" else ["--log-dir", str(broker.log_dir)]
    code, out, err = kcli_run("stats", *place, "--topic", source_topic, "--output", "json")
    assert code == 0, err
    objects = [json.loads(line) for line in out]
    partitions = [o for o in objects if "partition" in o]
    codecs = [o for o in objects if "codec" in o]
    sent = varied_records(3, 45)
    expected = []
    for p in range(3):
        mine = [r for r in sent if r["partition"] == p]
        expected.append({
            "topic": source_topic, "partition": p, "records": 45,
            "key_bytes": sum(len(r["key"] or b"") for r in mine), "value_bytes": sum(len(r["value"] or b"") for r in mine),
            "distinct_keys": len({r["key"] for r in mine if r["key"] is not None}),
            "first_offset": 0, "last_offset": 44,
            "first_timestamp": min(r["timestamp"] for r in mine), "last_timestamp": max(r["timestamp"] for r in mine),
        })
    assert partitions == expected
    assert [(c["topic"], c["codec"], c["records"]) for c in codecs] == [(source_topic, "none", 135)]
    assert sum(codecs[0]["records_per_batch"].values()) == codecs[0]["batches"] >= 3
    assert err[-1].startswith("Read 135 records (")


def test_progress_shows_tasks_and_the_command_status_on_a_terminal_only():
    import io
    import time
    from types import SimpleNamespace

    from kcli.spark.pipeline import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stage = SimpleNamespace(numCompletedTasks=3, numTasks=8)
    tracker = SimpleNamespace(getActiveStageIds=lambda: [1], getStageInfo=lambda _id: stage)
    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    terminal = Terminal()
    with Progress(spark, "exporting", stream=terminal, status=lambda _elapsed: "12 records"):
        deadline = time.monotonic() + 10
        while "tasks" not in terminal.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "exporting: 3/8 tasks, 12 records, " in terminal.getvalue()
    pipe = io.StringIO()
    with Progress(spark, "exporting", stream=pipe):
        time.sleep(0.6)
    assert pipe.getvalue() == ""


def test_mirror_of_a_source_topic_that_does_not_exist_is_one_line_before_spark(broker, second_broker, unique_topic, tmp_path, kcli_run):
    code, out, err = kcli_run("mirror", "--source-bootstrap-server", broker.bootstrap, "--target-bootstrap-server", second_broker.bootstrap,
                              "--topic", unique_topic, "--checkpoint", str(tmp_path / "ck"), "--once")
    assert (code, out) == (1, [])
    [line] = err
    assert line.startswith(f"Error: source topic {unique_topic} does not exist on {broker.bootstrap}: ")
    assert not (tmp_path / "ck").exists()
    for bootstrap in (broker.bootstrap, second_broker.bootstrap):
        code, listed, _err = kcli_run("topics", "--bootstrap-server", bootstrap, "--list")
        assert code == 0 and unique_topic not in listed
