"""The librdkafka mock cluster (from confluent-kafka's wheel) as a peer broker for tests.

``MockCluster`` runs this file as its own process: it hosts the mock cluster through a
confluent-kafka Producer, prints the mock's bootstrap address on stdout, and polls until its stdin
closes or it gets SIGTERM. Tests use it to show that a tool speaks standard Kafka, not only kcli.
The mock has no CreateTopics; topics are auto-created with 4 partitions on first use.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time

_ADDRESS = re.compile(r"replaced with (\S+)")


class MockCluster:
    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.bootstrap = ""
        self.process: subprocess.Popen | None = None

    def start(self) -> MockCluster:
        self.process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self._read_line()
        if not line:
            self.stop()
            raise RuntimeError("the librdkafka mock cluster did not start")
        self.bootstrap = line.strip()
        return self

    def _read_line(self) -> str:
        import selectors

        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        ready = selector.select(self.timeout)
        selector.close()
        return self.process.stdout.readline() if ready else ""

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process = None

    def __enter__(self) -> MockCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _host() -> None:
    import threading

    from confluent_kafka import Producer

    address: list[str] = []

    class Finder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            match = _ADDRESS.search(record.getMessage())
            if match and not address:
                address.append(match.group(1).split(",")[0])

    logger = logging.getLogger("mock-cluster")
    logger.addHandler(Finder())
    logger.setLevel(logging.INFO)
    logger.propagate = False
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    host = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "127.0.0.1:1", "logger": logger})
    deadline = time.monotonic() + 30
    while not address:
        if time.monotonic() > deadline or stop.is_set():
            sys.exit(1)
        host.poll(0.05)
    print(address[0], flush=True)
    while not stop.is_set():
        host.poll(0.2)


if __name__ == "__main__":
    _host()
