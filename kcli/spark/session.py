"""A quiet SparkSession for kcli's commands and tests, with the ``kcli`` data source registered.

- The Python workers run this interpreter (``PYSPARK_PYTHON``), not whatever ``python3`` is first
  on PATH, which may lack pyarrow.
- Local masters bind 127.0.0.1 (``SPARK_LOCAL_IP``, driver host and bind address), which also
  silences the loopback-address warning; the web UI is off, so parallel sessions never race for
  port 4040.
- Log4j reads ``log4j2.properties`` from this package (errors only, on stderr). The JVM's own
  stderr (the "incubator modules" notice the launcher prints) goes to a private file unless
  ``verbose``; when the JVM fails to start, the end of that file is in the error.
- ``master`` and ``conf`` pass straight through; the defaults only fill what they leave unset.

Missing Java or PySpark is one line naming what to install. ``stop_spark`` ends the session and
its JVM.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from kcli.errors import KcliError

DEFAULT_MASTER = "local[*]"
LOG4J_PROPERTIES = Path(__file__).with_name("log4j2.properties")
INSTALL_JAVA = "apt-get install default-jre-headless"


def install_pyspark() -> str:
    """The command that adds kcli's spark extra where this kcli was installed from. Never a bare
    ``pip install 'kcli[spark]'``: the index's "kcli" is another project."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "scripts" / "install").is_file() and (checkout / "pyproject.toml").is_file():
        return f"{checkout / 'scripts' / 'install'} --spark"
    return f"{sys.executable} -m pip install '<the kcli-kafka wheel or checkout kcli was installed from>[spark]'"


class SparkUnavailableError(KcliError):
    """PySpark or a Java runtime is missing."""


def parse_conf(pairs: Iterable[str]) -> dict[str, str]:
    """``--conf key=value`` arguments as a mapping."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise KcliError(f"--conf expects key=value, got '{pair}'")
        out[key.strip()] = value
    return out


def find_java() -> str | None:
    """The java Spark's launcher will run: ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def get_spark(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    *,
    app_name: str = "kcli",
    verbose: bool = False,
):
    """The process's SparkSession, started on first use with the settings above."""
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailableError(f"kcli's Spark features need PySpark: {install_pyspark()}") from None
    from kcli.spark.source import KcliSource

    if SparkContext._active_spark_context is not None:
        spark = SparkSession.builder.getOrCreate()
        spark.dataSource.register(KcliSource)
        return spark
    if find_java() is None:
        where = "JAVA_HOME/bin/java" if os.environ.get("JAVA_HOME") else "java on PATH"
        raise SparkUnavailableError(f"Spark needs a Java runtime (17 or newer) and found no {where}: {INSTALL_JAVA}")

    settings = dict(conf or {})
    master = master or settings.pop("spark.master", None) or DEFAULT_MASTER
    local = _is_local(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    defaults = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    if local:
        defaults |= {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.shuffle.partitions": "4",
        }
    if not verbose:
        log4j = f"-Dlog4j2.configurationFile=file:{LOG4J_PROPERTIES}"
        extra = settings.get("spark.driver.extraJavaOptions")
        settings["spark.driver.extraJavaOptions"] = f"{extra} {log4j}" if extra else log4j
    spark_conf = SparkConf().setMaster(master)
    for key, value in (defaults | settings).items():
        spark_conf.set(key, value)

    if verbose:
        spark = SparkSession.builder.config(conf=spark_conf).getOrCreate()
    else:
        spark = _start_quietly(spark_conf)
    spark.dataSource.register(KcliSource)
    return spark


def _start_quietly(spark_conf):
    """Start the JVM with its stdout and stderr in an unlinked temporary file."""
    from pyspark import SparkContext
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    log = tempfile.TemporaryFile(prefix="kcli-spark-")
    try:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
    except PySparkRuntimeError as exc:
        log.seek(0)
        tail = log.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
        reason = tail[-1] if tail else str(exc)
        raise SparkUnavailableError(f"the Spark JVM did not start: {reason}") from None
    SparkContext(conf=spark_conf, gateway=gateway)
    return SparkSession.builder.config(conf=spark_conf).getOrCreate()



def stop_spark(spark) -> None:
    """Stop the session and the JVM behind it (``spark.stop()`` alone leaves the JVM running
    until this process exits); a later ``get_spark`` starts a new one."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is not None:
        proc.stdin.close()  # the JVM exits when its stdin closes
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
