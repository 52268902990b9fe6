"""ListGroups: v0-5

Behaviour: lists the groups of the ``__consumer_offsets`` partitions this broker coordinates,
with their protocol type and (v4+) state and (v5+) type, which is ``classic`` for every group
here. The v4 states filter (case-insensitive: Empty, Stable, PreparingRebalance,
CompletingRebalance, Dead) and v5 types filter keep only matching groups; an empty filter keeps
all. While an offsets partition loads, the answer carries COORDINATOR_LOAD_IN_PROGRESS with the
groups already loaded.

With an authorizer, DESCRIBE on the cluster lists every group; without it, only the groups the
principal may DESCRIBE are listed (Kafka 2.8).

Version notes: v1 adds throttling; v3 is flexible; v4 adds the states filter and state; v5 the
types filter and type.
"""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.LIST_GROUPS
VERSIONS = (0, 5)


def handle(ctx, request):
    error, groups = ctx.broker.group_coordinator.list_groups(
        getattr(request, "states_filter", ()) or (), getattr(request, "types_filter", ()) or ()
    )
    if ctx.authorizing and not ctx.authorize_cluster(AclOperation.DESCRIBE, log_if_denied=False):
        groups = [g for g in groups if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id, log_if_denied=False)]
    return {
        "error_code": error,
        "groups": [
            {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state, "group_type": g.group_type}
            for g in groups
        ],
    }
