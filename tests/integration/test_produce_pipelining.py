"""A producer's pipelined Produce requests with acks=all: the leader appends each as it arrives,
while the answers of the earlier ones still wait for the in-sync replicas, and answers them in
order. (Kafka's broker handles a connection's next request only after it answered the last; the
appends and the answers keep that order here, and the requests share the followers' round trips.)"""

from __future__ import annotations

import asyncio
import datetime

from kcli.client.connection import BrokerConnection
from kcli.protocol.api_keys import ApiKey
from kcli.storage.records import NewRecord, build_batch
from tests.replicas_in_process import TOPIC, InProcessCluster


def produce_fields(value: bytes, acks: int) -> dict:
    batch = build_batch([NewRecord(None, value, 1_700_000_000_000)])
    return {"transactional_id": None, "acks": acks, "timeout": datetime.timedelta(seconds=30),
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]}


def test_pipelined_acks_all_produces_are_appended_at_once_and_answered_in_order(tmp_path):
    async def main():
        cluster = await InProcessCluster(tmp_path, 2).start()
        connection = None
        try:
            cluster.controller.elect(0, isr=(0, 1))
            leader, follower = cluster.brokers[0], cluster.brokers[1]
            await cluster.until(lambda: follower.partition() is not None)
            follower.replica_manager.replica_fetcher_manager.remove_fetcher_for_partitions([(TOPIC, 0)])
            connection = await BrokerConnection.open(*leader.address, client_id="pipelining")
            answers = [asyncio.ensure_future(connection.send(ApiKey.PRODUCE, 9, produce_fields(b"%d" % i, -1))) for i in range(3)]
            # Every request is appended while none is answered: the follower does not fetch.
            await cluster.until(lambda: leader.log.log_end_offset == 3)
            await asyncio.sleep(0.2)
            assert not any(answer.done() for answer in answers) and leader.log.high_watermark == 0, [(p.error_code, p.base_offset, p.error_message) for a in answers if a.done() for p in a.result().responses[0].partition_responses]
            # An acks=1 request behind them is appended too, and answered only after them.
            last = asyncio.ensure_future(connection.send(ApiKey.PRODUCE, 9, produce_fields(b"acks-1", 1)))
            await cluster.until(lambda: leader.log.log_end_offset == 4)
            await asyncio.sleep(0.1)
            assert not last.done()
            cluster.controller.elect(0, isr=(0, 1))  # a new leader epoch: the follower fetches again
            done = await asyncio.wait_for(asyncio.gather(*answers, last), 20)
            offsets = [response.responses[0].partition_responses[0].base_offset for response in done]
            errors = [response.responses[0].partition_responses[0].error_code for response in done]
            assert offsets == [0, 1, 2, 3] and errors == [0, 0, 0, 0]
        finally:
            if connection is not None:
                await connection.close()
            await cluster.stop()

    asyncio.run(main())
