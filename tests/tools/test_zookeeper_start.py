"""``kcli zookeeper start``: Debian's ZooKeeper in the foreground, as zookeeper-server-start.sh."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kcli.tools import zookeeper_server
from tests.zookeeper_process import ZooKeeperProcess, free_port


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
        assert "binding to port" in server.log_path.read_text()  # ZooKeeper's own log reached stderr
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


def test_a_server_killed_under_the_command_is_one_line(tmp_path):
    server = ZooKeeperProcess(tmp_path).start()
    try:
        [java] = java_children(server.pid)
        os.kill(java, signal.SIGKILL)
        assert server.process.wait(20) == 1
        assert server.log_path.read_text().splitlines()[-1] == f"Error: ZooKeeper (pid {java}) was killed by SIGKILL"
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
        stdout = io.BytesIO(b"")

        def __init__(self, command, **_kwargs):
            seen["main"] = command[-2]
            seen["config"] = Path(command[-1]).read_text()

        def wait(self, _timeout=None):
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


def start_command(properties: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kcli", "zookeeper", "start", str(properties)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
    )


@pytest.mark.parametrize(
    "lines, problem",
    [
        (["clientPort=abc"], "Invalid value abc for configuration clientPort in {file}: Not a number of type int"),
        (["tickTime=99999999999"], "Invalid value 99999999999 for configuration tickTime in {file}: Not a number of type int"),
        (["clientPort=70000"], "Invalid value 70000 for configuration clientPort in {file}: port out of range (0 to 65535)"),
        (["standaloneEnabled=yes"], "Invalid value yes for configuration standaloneEnabled in {file}: Choose 'true' or 'false'"),
        (["minSessionTimeout=5000", "maxSessionTimeout=1000"],
         "minSessionTimeout (5000 ms) must not be larger than maxSessionTimeout (1000 ms) in {file}"),
        (["server.1=localhost"],
         "Invalid value localhost for configuration server.1 in {file}: expected host:port:port[:participant|observer][;[host:]port]"),
        (["server.one=localhost:2888:3888"],
         "Invalid value localhost:2888:3888 for configuration server.one in {file}: the server id after 'server.' is not a number"),
        (["server.1=localhost:2888:3888:witness"],
         "Invalid value localhost:2888:3888:witness for configuration server.1 in {file}: Unrecognised peertype: witness"),
        (["dataDir=", "clientPort={port}"], "dataDir is not set in {file}"),
    ],
)
def test_a_value_zookeeper_rejects_is_one_line_naming_the_key(tmp_path, lines, problem):
    port = free_port()
    settings = {"dataDir": str(tmp_path / "data"), "clientPort": str(port)}
    for line in lines:
        key, value = line.format(port=port).split("=", 1)
        settings[key] = value
    properties = tmp_path / "zookeeper.properties"
    properties.write_text("".join(f"{key}={value}\n" for key, value in settings.items() if value))
    result = start_command(properties)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == ["Error: " + problem.format(file=properties)]
    assert not (tmp_path / "data").exists()  # refused before ZooKeeper ran


def test_a_directory_given_as_the_file_is_one_line(tmp_path):
    result = start_command(tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"Error: ZooKeeper properties file {tmp_path} is not a file"]


def test_a_client_port_in_use_is_one_line_naming_the_port(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        properties = tmp_path / "zookeeper.properties"
        properties.write_text(f"dataDir={tmp_path / 'data'}\nclientPort={port}\n")
        result = start_command(properties)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [f"Error: port {port} for ZooKeeper's clientPort is already in use on 0.0.0.0"]


def test_a_start_java_refuses_is_condensed_to_its_cause(tmp_path):
    # Only Java can tell that the class does not exist: ZooKeeper's trace becomes its cause.
    properties = tmp_path / "zookeeper.properties"
    properties.write_text(f"dataDir={tmp_path / 'data'}\nclientPort={free_port()}\nmetricsProvider.className=no.such.Provider\n")
    result = start_command(properties)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "Error: ZooKeeper did not start: Invalid config, exiting abnormally: ClassNotFoundException: no.such.Provider"]


def test_a_file_without_admin_enable_server_starts_without_the_admin_servers_trace(tmp_path):
    port = free_port()
    properties = tmp_path / "zookeeper.properties"
    properties.write_text(f"dataDir={tmp_path / 'data'}\nclientPort={port}\nclientPortAddress=127.0.0.1\n")
    log_path = tmp_path / "zookeeper.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "kcli", "zookeeper", "start", str(properties)],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not ZooKeeperProcess(tmp_path, port)._answers():
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    log = log_path.read_text()
    assert "binding to port" in log
    assert "javax/servlet" not in log and "Exception" not in log, log
