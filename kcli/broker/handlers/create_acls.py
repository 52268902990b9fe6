"""CreateAcls: v1-3

Behaviour: each creation added to its resource's ACL znode through the broker's authorizer (one
conditional write and change node per resource; every broker follows), answered by any broker,
each with its own result as Kafka 2.8's KafkaApis: ALTER on the cluster is required (every
result CLUSTER_AUTHORIZATION_FAILED); without an authorizer every result is SECURITY_DISABLED; a
CLUSTER resource not named ``kafka-cluster``, an empty name, an unknown code, a principal not of
the form ``Type:name``, or a filter's ANY or MATCH in a creation is INVALID_REQUEST for that
creation alone.

Version notes: v1 adds the pattern type; v2 is flexible; v3 adds user resource types to the
schema only. v0 (literal patterns only) was removed in Kafka 4.0 and kio has no schema for it.
"""

from __future__ import annotations

from kcli.broker.handlers import _acls
from kcli.errors import ErrorCode
from kcli.metadata.acl_store import AclStore
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import CLUSTER_NAME, AclOperation, ResourceType

API_KEY = ApiKey.CREATE_ACLS
VERSIONS = (1, 3)


async def handle(ctx, request):
    creations = request.creations
    if not ctx.authorize_cluster(AclOperation.ALTER):
        failed = _acls.error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message)
        return {"throttle_time": 0, "results": [failed for _ in creations]}
    broker = ctx.broker
    if broker.authorizer is None:
        return {"throttle_time": 0, "results": [_acls.error(ErrorCode.SECURITY_DISABLED, _acls.SECURITY_DISABLED_MESSAGE + ".") for _ in creations]}
    results: list = [None] * len(creations)
    valid, positions = [], []
    for index, creation in enumerate(creations):
        binding = _acls.binding(creation)
        if isinstance(binding, str):
            results[index] = _acls.error(ErrorCode.INVALID_REQUEST, binding)
        elif binding.pattern.resource_type == ResourceType.CLUSTER and binding.pattern.name != CLUSTER_NAME:
            results[index] = _acls.error(ErrorCode.INVALID_REQUEST, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        elif binding.pattern.name == "":
            results[index] = _acls.error(ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
        else:
            valid.append(binding)
            positions.append(index)
    if valid:
        created = await broker.metadata_thread.call(broker.authorizer.create_acls, AclStore(broker.zk_client.store), valid)
        for index, (code, message) in zip(positions, created):
            results[index] = _acls.error(code, message)
    return {"throttle_time": 0, "results": results}
