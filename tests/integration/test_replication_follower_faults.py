"""A follower's own faults, on in-process replicas (``tests/replicas_in_process.py``): its disk
fills up, or it restarts with a corrupt tail. The partition keeps serving through the leader; the
follower drops out of the ISR (or is recovered), then catches up and its log becomes the
leader's, byte for byte."""

from __future__ import annotations

import asyncio
import os

from kcli.errors import ErrorCode
from tests.integration.test_disk_full import tmpfs
from tests.integration.test_replication_kafka_bugs import KEY, produce, replicated, scenario
from tests.replicas_in_process import LAG_MS, InProcessCluster

BIG = b"x" * 100_000


def log_files(broker) -> dict[str, bytes]:
    directory = broker.log.dir
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.log"))}


def test_a_follower_on_a_full_disk_drops_out_of_the_isr_and_catches_up_once_it_has_room(tmp_path):
    with tmpfs(tmp_path / "broker-1", size="3m") as follower_dir:

        async def main():
            cluster = await InProcessCluster(tmp_path, count=2).start()
            try:
                leader, follower = cluster.brokers[0], cluster.brokers[1]
                cluster.controller.elect(0, isr=(0, 1))
                await replicated(cluster, leader, [b"first"])
                # Leave the follower's disk some 500 KB: ten 100 KB records do not fit.
                free = os.statvfs(follower_dir)
                filler = follower_dir / "filler"
                filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 500_000))
                for _ in range(10):
                    produce(leader, [BIG])
                await cluster.until(lambda: follower.log.log_end_offset > 1)
                await asyncio.sleep(0.5)  # many refused appends, retried after each backoff
                stuck_at = follower.log.log_end_offset
                assert 1 < stuck_at < 11
                # The leader's lag rule takes the follower out; acks=all produces are answered
                # by the leader alone (min.insync.replicas 1).
                cluster.clock.now += LAG_MS + 1
                leader.replica_manager.maybe_shrink_isr()
                await cluster.until(lambda: cluster.controller.isr == (0,))
                await replicated(cluster, leader, [b"while full"])
                assert follower.log.log_end_offset == stuck_at
                # Room again: the follower resumes from where the disk refused, and rejoins.
                filler.unlink()
                await cluster.until(lambda: follower.log.log_end_offset == leader.log.log_end_offset == 12, timeout=30)
                await cluster.until(lambda: cluster.controller.isr == (0, 1))
                assert follower.values() == leader.values()
                assert log_files(follower) == log_files(leader)
            finally:
                await cluster.stop()

        asyncio.run(main())


@scenario(count=2)
async def test_a_follower_with_a_corrupt_tail_is_recovered_then_catches_up(cluster):
    leader, follower = cluster.brokers[0], cluster.brokers[1]
    cluster.controller.elect(0, isr=(0, 1))
    for n in range(5):
        await replicated(cluster, leader, [b"m%d" % n])
    await cluster.until(lambda: follower.log.log_end_offset == 5)
    await follower.crash()
    # The last batch's bytes torn: a CRC that no longer matches, and half a batch after it.
    [segment] = sorted((cluster.brokers[1].log_dir / f"{KEY[0]}-{KEY[1]}").glob("*.log"))
    data = bytearray(segment.read_bytes())
    data[-3] ^= 0xFF
    segment.write_bytes(bytes(data) + data[:30])
    await follower.start()
    cluster.controller.publish(to=(1,))
    # Opening the log recovered it: the torn batch and the bytes after it are gone.
    assert follower.log.log_end_offset == 4
    assert follower.values() == [b"m0", b"m1", b"m2", b"m3"]
    answers = produce(leader, [b"m5"], acks=-1)  # the follower is in the ISR: it must copy m4, m5
    await cluster.until(lambda: answers)
    assert answers[0].error_code == ErrorCode.NONE
    assert follower.values() == leader.values() == [b"m%d" % n for n in range(6)]
    assert log_files(follower) == log_files(leader)
