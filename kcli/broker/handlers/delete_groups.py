"""DeleteGroups: v0-2

Behaviour: deletes each named group that is Empty, with its committed offsets: tombstones for
its offsets and its metadata are written to ``__consumer_offsets``. A group with members answers
NON_EMPTY_GROUP, one that does not exist GROUP_ID_NOT_FOUND; COORDINATOR_LOAD_IN_PROGRESS,
NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE as for the other group APIs. A group named twice is
answered once.

With an authorizer each group needs DELETE (GROUP_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 adds throttling on quota violation; v2 is flexible.
"""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.DELETE_GROUPS
VERSIONS = (0, 2)


def handle(ctx, request):
    names = list(request.groups_names)
    allowed = ctx.filter_by_authorized(AclOperation.DELETE, ResourceType.GROUP, names) if ctx.authorizing else set(names)
    results = ctx.broker.group_coordinator.delete_groups([name for name in names if name in allowed])
    denied = {name: ErrorCode.GROUP_AUTHORIZATION_FAILED for name in names if name not in allowed}
    return {"results": [{"group_id": group_id, "error_code": error} for group_id, error in {**denied, **results}.items()]}
