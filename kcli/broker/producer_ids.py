"""Producer ids for idempotent producers, handed out in blocks claimed from the metadata tree.

As a ZooKeeper-era Kafka broker does, the broker claims a block of ``BLOCK_SIZE`` ids at a time by
a conditional update of ``/latest_producer_id_block`` (``{"version":1,"broker":0,
"block_start":"0","block_end":"999"}``), so brokers sharing a tree never hand out the same id and a
restarted broker never reuses one.
"""

from __future__ import annotations

import threading

from kcli.metadata import zk_paths
from kcli.metadata.store import BadVersionError, MetadataStore, NodeExistsError, NoNodeError
from kcli.errors import ErrorCode, KafkaError

BLOCK_SIZE = 1000
_MAX_PRODUCER_ID = 2**63 - 1


class ProducerIdManager:
    def __init__(self, store: MetadataStore, broker_id: int) -> None:
        self._store = store
        self._broker_id = broker_id
        self._lock = threading.Lock()
        self._next = 0
        self._end = -1

    def generate(self) -> int:
        with self._lock:
            if self._next > self._end:
                self._claim_block()
            producer_id = self._next
            self._next += 1
            return producer_id

    def _claim_block(self) -> None:
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
            self._next, self._end = start, end
            return
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "could not claim a block of producer ids")
