"""TxnOffsetCommit: v0-4

Behaviour: a transactional producer commits a group's offsets inside its transaction. An empty
group id answers INVALID_GROUP_ID, a group of a partition this broker does not lead
NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it loads). The group's ``__consumer_offsets`` partition must be in the transaction (AddOffsetsToTxn first; the
transactional id's coordinator is asked over the wire when it is another broker):
otherwise INVALID_TXN_STATE (v4: TRANSACTION_ABORTABLE), as Kafka 3.9's verification answers;
a stale epoch answers INVALID_PRODUCER_EPOCH, another producer id INVALID_PRODUCER_ID_MAPPING.
The offsets are written to ``__consumer_offsets`` as a transactional batch of the producer and
stay pending (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them) until
the transaction's marker: COMMIT makes them the group's committed offsets, ABORT drops them. A
partition of a topic the cluster does not know answers UNKNOWN_TOPIC_OR_PARTITION; with v3's
member id, generation and instance id, a member of a group must be current
(UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID); metadata longer than
``offset.metadata.max.bytes`` answers OFFSET_METADATA_TOO_LARGE.

With an authorizer the transactional id needs WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), the
group READ (GROUP_AUTHORIZATION_FAILED), each topic READ (TOPIC_AUTHORIZATION_FAILED), as in
Kafka 2.8.

Version notes: v2 adds the committed leader epoch; v3 is flexible and adds the member id,
generation and group instance id; v4 may answer TRANSACTION_ABORTABLE.
"""

from __future__ import annotations

import asyncio

from kcli.broker.handlers._completion import Completion, answer
from kcli.broker.groups.offsets import NO_METADATA, OffsetAndMetadata
from kcli.broker.groups.wire import leader_epoch_or_none
from kcli.broker.transactions.verification import coordinator_is_remote
from kcli.common import TopicPartition
from kcli.metadata.topic_names import GROUP_METADATA_TOPIC_NAME
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.TXN_OFFSET_COMMIT
VERSIONS = (0, 4)

# What a failed verification answers (Kafka's AddPartitionsToTxnManager conversions).
_VERIFICATION_ERRORS = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
}


def handle(ctx, request):
    refused = None
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        refused = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if refused is not None:
        return _response(request, {(t.name, p.partition_index): refused for t in request.topics for p in t.partitions})
    if request.transactional_id and coordinator_is_remote(ctx.broker, request.transactional_id):
        return _handle_verified_remotely(ctx, request)
    return _handle(ctx, request)


async def _handle_verified_remotely(ctx, request):
    """The transactional id's coordinator is another broker: it verifies first."""
    tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, ctx.broker.group_coordinator.partition_for(request.group_id))
    errors = await ctx.broker.add_partitions_to_txn_manager.verify(request.transactional_id, request.producer_id, request.producer_epoch, [tp])
    response = _handle(ctx, request, errors[tp])
    return await response if asyncio.iscoroutine(response) else response


def _handle(ctx, request, remote_error: ErrorCode | None = None):
    broker = ctx.broker
    groups = broker.group_coordinator
    version = ctx.api_version
    now = groups.now_ms()
    errors: dict[tuple[str, int], ErrorCode] = {}
    commits: dict[tuple[str, int], OffsetAndMetadata] = {}
    readable = ctx.filter_by_authorized(AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)) if ctx.authorizing else None
    for topic in request.topics:
        info = broker.metadata.topic(topic.name)
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if readable is not None and topic.name not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or p.partition_index not in info.partitions:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                commits[tp] = OffsetAndMetadata(
                    p.committed_offset,
                    leader_epoch_or_none(getattr(p, "committed_leader_epoch", -1)),
                    NO_METADATA if p.committed_metadata is None else p.committed_metadata,
                    now,
                )
    done = Completion()
    if commits:
        error = groups.transactional_commit_status(request.group_id) or _verify(ctx, request, version, remote_error)
        if error is not None:
            done(dict.fromkeys(commits, error))
        else:
            groups.commit_transactional_offsets(
                request.group_id,
                request.producer_id,
                request.producer_epoch,
                getattr(request, "member_id", ""),
                getattr(request, "group_instance_id", None),
                getattr(request, "generation_id", -1),
                commits,
                done,
            )
    else:
        done({})
    return answer(done, lambda results: _response(request, {**errors, **results}))


def _response(request, errors: dict) -> dict:
    topics = []
    for topic in request.topics:
        partitions = [{"partition_index": p.partition_index, "error_code": errors[(topic.name, p.partition_index)]} for p in topic.partitions]
        topics.append({"name": topic.name, "partitions": partitions})
    return {"topics": topics}


def _verify(ctx, request, version: int, remote_error: ErrorCode | None) -> ErrorCode | None:
    """Kafka 3.9's check that the group's offsets partition is in the producer's transaction
    (``remote_error``: what a coordinator on another broker answered)."""
    broker = ctx.broker
    if not broker.config.get("transaction.partition.verification.enable"):
        return None
    groups = broker.group_coordinator
    tp = (GROUP_METADATA_TOPIC_NAME, groups.partition_for(request.group_id))
    if remote_error is not None:
        error = remote_error
    else:
        error = broker.transaction_coordinator.verify_partitions(request.transactional_id, request.producer_id, request.producer_epoch, [tp])[tp]
    if error == ErrorCode.NONE:
        return None
    if error == ErrorCode.TRANSACTION_ABORTABLE and version < 4:
        return ErrorCode.INVALID_TXN_STATE
    return _VERIFICATION_ERRORS.get(error, error)
