"""A fetch waiting for bytes: Kafka's ``FetchParams`` and ``DelayedFetch``.

A fetch that found fewer than ``min_bytes`` waits, watched under each partition it reads, until a
change of one of them lets it complete: it reads its partitions again and completes when they
hold ``min_bytes`` or one of them answers an error (the partition moved, its epoch changed, its
log went offline), or when the broker is stopping. At ``max_wait_ms`` it completes with what a
last read finds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kcli.broker.replica.purgatory import DelayedOperation

CONSUMER_REPLICA_ID = -1  # Kafka's FetchRequest.CONSUMER_REPLICA_ID
DEBUGGING_CONSUMER_ID = -2  # Kafka's FetchRequest.DEBUGGING_CONSUMER_ID (kafka-replica-verification.sh)
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


@dataclass(frozen=True, slots=True)
class FetchParams:
    """What a whole Fetch request asks (Kafka's FetchParams): who fetches, how long it may wait,
    how many bytes make it worth answering, at most how many in all, and up to which offset."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int = READ_UNCOMMITTED
    # Kafka's fetchOnlyFromLeader: a follower's fetch, or a consumer's before Fetch v11 (KIP-392:
    # from v11 a consumer may read a follower's replica, up to its high watermark).
    fetch_only_from_leader: bool = True

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0


def satisfied(params: FetchParams, reads: list) -> bool:
    """Whether reads answer the fetch now: ``min_bytes`` reached, or an error or a follower's
    diverging epoch to tell."""
    return sum(result.records_size for _, _, result in reads) >= params.min_bytes or any(
        result.error_code or result.diverging_epoch is not None for _, _, result in reads
    )


class DelayedFetch(DelayedOperation):
    def __init__(
        self, params: FetchParams, fetch_infos: Mapping, replica_manager: Any, response_callback: Callable[[list], None]
    ) -> None:
        super().__init__(params.max_wait_ms)
        self.params = params
        self.fetch_infos = fetch_infos
        self.replica_manager = replica_manager
        self.response_callback = response_callback
        self._reads: list | None = None

    def try_complete(self) -> bool:
        reads = self.replica_manager.read_from_local_log(self.params, self.fetch_infos)
        if self.replica_manager.closing or satisfied(self.params, reads):
            self._reads = reads
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        reads = self._reads if self._reads is not None else self.replica_manager.read_from_local_log(self.params, self.fetch_infos)
        self.response_callback(reads)
