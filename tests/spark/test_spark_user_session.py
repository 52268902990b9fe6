"""A PySpark session of the user's own (not one kcli builds) reads format("kcli") when it runs
with .venv's interpreter, whatever python3 PATH finds first.

scripts/install puts ``scripts/kcli-pyspark-python.pth`` into .venv's site-packages; here the
driver processes that same file as its site-packages' (``site.addsitedir``), since the shared
test environment is not reinstalled by a test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from kcli.storage.log_manager import LogManager
from kcli.storage.records import NewRecord, build_batch

ROOT = Path(__file__).resolve().parents[2]
PTH = ROOT / "scripts" / "kcli-pyspark-python.pth"

USER_JOB = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    try:
        rows = spark.read.format("kcli").option("path", sys.argv[1]).option("subscribe", "orders").load()
        print("VALUES", sorted(bytes(row.value).decode() for row in rows.collect()))
    finally:
        spark.stop()
    """
)


def test_a_users_own_session_runs_its_workers_on_the_venvs_interpreter(tmp_path):
    log_dir = tmp_path / "kafka-logs"
    logs = LogManager([log_dir])
    logs.get_or_create_log("orders", 0).append(build_batch([NewRecord(None, b"a", 1000), NewRecord(None, b"b", 1001)]))
    logs.shutdown()

    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if d and Path(d) != Path(venv_bin))
    first_python3 = shutil.which("python3", path=path)
    assert first_python3 is not None and Path(first_python3).parent != Path(venv_bin)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env |= {"PATH": path, "SPARK_LOCAL_IP": "127.0.0.1"}

    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    shutil.copy(PTH, site_dir)
    job = tmp_path / "job.py"
    job.write_text(USER_JOB)
    driver = f"import runpy, site, sys; site.addsitedir({str(site_dir)!r}); sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
    done = subprocess.run(
        [sys.executable, "-c", driver, str(job), str(log_dir)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "VALUES ['a', 'b']" in done.stdout
