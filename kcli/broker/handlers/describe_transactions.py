"""DescribeTransactions: v0

Behaviour: for each transactional id, what its coordinator holds: state (Kafka's names: Empty,
Ongoing, PrepareCommit, ...), producer id and epoch, timeout, the start time of the open
transaction (-1 when none) and its partitions by topic. An empty id answers INVALID_REQUEST, an
id the coordinator does not know TRANSACTIONAL_ID_NOT_FOUND, an id of a partition this broker
does not lead NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it loads).

With an authorizer each transactional id needs DESCRIBE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and
only the topics the principal may DESCRIBE are listed, as in Kafka 3.x.

Version notes: v0 is the only version, flexible.
"""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS
VERSIONS = (0, 0)


def handle(ctx, request):
    coordinator = ctx.broker.transaction_coordinator
    states = []
    for transactional_id in request.transactional_ids:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            error, metadata = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        else:
            error, metadata = coordinator.describe(transactional_id)
        # An error leaves the other fields at the schema's zeros, as Kafka's answer does.
        entry = {"error_code": error, "transactional_id": transactional_id, "transaction_state": "", "transaction_timeout": 0,
                 "transaction_start_time": 0, "producer_id": 0, "producer_epoch": 0, "topics": []}
        if metadata is not None:
            by_topic: dict[str, list[int]] = {}
            partitions = sorted(metadata.partitions)
            if ctx.authorizing:  # only the topics the principal may describe are shown
                describable = ctx.filter_by_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, {t for t, _ in partitions}, log_if_denied=False)
                partitions = [(t, p) for t, p in partitions if t in describable]
            for topic, partition in partitions:
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
