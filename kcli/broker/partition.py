"""One topic-partition this broker hosts: Kafka's ``kafka.cluster.Partition``.

Its log, its leader epoch, its replicas and in-sync replicas, and its high watermark; the replica
manager keeps it as a leader (it serves produce and fetch) or as a follower (it keeps its log).
In single-process mode, and while replication is not built, the ISR is the leader alone, so an
append is committed (the high watermark moves) as soon as it is written; ``acks=all`` still
honours ``min.insync.replicas`` against the ISR, as Kafka does. Waiting requests are completed by
the replica manager's purgatories after an append.
"""

from __future__ import annotations

import uuid

from kcli.errors import ErrorCode, KafkaError
from kcli.storage.log import Log, LogAppendInfo
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import RecordBatch


class Partition:
    __slots__ = ("topic", "index", "topic_id", "log", "leader_epoch", "replicas", "isr", "broker_id")

    def __init__(self, topic: str, index: int, topic_id: uuid.UUID | None, log: Log, *, leader_epoch: int, replicas: list[int], isr: list[int], broker_id: int) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.leader_epoch = leader_epoch
        self.replicas = replicas
        self.isr = isr
        self.broker_id = broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    def append(self, records: bytes | memoryview | RecordBatch, required_acks: int, origin: AppendOrigin = AppendOrigin.CLIENT) -> LogAppendInfo:
        """Append as the leader: a client's produce (the batch's header as the handler read it, over
        the request's bytes), or (``origin``) a coordinator's own batches."""
        if required_acks == -1:
            min_isr = self.log.config.min_insync_replicas
            if len(self.isr) < min_isr:
                raise KafkaError(
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    f"The size of the current ISR {set(self.isr)} is insufficient to satisfy the min.isr requirement of {min_isr} for partition {self.topic}-{self.index}",
                )
        info = self.log.append(records, leader_epoch=self.leader_epoch, origin=origin)
        if self.isr == [self.broker_id]:
            self.log.update_high_watermark(self.log.log_end_offset)
        return info

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """Kafka's Partition.checkEnoughReplicasReachOffset, for a waiting acks=-1 produce: done once
        the high watermark reaches ``required_offset`` (NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
        ISR is then smaller than ``min.insync.replicas``)."""
        if self.high_watermark < required_offset:
            return False, ErrorCode.NONE
        if len(self.isr) < self.log.config.min_insync_replicas:
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NONE

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing of requests that carry the client's idea of the leader epoch."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"{current_leader_epoch} is older than the leader epoch {self.leader_epoch}")
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"{current_leader_epoch} is newer than the leader epoch {self.leader_epoch}")
