"""What kcli's Spark commands (``export``, ``import``) share: the session, files, progress, summary.

- ``spark_session``: ``get_spark`` with ``--master``/``--conf``, session time zone UTC unless
  ``--conf`` says otherwise, and for a master that is not local, kcli's own code shipped to the
  executors (``ship_kcli``). A session this process already had is used and left running; one
  started here is stopped at the end.
- The export file layout is Spark's Kafka columns. Parquet keeps them as they are; JSON lines
  holds binary as base64 (Spark's JSON writer and reader agree on that); CSV, which has no binary
  or array type, holds ``key``/``value`` as base64 text and ``headers`` as a JSON array of
  ``{"key": str, "value": base64 | null}``, and nulls as ``\\N``. Every format keeps nulls apart
  from empty values.
- ``Progress``: on a terminal, one line on stderr refreshed twice a second (tasks done, what the
  command adds, e.g. records and rate, elapsed); nothing otherwise.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from kcli.errors import KcliError, UsageError

FORMATS = ("parquet", "json", "csv")
CSV_NULL = "\\N"
EXPORT_DDL = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, timestampType INT, "
    "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
)
CSV_DDL = "key STRING, value STRING, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, timestampType INT, headers STRING"


@contextmanager
def spark_session(master: str | None, conf: Iterable[str], *, verbose: bool, app_name: str) -> Iterator:
    """A session for one command; stopped at the end if this call started it."""
    from kcli.spark.session import get_spark, parse_conf, stop_spark

    settings = {"spark.sql.session.timeZone": "UTC", **parse_conf(conf)}
    try:
        from pyspark import SparkContext
    except ImportError:
        SparkContext = None  # get_spark names the install command
    had_session = SparkContext is not None and SparkContext._active_spark_context is not None
    spark = get_spark(master, settings, app_name=app_name, verbose=verbose)
    try:
        effective = spark.sparkContext.master
        if not (effective.startswith("local")):
            ship_kcli(spark)
        try:
            yield spark
        except Exception as exc:
            from pyspark.errors import PySparkException

            if isinstance(exc, PySparkException) and not verbose:
                raise KcliError(one_line(exc)) from None
            raise
    finally:
        if not had_session:
            stop_spark(spark)


_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$")


def one_line(exc: BaseException) -> str:
    """The cause of a Spark failure in one line: the last ``SomeError: message`` line of the Python
    traceback Spark wraps (kcli's own errors without their class name), else the first line."""
    text = str(exc)
    found = [m for m in map(_ERROR_LINE.match, text.splitlines()) if m]
    if found:
        name, message = found[-1].groups()
        if name in ("KcliError", "DataLossError", "OptionError", "UsageError"):
            return message.strip()
        return f"{name}: {message.strip()}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def ship_kcli(spark) -> None:
    """Make kcli importable on executors of a remote master: the installed ``kcli`` package (pure
    Python) zipped once and added with ``addPyFile``. Executors still need pyarrow (PySpark's own
    requirement) and numpy; kcli's compiled dependencies (the codecs) are only needed there when
    the topics are compressed."""
    import tempfile
    import zipfile

    import kcli

    root = Path(kcli.__file__).resolve().parent
    target = Path(tempfile.mkdtemp(prefix="kcli-ship-")) / "kcli.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if "__pycache__" in path.parts or path.is_dir():
                continue
            archive.write(path, Path("kcli") / path.relative_to(root))
    spark.sparkContext.addPyFile(str(target))


def check_format(fmt: str) -> str:
    lowered = fmt.lower()
    if lowered not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got '{fmt}'")
    return lowered


def to_files_frame(df, fmt: str):
    """The Kafka columns as the file format can hold them."""
    if fmt != "csv":
        return df
    from pyspark.sql import functions as F

    headers = F.when(
        F.col("headers").isNull(), F.lit(None)
    ).otherwise(F.to_json(F.transform("headers", lambda h: F.struct(h["key"].alias("key"), F.base64(h["value"]).alias("value")))))
    return df.select(
        F.base64("key").alias("key"), F.base64("value").alias("value"), "topic", "partition", "offset", "timestamp", "timestampType",
        headers.alias("headers"),
    )


def from_files_frame(df, fmt: str):
    """Files written by ``to_files_frame`` back as the Kafka columns."""
    if fmt != "csv":
        return df
    from pyspark.sql import functions as F

    parsed = F.from_json("headers", "ARRAY<STRUCT<key: STRING, value: STRING>>")
    headers = F.when(parsed.isNull(), F.lit(None)).otherwise(
        F.transform(parsed, lambda h: F.struct(h["key"].alias("key"), F.unbase64(h["value"]).alias("value")))
    )
    return df.select(
        F.unbase64("key").alias("key"), F.unbase64("value").alias("value"), "topic", "partition", "offset", "timestamp", "timestampType",
        headers.alias("headers"),
    )


def file_reader(spark, fmt: str):
    reader = spark.read.format(fmt)
    if fmt == "json":
        reader = reader.schema(EXPORT_DDL)
    elif fmt == "csv":
        reader = reader.schema(CSV_DDL).options(**file_options(fmt))
    return reader


def file_options(fmt: str) -> dict[str, str]:
    # A null and an empty field would both be an empty CSV field: nulls get their own marker.
    return {"header": "true", "nullValue": CSV_NULL} if fmt == "csv" else {}


def directory_bytes(path: str | os.PathLike) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            if not name.startswith((".", "_")):
                total += os.path.getsize(os.path.join(root, name))
    return total


def parse_time(value: str, flag: str) -> int:
    """Milliseconds since the epoch, from an integer or an ISO-8601 time (UTC when no zone)."""
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        pass
    from datetime import datetime, timezone

    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag} expects milliseconds since the epoch or an ISO-8601 time, got '{value}'") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def format_bytes(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


# Below this the elapsed time prints as "0.0 s" and a rate computed from it means nothing.
MEASURABLE_SECONDS = 0.05


def format_rate(per_second: float) -> str:
    """A rate with three significant digits, in plain notation: a slow job's 0.0932 records/s is
    not rounded down to 0; 100 and more are whole numbers with thousands separators."""
    if per_second <= 0 or per_second >= 100:
        return f"{per_second:,.0f}"
    decimals = 2 - math.floor(math.log10(per_second))
    return f"{per_second:.{decimals}f}"


def format_byte_rate(bytes_per_second: float) -> str:
    value = bytes_per_second
    for unit in ("B", "KB", "MB"):
        if value < 1000:
            return f"{format_rate(value)} {unit}/s"
        value /= 1000
    return f"{format_rate(value)} GB/s"


def summary(verb: str, records: int, size: int | None, what: str, elapsed: float) -> str:
    """The line a Spark command ends with. The rates are left out when the job took too short a
    time to measure them."""
    done = f"{verb} {records} records" + ("" if size is None else f" ({format_bytes(size)})") + f" {what} in {elapsed:.1f} s"
    if elapsed < MEASURABLE_SECONDS:
        return done
    rates = [f"{format_rate(records / elapsed)} records/s"]
    if size is not None:
        rates.append(format_byte_rate(size / elapsed))
    return f"{done} ({', '.join(rates)})"


class Progress:
    """Spark's task progress on stderr while a job runs, when stderr is a terminal."""

    def __init__(self, spark, label: str, stream=None, status=None) -> None:
        self.spark = spark
        self.label = label
        self.stream = stream or sys.stderr
        self.status = status  # optional: more to show, e.g. records so far and their rate
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = time.monotonic()

    def __enter__(self) -> Progress:
        if self.stream.isatty():
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _run(self) -> None:
        tracker = self.spark.sparkContext.statusTracker()
        while not self._stop.wait(0.5):
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            elapsed = time.monotonic() - self._start
            extra = ""
            if self.status is not None:
                try:
                    extra = f", {self.status(elapsed)}"
                except Exception:  # progress must never break the command
                    extra = ""
            self.stream.write(f"\r\033[K{self.label}: {done}/{total} tasks{extra}, {elapsed:.0f} s")
            self.stream.flush()


def source_options(
    *,
    bootstrap_server: str | None,
    log_dirs: Iterable[str],
    topics: Iterable[str],
    topic_pattern: str | None,
    extra: Mapping[str, str],
) -> dict[str, str]:
    """The ``kcli`` source options for a topic on a broker or in log dirs."""
    dirs = [d for d in log_dirs if d]
    names = [t.strip() for chunk in topics for t in chunk.split(",") if t.strip()]
    if bool(bootstrap_server) == bool(dirs):
        raise UsageError("give exactly one of --bootstrap-server and --log-dir")
    if bool(names) == bool(topic_pattern):
        raise UsageError("give exactly one of --topic and --topic-pattern")
    options = {"includeHeaders": "true"}
    if bootstrap_server:
        options["kafka.bootstrap.servers"] = bootstrap_server
    else:
        options["path"] = ",".join(dirs)
    if names:
        options["subscribe"] = ",".join(names)
    else:
        options["subscribePattern"] = topic_pattern or ""
    options.update(extra)
    return options
