"""One consumer-group member, run as its own process by the group interop tests.

    python group_member.py CLIENT BOOTSTRAP GROUP TOPIC ASSIGNOR SESSION_TIMEOUT_MS [INSTANCE_ID]

CLIENT is ``confluent``, ``kafka-python`` or ``aiokafka``. The member subscribes to TOPIC and
polls; each time its assignment changes it prints one JSON line ``{"assignment": [partitions]}``.
A line ``close`` on stdin makes it leave the group cleanly (``{"closed": true}``, exit 0); a
SIGKILL is a crash. Every poll is short, so a close is handled within a fraction of a second.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading

POLL_SECONDS = 0.1


def report(assignment, last: list) -> None:
    partitions = sorted(tp.partition for tp in assignment)
    if partitions != last:
        last[:] = partitions
        print(json.dumps({"assignment": partitions}), flush=True)


def close_requested() -> threading.Event:
    event = threading.Event()

    def watch() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                break
        event.set()

    threading.Thread(target=watch, daemon=True).start()
    return event


def run_confluent(bootstrap, group, topic, assignor, session_ms, instance, stop) -> None:
    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": assignor,
        "session.timeout.ms": session_ms, "heartbeat.interval.ms": max(session_ms // 5, 100),
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    }
    if instance:
        config["group.instance.id"] = instance
    consumer = Consumer(config)
    consumer.subscribe([topic])
    last: list = []
    while not stop.is_set():
        consumer.poll(POLL_SECONDS)
        report(consumer.assignment(), last)
    consumer.close()


def run_kafka_python(bootstrap, group, topic, assignor, session_ms, instance, stop) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, partition_assignment_strategy=[assignors[assignor]],
        session_timeout_ms=session_ms, heartbeat_interval_ms=max(session_ms // 5, 100), auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    last: list = []
    while not stop.is_set():
        consumer.poll(timeout_ms=int(POLL_SECONDS * 1000))
        report(consumer.assignment(), last)
    consumer.close()


def run_aiokafka(bootstrap, group, topic, assignor, session_ms, instance, stop) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}

    async def main() -> None:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, partition_assignment_strategy=(assignors[assignor],),
            session_timeout_ms=session_ms, heartbeat_interval_ms=max(session_ms // 5, 100), auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        last: list = []
        try:
            while not stop.is_set():
                await consumer.getmany(timeout_ms=int(POLL_SECONDS * 1000))
                report(consumer.assignment(), last)
        finally:
            await consumer.stop()

    asyncio.run(main())


RUNNERS = {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}


def main(argv: list[str]) -> int:
    client, bootstrap, group, topic, assignor, session_ms = argv[:6]
    instance = argv[6] if len(argv) > 6 else None
    stop = close_requested()
    RUNNERS[client](bootstrap, group, topic, assignor, int(session_ms), instance, stop)
    print(json.dumps({"closed": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
