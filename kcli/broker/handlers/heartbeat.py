"""Heartbeat: v0-4

Behaviour: a member of a classic group says it is alive, which moves its session deadline
(``session.timeout.ms`` from now). REBALANCE_IN_PROGRESS tells it to rejoin; ILLEGAL_GENERATION
that its generation is over; UNKNOWN_MEMBER_ID that the group does not know it (it was removed,
or the group is Empty); FENCED_INSTANCE_ID that another member holds its group.instance.id.
While the group's partition loads, the heartbeat is answered with no error, as Kafka does.

With an authorizer the group needs READ (GROUP_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 adds throttling; v3 group.instance.id; v4 is flexible.
"""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.HEARTBEAT
VERSIONS = (0, 4)


def handle(ctx, request):
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    error = ctx.broker.group_coordinator.heartbeat(
        request.group_id, request.member_id, getattr(request, "group_instance_id", None), request.generation_id
    )
    return {"error_code": error}
