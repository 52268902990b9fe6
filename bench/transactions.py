"""Transactions benchmark: kcli's broker with confluent-kafka's transactional producer, and
kcli's own transactional producer beside it.

Prints, measured in one run against one ``kcli broker start`` process (the clients in this one),
for confluent-kafka's producer and then for kcli's:
  - transactions per second, each committing 100 records of 100 B across 4 partitions;
  - produce throughput of a transactional producer (a commit every 10,000 records) against an
    idempotent one of the same library, same records, same settings, in the same run, and their
    ratio (goal >= 0.7);
  - end-to-end latency (p50, p99) seen by a read_committed consumer while a producer sends
    1,000 msg/s in 100 ms transactions: from the send to the consumer's poll, which includes
    waiting for the commit, as it does for any read_committed reader.

Usage: .venv/bin/python bench/transactions.py [--quick] [--rounds N] [--dir DIR] [--override K=V ...]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker import KcliBroker, machine_line, verdict  # noqa: E402

RATIO_GOAL = 0.7
PARTITIONS = 4
VALUE = b"x" * 100
TIMEOUT = 60.0
_STAMP = struct.Struct(">d")


def create_topics(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in names]).values():
        future.result(TIMEOUT)


def producer(bootstrap: str, **extra) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1 << 20, **extra})


def transactions_per_second(bootstrap: str, topic: str, count: int, name: str) -> float:
    p = producer(bootstrap, **{"transactional.id": name})
    p.init_transactions(TIMEOUT)
    started = time.perf_counter()
    for _ in range(count):
        p.begin_transaction()
        for i in range(100):
            p.produce(topic, VALUE, partition=i % PARTITIONS)
        p.commit_transaction(TIMEOUT)
    return count / (time.perf_counter() - started)


def produce_rate(bootstrap: str, topic: str, records: int, transactional_id: str | None, per_transaction: int = 10_000) -> float:
    if transactional_id is None:
        p = producer(bootstrap, **{"enable.idempotence": True})
        p.produce(topic, VALUE, partition=0)  # the producer id and metadata, outside the clock,
        p.flush(TIMEOUT)                      # as init_transactions is for the other
    else:
        p = producer(bootstrap, **{"transactional.id": transactional_id})
        p.init_transactions(TIMEOUT)
    started = time.perf_counter()
    sent = 0
    while sent < records:
        n = min(per_transaction, records - sent)
        if transactional_id is not None:
            p.begin_transaction()
        for i in range(n):
            while True:
                try:
                    p.produce(topic, VALUE, partition=(sent + i) % PARTITIONS)
                    break
                except BufferError:
                    p.poll(0.01)
            if i % 1000 == 0:
                p.poll(0)
        sent += n
        if transactional_id is not None:
            p.commit_transaction(TIMEOUT)
    p.flush(TIMEOUT)
    return records / (time.perf_counter() - started)


async def kcli_transactions_per_second(bootstrap: str, topic: str, count: int, name: str) -> float:
    from kcli.client.producer import Producer as KcliProducer

    async with KcliProducer.from_properties(bootstrap, {"transactional.id": name, "linger.ms": "5", "batch.size": str(1 << 20)}) as p:
        await p.init_transactions()
        await p.wait_for_topic(topic)
        started = time.perf_counter()
        for _ in range(count):
            p.begin_transaction()
            for i in range(100):
                await p.send(topic, VALUE, partition=i % PARTITIONS)
            await p.commit_transaction()
        return count / (time.perf_counter() - started)


async def kcli_produce_rate(bootstrap: str, topic: str, records: int, transactional_id: str | None, per_transaction: int = 10_000) -> float:
    from kcli.client.producer import Producer as KcliProducer

    props = {"linger.ms": "5", "batch.size": str(1 << 20)}
    if transactional_id is not None:
        props["transactional.id"] = transactional_id
    async with KcliProducer.from_properties(bootstrap, props) as p:
        if transactional_id is not None:
            await p.init_transactions()
        await p.wait_for_topic(topic)  # the producer id and metadata, outside the clock
        send = p.send
        started = time.perf_counter()
        sent = 0
        while sent < records:
            n = min(per_transaction, records - sent)
            if transactional_id is not None:
                p.begin_transaction()
            for i in range(n):
                await send(topic, VALUE, partition=(sent + i) % PARTITIONS)
            sent += n
            if transactional_id is not None:
                await p.commit_transaction()
        await p.flush()
        return records / (time.perf_counter() - started)


def read_committed_latency(bootstrap: str, topic: str, seconds: float, name: str) -> tuple[float, float, int]:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"{name}-reader", "isolation.level": "read_committed",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100,
    })
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    p = producer(bootstrap, **{"transactional.id": name, "linger.ms": 0})
    p.init_transactions(TIMEOUT)
    done = threading.Event()

    def send() -> None:
        sent = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            p.begin_transaction()
            end = time.perf_counter() + 0.1
            while time.perf_counter() < end:
                target = start + sent / 1000
                delay = target - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                p.produce(topic, _STAMP.pack(time.time()) + VALUE[8:], partition=sent % PARTITIONS)
                p.poll(0)
                sent += 1
            p.commit_transaction(TIMEOUT)
        done.set()

    thread = threading.Thread(target=send)
    thread.start()
    latencies = []
    last_read = time.time()
    # Read until the producer is done and nothing more has come for a second.
    while not done.is_set() or time.time() - last_read < 1.0:
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        last_read = time.time()
        latencies.append((last_read - _STAMP.unpack_from(message.value())[0]) * 1000)
    thread.join()
    consumer.close()
    latencies.sort()
    return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1], len(latencies)


def run(quick: bool, rounds: int, workdir: Path, overrides: list[str]) -> None:
    records = 100_000 if quick else 500_000
    txns = 100 if quick else 500
    seconds = 3.0 if quick else 10.0
    print(machine_line())
    broker = KcliBroker(workdir / "kcli", overrides=overrides).start()
    try:
        bootstrap = broker.bootstrap
        tps, ratios, txn_rates, idem_rates = [], [], [], []
        k_tps, k_ratios, k_txn_rates, k_idem_rates = [], [], [], []
        for r in range(rounds):
            topics = [f"txn-bench-{r}-{kind}" for kind in ("small", "txn", "idem", "latency", "ksmall", "ktxn", "kidem")]
            create_topics(bootstrap, topics)
            tps.append(transactions_per_second(bootstrap, topics[0], txns, f"bench-small-{r}"))
            # Alternate which goes first, so neither always meets the colder page cache.
            if r % 2:
                idem = produce_rate(bootstrap, topics[2], records, None)
                txn = produce_rate(bootstrap, topics[1], records, f"bench-txn-{r}")
            else:
                txn = produce_rate(bootstrap, topics[1], records, f"bench-txn-{r}")
                idem = produce_rate(bootstrap, topics[2], records, None)
            txn_rates.append(txn)
            idem_rates.append(idem)
            ratios.append(txn / idem)
            print(f"round {r + 1}: {tps[-1]:,.0f} txn/s; transactional {txn:,.0f} msgs/s, idempotent {idem:,.0f} msgs/s, ratio {ratios[-1]:.2f}")
            k_tps.append(asyncio.run(kcli_transactions_per_second(bootstrap, topics[4], txns, f"bench-ksmall-{r}")))
            if r % 2:
                k_idem = asyncio.run(kcli_produce_rate(bootstrap, topics[6], records, None))
                k_txn = asyncio.run(kcli_produce_rate(bootstrap, topics[5], records, f"bench-ktxn-{r}"))
            else:
                k_txn = asyncio.run(kcli_produce_rate(bootstrap, topics[5], records, f"bench-ktxn-{r}"))
                k_idem = asyncio.run(kcli_produce_rate(bootstrap, topics[6], records, None))
            k_txn_rates.append(k_txn)
            k_idem_rates.append(k_idem)
            k_ratios.append(k_txn / k_idem)
            print(f"round {r + 1}, kcli's producer: {k_tps[-1]:,.0f} txn/s; transactional {k_txn:,.0f} msgs/s, "
                  f"idempotent {k_idem:,.0f} msgs/s, ratio {k_ratios[-1]:.2f}")
        p50, p99, count = read_committed_latency(bootstrap, f"txn-bench-{rounds - 1}-latency", seconds, "bench-latency")
        ratio = statistics.median(ratios)
        print(f"transactions of 100 records over {PARTITIONS} partitions: {statistics.median(tps):,.0f} txn/s (median of {rounds})")
        print(f"produce {records:,} x 100 B, commit every 10,000: transactional {statistics.median(txn_rates):,.0f} msgs/s, "
              f"idempotent {statistics.median(idem_rates):,.0f} msgs/s, ratio {ratio:.2f} (goal {RATIO_GOAL}) {verdict(ratio >= RATIO_GOAL)}")
        k_ratio = statistics.median(k_ratios)
        print(f"kcli's producer: transactions of 100 records over {PARTITIONS} partitions: {statistics.median(k_tps):,.0f} txn/s (median of {rounds})")
        print(f"kcli's producer: produce {records:,} x 100 B, commit every 10,000: transactional {statistics.median(k_txn_rates):,.0f} msgs/s, "
              f"idempotent {statistics.median(k_idem_rates):,.0f} msgs/s, ratio {k_ratio:.2f} (goal {RATIO_GOAL}) {verdict(k_ratio >= RATIO_GOAL)}")
        print(f"read_committed end-to-end at 1,000 msg/s in 100 ms transactions: p50 {p50:.1f} ms, p99 {p99:.1f} ms ({count:,} records)")
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--override", action="append", default=[])
    args = parser.parse_args()
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="kcli-bench-txn-"))
    try:
        run(args.quick, args.rounds, workdir, args.override)
    finally:
        if args.dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
