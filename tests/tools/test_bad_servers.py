"""Every tool that talks to a broker, pointed at servers that are not one: a listener that accepts
and never answers, and an HTTP server. Each must end with one line naming the server (on stderr,
or on stdout where Kafka's tool prints it there), and, for the silent one, the timeout it waited;
exit 1, no traceback, within its timeout, and without allocating what the HTTP answer's first
four bytes announce as a frame size (1.2 GB).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main

from kcli.cli import app

ROOT = Path(__file__).resolve().parents[2]
HTTP_ANSWER = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
# The tools import no more than a few tens of MB; the frame the HTTP answer announces is 1.2 GB.
MAX_RSS_BYTES = 300 * 1024 * 1024


class Listener:
    """A TCP server on a free 127.0.0.1 port, in threads, whose connections get ``answer``."""

    def __init__(self, answer: bytes | None) -> None:
        self.answer = answer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)  # kept open: a silent listener never closes
            if self.answer is not None:
                threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(30)
            conn.recv(65536)
            conn.sendall(self.answer)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture(scope="module")
def silent() -> Iterator[Listener]:
    listener = Listener(None)
    yield listener
    listener.close()


@pytest.fixture(scope="module")
def http() -> Iterator[Listener]:
    listener = Listener(HTTP_ANSWER)
    yield listener
    listener.close()


# Runs kcli as its child and writes the child's peak RSS (KiB) to the file named first. A child's
# ru_maxrss counts the memory of the process it was forked from, so kcli is started from this
# small launcher, not from pytest itself (hundreds of MB once Spark's tests have run in it).
_LAUNCHER = """
import resource, subprocess, sys
code = subprocess.call([sys.executable, "-m", "kcli", *sys.argv[2:]])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def run_measured(args: list[str], stdin: str = "", timeout: float = 90) -> tuple[int, str, str, int]:
    """``kcli ARGS`` as a process: exit code, stdout, stderr and its own peak RSS in bytes."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        rss_file = Path(scratch) / "maxrss"
        process = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(rss_file), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.communicate()
            raise AssertionError(f"kcli {' '.join(args)} still running after {timeout} s") from None
        return process.returncode, stdout, stderr, int(rss_file.read_text()) * 1024


@pytest.fixture(scope="module")
def timeout_config(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("config") / "client.properties"
    path.write_text("request.timeout.ms=2000\n")
    return str(path)


# Each tool that reaches a broker, with its own way to set the timeout (2 s): --command-config,
# --*-property, the tool's --timeout where Kafka's tool has one. "{server}" is the listener.
INVOCATIONS: dict[str, tuple[list[str], str]] = {
    "topics": (["topics", "--bootstrap-server", "{server}", "--list", "--command-config", "{config}"], "request.timeout.ms"),
    "configs": (["configs", "--bootstrap-server", "{server}", "--describe", "--entity-type", "topics", "--command-config", "{config}"], "request.timeout.ms"),
    "consumer-groups": (["consumer-groups", "--bootstrap-server", "{server}", "--list", "--command-config", "{config}"], "request.timeout.ms"),
    "consumer-groups --timeout": (["consumer-groups", "--bootstrap-server", "{server}", "--describe", "--group", "g", "--timeout", "2000"], "--timeout"),
    "get-offsets": (["get-offsets", "--bootstrap-server", "{server}", "--command-config", "{config}"], "request.timeout.ms"),
    "broker-api-versions": (["broker-api-versions", "--bootstrap-server", "{server}", "--command-config", "{config}"], "request.timeout.ms"),
    "console-producer": (["console-producer", "--bootstrap-server", "{server}", "--topic", "t", "--producer-property", "request.timeout.ms=2000"], "request.timeout.ms"),
    "console-producer --request-timeout-ms": (["console-producer", "--bootstrap-server", "{server}", "--topic", "t", "--request-timeout-ms", "2000"], "request.timeout.ms"),
    "console-consumer": (["console-consumer", "--bootstrap-server", "{server}", "--topic", "t", "--consumer-property", "request.timeout.ms=2000"], "request.timeout.ms"),
    "console-consumer --timeout-ms": (["console-consumer", "--bootstrap-server", "{server}", "--topic", "t", "--group", "g", "--timeout-ms", "2000"], "--timeout-ms"),
    "producer-perf-test": (
        ["producer-perf-test", "--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1",
         "--producer-props", "bootstrap.servers={server}", "request.timeout.ms=2000"], "request.timeout.ms"),
    "consumer-perf-test": (["consumer-perf-test", "--bootstrap-server", "{server}", "--topic", "t", "--messages", "1", "--consumer.config", "{config}"], "request.timeout.ms"),
    "consumer-perf-test --timeout": (["consumer-perf-test", "--bootstrap-server", "{server}", "--topic", "t", "--messages", "1", "--timeout", "2000"], "--timeout"),
    "export": (["export", "--bootstrap-server", "{server}", "--topic", "t", "--output-dir", "{tmp}/out", "--option", "kafka.request.timeout.ms=2000"], "request.timeout.ms"),
    "import": (["import", "--bootstrap-server", "{server}", "--topic", "t", "--input", "{tmp}", "--producer-property", "request.timeout.ms=2000"], "request.timeout.ms"),
    "stats": (["stats", "--bootstrap-server", "{server}", "--topic", "t"], None),
    "mirror": (["mirror", "--source-bootstrap-server", "{server}", "--target-bootstrap-server", "{server}", "--topic", "t", "--checkpoint", "{tmp}/cp"], None),
    "transactions": (["transactions", "--bootstrap-server", "{server}", "--command-config", "{config}", "list"], "request.timeout.ms"),
    "consumer-offsets": (["consumer-offsets", "export", "--from", "kafka", "--bootstrap-server", "{server}", "--command-config", "{config}"], "request.timeout.ms"),
    "delete-records": (["delete-records", "--bootstrap-server", "{server}", "--offset-json-file", "{offsets}", "--command-config", "{config}"], "request.timeout.ms"),
    "log-dirs": (["log-dirs", "--bootstrap-server", "{server}", "--describe", "--command-config", "{config}"], "request.timeout.ms"),
    "features": (["features", "--bootstrap-server", "{server}", "--command-config", "{config}", "describe"], "request.timeout.ms"),
    "e2e-latency": (["e2e-latency", "{server}", "t", "1", "1", "1", "{config}"], "request.timeout.ms"),
    "verifiable-producer": (["verifiable-producer", "--bootstrap-server", "{server}", "--topic", "t", "--max-messages", "1", "--producer.config", "{config}"], "request.timeout.ms"),
    "verifiable-consumer": (["verifiable-consumer", "--bootstrap-server", "{server}", "--topic", "t", "--group-id", "g", "--consumer.config", "{config}"], "request.timeout.ms"),
    "acls": (["acls", "--bootstrap-server", "{server}", "--list", "--command-config", "{config}"], "request.timeout.ms"),
    "replica-verification": (["replica-verification", "--broker-list", "{server}"], None),
}
# stats, mirror (the source) and replica-verification have no client setting: a silent server is
# given Kafka's default request.timeout.ms, 30 s; the HTTP case covers their path without that wait.
WITH_TIMEOUT = [name for name, (_args, setting) in INVOCATIONS.items() if setting is not None]
# Commands that never reach a broker: they run processes, or speak ZooKeeper's protocol (their
# unreachable-ZooKeeper cases are in test_zookeeper_shell.py, test_cluster_command.py and
# test_topics_zookeeper.py; consumer-offset-checker finds its brokers in ZooKeeper, and
# test_consumer_offsets.py has the unreachable-ZooKeeper case of that path).
OFFLINE = {"broker", "dump-log", "dump-log-segments", "zookeeper", "zookeeper-shell", "cluster", "consumer-offset-checker"}


def _expand(args: list[str], server: str, config: str, tmp: Path) -> list[str]:
    offsets = tmp / "offsets.json"  # delete-records' file: one partition to delete from
    offsets.write_text('{"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "version": 1}')
    return [a.format(server=server, config=config, tmp=tmp, offsets=offsets) for a in args]


# Kafka's kafka-transactions.sh reports a failed admin call with its own words around the cause
# (TransactionsCommand.printErrorAndExit), not kcli's "Error: ".
KAFKA_WORDS = {"transactions": ("Failed to list transactions: ", ". Enable debug logging for additional detail.")}


def _cause(command: str, line: str) -> str:
    """The cause a tool's one error line reports: after "Error" (some tools put Kafka's own words
    first: "Error occurred: ", "Executing ... failed due to "), or inside Kafka's own words."""
    if command in KAFKA_WORDS:
        head, tail = KAFKA_WORDS[command]
        assert line.startswith(head) and line.endswith(tail), line
        return line[len(head) : -len(tail)]
    assert line.startswith("Error"), line
    return line


# Tools whose Kafka original prints its error line on stdout (kafka-topics.sh: TopicCommand's
# println, kafka-acls.sh: AclCommand's; their stderr gets only log4j's stack trace, which kcli
# leaves out).
ERRORS_ON_STDOUT = {"topics", "acls"}


def _error_lines(command: str, stdout: str, stderr: str) -> list[str]:
    if command.split()[0] in ERRORS_ON_STDOUT:
        assert stderr == "", stderr
        return stdout.splitlines()
    lines = stderr.splitlines()
    if command.startswith("console-consumer"):
        # Kafka's console consumer reports its count on the way out, whatever ended it.
        assert "Processed a total of 0 messages" in lines
        lines.remove("Processed a total of 0 messages")
    if command == "replica-verification":
        # Kafka's ReplicaVerificationTool warns first, through log4j, that it is deprecated.
        assert "WARN This tool is deprecated and may be removed in a future major release." in lines[0]
        lines = lines[1:]
    return lines


def test_every_networked_command_is_covered():
    commands = {name for name in typer.main.get_command(app).commands if name != "complete-names"}  # hidden; silent by design
    assert commands - OFFLINE == {name.split()[0] for name in INVOCATIONS}


@pytest.mark.parametrize("command", WITH_TIMEOUT)
def test_a_silent_listener_is_one_line_naming_server_and_timeout(command: str, silent: Listener, timeout_config: str, tmp_path: Path) -> None:
    args, setting = INVOCATIONS[command]
    code, stdout, stderr, _rss = run_measured(_expand(args, silent.address, timeout_config, tmp_path), stdin="hello\n")
    assert "Traceback" not in stderr
    [line] = _error_lines(command, stdout, stderr)
    assert code == 1, stderr
    cause = _cause(command, line)
    assert silent.address in cause and "did not answer" in cause and f"within 2 s ({setting})" in cause, line


@pytest.mark.parametrize("command", INVOCATIONS)
def test_an_http_server_is_one_line_naming_it_in_bounded_memory(command: str, http: Listener, timeout_config: str, tmp_path: Path) -> None:
    args, _setting = INVOCATIONS[command]
    code, stdout, stderr, rss = run_measured(_expand(args, http.address, timeout_config, tmp_path), stdin="hello\n")
    assert "Traceback" not in stderr
    [line] = _error_lines(command, stdout, stderr)
    assert code == 1, stderr
    assert _cause(command, line).endswith(
        f"{http.address} is not a Kafka broker: it answered a frame of 1213486160 bytes, larger than the 100000000 the client "
        "accepts; its first bytes read 'HTTP': an HTTP server"
    ), line
    assert rss < MAX_RSS_BYTES
