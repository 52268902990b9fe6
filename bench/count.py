"""Record counting benchmark: ``kcli get-offsets --count``'s header walk (``tools/record_counts``).

Uncompressed RecordBatch v2 batches of ``--record-size`` byte values, ``--per-batch`` records each
(the default, 150 x 100 B, is what a Java producer's 16 KiB batch.size holds), counted three ways,
each reported as records/s on the counting process's one core (wall clock and CPU time):

  - memory: one buffer of batches, ``RecordCount.feed`` alone (the ceiling);
  - files:  the same batches as Kafka segment files (1 GiB segments, as log.segment.bytes) in a
            partition directory, counted as ``--log-dirs`` counts them (mapped, warm page cache);
  - fetch:  the same number of records produced to a kcli broker (confluent-kafka, big batches)
            and counted through Fetch as ``--bootstrap-server`` counts them (broker on the other
            core; its CPU is not the counter's).

Goal: >= 5 M records/s counted on one core for uncompressed batches.

Usage: .venv/bin/python bench/count.py [--records N] [--per-batch N] [--record-size N] [--skip-fetch]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from kcli.common import TopicPartition  # noqa: E402
from kcli.storage import records as rec  # noqa: E402
from kcli.tools.get_offsets_command import count_files, count_online  # noqa: E402
from kcli.tools.record_counts import RecordCount  # noqa: E402

SEGMENT_BYTES = 1 << 30


def batches(records: int, per_batch: int, record_size: int) -> bytes:
    """``records`` records in uncompressed batches; one batch is built and its offsets patched."""
    value = b"v" * record_size
    template = bytearray(rec.build_batch([rec.NewRecord(None, value, 1_700_000_000_000)] * per_batch))
    out = bytearray()
    for base in range(0, records - records % per_batch, per_batch):
        rec.set_base_offset(template, 0, base)
        out += template
    left = records % per_batch
    if left:
        out += rec.build_batch([rec.NewRecord(None, value, 1_700_000_000_000)] * left, base_offset=records - left)
    return bytes(out)


def timed(work) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def report(name: str, records: int, wall: float, cpu: float, counted: int) -> None:
    assert counted == records, f"{name}: counted {counted}, expected {records}"
    print(f"{name:7s} {records:>11,d} records  wall {wall:7.3f} s  {records / wall / 1e6:7.2f} M records/s  cpu {cpu:7.3f} s  {records / cpu / 1e6:7.2f} M records/s per core")


def bench_memory(data: bytes, records: int) -> None:
    def work() -> int:
        tally = RecordCount()
        tally.feed(data)
        return tally.records

    work()  # warm-up
    report("memory", records, *timed(work))


def bench_files(data: bytes, records: int, root: Path) -> None:
    partition = root / "bench-count-0"
    partition.mkdir()
    position = 0
    while position < len(data):
        base = rec.peek_batch_header(data, position)[0]
        end = position
        while end < len(data) and end - position + rec.peek_batch_header(data, end)[1] <= SEGMENT_BYTES:
            end += rec.peek_batch_header(data, end)[1]
        (partition / f"{base:020d}.log").write_bytes(data[position:end])
        position = end
    dirs = {TopicPartition("bench-count", 0): partition}
    count_files(dirs)  # warm the page cache
    report("files", records, *timed(lambda: count_files(dirs)[TopicPartition("bench-count", 0)].records))


def bench_fetch(records: int, per_batch: int, record_size: int, root: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from broker import KcliBroker
    from kcli.tools._admin_common import AdminSession, client_settings

    broker = KcliBroker(root / "broker").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("bench-count", 1, 1)])["bench-count"].result(30)
        producer = Producer({
            "bootstrap.servers": broker.bootstrap, "linger.ms": 50, "batch.size": per_batch * (record_size + 10), "batch.num.messages": per_batch,
            "compression.type": "none", "queue.buffering.max.messages": 1_000_000, "acks": 1,
        })
        value = b"v" * record_size
        for i in range(records):
            while True:
                try:
                    producer.produce("bench-count", value, partition=0)
                    break
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(120) == 0
        del producer  # closed before the broker stops, so librdkafka logs no disconnection
        tp = TopicPartition("bench-count", 0)
        with AdminSession(client_settings({}, bootstrap=broker.bootstrap, client_id="bench-count")) as session:
            count_online(session, [tp])  # warm-up: connections, metadata, page cache
            wall, cpu, counts = timed(lambda: count_online(session, [tp]))
        report("fetch", records, wall, cpu, counts[tp].records)
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--per-batch", type=int, default=150)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--fetch-records", type=int, default=1_000_000, help="records produced for the Fetch case (producing dominates its set-up)")
    parser.add_argument("--skip-fetch", action="store_true")
    args = parser.parse_args()
    data = batches(args.records, args.per_batch, args.record_size)
    print(f"{args.records:,d} records of {args.record_size} B, {args.per_batch} per uncompressed batch, {len(data) / 2**20:,.0f} MiB")
    bench_memory(data, args.records)
    with tempfile.TemporaryDirectory(prefix="kcli-bench-count-") as tmp:
        bench_files(data, args.records, Path(tmp))
        del data
        if not args.skip_fetch:
            bench_fetch(args.fetch_records, args.per_batch, args.record_size, Path(tmp))


if __name__ == "__main__":
    main()
