"""Kafka's framing and message headers, sans I/O.

Every request and response is a frame: a 4-byte big-endian size, then that many bytes. A request
frame starts with a request header:

    v0: api_key int16, api_version int16, correlation_id int32 (only ControlledShutdown v0)
    v1: v0, then client_id nullable string (int16 length)
    v2: v1, then tagged fields (flexible API versions)

A response frame starts with a response header: v0 is the correlation id; v1 adds tagged
fields and is used by flexible versions, except ApiVersions, whose response header is always v0
so that a client can read the answer whatever version it asked for.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kcli.errors import ErrorCode, KafkaError
from kcli.protocol.api_keys import ApiKey
from kcli.protocol.request_check import MalformedRequest, tagged_section_end

SIZE = struct.Struct(">i")
_HEADER_FIXED = struct.Struct(">hhih")
_PEEK = struct.Struct(">hhi")
_API_KEY = struct.Struct(">h")
_CORRELATION = struct.Struct(">i")
API_VERSIONS_KEY = ApiKey.API_VERSIONS
DEFAULT_MAX_REQUEST_SIZE = 104857600  # socket.request.max.bytes


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


class InvalidRequest(KafkaError):
    """A frame that cannot be parsed: Kafka answers by closing the connection."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_REQUEST, message)


def peek_api(frame: bytes | memoryview) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a request frame body, before deciding how to parse it."""
    if len(frame) < 8:
        raise InvalidRequest(f"request of {len(frame)} bytes is shorter than a request header")
    return _PEEK.unpack_from(frame, 0)


def peek_api_key(frame: bytes | memoryview) -> int | None:
    """The api key of a request frame body; None when it is too short to have one."""
    return _API_KEY.unpack_from(frame, 0)[0] if len(frame) >= 2 else None


def decode_request_header(frame: bytes | memoryview, flexible: bool, *, with_client_id: bool = True) -> tuple[RequestHeader, int]:
    """The header (v2 when ``flexible``, else v1; v0 without ``with_client_id``) and the offset
    where the request body starts."""
    if not with_client_id:
        return RequestHeader(*peek_api(frame), None), _PEEK.size
    if len(frame) < 10:
        raise InvalidRequest(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id, client_id_length = _HEADER_FIXED.unpack_from(frame, 0)
    position = 10
    client_id = None
    if client_id_length >= 0:
        end = position + client_id_length
        if end > len(frame):
            raise InvalidRequest("client id runs past the end of the request")
        try:
            client_id = bytes(frame[position:end]).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest("client id is not valid UTF-8") from None
        position = end
    elif client_id_length != -1:
        raise InvalidRequest(f"invalid client id length {client_id_length}")
    if flexible:
        position = skip_tagged_fields(frame, position)
    return RequestHeader(api_key, api_version, correlation_id, client_id), position


def skip_tagged_fields(buffer: bytes | memoryview, position: int) -> int:
    try:
        return tagged_section_end(buffer, position, len(buffer))
    except MalformedRequest as e:
        raise InvalidRequest(f"request header: {e}") from None


def response_header(correlation_id: int, flexible: bool) -> bytes:
    """Response header v1 (``flexible``: empty tagged fields) or v0."""
    header = _CORRELATION.pack(correlation_id)
    return header + b"\0" if flexible else header


def frame_size(parts_size: int) -> bytes:
    return SIZE.pack(parts_size)
