"""Kafka topics and Kafka log directories as Spark DataFrames (PySpark's Python Data Source API).

Spark is an optional extra (``scripts/install --spark``: the ``spark`` extra of kcli-kafka,
``pyspark[sql]>=4.2,<5`` and pandas < 3) and is imported only here, lazily: nothing else in kcli
imports this package.

Modules
    options.py     Spark's Kafka option surface, pure Python: ``assign``/``subscribe``/
                   ``subscribePattern``, ``startingOffsets``/``endingOffsets`` (earliest, latest,
                   offsets JSON with -2/-1), ``startingTimestamp``/``endingTimestamp`` and the
                   per-partition ``...ByTimestamp`` forms with Spark's precedence,
                   ``maxOffsetsPerTrigger`` (split across partitions in proportion to what each
                   has waiting), ``minOffsetsPerTrigger``/``maxTriggerDelay``, ``minPartitions``
                   and ``maxRecordsPerPartition`` (Spark's range calculator), ``failOnDataLoss``,
                   ``includeHeaders``, the refused ``kafka.*`` configs, Spark's error messages.
    arrow_rows.py  the Arrow schema Spark demands of a Python source (equal to
                   ``to_arrow_schema(schema, timezone="UTC")``: binary/string, timestamp[us, UTC],
                   headers as list<struct<key string, value binary>>, null when a record has
                   none) and ``RowBatchBuilder``, which turns decoded record batches into one
                   ``pa.array`` per column, offsets and timestamps computed with numpy.
    offline.py     log dirs without a broker: partition directories found in one or more
                   ``path``s (a log dir, or one partition's directory), read-only; offsets
                   resolved from the files (earliest = first segment's base offset, latest = one
                   past the last whole batch, timestamps by ListOffsets' rule); offset ranges
                   split as Spark splits them, then cut at segment boundaries; each range's
                   ``.log`` read batch by batch (CRC-checked, control batches skipped).
    columnar.py    the fast decoder: record boundaries found in Python (one varint per record,
                   or the i-th record of every batch at once with numpy), every field of ~65,000
                   records then decoded by vectorised varint arithmetic, keys and values built as
                   Arrow binary views over the records bytes and cast to binary. Whatever does
                   not frame exactly, and records with headers when headers are asked for, go
                   to ``storage/records.py``'s decoder, which stays the authority on the format.
    online.py      a broker (any Kafka-compatible one): the partitions a subscription reads
                   and offsets resolved on the driver with kcli's client (metadata, ListOffsets:
                   earliest, latest, offsetsForTimes; read_committed ends at the LSO); on the
                   executors one ``BrokerRange`` fetched from its leader by a prefetching thread,
                   exactly ``[start, end)``, aborted transactions dropped with read_committed.
    decode.py      record batches from files or Fetch answers to Arrow batches (the fast
                   columnar path, the per-record fallback, control batches skipped, bad batches
                   per failOnDataLoss/includeCorrupt).
    source.py      ``KcliSource``, format name ``kcli``: ``schema()`` (Kafka's columns, plus
                   ``headers`` with includeHeaders and ``corrupt`` with includeCorrupt), the
                   batch reader (one input partition per offset range; per segment offline) and
                   the stream reader (offsets as Spark's Kafka JSON, read limits, availableNow,
                   ``initialOffsetsPath`` pinning the first resolution of latest/timestamps),
                   over a ``LogDirs`` or ``Broker`` backend; ``writer``/``streamWriter``.
    sink.py        Arrow writers (batch and streaming) with Spark's Kafka sink columns (value;
                   key, headers, topic, partition; str or bytes), one producer per task,
                   flushed before the task ends (at-least-once); ``includeTimestamp`` (kcli's)
                   keeps a ``timestamp`` column as the record's CreateTime.
    pipeline.py    what ``kcli export``/``import``/``mirror``/``stats`` share: the session
                   (``--master``/``--conf``, kcli zipped onto remote executors), file layouts
                   (Parquet, JSON lines, CSV keeping binary and nulls), progress, summary, and
                   Spark failures turned into one line.
    stats.py       per-partition record statistics and per-codec batch histograms.
    session.py     ``get_spark``: a quiet session (this interpreter for the workers, 127.0.0.1
                   for local masters, no UI, log4j errors only, the JVM's stderr captured) with
                   the source registered; one-line errors when Java or PySpark is missing.

Data flow of an offline read: the driver lists the partition directories, resolves start and
end offsets, scans batch headers to find where each log ends, and plans ``SegmentRange``s. Each
Spark task opens its ``.log`` read-only, finds the batch holding its start offset from batch
headers, and reads batch after batch in 1 MiB chunks; every ~65,536 rows leave as one Arrow
RecordBatch (Spark takes Arrow batches without converting rows in Python). Measured with
``bench/spark.py`` (2,000,040 records of 100-byte values in 4 partitions, local[2] on this
2-core machine while other work ran): about 1.5 million rows/s into Spark's noop sink; the
per-record decoder alone gave about 0.7 million. A bad batch fails the read
(``failOnDataLoss=true``), is skipped (false), or becomes a row with its raw bytes and the reason
in ``corrupt`` (``includeCorrupt=true``).

Streaming: the offsets Spark checkpoints are the Kafka JSON the reader returns, so a restart
resumes at the last committed end and a failed micro-batch is replayed over the same range;
``partitions(start, end)`` depends only on its arguments and the files. Offsets that vanished
(a partition directory removed, a start beyond the end) are data loss, reported per
``failOnDataLoss``. ``startingOffsets=latest`` is resolved when the query first starts; Spark
asks for the initial offset again on restart, so a log that grew meanwhile makes that replay an
empty (reversed) range, reported as data loss, unless ``initialOffsetsPath`` keeps the first
resolution.

Data flow of an online read: the driver lists the topics and resolves offsets with ListOffsets
and plans one ``BrokerRange`` per topic-partition (split by minPartitions); each Spark task opens
its own connection, a thread fetches 8 MiB answers ahead while the task decodes the previous one
into Arrow batches. Measured with ``bench/spark.py`` (2,000,000 records of 100 bytes, 4
partitions, local[2], the broker on the same 2 cores): ``count()`` at 0.95-1.2 million rows/s,
against 1.5-1.8 million for a confluent-kafka consumer loop.

Differences from Spark's own Kafka connector: the format name is ``kcli`` (a Python source may
not take the name ``kafka``), writes need ``.mode("append")``, and ``path``/``includeCorrupt``/
``initialOffsetsPath``/``includeTimestamp`` are kcli's. Offline, data is read up to the end of the
files (there is no high watermark), and ``kafka.isolation.level`` is not applied. The sink sends
with kcli's producer, whose ``kafka.*`` configs are the Java producer's names.
"""

from __future__ import annotations

__all__ = ["KcliSource", "get_spark"]


def __getattr__(name: str):
    if name == "KcliSource":
        from kcli.spark.source import KcliSource

        return KcliSource
    if name == "get_spark":
        from kcli.spark.session import get_spark

        return get_spark
    raise AttributeError(f"module 'kcli.spark' has no attribute {name!r}")
