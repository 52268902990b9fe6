"""DescribeTransactions: v0

Behaviour: for each transactional id, what its coordinator holds: state (Kafka's names: Empty,
Ongoing, PrepareCommit, ...), producer id and epoch, timeout, the start time of the open
transaction (-1 when none) and its partitions by topic. An empty id answers INVALID_REQUEST, an
id the coordinator does not know TRANSACTIONAL_ID_NOT_FOUND, an id of a partition this broker
does not lead NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it loads).

Version notes: v0 is the only version, flexible.
"""

from __future__ import annotations

from kcli.protocol.api_keys import ApiKey

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS
VERSIONS = (0, 0)


def handle(ctx, request):
    coordinator = ctx.broker.transaction_coordinator
    states = []
    for transactional_id in request.transactional_ids:
        error, metadata = coordinator.describe(transactional_id)
        # An error leaves the other fields at the schema's zeros, as Kafka's answer does.
        entry = {"error_code": error, "transactional_id": transactional_id, "transaction_state": "", "transaction_timeout": 0,
                 "transaction_start_time": 0, "producer_id": 0, "producer_epoch": 0, "topics": []}
        if metadata is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(metadata.partitions):
                by_topic.setdefault(topic, []).append(partition)
            entry.update(
                transaction_state=metadata.state.kafka_name,
                transaction_timeout=metadata.txn_timeout_ms,
                transaction_start_time=metadata.txn_start_timestamp,
                producer_id=metadata.producer_id,
                producer_epoch=metadata.producer_epoch,
                topics=[{"topic": topic, "partitions": partitions} for topic, partitions in by_topic.items()],
            )
        states.append(entry)
    return {"transaction_states": states}
