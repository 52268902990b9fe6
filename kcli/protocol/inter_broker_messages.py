"""The controller's requests to brokers, as Kafka 3.9 defines them.

A ZooKeeper-era controller (Kafka 2.8, and 3.9 in ZooKeeper mode) drives brokers with four
requests that Kafka 4.0 removed, so kio (which follows 4.x) has no entities for them::

    4  LeaderAndIsr        0-7 (4+ flexible)   become leader or follower of these partitions
    5  StopReplica         0-4 (2+ flexible)   stop (and maybe delete) these replicas
    6  UpdateMetadata      0-8 (6+ flexible)   the cluster's brokers and partition states
    7  ControlledShutdown  0-3 (3+ flexible)   a broker asks to move its leadership away first

The schemas below restate Kafka 3.9's JSON definitions
(``clients/src/main/resources/common/message/<Name>Request.json`` and ``<Name>Response.json``)
for ``kcli.protocol.schema``; ``kcli.protocol.stated_apis`` makes them requests and responses
like kio's. ControlledShutdown v0 is the one request sent with request header v0 (no client id):
``REQUEST_HEADER_V0``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["INTER_BROKER_APIS", "REQUEST_HEADER_V0"]

# -- LeaderAndIsr (4) ---------------------------------------------------------------------------

LEADER_AND_ISR_REQUEST = {
    "name": "LeaderAndIsrRequest",
    "validVersions": "0-7",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ControllerId", "type": "int32", "versions": "0+"},
        {"name": "isKRaftController", "type": "bool", "versions": "7+", "default": "false"},
        {"name": "ControllerEpoch", "type": "int32", "versions": "0+"},
        {"name": "BrokerEpoch", "type": "int64", "versions": "2+", "ignorable": True, "default": "-1"},
        {"name": "Type", "type": "int8", "versions": "5+"},
        {"name": "UngroupedPartitionStates", "type": "[]LeaderAndIsrPartitionState", "versions": "0-1"},
        {"name": "TopicStates", "type": "[]LeaderAndIsrTopicState", "versions": "2+", "fields": [
            {"name": "TopicName", "type": "string", "versions": "2+"},
            {"name": "TopicId", "type": "uuid", "versions": "5+", "ignorable": True},
            {"name": "PartitionStates", "type": "[]LeaderAndIsrPartitionState", "versions": "2+"},
        ]},
        {"name": "LiveLeaders", "type": "[]LeaderAndIsrLiveLeader", "versions": "0+", "fields": [
            {"name": "BrokerId", "type": "int32", "versions": "0+"},
            {"name": "HostName", "type": "string", "versions": "0+"},
            {"name": "Port", "type": "int32", "versions": "0+"},
        ]},
    ],
    "commonStructs": [
        {"name": "LeaderAndIsrPartitionState", "versions": "0+", "fields": [
            {"name": "TopicName", "type": "string", "versions": "0-1", "ignorable": True},
            {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
            {"name": "ControllerEpoch", "type": "int32", "versions": "0+"},
            {"name": "Leader", "type": "int32", "versions": "0+"},
            {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
            {"name": "Isr", "type": "[]int32", "versions": "0+"},
            {"name": "PartitionEpoch", "type": "int32", "versions": "0+"},
            {"name": "Replicas", "type": "[]int32", "versions": "0+"},
            {"name": "AddingReplicas", "type": "[]int32", "versions": "3+", "ignorable": True},
            {"name": "RemovingReplicas", "type": "[]int32", "versions": "3+", "ignorable": True},
            {"name": "IsNew", "type": "bool", "versions": "1+", "default": "false", "ignorable": True},
            {"name": "LeaderRecoveryState", "type": "int8", "versions": "6+", "default": "0"},
        ]},
    ],
}

LEADER_AND_ISR_RESPONSE = {
    "name": "LeaderAndIsrResponse",
    "validVersions": "0-7",
    "flexibleVersions": "4+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "PartitionErrors", "type": "[]LeaderAndIsrPartitionError", "versions": "0-4"},
        {"name": "Topics", "type": "[]LeaderAndIsrTopicError", "versions": "5+", "fields": [
            {"name": "TopicId", "type": "uuid", "versions": "5+"},
            {"name": "PartitionErrors", "type": "[]LeaderAndIsrPartitionError", "versions": "5+"},
        ]},
    ],
    "commonStructs": [
        {"name": "LeaderAndIsrPartitionError", "versions": "0+", "fields": [
            {"name": "TopicName", "type": "string", "versions": "0-4", "ignorable": True},
            {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        ]},
    ],
}

# -- StopReplica (5) ----------------------------------------------------------------------------

STOP_REPLICA_REQUEST = {
    "name": "StopReplicaRequest",
    "validVersions": "0-4",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ControllerId", "type": "int32", "versions": "0+"},
        {"name": "isKRaftController", "type": "bool", "versions": "4+", "default": "false"},
        {"name": "ControllerEpoch", "type": "int32", "versions": "0+"},
        {"name": "BrokerEpoch", "type": "int64", "versions": "1+", "default": "-1", "ignorable": True},
        {"name": "DeletePartitions", "type": "bool", "versions": "0-2"},
        {"name": "UngroupedPartitions", "type": "[]StopReplicaPartitionV0", "versions": "0", "fields": [
            {"name": "TopicName", "type": "string", "versions": "0"},
            {"name": "PartitionIndex", "type": "int32", "versions": "0"},
        ]},
        {"name": "Topics", "type": "[]StopReplicaTopicV1", "versions": "1-2", "fields": [
            {"name": "Name", "type": "string", "versions": "1-2"},
            {"name": "PartitionIndexes", "type": "[]int32", "versions": "1-2"},
        ]},
        {"name": "TopicStates", "type": "[]StopReplicaTopicState", "versions": "3+", "fields": [
            {"name": "TopicName", "type": "string", "versions": "3+"},
            {"name": "PartitionStates", "type": "[]StopReplicaPartitionState", "versions": "3+", "fields": [
                {"name": "PartitionIndex", "type": "int32", "versions": "3+"},
                {"name": "LeaderEpoch", "type": "int32", "versions": "3+", "default": "-1"},
                {"name": "DeletePartition", "type": "bool", "versions": "3+"},
            ]},
        ]},
    ],
}

STOP_REPLICA_RESPONSE = {
    "name": "StopReplicaResponse",
    "validVersions": "0-4",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "PartitionErrors", "type": "[]StopReplicaPartitionError", "versions": "0+", "fields": [
            {"name": "TopicName", "type": "string", "versions": "0+"},
            {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        ]},
    ],
}

# -- UpdateMetadata (6) -------------------------------------------------------------------------

UPDATE_METADATA_REQUEST = {
    "name": "UpdateMetadataRequest",
    "validVersions": "0-8",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "ControllerId", "type": "int32", "versions": "0+"},
        {"name": "isKRaftController", "type": "bool", "versions": "8+", "default": "false"},
        {"name": "Type", "type": "int8", "versions": "8+", "default": 0, "tag": 0, "taggedVersions": "8+"},
        {"name": "ControllerEpoch", "type": "int32", "versions": "0+"},
        {"name": "BrokerEpoch", "type": "int64", "versions": "5+", "ignorable": True, "default": "-1"},
        {"name": "UngroupedPartitionStates", "type": "[]UpdateMetadataPartitionState", "versions": "0-4"},
        {"name": "TopicStates", "type": "[]UpdateMetadataTopicState", "versions": "5+", "fields": [
            {"name": "TopicName", "type": "string", "versions": "5+"},
            {"name": "TopicId", "type": "uuid", "versions": "7+", "ignorable": True},
            {"name": "PartitionStates", "type": "[]UpdateMetadataPartitionState", "versions": "5+"},
        ]},
        {"name": "LiveBrokers", "type": "[]UpdateMetadataBroker", "versions": "0+", "fields": [
            {"name": "Id", "type": "int32", "versions": "0+"},
            # v0 carries one host and port per broker; v1+ a list of endpoints.
            {"name": "V0Host", "type": "string", "versions": "0", "ignorable": True},
            {"name": "V0Port", "type": "int32", "versions": "0", "ignorable": True},
            {"name": "Endpoints", "type": "[]UpdateMetadataEndpoint", "versions": "1+", "ignorable": True, "fields": [
                {"name": "Port", "type": "int32", "versions": "1+"},
                {"name": "Host", "type": "string", "versions": "1+"},
                {"name": "Listener", "type": "string", "versions": "3+", "ignorable": True},
                {"name": "SecurityProtocol", "type": "int16", "versions": "1+"},
            ]},
            {"name": "Rack", "type": "string", "versions": "2+", "nullableVersions": "0+", "ignorable": True},
        ]},
    ],
    "commonStructs": [
        {"name": "UpdateMetadataPartitionState", "versions": "0+", "fields": [
            {"name": "TopicName", "type": "string", "versions": "0-4", "ignorable": True},
            {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
            {"name": "ControllerEpoch", "type": "int32", "versions": "0+"},
            {"name": "Leader", "type": "int32", "versions": "0+"},
            {"name": "LeaderEpoch", "type": "int32", "versions": "0+"},
            {"name": "Isr", "type": "[]int32", "versions": "0+"},
            {"name": "ZkVersion", "type": "int32", "versions": "0+"},
            {"name": "Replicas", "type": "[]int32", "versions": "0+"},
            {"name": "OfflineReplicas", "type": "[]int32", "versions": "4+", "ignorable": True},
        ]},
    ],
}

UPDATE_METADATA_RESPONSE = {
    "name": "UpdateMetadataResponse",
    "validVersions": "0-8",
    "flexibleVersions": "6+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
    ],
}

# -- ControlledShutdown (7) ---------------------------------------------------------------------

CONTROLLED_SHUTDOWN_REQUEST = {
    "name": "ControlledShutdownRequest",
    "validVersions": "0-3",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "BrokerId", "type": "int32", "versions": "0+"},
        {"name": "BrokerEpoch", "type": "int64", "versions": "2+", "default": "-1", "ignorable": True},
    ],
}

CONTROLLED_SHUTDOWN_RESPONSE = {
    "name": "ControlledShutdownResponse",
    "validVersions": "0-3",
    "flexibleVersions": "3+",
    "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "RemainingPartitions", "type": "[]RemainingPartition", "versions": "0+", "fields": [
            {"name": "TopicName", "type": "string", "versions": "0+"},
            {"name": "PartitionIndex", "type": "int32", "versions": "0+"},
        ]},
    ],
}

# api key -> (request schema, response schema)
INTER_BROKER_APIS: Mapping[int, tuple[Mapping[str, Any], Mapping[str, Any]]] = {
    4: (LEADER_AND_ISR_REQUEST, LEADER_AND_ISR_RESPONSE),
    5: (STOP_REPLICA_REQUEST, STOP_REPLICA_RESPONSE),
    6: (UPDATE_METADATA_REQUEST, UPDATE_METADATA_RESPONSE),
    7: (CONTROLLED_SHUTDOWN_REQUEST, CONTROLLED_SHUTDOWN_RESPONSE),
}

# (api key, version) sent with request header v0 (Kafka's ApiMessageType.requestHeaderVersion).
REQUEST_HEADER_V0 = frozenset({(7, 0)})
