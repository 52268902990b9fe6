"""DescribeGroups: v0-6

Behaviour: describes each named group: state, protocol type, protocol and members (member id,
group.instance.id, client id, client host as ``/address``); a Stable group's members carry their
subscription metadata and assignment, other states' members carry neither (and no protocol), as
Kafka answers. A group that does not exist is answered as Dead with no members; from v6 it is
GROUP_ID_NOT_FOUND with a message. Authorized operations (v3+, when asked, on a group answered
without error) are what Kafka answers without an authorizer: every group operation. Per-group
errors: COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, INVALID_GROUP_ID
(null id).

With an authorizer each group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED) and its authorized
operations are the ACLs', as in Kafka 2.8.

Version notes: v1 adds throttling; v3 authorized operations; v4 group.instance.id; v5 is
flexible; v6 adds per-group error messages.
"""

from __future__ import annotations

from kcli.broker import authorized_operations
from kcli.broker.groups.group import GroupState
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.DESCRIBE_GROUPS
VERSIONS = (0, 6)


def handle(ctx, request):
    coordinator = ctx.broker.group_coordinator
    version = ctx.api_version
    include_ops = version >= 3 and getattr(request, "include_authorized_operations", False)
    groups = []
    for group_id in request.groups:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            error, summary = ErrorCode.GROUP_AUTHORIZATION_FAILED, None
        else:
            error, summary = coordinator.describe_group(group_id)
        entry = {
            "group_id": group_id,
            "error_code": error,
            "group_state": "",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": authorized_operations.NOT_REQUESTED,
        }
        if error is ErrorCode.NONE:
            if summary is None and version >= 6:
                entry["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
                entry["error_message"] = f"Group {group_id} not found."
            elif summary is None:
                entry["group_state"] = str(GroupState.DEAD)
            else:
                entry.update(group_state=summary.state, protocol_type=summary.protocol_type, protocol_data=summary.protocol)
                entry["members"] = [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in summary.members
                ]
            if include_ops and entry["error_code"] is ErrorCode.NONE:
                operations = ctx.authorized_operations(ResourceType.GROUP, group_id)
                entry["authorized_operations"] = authorized_operations.GROUP if operations is None else authorized_operations.bit_field(operations)
        elif version >= 6:
            entry["error_message"] = error.message
        groups.append(entry)
    return {"groups": groups}
