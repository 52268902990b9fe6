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

With ``--replication``, the replication cases instead, on 3 fresh brokers:
  - produce throughput of 100 B records with acks=all, replication factor 3 against 1 over the
    same brokers and the same load generator (goal >= 0.3: the brokers and the client share two
    cores), and broker CPU seconds per MB of values for the leader and for a follower (every
    partition of the RF 3 topic is led by broker 0 and followed by 1 and 2; goal: a follower
    <= 0.5 of the leader);
  - end-to-end latency p50/p99 at 1,000 msg/s, RF 3, acks=all (goal p99 < 20 ms);
  - kill -9 of the partition's leader to the first acks=all record acknowledged after it (goal
    <= zookeeper.session.timeout.ms + 2 s), and the same after a controlled shutdown (goal < 1 s),
    each for a producer with librdkafka's default retry backoff (exponential, up to 1 s) and for
    one retrying every <= 100 ms;
  - the catch-up of a follower stopped while 1 GiB was written, in MB/s, against a consumer's
    read of the same bytes from the leader (the storage read path) in the same run (goal >= 0.5,
    on the rate while it copies; the figure from its restart is printed beside it).

With ``--throttle``, the replication throttles instead, on 3 fresh brokers: a follower stopped
while records were written copies them back under a throttle of THROTTLE_RATE bytes/s set as
Kafka's reassignment tool sets it (the topic's ``leader.replication.throttled.replicas`` naming the
leader's replicas, or ``follower.replication.throttled.replicas`` the follower's, and the brokers'
``*.replication.throttled.rate`` through ``kcli configs``); the rate at which the follower's log
grows, from the sample holding 10% of what it copies to the one holding 90%, against the limit
(goal: within 10%).

The brokers use zookeeper.session.timeout.ms=6000 (printed), so that the kill -9 case is short;
the goal scales with it.

Usage: .venv/bin/python bench/cluster.py [--quick] [--rounds N] [--replication | --throttle]
  --quick        5x fewer records and one round
  --rounds       rounds of each timed case, the median shown (default 3)
  --replication  the replication cases (above) only
  --throttle     the replication throttle cases (above) only
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from kazoo.client import KazooClient  # noqa: E402

from broker import KcliBroker, cpu_seconds, kcli_create_topics, measure_latency, produce_one_each, run_loadgen, vm_rss_mb  # noqa: E402
from tests.zookeeper_process import ZooKeeperProcess  # noqa: E402

SESSION_TIMEOUT_MS = 6000
WIDE = 900  # partitions of the topic the controlled-shutdown case spreads over the 3 brokers


def zk_broker(workdir: Path, connect: str, broker_id: int, extra: tuple[str, ...] = ()) -> KcliBroker:
    return KcliBroker(
        workdir / f"logs{broker_id}",
        overrides=[f"broker.id={broker_id}", f"zookeeper.connect={connect}",
                   f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}", "offsets.topic.num.partitions=6", *extra],
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


# --- replication -----------------------------------------------------------------------------------

REPLICATED_PARTITIONS = 6


def create_led_by(bootstrap: str, name: str, replicas: list[int], partitions: int = REPLICATED_PARTITIONS, **configs: str) -> None:
    """A topic whose every partition has ``replicas`` (the first leads)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    topic = NewTopic(name, num_partitions=partitions, replica_assignment=[replicas] * partitions, config=configs)
    admin.create_topics([topic], operation_timeout=30, request_timeout=60)[name].result(timeout=60)


def partition_state(zk: KazooClient, topic: str, partition: int) -> dict:
    try:
        return json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])
    except Exception:
        return {}


def in_sync(zk: KazooClient, topic: str, replicas: int = 3, partitions: int = REPLICATED_PARTITIONS) -> bool:
    return all(len(partition_state(zk, topic, p).get("isr", [])) == replicas for p in range(partitions))


def acks_all_throughput(brokers: dict[int, KcliBroker], zk: KazooClient, name: str, replicas: list[int], count: int) -> tuple[float, dict[int, float]]:
    """msgs/s of ``count`` 100 B records with acks=all to a new topic on ``replicas``, and each
    broker's CPU seconds over the produce."""
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    create_led_by(bootstrap, name, replicas, **{"min.insync.replicas": str(min(2, len(replicas)))})
    wait(lambda: in_sync(zk, name, len(replicas)), 60, interval=0.1)
    partitions = [[name, p] for p in range(REPLICATED_PARTITIONS)]
    before = {i: cpu_seconds(b.pid) for i, b in brokers.items()}
    produced = run_loadgen("produce", {"bootstrap": bootstrap, "partitions": partitions, "count": count, "value_size": 100,
                                       "compression": "none", "run_bytes": 256 * 1024, "warmup": True, "acks": "all"})
    if produced["undelivered"] or produced["errors"]:
        raise RuntimeError(f"produce failed: {produced['errors'][:3]}")
    wait(lambda: in_sync(zk, name, len(replicas)), 60, interval=0.1)
    spent = {i: cpu_seconds(b.pid) - before[i] for i, b in brokers.items()}
    return count / produced["seconds"], spent


# librdkafka's defaults back a failing produce off exponentially up to retry.backoff.max.ms (1 s),
# which is the client's wait, not the cluster's; a second producer retrying every <= 100 ms shows
# when the new leader first accepts, in the same run.
FAST_RETRY = {"retry.backoff.ms": 20, "retry.backoff.max.ms": 100}


def first_ack_after(brokers: dict[int, KcliBroker], zk: KazooClient, topic: str, sig: int) -> tuple[float, float]:
    """Signal the leader of ``topic``'s partition 0; seconds until an acks=all record sent after
    it is acknowledged, for a producer with librdkafka's defaults and for one retrying every
    <= 100 ms. Restarts the broker after and waits for the ISR to be whole again."""
    leader = wait(lambda: (lambda s: s.get("leader") if s.get("leader", -1) >= 0 else None)(partition_state(zk, topic, 0)), 30)
    victim = brokers[leader]
    config = {"bootstrap.servers": ",".join(b.bootstrap for b in brokers.values()), "acks": "all", "linger.ms": 0,
              "message.timeout.ms": 60_000, "log_level": 4}
    producers = [Producer(config), Producer({**config, **FAST_RETRY})]
    acked: list[list[float]] = [[], []]
    for producer in producers:
        producer.produce(topic, b"before", partition=0)
        if producer.flush(30):
            raise RuntimeError("the record before the fault was not acknowledged")
    start = time.perf_counter()
    victim.process.send_signal(sig)
    while not all(acked) and time.perf_counter() - start < SESSION_TIMEOUT_MS / 1000 + 60:
        for producer, times in zip(producers, acked):
            if not times:
                producer.produce(topic, b"after", partition=0, on_delivery=lambda err, msg, times=times: err is None and not times and times.append(time.perf_counter()))
            producer.poll(0.005)
    for producer in producers:
        producer.flush(60)
    if not all(acked):
        raise RuntimeError("no acks=all record was acknowledged after the fault")
    victim.process.wait(60)
    brokers[leader] = KcliBroker(victim.log_dir, overrides=victim.overrides).start()
    wait(lambda: in_sync(zk, topic, partitions=1), 90, interval=0.1)
    return acked[0][0] - start, acked[1][0] - start


def follower_behind(brokers: dict[int, KcliBroker], zk: KazooClient, name: str, total_bytes: int) -> tuple[KcliBroker, int]:
    """A new topic on brokers 0 (leading), 1 and 2, with follower 2 stopped and out of the ISR
    while ``total_bytes`` of 1 KiB records are written; the stopped follower and the count."""
    bootstrap = ",".join(b.bootstrap for i, b in brokers.items() if i != 2)
    create_led_by(",".join(b.bootstrap for b in brokers.values()), name, [0, 1, 2])
    wait(lambda: in_sync(zk, name), 60, interval=0.1)
    follower = brokers[2]
    follower.stop()
    wait(lambda: all(2 not in partition_state(zk, name, p).get("isr", [2]) for p in range(REPLICATED_PARTITIONS)), 60, interval=0.1)
    count = total_bytes // 1024
    produced = run_loadgen("produce", {"bootstrap": bootstrap, "partitions": [[name, p] for p in range(REPLICATED_PARTITIONS)], "count": count,
                                       "value_size": 1024, "compression": "none", "run_bytes": 256 * 1024, "acks": 1})
    if produced["undelivered"] or produced["errors"]:
        raise RuntimeError(f"produce failed: {produced['errors'][:3]}")
    return follower, count


def log_bytes(log_dir: Path, topic: str, partitions: int) -> int:
    return sum(f.stat().st_size for p in range(partitions) for f in (log_dir / f"{topic}-{p}").glob("*.log"))


def copy_rate(samples: list[tuple[float, int]], to_copy: int) -> float:
    """Bytes/s of a log's growth from the first sample holding 10% of ``to_copy`` to the first
    holding 90% (samples of time, bytes). A throttled copy grows in bursts of a fetch each: both
    ends are then just after a burst landed, so the span holds whole bursts and whole waits."""
    start = next(((t, b) for t, b in samples if b >= 0.1 * to_copy), None)
    end = next(((t, b) for t, b in samples if b >= 0.9 * to_copy), None)
    if start is None or end is None or end[0] <= start[0]:
        raise RuntimeError(f"the copy did not pass 10% and 90% in separate samples: {samples[:5]} ... {samples[-5:]}")
    return (end[1] - start[1]) / (end[0] - start[0])


def follower_catch_up(brokers: dict[int, KcliBroker], zk: KazooClient, name: str, total_bytes: int) -> tuple[float, float, float]:
    """For a follower that was stopped while ``total_bytes`` were written: MB/s from its restart
    to the ISR whole again, MB/s at which its log grows while it copies (between 10% and 90% of
    the copy: the restart, the first LeaderAndIsr and the ISR's AlterPartition left out), and
    MB/s of a consumer reading the same records from the leader."""
    follower, count = follower_behind(brokers, zk, name, total_bytes)
    start_bytes = log_bytes(follower.log_dir, name, REPLICATED_PARTITIONS)
    to_copy = log_bytes(brokers[0].log_dir, name, REPLICATED_PARTITIONS) - start_bytes
    start = time.perf_counter()
    brokers[2] = KcliBroker(follower.log_dir, overrides=follower.overrides).start()
    samples: list[tuple[float, int]] = []
    while not in_sync(zk, name):
        samples.append((time.perf_counter(), log_bytes(follower.log_dir, name, REPLICATED_PARTITIONS) - start_bytes))
        if time.perf_counter() - start > 600:
            raise RuntimeError("the follower did not catch up within 600 s")
        time.sleep(0.05)
    catch_up = time.perf_counter() - start
    partitions = [[name, p] for p in range(REPLICATED_PARTITIONS)]
    consumed = run_loadgen("consume", {"bootstrap": brokers[0].bootstrap, "partitions": partitions, "count": count})
    if consumed["records"] != count:
        raise RuntimeError(f"consumed {consumed['records']} of {count}")
    megabytes = count * 1024 / 1e6
    return megabytes / catch_up, copy_rate(samples, to_copy) / 1e6, megabytes / consumed["seconds"]


def replication_main(workdir: Path, zookeeper: ZooKeeperProcess, rounds: int, count: int, catch_up_bytes: int) -> None:
    brokers: dict[int, KcliBroker] = {}
    connect = f"{zookeeper.connect}/replication"
    zk = KazooClient(hosts=connect)
    try:
        for broker_id in range(3):
            brokers[broker_id] = zk_broker(workdir, connect, broker_id)
        zk.start(timeout=15)
        pairs = []
        for r in range(rounds):
            order = [("rf3", [0, 1, 2]), ("rf1", [0])]
            if r % 2:
                order.reverse()
            pairs.append({label: acks_all_throughput(brokers, zk, f"{label}-{r}", replicas, count) for label, replicas in order})
        create_led_by(brokers[0].bootstrap, "latency", [0, 1, 2], partitions=1, **{"min.insync.replicas": "2"})
        wait(lambda: in_sync(zk, "latency", partitions=1), 60, interval=0.1)
        latency = measure_latency(",".join(b.bootstrap for b in brokers.values()), [("latency", 0)], 5.0 if rounds > 1 else 2.0, 1, acks="all")
        create_led_by(brokers[0].bootstrap, "failover", [0, 1, 2], partitions=1, **{"min.insync.replicas": "2"})
        wait(lambda: in_sync(zk, "failover", partitions=1), 60, interval=0.1)
        killed = [first_ack_after(brokers, zk, "failover", signal.SIGKILL) for _ in range(rounds)]
        stopped = [first_ack_after(brokers, zk, "failover", signal.SIGTERM) for _ in range(rounds)]
        catch_up, copy_rate, read = follower_catch_up(brokers, zk, "catch-up", catch_up_bytes)
    finally:
        zk.stop()
        zk.close()
        for broker in brokers.values():
            broker.stop()

    def ok(flag: bool) -> str:
        return "ok" if flag else "MISSED"

    rf3 = statistics.median(p["rf3"][0] for p in pairs)
    rf1 = statistics.median(p["rf1"][0] for p in pairs)
    megabytes = count * 100 / 1e6
    leader_cpu = statistics.median(p["rf3"][1][0] for p in pairs) / megabytes
    follower_cpu = statistics.median((p["rf3"][1][1] + p["rf3"][1][2]) / 2 for p in pairs) / megabytes
    limit = SESSION_TIMEOUT_MS / 1000 + 2
    print(f"kcli replication benchmark: 3 brokers in ZooKeeper mode, zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}, {rounds} round(s), medians")
    print(f"  produce {count:,} x 100 B, acks=all, 6 partitions led by broker 0: RF 3 {rf3:,.0f} msgs/s, RF 1 {rf1:,.0f} msgs/s,"
          f" ratio {rf3 / rf1:.2f} (goal >= 0.3: {ok(rf3 / rf1 >= 0.3)})")
    print(f"  broker CPU per MB of values with RF 3: leader {leader_cpu * 1000:.1f} ms, follower {follower_cpu * 1000:.1f} ms,"
          f" follower/leader {follower_cpu / leader_cpu:.2f} (goal <= 0.5: {ok(follower_cpu / leader_cpu <= 0.5)})")
    print(f"  end-to-end latency at 1,000 msg/s, RF 3, acks=all: p50 {latency['p50_ms']:.1f} ms, p99 {latency['p99_ms']:.1f} ms"
          f" (goal p99 < 20 ms: {ok(latency['p99_ms'] < 20)})")
    for label, cases, goal, verdict in (
        ("kill -9", killed, f"<= {limit:.0f} s", lambda v: v <= limit),
        ("controlled shutdown", stopped, "< 1 s", lambda v: v < 1),
    ):
        default = statistics.median(c[0] for c in cases)
        fast = statistics.median(c[1] for c in cases)
        print(f"  {label} of the leader to the first acks=all record acknowledged: {default:.2f} s with librdkafka's default"
              f" retry backoff (goal {goal}: {ok(verdict(default))}), {fast:.2f} s retrying every <= 100 ms"
              f" {[(round(a, 2), round(b, 2)) for a, b in cases]}")
    print(f"  a follower catching up on {catch_up_bytes / 2**20:,.0f} MiB: {catch_up:,.1f} MB/s from its restart to the whole ISR,"
          f" {copy_rate:,.1f} MB/s while copying (10%-90%); a consumer reading them from the leader: {read:,.1f} MB/s;"
          f" ratio {catch_up / read:.2f} from the restart, {copy_rate / read:.2f} while copying (goal >= 0.5 while copying: {ok(copy_rate / read >= 0.5)})")


# --- replication throttles ---------------------------------------------------------------------------

THROTTLE_RATE = 2_000_000  # bytes/s


def kcli_configs(bootstrap: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "kcli", "configs", "--bootstrap-server", bootstrap, *args], check=True, capture_output=True, timeout=60)


def throttled_catch_up(brokers: dict[int, KcliBroker], zk: KazooClient, name: str, side: str, total_bytes: int) -> float:
    """Bytes/s at which follower 2, stopped while ``total_bytes`` were written, copies them back
    with its replicas throttled on ``side`` (``leader``: broker 0's sending; ``follower``: broker
    2's fetching), measured on its log's growth between 10% and 90% of the copy."""
    bootstrap = lambda: ",".join(b.bootstrap for b in brokers.values() if b.process.poll() is None)  # noqa: E731
    follower, _ = follower_behind(brokers, zk, name, total_bytes)
    broker_id = 0 if side == "leader" else 2
    replicas = ",".join(f"{p}:{broker_id}" for p in range(REPLICATED_PARTITIONS))
    kcli_configs(bootstrap(), "--entity-type", "topics", "--entity-name", name, "--alter", "--add-config", f"{side}.replication.throttled.replicas=[{replicas}]")
    kcli_configs(bootstrap(), "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", f"{side}.replication.throttled.rate={THROTTLE_RATE}")
    start_bytes = log_bytes(follower.log_dir, name, REPLICATED_PARTITIONS)
    to_copy = log_bytes(brokers[0].log_dir, name, REPLICATED_PARTITIONS) - start_bytes
    brokers[2] = KcliBroker(follower.log_dir, overrides=follower.overrides).start()
    samples: list[tuple[float, int]] = []
    deadline = time.monotonic() + 30 + 3 * to_copy / THROTTLE_RATE
    while time.monotonic() < deadline:
        copied = log_bytes(follower.log_dir, name, REPLICATED_PARTITIONS) - start_bytes
        samples.append((time.monotonic(), copied))
        if copied >= to_copy:
            break
        time.sleep(0.05)
    kcli_configs(bootstrap(), "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", f"{side}.replication.throttled.rate")
    kcli_configs(bootstrap(), "--entity-type", "topics", "--entity-name", name, "--alter", "--delete-config", f"{side}.replication.throttled.replicas")
    wait(lambda: in_sync(zk, name), 120, interval=0.1)
    return copy_rate(samples, to_copy)


def throttle_main(workdir: Path, zookeeper: ZooKeeperProcess, total_bytes: int) -> None:
    brokers: dict[int, KcliBroker] = {}
    connect = f"{zookeeper.connect}/throttle"
    zk = KazooClient(hosts=connect)
    try:
        for broker_id in range(3):
            brokers[broker_id] = zk_broker(workdir, connect, broker_id, ("replica.lag.time.max.ms=5000",))
        zk.start(timeout=15)
        rates = {side: throttled_catch_up(brokers, zk, f"throttled-{side}", side, total_bytes) for side in ("leader", "follower")}
    finally:
        zk.stop()
        zk.close()
        for broker in brokers.values():
            broker.stop()
    print(f"kcli replication throttle benchmark: 3 brokers in ZooKeeper mode, a follower copying {total_bytes / 2**20:,.0f} MiB back")
    for side, rate in rates.items():
        ratio = rate / THROTTLE_RATE
        verdict = "ok" if abs(ratio - 1) <= 0.1 else "MISSED"
        print(f"  {side}.replication.throttled.rate={THROTTLE_RATE:,} B/s: the follower copies at {rate:,.0f} B/s,"
              f" {ratio:.3f} of the limit (goal within 10%: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--replication", action="store_true")
    group.add_argument("--throttle", action="store_true")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    count = 200_000 if args.quick else 1_000_000
    if args.throttle:
        with tempfile.TemporaryDirectory(prefix="kcli-bench-throttle-") as scratch:
            zookeeper = ZooKeeperProcess(Path(scratch) / "zookeeper").start()
            try:
                throttle_main(Path(scratch), zookeeper, (16 if args.quick else 48) * 2**20)
            finally:
                zookeeper.stop()
        return
    if args.replication:
        with tempfile.TemporaryDirectory(prefix="kcli-bench-replication-") as scratch:
            zookeeper = ZooKeeperProcess(Path(scratch) / "zookeeper").start()
            try:
                replication_main(Path(scratch), zookeeper, rounds, count, (256 if args.quick else 1024) * 2**20)
            finally:
                zookeeper.stop()
        return
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
