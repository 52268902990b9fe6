"""``kcli import``: files written by ``kcli export`` (Parquet, JSON lines, CSV) to a topic.

Runs on Spark with the ``kcli`` sink. Each record keeps its key, value, headers and timestamp
(CreateTime); it goes to the partition it came from unless ``--no-keep-partitions`` (then the
producer's partitioner chooses), and to ``--topic`` or, without it, to the topic it came from.
Records of one partition are sent in offset order, so a topic exported and imported into an
empty topic with as many partitions has the same records at the same offsets.

Prints one summary line: records, bytes, time and rate. Logs stay quiet unless ``--verbose``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.options import BootstrapServerOpt


def register(app: typer.Typer) -> None:
    app.command("import", help="Import files written by kcli export (Parquet, JSON lines, CSV) into a topic with Spark.", no_args_is_help=True)(import_files)


def import_files(
    input_path: Annotated[Optional[str], typer.Option("--input", help="REQUIRED: the directory (or file) kcli export wrote.")] = None,
    bootstrap_server: BootstrapServerOpt = None,
    topic: Annotated[Optional[str], typer.Option("--topic", help="The topic to write to (default: each record's own topic column).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="parquet, json (JSON lines) or csv.")] = "parquet",
    keep_partitions: Annotated[bool, typer.Option("--keep-partitions/--no-keep-partitions", help="Write each record to the partition it came from.")] = True,
    keep_timestamps: Annotated[bool, typer.Option("--keep-timestamps/--no-keep-timestamps", help="Keep each record's timestamp (else the send time).")] = True,
    producer_property: Annotated[Optional[list[str]], typer.Option("--producer-property", help="A producer setting, key=value (repeatable).")] = None,
    master: Annotated[Optional[str], typer.Option("--master", help="Spark master URL (default local[*]).")] = None,
    conf: Annotated[Optional[list[str]], typer.Option("--conf", help="A Spark setting, key=value (repeatable).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Show Spark's own logs.")] = False,
) -> None:
    import os
    import time

    from kcli.errors import UsageError
    from kcli.tools._admin_common import check_brokers
    from kcli.output import Output
    from kcli.spark import pipeline
    from kcli.spark.session import parse_conf

    out = Output()
    fmt = pipeline.check_format(fmt)
    if not bootstrap_server:
        raise UsageError("Missing required option(s) [bootstrap-server]")
    if not input_path:
        raise UsageError("Missing required option(s) [input]")
    if not os.path.exists(input_path):
        raise UsageError(f"{input_path}: no such file or directory")
    producer = {f"kafka.{k}": v for k, v in parse_conf(producer_property or []).items()}
    check_brokers(bootstrap_server, props={k.removeprefix("kafka."): v for k, v in producer.items()})
    with pipeline.spark_session(master, conf or [], verbose=verbose, app_name="kcli import") as spark:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        started = time.monotonic()
        df = pipeline.from_files_frame(pipeline.file_reader(spark, fmt).load(input_path), fmt)
        columns = ["key", "value", "headers", "topic", "partition", "offset", "timestamp"]
        df = df.select(*columns)
        if keep_partitions:
            df = df.repartition("topic", "partition").sortWithinPartitions("topic", "partition", "offset")
        else:
            df = df.drop("partition")
        df = df.drop("offset")
        if not keep_timestamps:
            df = df.drop("timestamp")
        observation = Observation("import")
        df = df.observe(
            observation,
            F.count(F.lit(1)).alias("records"),
            F.sum(F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))).alias("bytes"),
        )
        writer = df.write.format("kcli").mode("append").option("kafka.bootstrap.servers", bootstrap_server).option("includeTimestamp", "true")
        if topic is not None:
            writer = writer.option("topic", topic)
        writer = writer.options(**producer)
        with pipeline.Progress(spark, "importing"):
            writer.save()
        result = observation.get
        elapsed = time.monotonic() - started
    target = topic or "their topics"
    out.diag(pipeline.summary("Imported", int(result.get("records") or 0), int(result.get("bytes") or 0), f"into {target}", elapsed))
