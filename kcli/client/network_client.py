"""The client's network layer (Kafka's NetworkClient): bootstrap, one connection per broker,
metadata requests, leaders, coordinators, retries.

``NetworkClient`` is what every client part (admin, producer, consumer) talks through. It connects
to the first reachable bootstrap address, keeps one connection per broker, keeps the cluster's
``Metadata`` (``metadata.py``) and refreshes it when an answer says leadership moved, and retries
retriable errors with backoff.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from kcli.client.connection import ANSWER_OVERHEAD_BYTES, MAX_ANSWER_BYTES, BrokerConnection, BrokerUnreachable, NotAKafkaBroker, error_code
from kcli.client.metadata import STALE_METADATA, Metadata, Node, TopicInfo
from kcli.errors import ErrorCode, KafkaError, UsageError

METADATA = 3
FIND_COORDINATOR = 10
T = TypeVar("T")

def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """``host:port[,host:port]`` as (host, port) pairs; a missing port is Kafka's 9092."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    result = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        if "://" in item:
            item = item.split("://", 1)[1]
        host, sep, port = item.rpartition(":")
        if not sep:
            host, port = item, "9092"
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not port.isdigit() or not host:
            raise UsageError(f"invalid bootstrap server address {item!r} (expected host:port)")
        if not 0 < int(port) <= 65535:
            # Kafka's ClientUtils.parseAndValidateAddresses refuses it before connecting.
            raise UsageError(f"Invalid port in bootstrap.servers: {item}")
        result.append((host, int(port)))
    if not result:
        raise UsageError("no bootstrap server given")
    return result


class NetworkClient:
    """Connections and metadata for one cluster. Use as ``async with NetworkClient(servers) as c``."""

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str = "kcli",
        request_timeout: float = 30.0,
        retries: int = 5,
        retry_backoff: float = 0.1,
        retry_backoff_max: float = 1.0,
        security: Any = None,
    ) -> None:
        """``security``: a ``security_config.ClientSecurity`` for TLS and SASL listeners."""
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.retry_backoff_max = retry_backoff_max
        self.max_answer_bytes = MAX_ANSWER_BYTES
        self.metadata = Metadata()
        self._connections: dict[int, BrokerConnection] = {}
        self._connecting: dict[int, asyncio.Task[BrokerConnection]] = {}
        self._bootstrap_connection: BrokerConnection | None = None
        self._coordinators: dict[tuple[int, str], int] = {}

    async def __aenter__(self) -> NetworkClient:
        await self.any_connection()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        connections = list(self._connections.values())
        if self._bootstrap_connection is not None and self._bootstrap_connection not in connections:
            connections.append(self._bootstrap_connection)
        self._connections.clear()
        self._bootstrap_connection = None
        for task in self._connecting.values():
            task.cancel()
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

    # -- connections ---------------------------------------------------------------------------------

    def allow_answers_of(self, fetch_max_bytes: int) -> None:
        """Accept answers as large as a Fetch of ``fetch_max_bytes`` may be, on every connection
        (librdkafka raises receive.message.max.bytes to fetch.max.bytes + 512 alike)."""
        self.max_answer_bytes = max(self.max_answer_bytes, min(fetch_max_bytes + ANSWER_OVERHEAD_BYTES, 0x7FFFFFFF))
        for connection in [*self._connections.values(), self._bootstrap_connection]:
            if connection is not None:
                connection.max_answer_bytes = self.max_answer_bytes

    async def open_connection(self, host: str, port: int, *, timeout: float | None = None, timeout_setting: str = "request.timeout.ms") -> BrokerConnection:
        """A new connection to ``host:port`` with this cluster's answer limit, ready within the
        request timeout (or ``timeout``, named ``timeout_setting``, when that is shorter)."""
        if timeout is None or timeout >= self.request_timeout:
            timeout, timeout_setting = self.request_timeout, "request.timeout.ms"
        return await BrokerConnection.open(
            host, port, client_id=self.client_id, timeout=timeout, max_answer_bytes=self.max_answer_bytes, timeout_setting=timeout_setting,
            security=self.security,
        )

    async def any_connection(self, *, timeout: float | None = None, timeout_setting: str = "request.timeout.ms") -> BrokerConnection:
        """A live connection to some broker: a known one, else the first bootstrap that answers
        (within ``timeout`` when given and shorter than the request timeout; see open_connection)."""
        for connection in self._connections.values():
            if not connection.closed:
                return connection
        if self._bootstrap_connection is not None and not self._bootstrap_connection.closed:
            return self._bootstrap_connection
        failures = []
        for host, port in self.bootstrap:
            try:
                self._bootstrap_connection = await self.open_connection(host, port, timeout=timeout, timeout_setting=timeout_setting)
                return self._bootstrap_connection
            except KafkaError as exc:
                failures.append(exc)
        if len(failures) == 1 and isinstance(failures[0], NotAKafkaBroker):
            raise failures[0]
        raise BrokerUnreachable("no bootstrap server reachable: " + "; ".join(map(str, failures)))

    async def connection(self, node_id: int) -> BrokerConnection:
        """The connection to broker ``node_id``, opened on first use."""
        connection = self._connections.get(node_id)
        if connection is not None and not connection.closed:
            return connection
        task = self._connecting.get(node_id)
        if task is None:
            node = self.metadata.brokers.get(node_id)
            if node is None:
                await self.refresh()
                node = self.metadata.brokers.get(node_id)
                if node is None:
                    raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"broker {node_id} is not in the cluster's metadata")
            task = asyncio.get_running_loop().create_task(self.open_connection(node.host, node.port))
            self._connecting[node_id] = task
        try:
            connection = await asyncio.shield(task)
        finally:
            if task.done():
                self._connecting.pop(node_id, None)
        self._connections[node_id] = connection
        return connection

    # -- metadata ------------------------------------------------------------------------------------

    async def refresh(self, topics: Iterable[str] | None = None, *, allow_auto_create: bool = False) -> Metadata:
        """Fetch metadata (for ``topics``, or every topic when None) and merge it into the cache."""
        connection = await self.any_connection()
        names = None if topics is None else sorted(set(topics))
        version = connection.version_for(METADATA)
        if names is None and version == 0:
            wanted: list[Any] | None = []
        else:
            wanted = None if names is None else [{"name": n} for n in names]
        answer = await connection.send(
            METADATA,
            version,
            {"topics": wanted, "allow_auto_topic_creation": allow_auto_create, "include_topic_authorized_operations": False},
            timeout=self.request_timeout,
        )
        metadata = self.metadata
        metadata.update(answer, every_topic=names is None)
        return metadata

    async def topic(self, name: str, *, allow_auto_create: bool = False) -> TopicInfo:
        """A topic's metadata, fetched when not cached; raises UNKNOWN_TOPIC_OR_PARTITION."""
        info = self.metadata.topics.get(name)
        if info is None or info.error or not info.partitions:
            await self.refresh([name], allow_auto_create=allow_auto_create)
            info = self.metadata.topics.get(name)
        if info is None or info.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{name}' does not exist")
        if info.error:
            code = ErrorCode.for_code(info.error)
            raise KafkaError(code, f"topic '{name}': {code.name}")
        return info

    def forget(self, topic: str) -> None:
        """Drop a topic's cached metadata, so the next lookup asks a broker."""
        self.metadata.topics.pop(topic, None)

    async def leader(self, topic: str, partition: int) -> int:
        info = await self.topic(topic)
        part = info.partitions.get(partition)
        if part is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{topic}' has no partition {partition}")
        if part.leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition} has no leader")
        return part.leader

    # -- coordinators --------------------------------------------------------------------------------

    async def coordinator(self, key: str, key_type: int = 0) -> int:
        """The node id coordinating group (``key_type`` 0) or transactional id (1) ``key``."""
        cached = self._coordinators.get((key_type, key))
        if cached is not None:
            return cached
        connection = await self.any_connection()
        answer = await connection.call(FIND_COORDINATOR, {"key": key, "key_type": key_type}, timeout=self.request_timeout)
        code = error_code(answer.error_code)
        if code:
            raise KafkaError(ErrorCode.for_code(code), f"FindCoordinator for '{key}': {ErrorCode.for_code(code).name}")
        node = Node(int(answer.node_id), answer.host, int(answer.port))
        self.metadata.brokers.setdefault(node.node_id, node)
        self._coordinators[(key_type, key)] = node.node_id
        return node.node_id

    def forget_coordinator(self, key: str, key_type: int = 0) -> None:
        self._coordinators.pop((key_type, key), None)

    # -- calls ---------------------------------------------------------------------------------------

    async def call(self, node_id: int | None, api_key: int, fields: Mapping[str, Any], *, at_least: int = 0, timeout: float | None = None) -> Any:
        """One request to broker ``node_id`` (any broker when None), no retries."""
        connection = await (self.any_connection() if node_id is None else self.connection(node_id))
        return await connection.call(api_key, fields, at_least=at_least, timeout=self.request_timeout if timeout is None else timeout)

    async def retrying(self, attempt: Callable[[], Awaitable[T]], *, on_stale: Callable[[], None] | None = None) -> T:
        """Run ``attempt`` until it succeeds, retrying retriable Kafka errors with backoff.

        After an error that means stale metadata, the cache is refreshed (and ``on_stale`` called)
        before the next attempt.
        """
        backoff = self.retry_backoff
        for tries in range(self.retries + 1):
            try:
                return await attempt()
            except KafkaError as exc:
                if not exc.error_code.retriable or tries == self.retries:
                    raise
                if exc.error_code in STALE_METADATA:
                    if on_stale is not None:
                        on_stale()
                    self._coordinators.clear()
                    try:
                        await self.refresh(list(self.metadata.topics) or None)
                    except KafkaError:
                        pass
                await asyncio.sleep(backoff * (0.8 + 0.4 * random.random()))
                backoff = min(backoff * 2, self.retry_backoff_max)
        raise AssertionError("unreachable")


def raise_for(code: int, what: str) -> None:
    """Raise the KafkaError of a non-zero wire error code, naming ``what`` failed."""
    if code:
        error = ErrorCode.for_code(code)
        raise KafkaError(error, f"{what}: {error.message}")
