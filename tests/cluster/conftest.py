"""A real ZooKeeper server and real ``kcli broker start`` processes in ZooKeeper mode.

Each test gets its own chroot on the session's ZooKeeper server, so clusters never meet; every
broker binds 127.0.0.1 on a free port and is stopped by PID when the test ends.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.broker_process import BrokerProcess

# Short sessions keep failover tests short; ZooKeeper's test server allows 1-40 s.
SESSION_TIMEOUT_MS = 4000


class Cluster:
    def __init__(self, zookeeper, chroot: str, root: Path) -> None:
        self.zookeeper = zookeeper
        self.chroot = chroot
        self.root = root
        self.brokers: dict[int, BrokerProcess] = {}

    @property
    def connect(self) -> str:
        return f"{self.zookeeper.connect}{self.chroot}"

    def broker(self, broker_id: int, **overrides: str) -> BrokerProcess:
        held = self.brokers.get(broker_id)
        if held is not None and held.process is not None and held.process.poll() is None:
            # The table is how the fixture stops its brokers: replacing a running one would leak it.
            raise ValueError(f"broker {broker_id} is running already")
        process = BrokerProcess(
            self.root / f"logs{broker_id}",
            {
                "broker.id": str(broker_id),
                "zookeeper.connect": self.connect,
                "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                "offsets.topic.num.partitions": "6",
                # The last broker of a test cluster to stop cannot hand its replicated partitions
                # to anyone: Kafka's controlled shutdown retries before it stops all the same.
                "controlled.shutdown.retry.backoff.ms": "500",
                **overrides,
            },
        )
        self.brokers[broker_id] = process
        return process

    def start(self, count: int) -> Cluster:
        for broker_id in range(count):
            self.broker(broker_id).start(timeout=60)
        return self

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.process and b.process.poll() is None)

    def zk(self) -> KazooClient:
        client = KazooClient(hosts=self.connect)
        client.start(timeout=15)
        return client

    def stop(self) -> None:
        """Stop every broker, each even when stopping another failed; the first failure is raised."""
        failures = []
        for process in self.brokers.values():
            try:
                process.stop()
            except Exception as e:
                failures.append(e)
        if failures:
            raise failures[0]


@contextmanager
def running_cluster(zookeeper_server, root: Path, label: str, brokers: int = 1) -> Iterator[Cluster]:
    """``brokers`` brokers on a chroot of their own (``/<label>-<random>``), stopped on exit: for
    the tool tests that share one cluster per module."""
    made = Cluster(zookeeper_server, f"/{label}-{uuid.uuid4().hex[:6]}", root)
    try:
        made.start(brokers)
        yield made
    finally:
        made.stop()


@contextmanager
def zk_session(cluster: Cluster) -> Iterator[KazooClient]:
    """A kazoo session on the cluster's chroot, closed on exit."""
    client = cluster.zk()
    try:
        yield client
    finally:
        client.stop()
        client.close()


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.1):
    """The first truthy value of ``predicate`` within ``timeout`` seconds (fails the test otherwise)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"condition not met within {timeout} s (last value: {last!r})")


@pytest.fixture
def cluster(zookeeper_server, tmp_path, request) -> Iterator[Cluster]:
    made = Cluster(zookeeper_server, f"/{request.node.name.translate(str.maketrans('[]/', '-- '))}".replace(" ", ""), tmp_path)
    try:
        yield made
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            # The brokers' own account of a failure: shown with the test's report.
            for broker_id, process in made.brokers.items():
                tail = "\n".join(process.log_lines[-60:])
                sys.stderr.write(f"--- broker {broker_id}'s last log lines ---\n{tail}\n")
        made.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.report_call = report
    return report
