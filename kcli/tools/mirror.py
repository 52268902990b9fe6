"""``kcli mirror``: a streaming copy of topics from one cluster to another, with a checkpoint.

Runs a Spark structured stream (``local[*]`` unless ``--master``): the ``kcli`` source reads the
topics from ``--source-bootstrap-server``, the ``kcli`` sink writes every record (key, value,
headers, timestamp) to the topic of the same name (or ``--topic-prefix`` + name) on
``--target-bootstrap-server``, to the same partition unless ``--no-keep-partitions``. A missing
target topic is created first, as MirrorMaker 2 creates it (``mirror_topics``: the source's
partition count and replicable configs); one the target refuses is one line before Spark
starts. Progress is kept in ``--checkpoint``: a restarted mirror resumes where the last
run stopped (the first run starts at ``--starting-offsets``, earliest by default). Records are
copied at least once: a batch that failed is copied again on restart.

``--once`` copies what is there when it starts and stops (``trigger(availableNow=True)``);
otherwise it runs until interrupted, a micro-batch every ``--interval``. A summary line ends it.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.int_options import INT64


def register(app: typer.Typer) -> None:
    app.command("mirror", help="Copy topics from one cluster to another as a Spark stream, with a checkpoint.", no_args_is_help=True)(mirror)


def mirror(
    source_bootstrap_server: Annotated[Optional[str], typer.Option("--source-bootstrap-server", help="REQUIRED: the cluster to copy from, HOST1:PORT1,...")] = None,
    target_bootstrap_server: Annotated[Optional[str], typer.Option("--target-bootstrap-server", help="REQUIRED: the cluster to copy to, HOST1:PORT1,...")] = None,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="The topic(s) to copy (repeatable or comma-separated).")] = None,
    topic_pattern: Annotated[Optional[str], typer.Option("--topic-pattern", help="A regular expression selecting the topics instead of --topic.")] = None,
    checkpoint: Annotated[Optional[str], typer.Option("--checkpoint", help="REQUIRED: the directory that keeps the mirror's progress.")] = None,
    once: Annotated[bool, typer.Option("--once", help="Copy what is there now, then stop.")] = False,
    interval: Annotated[str, typer.Option("--interval", help="Time between micro-batches when running continuously.")] = "1 second",
    starting_offsets: Annotated[str, typer.Option("--starting-offsets", help="Where a new mirror starts: earliest, latest or offsets JSON.")] = "earliest",
    max_offsets_per_trigger: Annotated[Optional[int], typer.Option("--max-offsets-per-trigger", click_type=INT64, help="At most this many records per micro-batch.")] = None,
    topic_prefix: Annotated[str, typer.Option("--topic-prefix", help="Prepended to each topic name on the target.")] = "",
    keep_partitions: Annotated[bool, typer.Option("--keep-partitions/--no-keep-partitions", help="Write each record to the partition it came from.")] = True,
    producer_property: Annotated[Optional[list[str]], typer.Option("--producer-property", help="A producer setting, key=value (repeatable).")] = None,
    master: Annotated[Optional[str], typer.Option("--master", help="Spark master URL (default local[*]).")] = None,
    conf: Annotated[Optional[list[str]], typer.Option("--conf", help="A Spark setting, key=value (repeatable).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Show Spark's own logs.")] = False,
) -> None:
    import os
    import time

    from kcli.errors import UsageError
    from kcli.tools import mirror_topics
    from kcli.tools._admin_common import check_brokers
    from kcli.output import Output
    from kcli.spark import pipeline
    from kcli.spark.options import parse_subscription
    from kcli.spark.session import parse_conf

    out = Output()
    if not source_bootstrap_server or not target_bootstrap_server:
        raise UsageError("Missing required option(s) [source-bootstrap-server, target-bootstrap-server]")
    if not checkpoint:
        raise UsageError("Missing required option(s) [checkpoint]")
    if max_offsets_per_trigger is not None and max_offsets_per_trigger < 1:
        raise UsageError("--max-offsets-per-trigger must be at least 1")
    extra = {
        "startingOffsets": starting_offsets,
        "initialOffsetsPath": os.path.join(os.path.abspath(checkpoint), "kcli-initial-offsets.json"),
    }
    if max_offsets_per_trigger is not None:
        extra["maxOffsetsPerTrigger"] = str(max_offsets_per_trigger)
    options = pipeline.source_options(bootstrap_server=source_bootstrap_server, log_dirs=[], topics=topic or [], topic_pattern=topic_pattern, extra=extra)
    producer = {f"kafka.{k}": v for k, v in parse_conf(producer_property or []).items()}
    copied = 0
    check_brokers(source_bootstrap_server)
    target_props = {k.removeprefix("kafka."): v for k, v in producer.items()}
    check_brokers(target_bootstrap_server, props=target_props)
    subscription = parse_subscription({key.lower(): value for key, value in options.items()})
    sources = mirror_topics.read_source_topics(source_bootstrap_server, subscription)
    mirror_topics.prepare_target_topics(target_bootstrap_server, target_props, sources, topic_prefix, keep_partitions, out.diag)
    with pipeline.spark_session(master, conf or [], verbose=verbose, app_name="kcli mirror") as spark:
        from pyspark.sql import functions as F

        started = time.monotonic()
        stream = spark.readStream.format("kcli").options(**options).load()
        columns = [F.col("key"), F.col("value"), F.col("headers"), F.concat(F.lit(topic_prefix), F.col("topic")).alias("topic"), F.col("timestamp")]
        if keep_partitions:
            columns.append(F.col("partition"))
        writer = (
            stream.select(*columns).writeStream.format("kcli")
            .option("kafka.bootstrap.servers", target_bootstrap_server).option("includeTimestamp", "true")
            .options(**producer).option("checkpointLocation", checkpoint)
        )
        writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=interval)
        query = writer.start()

        def status(elapsed: float) -> str:
            records = sum(int(p.get("numInputRows", 0)) for p in query.recentProgress)
            if elapsed < pipeline.MEASURABLE_SECONDS:
                return f"{records} records"
            return f"{records} records ({pipeline.format_rate(records / elapsed)}/s)"

        try:
            with pipeline.Progress(spark, "mirroring", status=status):
                while query.isActive:
                    query.awaitTermination(1)
        except KeyboardInterrupt:
            pass
        finally:
            query.stop()
            copied = sum(int(p.get("numInputRows", 0)) for p in query.recentProgress)
        if query.exception() is not None:
            raise query.exception()
        elapsed = time.monotonic() - started
    out.diag(pipeline.summary("Mirrored", copied, None, f"from {source_bootstrap_server} to {target_bootstrap_server}", elapsed))
