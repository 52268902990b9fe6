"""Abusive peers beside a normal producer and consumer, against one real broker process.

For ``ABUSE_SECONDS`` the broker takes Produce requests full of zstd and gzip decompression
bombs, peers that announce 100 MB frames and send 1 KiB of them, slowloris peers that stop halfway
through a frame, and a flood of connections that say nothing; meanwhile a confluent-kafka producer
(acks=all, idempotent) writes numbered records and a consumer reads them. The abusers connect from
127.0.0.2 and 127.0.0.3, limited by ``max.connections.per.ip.overrides``; idle and half-sent
connections are reaped by ``connections.max.idle.ms``.

Checked: every acknowledged record is read back exactly once; neither normal client goes more
than ``STALL_BOUND`` seconds without progress while the abuse runs (a liveness bound, not a
benchmark); every bomb is answered INVALID_RECORD; the broker's RSS stays bounded under the
announcements; slowloris peers are reaped. The figures are printed (pytest -s).
"""

from __future__ import annotations

import collections
import socket
import struct
import threading
import time

import confluent_kafka
import pytest

from kcli.errors import ErrorCode
from kcli.storage.compression import CompressionType
from tests.abuse_clients import announce, bomb_batch, connect, produce_frame, rss_bytes
from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient, decode_response

ABUSE_SECONDS = 35.0
STALL_BOUND = 10.0  # seconds without a delivery (or a consumed record) while the abuse runs
MB = 1 << 20
TOPIC, BOMB_TOPIC = "soak", "soak-bombs"
CROWD, BOMBER = "127.0.0.2", "127.0.0.3"


class Abuse:
    def __init__(self, port: int, pid: int) -> None:
        self.port = port
        self.pid = pid
        self.stop = threading.Event()
        self.bomb_answers: collections.Counter[tuple[str, int]] = collections.Counter()
        self.reaped = 0
        self.rejected = 0
        self.rss_peak = 0
        self.errors: list[str] = []
        self.threads = [
            threading.Thread(target=self._guard, args=(self._bombs, CompressionType.ZSTD, 128 << 20, 500)),
            threading.Thread(target=self._guard, args=(self._bombs, CompressionType.GZIP, 16 << 20, 100)),
            threading.Thread(target=self._guard, args=(self._crowd,)),
        ]

    def __enter__(self) -> Abuse:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)

    def _guard(self, work, *args) -> None:
        try:
            work(*args)
        except Exception as e:  # reported by the test, not lost in a thread
            self.errors.append(f"{work.__name__}: {e!r}")

    def _bombs(self, codec: CompressionType, inflated: int, per_request: int) -> None:
        frame = produce_frame(BOMB_TOPIC, 0, [bomb_batch(codec, inflated)] * per_request, 1)
        while not self.stop.is_set():
            with connect(self.port, timeout=120, source=BOMBER) as sock:
                sock.sendall(frame)
                body = _read_frame(sock)
            _, response = decode_response(0, 9, body)
            for partition in response.responses[0].partition_responses:
                self.bomb_answers[(codec.label, int(partition.error_code))] += 1

    def _crowd(self) -> None:
        """Announcements, slowloris peers and an idle flood from one address, topped up as the
        broker closes them."""
        announced: list[socket.socket] = []
        half_sent: list[socket.socket] = []
        idle: list[socket.socket] = []
        while not self.stop.is_set():
            self.reaped += _drop_closed(half_sent)
            _drop_closed(announced)
            self.rejected += _drop_closed(idle)
            try:
                while len(announced) < 10:
                    announced.append(announce(self.port, 100_000_000, b"x" * 1024, source=CROWD))
                while len(half_sent) < 10:
                    half_sent.append(announce(self.port, 1000, b"\x00\x03\x00", source=CROWD))
                while len(idle) < 60:
                    idle.append(connect(self.port, source=CROWD))
            except OSError:
                pass
            self.rss_peak = max(self.rss_peak, rss_bytes(self.pid))
            self.stop.wait(0.25)
        for sock in announced + half_sent + idle:
            sock.close()


def _drop_closed(sockets: list[socket.socket]) -> int:
    """Remove (and close) the sockets the broker closed; how many."""
    closed = 0
    for sock in list(sockets):
        sock.setblocking(False)
        try:
            gone = sock.recv(1) == b""
        except BlockingIOError:
            gone = False
        except ConnectionError:
            gone = True
        if gone:
            sockets.remove(sock)
            sock.close()
            closed += 1
    return closed


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return data

    return exactly(struct.unpack(">i", exactly(4))[0])


def _longest_gap(times: list[float], start: float, end: float) -> float:
    inside = sorted(t for t in times if start <= t <= end)
    points = [start, *inside, end]
    return max(b - a for a, b in zip(points, points[1:]))


@pytest.mark.soak
@pytest.mark.timeout(240)
def test_normal_clients_keep_going_and_lose_nothing_beside_abusive_peers(tmp_path):
    broker = BrokerProcess(
        tmp_path,
        {"broker.id": "0", "connections.max.idle.ms": "3000", "max.connections.per.ip.overrides": f"{CROWD}:40"},
    ).start()
    try:
        with WireClient("127.0.0.1", broker.port) as client:
            client.create_topic(TOPIC, 1)
            client.create_topic(BOMB_TOPIC, 1)
        rss_start = rss_bytes(broker.process.pid)

        acked: list[bytes] = []
        delivered_at: list[float] = []
        latencies: list[float] = []
        failures: list[str] = []
        consumed: list[bytes] = []
        consumed_at: list[float] = []
        stop_producing, stop_consuming = threading.Event(), threading.Event()

        def produce() -> None:
            producer = confluent_kafka.Producer(
                {"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
            )

            def on_delivery(err, msg, sent: float) -> None:
                now = time.monotonic()
                if err is not None:
                    failures.append(str(err))
                    return
                acked.append(msg.value())
                delivered_at.append(now)
                latencies.append(now - sent)

            number = 0
            while not stop_producing.is_set():
                sent = time.monotonic()
                producer.produce(TOPIC, b"%d" % number, partition=0, on_delivery=lambda err, msg, sent=sent: on_delivery(err, msg, sent))
                number += 1
                producer.poll(0.005)
            assert producer.flush(60) == 0

        def consume() -> None:
            consumer = confluent_kafka.Consumer(
                {"bootstrap.servers": broker.bootstrap, "group.id": "soak", "enable.auto.commit": False, "auto.offset.reset": "earliest"}
            )
            consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
            try:
                while not stop_consuming.is_set():
                    message = consumer.poll(0.2)
                    if message is not None and message.error() is None:
                        consumed.append(message.value())
                        consumed_at.append(time.monotonic())
            finally:
                consumer.close()

        producer_thread, consumer_thread = threading.Thread(target=produce), threading.Thread(target=consume)
        producer_thread.start()
        consumer_thread.start()
        time.sleep(2)
        with Abuse(broker.port, broker.process.pid) as abuse:
            abuse_start = time.monotonic()
            abuse.stop.wait(ABUSE_SECONDS)
            abuse_end = time.monotonic()
        stop_producing.set()
        producer_thread.join(90)
        deadline = time.monotonic() + 60
        while len(consumed) < len(acked) and time.monotonic() < deadline:
            time.sleep(0.2)
        stop_consuming.set()
        consumer_thread.join(30)

        producer_gap = _longest_gap(delivered_at, abuse_start, abuse_end)
        consumer_gap = _longest_gap(consumed_at, abuse_start, abuse_end)
        print(
            f"\nsoak: {len(acked)} records acknowledged, {len(consumed)} consumed; "
            f"worst delivery latency {max(latencies) * 1000:.0f} ms; longest producer gap {producer_gap:.2f} s, "
            f"consumer gap {consumer_gap:.2f} s; broker RSS {rss_start / MB:.0f} MiB at start, peak {abuse.rss_peak / MB:.0f} MiB; "
            f"bomb answers {dict(abuse.bomb_answers)}; slowloris reaped {abuse.reaped}; idle connections closed {abuse.rejected}"
        )
        assert not abuse.errors
        assert not failures
        counts = collections.Counter(consumed)
        assert all(counts[value] == 1 for value in acked), "an acknowledged record was lost or read twice"
        assert producer_gap < STALL_BOUND and consumer_gap < STALL_BOUND
        assert {codec for codec, _ in abuse.bomb_answers} == {"zstd", "gzip"}
        assert {code for _, code in abuse.bomb_answers} == {ErrorCode.INVALID_RECORD}
        assert abuse.rss_peak - rss_start < 256 * MB
        assert abuse.reaped > 0
    finally:
        broker.stop()
