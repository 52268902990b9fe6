"""What the group and the transaction coordinators share about hosting: their internal topic
(``__consumer_offsets``, ``__transaction_state``) created on first use as Kafka creates it, which
of its partitions this broker leads, the replica manager's leadership changes (Kafka's
onLeadershipChange) turned into loads and unloads, and topic changes followed on the broker's
event loop (metadata changes may be told from other threads).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kcli.errors import ErrorCode, KafkaError, KcliError

log = logging.getLogger("kcli.broker")

# The last failure to create each internal topic: clients look their coordinator up every few
# hundred milliseconds, so a failure is logged once, not per lookup.
_last_creation_failure: dict[str, str] = {}


async def internal_topic(
    broker: Any, name: str, what: str, partitions_config: str, replication_config: str, configs: Mapping[str, str]
) -> Any:
    """The internal topic ``name``, created when it does not exist yet with the partition count
    and replication factor of the two broker configs named; COORDINATOR_NOT_AVAILABLE (which
    clients retry) when it cannot be created."""
    existing = broker.metadata.topic(name)
    if existing is not None:
        return existing
    config = broker.config
    try:
        topic = await broker.admin_manager.create_topic(
            name, config.get(partitions_config), config.get(replication_config), configs=dict(configs)
        )
    except (KcliError, OSError) as e:  # OSError: the metadata could not be written (a full disk)
        if getattr(e, "error_code", None) == ErrorCode.TOPIC_ALREADY_EXISTS:
            existing = broker.metadata.topic(name)
            if existing is not None:
                return existing
        message = f"Could not create the {what} {name}: {e}"
        if _last_creation_failure.get(name) != message:
            _last_creation_failure[name] = message
            log.warning("%s (%s=%s)", message, replication_config, config.get(replication_config))
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE.message) from None
    _last_creation_failure.pop(name, None)
    log.info("Created the %s %s with %d partition(s)", what, name, len(topic.partitions))
    return topic


def led_partitions(broker: Any, topic_name: str) -> list[int]:
    """The partitions of ``topic_name`` this broker hosts as leader."""
    return sorted(p.index for p in broker.replica_manager.leader_partitions() if p.topic == topic_name)


def follow_topic_changes(broker: Any, apply: Callable[[Any], None]) -> None:
    """Call ``apply(change)`` for every topic change, always on the running event loop."""
    loop = asyncio.get_running_loop()

    def on_topic_change(change: Any) -> None:
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            apply(change)
        else:
            loop.call_soon_threadsafe(apply, change)

    broker.metadata.on_topic_change(on_topic_change)


def follow_leadership(broker: Any, coordinator: Any, topic_name: str) -> None:
    """Load the partitions of ``topic_name`` this broker comes to lead and drop those it no longer
    leads, as the replica manager tells them (Kafka's onLeadershipChange). Before the first load,
    the coordinator takes the topic's partition count, which may differ from the configured one."""

    def on_leadership_change(led: list, not_led: list) -> None:
        if not coordinator.active:
            return
        elected = sorted(p.index for p in led if p.topic == topic_name)
        if elected:
            topic = broker.metadata.topic(topic_name)
            if topic is not None and topic.partitions:
                coordinator.set_partition_count(len(topic.partitions))
        for index in elected:
            coordinator.on_election(index)
        hosted = coordinator.hosted_partitions()
        for index in sorted({index for name, index in not_led if name == topic_name and index in hosted}):
            coordinator.on_resignation(index)

    broker.replica_manager.on_leadership_change(on_leadership_change)
