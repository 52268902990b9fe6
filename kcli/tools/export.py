"""``kcli export``: a topic (on a broker, or in Kafka log dirs) to Parquet, JSON lines or CSV files.

Runs on Spark (``local[*]`` unless ``--master``; ``--conf k=v`` passes through) with the ``kcli``
data source. The files hold Spark's Kafka columns (key, value, topic, partition, offset,
timestamp, timestampType, headers); see ``kcli.spark.pipeline`` for how CSV and JSON keep binary
data and nulls. Bounds: ``--starting-offsets``/``--ending-offsets`` (``earliest``/``latest`` or
Spark's offsets JSON) and ``--starting-timestamp``/``--ending-timestamp`` (ms or ISO-8601), with
Spark's precedence (timestamps first). ``--option k=v`` sets any other source option.

Prints one summary line: records, bytes written, time and rate. Logs stay quiet unless
``--verbose``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.int_options import INT32
from kcli.tools.options import BootstrapServerOpt


def register(app: typer.Typer) -> None:
    app.command("export", help="Export a topic (or a Kafka log dir) to Parquet, JSON lines or CSV files with Spark.", no_args_is_help=True)(export)


def export(
    output_dir: Annotated[Optional[str], typer.Option("--output-dir", help="REQUIRED: the directory to write the files to.")] = None,
    bootstrap_server: BootstrapServerOpt = None,
    log_dir: Annotated[Optional[list[str]], typer.Option("--log-dir", help="A Kafka log dir to read offline instead of a broker (repeatable).")] = None,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="The topic(s) to export (repeatable or comma-separated).")] = None,
    topic_pattern: Annotated[Optional[str], typer.Option("--topic-pattern", help="A regular expression selecting the topics instead of --topic.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="parquet, json (JSON lines) or csv.")] = "parquet",
    starting_offsets: Annotated[Optional[str], typer.Option("--starting-offsets", help='earliest (default) or offsets JSON such as {"t":{"0":23}}.')] = None,
    ending_offsets: Annotated[Optional[str], typer.Option("--ending-offsets", help='latest (default) or offsets JSON such as {"t":{"0":50}}.')] = None,
    starting_timestamp: Annotated[Optional[str], typer.Option("--starting-timestamp", help="Start at the first record at or after this time (ms or ISO-8601).")] = None,
    ending_timestamp: Annotated[Optional[str], typer.Option("--ending-timestamp", help="End before the first record at or after this time (ms or ISO-8601).")] = None,
    mode: Annotated[str, typer.Option("--mode", help="What to do when the output exists: error, overwrite or append.")] = "error",
    files: Annotated[Optional[int], typer.Option("--files", click_type=INT32, help="Write this many files (default: one per Spark task).")] = None,
    option: Annotated[Optional[list[str]], typer.Option("--option", help="Another kcli source option, key=value (repeatable).")] = None,
    master: Annotated[Optional[str], typer.Option("--master", help="Spark master URL (default local[*]).")] = None,
    conf: Annotated[Optional[list[str]], typer.Option("--conf", help="A Spark setting, key=value (repeatable).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Show Spark's own logs.")] = False,
) -> None:
    import time

    from kcli.errors import UsageError
    from kcli.tools._admin_common import check_brokers
    from kcli.output import Output
    from kcli.spark import pipeline
    from kcli.spark.session import parse_conf

    out = Output()
    if not output_dir:
        raise UsageError("Missing required option(s) [output-dir]")
    fmt = pipeline.check_format(fmt)
    if mode not in ("error", "overwrite", "append"):
        raise UsageError(f"--mode must be error, overwrite or append, got '{mode}'")
    if files is not None and files < 1:
        raise UsageError("--files must be at least 1")
    extra = parse_conf(option or [])
    bounds = {
        "startingOffsets": starting_offsets,
        "endingOffsets": ending_offsets,
        "startingTimestamp": None if starting_timestamp is None else str(pipeline.parse_time(starting_timestamp, "--starting-timestamp")),
        "endingTimestamp": None if ending_timestamp is None else str(pipeline.parse_time(ending_timestamp, "--ending-timestamp")),
    }
    extra.update({k: v for k, v in bounds.items() if v is not None})
    options = pipeline.source_options(bootstrap_server=bootstrap_server, log_dirs=log_dir or [], topics=topic or [], topic_pattern=topic_pattern, extra=extra)
    check_brokers(bootstrap_server, props={k.removeprefix("kafka."): v for k, v in extra.items() if k.startswith("kafka.")})
    _check_output_dir(output_dir)
    with pipeline.spark_session(master, conf or [], verbose=verbose, app_name="kcli export") as spark:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        started = time.monotonic()
        df = spark.read.format("kcli").options(**options).load()
        observation = Observation("export")
        df = df.observe(observation, F.count(F.lit(1)).alias("records"))
        df = pipeline.to_files_frame(df, fmt)
        if files is not None:
            df = df.coalesce(files) if files <= df.rdd.getNumPartitions() else df.repartition(files)
        writer = df.write.format(fmt).mode("errorifexists" if mode == "error" else mode).options(**pipeline.file_options(fmt))
        with pipeline.Progress(spark, "exporting"):
            writer.save(output_dir)
        records = int(observation.get.get("records", 0))
        elapsed = time.monotonic() - started
    size = pipeline.directory_bytes(output_dir)
    out.diag(pipeline.summary("Exported", records, size, f"to {output_dir} ({fmt})", elapsed))


def _check_output_dir(path: str) -> None:
    """A local --output-dir that cannot be a directory, or cannot be made one, is one line here
    rather than a Java stack trace from Spark's writer once the job has run."""
    import os

    from kcli.errors import KcliError

    if "://" in path:
        return  # another file system (hdfs://, s3a://): its client judges the path
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise KcliError(f"Cannot write to --output-dir {path}: it exists and is not a directory")
        return
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise KcliError(f"Cannot write to --output-dir {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise KcliError(f"Cannot write to --output-dir {path}: {parent} is not writable")
