"""DeleteGroups: v0-2

Behaviour: deletes each named group that is Empty, with its committed offsets: tombstones for
its offsets and its metadata are written to ``__consumer_offsets``. A group with members answers
NON_EMPTY_GROUP, one that does not exist GROUP_ID_NOT_FOUND; COORDINATOR_LOAD_IN_PROGRESS,
NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE as for the other group APIs. A group named twice is
answered once.

Version notes: v1 adds throttling on quota violation; v2 is flexible.
"""

from __future__ import annotations

from kcli.protocol.api_keys import ApiKey

API_KEY = ApiKey.DELETE_GROUPS
VERSIONS = (0, 2)


def handle(ctx, request):
    results = ctx.broker.group_coordinator.delete_groups(request.groups_names)
    return {"results": [{"group_id": group_id, "error_code": error} for group_id, error in results.items()]}
