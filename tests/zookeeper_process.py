"""A real ZooKeeper server, run by ``kcli zookeeper start``, for the cluster-mode tests.

The server binds 127.0.0.1 on a free port (kept across restarts so that sessions reconnect to
it) and keeps its data in the test's directory. Every start is bounded in time; every process is
stopped by PID (SIGTERM, then SIGKILL) when the test ends. ZooKeeper is Debian's package, which
the README's test command installs; without it the cluster tests fail with the install hint.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def zookeeper_serving(port: int) -> bool:
    """True once the server on ``port`` answers ZooKeeper's ``srvr`` four-letter command as a
    serving server: it accepts connections earlier, and closes them until its database is loaded."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"srvr")
            return b"Zookeeper version" in conn.recv(4096)
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive free ports."""
    for _ in range(50):
        base = free_port()
        if base + count - 1 > 65535:
            continue
        try:
            for port in range(base, base + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no {count} consecutive free ports")


class ZooKeeperProcess:
    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = self.data_dir / "zookeeper.log"

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def properties(self) -> Path:
        path = self.data_dir / "zookeeper.properties"
        path.write_text(
            f"dataDir={self.data_dir / 'data'}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "maxClientCnxns=0\n"
            "admin.enableServer=false\n"
            # Short ticks keep session expiry tests short; sessions may still ask for 18 s.
            "tickTime=500\n"
            "minSessionTimeout=1000\n"
            "maxSessionTimeout=40000\n"
        )
        return path

    def start(self, timeout: float = 30.0) -> ZooKeeperProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kcli", "zookeeper", "start", str(self.properties())],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {self.process.returncode}:\n{self.log()}")
            if self._answers():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not answer on {self.connect} within {timeout} s:\n{self.log()}")

    def _answers(self) -> bool:
        return zookeeper_serving(self.port)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL the command; the kernel stops its Java server with it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        deadline = time.monotonic() + 10
        while self._answers() and time.monotonic() < deadline:
            time.sleep(0.05)
