"""Connects the transaction coordinator to the broker: ``__transaction_state``, its partitions
this broker leads, and the topic's creation.

At start-up the coordinator loads every hosted ``__transaction_state`` partition; afterwards a
change of that topic loads the partitions this broker now leads and drops the others. The topic
is created by the first FindCoordinator for a transactional id, as Kafka does:
``transaction.state.log.num.partitions`` partitions, ``transaction.state.log.replication.factor``
replicas (not created while fewer brokers are alive), ``cleanup.policy=compact``,
``compression.type=uncompressed``, ``segment.bytes`` = ``transaction.state.log.segment.bytes``,
``min.insync.replicas`` = ``transaction.state.log.min.isr`` and
``unclean.leader.election.enable=false``.

Markers for partitions another broker leads go to that leader through the
``TransactionMarkerChannelManager``, at the address the leader registered; the leader of a
partition is the broker's metadata cache's.
"""

from __future__ import annotations

import logging
from typing import Any

from kcli.broker.network.broker_connections import BrokerConnections, live_broker_address
from kcli.broker.coordinator_hosting import follow_leadership, internal_topic, led_partitions
from kcli.metadata.topic_names import TRANSACTION_STATE_TOPIC_NAME
from kcli.broker.transactions.coordinator import TransactionConfig, TransactionCoordinator
from kcli.broker.transactions.marker_channel_manager import TransactionMarkerChannelManager
from kcli.broker.transactions.transaction_state_manager import TransactionStateManager

log = logging.getLogger("kcli.broker.transactions")


def start_transaction_coordinator(broker: Any) -> TransactionCoordinator:
    config = TransactionConfig.from_broker_config(broker.config)

    def leader_of(topic: str, index: int) -> int | None:
        info = broker.metadata.topic(topic)
        partition = None if info is None else info.partitions.get(index)
        return None if partition is None else partition.leader

    channel = TransactionMarkerChannelManager(BrokerConnections(
        live_broker_address(broker), client_id=f"broker-{broker.id}-txn-marker-sender", request_timeout_ms=broker.config.get("request.timeout.ms"),
        security=getattr(broker, "inter_broker_security", None),
    ))
    coordinator = TransactionCoordinator(
        config,
        TransactionStateManager(broker.replica_manager),
        broker.replica_manager,
        broker.producer_ids.generate,
        group_coordinator=lambda: broker.group_coordinator,
        leader_of=leader_of,
        marker_channel=channel,
    )
    existing = broker.metadata.topic(TRANSACTION_STATE_TOPIC_NAME)
    if existing is not None and existing.partitions:
        coordinator.set_partition_count(len(existing.partitions))
    coordinator.startup(led_partitions(broker, TRANSACTION_STATE_TOPIC_NAME))
    follow_leadership(broker, coordinator, TRANSACTION_STATE_TOPIC_NAME)
    return coordinator


async def transaction_state_topic(broker: Any) -> Any:
    """``__transaction_state``, created as Kafka creates it when it does not exist yet."""
    config = broker.config
    return await internal_topic(
        broker,
        TRANSACTION_STATE_TOPIC_NAME,
        "transaction state topic",
        "transaction.state.log.num.partitions",
        "transaction.state.log.replication.factor",
        {
            "unclean.leader.election.enable": "false",
            "min.insync.replicas": str(config.get("transaction.state.log.min.isr")),
            "segment.bytes": str(config.get("transaction.state.log.segment.bytes")),
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
        },
    )
