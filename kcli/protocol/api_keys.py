"""Kafka's API keys by name (Kafka 3.9's ``ApiKeys``): ``ApiKey.PRODUCE`` is 0, ``ApiKey.FETCH`` 1.

The names are Kafka's message names in key order; ``ApiKey`` spells each as Kafka's Java enum
does (``ListOffsets`` -> ``LIST_OFFSETS``), and ``kafka_name`` gives the message name back, as
kafka-broker-api-versions.sh prints it. An ``ApiKey`` is an int, so it goes on the wire and into
any table keyed by number as it is.
"""

from __future__ import annotations

import enum
import re

# Kafka 3.9's ApiKeys, by key.
API_NAMES = (
    "Produce", "Fetch", "ListOffsets", "Metadata", "LeaderAndIsr", "StopReplica", "UpdateMetadata",
    "ControlledShutdown", "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup", "Heartbeat",
    "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions",
    "CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch",
    "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit",
    "DescribeAcls", "CreateAcls", "DeleteAcls", "DescribeConfigs", "AlterConfigs",
    "AlterReplicaLogDirs", "DescribeLogDirs", "SaslAuthenticate", "CreatePartitions",
    "CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken", "DescribeDelegationToken",
    "DeleteGroups", "ElectLeaders", "IncrementalAlterConfigs", "AlterPartitionReassignments",
    "ListPartitionReassignments", "OffsetDelete", "DescribeClientQuotas", "AlterClientQuotas",
    "DescribeUserScramCredentials", "AlterUserScramCredentials", "Vote", "BeginQuorumEpoch",
    "EndQuorumEpoch", "DescribeQuorum", "AlterPartition", "UpdateFeatures", "Envelope", "FetchSnapshot",
    "DescribeCluster", "DescribeProducers", "BrokerRegistration", "BrokerHeartbeat", "UnregisterBroker",
    "DescribeTransactions", "ListTransactions", "AllocateProducerIds", "ConsumerGroupHeartbeat",
    "ConsumerGroupDescribe", "ControllerRegistration", "GetTelemetrySubscriptions", "PushTelemetry",
    "AssignReplicasToDirs", "ListClientMetricsResources", "DescribeTopicPartitions", "ShareGroupHeartbeat",
    "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge", "AddRaftVoter", "RemoveRaftVoter",
    "UpdateRaftVoter", "InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
    "DeleteShareGroupState", "ReadShareGroupStateSummary",
)


def _enum_name(message_name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", message_name).upper()


ApiKey = enum.IntEnum("ApiKey", {_enum_name(name): key for key, name in enumerate(API_NAMES)}, module=__name__)


def kafka_name(api_key: int) -> str | None:
    """The message name of ``api_key`` (``ListOffsets``), None for a key Kafka 3.9 does not know."""
    return API_NAMES[api_key] if 0 <= api_key < len(API_NAMES) else None
