"""Lag-time benchmark: ``kcli consumer-groups --describe --all-groups --lag-time`` for 100 groups
of 100 partitions each.

One kcli broker, one topic of 100 partitions with ``--records`` records each (100 B values, one
producer batch of up to 100 records per partition and flush), and 100 groups that each committed
an offset for every partition, spread over ``--distinct`` offsets (group g at offset g mod
distinct), so the command must fetch that many rounds of 100 partitions. Times, as a user runs
them (each a ``kcli`` process, start-up included, output to /dev/null), the describe without
and with --lag-time, best and median of ``--runs``.

Usage: .venv/bin/python bench/lag_time.py [--groups N] [--partitions N] [--records N] [--distinct N] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from broker import KcliBroker  # noqa: E402
from kcli.common import TopicPartition  # noqa: E402


def set_up(bootstrap: str, groups: int, partitions: int, records: int, distinct: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from kcli.client.group_admin import GroupAdmin
    from kcli.tools._admin_common import AdminSession, client_settings

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("bench-lag", partitions, 1)])["bench-lag"].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 100})
    for p in range(partitions):
        for i in range(records):
            producer.produce("bench-lag", b"v" * 100, partition=p, timestamp=1_700_000_000_000 + i)
    assert producer.flush(120) == 0
    del producer
    with AdminSession(client_settings({}, bootstrap=bootstrap, client_id="bench-lag")) as session:
        groups_admin = GroupAdmin(session.cluster)
        for g in range(groups):
            offset = g % distinct
            failed = session.run(groups_admin.commit_offsets(f"bench-lag-{g:03d}", {TopicPartition("bench-lag", p): offset for p in range(partitions)}))
            assert not any(failed.values()), failed


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kcli", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=600)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--records", type=int, default=60)
    parser.add_argument("--distinct", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcli-bench-lag-") as tmp:
        broker = KcliBroker(Path(tmp) / "broker", overrides=["offsets.topic.num.partitions=5"]).start()
        try:
            set_up(broker.bootstrap, args.groups, args.partitions, args.records, args.distinct)
            print(f"{args.groups} groups x {args.partitions} partitions, {args.distinct} distinct committed offsets per partition")
            describe = ["consumer-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--all-groups"]
            for label, command in (("describe", describe), ("describe --lag-time", describe + ["--lag-time"])):
                times = [timed(command) for _ in range(args.runs)]
                print(f"{label:22s} best {min(times):6.2f} s  median {statistics.median(times):6.2f} s  ({args.runs} runs)")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
