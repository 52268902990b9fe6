"""One connection to one broker: framed requests, pipelined answers, version negotiation.

A ``BrokerConnection`` writes requests as they are asked for and matches answers by correlation
id, so many requests may be in flight at once. On connect it sends ApiVersions and keeps the
broker's range for every API (and the feature flags the answer carries); ``version_for`` then picks the highest version both sides speak, so
the same call works against kcli and against Apache Kafka 2.x-3.x brokers.

With a ``ClientSecurity`` (``security_config``) the connection is wrapped in TLS as it is made
(the broker's name checked unless ssl.endpoint.identification.algorithm is empty), and on
SASL_PLAINTEXT and SASL_SSL it authenticates right after ApiVersions: SaslHandshake v1, then
SaslAuthenticate (up to v2) until the mechanism is done; nothing else is sent before. A broker
that speaks only SaslHandshake v0 (Kafka 0.10.0-0.10.2) gets the tokens as bare size-prefixed
frames after the handshake and answers them alike, as Kafka's SaslClientAuthenticator does.

Requests are version-independent mappings of field names (``mapping_encoder`` writes the fields the
chosen version has and zeroes the ones the mapping lacks); answers are kio's response entities of
the version that was sent, or for an API kio lacks, entities of the same shape (``stated_apis``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import ssl
import struct
import weakref
from collections.abc import Mapping
from typing import Any

from kcli import __version__
from kcli.errors import ErrorCode, KafkaError
from kcli.network.frame_stream import FrameStream
from kcli.protocol import framing, mapping_encoder, messages, stated_apis

_SIZE = struct.Struct(">i")
_FRAMED_HEADER = struct.Struct(">ihhih")  # size, then request header v1
_FRAMED_HEADER_V0 = struct.Struct(">ihhi")  # size, then request header v0 (no client id)
_ERROR_CODE = struct.Struct(">h")
API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
# The largest answer frame the client reads (librdkafka's receive.message.max.bytes default). A
# size prefix above it is refused before anything is allocated: such a peer is not answering as a
# Kafka broker (an HTTP server's "HTTP" reads as 1213486160). Fetch answers stay below it unless
# fetch.max.bytes asks for more, and the fetcher raises the limit with it.
MAX_ANSWER_BYTES = 100_000_000
# How much more than fetch.max.bytes a Fetch answer may be: its headers around the records.
ANSWER_OVERHEAD_BYTES = 512
# Kafka's socket.connection.setup.timeout.ms default: how long a TCP connect may take.
CONNECT_TIMEOUT = 10.0

# The highest version kcli's client sends of each API. Versions above these change a request's
# shape in ways the client does not use (Fetch v13+ names topics by id only, FindCoordinator v4+
# batches keys, OffsetFetch v8+ batches groups); every version up to them is understood.
CLIENT_MAX_VERSIONS: dict[int, int] = {
    0: 9,  # Produce
    1: 12,  # Fetch
    2: 8,  # ListOffsets
    3: 12,  # Metadata
    8: 8,  # OffsetCommit
    9: 7,  # OffsetFetch
    10: 3,  # FindCoordinator
    11: 7,  # JoinGroup
    12: 4,  # Heartbeat
    13: 4,  # LeaveGroup
    14: 5,  # SyncGroup
    15: 5,  # DescribeGroups
    16: 5,  # ListGroups
    18: 3,  # ApiVersions
    19: 7,  # CreateTopics
    20: 6,  # DeleteTopics
    21: 2,  # DeleteRecords
    22: 4,  # InitProducerId
    24: 3,  # AddPartitionsToTxn (v4+ is the brokers' batched form)
    25: 4,  # AddOffsetsToTxn
    26: 4,  # EndTxn
    27: 1,  # WriteTxnMarkers (v0 has no schema in the message layer)
    28: 4,  # TxnOffsetCommit
    29: 3,  # DescribeAcls
    30: 3,  # CreateAcls
    31: 3,  # DeleteAcls
    32: 4,  # DescribeConfigs
    33: 2,  # AlterConfigs
    35: 4,  # DescribeLogDirs
    37: 3,  # CreatePartitions
    42: 2,  # DeleteGroups
    44: 1,  # IncrementalAlterConfigs
    47: 0,  # OffsetDelete
    50: 0,  # DescribeUserScramCredentials
    51: 0,  # AlterUserScramCredentials
    60: 1,  # DescribeCluster
    61: 0,  # DescribeProducers
    65: 0,  # DescribeTransactions
    66: 1,  # ListTransactions
    # LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown: every version kcli states.
    **stated_apis.highest_versions(),
}


class BrokerUnreachable(KafkaError):
    """The broker could not be reached, or the connection broke with requests in flight."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.NETWORK_EXCEPTION, message)


class UnsupportedVersion(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.UNSUPPORTED_VERSION, message)


class NotAKafkaBroker(KafkaError):
    """The peer answered with a frame no Kafka broker sends (a size prefix out of bounds); asking
    it again would not help, so it is not retriable."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.UNKNOWN_SERVER_ERROR, message)


class _AnswerStream(FrameStream):
    """The answers coming back on a connection, handed to the connection that asked."""

    def __init__(self, connection: BrokerConnection, max_answer_bytes: int) -> None:
        super().__init__(max_answer_bytes, trust_announced_sizes=True)
        self.connection = connection

    def frame_received(self, body: bytes | memoryview) -> None:
        self.connection._answer(body)

    def size_refused(self, size: int) -> None:
        self.connection._fail(NotAKafkaBroker(refused_frame_message(self.connection.address, size, self.max_frame_size)))
        self.close()

    def stream_ended(self, exc: Exception | None) -> None:
        self.connection._fail(exc or asyncio.IncompleteReadError(b"", None))


@dataclasses.dataclass(frozen=True)
class FeatureMetadata:
    """The feature flags a broker's ApiVersions answer (v3+) carries, Kafka's FeatureMetadata:
    each supported feature's (min, max) version, each finalized one's (min, max) level, and the
    finalized features' epoch (None when the broker gives none, -1 on the wire)."""

    supported: dict[str, tuple[int, int]]
    finalized: dict[str, tuple[int, int]]
    finalized_epoch: int | None


class BrokerConnection:
    """A connected broker. Create with ``await BrokerConnection.open(host, port)``."""

    def __init__(self, host: str, port: int, client_id: str, max_answer_bytes: int = MAX_ANSWER_BYTES) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._stream = _AnswerStream(self, max_answer_bytes)
        self._client_id_bytes = client_id.encode()
        self._correlation = itertools.count(1)
        self._pending: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self._correlation_of: weakref.WeakKeyDictionary[asyncio.Future[Any], int] = weakref.WeakKeyDictionary()
        self._failure: Exception | None = None
        self._raw_token: asyncio.Future[bytes] | None = None  # a SaslHandshake v0 token exchange
        self.versions: dict[int, tuple[int, int]] = {}
        self.features = FeatureMetadata({}, {}, None)

    @classmethod
    async def open(
        cls, host: str, port: int, *, client_id: str = "kcli", timeout: float = 30.0, connect_timeout: float = CONNECT_TIMEOUT,
        max_answer_bytes: int = MAX_ANSWER_BYTES, timeout_setting: str = "request.timeout.ms", security: Any = None,
    ) -> BrokerConnection:
        """Connect (within ``connect_timeout``, Kafka's socket.connection.setup.timeout.ms) and
        negotiate versions (ApiVersions answered within ``timeout``, which the user set as
        ``timeout_setting``: the error names it); with ``security``, over TLS and SASL."""
        connection = cls(host, port, client_id, max_answer_bytes)
        connect_timeout = min(connect_timeout, timeout)
        context = security.ssl_context if security is not None else None
        tls = {"ssl": context, "server_hostname": host} if context is not None else {}
        try:
            await asyncio.wait_for(asyncio.get_running_loop().create_connection(lambda: connection._stream, host, port, **tls), connect_timeout)
        except ssl.SSLError as exc:
            reason = getattr(exc, "verify_message", None) or exc.reason or str(exc)
            raise BrokerUnreachable(f"cannot connect to {host}:{port}: the TLS handshake failed ({reason})") from None
        except (OSError, asyncio.TimeoutError) as exc:
            reason = f"no connection within {connect_timeout:g} s" if isinstance(exc, asyncio.TimeoutError) else _reason(exc)
            raise BrokerUnreachable(f"cannot connect to {host}:{port}: {reason}") from None
        try:
            await asyncio.wait_for(connection._negotiate(), timeout)
            if security is not None and security.uses_sasl:
                await asyncio.wait_for(connection._authenticate(security), timeout)
        except asyncio.TimeoutError:
            await connection.close()
            raise BrokerUnreachable(
                f"{host}:{port} accepted the connection but did not answer ApiVersions within {timeout:g} s ({timeout_setting})"
            ) from None
        except BaseException:
            await connection.close()
            raise
        return connection

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def max_answer_bytes(self) -> int:
        """The largest answer frame read; a larger size prefix fails the connection unread."""
        return self._stream.max_frame_size

    @max_answer_bytes.setter
    def max_answer_bytes(self, value: int) -> None:
        self._stream.max_frame_size = value

    # -- versions ------------------------------------------------------------------------------------

    async def _negotiate(self) -> None:
        version = CLIENT_MAX_VERSIONS[API_VERSIONS]
        while True:
            # No timeout of its own: open() bounds the whole negotiation.
            answer = await self.send(API_VERSIONS, version, {"client_software_name": "kcli", "client_software_version": __version__}, timeout=None)
            ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}
            code = _code(answer.error_code)
            if code == ErrorCode.UNSUPPORTED_VERSION and version > 0:
                # Ask again with the broker's highest version, or v0 when its answer named none.
                version = min(ranges.get(API_VERSIONS, (0, 0))[1], version - 1)
                continue
            if code:
                raise KafkaError(ErrorCode.for_code(code), f"ApiVersions to {self.address} failed: {ErrorCode.for_code(code).name}")
            self.versions = ranges
            epoch = int(getattr(answer, "finalized_features_epoch", -1))
            self.features = FeatureMetadata(
                {f.name: (int(f.min_version), int(f.max_version)) for f in getattr(answer, "supported_features", ())},
                {f.name: (int(f.min_version_level), int(f.max_version_level)) for f in getattr(answer, "finalized_features", ())},
                epoch if epoch >= 0 else None,
            )
            return

    async def _authenticate(self, security: Any) -> None:
        """SASL after ApiVersions (Kafka's SaslClientAuthenticator): a failure is the broker's
        message, which names no secret."""
        from kcli.security.sasl_client import SaslClientError, create_sasl_client

        mechanism = security.sasl_mechanism
        handshake = await self.send(SASL_HANDSHAKE, min(self.versions.get(SASL_HANDSHAKE, (0, 1))[1], 1), {"mechanism": mechanism}, timeout=None)
        code = _code(handshake.error_code)
        if code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
            raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                             f"{self.address} does not offer SASL mechanism {mechanism} (it offers {', '.join(handshake.mechanisms)})")
        if code:
            raise KafkaError(ErrorCode.for_code(code), f"SaslHandshake to {self.address} failed: {ErrorCode.for_code(code).name}")
        raw_tokens = self.versions.get(SASL_HANDSHAKE, (0, 0))[1] < 1
        version = min(self.versions.get(SASL_AUTHENTICATE, (0, 0))[1], 2)
        client = create_sasl_client(mechanism, security.username, security.password)
        token: bytes | None = client.first()
        while token is not None:
            if raw_tokens:
                # SaslHandshake v0 (Kafka 0.10.0-0.10.2 brokers): the tokens go as bare size-prefixed
                # frames, and a broker refusing them closes the connection without a word.
                try:
                    received = await self._exchange_raw_token(token)
                except BrokerUnreachable:
                    raise KafkaError(
                        ErrorCode.SASL_AUTHENTICATION_FAILED,
                        f"SASL authentication to {self.address} with {mechanism} failed: the broker closed the connection (SaslHandshake v0 answers no error)",
                    ) from None
            else:
                answer = await self.send(SASL_AUTHENTICATE, version, {"auth_bytes": token}, timeout=None)
                code = _code(answer.error_code)
                if code:
                    raise KafkaError(ErrorCode.for_code(code), f"SASL authentication to {self.address} with {mechanism} failed: {answer.error_message or ErrorCode.for_code(code).name}")
                received = answer.auth_bytes
            try:
                token = client.evaluate(received)
            except SaslClientError as e:
                raise KafkaError(ErrorCode.SASL_AUTHENTICATION_FAILED, f"SASL authentication to {self.address} with {mechanism} failed: {e}") from None

    async def _exchange_raw_token(self, token: bytes) -> bytes:
        """Send one SASL token as a bare frame and wait for the broker's bare frame."""
        if self._failure is not None:
            raise BrokerUnreachable(f"connection to {self.address} is closed: {_reason(self._failure)}")
        self._raw_token = asyncio.get_running_loop().create_future()
        try:
            self._stream.writelines([_SIZE.pack(len(token)), token])
            await self.drain()
            return await self._raw_token
        finally:
            self._raw_token = None

    def version_for(self, api_key: int, *, at_least: int = 0) -> int:
        """The highest version of ``api_key`` both kcli and this broker speak."""
        ours = CLIENT_MAX_VERSIONS.get(api_key)
        theirs = self.versions.get(api_key)
        name = messages.api_name(api_key) or str(api_key)
        if ours is None:
            raise UnsupportedVersion(f"kcli's client does not send {name}")
        if theirs is None:
            raise UnsupportedVersion(f"broker {self.address} does not support {name}")
        version = min(ours, theirs[1])
        while version >= max(theirs[0], at_least) and not messages.has_version(api_key, version):
            version -= 1
        if version < max(theirs[0], at_least):
            raise UnsupportedVersion(f"broker {self.address} supports {name} v{theirs[0]}-{theirs[1]}, which kcli cannot send")
        return version

    # -- requests ------------------------------------------------------------------------------------

    async def call(self, api_key: int, fields: Mapping[str, Any], *, at_least: int = 0, timeout: float | None = 30.0) -> Any:
        """Send ``fields`` as the negotiated version of ``api_key``; return the response entity."""
        return await self.send(api_key, self.version_for(api_key, at_least=at_least), fields, timeout=timeout)

    async def send(self, api_key: int, version: int, fields: Mapping[str, Any], *, timeout: float | None = 30.0, expect_response: bool = True) -> Any:
        future = self.write(api_key, version, [mapping_encoder.encode_request(api_key, version, fields)], expect_response=expect_response)
        await self.drain()
        if future is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.CancelledError:
            # Nobody will read this answer: forget it, so a later failure is not reported as an
            # exception nobody retrieved.
            self.forget(future)
            raise
        except asyncio.TimeoutError:
            self.forget(future)
            name = messages.api_name(api_key) or str(api_key)
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"{name} to {self.address} timed out after {timeout:g} s") from None

    def write(self, api_key: int, version: int, body: list[bytes], *, expect_response: bool = True) -> asyncio.Future[Any] | None:
        """Frame an encoded request body (in pieces) and write it now, without waiting; the future
        of its decoded answer, or None when no answer comes (Produce with acks=0).

        For callers that encode their own bodies and take answers in callbacks (the producer);
        they apply back-pressure themselves (``drain``).
        """
        if isinstance(self._failure, NotAKafkaBroker):
            raise self._failure
        if self._failure is not None:
            raise BrokerUnreachable(f"connection to {self.address} is closed: {_reason(self._failure)}")
        correlation_id = next(self._correlation)
        client_id = self._client_id_bytes
        header_version = messages.request_header_version(api_key, version)
        if header_version == 0:
            header = _FRAMED_HEADER_V0.pack(8 + sum(map(len, body)), api_key, version, correlation_id)
        else:
            flexible = header_version == 2
            size = 10 + len(client_id) + flexible + sum(map(len, body))
            header = _FRAMED_HEADER.pack(size, api_key, version, correlation_id, len(client_id)) + client_id
            if flexible:
                header += b"\0"
        future: asyncio.Future[Any] | None = None
        if expect_response:
            future = asyncio.get_running_loop().create_future()
            self._pending[correlation_id] = (api_key, version, future)
            self._correlation_of[future] = correlation_id
        self._stream.writelines([header, *body])
        return future

    def forget(self, future: asyncio.Future[Any]) -> None:
        """Stop waiting for an answer (its asker gave up); a late answer is dropped."""
        correlation_id = self._correlation_of.pop(future, None)
        if correlation_id is not None:
            self._pending.pop(correlation_id, None)
        future.cancel()

    async def drain(self) -> None:
        """Wait while the socket's send buffer is full."""
        try:
            await self._stream.drain()
        except OSError as exc:
            self._fail(exc)

    def _answer(self, frame: bytes | memoryview) -> None:
        if self._raw_token is not None:
            if not self._raw_token.done():
                self._raw_token.set_result(bytes(frame))
            return
        if len(frame) < _SIZE.size:
            self._fail(ConnectionError(f"the broker sent a frame of {len(frame)} bytes, too short for a response header"))
            self._stream.close()
            return
        correlation_id = _SIZE.unpack_from(frame, 0)[0]
        pending = self._pending.pop(correlation_id, None)
        if pending is None:
            return  # the asker gave up (timeout); the answer is dropped
        api_key, version, future = pending
        if future.done():
            return
        try:
            future.set_result(_decode(api_key, version, frame))
        except Exception as exc:  # a malformed answer fails its own request only
            future.set_exception(KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed {messages.api_name(api_key)} answer from {self.address}: {exc}"))

    def _fail(self, exc: Exception) -> None:
        if self._failure is None:
            self._failure = exc
        error = exc if isinstance(exc, NotAKafkaBroker) else BrokerUnreachable(f"connection to {self.address} lost: {_reason(exc)}")
        for _api_key, _version, future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        if self._raw_token is not None and not self._raw_token.done():
            self._raw_token.set_exception(error)

    @property
    def closed(self) -> bool:
        return self._failure is not None

    async def close(self) -> None:
        self._fail(ConnectionResetError("closed"))
        self._stream.close()


def refused_frame_message(address: str, size: int, limit: int) -> str:
    """One line for a size prefix the client refuses: the size and the limit (the facts of Kafka's
    ``Invalid receive (size = N larger than M)``, which Java's clients never raise, having no
    limit: KAFKA-4090), and what the four bytes look like when they are text or a TLS record,
    which is what such peers usually are."""
    prefix = size.to_bytes(4, "big", signed=True)
    message = f"{address} is not a Kafka broker: it answered a frame of {size} bytes"
    message += f" (a Kafka answer is 0 to {limit} bytes here)" if size < 0 else f", larger than the {limit} the client accepts"
    if prefix[0] in (0x15, 0x16) and prefix[1] == 0x03:
        message += "; its first bytes are a TLS record: is it an SSL listener? (security.protocol=SSL)"
    elif all(0x20 <= b < 0x7F for b in prefix):
        message += f"; its first bytes read {prefix.decode('ascii')!r}"
        if prefix == b"HTTP":
            message += ": an HTTP server"
    return message


def _decode(api_key: int, version: int, frame: bytes | memoryview) -> Any:
    position = 4
    if api_key == API_VERSIONS:
        # A broker that lacks the asked version answers with v0's body (error code, api keys);
        # some (librdkafka's mock) answer in the asked version's shape instead.
        if _ERROR_CODE.unpack_from(frame, position)[0] == ErrorCode.UNSUPPORTED_VERSION:
            for shape in (0, version):
                try:
                    return _reader(api_key, shape)(frame, position)[0]
                except Exception:
                    continue
            return _unsupported_api_versions()
    elif messages.is_flexible(api_key, version):
        position = framing.skip_tagged_fields(frame, position)
    entity, _size = _reader(api_key, version)(frame, position)
    return entity


def _unsupported_api_versions() -> Any:
    return messages.build(messages.response_type(API_VERSIONS, 0), {"error_code": int(ErrorCode.UNSUPPORTED_VERSION)})


_readers: dict[tuple[int, int], Any] = {}


def _reader(api_key: int, version: int) -> Any:
    reader = _readers.get((api_key, version))
    if reader is None:
        reader = _readers[(api_key, version)] = messages.response_reader(api_key, version)
    return reader


def _code(error_code: Any) -> int:
    return int(getattr(error_code, "value", error_code))


def error_code(value: Any) -> int:
    """A response field's error code as an int (kio answers with its own enum)."""
    return _code(value)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    if isinstance(exc, asyncio.IncompleteReadError):
        return "connection closed by the broker"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
