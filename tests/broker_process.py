"""A real ``kcli broker start`` process for integration and interop tests.

The broker binds 127.0.0.1 on a free port (port 0 on first start; the same port on restart so
clients find it again) and the fixture reads the bound port from its log line. Every start is
bounded in time and every process is stopped, by SIGTERM then SIGKILL, when the test ends.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_LISTENING = re.compile(r"Awaiting socket connections on [^\s]+:(\d+)\.")
_STARTED = "] started ("


class BrokerProcess:
    def __init__(
        self,
        log_dir: Path,
        overrides: dict[str, str] | None = None,
        *,
        properties_file: Path | None = None,
        log_level: str = "INFO",
        open_files: int | None = None,
        cwd: Path | None = None,
    ) -> None:
        """``open_files``: the process's limit on open files (soft and hard RLIMIT_NOFILE);
        ``cwd``: the directory the broker runs in (the test process's by default)."""
        self.cwd = cwd
        self.log_dir = Path(log_dir)
        self.open_files = open_files
        self.properties_file = properties_file
        self.overrides = dict(overrides or {})
        self.log_level = log_level
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.log_lines: list[str] = []
        self._started = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def listener_ports(self) -> list[int]:
        """Every listener's port, in the order the broker announced them (its listeners' order)."""
        return [int(m.group(1)) for line in self.log_lines if (m := _LISTENING.search(line))]

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        props = {
            "log.dirs": str(self.log_dir),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            **self.overrides,
        }
        args = [sys.executable, "-m", "kcli", "broker", "start", "--log-level", self.log_level]
        if self.properties_file is not None:
            args.append(str(self.properties_file))
        for key, value in props.items():
            args += ["--override", f"{key}={value}"]
        self._started.clear()
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            cwd=self.cwd,
            preexec_fn=self._limit_open_files if self.open_files is not None else None,
        )
        self._reader = threading.Thread(target=self._read_log, args=(self.process,), daemon=True)
        self._reader.start()
        if not self._started.wait(timeout) or self.process.poll() is not None:
            self.kill()
            raise RuntimeError("broker did not start:\n" + "\n".join(self.log_lines[-40:]))
        return self

    def _limit_open_files(self) -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))

    def _read_log(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            line = line.rstrip("\n")
            self.log_lines.append(line)
            match = _LISTENING.search(line)
            if match and not self.port:
                self.port = int(match.group(1))
            if _STARTED in line:
                self._started.set()
        # The log ended: the process is exiting. A start still waiting learns it now, not at its
        # timeout.
        process.wait()
        self._started.set()

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait: a graceful shutdown. Returns the exit code."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            tail = "\n".join(self.log_lines[-20:])
            raise RuntimeError(f"broker did not stop within its timeout after SIGTERM; its last lines:\n{tail}")
        finally:
            self._join_reader()

    def kill(self) -> None:
        """SIGKILL: a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._join_reader()

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(5)

    def restart(self, *, crash: bool = False) -> BrokerProcess:
        if crash:
            self.kill()
        else:
            self.stop()
        return self.start()

    def wait_for(self, pattern: str, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log_lines:
                if re.search(pattern, line):
                    return line
            time.sleep(0.05)
        raise AssertionError(f"no log line matching {pattern!r}")


def scram_authenticates(port: int, mechanism: str, user: str, password: str) -> bool:
    """Whether a SCRAM exchange as ``user`` succeeds on the SASL_PLAINTEXT listener at ``port``
    (kcli's client: a failed exchange is its error, not a client library's retries)."""
    import asyncio

    from kcli.client.connection import BrokerConnection
    from kcli.client.security_config import client_security
    from kcli.errors import KafkaError

    security = client_security({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";',
    })

    async def attempt() -> bool:
        try:
            connection = await BrokerConnection.open("127.0.0.1", port, security=security, timeout=10)
        except KafkaError:
            return False
        await connection.close()
        return True

    return asyncio.run(attempt())
