"""LeaderAndIsr's and UpdateMetadata's partition states read into the one PartitionState, from
the entities the broker decodes (Kafka 3.9's schemas, every version)."""

from __future__ import annotations

from kcli.broker.handlers._control_requests import partition_state
from kcli.metadata.topics import PartitionState
from kcli.protocol import mapping_encoder, messages
from kcli.protocol.api_keys import ApiKey

COMMON = {"topic_name": "orders", "partition_index": 0, "controller_epoch": 3, "leader": 2, "leader_epoch": 7, "isr": [2, 1], "replicas": [1, 2, 3]}
LEADER_AND_ISR = {**COMMON, "partition_epoch": 9, "adding_replicas": [3], "removing_replicas": [1], "is_new": False, "leader_recovery_state": 0}
UPDATE_METADATA = {**COMMON, "zk_version": 9, "offline_replicas": []}


def _first_state(api_key: int, version: int):
    if api_key == ApiKey.LEADER_AND_ISR:
        state, fields = LEADER_AND_ISR, {"controller_id": 0, "controller_epoch": 3, "broker_epoch": 5, "type": 0, "live_leaders": []}
    else:
        state, fields = UPDATE_METADATA, {"controller_id": 0, "controller_epoch": 3, "broker_epoch": 5, "live_brokers": []}
    if version < 2 + (api_key == ApiKey.UPDATE_METADATA) * 3:  # ungrouped before LeaderAndIsr v2, UpdateMetadata v5
        fields["ungrouped_partition_states"] = [state]
    else:
        fields["topic_states"] = [{"topic_name": "orders", "partition_states": [{k: v for k, v in state.items() if k != "topic_name"}]}]
    body = mapping_encoder.encode_request(api_key, version, fields)  # the request body as a controller sends it
    request = messages.decode_request(api_key, version, body, 0)
    states = getattr(request, "ungrouped_partition_states", None) or request.topic_states[0].partition_states
    return states[0]


def test_every_version_of_both_requests_reads_into_the_same_state():
    for api_key, versions in ((ApiKey.LEADER_AND_ISR, range(0, 8)), (ApiKey.UPDATE_METADATA, range(0, 9))):
        for version in versions:
            moving = api_key == ApiKey.LEADER_AND_ISR and version >= 3
            assert partition_state(_first_state(api_key, version)) == PartitionState(
                replicas=(1, 2, 3), isr=(2, 1), leader=2, leader_epoch=7, partition_epoch=9, controller_epoch=3,
                adding_replicas=(3,) if moving else (), removing_replicas=(1,) if moving else (),
            ), (api_key, version)
