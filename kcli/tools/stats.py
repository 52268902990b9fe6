"""``kcli stats``: record and batch statistics of topics on a broker or in Kafka log dirs, on Spark.

Per partition: records, key and value bytes, distinct keys, offset range and time range. Per
topic and codec: batches, records, bytes and a histogram of records per batch. Plain output is
one line per partition and per topic codec; ``--output json`` writes one object per partition
(``{"topic", "partition", "records", "key_bytes", "value_bytes", "distinct_keys",
"first_offset", "last_offset", "first_timestamp", "last_timestamp"}``, timestamps in ms) and one
per topic codec (``{"topic", "codec", "batches", "records", "bytes", "records_per_batch"}``).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.output import Format
from kcli.tools.options import BootstrapServerOpt


def register(app: typer.Typer) -> None:
    app.command("stats", help="Record counts, bytes, key cardinality, time range and batch/codec histogram of topics, with Spark.", no_args_is_help=True)(stats)


def stats(
    bootstrap_server: BootstrapServerOpt = None,
    log_dir: Annotated[Optional[list[str]], typer.Option("--log-dir", help="A Kafka log dir to read offline instead of a broker (repeatable).")] = None,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="The topic(s) (repeatable or comma-separated).")] = None,
    topic_pattern: Annotated[Optional[str], typer.Option("--topic-pattern", help="A regular expression selecting the topics instead of --topic.")] = None,
    output: Annotated[Format, typer.Option("--output", help="plain: aligned lines; json: one JSON object per partition and per topic codec.")] = Format.plain,
    master: Annotated[Optional[str], typer.Option("--master", help="Spark master URL (default local[*]).")] = None,
    conf: Annotated[Optional[list[str]], typer.Option("--conf", help="A Spark setting, key=value (repeatable).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Show Spark's own logs.")] = False,
) -> None:
    import time
    from datetime import datetime, timezone

    from kcli.output import Output
    from kcli.tools._admin_common import check_brokers
    from kcli.spark import pipeline
    from kcli.spark.options import parse_source_options
    from kcli.spark.stats import BUCKETS, batch_stats, record_stats

    out = Output(output)
    options = pipeline.source_options(bootstrap_server=bootstrap_server, log_dirs=log_dir or [], topics=topic or [], topic_pattern=topic_pattern, extra={})
    options["includeHeaders"] = "false"
    parsed = parse_source_options(options, streaming=False)
    check_brokers(bootstrap_server)
    with pipeline.spark_session(master, conf or [], verbose=verbose, app_name="kcli stats") as spark:
        started = time.monotonic()
        with pipeline.Progress(spark, "reading"):
            partitions = record_stats(spark.read.format("kcli").options(**options).load())
            if parsed.offline:
                from kcli.spark.offline import plan_batch

                ranges = plan_batch(parsed)
            else:
                from kcli.spark.online import plan_broker_batch

                ranges = plan_broker_batch(parsed)
            batches = batch_stats(spark, parsed, ranges)
        elapsed = time.monotonic() - started

    def when(ms: int | None) -> str:
        if ms is None:
            return "-"
        return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    if out.json:
        for p in partitions:
            out.obj(p)
        for name in sorted(batches):
            for codec, entry in sorted(batches[name].items()):
                out.obj({"topic": name, "codec": codec, **entry})
    else:
        out.line("TOPIC\tPARTITION\tRECORDS\tKEY-BYTES\tVALUE-BYTES\tDISTINCT-KEYS\tOFFSETS\tFIRST-TIMESTAMP\tLAST-TIMESTAMP")
        for p in partitions:
            out.line(
                f"{p['topic']}\t{p['partition']}\t{p['records']}\t{p['key_bytes']}\t{p['value_bytes']}\t{p['distinct_keys']}\t"
                f"{p['first_offset']}-{p['last_offset']}\t{when(p['first_timestamp'])}\t{when(p['last_timestamp'])}"
            )
        out.line("")
        out.line("TOPIC\tCODEC\tBATCHES\tRECORDS\tBYTES\tRECORDS-PER-BATCH (" + " ".join(name for _, name in BUCKETS) + ")")
        for name in sorted(batches):
            for codec, entry in sorted(batches[name].items()):
                histogram = " ".join(str(entry["records_per_batch"].get(label, 0)) for _, label in BUCKETS)
                out.line(f"{name}\t{codec}\t{entry['batches']}\t{entry['records']}\t{entry['bytes']}\t{histogram}")
    out.flush()
    total = sum(p["records"] for p in partitions)
    size = sum(p["key_bytes"] + p["value_bytes"] for p in partitions)
    out.diag(pipeline.summary("Read", total, size, f"in {len(partitions)} partitions", elapsed))
