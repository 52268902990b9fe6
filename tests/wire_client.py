"""A small synchronous client speaking Kafka's wire protocol, for tests against a real broker.

It frames any kio request entity (or a mapping of request fields, built into the entity of the
asked version) with request header v1 or v2, sends it, and decodes the response entity of the same
version. ``send_raw`` writes arbitrary bytes, for malformed frames; ``read_frame`` and
``wait_closed`` observe what the broker does with them. Every wait is bounded by the socket
timeout.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping
from typing import Any

from kio.serial import entity_reader

from kcli.protocol import framing, messages

_HEADER_V1 = struct.Struct(">hhih")
_SIZE = struct.Struct(">i")
API_VERSIONS_KEY = 18


class ConnectionClosed(ConnectionError):
    """The broker closed the connection before a whole response frame arrived."""


def request_entity(api_key: int, version: int, fields: Mapping[str, Any]) -> Any:
    """The request entity of ``api_key`` v``version`` from a mapping of its fields."""
    return messages.build(messages.request_type(api_key, version), fields)


def encode_request(request: Any, correlation_id: int, client_id: str | None = "kcli-tests") -> bytes:
    """A whole request frame (size first) for a kio request entity."""
    api_key = int(type(request).__api_key__)
    version = int(type(request).__version__)
    header = _HEADER_V1.pack(api_key, version, correlation_id, -1 if client_id is None else len(client_id.encode()))
    if client_id is not None:
        header += client_id.encode()
    if type(request).__flexible__:
        header += b"\0"  # no tagged fields
    body = messages.encode(request)
    return _SIZE.pack(len(header) + len(body)) + header + body


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation id, response entity) of a response frame body."""
    correlation_id = _SIZE.unpack_from(frame, 0)[0]
    position = 4
    if messages.is_flexible(api_key, version) and api_key != API_VERSIONS_KEY:
        position = framing.skip_tagged_fields(frame, position)
    reader = entity_reader(messages.response_type(api_key, version))
    entity, _size = reader(frame, position)
    return correlation_id, entity


class WireClient:
    def __init__(self, host: str, port: int, *, timeout: float = 10.0, client_id: str | None = "kcli-tests") -> None:
        self.client_id = client_id
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_correlation_id = 1

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    # -- requests ------------------------------------------------------------------------------------

    def send(self, request: Any) -> Any:
        """Send a request entity and return the response entity (same API and version)."""
        api_key = int(type(request).__api_key__)
        version = int(type(request).__version__)
        correlation_id = self._take_correlation_id()
        self.sock.sendall(encode_request(request, correlation_id, self.client_id))
        received_id, response = decode_response(api_key, version, self.read_frame())
        if received_id != correlation_id:
            raise AssertionError(f"response correlation id {received_id}, expected {correlation_id}")
        return response

    def call(self, api_key: int, version: int, fields: Mapping[str, Any]) -> Any:
        """Build the request of ``api_key`` v``version`` from ``fields``, send it, return the response."""
        return self.send(request_entity(api_key, version, fields))

    def send_no_response(self, request: Any) -> None:
        """Send a request that is not answered (Produce with acks=0)."""
        self.sock.sendall(encode_request(request, self._take_correlation_id(), self.client_id))

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are: frames of any shape, or pieces of frames."""
        self.sock.sendall(data)

    def _take_correlation_id(self) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        return correlation_id

    # -- common calls --------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> Any:
        """CreateTopics v7 for one topic; returns its result."""
        response = self.call(
            19,
            7,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                    }
                ],
                "timeout": 10000,
            },
        )
        return response.topics[0]

    def produce(self, topic: str, partition: int, records: bytes, *, acks: int = -1, version: int = 9) -> Any:
        """Produce one partition's bytes; returns that partition's response."""
        response = self.call(
            0,
            version,
            {"acks": acks, "timeout": 10000, "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]},
        )
        return response.responses[0].partition_responses[0]

    def fetch(self, topic: str, partition: int, offset: int, *, max_bytes: int = 1 << 20, version: int = 12) -> Any:
        """Fetch one partition without waiting; returns that partition's data."""
        response = self.call(
            1,
            version,
            {
                "max_wait": 0,
                "min_bytes": 0,
                "max_bytes": max_bytes,
                "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes}]}],
            },
        )
        return response.responses[0].partitions[0]

    def list_offset(self, topic: str, partition: int, timestamp: int, *, version: int = 7) -> tuple[int, int]:
        """ListOffsets for one partition: (error code, offset)."""
        response = self.call(
            2,
            version,
            {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp}]}]},
        )
        answer = response.topics[0].partitions[0]
        return int(answer.error_code.value), answer.offset

    # -- reading -------------------------------------------------------------------------------------

    def read_frame(self) -> bytes:
        """The next response frame body; raises ConnectionClosed when the broker closed first."""
        size = _SIZE.unpack(self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, count: int) -> bytes:
        return recv_exactly(self.sock, count)

    def wait_closed(self) -> bool:
        """Whether the broker closes the connection (EOF or reset) within the socket timeout,
        without sending anything first."""
        try:
            data = self.sock.recv(1)
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        return data == b""


def code(error_code: Any) -> int:
    """A response's error code as an int (kio answers with its own enum)."""
    return int(getattr(error_code, "value", error_code))


def recv_exactly(sock, count: int) -> bytes:
    """``count`` bytes from ``sock``; ConnectionClosed when the peer closes first."""
    chunks = []
    remaining = count
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ConnectionClosed(f"connection closed with {remaining} of {count} bytes unread")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
