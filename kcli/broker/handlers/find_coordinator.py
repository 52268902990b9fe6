"""FindCoordinator: v0-6

Behaviour: a group key is answered with the leader of its ``__consumer_offsets`` partition
(abs(Java hashCode of the group id) mod the topic's partition count). The first lookup creates the
topic, as Kafka's broker does: ``offsets.topic.num.partitions`` partitions,
``offsets.topic.replication.factor`` replicas (with fewer live brokers than that the creation
fails, as in Kafka, and the answer stays COORDINATOR_NOT_AVAILABLE: a single broker needs
``offsets.topic.replication.factor=1``; so does a creation the disk refuses, logged once), ``cleanup.policy=compact``, ``segment.bytes`` =
``offsets.topic.segment.bytes`` and ``compression.type=producer`` (the coordinator's writes use
``offsets.topic.compression.codec``). A partition without a live leader, or whose leader has no
endpoint on the listener the request came in on, answers COORDINATOR_NOT_AVAILABLE; the
coordinator is given at its endpoint on that listener. A transaction key is answered the same way with the leader of its
``__transaction_state`` partition, the topic created on the first lookup with the
``transaction.state.log.*`` settings (``transactions/hosting``). Share keys (v6) answer
COORDINATOR_NOT_AVAILABLE, as a Kafka broker without share groups does, and INVALID_REQUEST
before v6; an unknown key type answers INVALID_REQUEST.

With an authorizer a group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED), a transactional id
DESCRIBE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as in Kafka 2.8.

Version notes: v1 adds the key type and error messages; v3 is flexible; v4 looks up a batch of
keys at once; v6 allows the share key type.
"""

from __future__ import annotations

import logging

from kcli.metadata.topic_names import GROUP_METADATA_TOPIC_NAME
from kcli.broker.coordinator_hosting import internal_topic
from kcli.broker.transactions.hosting import transaction_state_topic
from kcli.errors import ErrorCode, KafkaError, KcliError
from kcli.protocol.api_keys import ApiKey
from kcli.security.acl import AclOperation, ResourceType

API_KEY = ApiKey.FIND_COORDINATOR
VERSIONS = (0, 6)

GROUP, TRANSACTION, SHARE = 0, 1, 2

log = logging.getLogger(__name__)



async def handle(ctx, request):
    key_type = getattr(request, "key_type", GROUP)
    version = ctx.api_version
    if version >= 4:
        return {
            "coordinators": [dict(key=key, **await _coordinator(ctx, key_type, key, version, ctx.listener_name)) for key in request.coordinator_keys]
        }
    return await _coordinator(ctx, key_type, request.key, version, ctx.listener_name)


async def _coordinator(ctx, key_type: int, key: str, version: int, listener_name: str) -> dict:
    broker = ctx.broker
    if key_type == GROUP and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key):
        code, message = ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED.message
    elif key_type == TRANSACTION and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        code, message = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.message
    elif key_type == GROUP:
        try:
            return await _group_coordinator(broker, key, listener_name)
        except KcliError as e:
            code, message = e.error_code, str(e)
    elif key_type == TRANSACTION:
        try:
            return await _transaction_coordinator(broker, key, listener_name)
        except KcliError as e:
            code, message = e.error_code, str(e)
    elif key_type == SHARE and version >= 6:
        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, "This broker has no share coordinator."
    else:
        code, message = ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}"
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


async def _group_coordinator(broker, group_id: str, listener_name: str) -> dict:
    topic = broker.metadata.topic(GROUP_METADATA_TOPIC_NAME) or await _create_offsets_topic(broker)
    partition = broker.group_coordinator.partition_for(group_id)
    return _leader_of(broker, topic, partition, listener_name)


async def _transaction_coordinator(broker, transactional_id: str, listener_name: str) -> dict:
    topic = await transaction_state_topic(broker)
    partition = broker.transaction_coordinator.partition_for(transactional_id)
    return _leader_of(broker, topic, partition, listener_name)


def _leader_of(broker, topic, partition: int, listener_name: str) -> dict:
    state = topic.partitions.get(partition)
    leader = state.leader if state is not None else -1
    node = next((b for b in broker.live_brokers(listener_name) if b.id == leader), None)
    # Named leader here but not hosting it yet (the controller's LeaderAndIsr is still being
    # applied, or the log is offline): not this broker's to coordinate yet, as on a Kafka broker,
    # whose cache learns the leader only after it took the partition up.
    if node is None or (leader == broker.id and broker.replica_manager.get(topic.name, partition) is None):
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE.message)
    return {"node_id": node.id, "host": node.host, "port": node.port}


async def _create_offsets_topic(broker):
    config = broker.config
    return await internal_topic(
        broker,
        GROUP_METADATA_TOPIC_NAME,
        "offsets topic",
        "offsets.topic.num.partitions",
        "offsets.topic.replication.factor",
        {
            "cleanup.policy": "compact",
            "segment.bytes": str(config.get("offsets.topic.segment.bytes")),
            "compression.type": "producer",
        },
    )
