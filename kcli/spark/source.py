"""The ``kcli`` data source: Spark's Kafka source contract, implemented in Python.

``spark.read.format("kcli")`` and ``spark.readStream.format("kcli")`` take Spark's Kafka options
(``kcli.spark.options``) and give Spark's Kafka columns (``kcli.spark.arrow_rows``). With ``path``
(one or more Kafka ``log.dirs``) the data comes from segment files on disk
(``kcli.spark.offline``), no broker needed; reading from a broker (``kafka.bootstrap.servers``)
and the sinks come with kcli's network client.

The batch reader plans one input partition per topic-partition segment range on the driver; each
Spark task decodes its range into Arrow batches. The stream reader keeps offsets in Spark's Kafka
JSON (``{"topic":{"0":23}}``), which is what the checkpoint stores, so a restarted query resumes at
the checkpointed end and a failed batch is replayed over the identical range. It honours
``maxOffsetsPerTrigger`` (split across partitions in proportion to what each has waiting),
``minOffsetsPerTrigger`` with ``maxTriggerDelay``, and ``trigger(availableNow=True)``, which reads
up to the log ends seen when the query starts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow

from kcli.errors import KcliError
from kcli.spark.arrow_rows import arrow_schema, schema_ddl
from kcli.spark.options import (
    OptionError,
    PartitionOffsets,
    SourceOptions,
    describe_partitions,
    format_partition_offsets,
    offsets_from_json,
    parse_bool,
    parse_sink_options,
    parse_source_options,
    rate_limit,
)

ONLINE_NOT_AVAILABLE = (
    "online mode (kafka.bootstrap.servers) not available yet: read Kafka log dirs with the 'path' option instead"
)


class KcliSource(DataSource):
    """Kafka topics as DataFrames: Spark's Kafka options and columns under the format name ``kcli``."""

    @classmethod
    def name(cls) -> str:
        return "kcli"

    def schema(self) -> str:
        options = {k.lower(): v for k, v in self.options.items()}
        return schema_ddl(
            parse_bool(options, "includeheaders", "includeHeaders", False),
            parse_bool(options, "includecorrupt", "includeCorrupt", False),
        )

    def reader(self, schema) -> DataSourceReader:
        options = self._read_options(schema, streaming=False)
        return OfflineBatchReader(options)

    def streamReader(self, schema) -> DataSourceStreamReader:
        options = self._read_options(schema, streaming=True)
        return OfflineStreamReader(options)

    def _read_options(self, schema, *, streaming: bool) -> SourceOptions:
        options = parse_source_options(dict(self.options), streaming=streaming)
        expected = arrow_schema(options.include_headers, options.include_corrupt).names
        if [field.name for field in schema.fields] != expected:
            raise OptionError("Kafka source has a fixed schema and cannot be set with a custom one")
        if not options.offline:
            raise KcliError(ONLINE_NOT_AVAILABLE)
        return options

    def writer(self, schema, overwrite: bool):
        parse_sink_options(dict(self.options))
        raise KcliError("the kcli sink (writing to Kafka) is not available yet")

    def streamWriter(self, schema, overwrite: bool):
        parse_sink_options(dict(self.options))
        raise KcliError("the kcli sink (writing to Kafka) is not available yet")


def _read(options: SourceOptions, partition: InputPartition | None) -> Iterator:
    from kcli.spark.offline import read_range

    if partition is None or partition.value is None:  # Spark plans InputPartition(None) for no partitions
        return iter(())
    return read_range(
        partition.value,
        include_headers=options.include_headers,
        include_corrupt=options.include_corrupt,
        fail_on_data_loss=options.fail_on_data_loss,
    )


class OfflineBatchReader(DataSourceReader):
    """A batch read of log dirs: one input partition per topic-partition segment range."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        from kcli.spark.offline import plan_batch

        return [InputPartition(r) for r in plan_batch(self.options)]

    def read(self, partition: InputPartition) -> Iterator:
        return _read(self.options, partition)


class OfflineStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A stream over log dirs that other processes may still append to.

    It lives in one long-lived driver process: the log ends seen by ``latestOffset`` and the
    availableNow target are kept between calls. Everything Spark replays comes from offsets it
    passes in, never from that state.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._available_now = False
        self._target: PartitionOffsets | None = None
        self._latest: PartitionOffsets | None = None
        self._last_trigger_ms = 0

    def _partitions(self):
        from kcli.spark.offline import find_partitions, select_partitions

        return select_partitions(find_partitions(self.options.paths), self.options.subscription)

    def initialOffset(self) -> dict:
        from kcli.spark.offline import resolve_limit

        partitions = self._partitions()
        offsets = resolve_limit(self.options.starting, partitions, starting=True, fail_on_data_loss=self.options.fail_on_data_loss)
        return format_partition_offsets(offsets)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        partitions = self._partitions()
        if self._available_now:
            if self._target is None:
                self._target = {tp: files.latest for tp, files in partitions.items()}
            latest = dict(self._target)
        else:
            latest = {tp: files.latest for tp, files in partitions.items()}
        self._latest = latest
        begin = offsets_from_json(start)
        # Partitions that appeared since the start are read from their earliest offset.
        begin_all = {tp: begin.get(tp, partitions[tp].earliest if tp in partitions else end) for tp, end in latest.items()}
        if isinstance(limit, ReadAllAvailable):
            return format_partition_offsets(latest)
        if self._should_wait(begin_all, latest):
            return start
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.options.max_offsets_per_trigger
        if max_rows is None:
            return format_partition_offsets(latest)
        return format_partition_offsets(rate_limit(max_rows, begin_all, latest))

    def _should_wait(self, begin: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """minOffsetsPerTrigger: hold the trigger while fewer records wait, at most maxTriggerDelay."""
        minimum = self.options.min_offsets_per_trigger
        if minimum is None or self._available_now:
            return False
        now = int(time.time() * 1000)
        if now - self._last_trigger_ms >= self.options.max_trigger_delay_ms:
            self._last_trigger_ms = now
            return False
        waiting = sum(end - begin.get(tp, 0) for tp, end in latest.items())
        if waiting < minimum:
            return True
        self._last_trigger_ms = now
        return False

    def reportLatestOffset(self) -> dict | None:
        return format_partition_offsets(self._latest) if self._latest else None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        from kcli.spark.offline import DataLossError, plan_ranges

        options = self.options
        begin, until = offsets_from_json(start), offsets_from_json(end)
        partitions = self._partitions()

        def report(message: str) -> None:
            if options.fail_on_data_loss:
                raise DataLossError(f"{message}; set failOnDataLoss=false to skip what is missing")

        gone = set(begin) - set(until)
        if gone:
            report(f"{describe_partitions(gone)} are gone. Some data may have been missed")
        for tp in sorted(set(until) - set(begin)):
            if tp not in partitions:
                report(f"Cannot find earliest offsets of {tp[0]}-{tp[1]}. Some data may have been missed")
                continue
            earliest = partitions[tp].earliest
            if earliest != 0:
                report(f"Added partition {tp[0]}-{tp[1]} starts from {earliest} instead of 0. Some data may have been missed")
            begin[tp] = earliest
        missing = [tp for tp in until if tp not in partitions]
        if missing:
            report(f"{describe_partitions(missing)} are no longer in the log dirs. Some data may have been missed")
        readable = {tp: offset for tp, offset in until.items() if tp in partitions}
        return [InputPartition(r) for r in plan_ranges(begin, readable, partitions, options)]

    def read(self, partition: InputPartition) -> Iterator:
        return _read(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark's checkpoint is the only record of what was read."""
