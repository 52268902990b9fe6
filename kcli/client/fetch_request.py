"""A Fetch request's fields, as every part of kcli that fetches sends them: consumers, the admin
client, the broker's followers, kafka-replica-verification.sh and the Spark reader
(``mapping_encoder`` writes the fields of the version sent and drops the rest)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kcli.common import TopicPartition

CONSUMER_REPLICA_ID = -1


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """What a fetch names of one partition (Kafka's FetchRequest.PartitionData)."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


def fetch_request(
    partitions: Mapping[TopicPartition, FetchPosition],
    *,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    replica_id: int = CONSUMER_REPLICA_ID,
    isolation_level: int = 0,
    session_id: int = 0,
    session_epoch: int = -1,
    forgotten: Iterable[TopicPartition] = (),
) -> dict[str, Any]:
    """The request's fields, partitions grouped by topic in the order given."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), position in partitions.items():
        topics.setdefault(topic, []).append({
            "partition": index, "current_leader_epoch": position.current_leader_epoch, "fetch_offset": position.fetch_offset,
            "last_fetched_epoch": position.last_fetched_epoch, "log_start_offset": position.log_start_offset,
            "partition_max_bytes": position.max_bytes,
        })
    forgotten_topics: dict[str, list[int]] = {}
    for topic, index in forgotten:
        forgotten_topics.setdefault(topic, []).append(index)
    return {
        "replica_id": replica_id, "max_wait": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
        "isolation_level": isolation_level, "session_id": session_id, "session_epoch": session_epoch,
        "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
        "forgotten_topics_data": [{"topic": t, "partitions": p} for t, p in forgotten_topics.items()], "rack_id": "",
    }
