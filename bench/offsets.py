"""Offsets migration benchmark: ``kcli consumer-offsets migrate`` ZooKeeper -> Kafka.

Sets up a real ZooKeeper (Debian's package) and one kcli broker in ZooKeeper mode, 10 topics of
100 partitions with one record each, and 100 groups under ``/consumers`` storing offsets of 100
partitions each (10,000 offsets, as the old consumer wrote them). Then times, as a user runs them
(each a ``kcli`` process, its start-up included):

  - ``migrate --all-groups --to kafka --execute`` (goal < 10 s);
  - ``migrate --all-groups --verify`` (both stores read and compared).

No other tool migrates ZooKeeper-stored offsets today, so there is no peer to measure against.

Usage: .venv/bin/python bench/offsets.py [--groups N] [--partitions-per-group N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from kazoo.client import KazooClient  # noqa: E402

from broker import KcliBroker, kcli_create_topics, produce_one_each  # noqa: E402
from tests.zookeeper_process import ZooKeeperProcess  # noqa: E402

TOPICS = 10


def store_zk_offsets(zk: KazooClient, groups: int, per_group: int, partitions_per_topic: int) -> int:
    """``groups`` groups each holding offset 1 for ``per_group`` partitions; one transaction a group."""
    written = 0
    for g in range(groups):
        txn = zk.transaction()
        group = f"bench-group-{g:03d}"
        txn.create(f"/consumers/{group}")
        txn.create(f"/consumers/{group}/offsets")
        made: set[str] = set()
        for i in range(per_group):
            slot = g * per_group + i
            topic = f"bench-{(slot // partitions_per_topic) % TOPICS:02d}"
            partition = slot % partitions_per_topic
            if topic not in made:
                txn.create(f"/consumers/{group}/offsets/{topic}")
                made.add(topic)
            txn.create(f"/consumers/{group}/offsets/{topic}/{partition}", b"1")
            written += 1
        results = txn.commit()
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            raise SystemExit(f"setting up {group} failed: {failed[0]!r}")
    return written


def timed(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kcli", "consumer-offsets", *args], capture_output=True, text=True, timeout=600)
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--partitions-per-group", type=int, default=100)
    args = parser.parse_args()
    partitions_per_topic = 100
    with tempfile.TemporaryDirectory(prefix="kcli-bench-offsets-") as scratch:
        workdir = Path(scratch)
        zookeeper = ZooKeeperProcess(workdir / "zookeeper").start()
        broker = None
        zk = None
        try:
            connect = f"{zookeeper.connect}/bench"
            broker = KcliBroker(workdir / "logs", overrides=["broker.id=0", f"zookeeper.connect={connect}",
                                                             "offsets.topic.num.partitions=6"]).start()
            counts = {f"bench-{t:02d}": partitions_per_topic for t in range(TOPICS)}
            kcli_create_topics(broker.bootstrap, counts)
            produce_one_each(broker.bootstrap, counts)
            zk = KazooClient(hosts=connect)
            zk.start(timeout=15)
            offsets = store_zk_offsets(zk, args.groups, args.partitions_per_group, partitions_per_topic)
            stores = ["--zookeeper", connect, "--bootstrap-server", broker.bootstrap]
            migrate_s, migrated = timed("migrate", "--all-groups", "--to", "kafka", "--execute", *stores)
            if migrated.returncode != 0:
                raise SystemExit(f"migrate failed ({migrated.returncode}): {migrated.stderr[-2000:]}")
            verify_s, verified = timed("migrate", "--all-groups", "--verify", *stores)
            if verified.returncode != 0:
                raise SystemExit(f"verify found differences ({verified.returncode}): {verified.stdout[-2000:]}{verified.stderr[-2000:]}")
        finally:
            if zk is not None:
                zk.stop()
                zk.close()
            if broker is not None:
                broker.stop()
            zookeeper.stop()
    print(f"kcli consumer-offsets benchmark: {args.groups} groups, {offsets:,} ZooKeeper-stored offsets, one ZooKeeper-mode broker")
    print(f"  migrate --all-groups --to kafka --execute: {migrate_s:.2f} s, {offsets / migrate_s:,.0f} offsets/s"
          f" (goal < 10 s: {'ok' if migrate_s < 10 else 'MISSED'})")
    print(f"  migrate --all-groups --verify:             {verify_s:.2f} s")


if __name__ == "__main__":
    main()
