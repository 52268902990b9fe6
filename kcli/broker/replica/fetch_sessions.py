"""Incremental fetch sessions (KIP-227): the broker remembers what a fetcher asks for.

A fetch with session epoch 0 opens a session holding every partition it names (the answer
carries the new session id; 0 when the cache is full and nothing can be evicted); epoch -1 asks
for no session (closing the one named). A later fetch with the session id and the expected next
epoch sends only changes: new or updated partitions, and forgotten ones; the answer holds only
partitions with something new (records, an error, or a moved high watermark, last stable offset
or log start offset). An unknown session id answers FETCH_SESSION_ID_NOT_FOUND and a wrong epoch
INVALID_FETCH_SESSION_EPOCH. The cache holds ``max.incremental.fetch.session.cache.slots``
sessions and evicts the least recently used one when full.
"""

from __future__ import annotations

import itertools
import random
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1



@dataclass(slots=True)
class CachedPartition:
    """What the session knows of one partition: the fetch position and what was last answered."""

    topic_id: uuid.UUID | None
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    # What a follower sends of its own log (Kafka's fetcherLogStartOffset and lastFetchedEpoch).
    fetcher_log_start_offset: int = -1
    last_fetched_epoch: int = -1

    def must_respond(self, high_watermark: int, last_stable_offset: int, log_start_offset: int, has_records: bool, error_code: int) -> bool:
        """Record what is being answered; True when an incremental response must include it."""
        changed = (
            has_records
            or error_code != 0
            or high_watermark != self.high_watermark
            or last_stable_offset != self.last_stable_offset
            or log_start_offset != self.log_start_offset
        )
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        return changed


@dataclass(slots=True)
class FetchSession:
    id: int
    epoch: int
    partitions: OrderedDict[TopicPartition, CachedPartition] = field(default_factory=OrderedDict)
    last_used: float = 0.0


@dataclass(slots=True)
class FetchContext:
    """How one fetch request is answered: which partitions, and whether incrementally."""

    session_id: int
    partitions: OrderedDict[TopicPartition, CachedPartition]
    incremental: bool


class FetchSessionCache:
    def __init__(self, max_slots: int = 1000) -> None:
        self.max_slots = max_slots
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(random.randrange(1, 1 << 30))

    def __len__(self) -> int:
        return len(self._sessions)

    def new_context(
        self,
        session_id: int,
        epoch: int,
        requested: OrderedDict[TopicPartition, CachedPartition],
        forgotten: list[TopicPartition],
    ) -> FetchContext:
        """Open, continue or skip a session for a request; raises KafkaError for a bad id or epoch."""
        if epoch == FINAL_EPOCH:
            if session_id:
                self._sessions.pop(session_id, None)
            return FetchContext(0, requested, incremental=False)
        if epoch == INITIAL_EPOCH:
            if session_id:
                self._sessions.pop(session_id, None)
            session = self._create(requested)
            return FetchContext(session.id if session else 0, requested, incremental=False)
        session = self._sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            raise KafkaError(ErrorCode.INVALID_FETCH_SESSION_EPOCH, f"expected epoch {session.epoch}, got {epoch}")
        for key in forgotten:
            session.partitions.pop(key, None)
        for key, update in requested.items():
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = update
            else:
                cached.fetch_offset = update.fetch_offset
                cached.max_bytes = update.max_bytes
                cached.current_leader_epoch = update.current_leader_epoch
                cached.fetcher_log_start_offset = update.fetcher_log_start_offset
                cached.last_fetched_epoch = update.last_fetched_epoch
                cached.topic_id = update.topic_id
        session.epoch = _next_epoch(epoch)
        self._touch(session)
        return FetchContext(session.id, session.partitions, incremental=True)

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic in every session."""
        for session in self._sessions.values():
            for key in [k for k in session.partitions if k[0] == topic]:
                del session.partitions[key]

    def _create(self, partitions: OrderedDict[TopicPartition, CachedPartition]) -> FetchSession | None:
        if self.max_slots <= 0:
            return None
        if len(self._sessions) >= self.max_slots:
            self._sessions.popitem(last=False)
        session_id = next(self._ids) & 0x7FFFFFFF or next(self._ids)
        session = FetchSession(session_id, 1, partitions)
        self._sessions[session_id] = session
        self._touch(session)
        return session

    def _touch(self, session: FetchSession) -> None:
        session.last_used = time.monotonic()
        self._sessions.move_to_end(session.id)


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 0x7FFFFFFF else epoch + 1
