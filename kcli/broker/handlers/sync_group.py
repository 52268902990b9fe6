"""SyncGroup: v0-5

Behaviour: after a JoinGroup, every member asks for its assignment; the leader's request carries
the assignment of every member (a member it leaves out gets an empty one). The leader's
assignment is stored in ``__consumer_offsets`` (GroupMetadataValue), then every waiting member is
answered and the group is Stable. A member of a Stable group gets its current assignment at once.
Errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS (the
group rebalances again, or its coordinator was reloaded), INCONSISTENT_GROUP_PROTOCOL (v5: a
protocol type or name that is not the group's, or missing), NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, INVALID_GROUP_ID.

With an authorizer the group needs READ (GROUP_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 adds throttling; v3 group.instance.id; v4 is flexible; v5 checks and answers
the protocol type and name.
"""

from __future__ import annotations

from kcli.broker.groups.group import SyncGroupResult
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.SYNC_GROUP
VERSIONS = (0, 5)


async def handle(ctx, request):
    version = ctx.api_version
    protocol_type = getattr(request, "protocol_type", None)
    protocol_name = getattr(request, "protocol_name", None)
    if version >= 5 and (protocol_type is None or protocol_name is None):
        result = SyncGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    elif not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        result = SyncGroupResult(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    else:
        result = await ctx.broker.group_coordinator.sync_group(
            request.group_id,
            request.generation_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
            protocol_type,
            protocol_name,
            {a.member_id: a.assignment for a in request.assignments},
        )
    return {
        "error_code": result.error,
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name,
        "assignment": result.assignment,
    }
