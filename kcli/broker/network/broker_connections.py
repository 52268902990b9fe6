"""The broker's connections to the other brokers of its cluster, for the requests it sends them
itself (WriteTxnMarkers, AddPartitionsToTxn verification), as Kafka's broker uses the clients'
NetworkClient: the client's ``BrokerConnection``, one per destination broker, opened on first use
at the address that broker registered, dropped after a failed request. Nothing here blocks the
event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from kcli.client.connection import BrokerConnection, UnsupportedVersion
from kcli.errors import ErrorCode, KafkaError


class BrokerConnections:
    """One connection per destination broker, for one purpose (one ``client_id``)."""

    def __init__(
        self, address_of: Callable[[int], tuple[str, int] | None], *, client_id: str, request_timeout_ms: int, security: Any = None
    ) -> None:
        self._security = security  # how to reach the inter-broker listener
        self._address_of = address_of
        self._client_id = client_id
        self.timeout = request_timeout_ms / 1000
        self._connections: dict[int, BrokerConnection] = {}

    async def call(self, destination: int, api_key: int, fields: Mapping[str, Any], *, versions: tuple[int, int] | None = None) -> Any:
        """One request to broker ``destination``: at the highest version both speak, or the
        highest of ``versions`` (an inter-broker form clients do not send) the destination does.
        A failure (the broker not alive, unreachable, too slow) raises KafkaError and drops the
        connection."""
        connection = self._connections.get(destination)
        if connection is None or connection.closed:
            address = self._address_of(destination)
            if address is None:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {destination} is not alive")
            connection = await BrokerConnection.open(address[0], address[1], client_id=self._client_id, timeout=self.timeout, security=self._security)
            self._connections[destination] = connection
        try:
            if versions is None:
                return await connection.call(api_key, fields, timeout=self.timeout)
            theirs = connection.versions.get(api_key, (0, -1))
            version = min(versions[1], theirs[1])
            if version < max(versions[0], theirs[0]):
                raise UnsupportedVersion(f"broker {destination} supports versions {theirs[0]}-{theirs[1]} of API {api_key}, not {versions[0]}-{versions[1]}")
            return await connection.send(api_key, version, fields, timeout=self.timeout)
        except KafkaError:
            if self._connections.get(destination) is connection:
                del self._connections[destination]
            await connection.close()
            raise

    async def close(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


def live_broker_address(broker: Any) -> Callable[[int], tuple[str, int] | None]:
    """``address_of`` for ``BrokerConnections``: where a live broker of ``broker``'s cluster listens."""

    def address_of(broker_id: int) -> tuple[str, int] | None:
        for address in broker.live_brokers():
            if address.id == broker_id:
                return address.host, address.port
        return None

    return address_of
