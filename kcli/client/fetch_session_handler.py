"""The fetching side of incremental fetch sessions (KIP-227): Kafka's ``FetchSessionHandler``.

A fetcher keeps one handler per broker it fetches from. The first request is full (session id 0
or the old id, epoch 0: the broker opens a session holding every partition named). After an
answer that opened a session, each request is incremental: it names only the partitions added
or whose position changed (fetch offset, log start offset, max bytes, leader epochs), and lists
the partitions to forget; the broker answers only partitions with something new. An error
answer, or a request that failed, makes the next request full again (FETCH_SESSION_ID_NOT_FOUND:
with no session id, any other: closing the old session). A broker that answers session id 0
keeps every request full.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kcli.client.fetch_request import FetchPosition
from kcli.common import TopicPartition
from kcli.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class FetchRequestData:
    """One request's session fields and partitions."""

    session_id: int
    epoch: int
    to_send: dict[TopicPartition, FetchPosition]  # the partitions the request names
    to_forget: list[TopicPartition]
    session_partitions: dict[TopicPartition, FetchPosition]  # every partition the answer may hold

    @property
    def is_full(self) -> bool:
        return self.epoch == INITIAL_EPOCH

    @property
    def is_empty(self) -> bool:
        """Nothing to fetch and nothing to forget: no request is sent."""
        return not self.session_partitions and not self.to_forget


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._partitions: dict[TopicPartition, FetchPosition] = {}

    def build(self, wanted: Mapping[TopicPartition, FetchPosition]) -> FetchRequestData:
        """The next request for the partitions ``wanted`` now, in their order."""
        if self.epoch == INITIAL_EPOCH:
            self._partitions = dict(wanted)
            return FetchRequestData(self.session_id, INITIAL_EPOCH, dict(wanted), [], dict(wanted))
        to_forget = [key for key in self._partitions if key not in wanted]
        for key in to_forget:
            del self._partitions[key]
        to_send = {}
        for key, position in wanted.items():
            if self._partitions.get(key) != position:
                self._partitions[key] = position
                to_send[key] = position
        return FetchRequestData(self.session_id, self.epoch, to_send, to_forget, dict(self._partitions))

    def handle_response(self, request: FetchRequestData, error: ErrorCode, session_id: int, answered: Iterable[TopicPartition]) -> bool:
        """Follow an answer to ``request``; False when its partitions must be ignored (an error,
        or partitions the session does not hold), and the next request is then full."""
        if error != ErrorCode.NONE:
            if error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        if any(key not in request.session_partitions for key in answered):
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        elif request.is_full:
            self.session_id, self.epoch = session_id, 1
        else:
            self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1
        return True

    def handle_error(self) -> None:
        """The request failed (no answer): the next one is full, closing this session."""
        self.epoch = INITIAL_EPOCH
