"""What abusive peers cost a broker and its normal clients: broker RSS while ten connections
announce 100 MB frames and send 1 KiB of each, and the worst delivery latency of a normal
confluent-kafka producer (acks=all) while Produce requests of 2,500 zstd bombs arrive.

    .venv/bin/python bench/abuse.py [--bomb-requests N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import confluent_kafka  # noqa: E402

from kcli.storage.compression import CompressionType  # noqa: E402
from tests.abuse_clients import announce, bomb_batch, connect, produce_frame, rss_bytes  # noqa: E402
from tests.broker_process import BrokerProcess  # noqa: E402
from tests.wire_client import WireClient  # noqa: E402

MB = 1 << 20
ANSWER_TIMEOUT = 150


def frame_flood(broker: BrokerProcess) -> None:
    pid = broker.process.pid
    before = rss_bytes(pid)
    sockets = [announce(broker.port, 100_000_000, b"x" * 1024) for _ in range(10)]
    time.sleep(2)
    during = rss_bytes(pid)
    for sock in sockets:
        sock.close()
    print(f"frame flood: broker RSS {before / MB:.0f} MiB before, {during / MB:.0f} MiB with 10 x 100 MB announced")


def bomb_flood(broker: BrokerProcess, topic: str, requests: int) -> None:
    bomb = bomb_batch(CompressionType.ZSTD)
    frame = produce_frame(topic, 0, [bomb] * 2500, 1)
    latencies: list[float] = []
    failures: list[str] = []
    stop = threading.Event()

    def delivered(err, msg, sent: float) -> None:
        latencies.append(time.monotonic() - sent)
        if err is not None:
            failures.append(str(err))

    def normal_producer() -> None:
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
        while not stop.is_set():
            sent = time.monotonic()
            producer.produce(topic, b"v", partition=0, on_delivery=lambda err, msg, sent=sent: delivered(err, msg, sent))
            while producer.flush(1) and not stop.is_set():
                pass
            if len(producer):  # still undelivered when the measurement ended: at least this long
                latencies.append(time.monotonic() - sent)
                failures.append("undelivered")
                return
            time.sleep(0.01)

    thread = threading.Thread(target=normal_producer)
    thread.start()
    answered = 0
    try:
        time.sleep(2)
        quiet = max(latencies)
        started = time.monotonic()
        for _ in range(requests):
            with connect(broker.port, timeout=ANSWER_TIMEOUT) as sock:
                sock.sendall(frame)
                try:
                    sock.recv(1 << 20)
                    answered += 1
                except TimeoutError:
                    break
        flood_seconds = time.monotonic() - started
        time.sleep(1)
    finally:
        stop.set()
        thread.join()
    outcome = f"answered in {flood_seconds:.1f} s" if answered == requests else f"not answered within {ANSWER_TIMEOUT} s"
    print(
        f"bomb flood: {requests} Produce request(s) of 2,500 zstd bombs ({len(frame) / MB:.1f} MB each) {outcome}; "
        f"normal producer's worst latency {max(latencies) * 1000:.0f} ms (quiet: {quiet * 1000:.0f} ms), "
        f"{len(failures)} not delivered"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bomb-requests", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as log_dir:
        broker = BrokerProcess(Path(log_dir), {"broker.id": "0"}).start()
        try:
            with WireClient("127.0.0.1", broker.port) as client:
                client.create_topic("abuse", 1)
            frame_flood(broker)
            bomb_flood(broker, "abuse", args.bomb_requests)
        finally:
            try:
                broker.stop()
            except RuntimeError as e:  # a broker still inflating bombs is killed
                print(f"broker: {e} (killed)")


if __name__ == "__main__":
    main()
