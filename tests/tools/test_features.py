"""``kcli features describe`` (and Kafka 2.x-3.x's ``--describe``): Kafka 3.9's FeatureCommand
lines (tools/src/main/java/org/apache/kafka/tools/FeatureCommand.java) from the feature fields of
an ApiVersions v3 answer. A stand-in broker written from Kafka's protocol guide answers with
features, since kcli's broker (as a ZooKeeper-mode Kafka 2.8) advertises none."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from kafka_wire import NO_TAGS, compact_array, compact_string, i16, i32, i64, tags

pytestmark = pytest.mark.timeout(120)


def api_versions_v3_answer(supported: list[tuple[str, int, int]], epoch: int, finalized: list[tuple[str, int, int]]) -> bytes:
    """ApiVersionsResponse v3's body: error code, the API ranges, throttle time, and the tagged
    fields 0 (SupportedFeatures), 1 (FinalizedFeaturesEpoch) and 2 (FinalizedFeatures)."""
    apis = compact_array([i16(3) + i16(0) + i16(12) + NO_TAGS, i16(18) + i16(0) + i16(3) + NO_TAGS])
    supported_field = compact_array([compact_string(name) + i16(low) + i16(high) + NO_TAGS for name, low, high in supported])
    finalized_field = compact_array([compact_string(name) + i16(high) + i16(low) + NO_TAGS for name, low, high in finalized])
    return i16(0) + apis + i32(0) + tags((0, supported_field), (1, i64(epoch)), (2, finalized_field))


class FeatureBroker:
    """Answers every ApiVersions request (header v0 answers, as for any ApiVersions) with ``body``."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                while True:
                    size = struct.unpack(">i", self._read(conn, 4))[0]
                    request = self._read(conn, size)
                    api_key, correlation = struct.unpack(">h", request[:2])[0], struct.unpack(">i", request[4:8])[0]
                    if api_key != 18:
                        return
                    frame = i32(correlation) + self.body
                    conn.sendall(i32(len(frame)) + frame)
            except (OSError, EOFError):
                return

    @staticmethod
    def _read(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def kraft_like() -> Iterator[FeatureBroker]:
    broker = FeatureBroker(
        api_versions_v3_answer(
            supported=[("metadata.version", 1, 21), ("kraft.version", 0, 1), ("group.version", 0, 1)],
            epoch=42,
            finalized=[("metadata.version", 21, 21), ("group.version", 1, 1)],
        )
    )
    yield broker
    broker.close()


EXPECTED = [
    "Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: 42",
    "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: 42",
    "Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: 3.9-IV0\tFinalizedVersionLevel: 3.9-IV0\tEpoch: 42",
]


def test_describe_prints_each_supported_feature_sorted(kcli, kraft_like):
    result = kcli("features", "--bootstrap-server", kraft_like.address, "describe")
    assert (result.returncode, result.stderr) == (0, ""), result
    assert result.lines == EXPECTED


def test_the_2_x_spelling_describe_flag(kcli, kraft_like):
    result = kcli("features", "--bootstrap-server", kraft_like.address, "--describe")
    assert (result.returncode, result.stderr) == (0, ""), result
    assert result.lines == EXPECTED


def test_no_finalized_epoch_and_an_unknown_metadata_level(kcli):
    broker = FeatureBroker(api_versions_v3_answer(supported=[("metadata.version", 1, 99)], epoch=-1, finalized=[]))
    try:
        result = kcli("features", "--bootstrap-server", broker.address, "describe")
    finally:
        broker.close()
    assert result.returncode == 0, result
    assert result.lines == ["Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: UNKNOWN 99\tFinalizedVersionLevel: UNKNOWN 0\tEpoch: -"]


def test_a_broker_without_features_prints_nothing(kcli, broker):
    result = kcli("features", "--bootstrap-server", broker.bootstrap, "describe")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_bootstrap_is_required(inproc):
    result = inproc("features", "describe")
    assert result.returncode == 2
    assert "one of the arguments --bootstrap-server --bootstrap-controller is required" in result.stderr
