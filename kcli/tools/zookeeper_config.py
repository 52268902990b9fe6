"""A ZooKeeper 3.8 server's properties file, checked as its ``QuorumPeerConfig`` parses it.

``kcli zookeeper start`` reads the file and makes ZooKeeper's own checks before Java starts, so
that a mistake is one line naming the key and its value (and a port in use one line naming the
port) instead of a Java stack trace: numbers (``Integer.parseInt``/``Long.parseLong``), booleans
(only ``true``/``false``), ports in range, ``dataDir`` given, ``tickTime`` not 0, session
timeouts in order, ``electionAlg`` 3, ``peerType``, and the form of each ``server.N`` line
(``host:port:port[:type]``, pipe-separated addresses, ``;[host:]clientPort``). Keys and values
are trimmed, as ZooKeeper trims them. Java stays the authority: whatever it rejects beyond these
checks, ``zookeeper_server`` condenses to its cause.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kcli.config import read_properties
from kcli.errors import KcliError
from kcli.tools.ports import WILDCARD, check_port_free

INT_KEYS = frozenset(
    {
        "clientPort",
        "secureClientPort",
        "observerMasterPort",
        "clientPortListenBacklog",
        "tickTime",
        "maxClientCnxns",
        "minSessionTimeout",
        "maxSessionTimeout",
        "initLimit",
        "syncLimit",
        "connectToLearnerMasterLimit",
        "electionAlg",
        "autopurge.snapRetainCount",
        "autopurge.purgeInterval",
        "quorum.cnxn.threads.size",
        "multiAddress.reachabilityCheckTimeoutMs",
    }
)
LONG_KEYS = frozenset({"jvm.pause.info-threshold.ms", "jvm.pause.warn-threshold.ms", "jvm.pause.sleep.time.ms"})
BOOLEAN_KEYS = frozenset(
    {
        "localSessionsEnabled",
        "localSessionsUpgradingEnabled",
        "quorumListenOnAllIPs",
        "syncEnabled",
        "standaloneEnabled",
        "reconfigEnabled",
        "sslQuorum",
        "portUnification",
        "sslQuorumReloadCertFiles",
        "quorum.auth.enableSasl",
        "quorum.auth.serverRequireSasl",
        "quorum.auth.learnerRequireSasl",
        "jvm.pause.monitor",
        "multiAddress.enabled",
    }
)
# The ports ZooKeeper binds for clients (an InetSocketAddress each: 0-65535).
CLIENT_PORT_KEYS = ("clientPort", "secureClientPort", "observerMasterPort")
DEFAULT_TICK_TIME_MS = 3000  # ZooKeeperServer.DEFAULT_TICK_TIME
LEARNER_TYPES = ("participant", "observer")
MAX_PORT = 65535
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class ZooKeeperConfig:
    path: Path
    properties: Mapping[str, str]

    def number(self, key: str, default: int) -> int:
        return int(self.properties[key]) if key in self.properties else default

    def invalid(self, key: str, reason: str) -> KcliError:
        return KcliError(f"Invalid value {self.properties[key]} for configuration {key} in {self.path}: {reason}")


def read_config(path: Path) -> ZooKeeperConfig:
    """The file's entries, keys and values trimmed; one line when it cannot be read."""
    if not path.exists():
        raise KcliError(f"ZooKeeper properties file {path} does not exist")
    if not path.is_file():
        raise KcliError(f"ZooKeeper properties file {path} is not a file")
    properties = read_properties(path)
    return ZooKeeperConfig(path, {key.strip(): value.strip() for key, value in properties.items()})


def check(config: ZooKeeperConfig) -> None:
    """ZooKeeper's own checks of the file, each failure one line naming the key."""
    props = config.properties
    for key, value in props.items():
        if key in INT_KEYS:
            _check_number(config, key, 32)
        elif key in LONG_KEYS:
            _check_number(config, key, 64)
        elif key in BOOLEAN_KEYS and value.lower() not in ("true", "false"):
            raise config.invalid(key, "Choose 'true' or 'false'")
        elif key.startswith(("server.", "group", "weight")) and "dynamicConfigFile" in props:
            raise config.invalid(key, "it must be in a separate dynamic config file (dynamicConfigFile is set)")
    for key in CLIENT_PORT_KEYS:
        if key in props and not 0 <= int(props[key]) <= MAX_PORT:
            raise config.invalid(key, f"port out of range (0 to {MAX_PORT})")
    if "electionAlg" in props and int(props["electionAlg"]) != 3:
        raise config.invalid("electionAlg", "Only 3 is supported")
    if "peerType" in props and props["peerType"].lower() not in LEARNER_TYPES:
        raise config.invalid("peerType", "Unrecognised peertype: choose participant or observer")
    if not props.get("dataDir"):
        raise KcliError(f"dataDir is not set in {config.path}")
    if config.number("clientPort", 0) == 0 and "clientPortAddress" in props:
        raise KcliError(f"clientPortAddress is set but clientPort is not set in {config.path}")
    tick_time = config.number("tickTime", DEFAULT_TICK_TIME_MS)
    if tick_time == 0:
        raise config.invalid("tickTime", "tickTime is not set (0)")
    low = config.number("minSessionTimeout", -1)
    high = config.number("maxSessionTimeout", -1)
    low, high = tick_time * 2 if low == -1 else low, tick_time * 20 if high == -1 else high
    if low > high:
        raise KcliError(f"minSessionTimeout ({low} ms) must not be larger than maxSessionTimeout ({high} ms) in {config.path}")
    if "dynamicConfigFile" not in props:
        multi_address = props.get("multiAddress.enabled", "false").lower() == "true"
        for key in props:
            if key.startswith("server."):
                _check_server(config, key, multi_address)


def check_ports(config: ZooKeeperConfig) -> None:
    """One line naming the first client port that cannot be bound."""
    props = config.properties
    for key, address_key in (("clientPort", "clientPortAddress"), ("secureClientPort", "secureClientPortAddress")):
        port = config.number(key, 0)
        if port > 0:
            check_port_free(props.get(address_key) or WILDCARD, port, f"ZooKeeper's {key}")


def client_address(config: ZooKeeperConfig) -> tuple[str, int] | None:
    """Where the server answers clients, to tell when it serves (None without a clientPort)."""
    port = config.number("clientPort", 0)
    if port <= 0:
        return None
    host = config.properties.get("clientPortAddress") or "127.0.0.1"
    return ("127.0.0.1" if host in (WILDCARD, "::") else host), port


def _check_number(config: ZooKeeperConfig, key: str, bits: int) -> None:
    value = config.properties[key]
    if _JAVA_INTEGER.fullmatch(value) is None or not -(1 << (bits - 1)) <= int(value) < 1 << (bits - 1):
        raise config.invalid(key, f"Not a number of type {'int' if bits == 32 else 'long'}")


def _check_server(config: ZooKeeperConfig, key: str, multi_address: bool) -> None:
    """A ``server.N`` line: N a number, then ``address[|address...][;[host:]clientPort]``, each
    address ``host:quorumPort:electionPort[:participant|observer]`` (QuorumPeer.QuorumServer)."""
    form = "expected host:port:port[:participant|observer][;[host:]port]"
    if _JAVA_INTEGER.fullmatch(key.removeprefix("server.")) is None:
        raise config.invalid(key, "the server id after 'server.' is not a number")
    server_part, *client_parts = config.properties[key].split(";")
    if len(client_parts) > 1:
        raise config.invalid(key, form)
    if client_parts:
        pieces = _host_and_port(client_parts[0])
        if len(pieces) > 2 or not _is_port(pieces[-1]):
            raise config.invalid(key, form)
    addresses = server_part.split("|")
    if len(addresses) > 1 and not multi_address:
        raise config.invalid(key, "several addresses need multiAddress.enabled=true")
    for address in addresses:
        pieces = _host_and_port(address)
        if not 3 <= len(pieces) <= 4 or not (_is_port(pieces[1]) and _is_port(pieces[2])):
            raise config.invalid(key, form)
        if int(pieces[1]) == int(pieces[2]):
            raise config.invalid(key, "the quorum and election ports must be different")
        if len(pieces) == 4 and pieces[3].lower() not in LEARNER_TYPES:
            raise config.invalid(key, f"Unrecognised peertype: {pieces[3]}")


def _host_and_port(text: str) -> list[str]:
    """ZooKeeper's ConfigUtils.getHostAndPort: ``:``-separated parts, a bracketed IPv6 host one."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return [text]
        rest = text[end + 1 :]
        return [text[1:end], *rest[1:].split(":")] if rest.startswith(":") else [text[1:end]] + ([rest] if rest else [])
    return text.split(":")


def _is_port(text: str) -> bool:
    return _JAVA_INTEGER.fullmatch(text) is not None and 0 <= int(text) <= MAX_PORT
