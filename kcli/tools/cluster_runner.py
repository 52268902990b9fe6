"""``kcli cluster start``: ZooKeeper and N brokers as the Kafka quickstart's pseudo-cluster.

The quickstart runs ``zookeeper-server-start.sh config/zookeeper.properties`` and one
``kafka-server-start.sh config/server-N.properties`` per broker, each in a terminal of its own.
This command does the same with ``kcli zookeeper start`` and ``kcli broker start``, each a child
process in a session of its own (a Ctrl-C on the terminal reaches this command only, which then
stops the children in order). Under ``--dir`` (default ``/tmp``, as the quickstart):

* ``zookeeper/``: ZooKeeper's dataDir (``/tmp/zookeeper``, Kafka's default);
* ``kafka-logsN/``: broker N's ``log.dirs`` (``/tmp/kafka-logs0``.. as the seeds' files);
* ``kcli-cluster/``: the files the children run with, ``zookeeper.properties`` and
  ``server-N.properties`` (written at every start), and their logs, ``zookeeper.log`` and
  ``server-N.log``.

Everything binds 127.0.0.1: ZooKeeper on ``--zookeeper-port``, broker N on ``--base-port`` + N.
``--override`` settings go to every broker after its file, as ``kafka-server-start.sh --override``;
the brokers keep Kafka's defaults otherwise (``zookeeper.session.timeout.ms`` 18000: a killed
broker's partitions go offline that long after).

The start is checked step by step: every port is free (else one line, exit 1), ZooKeeper answers
its ``srvr`` command before any broker starts, and each broker logs that it started; one line is
printed per process started. Then the command waits. SIGINT, SIGTERM or SIGHUP stop the brokers
(SIGTERM, a controlled shutdown each, all at once within one bounded wait, then SIGKILL) and then
ZooKeeper, and the command exits 0. A child that exits by itself is reported at once in one line
(killed by which signal, or its exit status with the last line of its log), before the others are
stopped the same way (which can take as long as their controlled shutdowns), and the command exits 1. Each child has the kernel send it SIGTERM if this command
dies without stopping it (``PR_SET_PDEATHSIG``), so no child outlives the command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kcli.errors import KcliError, UsageError
from kcli.output import Output
from kcli.tools.ports import check_port_free
from kcli.tools.zookeeper_server import KAFKA_ZOOKEEPER_DEFAULTS, die_with_parent, write_properties, zookeeper_answers

HOST = "127.0.0.1"
CONFIG_DIR = "kcli-cluster"
ZOOKEEPER_START_TIMEOUT_S = 60.0
BROKER_START_TIMEOUT_S = 120.0
# Long enough for a controlled shutdown (Kafka's: 3 retries, each bounded by the request timeout).
BROKER_STOP_TIMEOUT_S = 120.0
ZOOKEEPER_STOP_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class ClusterLayout:
    brokers: int
    zookeeper_port: int
    base_port: int
    directory: str

    @property
    def root(self) -> Path:
        return Path(self.directory).absolute()

    @property
    def config_dir(self) -> Path:
        return self.root / CONFIG_DIR

    @property
    def zookeeper_connect(self) -> str:
        return f"{HOST}:{self.zookeeper_port}"

    def broker_port(self, broker_id: int) -> int:
        return self.base_port + broker_id

    def zookeeper_properties(self) -> dict[str, str]:
        """Kafka's config/zookeeper.properties, with its dataDir and port under this layout."""
        return {
            **KAFKA_ZOOKEEPER_DEFAULTS,
            "dataDir": str(self.root / "zookeeper"),
            "clientPort": str(self.zookeeper_port),
            "clientPortAddress": HOST,
        }

    def server_properties(self, broker_id: int) -> dict[str, str]:
        """The seeds' config/server-N.properties: a copy of Kafka's config/server.properties (so the
        internal topics have one replica, as in the quickstart) with what differs from one broker
        to the next."""
        from kcli.broker.config.broker_config import STOCK_SERVER_PROPERTIES

        return {
            **STOCK_SERVER_PROPERTIES,
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://{HOST}:{self.broker_port(broker_id)}",
            "log.dirs": str(self.root / f"kafka-logs{broker_id}"),
            "zookeeper.connect": self.zookeeper_connect,
        }

    def ports(self) -> dict[int, str]:
        """Every port the cluster binds, with who binds it."""
        ports = {self.zookeeper_port: "ZooKeeper"}
        for broker_id in range(self.brokers):
            port = self.broker_port(broker_id)
            if port in ports:
                raise UsageError(f"port {port} is both broker {broker_id}'s and {ports[port]}'s: choose a --zookeeper-port outside {self.base_port}-{self.broker_port(self.brokers - 1)}")
            if port > 65535:
                raise UsageError(f"broker {broker_id} would listen on port {port}: --base-port + --brokers must not exceed 65536")
            ports[port] = f"broker {broker_id}"
        return ports


def check_ports_free(ports: Mapping[int, str]) -> None:
    """One line naming the first port something already listens on."""
    for port, owner in ports.items():
        check_port_free(HOST, port, owner)


class Child:
    """One ``kcli`` child process, its stdout and stderr in a log file."""

    def __init__(self, name: str, address: str, args: list[str], log_path: Path) -> None:
        self.name = name
        self.address = address
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kcli", *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def exit_report(self) -> str:
        """One line: how the child ended, the last line of its log when it exited by itself (its
        error), and where the log is."""
        status = self.process.returncode
        if status < 0:
            return f"{self.name} (pid {self.pid}) was killed by {signal.Signals(-status).name} (log: {self.log_path})"
        last = next((line.strip() for line in reversed(self.log_text().splitlines()) if line.strip()), "")
        return f"{self.name} (pid {self.pid}) exited with status {status}" + (f": {last}" if last else "") + f" (log: {self.log_path})"

    def terminate(self) -> None:
        if self.running():
            self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self, timeout: float) -> bool:
        """Wait for the exit; SIGKILL after ``timeout`` seconds, and then False."""
        try:
            self.process.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return False


class ChildExited(KcliError):
    """A child ended on its own; the message is its exit report."""


class Stopped(Exception):
    """A stop signal arrived."""


class ClusterRunner:
    def __init__(self, layout: ClusterLayout, overrides: list[str], out: Output) -> None:
        self.layout = layout
        self.overrides = overrides
        self.out = out
        self.zookeeper: Child | None = None
        self.brokers: list[Child] = []
        self.stop_requested = False

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stop_requested = True

    def run(self) -> int:
        check_ports_free(self.layout.ports())
        try:
            self.layout.config_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise KcliError(f"cannot use --dir {self.layout.directory}: {e.strerror}: {e.filename}") from None
        previous = {sig: signal.signal(sig, self._on_signal) for sig in STOP_SIGNALS}
        try:
            self._start_zookeeper()
            for broker_id in range(self.layout.brokers):
                self._spawn_broker(broker_id)
            for broker_id, broker in enumerate(self.brokers):
                self._wait_started(broker, f"[KafkaServer id={broker_id}] started", BROKER_START_TIMEOUT_S)
                self.out.now(f"Broker {broker_id} started (pid {broker.pid}) on PLAINTEXT://{broker.address}")
            self.out.now(f"Cluster of {self.layout.brokers} broker(s) running; Ctrl-C stops it")
            while True:
                self._check()
                time.sleep(POLL_INTERVAL_S)
        except Stopped:
            try:
                self.out.now(f"Stopping {len(self.brokers)} broker(s), then ZooKeeper")
            except OSError:  # the terminal is gone (SIGHUP): stop all the same
                pass
            return 0
        except KcliError as exc:
            # Said at once (a child's death, a start that timed out): stopping the others can take
            # as long as their controlled shutdowns, and must not hold the cause back.
            self.out.diag(f"Error: {exc}")
            return exc.exit_code
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _start_zookeeper(self) -> None:
        config = self.layout.config_dir / "zookeeper.properties"
        write_properties(config, self.layout.zookeeper_properties())
        self.zookeeper = Child("ZooKeeper", self.layout.zookeeper_connect, ["zookeeper", "start", str(config)], self.layout.config_dir / "zookeeper.log")
        deadline = time.monotonic() + ZOOKEEPER_START_TIMEOUT_S
        while not zookeeper_answers(HOST, self.layout.zookeeper_port):
            self._check()
            if time.monotonic() > deadline:
                raise KcliError(f"ZooKeeper did not answer on {self.layout.zookeeper_connect} within {ZOOKEEPER_START_TIMEOUT_S:.0f} s (log: {self.zookeeper.log_path})")
            time.sleep(POLL_INTERVAL_S)
        self.out.now(f"ZooKeeper started (pid {self.zookeeper.pid}) on {self.zookeeper.address}")

    def _spawn_broker(self, broker_id: int) -> None:
        config = self.layout.config_dir / f"server-{broker_id}.properties"
        write_properties(config, self.layout.server_properties(broker_id))
        args = ["broker", "start", str(config)]
        for override in self.overrides:
            args += ["--override", override]
        address = f"{HOST}:{self.layout.broker_port(broker_id)}"
        self.brokers.append(Child(f"Broker {broker_id}", address, args, self.layout.config_dir / f"server-{broker_id}.log"))

    def _wait_started(self, child: Child, marker: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while marker not in child.log_text():
            self._check()
            if time.monotonic() > deadline:
                raise KcliError(f"{child.name} did not start within {timeout:.0f} s (log: {child.log_path})")
            time.sleep(POLL_INTERVAL_S)

    def _check(self) -> None:
        """Raise ``Stopped`` after a stop signal, ``ChildExited`` when a child ended by itself."""
        if self.stop_requested:
            raise Stopped
        for child in (self.zookeeper, *self.brokers):
            if child is not None and not child.running():
                raise ChildExited(child.exit_report())

    def _stop_all(self) -> None:
        """The brokers first, all at once (each a controlled shutdown) within one bounded wait,
        then ZooKeeper; whatever outlives its wait is killed."""
        self._stop_together(self.brokers, BROKER_STOP_TIMEOUT_S)
        if self.zookeeper is not None:
            self._stop_together([self.zookeeper], ZOOKEEPER_STOP_TIMEOUT_S)

    def _stop_together(self, children: list[Child], timeout: float) -> None:
        for child in children:
            child.terminate()
        deadline = time.monotonic() + timeout
        for child in children:
            if not child.wait_stopped(max(0.0, deadline - time.monotonic())):
                self.out.diag(f"{child.name} (pid {child.pid}) did not stop within {timeout:.0f} s and was killed (log: {child.log_path})")


def run_cluster(layout: ClusterLayout, overrides: list[str]) -> int:
    return ClusterRunner(layout, overrides, Output()).run()
