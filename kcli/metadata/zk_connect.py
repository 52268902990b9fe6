"""ZooKeeper's connect string, ``host[:port][,host[:port]...][/chroot]``, read once for everyone.

The broker's ``zookeeper.connect`` and every tool's ``--zookeeper`` (and zookeeper-shell's
``-server``) go through ``parse_connect``, which follows ZooKeeper's ``ConnectStringParser``:
what follows the first ``/`` is the chroot (``/`` alone means none), the rest is a comma-separated
list of servers, blank entries ignored, each ``host`` or ``host:port`` with the port 2181 when
absent; an IPv6 address is written in brackets, ``[::1]:2181``. A port must lie in 1..65535.

Anything else is one ``InvalidConnectStringError`` naming the string and what is wrong with it,
before any connection is tried (kazoo's own parser would raise ``ValueError`` from deep inside
its client).
"""

from __future__ import annotations

from dataclasses import dataclass

from kcli.errors import KcliError
from kcli.metadata.store import InvalidPathError, validate_path

DEFAULT_PORT = 2181
SYNTAX = "host:port[,host:port...][/chroot], an IPv6 address in brackets"


class InvalidConnectStringError(KcliError):
    """A ZooKeeper connect string that names no usable server."""


@dataclass(frozen=True)
class ConnectString:
    """A parsed connect string: ``servers`` as (host, port) pairs, the chroot or None."""

    text: str
    servers: tuple[tuple[str, int], ...]
    chroot: str | None

    @property
    def hosts(self) -> str:
        """The servers as kazoo reads them, without the chroot."""
        return ",".join(f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in self.servers)


def parse_connect(text: str) -> ConnectString:
    """``text`` parsed, or ``InvalidConnectStringError`` (``InvalidPathError`` for a bad chroot)."""
    cut = text.find("/")
    hosts_text, chroot = (text, None) if cut < 0 else (text[:cut], text[cut:])
    if chroot == "/":
        chroot = None
    if chroot is not None:
        try:
            validate_path(chroot)
        except InvalidPathError:
            raise InvalidPathError(chroot, f"Invalid chroot in zookeeper.connect {text!r}") from None
    servers = tuple(_server(text, item.strip()) for item in hosts_text.split(",") if item.strip())
    if not servers:
        raise _invalid(text, "it names no server")
    return ConnectString(text, servers, chroot)


def _server(text: str, item: str) -> tuple[str, int]:
    if item.startswith("["):
        end = item.find("]")
        if end < 0:
            raise _invalid(text, f"{item!r} has no closing ']'")
        host, rest = item[1:end], item[end + 1:]
        if rest and not rest.startswith(":"):
            raise _invalid(text, f"{item!r} has {rest!r} after ']' where ':port' belongs")
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text = item.partition(":")
        if not sep:
            port_text = None
        elif ":" in port_text:
            raise _invalid(text, f"{item!r} has more than one ':'")
    if not host:
        raise _invalid(text, f"{item!r} has no host")
    if port_text is None:
        return host, DEFAULT_PORT
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise _invalid(text, f"port {port_text!r} of {item!r} is not a number in 1..65535")
    return host, int(port_text)


def _invalid(text: str, problem: str) -> InvalidConnectStringError:
    return InvalidConnectStringError(f"Invalid ZooKeeper connect string {text!r}: {problem} (expected {SYNTAX})")
