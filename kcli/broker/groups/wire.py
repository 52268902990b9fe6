"""What the group API handlers share: field conversions between kio entities and the coordinator."""

from __future__ import annotations

import datetime

_MILLISECOND = datetime.timedelta(milliseconds=1)


def duration_ms(value: datetime.timedelta | int) -> int:
    """A kio duration field (a timedelta) in whole milliseconds, as it was on the wire."""
    if isinstance(value, datetime.timedelta):
        return value // _MILLISECOND
    return int(value)


def client_host(peer: str) -> str:
    """The client's address as Kafka records it (Java's ``InetAddress.toString``: ``/127.0.0.1``)."""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")


def leader_epoch_or_none(epoch: int) -> int | None:
    return None if epoch < 0 else epoch
