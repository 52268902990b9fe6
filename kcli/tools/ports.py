"""Whether a server could bind a port, asked before a server process is started, so that a port
in use is one line naming it rather than the server's own stack trace."""

from __future__ import annotations

import errno
import socket

from kcli.errors import KcliError

WILDCARD = "0.0.0.0"


def check_port_free(host: str, port: int, owner: str) -> None:
    """Raise one line naming ``port`` and ``owner`` when ``host:port`` cannot be bound. The probe
    binds with SO_REUSEADDR, as Kafka's and ZooKeeper's servers do, so a port left in TIME_WAIT
    counts as free, as it does for them."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as e:
        reason = "is already in use" if e.errno == errno.EADDRINUSE else f"cannot be bound ({e.strerror})"
        raise KcliError(f"port {port} for {owner} {reason} on {host}") from None
