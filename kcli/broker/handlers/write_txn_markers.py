"""WriteTxnMarkers: v1

Behaviour: what a transaction coordinator sends the leaders of a transaction's partitions: for
each marker, a COMMIT (``transaction_result`` true) or ABORT control batch of the producer id
and epoch with the coordinator epoch, appended to each named partition as the coordinator's
append (``transactions/markers``). A partition another broker leads answers
NOT_LEADER_OR_FOLLOWER (the coordinator retries it at the new leader), one the cluster does not
have UNKNOWN_TOPIC_OR_PARTITION; a stale producer epoch INVALID_PRODUCER_EPOCH; an older coordinator
epoch than the partition's last marker TRANSACTION_COORDINATOR_FENCED. A marker on
``__consumer_offsets`` also commits or drops the producer's pending transactional offsets
there. Each marker is appended with acks=-1: the answer comes once every partition's in-sync
replicas have its marker (Kafka's appendRecords callback). kcli's coordinator writes the markers of the partitions its own broker leads in-process
and sends the others here (``transactions/marker_channel_manager``); tools use it too.

With an authorizer the sender needs CLUSTER_ACTION on the cluster, as a broker (its inter-broker
principal a super user) has: anyone else is answered CLUSTER_AUTHORIZATION_FAILED.

Version notes: v1 is flexible (v0, the same fields unflexible, has no schema in the message
layer; SKIPPED.md).
"""

from __future__ import annotations

from kcli.broker.handlers._completion import Completion, answer
from kcli.broker.transactions.markers import write_marker
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.WRITE_TXN_MARKERS
VERSIONS = (1, 1)


def handle(ctx, request):
    broker = ctx.broker
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return _response(request, _repeat(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    groups = broker.group_coordinator
    now = broker.transaction_coordinator.now_ms()
    written = []  # (marker's place, topic, partition, completion)
    for m, marker in enumerate(request.markers):
        for topic in marker.topics:
            for index in topic.partition_indexes:
                done = Completion()
                write_marker(
                    broker.replica_manager, groups, topic.name, index, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                    bool(marker.transaction_result), now, done,
                )
                written.append(done)
    return answer(written, lambda errors: _response(request, iter(errors)))


def _repeat(error: ErrorCode):
    while True:
        yield error


def _response(request, errors) -> dict:
    """The answers in the request's order (``errors``: one per partition, in that order)."""
    answers = []
    for marker in request.markers:
        topics = [
            {"name": topic.name, "partitions": [{"partition_index": index, "error_code": next(errors)} for index in topic.partition_indexes]}
            for topic in marker.topics
        ]
        answers.append({"producer_id": marker.producer_id, "topics": topics})
    return {"markers": answers}
