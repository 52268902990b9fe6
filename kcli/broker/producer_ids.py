"""Producer ids for idempotent producers, handed out in blocks claimed from the metadata tree.

As a ZooKeeper-era Kafka broker does, the broker claims a block of ``BLOCK_SIZE`` ids at a time by
a conditional update of ``/latest_producer_id_block`` (``{"version":1,"broker":0,
"block_start":"0","block_end":"999"}``), so brokers sharing a tree never hand out the same id and a
restarted broker never reuses one.

A claim is a tree round trip, so it never runs on the event loop: blocks are claimed on the
metadata thread, the first at start-up and the next one ahead of need (when a tenth of the
current block is left, as Kafka 3's RPCProducerIdManager prefetches). An id asked for while no
block is ready is answered COORDINATOR_LOAD_IN_PROGRESS, which clients retry, as Kafka answers it.
"""

from __future__ import annotations

import logging
import threading

from kcli.broker.metadata.metadata_thread import InlineMetadataThread
from kcli.metadata import zk_paths
from kcli.metadata.store import BadVersionError, MetadataStore, NodeExistsError, NoNodeError
from kcli.errors import ErrorCode, KafkaError

BLOCK_SIZE = 1000
PREFETCH_LEFT = BLOCK_SIZE // 10
_MAX_PRODUCER_ID = 2**63 - 1

log = logging.getLogger("kcli.broker")


class ProducerIdManager:
    def __init__(self, store: MetadataStore, broker_id: int, thread: InlineMetadataThread | None = None) -> None:
        self._store = store
        self._broker_id = broker_id
        self._thread = thread if thread is not None else InlineMetadataThread()
        self._lock = threading.Lock()
        self._next = 0
        self._end = -1
        self._ready: tuple[int, int] | None = None  # the next block, claimed ahead of need
        self._claiming = False

    def prefetch(self) -> None:
        """Claim the next block on the metadata thread, unless one is ready or being claimed."""
        with self._lock:
            if self._ready is not None or self._claiming:
                return
            self._claiming = True
        self._thread.submit(self._claim_ahead)

    def generate(self) -> int:
        with self._lock:
            exhausted = self._next > self._end
            if exhausted and self._ready is not None:
                (self._next, self._end), self._ready = self._ready, None
                exhausted = False
        if exhausted:
            self.prefetch()  # runs at once where there is no metadata thread
            with self._lock:
                if self._ready is None:
                    raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "Producer ID block is still loading")
                (self._next, self._end), self._ready = self._ready, None
        with self._lock:
            producer_id = self._next
            self._next += 1
            left = self._end - self._next + 1
        if left <= PREFETCH_LEFT:
            self.prefetch()
        return producer_id

    def _claim_ahead(self) -> None:
        try:
            block = self._claim_block()
        except Exception as e:  # ZooKeeper away, a full disk: the next request tries again
            log.warning("Could not claim a block of producer ids: %s", e)
            block = None
        with self._lock:
            self._claiming = False
            if block is not None:
                self._ready = block

    def _claim_block(self) -> tuple[int, int]:
        path = zk_paths.PRODUCER_ID_BLOCK
        for _ in range(10):
            try:
                data, stat = self._store.get(path)
            except NoNodeError:
                start, version = 0, None
            else:
                # Kafka creates the znode empty at start-up; empty means no block was handed out.
                start = zk_paths.decode_producer_id_block(data).block_end + 1 if data else 0
                version = stat.version
            end = start + BLOCK_SIZE - 1
            if end > _MAX_PRODUCER_ID:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "producer ids are exhausted")
            block = zk_paths.encode_producer_id_block(zk_paths.ProducerIdBlock(self._broker_id, start, end))
            try:
                if version is None:
                    self._store.create(path, block, makepath=True)
                else:
                    self._store.set(path, block, version)
            except (BadVersionError, NodeExistsError):
                continue  # another broker claimed a block first; read again
            return start, end
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "could not claim a block of producer ids")
