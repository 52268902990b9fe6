"""A fixed series of Produce requests to a fresh kcli broker, for load-independent figures.

Timings on a shared machine vary from run to run; what a broker does for a given series of
requests does not. This script starts ``kcli broker start`` from a source tree (``--tree``, by
default this one) under an optional wrapper command (``--wrap``: ``strace -c -f``,
``valgrind --tool=callgrind``) or cProfile (``--cprofile``), creates the topics of bench/broker.py's
1 KiB case (160 partitions), writes the untimed warm-up records of bench/_loadgen.py to every
partition, then sends the measured requests, every answer checked:

- by default, byte-identical Produce v7 requests built here, ``--in-flight`` at a time: each holds
  one batch of ``--run`` records (bench/broker.py's 256 KiB runs) for each of ``--per-request``
  partitions, partitions in turn, until every partition holds its share of ``--records``;
- with ``--client loadgen``, bench/_loadgen.py's librdkafka producer itself (its requests vary with
  timing); ``--record FILE`` keeps them (bench/_record_produce.py runs the broker);
- with ``--frames FILE``, such a recording, byte for byte (librdkafka's Produce v10 requests), so
  that two trees get exactly the same requests.

With ``--read-back`` the measured phase is instead the read that follows the produce: Fetch v4
requests built here (every unfinished partition from its next offset, 1 MiB per partition, 50 MiB
per answer, as librdkafka's defaults ask) until every partition is read to its high watermark, so
that two trees' fetch paths can be compared on the same data.

Around the measured phase it runs ``--before`` and ``--after`` (``{pid}`` is the broker's process),
e.g. ``callgrind_control -z {pid}`` and ``callgrind_control -d {pid}``, so that a callgrind count
holds the produce path alone. It prints the broker's minor page faults (fresh pages touched) and
CPU seconds over the measured phase, and the wall time (as noisy as the machine).

Usage: .venv/bin/python bench/produce_replay.py [--tree DIR] [--records N] [--value-size B] [--partitions N]
           [--run N] [--per-request N] [--in-flight N] [--client replay|loadgen [--compression C]] [--record FILE | --frames FILE]
           [--prelude N] [--read-back] [--wrap CMD] [--before CMD] [--after CMD] [--cprofile FILE] [--override KEY=VALUE] [--dir DIR]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from crc32c import crc32c

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _loadgen import value_pool  # noqa: E402  (the benchmark's own values)

PRODUCE, PRODUCE_VERSION = 0, 7
_LISTENING = re.compile(r"Awaiting socket connections on [^\s]+:(\d+)\.")


# --- the wire format, written here so that neither tree's code builds what it is measured on ---


def varint(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def record_batch(values: list[bytes], timestamp_ms: int) -> bytes:
    """A v2 RecordBatch, no compression, no producer id, null keys, no headers."""
    records = bytearray()
    for delta, value in enumerate(values):
        body = b"\x00" + varint(0) + varint(delta) + varint(-1) + varint(len(value)) + value + varint(0)
        records += varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, timestamp_ms, timestamp_ms, -1, -1, -1, len(values)) + records
    after_length = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def produce_request(correlation_id: int, batches: list[tuple[str, int, bytes]]) -> bytes:
    by_topic: dict[str, list[tuple[int, bytes]]] = collections.defaultdict(list)
    for topic, partition, batch in batches:
        by_topic[topic].append((partition, batch))
    body = bytearray(struct.pack(">hhih", PRODUCE, PRODUCE_VERSION, correlation_id, 6) + b"replay")
    body += struct.pack(">hhii", -1, 1, 30_000, len(by_topic))  # no transactional id, acks=1
    for topic, partitions in by_topic.items():
        name = topic.encode()
        body += struct.pack(">h", len(name)) + name + struct.pack(">i", len(partitions))
        for partition, batch in partitions:
            body += struct.pack(">ii", partition, len(batch)) + batch
    return struct.pack(">i", len(body)) + bytes(body)


def read_produce_response(sock: socket.socket) -> tuple[int, list[tuple[str, int, int, int]]]:
    """(correlation id, [(topic, partition, error code, base offset)]) of a Produce v7 response."""
    size = struct.unpack(">i", read_exactly(sock, 4))[0]
    data = read_exactly(sock, size)
    correlation_id, topics = struct.unpack_from(">ii", data, 0)
    position, answers = 8, []
    for _ in range(topics):
        length = struct.unpack_from(">h", data, position)[0]
        name = data[position + 2 : position + 2 + length].decode()
        position += 2 + length
        partitions = struct.unpack_from(">i", data, position)[0]
        position += 4
        for _ in range(partitions):
            index, error, base_offset = struct.unpack_from(">ihq", data, position)
            answers.append((name, index, error, base_offset))
            position += 4 + 2 + 8 + 8 + 8  # log_append_time and log_start_offset follow
    return correlation_id, answers


def read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise RuntimeError("the broker closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# --- the broker ---------------------------------------------------------------------------------


class Broker:
    def __init__(
        self, tree: Path, log_dir: Path, wrap: list[str], profile: Path | None = None, record: Path | None = None, overrides: list[str] = ()
    ) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
        profiler = ["-m", "cProfile", "-o", str(profile)] if profile else []
        if record is not None:
            env["KCLI_RECORD_PRODUCE"] = str(record)
            profiler = [str(HERE / "_record_produce.py")]
        else:
            profiler += ["-m", "kcli"]
        args = [*wrap, sys.executable, *profiler, "broker", "start", "--override", f"log.dirs={log_dir}", "--override", "listeners=PLAINTEXT://127.0.0.1:0"]
        args += [arg for override in overrides for arg in ("--override", override)]
        self.process = subprocess.Popen(args, cwd=tree, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.port = 0
        self.tail: collections.deque[str] = collections.deque(maxlen=40)
        self._started = threading.Event()
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self) -> None:
        for line in self.process.stderr:
            self.tail.append(line.rstrip("\n"))
            match = _LISTENING.search(line)
            if match and not self.port:
                self.port = int(match.group(1))
            if "] started (" in line:
                self._started.set()

    def wait_started(self, timeout: float) -> None:
        if not self._started.wait(timeout) or self.process.poll() is not None:
            raise RuntimeError("the broker did not start:\n" + "\n".join(self.tail))

    def python_pid(self) -> int:
        """The broker's Python process: the started process itself, or the wrapper's child running it."""
        pids = [self.process.pid]
        while pids:
            pid = pids.pop(0)
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"kcli" in cmdline and Path(cmdline[0].decode()).name.startswith("python"):
                return pid
            for task in Path(f"/proc/{pid}/task").iterdir():
                children = (task / "children").read_text().split()
                pids.extend(int(child) for child in children)
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(300)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def minor_faults(pid: int) -> int:
    """Pages the process touched for the first time since it started (minflt of /proc/PID/stat):
    each is a fresh page handed out by the kernel, whose cost a loaded or ballooned machine multiplies."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


def run_hook(command: str | None, pid: int) -> None:
    if command:
        subprocess.run(shlex.split(command.format(pid=pid)), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)


FETCH, FETCH_VERSION = 1, 4


def fetch_request(correlation_id: int, positions: dict[tuple[str, int], int]) -> bytes:
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), offset in positions.items():
        by_topic.setdefault(topic, []).append((partition, offset))
    body = struct.pack(">hhi", FETCH, FETCH_VERSION, correlation_id) + _string("replay")
    body += struct.pack(">iiiib", -1, 500, 1, 50 * 1024 * 1024, 0) + struct.pack(">i", len(by_topic))
    for topic, partitions in by_topic.items():
        body += _string(topic) + struct.pack(">i", len(partitions))
        for partition, offset in partitions:
            body += struct.pack(">iqi", partition, offset, 1024 * 1024)
    return struct.pack(">i", len(body)) + body


def read_fetch_response(sock: socket.socket) -> tuple[int, list[tuple[str, int, int, int, int]]]:
    """(correlation id, [(topic, partition, error, high watermark, next offset after the whole
    batches returned, or -1 when none)])."""
    data = read_exactly(sock, struct.unpack(">i", read_exactly(sock, 4))[0])
    correlation_id, _throttle, topics = struct.unpack_from(">iii", data, 0)
    pos, answers = 12, []
    for _ in range(topics):
        (length,) = struct.unpack_from(">h", data, pos)
        topic = data[pos + 2 : pos + 2 + length].decode()
        pos += 2 + length
        (partitions,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(partitions):
            partition, error, high_watermark, _lso, aborted = struct.unpack_from(">ihqqi", data, pos)
            pos += 26 + max(aborted, 0) * 16
            (size,) = struct.unpack_from(">i", data, pos)
            pos += 4
            end, batch, next_offset = pos + max(size, 0), pos, -1
            while batch + 12 <= end:
                base_offset, batch_length = struct.unpack_from(">qi", data, batch)
                if batch + 12 + batch_length > end:
                    break  # a partial batch at the end of the answer
                next_offset = base_offset + struct.unpack_from(">i", data, batch + 23)[0] + 1
                batch += 12 + batch_length
            answers.append((topic, partition, error, high_watermark, next_offset))
            pos = end
    return correlation_id, answers


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def read_back(args: argparse.Namespace, broker: Broker, targets: list[tuple[str, int]]) -> None:
    """The measured phase of ``--read-back``: every partition read from offset 0 to its high
    watermark, one Fetch at a time."""
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=args.start_timeout)
    pid = broker.python_pid()
    positions = {target: 0 for target in targets}
    fetches = records_bytes = 0
    run_hook(args.before, pid)
    cpu_before, faults_before, start = cpu_seconds(pid), minor_faults(pid), time.perf_counter()
    while positions:
        fetches += 1
        sock.sendall(fetch_request(fetches, positions))
        correlation_id, answers = read_fetch_response(sock)
        if correlation_id != fetches:
            raise RuntimeError(f"Fetch {fetches} answered as {correlation_id}")
        for topic, partition, error, high_watermark, next_offset in answers:
            if error:
                raise RuntimeError(f"Fetch of {topic}-{partition} answered error {error}")
            if next_offset > 0:
                positions[(topic, partition)] = next_offset
            if positions[(topic, partition)] >= high_watermark:
                del positions[(topic, partition)]
    elapsed, cpu, faults = time.perf_counter() - start, cpu_seconds(pid) - cpu_before, minor_faults(pid) - faults_before
    run_hook(args.after, pid)
    sock.close()
    print(f"read back: {fetches} Fetch requests for {len(targets)} partitions: broker minor page faults {faults:,}; "
          f"{elapsed:.2f} s wall, broker CPU {cpu:.2f} s (wall and CPU depend on the machine's load)", flush=True)


def replay(args: argparse.Namespace, workdir: Path) -> None:
    broker = Broker(args.tree.resolve(), workdir / "logs", shlex.split(args.wrap or ""), args.cprofile, args.record, args.override)
    try:
        broker.wait_started(args.start_timeout)
        bootstrap = f"127.0.0.1:{broker.port}"
        topics = [f"replay-{i:02d}" for i in range(-(-args.partitions // 4))]
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
        for future in admin.create_topics([NewTopic(t, 4, 1) for t in topics], operation_timeout=60, request_timeout=120).values():
            future.result(timeout=180)
        del admin  # no reconnection attempts once the broker stops
        targets = [(t, p) for t in topics for p in range(4)][: args.partitions]
        if args.prelude:
            run_prelude(admin_bootstrap=bootstrap, records=args.prelude)
        pool = value_pool(args.value_size)
        now_ms = int(time.time() * 1000)
        next_offset = {target: 0 for target in targets}
        sock = socket.create_connection(("127.0.0.1", broker.port), timeout=args.start_timeout)
        correlation = 0

        in_flight: collections.deque[tuple[int, list[tuple[str, int, int]]]] = collections.deque()

        def send(batches: list[tuple[str, int, list[bytes]]], window: int = 1) -> None:
            """Send one request; read answers while more than ``window - 1`` are outstanding."""
            nonlocal correlation
            correlation += 1
            sock.sendall(produce_request(correlation, [(t, p, record_batch(values, now_ms)) for t, p, values in batches]))
            expected = []
            for t, p, values in batches:
                expected.append((t, p, 0, next_offset[(t, p)]))
                next_offset[(t, p)] += len(values)
            in_flight.append((correlation, sorted(expected)))
            while len(in_flight) >= window:
                receive()

        def receive() -> None:
            want, expected = in_flight.popleft()
            got, answers = read_produce_response(sock)
            if got != want or sorted(answers) != expected:
                raise RuntimeError(f"request {want}: answered {got} {sorted(answers)[:4]}..., expected {expected[:4]}...")

        # The warm-up of bench/_loadgen.py: a little over 4 KiB to each partition, then one record more.
        first_round = -(-4200 // args.value_size)
        for records in (first_round, 1):
            for t, p in targets:
                send([(t, p, [pool[(i * 7 + p) % len(pool)] for i in range(records)])])
        if args.client == "loadgen":
            sock.close()
            return produce_with_loadgen(args, broker, bootstrap, targets, warmup=False)
        if args.frames:
            sock.close()
            replay_frames(args, broker)
            if args.read_back:
                read_back(args, broker, targets)
            return
        pid = broker.python_pid()
        produce_hooks = not args.read_back
        if produce_hooks:
            run_hook(args.before, pid)
        cpu_before, faults_before, start = cpu_seconds(pid), minor_faults(pid), time.perf_counter()
        requests_before, sent = correlation, 0
        share, extra = divmod(args.records, len(targets))
        remaining = [share + (1 if i < extra else 0) for i in range(len(targets))]
        pending: list[tuple[str, int, list[bytes]]] = []
        while any(remaining):
            for index, (t, p) in enumerate(targets):
                n = min(args.run, remaining[index])
                if not n:
                    continue
                remaining[index] -= n
                pending.append((t, p, [pool[(sent + i) & (len(pool) - 1)] for i in range(n)]))
                sent += n
                if len(pending) == args.per_request:
                    send(pending, args.in_flight)
                    pending = []
        if pending:
            send(pending, args.in_flight)
        while in_flight:
            receive()
        elapsed, cpu, faults = time.perf_counter() - start, cpu_seconds(pid) - cpu_before, minor_faults(pid) - faults_before
        if produce_hooks:
            run_hook(args.after, pid)
        sock.close()
        files = [path for path in (workdir / "logs").rglob("*") if path.is_file()]
        apparent = sum(path.stat().st_size for path in files)
        allocated = sum(path.stat().st_blocks * 512 for path in files)
        print(f"log dir: {len(files)} files, {apparent / 1e6:,.1f} MB apparent, {allocated / 1e6:,.1f} MB allocated")
        print(f"{correlation - requests_before} Produce requests, {sent:,} records of {args.value_size} B to {len(targets)} partitions "
              f"({sent * args.value_size / 1e6:.1f} MB of values): broker minor page faults {faults:,}; {elapsed:.2f} s wall, broker CPU {cpu:.2f} s "
              f"({sent / elapsed:,.0f} records/s; wall and CPU depend on the machine's load)")
        if args.read_back:
            read_back(args, broker, targets)
    finally:
        broker.stop()


def run_prelude(admin_bootstrap: str, records: int) -> None:
    """What bench/broker.py does before its first 1 KiB round: the 100 B cases (none, then lz4)
    into topics of their own (68 partitions), each read back, then deleted."""
    import json

    admin = AdminClient({"bootstrap.servers": admin_bootstrap, "log_level": 4})
    for compression in ("none", "lz4"):
        names = [f"prelude-{compression}-{i:02d}" for i in range(17)]
        for future in admin.create_topics([NewTopic(t, 4, 1) for t in names], operation_timeout=60, request_timeout=120).values():
            future.result(timeout=180)
        params = {"bootstrap": admin_bootstrap, "partitions": [(t, p) for t in names for p in range(4)], "count": records, "value_size": 100,
                  "compression": compression, "run_bytes": 256 * 1024, "warmup": True, "timeout": 600}
        done = subprocess.run([sys.executable, str(HERE / "_loadgen.py"), "produce", json.dumps(params)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
        if done.returncode:
            raise RuntimeError(f"the prelude's produce failed: {done.stderr[-2000:]}")
        warmup_records = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])["warmup_records"]
        params = {"bootstrap": admin_bootstrap, "partitions": params["partitions"], "count": records + warmup_records, "timeout": 600}
        done = subprocess.run([sys.executable, str(HERE / "_loadgen.py"), "consume", json.dumps(params)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
        if done.returncode:
            raise RuntimeError(f"the prelude's consume failed: {done.stderr[-2000:]}")
        for future in admin.delete_topics(names, operation_timeout=60, request_timeout=120).values():
            future.result(timeout=180)
    del admin


def replay_frames(args: argparse.Namespace, broker: Broker) -> None:
    """Send the Produce requests a recording holds (``--record``: librdkafka's, byte for byte),
    ``--in-flight`` at a time, each answer awaited in order."""
    data = args.frames.read_bytes()
    frames, position = [], 0
    while position < len(data):
        size = struct.unpack_from(">i", data, position)[0]
        frames.append(data[position : position + 4 + size])
        position += 4 + size
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=args.start_timeout)
    pid = broker.python_pid()
    hooks = not args.read_back
    for round_ in range(args.repeat):
        if round_ == 0 and hooks:
            run_hook(args.before, pid)
        cpu_before, faults_before, start = cpu_seconds(pid), minor_faults(pid), time.perf_counter()
        outstanding = 0
        for frame in frames:
            sock.sendall(frame)
            outstanding += 1
            while outstanding >= args.in_flight:
                read_exactly(sock, struct.unpack(">i", read_exactly(sock, 4))[0])
                outstanding -= 1
        while outstanding:
            read_exactly(sock, struct.unpack(">i", read_exactly(sock, 4))[0])
            outstanding -= 1
        elapsed, cpu, faults = time.perf_counter() - start, cpu_seconds(pid) - cpu_before, minor_faults(pid) - faults_before
        if round_ == 0 and hooks:
            run_hook(args.after, pid)
        print(f"round {round_ + 1}: {len(frames)} recorded Produce requests ({len(data) / 1e6:,.1f} MB) from {args.frames}: broker minor page faults {faults:,}; "
              f"{elapsed:.2f} s wall, broker CPU {cpu:.2f} s (wall and CPU depend on the machine's load)", flush=True)
    sock.close()


def produce_with_loadgen(args: argparse.Namespace, broker: Broker, bootstrap: str, targets: list[tuple[str, int]], warmup: bool = True) -> None:
    """bench/broker.py's produce case itself (librdkafka, warm-up included), in place of the fixed
    series: its requests vary with timing, so its counts are close from run to run, not equal."""
    import json

    params = {"bootstrap": bootstrap, "partitions": targets, "count": args.records, "value_size": args.value_size, "compression": args.compression,
              "run_bytes": args.run * args.value_size, "warmup": warmup, "timeout": 600}
    pid = broker.python_pid()
    run_hook(args.before, pid)
    cpu_before, faults_before = cpu_seconds(pid), minor_faults(pid)
    done = subprocess.run([sys.executable, str(HERE / "_loadgen.py"), "produce", json.dumps(params)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    cpu, faults = cpu_seconds(pid) - cpu_before, minor_faults(pid) - faults_before
    run_hook(args.after, pid)
    result = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    print(f"librdkafka: {result['records']:,} records of {args.value_size} B (and {result['warmup_records']:,} warm-up records) to {len(targets)} partitions: "
          f"broker minor page faults {faults:,}; {result['seconds']:.2f} s wall, broker CPU {cpu:.2f} s ({result['records'] / result['seconds']:,.0f} records/s; wall and CPU depend on the machine's load)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the source tree whose broker runs (default: this one)")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--value-size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=160)
    parser.add_argument("--run", type=int, default=256, help="records per batch (bench/broker.py's 256 KiB runs of 1 KiB values)")
    parser.add_argument("--per-request", type=int, default=4, help="partition batches per Produce request")
    parser.add_argument("--prelude", type=int, default=0, help="first produce and consume this many 100 B records (none, then lz4) in other topics, deleted after, as bench/broker.py's earlier cases")
    parser.add_argument("--client", choices=("replay", "loadgen"), default="replay", help="the fixed request series, or bench/_loadgen.py's librdkafka producer")
    parser.add_argument("--compression", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"), help="with --client loadgen: the producer's compression.type")
    parser.add_argument("--in-flight", type=int, default=1, help="requests sent before the first answer is awaited (librdkafka pipelines up to 5 here)")
    parser.add_argument("--record", type=Path, default=None, help="with --client loadgen: keep librdkafka's Produce requests (after the warm-up) in this file")
    parser.add_argument("--frames", type=Path, default=None, help="send these recorded Produce requests (after the warm-up) instead of the built ones")
    parser.add_argument("--repeat", type=int, default=1, help="with --frames: send the recording this many times (the hooks wrap the first)")
    parser.add_argument("--wrap", default=None, help="a command the broker runs under, e.g. 'strace -c -f -o /tmp/s.txt'")
    parser.add_argument("--read-back", action="store_true", help="measure the read that follows the produce (Fetch requests built here) instead of the produce")
    parser.add_argument("--before", default=None, help="a command run before the measured phase; {pid} is the broker's")
    parser.add_argument("--after", default=None, help="a command run after the measured phase; {pid} is the broker's")
    parser.add_argument("--cprofile", type=Path, default=None, help="run the broker under cProfile, its pstats written here")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="a broker config, as kcli broker start --override")
    parser.add_argument("--dir", default=None, help="where the broker's log dir goes (default: a temporary directory)")
    parser.add_argument("--start-timeout", type=float, default=600.0)
    args = parser.parse_args()
    if args.read_back and args.client == "loadgen":
        parser.error("--read-back reads what the built or recorded requests wrote: not with --client loadgen")
    workdir = Path(tempfile.mkdtemp(prefix="kcli-replay-", dir=args.dir))
    try:
        replay(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
