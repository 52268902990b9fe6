"""DescribeAcls: v1-3

Behaviour: the ACLs the broker's authorizer holds that the filter matches (MATCH and ANY
included), grouped by resource pattern, as Kafka 2.8's KafkaApis answers: DESCRIBE on the
cluster is required (CLUSTER_AUTHORIZATION_FAILED); without an authorizer SECURITY_DISABLED; a
filter with an unknown code INVALID_REQUEST (Kafka closes the connection on such a request).

Version notes: v1 adds the pattern type filter; v2 is flexible; v3 adds user resource types to
the schema only. v0 (literal patterns only) was removed in Kafka 4.0 and kio has no schema for it.
"""

from __future__ import annotations

from kcli.broker.handlers import _acls
from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation

API_KEY = ApiKey.DESCRIBE_ACLS
VERSIONS = (1, 3)


def handle(ctx, request):
    answer = {"throttle_time": 0, "error_code": ErrorCode.NONE, "error_message": None, "resources": []}
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return {**answer, **_acls.error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)}
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return {**answer, **_acls.error(ErrorCode.SECURITY_DISABLED, _acls.SECURITY_DISABLED_MESSAGE)}
    binding_filter = _acls.binding_filter(request)
    if _acls.unknown_elements(binding_filter):
        return {**answer, **_acls.error(ErrorCode.INVALID_REQUEST, "Filter contain UNKNOWN elements")}
    resources: dict = {}
    for binding in authorizer.acls(binding_filter):
        resources.setdefault(binding.pattern, []).append(binding.entry)
    answer["resources"] = [
        {
            "resource_type": pattern.resource_type,
            "resource_name": pattern.name,
            "pattern_type": pattern.pattern_type,
            "acls": [
                {"principal": e.principal, "host": e.host, "operation": e.operation, "permission_type": e.permission_type}
                for e in sorted(entries, key=str)
            ],
        }
        for pattern, entries in resources.items()
    ]
    return answer
