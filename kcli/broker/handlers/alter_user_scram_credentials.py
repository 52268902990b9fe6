"""AlterUserScramCredentials: v0

Behaviour: SCRAM credentials deleted and upserted per user in ``/config/users/<user>`` with a
change notification (``broker.security.user_scram_credentials``), through any broker; each
user's result carries its error (unknown mechanism, iterations outside 4096-16384, a user and
mechanism named twice, the deletion of a credential that does not exist) or NONE.

With an authorizer ALTER on the cluster is needed (every user CLUSTER_AUTHORIZATION_FAILED), as in
Kafka 2.8.

Version notes: v0 is flexible.
"""

from __future__ import annotations

from kcli.broker.security import user_scram_credentials
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
VERSIONS = (0, 0)


async def handle(ctx, request):
    if not ctx.authorize_cluster(AclOperation.ALTER):
        users = dict.fromkeys(item.name for item in [*request.deletions, *request.upsertions])
        return {"results": [{"user": user, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None} for user in users]}
    broker = ctx.broker
    results = await broker.metadata_thread.call(
        user_scram_credentials.alter, broker.zk_client, broker.credential_cache, request.deletions, request.upsertions
    )
    return {"results": results}
