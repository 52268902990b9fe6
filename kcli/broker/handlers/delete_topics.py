"""DeleteTopics: v1-6

Behaviour: deletes each topic named (or, from v6, given by id): its metadata goes at once, and
the broker deletes its partition logs (renamed ``-delete`` and removed, as Kafka does).
UNKNOWN_TOPIC_OR_PARTITION for a name that does not exist, UNKNOWN_TOPIC_ID for an unknown id,
INVALID_REQUEST when a v6 entry names both or neither. ``delete.topic.enable=false`` answers
TOPIC_DELETION_DISABLED.

With an authorizer each topic needs DESCRIBE and DELETE (TOPIC_AUTHORIZATION_FAILED; asked by id,
a topic the principal may not describe is UNKNOWN_TOPIC_ID), as in Kafka 2.8.

Version notes: v4 is flexible; v5 adds error messages; v6 topic ids.
"""

from __future__ import annotations

import logging
import uuid

from kcli.errors import ErrorCode, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.DELETE_TOPICS
VERSIONS = (1, 6)

ZERO_UUID = uuid.UUID(int=0)
log = logging.getLogger(__name__)


async def handle(ctx, request):
    broker = ctx.broker
    if ctx.api_version >= 6:
        targets = [(t.name, t.topic_id if t.topic_id != ZERO_UUID else None) for t in request.topics]
    else:
        targets = [(name, None) for name in request.topic_names]
    return {"responses": [await _authorized_delete(ctx, name, topic_id) for name, topic_id in targets]}


async def _authorized_delete(ctx, name: str | None, topic_id: uuid.UUID | None) -> dict:
    """Kafka 2.8's checks first: a topic the principal may not DESCRIBE answers
    TOPIC_AUTHORIZATION_FAILED (by id: UNKNOWN_TOPIC_ID, nothing disclosed), one it may not
    DELETE TOPIC_AUTHORIZATION_FAILED."""
    if ctx.authorizing and (name is None) != (topic_id is None):
        known = name
        if known is None:
            info = ctx.broker.metadata.topic_by_id(topic_id)
            known = info.name if info is not None else None
        result = {"name": name, "topic_id": topic_id or ZERO_UUID}
        if known is not None and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, known):
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
            result.update(error_code=code, error_message=code.message)
            return result
        if known is not None and not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, known):
            result.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=ErrorCode.TOPIC_AUTHORIZATION_FAILED.message)
            return result
    return await _delete(ctx.broker, name, topic_id)


async def _delete(broker, name: str | None, topic_id: uuid.UUID | None) -> dict:
    result = {"name": name, "topic_id": topic_id or ZERO_UUID}
    if (name is None) == (topic_id is None):
        result.update(error_code=ErrorCode.INVALID_REQUEST, error_message="Neither topic name nor id were specified." if name is None else "You may not specify both topic name and topic id.")
        return result
    if not broker.config.get("delete.topic.enable"):
        result.update(error_code=ErrorCode.TOPIC_DELETION_DISABLED, error_message="Topic deletion is disabled.")
        return result
    try:
        info = await broker.admin_manager.delete_topic(name=name, topic_id=topic_id)
    except KcliError as e:
        result.update(error_code=e.error_code, error_message=str(e))
        return result
    log.info("Deleted topic %s", info.name)
    result.update(name=info.name, topic_id=info.topic_id)
    return result
