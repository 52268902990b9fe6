"""How many connections the broker holds: Kafka's ConnectionQuotas.

``max.connections`` bounds the connections of every listener together, and
``listener.name.<listener>.max.connections`` those of one listener. A listener at its limit stops
accepting: new connections wait in the listen backlog, as Kafka's acceptor blocks, until one
closes. The inter-broker listener is exempt from the broker-wide limit when the broker has more
than one listener; a connection it accepts beyond that limit closes the least recently active
connection of another listener. ``max.connections.per.ip`` (with
``max.connections.per.ip.overrides``, ``host:count`` pairs, a host name resolved at start-up)
bounds the connections from one address: the connection past it is accepted and closed at once.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Mapping
from typing import Any

from kcli.errors import ErrorCode, KafkaError

INT_MAX = 2**31 - 1


def parse_per_ip_overrides(text: str) -> dict[str, int]:
    """``host:count,...`` as address -> count; a host name is resolved to its address."""
    overrides: dict[str, int] = {}
    for entry in (item.strip() for item in (text or "").split(",")):
        if not entry:
            continue
        host, separator, count = entry.rpartition(":")
        host = host.strip().strip("[]")
        if not separator or not host or not re.fullmatch(r"\s*-?\d+\s*", count):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid max.connections.per.ip.overrides entry '{entry}': expected host:count")
        try:
            address = normalize_address(host) if _is_address(host) else normalize_address(socket.gethostbyname(host))
        except OSError:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown host {host} in max.connections.per.ip.overrides") from None
        overrides[address] = int(count)
    return overrides


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def normalize_address(host: str) -> str:
    """One spelling per address: IPv4-mapped IPv6 addresses (a dual-stack socket's) as IPv4."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


class ConnectionQuotas:
    def __init__(
        self,
        max_connections: int = INT_MAX,
        max_per_ip: int = INT_MAX,
        per_ip_overrides: Mapping[str, int] | None = None,
        listener_max: Mapping[str, int] | None = None,
        inter_broker_listener: str | None = None,
        listener_count: int = 1,
    ) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.per_ip_overrides = dict(per_ip_overrides or {})
        self.listener_max = {name.upper(): count for name, count in (listener_max or {}).items()}
        self.inter_broker_listener = (inter_broker_listener or "").upper()
        self.listener_count = listener_count
        self.total = 0
        self.by_listener: dict[str, int] = {}
        self.by_address: dict[str, int] = {}

    @classmethod
    def from_config(cls, config: Any) -> ConnectionQuotas:
        listeners = [endpoint.listener_name for endpoint in config.listeners]
        listener_max = {}
        for name in listeners:
            value = config.effective_properties.get(f"listener.name.{name.lower()}.max.connections")
            if value is not None:
                try:
                    listener_max[name] = int(value)
                except ValueError:
                    raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration listener.name.{name.lower()}.max.connections") from None
        inter_broker = config.get("inter.broker.listener.name") or config.get("security.inter.broker.protocol")
        return cls(
            config.get("max.connections"),
            config.get("max.connections.per.ip"),
            parse_per_ip_overrides(config.get("max.connections.per.ip.overrides")),
            listener_max,
            inter_broker,
            len(listeners),
        )

    def protected(self, listener: str) -> bool:
        """The inter-broker listener, when there are others: exempt from ``max.connections``."""
        return listener == self.inter_broker_listener and self.listener_count > 1

    def slot_available(self, listener: str) -> bool:
        """Whether ``listener`` may accept a connection now (Kafka's connectionSlotAvailable)."""
        if self.by_listener.get(listener, 0) >= self.listener_max.get(listener, INT_MAX):
            return False
        return self.protected(listener) or self.total < self.max_connections

    def max_for(self, address: str) -> int:
        return self.per_ip_overrides.get(address, self.max_per_ip)

    def inc(self, listener: str, address: str) -> bool:
        """Count a connection just accepted; False (and nothing counted) when its address already
        holds ``max.connections.per.ip`` connections."""
        count = self.by_address.get(address, 0)
        if count >= self.max_for(address):
            return False
        self.by_address[address] = count + 1
        self.by_listener[listener] = self.by_listener.get(listener, 0) + 1
        self.total += 1
        return True

    def dec(self, listener: str, address: str) -> None:
        count = self.by_address.get(address, 0)
        if count <= 1:
            self.by_address.pop(address, None)
        else:
            self.by_address[address] = count - 1
        self.by_listener[listener] = max(0, self.by_listener.get(listener, 0) - 1)
        self.total = max(0, self.total - 1)

    def exceeded(self, listener: str) -> bool:
        """More connections than ``max.connections`` (the inter-broker listener went past it) and
        ``listener`` is not the exempt one: one of its connections should close."""
        return self.total > self.max_connections and not self.protected(listener)
