"""What the group and the transaction coordinators share about hosting: which partitions of their
internal topic (``__consumer_offsets``, ``__transaction_state``) this broker leads, and following
that topic's changes on the broker's event loop (metadata changes may be told from other threads).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


def led_partitions(broker: Any, topic_name: str) -> list[int]:
    """The partitions of ``topic_name`` this broker hosts as leader."""
    return sorted(p.index for p in broker.replica_manager.partitions() if p.topic == topic_name and p.broker_id == broker.id)


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


def follow_leadership(broker: Any, coordinator: Any, topic_name: str, change: Any) -> None:
    """The coordinator's topic was created, changed or deleted: load the partitions this broker now
    leads, drop the others (all of them when the topic is gone). A topic just created sets the
    coordinator's partition count, which may differ from the configured one."""
    if change.topic is not None and change.previous is None and change.topic.partitions:
        coordinator.set_partition_count(len(change.topic.partitions))
    led = set(led_partitions(broker, topic_name)) if change.topic is not None else set()
    for partition in sorted(led):
        coordinator.on_election(partition)
    for partition in sorted(coordinator.hosted_partitions() - led):
        coordinator.on_resignation(partition)
