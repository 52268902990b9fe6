"""DescribeUserScramCredentials: v0

Behaviour: every user with SCRAM credentials (users null or empty), or the users named, each with
its mechanisms and iteration counts, never a salt or key (``broker.security.user_scram_credentials``):
a user named twice is DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND.

With an authorizer DESCRIBE on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v0 is flexible.
"""

from __future__ import annotations

from kcli.broker.security import user_scram_credentials
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
VERSIONS = (0, 0)


def handle(ctx, request):
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, "results": []}
    names = None if request.users is None else [u.name for u in request.users]
    results = user_scram_credentials.describe(ctx.broker.credential_cache, names)
    return {"error_code": ErrorCode.NONE, "error_message": None, "results": results}
