"""A produce with acks=-1 waiting for its in-sync replicas: Kafka's ``DelayedProduce``.

Each partition appended to waits until the partition's high watermark reaches the end of what
was appended (``required_offset``); it is then answered with the append's offsets, or with
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR has shrunk below ``min.insync.replicas`` meanwhile.
A partition that is no longer led here answers its look-up error. Partitions whose append failed
are not waited on. Whatever still waits when the request's timeout passes answers
REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcli.broker.replica.purgatory import DelayedOperation
from kcli.common import TopicPartition
from kcli.errors import ErrorCode, KcliError


@dataclass(slots=True)
class PartitionResponse:
    """One partition's answer to an append (Kafka's ProduceResponse.PartitionResponse)."""

    error_code: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str]] = field(default_factory=list)


@dataclass(slots=True)
class ProducePartitionStatus:
    """Where one partition's acknowledgement stands (Kafka's ProducePartitionStatus)."""

    required_offset: int
    response: PartitionResponse
    acks_pending: bool = False


class DelayedProduce(DelayedOperation):
    def __init__(
        self,
        delay_ms: int,
        statuses: list[tuple[TopicPartition, ProducePartitionStatus]],
        replica_manager: Any,
        response_callback: Callable[[list[tuple[TopicPartition, PartitionResponse]]], None],
    ) -> None:
        super().__init__(delay_ms)
        self.statuses = statuses
        self.replica_manager = replica_manager
        self.response_callback = response_callback
        for _, status in statuses:
            if status.response.error_code == ErrorCode.NONE:
                status.acks_pending = True
                status.response.error_code = ErrorCode.REQUEST_TIMED_OUT  # what it answers if it expires

    def try_complete(self) -> bool:
        for (topic, index), status in self.statuses:
            if not status.acks_pending:
                continue
            try:
                partition = self.replica_manager.get_partition_or_error(topic, index)
                enough, error = partition.check_enough_replicas_reach_offset(status.required_offset)
            except KcliError as e:
                enough, error = True, ErrorCode(e.error_code)
            if error != ErrorCode.NONE:
                status.acks_pending = False
                status.response.error_code = error
            elif enough:
                status.acks_pending = False
                status.response.error_code = ErrorCode.NONE
        if any(status.acks_pending for _, status in self.statuses):
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        self.response_callback([(key, status.response) for key, status in self.statuses])
