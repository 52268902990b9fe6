"""Produce requests of many compressed batches: each bomb answered on its own partition entry, the
good batches beside them appended, and the connection's requests answered in order although the
broker yields to other connections between compressed partitions."""

from __future__ import annotations

import socket
import struct

from kcli.errors import ErrorCode
from kcli.storage.compression import CompressionType
from kcli.storage.records import NewRecord, build_batch
from tests.abuse_clients import bomb_batch, produce_frame
from tests.wire_client import decode_response, encode_request, request_entity


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            assert chunk, "the broker closed the connection"
            data += chunk
        return data

    return exactly(struct.unpack(">i", exactly(4))[0])


def test_bombs_and_good_batches_in_one_request_are_answered_each_and_in_order(broker, client, new_topic):
    topic = new_topic()
    client.create_topic(topic, 1)
    good = bytes(build_batch([NewRecord(b"k", b"good", 1_700_000_000_000)], compression=CompressionType.ZSTD))
    batches = [bomb_batch(CompressionType.ZSTD), good, bomb_batch(CompressionType.GZIP, 16 << 20)] * 50
    produce = produce_frame(topic, 0, batches, correlation_id=1)
    api_versions = encode_request(request_entity(18, 0, {}), 2)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=60) as sock:
        sock.sendall(produce + api_versions)  # pipelined: the second waits for the first
        first, second = _read_frame(sock), _read_frame(sock)
    correlation_id, response = decode_response(0, 9, first)
    assert correlation_id == 1
    assert struct.unpack_from(">i", second)[0] == 2
    codes = [int(p.error_code) for p in response.responses[0].partition_responses]
    assert codes == [ErrorCode.INVALID_RECORD, ErrorCode.NONE, ErrorCode.INVALID_RECORD] * 50
    offsets = [p.base_offset for p in response.responses[0].partition_responses if p.error_code == 0]
    assert offsets == list(range(50))
