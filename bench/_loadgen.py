"""The load generator of bench/broker.py: one confluent-kafka client per process, the same for every broker.

Run as ``python bench/_loadgen.py MODE JSON`` where JSON holds the mode's parameters (or ``@FILE``, a
file holding them, deleted once read). Each mode
prints one JSON line with its result on stdout (the latency consumer first prints a ``ready``
line); diagnostics go to stderr. Modes:

- ``mock``: host the librdkafka mock cluster (one broker) and print its bootstrap address; poll it
  until SIGTERM or stdin closes.
- ``produce``: with ``warmup``, first a few acknowledged records to each partition (timed apart);
  then send ``count`` values of ``value_size`` bytes to the given partitions, an equal share each,
  in runs of ``run_bytes`` per partition (as a sticky partitioner does), timed to the last
  acknowledgement. With ``producers`` > 1, that many producers (each its own connection) take the
  runs in turn.
- ``consume``: read every partition from the beginning with assign() (no group commits) until
  ``count`` records arrived (or none came for ``idle_seconds``), and time it; then count, untimed,
  what still arrives within ``drain_seconds`` (records past the acknowledged count).
- ``latency-produce`` / ``latency-consume``: send values carrying their send time at a fixed rate
  with linger.ms=0 (from ``producers`` producers in turn, 1 by default); the consumer (from the
  partitions' beginning, or with ``from_end`` their end) takes receive time - send time per record.
- ``group-join``: ``members - 1`` consumers subscribe in one group and settle; then, ``rounds``
  times, one more member subscribes and the time until every member holds its share of the new
  assignment is taken, and the newcomer leaves again (bench/groups.py).
- ``commit``: one consumer commits offsets for its assigned partitions synchronously, ``count``
  times, as a simple consumer (no subscription) does.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, Producer, TopicPartition

ONE_MIB = 1024 * 1024
# Values from the latency producer: "<sequence> <monotonic send ns> " then padding.
LATENCY_VALUE = re.compile(rb"(\d+) (\d+) ")


def producer_config(bootstrap: str, *, linger_ms: int, compression: str = "none", acks: int | str = 1) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "linger.ms": linger_ms,
        "batch.size": ONE_MIB,
        "message.max.bytes": ONE_MIB,
        "acks": acks,
        "compression.type": compression,
        "queue.buffering.max.messages": 1_000_000,
        # Only failures reach the Python callback: a callback per record would load the generator.
        "delivery.report.only.error": True,
    }


def consumer_config(bootstrap: str, fetch_wait_ms: int = 500) -> dict[str, Any]:
    # librdkafka insists on a group.id even for assign(); nothing is ever committed to it.
    return {
        "bootstrap.servers": bootstrap,
        "fetch.wait.max.ms": fetch_wait_ms,
        # Once a partition's local queue passes queued.min.messages, librdkafka postpones its next
        # fetch by this much (1000 ms by default): a reader of a million small records passes it
        # again and again and stalls for whole seconds, against either broker.
        "fetch.queue.backoff.ms": 10,
        "group.id": "kcli-bench",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
    }


def value_pool(size: int, count: int = 4096) -> list[bytes]:
    """Distinct JSON-like values of exactly ``size`` bytes: field names repeat, numbers vary,
    so compression finds something, as in real event streams."""
    rng = random.Random(20261121)
    words = ["click", "view", "purchase", "signup", "logout", "search", "share", "comment"]
    pool = []
    for i in range(count):
        parts = [b'{"id":%d,"user":"user-%d","ts":%d,"event":"%s"' % (i, rng.randrange(100_000), 1_700_000_000_000 + rng.randrange(10**9), words[rng.randrange(8)].encode())]
        while sum(map(len, parts)) < size:
            parts.append(b',"k%d":%d' % (rng.randrange(50), rng.randrange(10**6)))
        pool.append(b"".join(parts)[: size - 1] + b"}")
    return pool


def log_to_stderr(name: str) -> logging.Logger:
    logger = logging.getLogger(name)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger


def emit(result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


# --- mock cluster -------------------------------------------------------------------------------


class _BootstrapFinder(logging.Handler):
    """Catches librdkafka's 'Mock cluster enabled: ... replaced with HOST:PORT' log line."""

    def __init__(self) -> None:
        super().__init__()
        self.address: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        match = re.search(r"replaced with (\S+)", record.getMessage())
        if match and self.address is None:
            self.address = match.group(1).split(",")[0]


def run_mock(params: dict[str, Any]) -> None:
    logger = log_to_stderr("mock")
    finder = _BootstrapFinder()
    logger.addHandler(finder)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    host = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "127.0.0.1:1", "logger": logger})
    deadline = time.monotonic() + float(params.get("start_timeout", 30))
    while finder.address is None and not stop.is_set():
        if time.monotonic() > deadline:
            sys.exit("the mock cluster did not report its address")
        host.poll(0.05)
    emit({"bootstrap": finder.address, "pid": os.getpid()})
    while not stop.is_set():
        host.poll(0.2)


# --- throughput ---------------------------------------------------------------------------------


def produce_runs(targets: list[tuple[str, int]], count: int, run: int) -> Iterator[tuple[str, int, int]]:
    """The order both load generators produce in: ``(topic, partition, n)``, a run of up to ``run``
    records to each partition in turn, until every partition has its share of ``count``."""
    base, extra = divmod(count, len(targets))
    remaining = [base + (1 if i < extra else 0) for i in range(len(targets))]
    while any(remaining):
        for index, (topic, partition) in enumerate(targets):
            n = min(run, remaining[index])
            remaining[index] -= n
            yield topic, partition, n


def run_produce(params: dict[str, Any]) -> None:
    targets = [tuple(t) for t in params["partitions"]]
    count, size = params["count"], params["value_size"]
    errors: list[str] = []

    def on_error(err, msg) -> None:
        if err is not None and len(errors) < 20:
            errors.append(str(err))

    config = producer_config(params["bootstrap"], linger_ms=params.get("linger_ms", 5), compression=params["compression"], acks=params.get("acks", 1))
    config["on_delivery"] = on_error
    producers = connected_producers(config, targets, params.get("producers", 1))
    pool = value_pool(size)
    warmup_records, warmup_seconds = warm_up(producers[0], targets, size) if params.get("warmup") else (0, 0.0)
    mask = len(pool) - 1
    run = max(1, params["run_bytes"] // size)
    sent = 0
    start = time.perf_counter()
    for index, (topic, partition, n) in enumerate(produce_runs(targets, count, run)):
        producer = producers[index % len(producers)]
        produce, poll = producer.produce, producer.poll
        for _ in range(n):
            while True:
                try:
                    produce(topic, pool[sent & mask], partition=partition)
                    break
                except BufferError:
                    poll(0.001)
            sent += 1
        poll(0)
    deadline = time.monotonic() + params.get("timeout", 300)
    left = sum(producer.flush(max(0.0, deadline - time.monotonic())) for producer in producers)
    elapsed = time.perf_counter() - start
    emit({"seconds": elapsed, "records": count, "bytes": count * size, "undelivered": left, "errors": errors, "warmup_records": warmup_records, "warmup_seconds": warmup_seconds})


def connected_producers(config: dict[str, Any], targets: list[tuple[str, int]], count: int) -> list[Producer]:
    """``count`` producers with ``config``, each with the targets' metadata (and so its connection) in hand."""
    producers = [Producer(config) for _ in range(count)]
    for producer in producers:
        for topic in sorted({t for t, _ in targets}):
            producer.list_topics(topic, timeout=30)
    return producers


def warm_up(producer: Producer, targets: list[tuple[str, int]], value_size: int) -> tuple[int, float]:
    """Records to each partition, acknowledged, before the timed run; (records sent, seconds).

    A fresh partition's first appends cost a broker with files more than the next ones: the files
    come into being, and the first index entry is written once more than index.interval.bytes
    (4096) bytes were appended. So each partition gets a little over 4 KiB in one round, then one
    record more; the values are random bytes, so that they still weigh 4 KiB once compressed."""
    first_round = -(-4200 // value_size)
    start = time.perf_counter()
    for records in (first_round, 1):
        for topic, partition in targets:
            for _ in range(records):
                producer.produce(topic, os.urandom(value_size), partition=partition)
        if producer.flush(60):
            raise KafkaException("the warm-up records were not all delivered")
    return (first_round + 1) * len(targets), time.perf_counter() - start


def total_available(consumer: Consumer, partitions: list[TopicPartition]) -> tuple[int, int]:
    """(records between the low and high watermarks, partitions whose log no longer starts at 0)."""
    available = trimmed = 0
    for tp in partitions:
        low, high = consumer.get_watermark_offsets(tp, timeout=10)
        available += high - low
        trimmed += low > 0
    return available, trimmed


class FetchStatistics:
    """librdkafka's statistics (statistics.interval.ms), as the consumer reports them: the Fetch
    requests it sent and the bytes it received, summed over its broker connections."""

    INTERVAL_MS = 100

    def __init__(self) -> None:
        self.latest: dict[str, int] = {"fetches": 0, "rx_bytes": 0}

    def __call__(self, text: str) -> None:
        brokers = [b for b in json.loads(text)["brokers"].values() if b.get("nodeid", -1) >= 0]
        self.latest = {"fetches": sum(b["req"].get("Fetch", 0) for b in brokers), "rx_bytes": sum(b["rxbytes"] for b in brokers)}


def run_consume(params: dict[str, Any]) -> None:
    count = params["count"]
    config = consumer_config(params["bootstrap"])
    statistics = None
    if params.get("fetch_statistics"):
        statistics = FetchStatistics()
        config.update({"statistics.interval.ms": FetchStatistics.INTERVAL_MS, "stats_cb": statistics})
    consumer = Consumer(config)
    try:
        partitions = [TopicPartition(t, p, OFFSET_BEGINNING) for t, p in params["partitions"]]
        available, trimmed = total_available(consumer, partitions)
        received = value_bytes = 0
        errors: list[str] = []
        deadline = time.monotonic() + params.get("timeout", 300)
        start = time.perf_counter()
        consumer.assign(partitions)
        idle_seconds = params.get("idle_seconds", 15.0)
        last_progress = time.monotonic()
        while received < count and time.monotonic() < deadline:
            # consume() waits for all the messages it asks for (or the timeout): never ask for more than are left.
            messages = consumer.consume(min(10_000, count - received), 0.5)
            for message in messages:
                if message.error() is not None:
                    if len(errors) < 20:
                        errors.append(str(message.error()))
                    continue
                received += 1
                value_bytes += len(message.value())
            if messages:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > idle_seconds:
                break  # the broker returns no more: fewer records than were acknowledged
        elapsed = time.perf_counter() - start
        # Untimed: whatever the broker still returns past the expected count (duplicates, or more
        # records than it acknowledged) shows up here.
        extra = 0
        at_end = None
        if statistics is not None:
            # The first report after the timed read: at most one interval past its end.
            before = statistics.latest
            while statistics.latest is before:
                extra += sum(1 for message in consumer.consume(1, 0.05) if message.error() is None)
            at_end = statistics.latest
        drain_until = time.monotonic() + params.get("drain_seconds", 1.0)
        while time.monotonic() < drain_until:
            extra += sum(1 for message in consumer.consume(10_000, 0.2) if message.error() is None)
    finally:
        consumer.close()
    emit({"seconds": elapsed, "records": received, "extra": extra, "bytes": value_bytes, "available": available, "trimmed_partitions": trimmed, "errors": errors, "fetch_statistics": at_end})


# --- latency ------------------------------------------------------------------------------------


def monotonic_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def run_latency_produce(params: dict[str, Any]) -> None:
    targets = [tuple(t) for t in params["partitions"]]
    rate, size = params["rate"], params["value_size"]
    total = params["warmup_count"] + params["count"]
    producers = connected_producers(producer_config(params["bootstrap"], linger_ms=0, acks=params.get("acks", 1)), targets, params.get("producers", 1))
    start = time.perf_counter()
    for seq in range(total):
        due = start + seq / rate
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        topic, partition = targets[seq % len(targets)]
        producer = producers[seq % len(producers)]
        head = b"%d %d " % (seq, monotonic_ns())
        producer.produce(topic, head.ljust(size, b"x"), partition=partition)
        producer.poll(0)
    left = sum(producer.flush(30) for producer in producers)
    emit({"sent": total, "seconds": time.perf_counter() - start, "undelivered": left})


def percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


def run_latency_consume(params: dict[str, Any]) -> None:
    warmup, count = params["warmup_count"], params["count"]
    consumer = Consumer(consumer_config(params["bootstrap"], params["fetch_wait_ms"]))
    latencies_ms: list[float] = []
    seen = 0
    try:
        # From the end when the partitions hold records already (bench/scaling.py's throughput phase).
        start = OFFSET_END if params.get("from_end") else OFFSET_BEGINNING
        consumer.assign([TopicPartition(t, p, start) for t, p in params["partitions"]])
        # Fetches are in flight (long polls) before the producer is told to start.
        settle = time.monotonic() + params.get("settle_seconds", 1.0)
        while time.monotonic() < settle:
            consumer.poll(0.1)
        emit({"ready": True})
        deadline = time.monotonic() + params.get("timeout", 120)
        while seen < warmup + count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            received = monotonic_ns()
            if message is None or message.error() is not None:
                continue
            match = LATENCY_VALUE.match(message.value())
            seen += 1
            if match and int(match.group(1)) >= warmup:
                latencies_ms.append((received - int(match.group(2))) / 1e6)
    finally:
        consumer.close()
    latencies_ms.sort()
    if not latencies_ms:
        emit({"samples": 0, "expected": count})
        return
    emit({
        "samples": len(latencies_ms),
        "expected": count,
        "p50_ms": percentile(latencies_ms, 0.50),
        "p99_ms": percentile(latencies_ms, 0.99),
        "max_ms": latencies_ms[-1],
    })


# --- groups -------------------------------------------------------------------------------------


def group_consumer_config(bootstrap: str, group: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": params.get("session_timeout_ms", 10_000),
        "heartbeat.interval.ms": params.get("heartbeat_interval_ms", 100),
        "partition.assignment.strategy": params.get("assignor", "range"),
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }


class GroupMember:
    """A subscribed consumer polled by its own thread; remembers when it last got an assignment."""

    def __init__(self, config: dict[str, Any], topics: list[str]) -> None:
        self.assignment: frozenset[tuple[str, int]] | None = None
        self.assigned_at = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.consumer = Consumer(config)
        self.consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self.assignment = frozenset((p.topic, p.partition) for p in partitions)
            self.assigned_at = time.perf_counter()

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self.assignment = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.02)

    def state(self) -> tuple[frozenset[tuple[str, int]] | None, float]:
        with self._lock:
            return self.assignment, self.assigned_at

    def leave(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


def settled(members: list[GroupMember], partitions: set[tuple[str, int]], since: float) -> float | None:
    """The time the last member got its assignment, once every member holds one given after ``since``
    and together they own each partition exactly once; else None."""
    owned: list[tuple[str, int]] = []
    last = since
    for member in members:
        assignment, at = member.state()
        if assignment is None or at < since:
            return None
        owned.extend(assignment)
        last = max(last, at)
    return last if len(owned) == len(set(owned)) and set(owned) == partitions else None


def wait_settled(members: list[GroupMember], partitions: set[tuple[str, int]], since: float, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = settled(members, partitions, since)
        if done is not None:
            return done
        time.sleep(0.002)
    raise KafkaException(f"the group did not settle within {timeout:g} s")


def run_group_join(params: dict[str, Any]) -> None:
    topics, partitions = params["topics"], {tuple(p) for p in params["partitions"]}
    config = group_consumer_config(params["bootstrap"], params["group"], params)
    timeout = params.get("timeout", 120)
    members = [GroupMember(config, topics) for _ in range(params["members"] - 1)]
    try:
        wait_settled(members, partitions, 0.0, timeout)
        times = []
        for _ in range(params["rounds"]):
            joined = time.perf_counter()
            newcomer = GroupMember(config, topics)
            done = wait_settled([*members, newcomer], partitions, joined, timeout)
            times.append(done - joined)
            left = time.perf_counter()
            newcomer.leave()
            wait_settled(members, partitions, left, timeout)
    finally:
        for member in members:
            member.leave()
    emit({"seconds": times})


def run_commit(params: dict[str, Any]) -> None:
    consumer = Consumer({"bootstrap.servers": params["bootstrap"], "group.id": params["group"], "enable.auto.commit": False})
    try:
        partitions = [TopicPartition(t, p) for t, p in params["partitions"]]
        consumer.assign(partitions)
        count = params["count"]
        start = time.perf_counter()
        for i in range(count):
            consumer.commit(offsets=[TopicPartition(tp.topic, tp.partition, i + 1) for tp in partitions], asynchronous=False)
        elapsed = time.perf_counter() - start
        committed = consumer.committed(partitions, timeout=10)
    finally:
        consumer.close()
    emit({"seconds": elapsed, "commits": count, "partitions": len(partitions), "last_committed": sorted({tp.offset for tp in committed})})


MODES = {
    "mock": run_mock,
    "produce": run_produce,
    "consume": run_consume,
    "latency-produce": run_latency_produce,
    "latency-consume": run_latency_consume,
    "group-join": run_group_join,
    "commit": run_commit,
}


def parameters(argument: str) -> str:
    """The JSON argument, or the contents of the file ``@FILE`` names (deleted once read)."""
    if not argument.startswith("@"):
        return argument
    path = argument[1:]
    try:
        with open(path) as file:
            return file.read()
    finally:
        os.unlink(path)


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in MODES:
        sys.exit(f"usage: _loadgen.py {{{','.join(MODES)}}} JSON")
    try:
        MODES[sys.argv[1]](json.loads(parameters(sys.argv[2])))
    except KafkaException as e:
        sys.exit(f"{sys.argv[1]}: {e}")


if __name__ == "__main__":
    main()
