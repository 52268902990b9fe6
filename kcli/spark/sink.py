"""The ``kcli`` sink: DataFrames written to Kafka topics through kcli's producer.

Spark's Kafka sink contract: a ``value`` column (string or binary, required), and optionally
``key`` (string or binary), ``headers`` (array<struct<key string, value binary>>), ``topic``
(string; required unless the ``topic`` option is set, and the option wins) and ``partition``
(int; null means the producer's partitioner). Strings are written as their UTF-8 bytes. kcli adds
``includeTimestamp=true``: a ``timestamp`` column then sets each record's CreateTime (Spark's own
sink lets the producer stamp the send time, which is the default here too).

Both writers take Arrow batches (``DataSourceArrowWriter``/``DataSourceStreamArrowWriter``): each
Spark task opens one producer (``kafka.*`` options are its configs), sends its rows and flushes
before ``write`` returns, so a task only succeeds once the broker acknowledged every record. The
sink is at-least-once, as Spark's is: a retried task sends its rows again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from kcli.errors import KcliError
from kcli.spark.options import OptionError, SinkOptions

# Futures kept before their outcomes are checked: bounds memory on large tasks.
_CHECK_EVERY = 50_000


@dataclass
class SinkCommit(WriterCommitMessage):
    records: int


def check_sink_schema(schema, options: SinkOptions) -> None:
    """Spark's KafkaWriter.validateQuery: required columns and their types."""
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType, TimestampType

    fields = {f.name.lower(): f.dataType for f in schema.fields}
    text_or_bytes = (StringType, BinaryType)
    if "value" not in fields:
        raise OptionError("Required attribute 'value' not found")
    if not isinstance(fields["value"], text_or_bytes):
        raise OptionError(f"value attribute type must be a string or binary, got {fields['value'].simpleString()}")
    if "key" in fields and not isinstance(fields["key"], text_or_bytes):
        raise OptionError(f"key attribute type must be a string or binary, got {fields['key'].simpleString()}")
    if options.topic is None:
        if "topic" not in fields:
            raise OptionError("topic option required when no 'topic' attribute is present. Use the topic option for setting a topic.")
        if not isinstance(fields["topic"], StringType):
            raise OptionError(f"topic type must be a string, got {fields['topic'].simpleString()}")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise OptionError(f"partition attribute type must be an int, got {fields['partition'].simpleString()}")
    if "headers" in fields:
        headers = fields["headers"]
        ok = (
            isinstance(headers, ArrayType)
            and isinstance(headers.elementType, StructType)
            and [f.name for f in headers.elementType.fields] == ["key", "value"]
            and isinstance(headers.elementType["key"].dataType, StringType)
            and isinstance(headers.elementType["value"].dataType, BinaryType)
        )
        if not ok:
            raise OptionError(f"headers attribute type must be array<struct<key:string,value:binary>>, got {headers.simpleString()}")
    if options.include_timestamp and "timestamp" in fields and not isinstance(fields["timestamp"], TimestampType):
        raise OptionError(f"timestamp attribute type must be a timestamp, got {fields['timestamp'].simpleString()}")


def _bytes(value) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return value.encode("utf-8")


def write_batches(options: SinkOptions, batches: Iterator) -> int:
    """Send every row of the Arrow ``batches``; returns how many, once all are acknowledged."""
    from kcli.client.sync import SyncRunner

    runner = SyncRunner()
    try:
        return runner.run(_send_all(options, batches))
    finally:
        runner.close()


async def _send_all(options: SinkOptions, batches: Iterator) -> int:
    import pyarrow as pa

    from kcli.client.producer import Producer

    props = dict(options.kafka_params)
    producer = Producer.from_properties(None, props, warn=lambda _message: None)
    sent = 0
    futures: list = []
    await producer.start()
    try:
        for batch in batches:
            if isinstance(batch, pa.Table):
                batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else None
            if batch is None or batch.num_rows == 0:
                continue
            columns = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
            n = batch.num_rows
            values = columns["value"].to_pylist()
            keys = columns["key"].to_pylist() if "key" in columns else None
            if options.topic is not None:
                topics = None
            else:
                topics = columns["topic"].to_pylist()
            partitions = columns["partition"].to_pylist() if "partition" in columns else None
            headers = columns["headers"].to_pylist() if "headers" in columns else None
            stamps = None
            if options.include_timestamp and "timestamp" in columns:
                stamps = columns["timestamp"].cast(pa.int64()).to_pylist()
            for i in range(n):
                topic = options.topic if topics is None else topics[i]
                if topic is None:
                    raise KcliError("null topic present in the data. Use the topic option for setting a topic.")
                record_headers = [(h["key"], h["value"]) for h in headers[i]] if headers is not None and headers[i] else ()
                timestamp = None if stamps is None or stamps[i] is None else stamps[i] // 1000
                futures.append(
                    await producer.send(
                        topic,
                        _bytes(values[i]),
                        key=_bytes(keys[i]) if keys is not None else None,
                        headers=record_headers,
                        partition=partitions[i] if partitions is not None else None,
                        timestamp=timestamp,
                    )
                )
            sent += n
            if len(futures) >= _CHECK_EVERY:
                futures = _check(futures)
        await producer.flush()
        _check(futures, all_done=True)
    finally:
        await producer.close()
    return sent


def _check(futures: list, *, all_done: bool = False) -> list:
    """Raise the first failed send; keep the futures still waiting."""
    waiting = []
    for future in futures:
        if future.done():
            error = future.exception()
            if error is not None:
                raise KcliError(f"writing to Kafka failed: {error}")
        elif all_done:
            raise KcliError("writing to Kafka failed: a record was not acknowledged after flush")
        else:
            waiting.append(future)
    return waiting


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions, schema) -> None:
        self.options = options

    def write(self, iterator: Iterator) -> SinkCommit:
        return SinkCommit(write_batches(self.options, iterator))

    def commit(self, messages) -> None:
        """Every task flushed before it returned: nothing is left to do."""

    def abort(self, messages) -> None:
        """Records already sent stay in Kafka (the sink is at-least-once)."""


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, schema) -> None:
        self.options = options

    def write(self, iterator: Iterator) -> SinkCommit:
        return SinkCommit(write_batches(self.options, iterator))

    def commit(self, messages, batchId: int) -> None:
        """Every task flushed before it returned: nothing is left to do."""

    def abort(self, messages, batchId: int) -> None:
        """Records already sent stay in Kafka (the sink is at-least-once)."""
