"""ISR changes on their way to the controller: Kafka 2.8's ``AlterIsrManager``.

A leader's ``Partition`` proposes an ISR change (an expansion when a follower caught up, a shrink
when followers fell behind) and keeps it pending; the proposal is submitted here. One task sends
every proposal submitted meanwhile in one AlterPartition (v2, topics by id) to the active
controller over its inter-broker endpoint, with this broker's id and epoch, one request at a
time, so a partition never has two changes in flight. Per partition, the answer commits the new
ISR and partition epoch in the partition (and waiting requests may complete, the high watermark
having moved); a stale partition or leader epoch, or an unknown partition, leaves the change
pending until the controller's next LeaderAndIsr; INELIGIBLE_REPLICA (a replica the controller
does not count alive) drops it, the committed ISR kept, to be proposed again; any other error, or a request that failed
(no controller, a connection lost, NOT_CONTROLLER), is sent again after a short pause, unless
the partition has meanwhile been given another state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kcli.broker.network.broker_connections import BrokerConnections
from kcli.broker.replica.tasks import cancel_and_wait
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

ALTER_PARTITION_VERSION = 2
RETRY_BACKOFF_S = 0.1
# Answers that end a proposal: the controller's state has moved on, and its LeaderAndIsr will say how.
_FINAL_ERRORS = frozenset({
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.INVALID_REQUEST, ErrorCode.INELIGIBLE_REPLICA,
})


class AlterIsrManager:
    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        controller_id: Callable[[], int | None],
        address_of: Callable[[int], tuple[str, int] | None],
        on_high_watermark_moved: Callable[[TopicPartition], None],
        *,
        request_timeout_ms: int = 30000,
        security: Any = None,
    ) -> None:
        self.broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._controller_id = controller_id
        self._on_high_watermark_moved = on_high_watermark_moved
        self._connections = BrokerConnections(
            address_of, client_id=f"broker-{broker_id}-alter-isr", request_timeout_ms=request_timeout_ms, security=security
        )
        self._unsent: dict[TopicPartition, tuple[Any, Any]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="alter-isr")

    def submit(self, partition: Any, proposal: Any) -> None:
        """Send ``partition``'s pending ``proposal`` (a newer one of the same partition replaces it)."""
        self._unsent[(partition.topic, partition.index)] = (partition, proposal)
        self._wake.set()

    async def shutdown(self) -> None:
        """Stop the task (a flag too, as the fetchers have it: a lost cancellation ends it at its
        next turn; the wait for it is bounded)."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self._connections.close()

    async def _run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                batch, self._unsent = self._unsent, {}
                batch = {key: item for key, item in batch.items() if item[0].pending_isr is item[1]}
                if not batch:
                    continue
                retry = await self._send(batch)
                for key, item in retry.items():
                    self._unsent.setdefault(key, item)
                if retry:
                    await asyncio.sleep(RETRY_BACKOFF_S)
                    self._wake.set()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("The ISR change sender failed; ISR changes are no longer sent")

    async def _send(self, batch: dict[TopicPartition, tuple[Any, Any]]) -> dict[TopicPartition, tuple[Any, Any]]:
        """One AlterPartition for ``batch``; returns what must be sent again."""
        controller = self._controller_id()
        if controller is None:
            return batch
        topics: dict[Any, list[dict[str, Any]]] = {}
        for (_, index), (partition, proposal) in batch.items():
            topics.setdefault(partition.topic_id, []).append({
                "partition_index": index, "leader_epoch": proposal.leader_epoch, "new_isr": list(proposal.isr),
                "leader_recovery_state": 0, "partition_epoch": proposal.partition_epoch,
            })
        request = {
            "broker_id": self.broker_id, "broker_epoch": self._broker_epoch(),
            "topics": [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in topics.items()],
        }
        try:
            answer = await self._connections.call(controller, ApiKey.ALTER_PARTITION, request, versions=(ALTER_PARTITION_VERSION, ALTER_PARTITION_VERSION))
            error = ErrorCode.for_code(int(answer.error_code))
            if error != ErrorCode.NONE:
                raise KafkaError(error, f"AlterPartition answered {error.name}")
        except (KcliError, OSError) as e:
            log.warning("[AlterIsrManager broker=%d] Could not send ISR changes to controller %d: %s; retrying", self.broker_id, controller, e)
            return batch
        by_id = {(partition.topic_id, key[1]): (key, partition, proposal) for key, (partition, proposal) in batch.items()}
        retry = {}
        for topic in answer.topics:
            for data in topic.partitions:
                found = by_id.get((topic.topic_id, int(data.partition_index)))
                if found is None:
                    continue
                key, partition, proposal = found
                error = ErrorCode.for_code(int(data.error_code))
                if error == ErrorCode.NONE:
                    isr = tuple(int(r) for r in data.isr)
                    if partition.isr_change_answered(proposal, isr, int(data.leader_epoch), int(data.partition_epoch)):
                        self._on_high_watermark_moved(key)
                elif error in _FINAL_ERRORS:
                    partition.isr_change_refused(proposal, error)
                elif partition.pending_isr is proposal:
                    partition.isr_change_retried(proposal, error)
                    retry[key] = (partition, proposal)
        return retry
