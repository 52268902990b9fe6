"""The oldest versions of OffsetCommit and OffsetFetch, as Kafka 3.9 defines them.

Kafka 3.9 still serves (deprecated, KIP-896) and Kafka 4.0 removed::

    8  OffsetCommit  v0  offsets stored in ZooKeeper (/consumers/<group>/offsets/<topic>/<partition>)
                     v1  stored in Kafka, with a commit timestamp per partition
    9  OffsetFetch   v0  offsets read from ZooKeeper

kio (which follows Kafka 4.x) has OffsetCommit from v2 and OffsetFetch from v1, so these versions
are stated here as Kafka 3.9's JSON definitions restate them
(``clients/src/main/resources/common/message/OffsetCommitRequest.json`` and the others), for
``kcli.protocol.schema``; ``kcli.protocol.stated_apis`` serves them below kio's versions. Field
names are the ones kio gives the later versions (``GenerationIdOrMemberEpoch``, as Kafka 3.9
names it), and the responses keep 3.9's fields of later versions (absent from these), so a
handler reads and answers every version alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OLDER_VERSIONS"]

OFFSET_COMMIT_REQUEST = {
    "name": "OffsetCommitRequest",
    "validVersions": "0-1",
    "flexibleVersions": "none",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "GenerationIdOrMemberEpoch", "type": "int32", "versions": "1+", "default": "-1", "ignorable": True},
        {"name": "MemberId", "type": "string", "versions": "1+", "ignorable": True},
        {"name": "Topics", "type": "[]OffsetCommitRequestTopic", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]OffsetCommitRequestPartition", "versions": "0+", "fields": [
                {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                {"name": "CommittedOffset", "type": "int64", "versions": "0+"},
                {"name": "CommitTimestamp", "type": "int64", "versions": "1", "default": "-1"},
                {"name": "CommittedMetadata", "type": "string", "versions": "0+", "nullableVersions": "0+"},
            ]},
        ]},
    ],
}

OFFSET_COMMIT_RESPONSE = {
    "name": "OffsetCommitResponse",
    "validVersions": "0-1",
    "flexibleVersions": "none",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "3+", "ignorable": True},
        {"name": "Topics", "type": "[]OffsetCommitResponseTopic", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]OffsetCommitResponsePartition", "versions": "0+", "fields": [
                {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            ]},
        ]},
    ],
}

OFFSET_FETCH_REQUEST = {
    "name": "OffsetFetchRequest",
    "validVersions": "0",
    "flexibleVersions": "none",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+"},
        {"name": "Topics", "type": "[]OffsetFetchRequestTopic", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "PartitionIndexes", "type": "[]int32", "versions": "0+"},
        ]},
    ],
}

OFFSET_FETCH_RESPONSE = {
    "name": "OffsetFetchResponse",
    "validVersions": "0",
    "flexibleVersions": "none",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "3+", "ignorable": True},
        {"name": "Topics", "type": "[]OffsetFetchResponseTopic", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Partitions", "type": "[]OffsetFetchResponsePartition", "versions": "0+", "fields": [
                {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
                {"name": "CommittedOffset", "type": "int64", "versions": "0+"},
                {"name": "CommittedLeaderEpoch", "type": "int32", "versions": "5+", "default": "-1", "ignorable": True},
                {"name": "Metadata", "type": "string", "versions": "0+", "nullableVersions": "0+"},
                {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            ]},
        ]},
        {"name": "ErrorCode", "type": "int16", "versions": "2+", "default": "0", "ignorable": True},
    ],
}

# api key -> (request schema, response schema) of the versions below kio's.
OLDER_VERSIONS: Mapping[int, tuple[Mapping[str, Any], Mapping[str, Any]]] = {
    8: (OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE),
    9: (OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE),
}
