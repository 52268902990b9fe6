"""Every tool's mistakes end in one line and an exit status: malformed ZooKeeper connect strings
and bootstrap addresses, a ZooKeeper that does not answer, output files that cannot be written,
and input files that never end (read with a bound, never into unbounded memory)."""

from __future__ import annotations

import resource
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.zookeeper_process import free_port

ROOT = Path(__file__).resolve().parents[2]

# Every way a tool takes a ZooKeeper connect string; CONNECT is replaced by the string.
ZOOKEEPER_TOOLS = {
    "topics": ["topics", "--zookeeper", "CONNECT", "--list"],
    "cluster status": ["cluster", "status", "--zookeeper", "CONNECT"],
    "consumer-offsets export": ["consumer-offsets", "export", "--from", "zookeeper", "--zookeeper", "CONNECT"],
    "consumer-offsets migrate": ["consumer-offsets", "migrate", "--all-groups", "--to", "kafka", "--zookeeper", "CONNECT",
                                 "--bootstrap-server", "127.0.0.1:1"],
    "consumer-groups --zookeeper": ["consumer-groups", "--zookeeper", "CONNECT", "--list"],
    "consumer-offset-checker": ["consumer-offset-checker", "--zookeeper", "CONNECT", "--group", "g"],
    "zookeeper-shell": ["zookeeper-shell", "CONNECT", "ls", "/"],
}

BAD_CONNECT_STRINGS = {
    "[::1:21910": "'[::1:21910' has no closing ']'",
    "127.0.0.1:99999": "port '99999' of '127.0.0.1:99999' is not a number in 1..65535",
    "127.0.0.1:0": "port '0' of '127.0.0.1:0' is not a number in 1..65535",
    "host:x": "port 'x' of 'host:x' is not a number in 1..65535",
    "::1:2181": "'::1:2181' has more than one ':'",
    "[::1]2181": "'[::1]2181' has '2181' after ']' where ':port' belongs",
    ",": "it names no server",
    "/chroot": "it names no server",
}


def kcli_args(tool: str, connect: str) -> list[str]:
    return [connect if arg == "CONNECT" else arg for arg in ZOOKEEPER_TOOLS[tool]]


def run(args: list[str], *, memory_limit: int | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
    def limit_memory() -> None:
        if memory_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return subprocess.run([sys.executable, "-m", "kcli", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, stdin=subprocess.DEVNULL, preexec_fn=limit_memory)


def error_lines(result: subprocess.CompletedProcess, tool: str) -> list[str]:
    """The lines a failure printed beyond the tool's fixed preamble."""
    if tool == "consumer-offset-checker":
        return result.stdout.splitlines() + result.stderr.splitlines()  # Kafka's "Exiting due to: ..." on stdout
    if tool == "zookeeper-shell":
        return result.stderr.splitlines()  # after "Connecting to ..." on stdout, as zkCli
    assert result.stdout == "", (tool, result)
    lines = result.stderr.splitlines()
    if tool == "consumer-groups --zookeeper":
        lines = lines[1:]  # Kafka 1.1's note on old consumers comes first, as there
    return lines


# -- connect strings ------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", sorted(ZOOKEEPER_TOOLS))
@pytest.mark.parametrize("connect", sorted(BAD_CONNECT_STRINGS))
def test_a_malformed_zookeeper_connect_string_is_one_line_naming_it(tool, connect):
    result = run(kcli_args(tool, connect), timeout=60)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    [line] = error_lines(result, tool)
    assert f"Invalid ZooKeeper connect string {connect!r}: {BAD_CONNECT_STRINGS[connect]}" in line, line


def test_a_broker_with_a_malformed_zookeeper_connect_stops_with_one_error_line(tmp_path):
    result = run(["broker", "start", "--override", "zookeeper.connect=127.0.0.1:99999", "--override", f"log.dirs={tmp_path}",
                  "--override", "listeners=PLAINTEXT://127.0.0.1:0"], timeout=60)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "99999" in line]
    assert errors == ["Error: Invalid ZooKeeper connect string '127.0.0.1:99999': port '99999' of '127.0.0.1:99999' is not a number "
                      "in 1..65535 (expected host:port[,host:port...][/chroot], an IPv6 address in brackets)"], result


def test_the_connect_string_parser_follows_zookeepers():
    from kcli.metadata.zk_connect import parse_connect

    parsed = parse_connect(" a:1 ,, [::1]:2182,b/kafka/x")
    assert parsed.servers == (("a", 1), ("::1", 2182), ("b", 2181))
    assert parsed.chroot == "/kafka/x"
    assert parsed.hosts == "a:1,[::1]:2182,b:2181"
    assert parse_connect("h:2181/").chroot is None


@pytest.mark.parametrize(
    "args",
    [
        ["topics", "--bootstrap-server", "127.0.0.1:99999", "--list"],
        ["consumer-groups", "--bootstrap-server", "127.0.0.1:99999", "--list"],
        ["get-offsets", "--bootstrap-server", "127.0.0.1:99999"],
        ["console-producer", "--bootstrap-server", "127.0.0.1:99999", "--topic", "t"],
        ["console-consumer", "--bootstrap-server", "127.0.0.1:99999", "--topic", "t"],
    ],
    ids=lambda args: args[0],
)
def test_a_bootstrap_port_out_of_range_is_one_line(args):
    result = run(args, timeout=60)
    assert result.returncode in (1, 2), result
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines() + result.stderr.splitlines()
    assert len(lines) == 1 and "Invalid port in bootstrap.servers: 127.0.0.1:99999" in lines[0], result


# -- a ZooKeeper that does not answer -------------------------------------------------------------


def test_zookeeper_side_tools_against_a_closed_port_print_their_one_line_only():
    """kazoo's warnings ("Connection dropped: ... Connection refused") stay out of the output."""
    connect = f"127.0.0.1:{free_port()}"
    running = {tool: subprocess.Popen([sys.executable, "-m", "kcli", *kcli_args(tool, connect)], cwd=ROOT,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for tool in ZOOKEEPER_TOOLS}
    results = {}
    try:
        for tool, process in running.items():
            stdout, stderr = process.communicate(timeout=120)
            results[tool] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    finally:
        for process in running.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    for tool, result in results.items():
        assert result.returncode == 1, (tool, result)
        assert "Connection dropped" not in result.stderr and "Connection refused" not in result.stderr, (tool, result)
        lines = error_lines(result, tool)
        assert len(lines) == 1, (tool, result)
        if tool == "zookeeper-shell":
            assert lines == ["KeeperErrorCode = ConnectionLoss for /"]
            assert result.stdout == f"Connecting to {connect}\n"
        else:
            assert "Timed out waiting for connection to ZooKeeper" in lines[0], (tool, result)


# -- output files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "reason"), [("/nonexistent/dir/x", "No such file or directory"), ("/tmp", "Is a directory")])
def test_an_output_file_that_cannot_be_opened_is_one_line_before_zookeeper_is_asked(path, reason):
    # The closed port shows the file is checked first: no connection wait, no connection error.
    result = run(["consumer-offsets", "export", "--from", "zookeeper", "--zookeeper", f"127.0.0.1:{free_port()}",
                  "--output-file", path], timeout=60)
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == [f"Error: Cannot write {path}: {reason}"]


def test_an_output_file_whose_write_fails_is_one_line(zookeeper_server):
    # /dev/full opens, and every write to it fails (ENOSPC), as /proc/version's does.
    from kazoo.client import KazooClient

    chroot = f"/export-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper_server.connect)
    zk.start(timeout=15)
    try:
        zk.create(f"{chroot}/consumers/g/offsets/t/0", b"5", makepath=True)
    finally:
        zk.stop()
        zk.close()
    result = run(["consumer-offsets", "export", "--from", "zookeeper", "--zookeeper", zookeeper_server.connect + chroot,
                  "--output-file", "/dev/full"], timeout=60)
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == ["Error: Cannot write /dev/full: No space left on device"]


def test_an_export_replaces_its_output_file_only_once_it_has_the_offsets(zookeeper_server, tmp_path):
    previous = tmp_path / "offsets.txt"
    previous.write_text("/consumers/old/offsets/t/0:1\n" * 3)
    failed = run(["consumer-offsets", "export", "--from", "zookeeper", "--zookeeper", f"127.0.0.1:{free_port()}",
                  "--timeout", "1000", "--output-file", str(previous)], timeout=60)
    assert failed.returncode == 1, failed
    assert previous.read_text() == "/consumers/old/offsets/t/0:1\n" * 3
    from kazoo.client import KazooClient

    chroot = f"/export-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper_server.connect)
    zk.start(timeout=15)
    try:
        zk.create(f"{chroot}/consumers/g/offsets/t/0", b"5", makepath=True)
    finally:
        zk.stop()
        zk.close()
    done = run(["consumer-offsets", "export", "--from", "zookeeper", "--zookeeper", zookeeper_server.connect + chroot,
                "--output-file", str(previous)], timeout=60)
    assert (done.returncode, done.stderr) == (0, ""), done
    assert previous.read_text() == "/consumers/g/offsets/t/0:5\n"


@pytest.mark.parametrize(("path", "problem"), [("/proc/version/x", "/proc/version is not a directory"),
                                               ("/proc/version", "it exists and is not a directory")])
def test_an_export_dir_that_cannot_be_a_directory_is_one_line_before_spark_starts(tmp_path, path, problem):
    (tmp_path / "t-0").mkdir()
    result = run(["export", "--log-dir", str(tmp_path), "--topic", "t", "--output-dir", path], timeout=300)
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == [f"Error: Cannot write to --output-dir {path}: {problem}"]


# -- input files ----------------------------------------------------------------------------------

# Far above what the tools need (about 150 MiB of address space), far below what reading a file
# without end would take: an unbounded read fails with MemoryError instead of exhausting the host.
MEMORY_LIMIT = 768 * 1024 * 1024

# Every tool option that names a file kcli reads; FILE is replaced by the file.
FILE_READERS = {
    "consumer-offsets import": (["consumer-offsets", "import", "--to", "zookeeper", "--zookeeper", "127.0.0.1:1", "--input-file", "FILE"], "offsets file"),
    "consumer-offsets import csv": (["consumer-offsets", "import", "--to", "kafka", "--bootstrap-server", "127.0.0.1:1", "--format", "csv", "--input-file", "FILE"], "offsets file"),
    "topics --command-config": (["topics", "--bootstrap-server", "127.0.0.1:1", "--list", "--command-config", "FILE"], "properties file"),
    "configs --command-config": (["configs", "--bootstrap-server", "127.0.0.1:1", "--describe", "--entity-type", "topics", "--command-config", "FILE"], "properties file"),
    "configs --add-config-file": (["configs", "--bootstrap-server", "127.0.0.1:1", "--alter", "--entity-type", "topics", "--entity-name", "t", "--add-config-file", "FILE"], "properties file"),
    "consumer-groups --command-config": (["consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--list", "--command-config", "FILE"], "properties file"),
    "get-offsets --command-config": (["get-offsets", "--bootstrap-server", "127.0.0.1:1", "--command-config", "FILE"], "properties file"),
    "transactions --command-config": (["transactions", "--bootstrap-server", "127.0.0.1:1", "--command-config", "FILE", "list"], "properties file"),
    "broker-api-versions --command-config": (["broker-api-versions", "--bootstrap-server", "127.0.0.1:1", "--command-config", "FILE"], "properties file"),
    "console-producer --producer.config": (["console-producer", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--producer.config", "FILE"], "properties file"),
    "console-consumer --consumer.config": (["console-consumer", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--consumer.config", "FILE"], "properties file"),
    "console-consumer --formatter-config": (["console-consumer", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--formatter-config", "FILE"], "properties file"),
    "producer-perf-test --producer.config": (["producer-perf-test", "--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1", "--producer.config", "FILE"], "properties file"),
    "producer-perf-test --payload-file": (["producer-perf-test", "--topic", "t", "--num-records", "1", "--throughput", "-1", "--producer-props", "bootstrap.servers=127.0.0.1:1", "--payload-file", "FILE"], "payload file"),
    "consumer-perf-test --consumer.config": (["consumer-perf-test", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--messages", "1", "--consumer.config", "FILE"], "properties file"),
    "broker start": (["broker", "start", "FILE"], "properties file"),
}


@pytest.fixture(scope="module")
def endless_files(tmp_path_factory) -> dict[str, Path]:
    """A 4 GiB file without a line end (sparse: zeros, no disk used) and one of 200 KiB."""
    root = tmp_path_factory.mktemp("endless")
    huge, long_line = root / "huge", root / "long-line"
    with open(huge, "wb") as f:
        f.truncate(4 * 1024**3)
    long_line.write_bytes(b"a" * (200 * 1024))
    return {"huge": huge, "long-line": long_line, "zero": Path("/dev/zero")}


# The payload file is bounded in size only (its records end at a delimiter of the user's choice),
# and Kafka's tool refuses anything but a non-empty regular file before reading (/dev/zero).
CASES = [(reader, which) for reader in sorted(FILE_READERS) for which in ("zero", "huge", "long-line")
         if FILE_READERS[reader][1] != "payload file" or which == "huge"]


@pytest.mark.parametrize(("reader", "which"), CASES)
def test_an_input_file_without_end_is_one_line_in_bounded_memory(endless_files, reader, which):
    args, what = FILE_READERS[reader]
    path = endless_files[which]
    result = run([str(path) if arg == "FILE" else arg for arg in args], memory_limit=MEMORY_LIMIT)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr, result
    printed = result.stdout.splitlines() + result.stderr.splitlines()
    [line] = [text for text in printed if not text.startswith("Reading payloads from: ")]  # Kafka's first line
    bound = "it is larger than" if which == "huge" else "a line is longer than"
    assert f"Cannot read {what} {path}: {bound} " in line, result


@pytest.mark.parametrize("which", ["zero", "huge", "long-line"])
def test_a_reset_plan_without_end_is_one_line_in_bounded_memory(broker, endless_files, which):
    """consumer-groups --reset-offsets --from-file reads its CSV once the group is known."""
    path = endless_files[which]
    result = run(["consumer-groups", "--bootstrap-server", broker.bootstrap, "--reset-offsets", "--group", f"g-{uuid.uuid4().hex[:6]}",
                  "--from-file", str(path), "--dry-run"], memory_limit=MEMORY_LIMIT)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr, result
    bound = "it is larger than" if which == "huge" else "a line is longer than"
    [line] = result.stdout.splitlines() + result.stderr.splitlines()
    assert line.startswith(f"Error: Cannot read --from-file {path}: {bound} "), result


def test_the_bounded_reader_keeps_lines_under_the_bound_and_splits_nothing(tmp_path):
    from kcli.input_files import Bounds, read_bytes

    text = b"".join(b"x" * n + b"\n" for n in (0, 10, 100, 1000)) + b"tail"
    path = tmp_path / "f"
    path.write_bytes(text)
    assert read_bytes(path, "file", Bounds(max_bytes=len(text), max_line=1000)) == text
    from kcli.errors import KcliError

    with pytest.raises(KcliError, match="a line is longer than 999 bytes"):
        read_bytes(path, "file", Bounds(max_bytes=len(text), max_line=999))
    with pytest.raises(KcliError, match="larger than"):
        read_bytes(path, "file", Bounds(max_bytes=len(text) - 1, max_line=None))
