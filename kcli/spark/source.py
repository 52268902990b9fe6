"""The ``kcli`` data source: Spark's Kafka source contract, implemented in Python.

``spark.read.format("kcli")`` and ``spark.readStream.format("kcli")`` take Spark's Kafka options
(``kcli.spark.options``) and give Spark's Kafka columns (``kcli.spark.arrow_rows``). With ``path``
(one or more Kafka ``log.dirs``) the data comes from segment files on disk
(``kcli.spark.offline``), no broker needed; with ``kafka.bootstrap.servers`` from any Kafka
broker (``kcli.spark.online``). The sinks write through kcli's producer (``kcli.spark.sink``).

The batch reader plans one input partition per topic-partition segment range on the driver; each
Spark task decodes its range into Arrow batches. The stream reader keeps offsets in Spark's Kafka
JSON (``{"topic":{"0":23}}``), which is what the checkpoint stores, so a restarted query resumes at
the checkpointed end and a failed batch is replayed over the identical range. It honours
``maxOffsetsPerTrigger`` (split across partitions in proportion to what each has waiting),
``minOffsetsPerTrigger`` with ``maxTriggerDelay``, and ``trigger(availableNow=True)``, which reads
up to the log ends seen when the query starts.

Where the offsets come from is a backend: ``LogDirs`` (segment files) or ``Broker`` (metadata,
ListOffsets and Fetch). The readers hold only options and plain offsets, so Spark can pickle them
to its workers; a broker connection is opened where it is used.

Spark asks for the initial offset again when it replays batch 0 after a restart. ``earliest`` and
offsets JSON resolve the same way each time; for ``latest`` and timestamps, the option
``initialOffsetsPath`` (kcli's: a file, best beside the checkpoint) keeps the first resolution, and
every later call returns it, which is what Spark's Kafka source does with its checkpointed
``sources/0/0``. Without it such a replay is a fresh resolution, and a reversed range is reported
as data loss.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow

from kcli.spark.arrow_rows import arrow_schema, schema_ddl
from kcli.spark.options import (
    DataLossError,
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
        return KafkaBatchReader(self._read_options(schema, streaming=False))

    def streamReader(self, schema) -> DataSourceStreamReader:
        return KafkaStreamReader(self._read_options(schema, streaming=True))

    def _read_options(self, schema, *, streaming: bool) -> SourceOptions:
        options = parse_source_options(dict(self.options), streaming=streaming)
        expected = arrow_schema(options.include_headers, options.include_corrupt).names
        if [field.name for field in schema.fields] != expected:
            raise OptionError("Kafka source has a fixed schema and cannot be set with a custom one")
        if options.include_corrupt and not options.offline:
            raise OptionError("Option 'includeCorrupt' reads log dirs only: use it with 'path'")
        return options

    def writer(self, schema, overwrite: bool):
        from kcli.spark.sink import KafkaBatchWriter

        return KafkaBatchWriter(self._sink_options(schema), schema)

    def streamWriter(self, schema, overwrite: bool):
        from kcli.spark.sink import KafkaStreamWriter

        return KafkaStreamWriter(self._sink_options(schema), schema)

    def _sink_options(self, schema):
        from kcli.spark.sink import check_sink_schema

        options = parse_sink_options(dict(self.options))
        if options.paths:
            raise OptionError("the kcli sink writes to a broker: set 'kafka.bootstrap.servers', not 'path'")
        check_sink_schema(schema, options)
        return options


# -- backends ----------------------------------------------------------------------------------------


class LogDirs:
    """Offsets and ranges from Kafka log dirs on disk."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def _files(self):
        from kcli.spark.offline import find_partitions, select_partitions

        return select_partitions(find_partitions(self.options.paths), self.options.subscription)

    def partitions(self) -> list:
        return list(self._files())

    def earliest(self, tps) -> PartitionOffsets:
        files = self._files()
        return {tp: files[tp].earliest for tp in tps if tp in files}

    def latest(self, tps) -> PartitionOffsets:
        files = self._files()
        return {tp: files[tp].latest for tp in tps if tp in files}

    def resolve(self, limit, tps, *, starting: bool) -> PartitionOffsets:
        from kcli.spark.offline import resolve_limit

        files = self._files()
        return resolve_limit(limit, {tp: files[tp] for tp in tps}, starting=starting, fail_on_data_loss=self.options.fail_on_data_loss)

    def plan(self, begin: PartitionOffsets, until: PartitionOffsets) -> list:
        from kcli.spark.offline import plan_ranges

        return plan_ranges(begin, until, self._files(), self.options)

    def plan_batch(self) -> list:
        from kcli.spark.offline import plan_batch

        return plan_batch(self.options)

    def close(self) -> None:
        pass


class Broker:
    """Offsets from a broker's metadata and ListOffsets; ranges fetched from it."""

    def __init__(self, options: SourceOptions) -> None:
        from kcli.spark.online import BrokerOffsets

        self.options = options
        self.offsets = BrokerOffsets(options)

    def partitions(self) -> list:
        return self.offsets.partitions()

    def earliest(self, tps) -> PartitionOffsets:
        return self.offsets.earliest(list(tps))

    def latest(self, tps) -> PartitionOffsets:
        return self.offsets.latest(list(tps))

    def resolve(self, limit, tps, *, starting: bool) -> PartitionOffsets:
        return self.offsets.resolve(limit, list(tps), starting=starting)

    def plan(self, begin: PartitionOffsets, until: PartitionOffsets) -> list:
        from kcli.spark.online import plan_broker_ranges

        return plan_broker_ranges(begin, until, self.options)

    def plan_batch(self) -> list:
        from kcli.spark.online import plan_broker_batch

        return plan_broker_batch(self.options)

    def close(self) -> None:
        self.offsets.close()


def _backend(options: SourceOptions):
    return LogDirs(options) if options.offline else Broker(options)


def _read(options: SourceOptions, partition: InputPartition | None) -> Iterator:
    if partition is None or partition.value is None:  # Spark plans InputPartition(None) for no partitions
        return iter(())
    if options.offline:
        from kcli.spark.offline import read_range

        return read_range(
            partition.value,
            include_headers=options.include_headers,
            include_corrupt=options.include_corrupt,
            fail_on_data_loss=options.fail_on_data_loss,
        )
    from kcli.spark.online import read_broker_range

    return read_broker_range(
        partition.value,
        include_headers=options.include_headers,
        fail_on_data_loss=options.fail_on_data_loss,
        poll_timeout_ms=options.poll_timeout_ms,
    )


class KafkaBatchReader(DataSourceReader):
    """A batch read: one input partition per topic-partition offset range (per segment offline)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        if self.options.offline:
            return [InputPartition(r) for r in LogDirs(self.options).plan_batch()]
        from kcli.spark.online import plan_broker_batch

        return [InputPartition(r) for r in plan_broker_batch(self.options)]

    def read(self, partition: InputPartition) -> Iterator:
        return _read(self.options, partition)


OfflineBatchReader = KafkaBatchReader


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A stream over a broker's topics, or over log dirs that other processes may append to.

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
        self._backend_instance = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_backend_instance"] = None  # connections stay where they were opened
        return state

    @property
    def _backend(self):
        if self._backend_instance is None:
            self._backend_instance = _backend(self.options)
        return self._backend_instance

    def initialOffset(self) -> dict:
        path = self.options.initial_offsets_path
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        backend = self._backend
        offsets = format_partition_offsets(backend.resolve(self.options.starting, backend.partitions(), starting=True))
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            temporary = f"{path}.tmp"
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(offsets, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        return offsets

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        backend = self._backend
        if self._available_now and self._target is not None:
            latest = dict(self._target)
        else:
            latest = backend.latest(backend.partitions())
            if self._available_now:
                self._target = dict(latest)
        self._latest = latest
        begin = offsets_from_json(start)
        # Partitions that appeared since the start are read from their earliest offset.
        added = [tp for tp in latest if tp not in begin]
        begin_all = {**backend.earliest(added), **{tp: begin[tp] for tp in latest if tp in begin}}
        begin_all = {tp: begin_all.get(tp, end) for tp, end in latest.items()}
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
        options = self.options
        backend = self._backend
        begin, until = offsets_from_json(start), offsets_from_json(end)
        present = set(backend.partitions())

        def report(message: str) -> None:
            if options.fail_on_data_loss:
                raise DataLossError(f"{message}; set failOnDataLoss=false to skip what is missing")

        gone = set(begin) - set(until)
        if gone:
            report(f"{describe_partitions(gone)} are gone. Some data may have been missed")
        added = sorted(tp for tp in set(until) - set(begin) if tp in present)
        for tp in sorted(set(until) - set(begin) - present):
            report(f"Cannot find earliest offsets of {tp[0]}-{tp[1]}. Some data may have been missed")
        for tp, earliest in backend.earliest(added).items():
            if earliest != 0:
                report(f"Added partition {tp[0]}-{tp[1]} starts from {earliest} instead of 0. Some data may have been missed")
            begin[tp] = earliest
        missing = [tp for tp in until if tp not in present]
        if missing:
            report(f"{describe_partitions(missing)} are no longer there. Some data may have been missed")
        readable = {tp: offset for tp, offset in until.items() if tp in present}
        return [InputPartition(r) for r in backend.plan(begin, readable)]

    def read(self, partition: InputPartition) -> Iterator:
        return _read(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark's checkpoint is the only record of what was read."""

    def stop(self) -> None:
        if self._backend_instance is not None:
            self._backend_instance.close()
            self._backend_instance = None


OfflineStreamReader = KafkaStreamReader
