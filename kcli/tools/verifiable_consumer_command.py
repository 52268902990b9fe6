"""The work behind ``kcli verifiable-consumer``: Kafka's VerifiableConsumer loop on kcli's consumer,
and its event lines."""

from __future__ import annotations

import typer

from kcli.common import TopicPartition
from kcli.errors import KcliError
from kcli.java_compat import hash_map_order, topic_partition_hash
from kcli.output import Output
from kcli.tools.verifiable_events import event

POLL_SLICE = 3600.0  # Kafka polls with Long.MAX_VALUE; a signal ends the wait


def _partitions(tps) -> list[dict]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


class VerifiableConsumer:
    def __init__(self, out: Output, max_messages: int, use_auto_commit: bool, verbose: bool) -> None:
        self.out = out
        self.max_messages = max_messages
        self.use_auto_commit = use_auto_commit
        self.verbose = verbose
        self.consumed = 0

    def print(self, name: str, **fields) -> None:  # noqa: A003 - Kafka's printJson
        self.out.now(event(name, **fields))

    def finished(self) -> bool:
        return self.max_messages >= 0 and self.consumed >= self.max_messages

    def on_assign(self, tps) -> None:
        self.print("partitions_assigned", partitions=_partitions(tps))

    def on_revoke(self, tps) -> None:
        self.print("partitions_revoked", partitions=_partitions(tps))

    def on_records(self, records) -> dict[TopicPartition, int]:
        """VerifiableConsumer.onRecordsReceived: a summary per partition (in the order the records
        came), each record with --verbose, up to --max-messages; the offsets to commit."""
        by_partition: dict[TopicPartition, list] = {}
        for record in records:
            by_partition.setdefault(TopicPartition(record.topic, record.partition), []).append(record)
        offsets: dict[TopicPartition, int] = {}
        summaries = []
        for tp, partition_records in by_partition.items():
            if self.max_messages >= 0 and self.consumed + len(partition_records) > self.max_messages:
                partition_records = partition_records[: self.max_messages - self.consumed]
            if not partition_records:
                continue
            low, high = partition_records[0].offset, partition_records[-1].offset
            offsets[tp] = high + 1
            summaries.append({"topic": tp.topic, "partition": tp.partition, "count": len(partition_records), "minOffset": low, "maxOffset": high})
            if self.verbose:
                for r in partition_records:
                    self.print("record_data", key=_text(r.key), value=_text(r.value), topic=r.topic, partition=r.partition, offset=r.offset)
            self.consumed += len(partition_records)
            if self.finished():
                break
        self.print("records_consumed", count=len(records), partitions=summaries)
        return offsets

    async def commit(self, consumer, offsets: dict[TopicPartition, int]) -> None:
        """commitSync and its offsets_committed event (Kafka lists the offsets of its HashMap)."""
        error = None
        try:
            await consumer.commit(offsets)
        except KcliError as exc:
            error = str(exc)
        ordered = hash_map_order(offsets, lambda tp: topic_partition_hash(tp.topic, tp.partition))
        committed = [{"topic": tp.topic, "partition": tp.partition, "offset": offsets[tp]} for tp in ordered]
        if error is None:
            self.print("offsets_committed", offsets=committed, success=True)
        else:
            self.print("offsets_committed", offsets=committed, error=error, success=False)


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")  # Kafka's StringDeserializer


def run(topic: str, flag_props: dict[str, str], consumer_config: str | None, max_messages: int, use_auto_commit: bool, verbose: bool) -> None:
    from kcli.client.sync import SyncRunner
    from kcli.config import read_properties

    props = read_properties(consumer_config) if consumer_config is not None else {}
    props.update(flag_props)
    out = Output()
    try:
        with SyncRunner() as runner:
            code = runner.run(_consume(topic, props, max_messages, use_auto_commit, verbose, out))
    finally:
        out.flush()
    if code:
        raise typer.Exit(code)


async def _consume(topic: str, props: dict[str, str], max_messages: int, use_auto_commit: bool, verbose: bool, out: Output) -> int:
    from kcli.client.consumer import Consumer
    from kcli.client.network_client import NetworkClient
    from kcli.tools._admin_common import client_settings
    from kcli.tools.stop_signals import Stopped, StopSignals

    cluster = NetworkClient(**client_settings(props, client_id="verifiable-consumer", warn=lambda _line: None))
    tool = VerifiableConsumer(out, max_messages, use_auto_commit, verbose)
    failure: KcliError | None = None
    try:
        consumer = Consumer.from_properties(cluster, props, warn=lambda message: out.log4j("WARN", message, "org.apache.kafka.clients.consumer.ConsumerConfig"))
        with StopSignals() as stop:
            try:
                # A cluster that cannot be reached is one line and exit 1 (Kafka's consumer would
                # retry without end), before any event.
                await stop.until(cluster.any_connection())
            except Stopped:
                await consumer.close(commit=False)
                return stop.exit_code
            except BaseException:
                await consumer.close(commit=False)
                raise
            try:
                tool.print("startup_complete")
                await stop.until(consumer.subscribe([topic], on_revoke=tool.on_revoke, on_assign=tool.on_assign))
                while not tool.finished():
                    records = await stop.until(consumer.poll(POLL_SLICE))
                    if not records:
                        continue
                    offsets = tool.on_records(records)
                    if not use_auto_commit:
                        await stop.until(tool.commit(consumer, offsets))
            except Stopped:
                pass
            except KcliError as exc:
                # Kafka logs it and still closes the consumer.
                out.log4j("ERROR", f"Error during processing, terminating consumer process: {exc}", "org.apache.kafka.tools.VerifiableConsumer")
                failure = exc
            finally:
                await consumer.close(commit=True)
                tool.print("shutdown_complete")
            code = stop.exit_code
    finally:
        await cluster.close()
    return code or (1 if failure is not None else 0)
