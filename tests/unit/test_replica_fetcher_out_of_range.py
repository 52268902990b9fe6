"""A follower told OFFSET_OUT_OF_RANGE (Kafka's AbstractFetcherThread.fetchOffsetAndTruncate):
the leader's log ends below the follower's (an uncleanly elected leader, seen by a log without
leader epochs) -> truncate to the leader's end, with the loss report; the follower's log ends
below the leader's log start -> start over there."""

from __future__ import annotations

import asyncio
import types

from kcli.broker.replica.partition import Partition
from kcli.broker.replica.replica_fetcher import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, FetcherConfig, PartitionFetchState, ReplicaFetcher
from kcli.metadata.topics import PartitionState
from kcli.storage.log_config import LogConfig
from kcli.storage.log_manager import LogManager
from kcli.storage.producer_state import AppendOrigin
from kcli.storage.records import NewRecord, build_batch

KEY = ("orders", 0)


def follower_with(tmp_path, count: int):
    manager = LogManager([tmp_path], LogConfig())
    log = manager.get_or_create_log(*KEY)
    partition = Partition(*KEY, None, log, local_broker_id=0)
    for i in range(count):
        log.append_as_follower(build_batch([NewRecord(None, b"v%d" % i, 1_000)], base_offset=i))
    partition.make_follower(PartitionState(replicas=(0, 1), isr=(1,), leader=1, leader_epoch=4, partition_epoch=1, controller_epoch=1))
    replica_manager = types.SimpleNamespace(log_manager=manager, follower_partition=lambda topic, index: partition)
    fetcher = ReplicaFetcher(0, 0, 1, replica_manager, FetcherConfig(), lambda broker: ("127.0.0.1", 1))
    state = PartitionFetchState(fetch_offset=count, current_leader_epoch=4)
    fetcher._states[KEY] = state
    return manager, partition, fetcher, state


def leader_answers(fetcher, offsets: dict[int, int]) -> list[int]:
    asked: list[int] = []

    async def call(broker, api_key, request, versions):
        timestamp = request["topics"][0]["partitions"][0]["timestamp"]
        asked.append(timestamp)
        data = types.SimpleNamespace(error_code=0, offset=offsets[timestamp])
        return types.SimpleNamespace(topics=[types.SimpleNamespace(partitions=[data])])

    fetcher._connections.call = call
    return asked


def test_a_leader_whose_log_ends_below_the_followers_has_it_truncate_there_and_report_the_loss(tmp_path, caplog):
    manager, partition, fetcher, state = follower_with(tmp_path, 8)
    asked = leader_answers(fetcher, {LATEST_TIMESTAMP: 5})
    asyncio.run(fetcher._handle_out_of_range(KEY, state))
    assert asked == [LATEST_TIMESTAMP]
    assert (partition.log.log_end_offset, state.fetch_offset) == (5, 5)
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning.startswith("Truncated orders-0 to offset 5: offsets 5 to 7 (3 records in 3 batches of leader epochs -1) "
                              "are not in the log of leader 1 at leader epoch 4 and are lost")
    assert (partition.log.dir / "truncated-4-5" / "00000000000000000005.log").exists()
    manager.shutdown()


def test_a_follower_behind_the_leaders_log_start_starts_over_there(tmp_path):
    manager, partition, fetcher, state = follower_with(tmp_path, 3)
    asked = leader_answers(fetcher, {LATEST_TIMESTAMP: 20, EARLIEST_TIMESTAMP: 12})
    asyncio.run(fetcher._handle_out_of_range(KEY, state))
    assert asked == [LATEST_TIMESTAMP, EARLIEST_TIMESTAMP]
    assert (partition.log.log_start_offset, partition.log.log_end_offset, state.fetch_offset) == (12, 12, 12)
    manager.shutdown()


def test_the_leader_answers_a_replicas_latest_with_its_log_end_offset(tmp_path):
    """Kafka's KafkaApis: isolation applies to a client's ListOffsets only; a replica's latest
    offset is the log end offset, above the high watermark."""
    from kcli.broker.handlers import list_offsets

    manager = LogManager([tmp_path], LogConfig())
    log = manager.get_or_create_log(*KEY)
    leader = Partition(*KEY, None, log, local_broker_id=1)
    leader.make_leader(PartitionState(replicas=(1, 0), isr=(1, 0), leader=1, leader_epoch=4, partition_epoch=1, controller_epoch=1))
    leader.append_records_to_leader(build_batch([NewRecord(None, b"v", 1_000)] * 3), AppendOrigin.CLIENT, 1)
    assert (leader.high_watermark, log.log_end_offset) == (0, 3)
    ctx = types.SimpleNamespace(api_version=4, authorizing=False, broker=types.SimpleNamespace(replica_manager=types.SimpleNamespace(get_partition_or_error=lambda t, p: leader)))

    def latest(replica_id: int) -> int:
        request = types.SimpleNamespace(replica_id=replica_id, isolation_level=0, topics=[
            types.SimpleNamespace(name="orders", partitions=[types.SimpleNamespace(partition_index=0, current_leader_epoch=4, timestamp=-1)])
        ])
        return list_offsets.handle(ctx, request)["topics"][0]["partitions"][0]["offset"]

    assert (latest(-1), latest(0)) == (0, 3)
    manager.shutdown()
