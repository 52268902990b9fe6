"""The client's metadata cache (Kafka's client Metadata): brokers, topics, partitions and their
leaders, as the last Metadata answers gave them; and the errors after which it is stale.

``NetworkClient`` (``network_client.py``) asks for metadata and merges each answer here
(``Metadata.update``); the producer, consumer and admin client read it.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from kcli.client.connection import error_code
from kcli.errors import ErrorCode

# Errors after which the cached metadata is stale: the next attempt looks the leader up again.
STALE_METADATA = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
    }
)


@dataclasses.dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclasses.dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]
    error: int = 0


@dataclasses.dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    internal: bool
    partitions: dict[int, PartitionInfo]
    error: int = 0


@dataclasses.dataclass
class Metadata:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, Node] = dataclasses.field(default_factory=dict)
    topics: dict[str, TopicInfo] = dataclasses.field(default_factory=dict)

    def update(self, answer: Any, *, every_topic: bool) -> None:
        """Merge a Metadata answer (any version) into the cache; an answer for every topic
        replaces the topics, one for some topics replaces only theirs."""
        self.cluster_id = getattr(answer, "cluster_id", None)
        self.controller_id = int(getattr(answer, "controller_id", -1))
        self.brokers = {int(b.node_id): Node(int(b.node_id), b.host, int(b.port), getattr(b, "rack", None)) for b in answer.brokers}
        if every_topic:
            self.topics = {}
        for topic in answer.topics:
            partitions = {
                int(p.partition_index): PartitionInfo(
                    int(p.partition_index),
                    int(p.leader_id),
                    int(getattr(p, "leader_epoch", -1)),
                    tuple(int(r) for r in p.replica_nodes),
                    tuple(int(r) for r in p.isr_nodes),
                    tuple(int(r) for r in getattr(p, "offline_replicas", ())),
                    error_code(p.error_code),
                )
                for p in topic.partitions
            }
            self.topics[topic.name] = TopicInfo(
                topic.name, getattr(topic, "topic_id", None) or uuid.UUID(int=0), bool(getattr(topic, "is_internal", False)), partitions, error_code(topic.error_code)
            )
