"""CreateTopics: v2-7

Behaviour: creates each topic with its partition count and replication factor (-1: the broker's
``num.partitions`` / ``default.replication.factor``), or with a manual replica assignment, and its
config overrides, each checked by the broker's config rules (INVALID_CONFIG). Topic-name rules,
existing topics (TOPIC_ALREADY_EXISTS), partition and replication counts (INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR), assignments (INVALID_REPLICA_ASSIGNMENT) and '.'/'_' collisions
(INVALID_TOPIC_EXCEPTION) are validated as Kafka's controller does, with its messages. A name
given twice in one request answers INVALID_REQUEST for it. A request asking for more than 10,000
partitions in all is refused whole with POLICY_VIOLATION, as Kafka's controller refuses it, and so
is a topic whose logs would not fit this broker's open-file limit; a creation whose metadata the
disk refuses answers KAFKA_STORAGE_ERROR, nothing created. With validate_only nothing is
created but the answer is the same. The topic is written as its assignment; the controller
elects its partitions' leaders, and the answer waits for them within the request's timeout
(REQUEST_TIMED_OUT past it; a timeout of 0 answers at once). From v5 the answer carries the topic's id, partition count,
replication factor and every config with its value and source.

With an authorizer each topic needs CREATE on the cluster or on itself (TOPIC_AUTHORIZATION_FAILED,
"Authorization failed."), and its configs (v5+) DESCRIBE_CONFIGS (else topic_config_error_code
TOPIC_AUTHORIZATION_FAILED and no configs), as in Kafka 2.8.

Version notes: v0-1 (no validate-only error messages) are not served; v5 is flexible and
describes the created topic; v7 adds topic ids.
"""

from __future__ import annotations

import collections
import logging

from kcli.metadata.replica_assignment import check_partitions_per_request
from kcli.errors import ErrorCode, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.CREATE_TOPICS
VERSIONS = (2, 7)

log = logging.getLogger(__name__)


async def handle(ctx, request):
    broker = ctx.broker
    names = collections.Counter(t.name for t in request.topics)
    try:
        check_partitions_per_request(sum(_new_partitions(broker, topic) for topic in request.topics))
    except KcliError as e:
        return {"topics": [_failed(topic.name, e.error_code, str(e)) for topic in request.topics]}
    creatable = describable = None
    if ctx.authorizing:
        creatable = set(names) if ctx.authorize_cluster(AclOperation.CREATE, log_if_denied=False) else ctx.filter_by_authorized(
            AclOperation.CREATE, ResourceType.TOPIC, names
        )
        describable = ctx.filter_by_authorized(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names, log_if_denied=False)
    results = []
    for topic in request.topics:
        if names[topic.name] > 1:
            results.append(_failed(topic.name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
            continue
        if creatable is not None and topic.name not in creatable:
            results.append(_failed(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            continue
        result = await _create(broker, topic, request.validate_only, ctx.api_version, int(request.timeout.total_seconds() * 1000))
        if describable is not None and topic.name not in describable and "configs" in result:
            result["configs"] = None
            result["topic_config_error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        results.append(result)
    return {"topics": results}


def _new_partitions(broker, topic) -> int:
    """The partitions the request asks for this topic (Kafka counts a default count as its value)."""
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == -1:
        return broker.admin_manager.admin_zk_client.default_num_partitions
    return max(0, topic.num_partitions)


async def _create(broker, topic, validate_only: bool, version: int, timeout_ms: int) -> dict:
    assignment = {a.partition_index: list(a.broker_ids) for a in topic.assignments} or None
    configs = {c.name: c.value for c in topic.configs}
    try:
        info = await broker.admin_manager.create_topic(
            topic.name,
            topic.num_partitions,
            topic.replication_factor,
            assignment,
            configs,
            validate_only=validate_only,
            config_validator=broker.validate_topic_configs,
            timeout_ms=timeout_ms,
        )
    except KcliError as e:
        return _failed(topic.name, e.error_code, str(e))
    except OSError as e:
        # The metadata could not be written (a full disk): nothing was created.
        log.warning("Could not create topic %s: %s", topic.name, e)
        return _failed(topic.name, ErrorCode.KAFKA_STORAGE_ERROR, f"Could not create topic {topic.name}: {e}")
    if not validate_only:
        log.info("Created topic %s with %d partition(s)", topic.name, len(info.partitions))
    result = {
        "name": topic.name,
        "topic_id": info.topic_id,
        "num_partitions": len(info.partitions),
        "replication_factor": info.replication_factor,
    }
    if version >= 5:
        result["configs"] = [
            {"name": e.name, "value": e.value, "read_only": e.read_only, "config_source": e.source, "is_sensitive": e.is_sensitive}
            for e in broker.describe_topic_configs(info.name, dict(info.configs))
        ]
    return result


def _failed(name: str, code: ErrorCode, message: str) -> dict:
    return {"name": name, "error_code": code, "error_message": message, "num_partitions": -1, "replication_factor": -1, "configs": None}
