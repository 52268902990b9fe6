"""Cluster benchmark: kcli brokers in ZooKeeper mode, on a real ZooKeeper (Debian's package).

Prints, measured in one run on this machine (each broker, ZooKeeper and each client in a process
of its own):
  - the time from a new topic's CreateTopics to every partition's leader acknowledging a record
    (30 partitions over 3 brokers);
  - controller failover: from kill -9 of the controller to a new /controller znode (goal: within
    zookeeper.session.timeout.ms + 2 s), and from SIGTERM of the controller to a new one
    (goal < 1 s);
  - produce and consume throughput (100 B records, 6 partitions, replication factor 1) over 3
    brokers against one embedded-mode broker in the same run, the ratio (goal >= 0.8);
  - the RSS of a ZooKeeper-mode broker holding 10 topics x 100 partitions of one record each
    (goal < 200 MB);
  - with 900 partitions over the 3 brokers: a clean stop (SIGTERM, controlled shutdown: the
    broker's 300 one-replica partitions stay led by it until it exits, then the controller takes
    them offline) to the broker's exit, and a clean stop of the controller to a new one.

The brokers use zookeeper.session.timeout.ms=6000 (printed), so that the kill -9 case is short;
the goal scales with it.

Usage: .venv/bin/python bench/cluster.py [--quick] [--rounds N]
  --quick   5x fewer records and one round
  --rounds  rounds of each timed case, the median shown (default 3)
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from confluent_kafka import Producer  # noqa: E402
from kazoo.client import KazooClient  # noqa: E402

from broker import KcliBroker, kcli_create_topics, produce_one_each, run_loadgen, vm_rss_mb  # noqa: E402
from tests.zookeeper_process import ZooKeeperProcess  # noqa: E402

SESSION_TIMEOUT_MS = 6000
WIDE = 900  # partitions of the topic the controlled-shutdown case spreads over the 3 brokers


def zk_broker(workdir: Path, connect: str, broker_id: int) -> KcliBroker:
    return KcliBroker(
        workdir / f"logs{broker_id}",
        overrides=[f"broker.id={broker_id}", f"zookeeper.connect={connect}",
                   f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}", "offsets.topic.num.partitions=6"],
    ).start()


def controller(zk: KazooClient) -> int | None:
    if zk.exists("/controller") is None:
        return None
    try:
        return json.loads(zk.get("/controller")[0])["brokerid"]
    except Exception:
        return None


def wait(predicate, timeout: float, interval: float = 0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value is not None and value is not False:
            return value
        time.sleep(interval)
    raise RuntimeError(f"not reached within {timeout} s")


def time_to_serving(brokers: dict[int, KcliBroker], name: str) -> float:
    """CreateTopics (30 partitions) to a record acknowledged by every partition's leader."""
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    start = time.perf_counter()
    kcli_create_topics(brokers[0].bootstrap, {name: 30})
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    for partition in range(30):
        producer.produce(name, b"first", partition=partition)
    if producer.flush(60):
        raise RuntimeError("not every partition acknowledged")
    return time.perf_counter() - start


def failover(zk: KazooClient, brokers: dict[int, KcliBroker], sig: int) -> float:
    """Signal the controller; seconds until another broker holds /controller. Restarts it after."""
    first = wait(lambda: controller(zk), 30)
    victim = brokers[first]
    start = time.perf_counter()
    victim.process.send_signal(sig)
    wait(lambda: (lambda c: c is not None and c != first)(controller(zk)), SESSION_TIMEOUT_MS / 1000 + 30)
    elapsed = time.perf_counter() - start
    victim.process.wait(60)
    brokers[first] = KcliBroker(victim.log_dir, overrides=victim.overrides).start()
    return elapsed


def partitions_online(zk: KazooClient, topic: str, count: int) -> bool:
    """Every partition of ``topic`` has a leader in ZooKeeper (pipelined reads)."""
    pending = [zk.get_async(f"/brokers/topics/{topic}/partitions/{p}/state") for p in range(count)]
    try:
        return all(json.loads(answer.get(timeout=10)[0])["leader"] >= 0 for answer in pending)
    except Exception:
        return False


def wait_serving(zk: KazooClient, brokers: dict[int, KcliBroker], topic: str, count: int) -> None:
    """Every partition of ``topic`` has a leader that acknowledges a record."""
    wait(lambda: partitions_online(zk, topic, count), 120, interval=0.2)
    produce_one_each(",".join(b.bootstrap for b in brokers.values()), {topic: count})


def controlled_shutdown(zk: KazooClient, brokers: dict[int, KcliBroker], topic: str, count: int) -> float:
    """SIGTERM a broker that is not the controller; seconds until it exits. Restarts it after and
    waits for its partitions to lead again."""
    first = wait(lambda: controller(zk), 30)
    victim_id = next(b for b in sorted(brokers) if b != first)
    victim = brokers[victim_id]
    start = time.perf_counter()
    victim.process.send_signal(signal.SIGTERM)
    victim.process.wait(120)
    elapsed = time.perf_counter() - start
    brokers[victim_id] = KcliBroker(victim.log_dir, overrides=victim.overrides).start()
    wait_serving(zk, brokers, topic, count)
    return elapsed


def throughput(bootstrap: str, topic_prefix: str, count: int, create_on: str) -> tuple[float, float]:
    """msgs/s of a produce then a consume of ``count`` 100 B records over 6 partitions."""
    topic = f"{topic_prefix}-{time.monotonic_ns()}"
    kcli_create_topics(create_on, {topic: 6})
    partitions = [[topic, p] for p in range(6)]
    produced = run_loadgen("produce", {"bootstrap": bootstrap, "partitions": partitions, "count": count, "value_size": 100,
                                       "compression": "none", "run_bytes": 256 * 1024, "warmup": True})
    if produced["undelivered"] or produced["errors"]:
        raise RuntimeError(f"produce failed: {produced['errors'][:3]}")
    consumed = run_loadgen("consume", {"bootstrap": bootstrap, "partitions": partitions, "count": count})
    if consumed["records"] != count:
        raise RuntimeError(f"consumed {consumed['records']} of {count}")
    return count / produced["seconds"], count / consumed["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    count = 200_000 if args.quick else 1_000_000
    with tempfile.TemporaryDirectory(prefix="kcli-bench-cluster-") as scratch:
        workdir = Path(scratch)
        zookeeper = ZooKeeperProcess(workdir / "zookeeper").start()
        brokers: dict[int, KcliBroker] = {}
        single = None
        zk = KazooClient(hosts=f"{zookeeper.connect}/bench")
        try:
            connect = f"{zookeeper.connect}/bench"
            for broker_id in range(3):
                brokers[broker_id] = zk_broker(workdir, connect, broker_id)
            zk.start(timeout=15)
            serving = [time_to_serving(brokers, f"fresh-{r}") for r in range(rounds)]
            killed = [failover(zk, brokers, signal.SIGKILL) for _ in range(rounds)]
            stopped = [failover(zk, brokers, signal.SIGTERM) for _ in range(rounds)]
            single = KcliBroker(workdir / "single").start()
            cluster_bootstrap = ",".join(b.bootstrap for b in brokers.values())
            pairs = []
            for r in range(rounds):
                # Alternate who goes first, so neither always meets a warmer page cache.
                order = [("cluster", cluster_bootstrap, brokers[0].bootstrap), ("single", single.bootstrap, single.bootstrap)]
                if r % 2:
                    order.reverse()
                result = {name: throughput(bootstrap, name, count, create_on) for name, bootstrap, create_on in order}
                pairs.append(result)
            single.stop()
            single = None
            kcli_create_topics(brokers[0].bootstrap, {"wide": WIDE})
            wait_serving(zk, brokers, "wide", WIDE)
            wide_shutdown = [controlled_shutdown(zk, brokers, "wide", WIDE) for _ in range(rounds)]
            wide_failover = []
            for _ in range(rounds):
                wide_failover.append(failover(zk, brokers, signal.SIGTERM))
                wait_serving(zk, brokers, "wide", WIDE)
            for broker in brokers.values():
                broker.stop()
            brokers.clear()
            rss_broker = zk_broker(workdir / "rss", f"{zookeeper.connect}/rss", 0)
            brokers[0] = rss_broker
            time.sleep(1)
            rss_empty = vm_rss_mb(rss_broker.pid)
            counts = {f"idle-{i}": 100 for i in range(10)}
            kcli_create_topics(rss_broker.bootstrap, counts)
            produce_one_each(rss_broker.bootstrap, counts)
            time.sleep(2)
            rss_full = vm_rss_mb(rss_broker.pid)
        finally:
            zk.stop()
            zk.close()
            if single is not None:
                single.stop()
            for broker in brokers.values():
                broker.stop()
            zookeeper.stop()

    def median(values):
        return statistics.median(values)

    def ok(flag: bool) -> str:
        return "ok" if flag else "MISSED"

    limit = SESSION_TIMEOUT_MS / 1000 + 2
    print(f"kcli cluster benchmark: 3 brokers in ZooKeeper mode, zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}, "
          f"{rounds} round(s), medians")
    print(f"  new topic (30 partitions) to every leader serving: {median(serving):.2f} s  {[round(v, 2) for v in serving]}")
    print(f"  controller failover after kill -9:  {median(killed):.2f} s  (goal <= {limit:.0f} s: {ok(median(killed) <= limit)})"
          f"  {[round(v, 2) for v in killed]}")
    print(f"  controller failover after SIGTERM:  {median(stopped):.2f} s  (goal < 1 s: {ok(median(stopped) < 1)})"
          f"  {[round(v, 2) for v in stopped]}")
    for index, label in ((0, "produce"), (1, "consume")):
        cluster_rate = median([p["cluster"][index] for p in pairs])
        single_rate = median([p["single"][index] for p in pairs])
        ratio = cluster_rate / single_rate
        print(f"  {label} {count:,} x 100 B: 3 brokers {cluster_rate:,.0f} msgs/s, one broker {single_rate:,.0f} msgs/s,"
              f" ratio {ratio:.2f} (goal >= 0.8: {ok(ratio >= 0.8)})")
    print(f"  {WIDE} partitions: controlled shutdown of a broker leading {WIDE // 3}, SIGTERM to exit: {median(wide_shutdown):.2f} s"
          f"  {[round(v, 2) for v in wide_shutdown]}")
    print(f"  {WIDE} partitions: controller failover after SIGTERM: {median(wide_failover):.2f} s  {[round(v, 2) for v in wide_failover]}")
    print(f"  RSS of a ZooKeeper-mode broker: {rss_empty:.1f} MB empty, {rss_full:.1f} MB with 1,000 partitions"
          f" (goal < 200 MB: {ok(rss_full < 200)})")


if __name__ == "__main__":
    main()
