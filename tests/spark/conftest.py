"""A real SparkSession for tests/spark, started once per test run through kcli.spark.session.

The master is ``local[2]`` unless KCLI_TEST_SPARK_MASTER names another (e.g. a standalone
cluster's ``spark://127.0.0.1:7077``). Java comes from the machine (``scripts/install --test``
installs a JRE when there is none); a missing Java is a test failure, not a skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator:
    from kcli.spark.session import get_spark, stop_spark

    session = get_spark(
        os.environ.get("KCLI_TEST_SPARK_MASTER", "local[2]"),
        {"spark.sql.session.timeZone": "UTC", "spark.sql.execution.arrow.pyspark.enabled": "true"},
    )
    try:
        yield session
    finally:
        stop_spark(session)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    """A real kcli broker process for the module, stopped gracefully at teardown."""
    from broker_process import BrokerProcess
    from kafka_data import BROKER_OVERRIDES

    process = BrokerProcess(tmp_path_factory.mktemp("broker"), BROKER_OVERRIDES).start()
    yield process
    process.stop()


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest):
    import re
    import uuid

    base = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:50]

    def make(label: str = "") -> str:
        return f"{base}{'-' + label if label else ''}-{uuid.uuid4().hex[:8]}"

    return make

