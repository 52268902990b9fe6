"""AddPartitionsToTxn: v0-5

Behaviour: v0-3 (clients) add partitions to the open transaction of a transactional id; the
transaction starts (Ongoing) with its first partition. A partition of a topic the cluster does
not know answers UNKNOWN_TOPIC_OR_PARTITION, one of an internal topic TOPIC_AUTHORIZATION_FAILED
(clients may not write there), every other partition of the request OPERATION_NOT_ATTEMPTED,
and nothing is added. Otherwise every partition answers the
coordinator's error: INVALID_PRODUCER_ID_MAPPING (another producer id), PRODUCER_FENCED (an
older epoch; v0-1: INVALID_PRODUCER_EPOCH), CONCURRENT_TRANSACTIONS (the previous transaction
is still writing its markers), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS. v4+ (the
batched form brokers send) carries several transactions; ``verify_only`` checks, per
partition, that it is already in the transaction (TRANSACTION_ABORTABLE when not), as Kafka's
KIP-890 verification does.

With an authorizer (Kafka 2.8, and 3.9 for v4+): the transactional id needs WRITE
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), each topic WRITE
(TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED); v4+ batches, which brokers send,
need CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED).

Version notes: v2 may answer PRODUCER_FENCED; v3 is flexible; v4 batches transactions and adds
verify_only; v5 may answer TRANSACTION_ABORTABLE.
"""

from __future__ import annotations

from kcli.broker.handlers._completion import Completion, answer
from kcli.metadata.topic_names import is_internal
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN
VERSIONS = (0, 5)


def handle(ctx, request):
    if ctx.api_version >= 4 and not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        # v4+ batches come from brokers verifying transactional produce (Kafka 3.9's rule).
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results_by_transaction": []}
    if ctx.api_version < 4:
        done = _transaction(ctx, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                            request.v3_and_below_producer_epoch, request.v3_and_below_topics, verify_only=False)
        return answer(done, lambda results: {"results_by_topic_v3_and_below": results})
    transactions = list(request.transactions)
    done = [
        _transaction(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, verify_only=t.verify_only) for t in transactions
    ]
    return answer(done, lambda results: {"results_by_transaction": [
        {"transactional_id": t.transactional_id, "topic_results": r} for t, r in zip(transactions, results, strict=True)
    ]})


def _transaction(ctx, transactional_id: str, producer_id: int, producer_epoch: int, topics, *, verify_only: bool) -> Completion:
    """One transaction's partitions added (or verified): a completion of its topic results."""
    broker = ctx.broker
    partitions = [(topic.name, index) for topic in topics for index in topic.partitions]
    failed: dict[tuple[str, int], ErrorCode] = {}
    if ctx.api_version < 4 and not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        done = Completion()
        done(_by_topic(dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)))
        return done
    writable = ctx.filter_by_authorized(AclOperation.WRITE, ResourceType.TOPIC, (t for t, _ in partitions)) if ctx.authorizing else None
    for topic, index in partitions:
        if writable is not None and topic not in writable:
            failed[(topic, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        info = broker.metadata.topic(topic)
        if ctx.api_version < 4 and is_internal(topic):
            # Kafka leaves internal topics out of what a client may write in a transaction.
            failed[(topic, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif info is None or index not in info.partitions:
            failed[(topic, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    coordinator = broker.transaction_coordinator
    done = Completion()
    if failed:
        done(_by_topic({tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}))
    elif verify_only:
        done(_by_topic(coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)))
    else:

        def added(error: ErrorCode) -> None:
            if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
            done(_by_topic(dict.fromkeys(partitions, error)))

        coordinator.add_partitions(transactional_id, producer_id, producer_epoch, set(partitions), added)
    return done


def _by_topic(errors: dict[tuple[str, int], ErrorCode]) -> list[dict]:
    by_topic: dict[str, list[dict]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": index, "partition_error_code": error})
    return [{"name": topic, "results_by_partition": results} for topic, results in by_topic.items()]
