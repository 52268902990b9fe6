"""Markers for partitions another broker leads, sent to that leader over the wire (Kafka's
TransactionMarkerChannelManager).

The coordinator queues each transaction's markers per destination broker (``add_markers``); one
task per destination drains its queue into WriteTxnMarkers requests, each carrying every marker
queued meanwhile, and hands every marker's per-partition errors back to the coordinator
(``PendingMarkers.on_done``), which retries the partitions that failed (NOT_LEADER_OR_FOLLOWER
after leadership moved: the broker's metadata cache follows the cluster, so the next try goes to
the new leader). A request that fails as a whole (a connection refused or broken, a timeout)
answers NETWORK_EXCEPTION or REQUEST_TIMED_OUT for each of its partitions and drops the connection.

The requests go through ``broker_connections.BrokerConnections`` (the client's
``BrokerConnection``, as Kafka's broker uses the clients' NetworkClient). Nothing here blocks the
event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from kcli.broker.network.broker_connections import BrokerConnections
from kcli.client.connection import error_code
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError

log = logging.getLogger("kcli.broker.transactions")

WRITE_TXN_MARKERS = 27


@dataclasses.dataclass
class PendingMarkers:
    """One transaction's markers for the partitions one broker leads."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: list[TopicPartition]
    on_done: Callable[[dict[TopicPartition, ErrorCode]], None]


class TransactionMarkerChannelManager:
    """WriteTxnMarkers to other brokers: a queue and a sending task per destination broker."""

    def __init__(self, connections: BrokerConnections) -> None:
        self._connections = connections
        self._queues: dict[int, list[PendingMarkers]] = {}
        self._senders: dict[int, asyncio.Task[None]] = {}
        self._closed = False

    def add_markers(self, destination: int, markers: PendingMarkers) -> None:
        """Queue markers for ``destination``; their answer comes to ``markers.on_done`` on the loop."""
        if self._closed:
            return
        self._queues.setdefault(destination, []).append(markers)
        if destination not in self._senders:
            self._senders[destination] = asyncio.get_running_loop().create_task(self._drain(destination))

    async def _drain(self, destination: int) -> None:
        try:
            while self._queues.get(destination):
                batch = self._queues.pop(destination)
                results = await self._send(destination, batch)
                for markers, result in zip(batch, results):
                    try:
                        markers.on_done(result)
                    except Exception:
                        log.exception("Handling the WriteTxnMarkers answer for %s failed", markers.transactional_id)
        finally:
            self._senders.pop(destination, None)

    async def _send(self, destination: int, batch: list[PendingMarkers]) -> list[dict[TopicPartition, ErrorCode]]:
        request = {"markers": [
            {
                "producer_id": m.producer_id, "producer_epoch": m.producer_epoch, "transaction_result": m.commit,
                "coordinator_epoch": m.coordinator_epoch, "topics": _by_topic(m.partitions),
            }
            for m in batch
        ]}
        try:
            answer = await self._connections.call(destination, WRITE_TXN_MARKERS, request)
        except KafkaError as exc:
            log.info("Sending transaction markers to broker %d failed: %s; retrying", destination, exc)
            code = exc.error_code if exc.error_code.retriable else ErrorCode.NETWORK_EXCEPTION
            return [dict.fromkeys(m.partitions, code) for m in batch]
        results: list[dict[TopicPartition, ErrorCode]] = []
        for position, markers in enumerate(batch):
            # An answer that leaves a partition out leaves it to be sent again.
            result = dict.fromkeys(markers.partitions, ErrorCode.UNKNOWN_SERVER_ERROR)
            if position < len(answer.markers):
                for topic in answer.markers[position].topics:
                    for partition in topic.partitions:
                        tp = TopicPartition(topic.name, int(partition.partition_index))
                        if tp in result:
                            result[tp] = ErrorCode.for_code(error_code(partition.error_code))
            results.append(result)
        return results

    async def shutdown(self) -> None:
        self._closed = True
        self._queues.clear()
        for task in list(self._senders.values()):
            task.cancel()
        if self._senders:
            await asyncio.gather(*self._senders.values(), return_exceptions=True)
        await self._connections.close()


def _by_topic(partitions: list[TopicPartition]) -> list[dict[str, Any]]:
    topics: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        topics.setdefault(topic, []).append(index)
    return [{"name": name, "partition_indexes": indexes} for name, indexes in topics.items()]
