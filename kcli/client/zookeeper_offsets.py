"""The consumer's side of ZooKeeper offset storage (the old consumer's ``offsets.storage``).

Kafka's old (Scala) consumer kept its offsets in ZooKeeper (``offsets.storage=zookeeper``, the
default before 0.9) or in Kafka (``offsets.storage=kafka``, 0.8.2+), and with
``dual.commit.enabled`` (default: true when the storage is kafka) committed to both: first to the
broker, then to ZooKeeper; a fetch of committed offsets then took the larger of the two. That is
how a group moved between the stores without losing its place (Kafka's documentation: set
``offsets.storage=kafka`` and ``dual.commit.enabled=true``, bounce the consumers, then
``dual.commit.enabled=false``, bounce again).

``ZooKeeperOffsets`` is one consumer's ZooKeeper session for that: its group's
``/consumers/<group>/offsets``, its ``ids/<consumerId>`` registration (so tools see the group is
live) and the ``owners/<topic>/<partition>`` of the partitions it is assigned. kazoo's calls block,
so each runs on a worker thread, off the consumer's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Iterable, Mapping

from kcli.common import TopicPartition
from kcli.errors import KcliError

log = logging.getLogger(__name__)

ZOOKEEPER = "zookeeper"
KAFKA = "kafka"
# The old consumer's defaults for zookeeper.session.timeout.ms and zookeeper.connection.timeout.ms.
DEFAULT_ZK_SESSION_TIMEOUT_MS = 6000
DEFAULT_ZK_CONNECTION_TIMEOUT_MS = 6000


def new_consumer_id(group: str) -> str:
    """The old consumer's id: ``<group>_<hostname>-<currentTimeMillis>-<first 8 hex of a UUID>``."""
    return f"{group}_{socket.gethostname()}-{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"


def dual_commit_default(offsets_storage: str) -> bool:
    """``dual.commit.enabled``'s default in Kafka's old consumer: on when the storage is kafka."""
    return offsets_storage == KAFKA


def newest(kafka: Mapping[TopicPartition, int | None], zookeeper: Mapping[TopicPartition, int | None],
           tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
    """Each partition's larger committed offset of the two stores, as the old consumer fetched
    them with dual commit (a partition committed in one store only takes that one)."""
    result: dict[TopicPartition, int | None] = {}
    for tp in tps:
        found = [o for o in (kafka.get(tp), zookeeper.get(tp)) if o is not None and o >= 0]
        result[tp] = max(found) if found else None
    return result


class ZooKeeperOffsets:
    """One group's ZooKeeper-stored offsets for one consumer; ``start`` opens the session."""

    def __init__(self, connect: str, group: str, *, session_timeout_ms: int = DEFAULT_ZK_SESSION_TIMEOUT_MS,
                 connection_timeout_ms: int = DEFAULT_ZK_CONNECTION_TIMEOUT_MS) -> None:
        self.connect = connect
        self.group = group
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms
        self.consumer_id = new_consumer_id(group)
        self._store = None
        self._groups = None
        self._owned: set[TopicPartition] = set()

    async def start(self) -> None:
        if self._groups is None:
            await asyncio.to_thread(self._open)

    def _open(self) -> None:
        from kcli.metadata.store import MetadataStoreError
        from kcli.metadata.zk_consumers import ZkConsumerGroups
        from kcli.metadata.zookeeper import ZooKeeperStore

        try:
            self._store = ZooKeeperStore(self.connect, session_timeout_ms=self.session_timeout_ms,
                                         connection_timeout_ms=self.connection_timeout_ms,
                                         client_logs_at_debug=True).start()
        except MetadataStoreError as exc:
            raise KcliError(f"zookeeper.connect={self.connect}: {exc}") from None
        self._groups = ZkConsumerGroups(self._store)

    async def _run(self, work, *args):
        await self.start()
        from kcli.metadata.store import MetadataStoreError

        try:
            return await asyncio.to_thread(work, *args)
        except MetadataStoreError as exc:
            raise KcliError(f"ZooKeeper offset storage of group {self.group}: {exc}") from None

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Write the offsets (the next ones to read), create-or-set, as the old consumer did."""
        if offsets:
            await self._run(lambda: self._groups.write_offsets(self.group, dict(offsets), if_unchanged=False))

    async def fetch(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        wanted = sorted(set(tps))
        if not wanted:
            return {}

        def read() -> dict[TopicPartition, int | None]:
            stored = self._groups.read_offsets([self.group], {tp.topic for tp in wanted})[self.group]
            if stored is None:
                return {tp: None for tp in wanted}
            for path, reason in stored.malformed:
                log.warning("Ignoring %s: %s", path, reason)
            return {tp: stored.offsets.get(tp) for tp in wanted}

        return await self._run(read)

    async def register(self, topics: Iterable[str]) -> None:
        """Register this consumer under ``ids`` (ephemeral, with its subscription)."""
        from kcli.metadata.zk_paths import ConsumerRegistration

        registration = ConsumerRegistration({t: 1 for t in sorted(topics)}, "static", int(time.time() * 1000))

        def write() -> None:
            from kcli.metadata.store import NoNodeError

            try:
                self._store.delete(f"/consumers/{self.group}/ids/{self.consumer_id}")
            except NoNodeError:
                pass
            self._groups.register_consumer(self.group, self.consumer_id, registration)

        await self._run(write)

    async def own(self, tps: Iterable[TopicPartition]) -> None:
        """Record this consumer's thread as the owner of ``tps`` (an owner another member has not
        released yet keeps the node; ownership here is informational)."""
        thread = f"{self.consumer_id}-0"
        wanted = sorted(set(tps) - self._owned)

        def claim() -> None:
            for tp in wanted:
                if self._groups.claim_partition(self.group, tp, thread):
                    self._owned.add(tp)

        if wanted:
            await self._run(claim)

    async def disown(self, tps: Iterable[TopicPartition]) -> None:
        gone = sorted(set(tps) & self._owned)

        def release() -> None:
            for tp in gone:
                self._groups.release_partition(self.group, tp)
                self._owned.discard(tp)

        if gone:
            await self._run(release)

    async def close(self) -> None:
        store, self._store, self._groups = self._store, None, None
        if store is not None:
            await asyncio.to_thread(store.close)  # its ephemeral ids and owners nodes go with it
