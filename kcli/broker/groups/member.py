"""One member of a classic group (Kafka's ``MemberMetadata`` / ``ClassicGroupMember``).

A member carries what it sent in its JoinGroup (client id and host, timeouts, protocol type and
its protocols in preference order with their metadata) and the assignment the leader gave it. A
member waiting for the rebalance to complete holds a join waiter; one waiting for its assignment a
sync waiter. A waiter is an object with ``done()`` and ``set_result()`` (an asyncio future).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Protocols = list[tuple[str, bytes]]


@dataclass(eq=False)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_waiter: Any = None
    sync_waiter: Any = None
    # Joined during the current rebalance and not yet given a generation: its join times out on
    # its own deadline (a new member cannot heartbeat yet).
    is_new: bool = False
    # The member's pending deadline (session timeout, or the new-member join timeout).
    heartbeat_timer: Any = field(default=None, repr=False)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    @property
    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def survives_missed_heartbeat(self) -> bool:
        """Kafka's ``hasSatisfiedHeartbeat`` when a deadline passes with no heartbeat: a member
        that is waiting for a rebalance step is alive by definition, unless it is new."""
        return not self.is_new and (self.is_awaiting_join or self.is_awaiting_sync)

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols, in the same order, with the same metadata."""
        return len(protocols) == len(self.protocols) and all(
            a[0] == b[0] and bytes(a[1]) == bytes(b[1]) for a, b in zip(protocols, self.protocols)
        )

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols that every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of the candidate protocols")
