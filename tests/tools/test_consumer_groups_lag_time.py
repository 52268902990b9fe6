"""``consumer-groups --describe --lag-time`` and ``--watch`` (kcli's own) against a kcli broker:
the age of the oldest unconsumed record from its timestamp (records written with old, known
timestamps, in uncompressed and gzip batches), and the tables repeated with the lag's trend."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import ROOT

pytestmark = pytest.mark.timeout(120)

# Partition 0: one record per batch; partition 1: one gzip batch. Timestamps in ms since 1970.
STAMPS = {0: [1_000_000, 2_000_000, 3_000_000, 4_000_000], 1: [5_000_000, 6_000_000, 7_000_000]}


@pytest.fixture(scope="module")
def topic(broker) -> str:
    name = f"lt-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    single = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for ts in STAMPS[0]:
        single.produce(name, b"v", partition=0, timestamp=ts)
        assert single.flush(10) == 0
    batched = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 500, "compression.type": "gzip"})
    for ts in STAMPS[1]:
        batched.produce(name, b"v", partition=1, timestamp=ts)
    assert batched.flush(10) == 0
    return name


def commit(kcli, broker, group: str, topic: str, partition: int, offset: int) -> None:
    result = kcli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--group", group, "--reset-offsets",
                  "--topic", f"{topic}:{partition}", "--to-offset", str(offset), "--execute")
    assert result.returncode == 0, result


def test_lag_time_is_the_age_of_the_record_at_the_committed_offset(kcli, broker, topic):
    group, other = f"lt-g-{uuid.uuid4().hex[:6]}", f"lt-h-{uuid.uuid4().hex[:6]}"
    commit(kcli, broker, group, topic, 0, 1)
    commit(kcli, broker, group, topic, 1, 2)  # inside the gzip batch
    commit(kcli, broker, other, topic, 0, 3)  # the same partition at another offset
    commit(kcli, broker, other, topic, 1, 3)  # nothing left
    before = int(time.time() * 1000)
    result = kcli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group", group, "--group", other,
                  "--lag-time", "--output", "json")
    after = int(time.time() * 1000)
    assert result.returncode == 0, result
    ages = {(d["group"], p["partition"]): p["lagTimeMs"] for d in map(json.loads, result.lines) for p in d["partitions"]}
    for key, stamp in (((group, 0), 2_000_000), ((group, 1), 7_000_000), ((other, 0), 4_000_000)):
        assert before - stamp <= ages[key] <= after - stamp, key
    assert ages[(other, 1)] == 0

    plain = kcli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group", group, "--lag-time")
    header, *rows = [line.split() for line in plain.lines if line]
    assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-TIME-MS", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert [row[:6] for row in rows] == [[group, topic, "0", "1", "4", "3"], [group, topic, "1", "2", "3", "1"]]
    assert int(rows[0][6]) >= before - 2_000_000


def test_watch_repeats_the_table_with_the_lags_trend_until_interrupted(kcli, broker, unique_topic):
    group, topic = f"lt-w-{uuid.uuid4().hex[:6]}", unique_topic()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    commit(kcli, broker, group, topic, 0, 0)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "kcli", "consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group", group, "--watch", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
    )
    try:
        def next_row() -> list[str]:
            while True:
                line = watcher.stdout.readline()
                assert line, "the watch ended"
                if line.startswith(group):
                    return line.split()

        first = next_row()
        assert (first[5], first[-1]) == ("0", "-")  # lag 0, no trend in the first round
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for _ in range(3):
            producer.produce(topic, b"more", partition=0)
        assert producer.flush(10) == 0
        row = next_row()
        while row[5] == "0":
            row = next_row()
        assert (row[5], row[-1]) == ("3", "+3")
        assert next_row()[-1] == "0"  # unchanged since
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(30) == 130
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()


def test_lag_time_and_watch_need_describe_of_offsets(inproc):
    for args in (["--list", "--lag-time"], ["--describe", "--group", "g", "--members", "--watch", "1"]):
        result = inproc("consumer-groups", "--bootstrap-server", "h:1", *args)
        assert result.returncode == 2, args
        assert "can only be used with [describe] of offsets" in result.stderr
    zero = inproc("consumer-groups", "--bootstrap-server", "h:1", "--describe", "--group", "g", "--watch", "0")
    assert (zero.returncode, "--watch takes a number of seconds above 0, not 0" in zero.stderr) == (2, True)


def test_watch_on_a_terminal_clears_and_redraws_each_round(broker, unique_topic, tmp_path):
    import os
    import pty
    import select

    group, topic = f"lt-t-{uuid.uuid4().hex[:6]}", unique_topic()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    from conftest import run_kcli

    commit(run_kcli, broker, group, topic, 0, 0)
    controller, terminal = pty.openpty()
    watcher = subprocess.Popen(
        [sys.executable, "-m", "kcli", "consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group", group, "--watch", "0.2"],
        stdin=subprocess.DEVNULL, stdout=terminal, stderr=subprocess.DEVNULL, cwd=ROOT,
    )
    os.close(terminal)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while seen.count(b"\x1b[H\x1b[2J") < 3 and time.monotonic() < deadline:
            if select.select([controller], [], [], 1)[0]:
                seen += os.read(controller, 65536)
        rounds = seen.split(b"\x1b[H\x1b[2J")[1:]
        assert len(rounds) >= 3, seen[-2000:]
        for drawn in rounds[:2]:
            assert drawn.startswith(b"Every 0.2s: consumer groups at ")
            assert b"TREND" in drawn and group.encode() in drawn
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(30) == 130
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        os.close(controller)
