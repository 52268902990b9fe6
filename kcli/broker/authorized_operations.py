"""Authorized operations as Kafka reports them (KIP-430): a 32-bit field with bit n set for each
allowed operation whose AclOperation code is n, or ``NOT_REQUESTED`` when the request did not ask.

kcli has no authorizer, so, as Kafka answers without one (``AuthHelper.authorizedOperations``),
every operation Kafka supports on the resource type is allowed (``AclEntry.supportedOperations``).
Metadata (v8+), DescribeCluster and DescribeGroups (v3+) answer from here.
"""

from __future__ import annotations

from kcli.security.acl import SUPPORTED_OPERATIONS, AclOperation, ResourceType


# The schemas' default for an authorized-operations field: Integer.MIN_VALUE, "not requested".
NOT_REQUESTED = -(2**31)


def bit_field(operations: frozenset[AclOperation]) -> int:
    """Kafka's ``Utils.to32BitField``: bit n set for each operation of code n."""
    value = 0
    for operation in operations:
        value |= 1 << operation
    return value


TOPIC = bit_field(SUPPORTED_OPERATIONS[ResourceType.TOPIC])
GROUP = bit_field(SUPPORTED_OPERATIONS[ResourceType.GROUP])
CLUSTER = bit_field(SUPPORTED_OPERATIONS[ResourceType.CLUSTER])
