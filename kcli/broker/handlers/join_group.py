"""JoinGroup: v0-9

Behaviour: a member joins a classic group (``broker/groups/coordinator``): the request waits
until the rebalance completes (every member rejoined, the rebalance timeout, or
``group.initial.rebalance.delay.ms`` for a new group) and answers the generation, the chosen
protocol, the leader and, to the leader only, every member's metadata. A new dynamic member from
v4 first gets MEMBER_ID_REQUIRED with its member id and joins again with it. Static members
(``group.instance.id``) rejoin under a new member id without a rebalance while their protocols
keep the group's protocol; an older member id of theirs is FENCED_INSTANCE_ID. Errors:
INVALID_GROUP_ID (empty id), INVALID_SESSION_TIMEOUT (outside ``group.min.session.timeout.ms`` ..
``group.max.session.timeout.ms``), INCONSISTENT_GROUP_PROTOCOL (no protocol in common, another
protocol type, or none given), GROUP_MAX_SIZE_REACHED (``group.max.size``), UNKNOWN_MEMBER_ID,
COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE.

With an authorizer the group needs READ (GROUP_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 adds the rebalance timeout (v0 uses the session timeout); v4 requires a known
member id; v5 adds group.instance.id; v6 is flexible; v7 answers the protocol type and a nullable
protocol name; v8 adds the join reason; v9 lets a rejoining static leader skip the assignment.
"""

from __future__ import annotations

from kcli.broker.groups.group import JoinGroupResult
from kcli.broker.groups.wire import client_host, duration_ms
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.JOIN_GROUP
VERSIONS = (0, 9)


async def handle(ctx, request):
    version = ctx.api_version
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return response(JoinGroupResult("", ErrorCode.GROUP_AUTHORIZATION_FAILED), version)
    session_timeout = duration_ms(request.session_timeout)
    rebalance_timeout = duration_ms(request.rebalance_timeout) if version >= 1 else session_timeout
    result = await ctx.broker.group_coordinator.join_group(
        request.group_id,
        request.member_id,
        getattr(request, "group_instance_id", None),
        require_known_member_id=version >= 4,
        support_skipping_assignment=version >= 9,
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx.peer),
        rebalance_timeout_ms=rebalance_timeout,
        session_timeout_ms=session_timeout,
        protocol_type=request.protocol_type,
        protocols=[(p.name, p.metadata) for p in request.protocols],
        reason=getattr(request, "reason", None),
    )
    return response(result, version)


def response(result: JoinGroupResult, version: int) -> dict:
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""  # not nullable before v7
    return {
        "error_code": result.error,
        "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        "protocol_name": protocol_name,
        "leader": result.leader,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [{"member_id": m, "group_instance_id": i, "metadata": md} for m, i, md in result.members],
    }
