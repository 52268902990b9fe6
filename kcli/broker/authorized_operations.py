"""Authorized operations as Kafka reports them (KIP-430): a 32-bit field with bit n set for each
allowed operation whose AclOperation code is n, or ``NOT_REQUESTED`` when the request did not ask.

kcli has no authorizer, so, as Kafka answers without one (``AuthHelper.authorizedOperations``),
every operation Kafka supports on the resource type is allowed (``AclEntry.supportedOperations``).
Metadata (v8+), DescribeCluster and DescribeGroups (v3+) answer from here.
"""

from __future__ import annotations

from enum import IntEnum


class AclOperation(IntEnum):
    """Kafka's AclOperation codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


# The schemas' default for an authorized-operations field: Integer.MIN_VALUE, "not requested".
NOT_REQUESTED = -(2**31)


def bit_field(operations: frozenset[AclOperation]) -> int:
    """Kafka's ``Utils.to32BitField``: bit n set for each operation of code n."""
    value = 0
    for operation in operations:
        value |= 1 << operation
    return value


_O = AclOperation
TOPIC_OPERATIONS = frozenset({_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})
GROUP_OPERATIONS = frozenset({_O.READ, _O.DESCRIBE, _O.DELETE})
CLUSTER_OPERATIONS = frozenset(
    {_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}
)

TOPIC = bit_field(TOPIC_OPERATIONS)
GROUP = bit_field(GROUP_OPERATIONS)
CLUSTER = bit_field(CLUSTER_OPERATIONS)
