"""WriteTxnMarkers: v1

Behaviour: what a transaction coordinator sends the leaders of a transaction's partitions: for
each marker, a COMMIT (``transaction_result`` true) or ABORT control batch of the producer id
and epoch with the coordinator epoch, appended to each named partition as the coordinator's
append (``transactions/markers``). A partition another broker leads answers
NOT_LEADER_OR_FOLLOWER (the coordinator retries it at the new leader), one the cluster does not
have UNKNOWN_TOPIC_OR_PARTITION; a stale producer epoch INVALID_PRODUCER_EPOCH; an older coordinator
epoch than the partition's last marker TRANSACTION_COORDINATOR_FENCED. A marker on
``__consumer_offsets`` also commits or drops the producer's pending transactional offsets
there. kcli's coordinator writes the markers of the partitions its own broker leads in-process
and sends the others here (``transactions/marker_channel_manager``); tools use it too.

Version notes: v1 is flexible (v0, the same fields unflexible, has no schema in the message
layer; SKIPPED.md).
"""

from __future__ import annotations

from kcli.metadata.topic_names import GROUP_METADATA_TOPIC_NAME
from kcli.broker.transactions.markers import write_marker
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey

API_KEY = ApiKey.WRITE_TXN_MARKERS
VERSIONS = (1, 1)


def handle(ctx, request):
    broker = ctx.broker
    groups = broker.group_coordinator
    now = broker.transaction_coordinator.now_ms()
    answers = []
    for marker in request.markers:
        commit = bool(marker.transaction_result)
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                error = write_marker(
                    broker.replica_manager, topic.name, index, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, commit, now
                )
                if error == ErrorCode.NONE and topic.name == GROUP_METADATA_TOPIC_NAME and groups is not None:
                    groups.complete_transaction(marker.producer_id, index, commit)
                partitions.append({"partition_index": index, "error_code": error})
            topics.append({"name": topic.name, "partitions": partitions})
        answers.append({"producer_id": marker.producer_id, "topics": topics})
    return {"markers": answers}
