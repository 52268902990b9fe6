"""Consumers reading a follower's replica (KIP-392, Kafka's fetchOnlyFromLeader), on in-process
replicas: from Fetch v11 a consumer (and kafka-replica-verification.sh's debugging consumer) may
read a follower up to the follower's own high watermark; before v11, and for a follower, a
partition this broker does not lead answers NOT_LEADER_OR_FOLLOWER (Kafka's
ReplicaManager.getPartitionOrException), never UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

from kcli.broker.replica.delayed_fetch import DEBUGGING_CONSUMER_ID, FetchParams
from kcli.broker.replica.fetch_sessions import CachedPartition
from kcli.errors import ErrorCode
from kcli.storage.records import iter_batches
from tests.integration.test_replication_kafka_bugs import KEY, produce, replicated, scenario, stop_fetching


def read(broker, *, only_leader: bool, replica_id: int = -1):
    answered: list = []
    params = FetchParams(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, fetch_only_from_leader=only_leader)
    broker.replica_manager.fetch_messages(params, {KEY: CachedPartition(None, 0, 1 << 20)}, answered.append)
    [[(_, _, result)]] = answered
    data = b"".join(piece.read() if hasattr(piece, "read") else bytes(piece) for piece in (result.records or []))
    return result, [r.value for batch in iter_batches(data) for r in batch.records()]


@scenario(count=2)
async def test_a_follower_serves_consumers_up_to_its_own_high_watermark_from_fetch_v11(cluster):
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    cluster.controller.elect(0, isr=(0, 1))
    await replicated(cluster, leader, [b"m0"])
    await replicated(cluster, leader, [b"m1"])
    await cluster.until(lambda: follower.log.high_watermark == 2)
    stop_fetching(follower)
    produce(leader, [b"m2"])  # the leader alone has it: not committed, not on the follower
    for replica_id in (-1, DEBUGGING_CONSUMER_ID):
        result, values = read(follower, only_leader=False, replica_id=replica_id)
        assert result.error_code == ErrorCode.NONE and result.high_watermark == 2
        assert values == [b"m0", b"m1"]
    result, values = read(follower, only_leader=True)
    assert result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and values == []
    result, values = read(leader, only_leader=True)
    assert result.error_code == ErrorCode.NONE and values == [b"m0", b"m1"]


@scenario(count=2)
async def test_a_followed_topic_counts_among_the_hosted_ones(cluster):
    """A broker config change gives every hosted log its new defaults (Broker.reload_dynamic_config
    walks ``hosted_topics``): a topic this broker only follows is one of them."""
    cluster.controller.elect(0, isr=(0, 1))
    follower = cluster.brokers[1].replica_manager
    assert follower.leader_partitions() == [] and follower.hosted_topics() == {KEY[0]}
