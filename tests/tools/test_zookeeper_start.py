"""``kcli zookeeper start``: Debian's ZooKeeper in the foreground, as zookeeper-server-start.sh."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kcli.tools import zookeeper_server
from tests.zookeeper_process import ZooKeeperProcess


def java_children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (the Java server)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(child) for child in text.split()]


def gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.split(") ", 1)[1].startswith("Z"):
                return True  # exited, waiting for its parent to reap it
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)
    return False


def test_serves_clients_and_stops_cleanly_on_sigterm(tmp_path):
    server = ZooKeeperProcess(tmp_path).start()
    try:
        servers = java_children(server.pid)
        assert len(servers) == 1
        client = KazooClient(hosts=server.connect)
        client.start(timeout=10)
        client.create("/brokers/ids", b"", makepath=True)
        assert client.get_children("/brokers") == ["ids"]
        client.stop()
        client.close()
        assert server.stop() == 0
        assert gone(servers[0])
        assert "binding to port" in server.log()  # ZooKeeper's own log reached stderr
    finally:
        server.stop()


def test_the_server_dies_with_a_killed_command(tmp_path):
    server = ZooKeeperProcess(tmp_path).start()
    try:
        servers = java_children(server.pid)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
        assert gone(servers[0])
    finally:
        server.stop()


def test_data_survives_a_restart(tmp_path):
    server = ZooKeeperProcess(tmp_path).start()
    try:
        client = KazooClient(hosts=server.connect)
        client.start(timeout=10)
        client.create("/cluster/id", b'{"version":"1","id":"x"}', makepath=True)
        client.stop()
        client.close()
        server.stop()
        server.start()
        client = KazooClient(hosts=server.connect)
        client.start(timeout=10)
        assert client.get("/cluster/id")[0] == b'{"version":"1","id":"x"}'
        client.stop()
        client.close()
    finally:
        server.stop()


def test_a_missing_properties_file_is_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kcli", "zookeeper", "start", str(tmp_path / "nope.properties")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [f"Error: ZooKeeper properties file {tmp_path / 'nope.properties'} does not exist"]


def test_without_the_package_the_error_names_the_install_command(kcli_run, monkeypatch, tmp_path):
    monkeypatch.setattr(zookeeper_server, "ZOOKEEPER_JAR", tmp_path / "zookeeper.jar")
    code, out, err = kcli_run("zookeeper", "start")
    assert code == 1 and out == []
    assert err == [f"Error: ZooKeeper is not installed ({tmp_path / 'zookeeper.jar'} is missing): apt-get install zookeeper"]


def test_without_java_the_error_names_the_install_command(kcli_run, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    code, _, err = kcli_run("zookeeper", "start")
    assert code == 1
    assert len(err) == 1 and err[0].endswith("apt-get install default-jre-headless")


def test_without_a_file_it_runs_with_kafkas_zookeeper_properties(monkeypatch):
    seen: dict[str, str] = {}

    class Captured:
        def __init__(self, command, **_kwargs):
            seen["main"] = command[-2]
            seen["config"] = Path(command[-1]).read_text()

        def wait(self):
            return 0

        def poll(self):
            return 0

    monkeypatch.setattr(zookeeper_server.subprocess, "Popen", Captured)
    assert zookeeper_server.run_zookeeper(None) == 0
    assert seen["main"] == "org.apache.zookeeper.server.quorum.QuorumPeerMain"
    # Kafka's config/zookeeper.properties, as the issue and Kafka's distribution give it.
    assert sorted(seen["config"].splitlines()) == sorted(
        ["dataDir=/tmp/zookeeper", "clientPort=2181", "maxClientCnxns=0", "admin.enableServer=false"]
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_each_stop_signal_exits_zero(tmp_path, signum):
    server = ZooKeeperProcess(tmp_path).start()
    try:
        server.process.send_signal(signum)
        assert server.process.wait(20) == 0
    finally:
        server.stop()
