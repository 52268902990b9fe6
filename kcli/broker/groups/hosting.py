"""Connects the group coordinator to the broker: which offsets partitions it leads, and when.

At start-up the coordinator loads every hosted ``__consumer_offsets`` partition. Afterwards the
replica manager's leadership changes decide (Kafka's onLeadershipChange): a partition this
broker comes to lead is loaded, one it follows or stops hosting is dropped. A topic deleted ->
its partitions' committed offsets are deleted from every group, as Kafka does. The
group-to-partition mapping uses the topic's partition count when the topic exists (it may have
been created with another ``offsets.topic.num.partitions``).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from kcli.broker.coordinator_hosting import follow_leadership, follow_topic_changes, led_partitions
from kcli.broker.groups.coordinator import GroupConfig, GroupCoordinator
from kcli.broker.groups.group_metadata_manager import GroupMetadataManager
from kcli.metadata.topic_names import GROUP_METADATA_TOPIC_NAME
from kcli.errors import KcliError
from kcli.storage.compression import CompressionType

log = logging.getLogger("kcli.broker.groups")


def start_group_coordinator(broker: Any) -> GroupCoordinator:
    """Create the broker's coordinator, load the hosted offsets partitions, follow topic changes."""
    config = GroupConfig.from_broker_config(broker.config)
    existing = broker.metadata.topic(GROUP_METADATA_TOPIC_NAME)
    if existing is not None and existing.partitions:
        config = dataclasses.replace(config, offsets_partitions=len(existing.partitions))
    codec = broker.config.get("offsets.topic.compression.codec")
    try:
        compression = CompressionType(codec)
    except ValueError:
        raise KcliError(f"Unknown compression type id: {codec} (offsets.topic.compression.codec)") from None
    coordinator = GroupCoordinator(config, GroupMetadataManager(broker.replica_manager, compression))
    coordinator.startup(led_partitions(broker, GROUP_METADATA_TOPIC_NAME))
    follow_leadership(broker, coordinator, GROUP_METADATA_TOPIC_NAME)
    follow_topic_changes(broker, lambda change: _apply_topic_change(coordinator, change))
    return coordinator


def _apply_topic_change(coordinator: GroupCoordinator, change: Any) -> None:
    if not coordinator.active:
        return
    if change.name != GROUP_METADATA_TOPIC_NAME and change.topic is None and change.previous is not None:
        partitions = [(change.name, index) for index in change.previous.partitions]
        coordinator.delete_partitions(partitions)
