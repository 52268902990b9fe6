"""The network layer: requests answered as they are read, or by the connection's task, in order.

Like Kafka's SocketServer, a connection's requests are processed one at a time and answered in
the order they came (a client pipelines; the broker does not reorder). A request whose handler
never waits is answered inside the read callback when nothing is queued ahead of it; the others
(Fetch, JoinGroup, SyncGroup), and every request behind them, go to the connection's task.

A frame larger than ``socket.request.max.bytes``, a header or body that does not parse, an
unknown API key or a version the registry does not serve closes that connection with one log
line, and nothing read after it is served; ApiVersions is the exception, answered in v0 with
UNSUPPORTED_VERSION and the served ranges, as Kafka does, so a newer client can fall back. Any
other failure inside a handler is logged with its traceback and closes only that connection.
Fetch responses send large file ranges with ``sendfile``.

Frames are read by a buffered protocol (``Connection``, on ``kcli.network.frame_stream``): a
large frame (a produce request) is received straight into a buffer of its own, grown as its bytes
arrive, so its bytes are copied once, by the kernel, on their way in, and an announced size costs
nothing until it is sent. Frames are writable: a produce request's records are validated, given
their offsets and written to the log where they arrived (``protocol.produce_request``).

A listener's security (``listeners.ListenerSecurity``) decides how its connections start: on SSL
and SASL_SSL listeners the accepted socket is wrapped in TLS before the first frame is read (a
failed handshake, a plaintext client among them, closes it with one log line); a client
certificate's subject, through ``ssl.principal.mapping.rules``, is the connection's principal,
``User:ANONYMOUS`` otherwise. On SASL_PLAINTEXT and SASL_SSL listeners every frame goes to the
connection's ``SaslServerAuthenticator`` until it has authenticated the client (``User:<name>``),
and again when its session expires. Every request's context carries the principal, the listener name
and the security protocol. File ranges go out with ``sendfile`` only on plaintext transports;
TLS encrypts in the process, so they are read and written in pieces.

Resources are bounded as Kafka's SocketServer bounds them: the server accepts connections itself
so that a listener at ``max.connections`` stops accepting (``connection_quotas``), a connection
past ``max.connections.per.ip`` is closed at once, ``queued.max.request.bytes`` is a pool each
request's size is taken from until it is answered (``RequestMemory``), and connections with no
byte read or written for ``connections.max.idle.ms`` are closed.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import os
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kcli.broker.network.authenticator import SaslServerAuthenticator
from kcli.broker.network.connection_quotas import ConnectionQuotas, normalize_address
from kcli.broker.network.listeners import ListenerSecurity
from kcli.broker.handlers import Api, RawResponse, api_ranges
from kcli.broker.security.authorizer import Action
from kcli.errors import ErrorCode
from kcli.network.frame_stream import FrameStream
from kcli.protocol import api_keys, framing, mapping_encoder, messages
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import CLUSTER_NAME, AclOperation, PatternType, ResourcePattern, ResourceType
from kcli.security.principal import ANONYMOUS, KafkaPrincipal, NoMatchingRule, subject_dn, user

log = logging.getLogger("kcli.broker.network")

# Ranges smaller than this are read and written with the response: a sendfile call costs a
# transport flush and a system call, more than copying a small range.
SENDFILE_MIN_BYTES = 64 * 1024
# A connection stops reading once this many frames, or this many bytes, wait to be handled.
MAX_QUEUED_FRAMES = 4
MAX_QUEUED_BYTES = 16 << 20
# Connections taken from one listener's backlog per event-loop turn.
_ACCEPTS_PER_CALL = 64
_ACCEPT_RETRY_SECONDS = 1.0
# A file range sent over TLS is read and written this much at a time.
_TLS_RANGE_PIECE = 256 * 1024


def _reap_interval(idle_ms: int) -> float:
    """How often idle connections are looked for: a connection closes within 1.5x its limit."""
    return min(max(idle_ms / 2000, 0.01), 30.0)


_PLAINTEXT = ListenerSecurity("PLAINTEXT", "PLAINTEXT")


@dataclass(slots=True)
class _Listener:
    name: str
    sock: socket.socket
    security: ListenerSecurity = _PLAINTEXT
    accepting: bool = False
    closed: bool = False


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request besides its body: the connection's listener name
    and security protocol (Kafka's RequestContext), for answers that depend on them (Metadata
    advertises each broker's endpoint on the same listener) and for an authorizer."""

    broker: Any
    header: framing.RequestHeader
    peer: str
    close_connection: bool = False
    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    principal: KafkaPrincipal = ANONYMOUS
    client_address: str = ""  # the peer's IP address, the host ACLs name

    @property
    def api_version(self) -> int:
        return self.header.api_version

    # -- authorization: the one way handlers ask (the broker's authorizer; none: allowed) ----------

    def authorize(
        self, operation: AclOperation, resource_type: ResourceType, name: str, *,
        log_if_allowed: bool = True, log_if_denied: bool = True, reference_count: int = 1,
    ) -> bool:
        """Whether this request's principal may do ``operation`` on the named resource (Kafka's
        AuthHelper.authorize)."""
        authorizer = getattr(self.broker, "authorizer", None)
        if authorizer is None:
            return True
        action = Action(operation, ResourcePattern(resource_type, name, PatternType.LITERAL), reference_count, log_if_allowed, log_if_denied)
        return authorizer.authorize(self.principal, self.client_address, action, api_keys.kafka_name(self.header.api_key) or "")

    @property
    def authorizing(self) -> bool:
        """Whether an authorizer is configured (without one every question answers yes)."""
        return getattr(self.broker, "authorizer", None) is not None

    def filter_by_authorized(self, operation: AclOperation, resource_type: ResourceType, names, *, log_if_denied: bool = True) -> set[str]:
        """The names among ``names`` the principal may do ``operation`` on, each distinct name
        asked once with how often the request names it (Kafka's AuthHelper.filterByAuthorized)."""
        counts: dict[str, int] = {}
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        return {
            name
            for name, count in counts.items()
            if self.authorize(operation, resource_type, name, log_if_denied=log_if_denied, reference_count=count)
        }

    def authorize_by_resource_type(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type."""
        authorizer = getattr(self.broker, "authorizer", None)
        if authorizer is None:
            return True
        return authorizer.authorize_by_resource_type(
            self.principal, self.client_address, operation, resource_type, api_keys.kafka_name(self.header.api_key) or ""
        )

    def authorize_cluster(self, operation: AclOperation, *, log_if_denied: bool = True) -> bool:
        return self.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied=log_if_denied)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> frozenset[AclOperation] | None:
        """The operations this principal may do on the resource (KIP-430); None without an
        authorizer (every supported operation, as Kafka answers then)."""
        authorizer = getattr(self.broker, "authorizer", None)
        if authorizer is None:
            return None
        resource = ResourcePattern(resource_type, name, PatternType.LITERAL)
        return authorizer.authorized_operations(self.principal, self.client_address, resource, api_keys.kafka_name(self.header.api_key) or "")


class CloseConnection(Exception):
    """Raised inside the network layer to drop a connection after logging why."""


class _FileRange:
    """The file object ``loop.sendfile`` wants, over a descriptor another object owns."""

    mode = "rb"

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def seek(self, offset: int, whence: int = 0) -> int:
        return offset


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """The broker configs the network layer honours."""

    max_request_size: int = framing.DEFAULT_MAX_REQUEST_SIZE  # socket.request.max.bytes
    queued_max_request_bytes: int = -1  # -1: no limit
    connections_max_idle_ms: int = 600_000
    listen_backlog: int = 50
    quotas: ConnectionQuotas | None = None

    @classmethod
    def from_config(cls, config: Any) -> ServerSettings:
        return cls(
            config.get("socket.request.max.bytes"),
            config.get("queued.max.request.bytes"),
            config.get("connections.max.idle.ms"),
            config.get("socket.listen.backlog.size"),
            ConnectionQuotas.from_config(config),
        )


class RequestMemory:
    """``queued.max.request.bytes`` as Kafka's request memory pool: a request's size is taken when
    its size prefix is read and given back once it is answered. Like Kafka's (non-strict) pool, a
    request is admitted while any memory is left; a connection whose next request is not admitted
    stops reading until memory is given back."""

    def __init__(self, capacity: int) -> None:
        self.unlimited = capacity <= 0
        self.available = capacity
        self._waiting: collections.deque[Connection] = collections.deque()

    def reserve(self, size: int, connection: Connection) -> bool:
        if self.unlimited:
            return True
        if self.available <= 0:
            self._waiting.append(connection)
            return False
        self.available -= size
        return True

    def release(self, size: int) -> None:
        if self.unlimited or size == 0:
            return
        self.available += size
        while self._waiting and self.available > 0:
            self._waiting.popleft().memory_available()


class Server:
    def __init__(self, broker: Any, registry: Mapping[int, Api], *, max_request_size: int | None = None, settings: ServerSettings | None = None) -> None:
        settings = settings or ServerSettings()
        if max_request_size is not None:
            settings = dataclasses.replace(settings, max_request_size=max_request_size)
        self.broker = broker
        self.registry = registry
        self.settings = settings
        self.max_request_size = settings.max_request_size
        self.quotas = settings.quotas or ConnectionQuotas()
        self.memory = RequestMemory(settings.queued_max_request_bytes)
        self._listeners: list[_Listener] = []
        self._connections: set[asyncio.Task] = set()
        self._connecting: set[asyncio.Task] = set()
        self._open: set[Connection] = set()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._reaper: asyncio.TimerHandle | None = None

    async def listen(
        self, host: str, port: int, listener_name: str = "PLAINTEXT", *, accept: bool = True, security: ListenerSecurity | None = None
    ) -> tuple[str, int]:
        """Bind (host, port) and start accepting, or with ``accept=False`` only bind until
        ``start_accepting`` (connections wait in the backlog); returns the bound address (port 0
        picks a free one). ``security``: the listener's protocol and TLS context (PLAINTEXT by
        default)."""
        loop = asyncio.get_running_loop()
        if host:
            sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET, backlog=self.settings.listen_backlog)
        elif socket.has_dualstack_ipv6():
            sock = socket.create_server(("", port), family=socket.AF_INET6, backlog=self.settings.listen_backlog, dualstack_ipv6=True)
        else:
            sock = socket.create_server(("", port), backlog=self.settings.listen_backlog)
        sock.setblocking(False)
        listener = _Listener(listener_name.upper(), sock, security or ListenerSecurity(listener_name.upper(), "PLAINTEXT"))
        self._listeners.append(listener)
        if accept:
            self._resume_accepting(listener)
        self._schedule_reaper(loop)
        bound = sock.getsockname()
        return bound[0], bound[1]

    def start_accepting(self) -> None:
        for listener in self._listeners:
            if not listener.accepting and not listener.closed:
                self._resume_accepting(listener)

    def stop_accepting(self) -> None:
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            if listener.accepting:
                loop.remove_reader(listener.sock.fileno())
                listener.accepting = False
            listener.closed = True
            listener.sock.close()
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None

    async def drain_and_close(self, timeout: float) -> None:
        """Wait (bounded) for in-flight requests to finish, then drop every connection."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            log.warning("Closing connections with %d requests still in flight", self._in_flight)
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=timeout)

    # -- accepting -----------------------------------------------------------------------------------

    def _resume_accepting(self, listener: _Listener) -> None:
        if not listener.accepting and not listener.closed:
            listener.accepting = True
            asyncio.get_running_loop().add_reader(listener.sock.fileno(), self._accept, listener)

    def _accept(self, listener: _Listener) -> None:
        """Accept what waits on ``listener`` while it has slots; at its limit, stop accepting (the
        rest wait in the backlog) until a connection closes."""
        loop = asyncio.get_running_loop()
        quotas = self.quotas
        for _ in range(_ACCEPTS_PER_CALL):
            if not quotas.slot_available(listener.name):
                loop.remove_reader(listener.sock.fileno())
                listener.accepting = False
                return
            try:
                sock, peer = listener.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionError:  # the peer gave up before it was accepted
                continue
            except OSError as e:
                # Out of descriptors or memory: the waiting connection stays in the backlog, so
                # accepting again at once would spin. Pause, as asyncio's own server does.
                log.warning("Could not accept a connection on %s, retrying in %.0f s: %s", listener.name, _ACCEPT_RETRY_SECONDS, e)
                loop.remove_reader(listener.sock.fileno())
                listener.accepting = False
                loop.call_later(_ACCEPT_RETRY_SECONDS, self._resume_accepting, listener)
                return
            address = normalize_address(str(peer[0]))
            if not quotas.inc(listener.name, address):
                log.info("Rejected connection from %s, address already has the configured maximum of %d connections.", address, quotas.max_for(address))
                sock.close()
                continue
            sock.setblocking(False)
            if quotas.protected(listener.name) and quotas.total > quotas.max_connections:
                self._close_least_recently_active()
            task = loop.create_task(self._connect(listener, sock, address))
            self._connecting.add(task)  # held until done: the loop keeps only weak references to tasks
            task.add_done_callback(self._connecting.discard)

    async def _connect(self, listener: _Listener, sock: socket.socket, address: str) -> None:
        security = listener.security
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                lambda: Connection(self, listener.name, address, security), sock, ssl=security.ssl_context
            )
        except Exception as e:
            if isinstance(e, ssl.SSLError):
                # A plaintext client, a certificate from another CA or expired, no certificate
                # where one is required: Kafka's "Failed authentication" line, once.
                log.info("Failed authentication with %s on listener %s (SSL handshake failed: %s)", address, listener.name, _ssl_reason(e))
            elif security.ssl_context is not None:
                log.debug("Connection from %s on listener %s closed during the TLS handshake: %s", address, listener.name, e)
            sock.close()
            self._connection_closed(listener.name, address)

    def _connection_closed(self, listener_name: str, address: str) -> None:
        self.quotas.dec(listener_name, address)
        for listener in self._listeners:
            if not listener.accepting and self.quotas.slot_available(listener.name):
                self._resume_accepting(listener)

    def _close_least_recently_active(self) -> None:
        """The inter-broker listener went past ``max.connections``: another listener gives up its
        least recently active connection (Kafka's closeExcessConnections)."""
        candidates = [c for c in self._open if self.quotas.exceeded(c.listener) and not c.transport.is_closing()]
        if candidates:
            victim = min(candidates, key=lambda c: c.last_active)
            log.info("Closing connection from %s: the broker is over max.connections", victim.peer)
            victim.close()

    # -- idle connections ----------------------------------------------------------------------------

    def _schedule_reaper(self, loop: asyncio.AbstractEventLoop) -> None:
        idle_ms = self.settings.connections_max_idle_ms
        if self._reaper is None and 0 < idle_ms < 2**62:
            self._reaper = loop.call_later(_reap_interval(idle_ms), self._reap_idle, loop)

    def _reap_idle(self, loop: asyncio.AbstractEventLoop) -> None:
        """Close connections with no bytes read or written for ``connections.max.idle.ms`` (a
        request still being handled keeps its connection), as Kafka's selector expires them: a
        peer that sent half a frame and stopped is idle too."""
        self._reaper = None
        idle_ms = self.settings.connections_max_idle_ms
        deadline = loop.time() - idle_ms / 1000
        for connection in list(self._open):
            if connection.last_active < deadline and not connection.handling:
                log.debug("Closing connection from %s: idle for more than %d ms (connections.max.idle.ms)", connection.peer, idle_ms)
                connection.close()
        if any(not listener.closed for listener in self._listeners):
            self._reaper = loop.call_later(_reap_interval(idle_ms), self._reap_idle, loop)

    # -- one connection ----------------------------------------------------------------------------

    async def serve(self, connection: Connection) -> None:
        """Answer the requests ``answer_now`` left to the connection's task, in order, until the
        connection closes or must be closed."""
        task = asyncio.current_task()
        self._connections.add(task)
        try:
            while (frame := await connection.next_frame()) is not None:
                self._begin()
                connection.handling = True
                try:
                    if isinstance(frame, _Deferred):
                        connection.awaiting_produce = frame.produce
                        response = frame.response
                        if asyncio.iscoroutine(response):
                            response = await response
                    else:
                        response = self._handle(frame, connection)
                        if asyncio.iscoroutine(response):
                            response = await response
                    if response is not None:
                        await self._write(connection, response)
                finally:
                    connection.handling = connection.awaiting_produce = False
                    connection.request_done(frame)
                    self._end()
        except asyncio.CancelledError:
            pass
        except Exception as e:
            _log_failure(connection, e)
        finally:
            self._connections.discard(task)
            connection.close()
            connection.release_memory()

    def answer_now(self, connection: Connection, frame: bytes | memoryview) -> bool:
        """Answer ``frame`` within this call when its API answers without waiting (every API but
        Fetch, JoinGroup and SyncGroup): no task switch between reading a request and writing its
        answer. False leaves the frame to the connection's task. A handler that decides to take
        its time (a Produce of many compressed batches) returns a coroutine: the connection's task
        finishes it, ahead of any request read after it."""
        api = self.registry.get(framing.peek_api_key(frame))
        if api is None or api.waits:
            return False
        try:
            response = self._handle(frame, connection)
            if asyncio.iscoroutine(response):
                connection.defer(_Deferred(response, len(frame), produce=api.key == ApiKey.PRODUCE))
                return True
            if response is not None:
                connection.write(response[0] if len(response) == 1 else b"".join(map(_inline, response)))
        except Exception as e:
            _log_failure(connection, e)
            connection.close()
        connection.request_done(frame)
        return True

    def answer_in_turn(self, connection: Connection, frame: bytes | memoryview) -> bool:
        """Handle a Produce at once although answers of earlier Produce requests of its connection
        still wait (acks=all ones, for their in-sync replicas), its answer queued behind theirs.
        Kafka's broker handles a connection's next request only once it answered the last; kcli
        appends in the same order and answers in the same order, but a producer's pipelined
        requests share the followers' round trips instead of each waiting out its own. False (the
        frame left to the connection's task) for any other API."""
        if framing.peek_api_key(frame) != ApiKey.PRODUCE or ApiKey.PRODUCE not in self.registry:
            return False
        try:
            response = self._handle(frame, connection)
        except Exception as e:
            _log_failure(connection, e)
            connection.close()
            connection.request_done(frame)
            return True
        connection.defer(_Deferred(response, len(frame), produce=True))
        return True

    def _begin(self) -> None:
        self._in_flight += 1
        self._idle.clear()

    def _end(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0:
            self._idle.set()

    def _handle(self, frame: bytes | memoryview, connection: Connection) -> Any:
        """The response frame's chunks (size first), None when nothing is to be sent, or, for a
        handler that waits, a coroutine giving one of those."""
        try:
            api_key, api_version, correlation_id = framing.peek_api(frame)
            api = self.registry.get(api_key)
            if api is None:
                raise CloseConnection(f"unknown API key {api_key}")
            if not api.serves(api_version):
                if api_key == framing.API_VERSIONS_KEY:
                    return self._unsupported_api_versions(correlation_id)
                raise CloseConnection(f"{api.name} version {api_version} is not served (versions {api.min_version}-{api.max_version})")
            header_version = messages.request_header_version(api_key, api_version)
            header, body_offset = framing.decode_request_header(frame, header_version == 2, with_client_id=header_version > 0)
        except framing.InvalidRequest as e:
            raise CloseConnection(str(e)) from None
        try:
            request = messages.decode_request(api_key, api_version, frame, body_offset)
        except Exception as e:
            raise CloseConnection(f"malformed {api.name} v{api_version} request: {e}") from None
        ctx = RequestContext(
            self.broker, header, connection.peer, listener_name=connection.listener, security_protocol=connection.security_protocol,
            principal=connection.principal, client_address=connection.address,
        )
        result = api.handle(ctx, request)
        if api.waits or asyncio.iscoroutine(result):
            return self._respond_later(api, ctx, result)
        return self._respond(api, ctx, result)

    async def _respond_later(self, api: Api, ctx: RequestContext, pending: Any) -> list[Any] | None:
        return self._respond(api, ctx, await pending)

    def _respond(self, api: Api, ctx: RequestContext, result: Any) -> list[Any] | None:
        if ctx.close_connection:
            raise CloseConnection(f"{api.name} with acks=0 failed")
        if result is None:
            return None
        header = ctx.header
        response_flexible = messages.is_flexible(api.key, header.api_version) and api.key != framing.API_VERSIONS_KEY
        head = framing.response_header(header.correlation_id, response_flexible)
        if isinstance(result, RawResponse):
            return [framing.frame_size(len(head) + result.size), head, *result.chunks]
        body = mapping_encoder.encode_response(api.key, header.api_version, result)
        return [framing.frame_size(len(head) + len(body)) + head + body]

    def scram_credential(self, user: str, mechanism: str) -> Any:
        """The stored SCRAM credential of ``user`` (the broker's credential cache), or None."""
        cache = getattr(self.broker, "credential_cache", None)
        return cache.credential(user, mechanism) if cache is not None else None

    def _unsupported_api_versions(self, correlation_id: int) -> list[Any]:
        body = mapping_encoder.encode_response(
            framing.API_VERSIONS_KEY, 0, {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": api_ranges(self.registry)}
        )
        head = framing.response_header(correlation_id, False)
        return [framing.frame_size(len(head) + len(body)) + head + body]

    async def _write(self, connection: Connection, chunks: list[Any]) -> None:
        pending: list[bytes] = []
        for chunk in chunks:
            if isinstance(chunk, bytes):
                pending.append(chunk)
            elif chunk.size < SENDFILE_MIN_BYTES or (connection.tls and chunk.size <= _TLS_RANGE_PIECE):
                pending.append(_inline(chunk))
            else:
                if pending:
                    connection.write(b"".join(pending))
                    pending = []
                await connection.send_range(chunk)
        if pending:
            connection.write(b"".join(pending) if len(pending) > 1 else pending[0])
        await connection.drain()


@dataclass(slots=True)
class _Deferred:
    """A request handled from the read callback whose answer the connection's task writes in
    turn: a coroutine it awaits (a handler that takes its time), or, for a Produce handled
    behind other Produce answers (``produce``), the answer itself."""

    response: Any
    size: int
    produce: bool = False

    def __len__(self) -> int:
        return self.size


class Connection(FrameStream):
    """One client connection: queues the request frames it reads (``FrameStream``) for the
    connection's task (``Server.serve``); writes responses with flow control.

    A size prefix outside 0..``socket.request.max.bytes`` closes the connection once the frames
    before it are answered. Reading pauses while ``MAX_QUEUED_FRAMES`` or ``MAX_QUEUED_BYTES``
    wait, so a client that pipelines without reading its answers is held back by TCP, not by the
    broker's memory, and while ``queued.max.request.bytes`` is used up. ``last_active`` is when a
    byte was last read or written, for ``connections.max.idle.ms``."""

    def __init__(self, server: Server, listener: str = "PLAINTEXT", address: str = "?", security: ListenerSecurity | None = None) -> None:
        super().__init__(server.max_request_size, writable_frames=True)
        self._server = server
        self.listener = listener
        self._security = security or ListenerSecurity(listener, "PLAINTEXT")
        self.security_protocol = self._security.security_protocol
        self.tls = self._security.ssl_context is not None
        self.principal: KafkaPrincipal = ANONYMOUS
        self.authenticator: SaslServerAuthenticator | None = None
        self.address = address
        self.peer = "?"
        self.handling = False
        self.awaiting_produce = False  # the task awaits a Produce's answer (``Server.answer_in_turn``)
        self.last_active = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._frames: collections.deque[bytes | memoryview | _Deferred | CloseConnection | None] = collections.deque()
        self._queued_bytes = 0
        self._reserved = 0  # bytes of queued.max.request.bytes this connection holds
        self._frame_waiter: asyncio.Future | None = None
        self._reading_paused = False
        self._memory_wait = False
        self._counted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._loop = asyncio.get_running_loop()
        self.last_active = self._loop.time()
        self.peer = _peer_name(transport.get_extra_info("peername"))
        self._counted = True
        self._server._open.add(self)
        if self.tls and not self._tls_principal(transport):
            transport.close()
            return
        if self._security.sasl is not None:
            server = self._server
            self.authenticator = SaslServerAuthenticator(
                self._security.sasl, self.listener, self.peer, server.scram_credential, self.write, self.close,
                lambda frame: server._handle(frame, self),
            )
        self._loop.create_task(self._server.serve(self))

    def _tls_principal(self, transport: asyncio.BaseTransport) -> bool:
        """The principal of a TLS connection: its client certificate's subject mapped by
        ``ssl.principal.mapping.rules``, or ANONYMOUS without one. False when no rule applies."""
        certificate = transport.get_extra_info("peercert")
        if certificate:
            dn = subject_dn(certificate)
            try:
                self.principal = user(self._security.principal_mapper.name(dn))
            except NoMatchingRule as e:
                log.info("Failed authentication with %s on listener %s (%s)", self.address, self.listener, e)
                return False
        log.debug("Connection from %s on listener %s (%s) authenticated as %s", self.peer, self.listener, self.security_protocol, self.principal)
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._server._open.discard(self)
        if self._counted:
            self._counted = False
            self._server._connection_closed(self.listener, self.address)

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = self._loop.time()
        super().buffer_updated(nbytes)

    def write(self, data: bytes) -> None:
        self.last_active = self._loop.time()
        super().write(data)

    # -- frames ------------------------------------------------------------------------------------

    def frame_started(self, size: int) -> bool:
        if not self._server.memory.reserve(size, self):
            self._memory_wait = True
            self._update_reading()
            return False
        self._reserved += size
        return True

    def memory_available(self) -> None:
        """Called by the request memory pool once memory is given back."""
        if self._memory_wait and not self.lost:
            self._memory_wait = False
            self._update_reading()
            self.continue_frames()

    def request_done(self, frame: Any) -> None:
        """A request was answered (or dropped): its memory goes back to the pool."""
        size = len(frame) if frame is not None and not isinstance(frame, CloseConnection) else 0
        size = min(size, self._reserved)
        if size:
            self._reserved -= size
            self._server.memory.release(size)

    def release_memory(self) -> None:
        """The connection is done: whatever it still holds goes back to the pool."""
        size, self._reserved = self._reserved, 0
        self._server.memory.release(size)

    def frame_received(self, body: bytes | memoryview) -> None:
        if self.transport.is_closing():
            self.request_done(body)
            return  # a request before it closed the connection: the rest of the read is not served
        authenticator = self.authenticator
        if authenticator is not None and authenticator.intercepts(body):
            authenticator.receive(body)
            if authenticator.complete:
                self.principal = authenticator.principal
            self.request_done(body)
            return
        # Answered at once only while the task waits for work and the answers drain: otherwise
        # it would overtake the requests before it, or write past the transport's high-water mark.
        idle = self._frame_waiter is not None and not self._frames and not self._writing_paused
        if idle and self._server.answer_now(self, body):
            return
        if self._behind_produce_answers_only() and self._server.answer_in_turn(self, body):
            return
        self._push(body, len(body))

    def _behind_produce_answers_only(self) -> bool:
        """Whether everything read before is handled and only Produce answers wait: the task
        idle or awaiting one, every queued item a Produce's answer, the answers draining."""
        if self._writing_paused or not all(getattr(item, "produce", False) for item in self._frames):
            return False  # a request still to handle, or another API's answer, is ahead
        # Ahead: the Produce whose answer the task awaits, or queued Produce answers (an idle task
        # with nothing queued is answer_now's case).
        return self.awaiting_produce or (self._frame_waiter is not None and bool(self._frames))

    def defer(self, deferred: _Deferred) -> None:
        self._push(deferred, 0)

    def size_refused(self, size: int) -> None:
        self._push(CloseConnection(f"request size {size} is outside 0..{self.max_frame_size} (socket.request.max.bytes)"), 0)

    def stream_ended(self, exc: Exception | None) -> None:
        self._push(None, 0)

    def _push(self, item: bytes | memoryview | _Deferred | CloseConnection | None, size: int) -> None:
        self._frames.append(item)
        self._queued_bytes += size
        self._update_reading()
        if self._frame_waiter is not None and not self._frame_waiter.done():
            self._frame_waiter.set_result(None)

    def _update_reading(self) -> None:
        """Pause reading while the queue is full or memory is short; resume once neither holds."""
        if self.lost or self.refused:
            return
        pause = self._memory_wait or len(self._frames) >= MAX_QUEUED_FRAMES or self._queued_bytes >= MAX_QUEUED_BYTES
        if pause != self._reading_paused:
            self._reading_paused = pause
            if pause:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()

    async def next_frame(self) -> bytes | memoryview | _Deferred | None:
        """The next request frame's body (or a deferred answer), or None once the peer is gone;
        raises CloseConnection where a bad size prefix was read."""
        while not self._frames:
            self._frame_waiter = asyncio.get_running_loop().create_future()
            try:
                await self._frame_waiter
            finally:
                self._frame_waiter = None
        item = self._frames.popleft()
        if isinstance(item, CloseConnection):
            raise item
        if item is not None and not isinstance(item, _Deferred):
            self._queued_bytes -= len(item)
        if self._reading_paused:
            self._update_reading()
        return item

    # -- writing -----------------------------------------------------------------------------------

    async def send_range(self, piece: Any) -> None:
        await self.drain()
        self.last_active = self._loop.time()
        if self.tls:
            await self._copy_range(piece)
            return
        await asyncio.get_running_loop().sendfile(self.transport, _FileRange(piece.fileno), piece.position, piece.size)

    async def _copy_range(self, piece: Any) -> None:
        """A file range through TLS: read and written a piece at a time, with flow control."""
        position, end = piece.position, piece.position + piece.size
        while position < end:
            data = os.pread(piece.fileno, min(_TLS_RANGE_PIECE, end - position), position)
            if not data:
                raise ConnectionError(f"a file range ended {end - position} bytes early")
            self.write(data)
            position += len(data)
            await self.drain()


def _inline(chunk: Any) -> bytes:
    """A response chunk as bytes: a file range is read."""
    return chunk if isinstance(chunk, bytes) else chunk.read()


def _log_failure(connection: Connection, exc: Exception) -> None:
    """Why a connection is being closed, as Kafka logs it: a lost peer says nothing."""
    if isinstance(exc, ConnectionError):
        return
    if isinstance(exc, CloseConnection):
        log.info("Closing connection from %s: %s", connection.peer, exc)
    else:
        log.error("Closing connection from %s after an unexpected error", connection.peer, exc_info=exc)


def _ssl_reason(error: ssl.SSLError) -> str:
    """An SSL error's reason, short: OpenSSL's (``WRONG_VERSION_NUMBER``), or its text."""
    return getattr(error, "verify_message", None) or error.reason or str(error)


def _peer_name(peer: Any) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)
