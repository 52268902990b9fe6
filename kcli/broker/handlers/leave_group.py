"""LeaveGroup: v0-5

Behaviour: members leave a classic group; a Stable or CompletingRebalance group rebalances
without them. From v3 one request names several members, each by member id and/or
group.instance.id (an empty member id with an instance id removes that static member, as the
admin client does); each gets its own error (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID). Before v3 the
single member's error is the top-level error.

With an authorizer the group needs READ (GROUP_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 adds throttling; v3 batches members; v4 is flexible; v5 adds the reason.
"""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.LEAVE_GROUP
VERSIONS = (0, 5)


def handle(ctx, request):
    version = ctx.api_version
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id, getattr(m, "reason", None)) for m in request.members]
    else:
        leaving = [(request.member_id, None, None)]
    error, members = ctx.broker.group_coordinator.leave_group(request.group_id, leaving)
    if version < 3 and error is ErrorCode.NONE:
        error = next((e for _, _, e in members if e is not ErrorCode.NONE), ErrorCode.NONE)
    return {
        "error_code": error,
        "members": [{"member_id": m, "group_instance_id": i, "error_code": e} for m, i, e in members],
    }
