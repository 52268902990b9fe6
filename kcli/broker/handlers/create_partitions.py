"""CreatePartitions: v0-3

Behaviour: grows each topic to the requested partition count, placing new replicas as Kafka
does or as the request assigns them; the broker then hosts the new partitions. A count not above
the current one answers INVALID_PARTITIONS ("Topic currently has N partitions, which is higher
than the requested M."), a bad assignment INVALID_REPLICA_ASSIGNMENT, an unknown topic
UNKNOWN_TOPIC_OR_PARTITION, a topic named twice INVALID_REQUEST. More than 10,000 new partitions
in one request are refused whole with POLICY_VIOLATION before anything is allocated, as Kafka's
controller refuses them, and so are partitions whose logs would not fit this broker's open-file
limit. validate_only checks without changing anything.

With an authorizer each topic needs ALTER (TOPIC_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v2 is flexible; v1 and v3 differ only in throttling behaviour.
"""

from __future__ import annotations

import collections
import logging

from kcli.metadata.replica_assignment import check_partitions_per_request
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.CREATE_PARTITIONS
VERSIONS = (0, 3)

log = logging.getLogger(__name__)


async def handle(ctx, request):
    metadata = ctx.broker.metadata
    names = collections.Counter(t.name for t in request.topics)
    try:
        check_partitions_per_request(sum(_new_partitions(metadata, topic) for topic in request.topics))
    except KcliError as e:
        return {"results": [{"name": topic.name, "error_code": e.error_code, "error_message": str(e)} for topic in request.topics]}
    alterable = ctx.filter_by_authorized(AclOperation.ALTER, ResourceType.TOPIC, names) if ctx.authorizing else None
    results = []
    for topic in request.topics:
        result = {"name": topic.name}
        try:
            if names[topic.name] > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
            if alterable is not None and topic.name not in alterable:
                raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED.message)
            assignment = [list(a.broker_ids) for a in topic.assignments] if topic.assignments is not None else None
            await ctx.broker.admin_manager.create_partitions(
                topic.name, topic.count, assignment, validate_only=request.validate_only, timeout_ms=_timeout_ms(request)
            )
            if not request.validate_only:
                log.info("Topic %s now has %d partition(s)", topic.name, topic.count)
        except KcliError as e:
            result.update(error_code=e.error_code, error_message=str(e))
        results.append(result)
    return {"results": results}


def _timeout_ms(request) -> int:
    return int(request.timeout.total_seconds() * 1000)


def _new_partitions(metadata, topic) -> int:
    info = metadata.topic(topic.name)
    return max(0, topic.count - len(info.partitions)) if info is not None else 0
