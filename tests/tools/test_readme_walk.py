"""The README's examples, run in order as written.

Every ```sh block of README.md after the set-up block is run command by command with bash, in a
fresh directory that also serves as HOME (``completions/`` and ``scripts/`` are linked in, as in
the checkout the README is read from). Only what would clash with other processes on this machine is changed: the
fixed ports (2181, 9092-9094, after ``:`` or ``=``) become free ones, ``/tmp/`` becomes a private directory, listeners
bind 127.0.0.1, and the commands that use those defaults without naming them get them named.

Servers (``broker start``, ``zookeeper start``, ``cluster start``) run in the background until a
later server needs one of their ports or the walk ends, and are then stopped by SIGTERM (exit 0,
as a clean shutdown). A console consumer without an end condition runs until it is idle and is
then stopped as Ctrl-C stops it (exit 130). ``console-producer`` without a pipe reads two
``key:value`` lines from its stdin. Every other command must exit 0.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.zookeeper_process import free_port, free_ports, zookeeper_serving

ROOT = Path(__file__).resolve().parents[2]
SET_UP = [
    "scripts/install && .venv/bin/kcli broker start   # install kcli into .venv, run a broker on port 9092",
    "scripts/test                                       # install everything the tests need, run the tests",
]
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)
_COMMENT = re.compile(r"(^|\s+)#.*$")  # the README's commands have no # inside quotes
_README_PORTS = (9092, 9093, 9094)
_ZOOKEEPER_PORT = 2181
PRODUCER_INPUT = "key1:value1\nkey2:value2\n"


def readme_blocks() -> list[list[str]]:
    """Each ```sh block's commands, continuation lines joined."""
    text = (ROOT / "README.md").read_text()
    blocks = []
    for body in _BLOCK.findall(text):
        joined = body.replace("\\\n", " ")
        blocks.append([line.strip() for line in joined.splitlines() if line.strip()])
    return blocks


def accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class Server:
    command: str
    process: subprocess.Popen
    ports: set[int]
    log: Path
    ready_lines: int = 0  # "started" lines to wait for in its output
    expected_exit: int = 0
    done: bool = field(default=False)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


class Walk:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.tmp = home / "tmp"
        self.tmp.mkdir()
        base = free_ports(len(_README_PORTS))
        self.ports = {readme: base + i for i, readme in enumerate(_README_PORTS)}
        self.ports[_ZOOKEEPER_PORT] = free_port()
        bin_dir = home / "bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "kcli"
        wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kcli \"$@\"\n")
        wrapper.chmod(0o755)
        (home / "completions").symlink_to(ROOT / "completions")
        (home / "scripts").symlink_to(ROOT / "scripts")
        self.env = {
            **os.environ,
            "HOME": str(home),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        }
        self.env.pop("PYSPARK_PYTHON", None)
        self.servers: list[Server] = []
        self.zookeeper_properties = home / "walk-zookeeper.properties"
        self.zookeeper_properties.write_text(
            f"dataDir={self.tmp}/zookeeper\nclientPort={self.ports[_ZOOKEEPER_PORT]}\nclientPortAddress=127.0.0.1\n"
            "maxClientCnxns=0\nadmin.enableServer=false\n"
        )
        self.count = 0

    # -- substitution ----------------------------------------------------------------------------

    def substitute(self, command: str) -> str:
        command = re.sub(r"(?<=[:=])(2181|9092|9093|9094)\b", lambda m: str(self.ports[int(m.group(1))]), command)
        command = command.replace("PLAINTEXT://:", "PLAINTEXT://127.0.0.1:")
        command = command.replace("/tmp/", f"{self.tmp}/")
        words = command.split()
        if words[:3] == ["kcli", "broker", "start"]:
            has_file = len(words) > 3 and not words[3].startswith("-")
            if not has_file and "listeners=" not in command:
                command += f" --override listeners=PLAINTEXT://127.0.0.1:{self.ports[9092]}"
            if not has_file and "log.dirs=" not in command:
                command += f" --override log.dirs={self.tmp}/kafka-logs"
        elif words[:3] == ["kcli", "zookeeper", "start"] and (len(words) == 3 or words[3].startswith("#")):
            command = command.replace("kcli zookeeper start", f"kcli zookeeper start {self.zookeeper_properties}", 1)
        elif words[:3] == ["kcli", "cluster", "start"]:
            if "--zookeeper-port" not in command:
                command += f" --zookeeper-port {self.ports[_ZOOKEEPER_PORT]}"
            if "--base-port" not in command:
                command += f" --base-port {self.ports[9092]}"
            if "--dir" not in command:
                command += f" --dir {self.tmp}"
        elif words[:3] == ["kcli", "cluster", "status"] and "--zookeeper" not in command:
            command += f" --zookeeper localhost:{self.ports[_ZOOKEEPER_PORT]}"
        return command

    # -- running -----------------------------------------------------------------------------------

    def run(self, readme_command: str) -> None:
        command = self.substitute(_COMMENT.sub("", readme_command))
        print(f"[{time.strftime('%H:%M:%S')}] {command}", flush=True)
        words = command.split()
        if words[:1] == ["kcli"] and words[1:3] in (["broker", "start"], ["zookeeper", "start"], ["cluster", "start"]):
            self.start_server(readme_command, command)
        elif words[1:2] == ["console-consumer"] and "|" not in command and not {"--max-messages", "--timeout-ms"} & set(words):
            self.run_until_idle(readme_command, command)
        else:
            stdin = PRODUCER_INPUT if words[1:2] == ["console-producer"] and "|" not in command else None
            done = subprocess.run(
                ["bash", "-c", command], input=stdin or "", capture_output=True, text=True, cwd=self.home, env=self.env,
                timeout=400,
            )
            assert done.returncode == 0, f"{readme_command}\n(run as: {command})\nexit {done.returncode}\nstdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}"

    def _popen(self, command: str, log: Path) -> subprocess.Popen:
        with open(log, "w") as out:
            return subprocess.Popen(
                ["bash", "-c", f"exec {command}"], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=self.home, env=self.env, start_new_session=True,
            )

    def start_server(self, readme_command: str, command: str) -> None:
        words = command.split()
        if words[1] == "cluster":
            count = int(re.search(r"--brokers (\d+)", command).group(1)) if "--brokers" in command else 3
            base = int(re.search(r"--base-port (\d+)", command).group(1))
            ports = {int(re.search(r"--zookeeper-port (\d+)", command).group(1)), *range(base, base + count)}
            ready_lines = count + 1
        elif words[1] == "zookeeper":
            ports = {int(p) for p in re.findall(r"^clientPort=(\d+)", self._properties_text(words), re.M)}
            ready_lines = 0  # ZooKeeper prints no such line: its srvr answer says it serves
        else:
            ports = {int(p) for p in re.findall(r"PLAINTEXT://[^:]*:(\d+)", self._properties_text(words) + command)}
            ready_lines = 1
        for running in reversed(self.servers):
            if not running.done and running.ports & ports:
                self.stop(running)
        self.count += 1
        log = self.home / f"server-{self.count}.log"
        server = Server(readme_command, self._popen(command, log), ports, log, ready_lines)
        self.servers.append(server)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert server.process.poll() is None, f"{readme_command}\n(run as: {command})\nexited {server.process.returncode}:\n{server.output()[-3000:]}"
            output = server.output()
            started = len(re.findall(r"\] started \(|^(ZooKeeper|Broker \d+) started \(pid", output, re.M))
            ready = zookeeper_serving if words[1] == "zookeeper" else accepting
            if started >= ready_lines and all(ready(port) for port in ports):
                return
            time.sleep(0.2)
        raise AssertionError(f"{readme_command}: not serving within 120 s:\n{server.output()[-3000:]}")

    def _properties_text(self, words: list[str]) -> str:
        """The properties file a start command names ("" when it names none or it is missing: the
        command then fails by itself, and says so)."""
        if len(words) > 3 and not words[3].startswith("-"):
            path = Path(words[3]) if Path(words[3]).is_absolute() else self.home / words[3]
            return path.read_text() if path.is_file() else ""
        return ""

    def run_until_idle(self, readme_command: str, command: str) -> None:
        """A consumer that runs until Ctrl-C: let it read until it has been quiet for 3 s."""
        self.count += 1
        log = self.home / f"consumer-{self.count}.log"
        process = self._popen(command, log)
        deadline = time.monotonic() + 60
        size, quiet_since = -1, time.monotonic()
        while time.monotonic() < deadline and process.poll() is None:
            current = log.stat().st_size
            if current != size:
                size, quiet_since = current, time.monotonic()
            elif time.monotonic() - quiet_since > (3 if current else 10):
                break
            time.sleep(0.2)
        assert process.poll() is None, f"{readme_command}: exited {process.returncode}:\n{log.read_text()[-3000:]}"
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
        assert code == 130, f"{readme_command}: exit {code} after Ctrl-C:\n{log.read_text()[-3000:]}"

    @staticmethod
    def _terminate(server: Server) -> bool:
        """SIGTERM, then SIGKILL to its process group past 90 s; False when it took the SIGKILL."""
        server.done = True
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(90)
            except subprocess.TimeoutExpired:
                os.killpg(server.process.pid, signal.SIGKILL)
                server.process.wait(10)
                return False
        return True

    def stop(self, server: Server) -> None:
        if not self._terminate(server):
            raise AssertionError(f"{server.command}: did not stop on SIGTERM:\n{server.output()[-3000:]}")
        assert server.process.returncode == server.expected_exit, f"{server.command}: exit {server.process.returncode}:\n{server.output()[-3000:]}"

    def stop_all(self) -> None:
        for server in reversed(self.servers):
            if not server.done:
                self._terminate(server)


def test_the_set_up_block_is_kept_as_it_is():
    assert readme_blocks()[0] == SET_UP


@pytest.mark.timeout(1500)
def test_the_readmes_examples_run_in_order_as_written(tmp_path):
    walk = Walk(tmp_path)
    try:
        for block in readme_blocks()[1:]:
            for command in block:
                walk.run(command)
        for server in reversed(walk.servers):
            if not server.done:
                walk.stop(server)
    finally:
        walk.stop_all()
    # The completion lines installed what a new shell loads (bash is the shell here to start).
    shell = subprocess.run(["bash", "-ic", "complete -p kcli"], capture_output=True, text=True, cwd=tmp_path, env=walk.env, timeout=30)
    assert shell.stdout.strip() == "complete -o default -F _kcli kcli", shell
    assert (tmp_path / ".zfunc" / "_kcli").read_text() == (ROOT / "completions" / "_kcli").read_text()
    assert (tmp_path / ".config" / "fish" / "completions" / "kcli.fish").is_file()
