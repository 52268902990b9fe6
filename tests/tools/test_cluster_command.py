"""``kcli cluster start`` and ``kcli cluster status`` as real processes: ZooKeeper and brokers
started by the command on free ports of 127.0.0.1, checked through ZooKeeper, the Metadata of
confluent-kafka's admin client and the status command, and stopped by PID."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from kcli.tools.zookeeper_server import zookeeper_answers
from tests.broker_process import BrokerProcess
from tests.cluster.conftest import wait_until
from tests.tools.conftest import run_kcli
from tests.zookeeper_process import free_port, free_ports

SESSION_TIMEOUT_MS = 4000  # the shortest ZooKeeper's default tickTime (2 s) allows
_STARTED = re.compile(r"^(ZooKeeper|Broker (\d+)) started \(pid (\d+)\) on (\S+)$")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1]
    except (FileNotFoundError, IndexError):
        return False
    return not state.startswith("Z")


class ClusterCommand:
    """``kcli cluster start`` in its own process; its stdout lines gathered as they come."""

    def __init__(self, directory: Path, brokers: int, *, own_group: bool = False) -> None:
        """``own_group``: the command leads a process group of its own, as a shell's foreground
        job does, so that the test can send the group a terminal's Ctrl-C."""
        self.directory = directory
        self.brokers = brokers
        self.own_group = own_group
        self.zookeeper_port = free_port()
        self.base_port = free_ports(brokers)
        self.lines: list[str] = []
        self.pids: dict[str, int] = {}  # "ZooKeeper", "0", "1", ...
        self.process: subprocess.Popen | None = None
        self.stderr = ""
        # Each stderr line as it came, with the children still running at that moment.
        self.errors: list[tuple[str, set[str]]] = []
        self._readers: list[threading.Thread] = []

    @property
    def zookeeper(self) -> str:
        return f"127.0.0.1:{self.zookeeper_port}"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.base_port}"

    def start(self) -> ClusterCommand:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kcli", "cluster", "start", "--brokers", str(self.brokers),
             "--zookeeper-port", str(self.zookeeper_port), "--base-port", str(self.base_port),
             "--dir", str(self.directory), "--override", f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, process_group=0 if self.own_group else None,
        )
        self._readers = [threading.Thread(target=self._read, daemon=True), threading.Thread(target=self._read_errors, daemon=True)]
        for reader in self._readers:
            reader.start()
        wait_until(lambda: any(line.startswith("Cluster of") for line in self.lines) or self.process.poll() is not None, timeout=150)
        if self.process.poll() is not None:
            pytest.fail(f"kcli cluster start exited with {self.process.returncode}: {self.wait_output()}")
        return self

    def _read(self) -> None:
        for line in self.process.stdout:
            line = line.rstrip("\n")
            match = _STARTED.match(line)
            if match:
                self.pids[match.group(2) or "ZooKeeper"] = int(match.group(3))
            self.lines.append(line)

    def _read_errors(self) -> None:
        for line in self.process.stderr:
            running = {name for name, pid in self.pids.items() if alive(pid)}
            self.errors.append((line, running))

    def wait_output(self, timeout: float = 30) -> str:
        for reader in self._readers:
            reader.join(timeout)
        self.stderr = "".join(line for line, _running in self.errors)
        return self.stderr

    def wait(self, timeout: float = 150) -> int:
        code = self.process.wait(timeout)
        self.wait_output()
        return code

    def cleanup(self) -> None:
        """Whatever still runs, by PID: the command (SIGTERM, then SIGKILL), then each child."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(150)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        for pid in self.pids.values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def cluster_command(tmp_path):
    commands: list[ClusterCommand] = []

    def make(brokers: int, **options) -> ClusterCommand:
        command = ClusterCommand(tmp_path, brokers, **options)
        commands.append(command)
        return command.start()

    try:
        yield make
    finally:
        for command in commands:
            command.cleanup()


def zk_client(connect: str) -> KazooClient:
    client = KazooClient(hosts=connect)
    client.start(timeout=15)
    return client


def status(zookeeper: str, *extra: str):
    result = run_kcli("cluster", "status", "--zookeeper", zookeeper, *extra)
    assert result.returncode == 0, result
    return result


def test_start_runs_zookeeper_and_brokers_that_serve_then_sigterm_stops_every_child(cluster_command, tmp_path):
    cluster = cluster_command(2)
    assert set(cluster.pids) == {"ZooKeeper", "0", "1"}
    assert f"Broker 1 started (pid {cluster.pids['1']}) on PLAINTEXT://127.0.0.1:{cluster.base_port + 1}" in cluster.lines
    # The quickstart's layout under --dir: a log dir per broker, ZooKeeper's data beside them.
    assert (tmp_path / "kafka-logs0" / "meta.properties").is_file()
    assert (tmp_path / "kafka-logs1" / "meta.properties").is_file()
    assert (tmp_path / "zookeeper" / "version-2").is_dir()

    zk = zk_client(cluster.zookeeper)
    try:
        assert sorted(zk.get_children("/brokers/ids")) == ["0", "1"]
        for broker_id in (0, 1):
            registration = json.loads(zk.get(f"/brokers/ids/{broker_id}")[0])
            assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{cluster.base_port + broker_id}"]
        controller = json.loads(zk.get("/controller")[0])["brokerid"]
        epoch = int(zk.get("/controller_epoch")[0])
    finally:
        zk.stop()
        zk.close()

    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=20)
    assert sorted(metadata.brokers) == [0, 1]
    assert metadata.brokers[1].port == cluster.base_port + 1
    assert metadata.controller_id == controller

    plain = status(cluster.zookeeper)
    assert plain.lines == [
        "Brokers: 2",
        f"\tBroker: 0\tEndpoints: PLAINTEXT://127.0.0.1:{cluster.base_port}\tRack: none",
        f"\tBroker: 1\tEndpoints: PLAINTEXT://127.0.0.1:{cluster.base_port + 1}\tRack: none",
        f"Controller: {controller}\tControllerEpoch: {epoch}",
        "OfflinePartitions: 0",
        "UnderReplicatedPartitions: 0",
    ]
    as_json = json.loads(status(cluster.zookeeper, "--output", "json").stdout)
    assert as_json["controller"] == controller and as_json["controller_epoch"] == epoch
    assert [b["id"] for b in as_json["brokers"]] == [0, 1] and as_json["offline_partitions"] == []
    assert as_json["under_replicated_partitions"] == []

    # A third broker of the same cluster, outside the command: killed -9, its RF=1 partition goes
    # offline once its session times out. (A child of the command that dies stops the command.)
    extra = BrokerProcess(
        tmp_path / "extra-logs",
        {"broker.id": "2", "zookeeper.connect": cluster.zookeeper, "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)},
    ).start(timeout=60)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        created = run_kcli("topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", "spread", "--replica-assignment", "0,1,2")
        assert created.returncode == 0, created
        wait_until(lambda: "OfflinePartitions: 0" in status(cluster.zookeeper).lines
                   and all(p.leader >= 0 for p in admin.list_topics("spread", timeout=20).topics["spread"].partitions.values()))
        extra.kill()
        offline = wait_until(lambda: "OfflinePartitions: 1" in (lines := status(cluster.zookeeper).lines) and lines, timeout=SESSION_TIMEOUT_MS / 1000 + 30)
        # One replica, its ISR the replica it last had: offline, not under-replicated.
        assert offline[-2:] == ["\tTopic: spread\tPartition: 2\tLeader: none\tReplicas: 2\tIsr: 2", "UnderReplicatedPartitions: 0"]
        assert [b["id"] for b in json.loads(status(cluster.zookeeper, "--output", "json").stdout)["brokers"]] == [0, 1]
        assert json.loads(status(cluster.zookeeper, "--output", "json").stdout)["offline_partitions"] == [
            {"topic": "spread", "partition": 2, "leader": -1, "replicas": [2], "isr": [2]}
        ]
    finally:
        extra.kill()

    cluster.process.send_signal(signal.SIGTERM)
    assert cluster.wait() == 0, cluster.stderr
    for name, pid in cluster.pids.items():
        assert not alive(pid), name
    # The brokers stopped cleanly (a clean shutdown marker in each log dir), before ZooKeeper.
    for broker_id in (0, 1):
        assert (tmp_path / f"kafka-logs{broker_id}" / ".kafka_cleanshutdown").is_file()
    assert cluster.lines[-1] == "Stopping 2 broker(s), then ZooKeeper"


def test_ctrl_c_stops_the_brokers_while_zookeeper_runs_then_zookeeper(cluster_command, tmp_path):
    cluster = cluster_command(2, own_group=True)
    os.killpg(cluster.process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches its foreground group
    assert cluster.wait() == 0, cluster.stderr
    for name, pid in cluster.pids.items():
        assert not alive(pid), name
    # Had ZooKeeper stopped first (or with the brokers), their sessions would be in its data, and
    # their registrations back with it for a session timeout; stopped first, they closed them.
    restarted = subprocess.Popen(
        [sys.executable, "-m", "kcli", "zookeeper", "start", str(tmp_path / "kcli-cluster" / "zookeeper.properties")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: zookeeper_answers("127.0.0.1", cluster.zookeeper_port) or restarted.poll() is not None, timeout=60)
        zk = zk_client(cluster.zookeeper)
        try:
            assert zk.get_children("/brokers/ids") == []
            assert zk.exists("/controller") is None
        finally:
            zk.stop()
            zk.close()
    finally:
        restarted.terminate()
        restarted.wait(30)


def test_a_child_that_dies_is_reported_in_one_line_and_the_rest_stopped(cluster_command, tmp_path):
    cluster = cluster_command(2)
    os.kill(cluster.pids["1"], signal.SIGKILL)
    assert cluster.wait() == 1
    assert len(cluster.stderr.splitlines()) == 1, cluster.stderr
    assert cluster.stderr == (
        f"Error: Broker 1 (pid {cluster.pids['1']}) was killed by SIGKILL (log: {tmp_path}/kcli-cluster/server-1.log)\n")
    # Said before the rest were stopped: ZooKeeper, stopped last, still ran.
    [(_line, running)] = cluster.errors
    assert "ZooKeeper" in running
    for name, pid in cluster.pids.items():
        assert not alive(pid), name


def test_a_killed_controller_is_reported_before_the_other_brokers_stop(cluster_command, tmp_path):
    cluster = cluster_command(2)
    zk = zk_client(cluster.zookeeper)
    try:
        controller = json.loads(zk.get("/controller")[0])["brokerid"]
    finally:
        zk.stop()
        zk.close()
    other = str(1 - controller)
    os.kill(cluster.pids[str(controller)], signal.SIGKILL)
    assert cluster.wait() == 1
    [(line, running)] = cluster.errors
    assert line == (f"Error: Broker {controller} (pid {cluster.pids[str(controller)]}) was killed by SIGKILL "
                    f"(log: {tmp_path}/kcli-cluster/server-{controller}.log)\n")
    # Said while the survivor was still running its controlled shutdown (against a dead
    # controller, it retries), not once it had ended; then everything was stopped.
    assert {other, "ZooKeeper"} <= running
    for name, pid in cluster.pids.items():
        assert not alive(pid), name
    assert (tmp_path / f"kafka-logs{other}" / ".kafka_cleanshutdown").is_file()


def test_a_port_in_use_is_one_line_and_exit_1_before_anything_starts(tmp_path):
    base = free_ports(2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 1))
        taken.listen()
        result = run_kcli("cluster", "start", "--brokers", "2", "--zookeeper-port", str(free_port()),
                          "--base-port", str(base), "--dir", str(tmp_path))
    assert result.returncode == 1, result
    assert result.stderr == f"Error: port {base + 1} for broker 1 is already in use on 127.0.0.1\n"
    assert result.stdout == ""
    assert not (tmp_path / "zookeeper").exists()


def test_status_of_a_chroot_that_holds_no_cluster_is_one_line_and_creates_nothing(zookeeper_server):
    connect = f"{zookeeper_server.connect}/no-cluster-here"
    result = run_kcli("cluster", "status", "--zookeeper", connect)
    assert result.returncode == 1, result
    hosts = connect.split("/")[0]
    assert result.stderr == f"Error: ZooKeeper at {hosts} has no /no-cluster-here: no Kafka cluster uses the chroot of {connect}\n"
    zk = zk_client(zookeeper_server.connect)
    try:
        assert zk.exists("/no-cluster-here") is None
    finally:
        zk.stop()
        zk.close()


def test_status_names_a_malformed_znode_and_reports_the_rest(zookeeper_server):
    zk = zk_client(zookeeper_server.connect)
    try:
        zk.create("/malformed/brokers/ids/7", b"not json", makepath=True)
        zk.create("/malformed/controller_epoch", b"4")
        result = run_kcli("cluster", "status", "--zookeeper", f"{zookeeper_server.connect}/malformed")
    finally:
        zk.delete("/malformed", recursive=True)
        zk.stop()
        zk.close()
    assert result.returncode == 1, result
    assert result.lines == ["Brokers: 0", "Controller: none\tControllerEpoch: 4", "OfflinePartitions: 0", "UnderReplicatedPartitions: 0"]
    [problem] = result.stderr.splitlines()
    assert problem.startswith("Error: skipped /brokers/ids/7: ")


def test_a_layout_that_cannot_work_is_one_line(inproc, tmp_path):
    clash = inproc("cluster", "start", "--brokers", "2", "--zookeeper-port", "9093", "--base-port", "9092")
    assert (clash.returncode, clash.stderr) == (
        2, "Error: port 9093 is both broker 1's and ZooKeeper's: choose a --zookeeper-port outside 9092-9093\n")
    beyond = inproc("cluster", "start", "--brokers", "2", "--base-port", "65535")
    assert (beyond.returncode, beyond.stderr) == (
        2, "Error: broker 1 would listen on port 65536: --base-port + --brokers must not exceed 65536\n")
    a_file = tmp_path / "file"
    a_file.write_text("")
    not_a_dir = inproc("cluster", "start", "--zookeeper-port", str(free_port()), "--base-port", str(free_ports(3)), "--dir", str(a_file))
    assert (not_a_dir.returncode, not_a_dir.stderr) == (
        1, f"Error: cannot use --dir {a_file}: Not a directory: {a_file}/kcli-cluster\n")


def test_a_child_that_cannot_start_is_one_line_with_the_end_of_its_log(tmp_path):
    # No Java anywhere: ZooKeeper's own command exits 1 naming the package to install.
    env = {**os.environ, "PATH": str(tmp_path / "no-bin")}
    env.pop("JAVA_HOME", None)
    completed = subprocess.run(
        [sys.executable, "-m", "kcli", "cluster", "start", "--brokers", "1", "--zookeeper-port", str(free_port()),
         "--base-port", str(free_ports(1)), "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert completed.returncode == 1, completed
    assert re.fullmatch(
        r"Error: ZooKeeper \(pid \d+\) exited with status 1: Error: ZooKeeper needs a Java runtime and none was found "
        r"\(JAVA_HOME or java on PATH\): apt-get install default-jre-headless \(log: .*/kcli-cluster/zookeeper\.log\)\n",
        completed.stderr,
    ), completed.stderr
    assert completed.stdout == ""
    assert not (tmp_path / "kafka-logs0").exists()  # no broker was started


def test_each_broker_config_is_a_copy_of_kafkas_server_properties_as_the_quickstart_makes_them(tmp_path):
    """The seeds copy config/server.properties to server-N.properties: a single broker's cluster
    must still get its internal topics (one replica), or no group could ever commit."""
    from kcli.tools.cluster_runner import ClusterLayout

    properties = ClusterLayout(brokers=1, zookeeper_port=2181, base_port=9092, directory=str(tmp_path)).server_properties(0)
    assert properties["offsets.topic.replication.factor"] == "1"
    assert properties["transaction.state.log.replication.factor"] == "1"
    assert properties["transaction.state.log.min.isr"] == "1"
    assert properties["group.initial.rebalance.delay.ms"] == "0"
    assert properties["broker.id"] == "0" and properties["listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert properties["log.dirs"] == str(tmp_path / "kafka-logs0")
