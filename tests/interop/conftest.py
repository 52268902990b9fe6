"""Fixtures for the interop tests: a real ``kcli broker start`` process per test module,
unique topic names per test, and the broker's log attached to every failing test's report.

The interop tests talk to the broker only through real client libraries and tools
(confluent-kafka, kafka-python, aiokafka, kcat) over 127.0.0.1.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker_process import BrokerProcess

BROKER_OVERRIDES = {
    "broker.id": "0",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
}

_LOG_START = pytest.StashKey[int]()
_BATCH_FIELD = re.compile(r"(\w+): (\S+)")


def start_broker(log_dir: Path, overrides: dict[str, str] | None = None) -> BrokerProcess:
    return BrokerProcess(log_dir, {**BROKER_OVERRIDES, **(overrides or {})}).start()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the whole test module, stopped gracefully at teardown."""
    process = start_broker(tmp_path_factory.mktemp("broker"))
    yield process
    process.stop()


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker for one test alone, for tests that stop, kill or restart it."""
    process = start_broker(tmp_path / "broker")
    yield process
    process.stop()


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """A factory of topic names no other test uses: the test's name plus a random suffix."""
    base = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:80]

    def make(label: str = "") -> str:
        return f"{base}{'-' + label if label else ''}-{uuid.uuid4().hex[:8]}"

    return make


@pytest.fixture
def topic(unique_topic: Callable[[str], str]) -> str:
    return unique_topic("")


def segment_batches(broker: BrokerProcess, topic: str, partition: int = 0) -> list[dict[str, str]]:
    """The header of every batch the broker stored for a partition, as ``kcli dump-log-segments``
    prints it: one dict per batch (baseOffset, producerId, compresscodec, ...)."""
    segments = sorted((broker.log_dir / f"{topic}-{partition}").glob("*.log"))
    assert segments, f"no segment files for {topic}-{partition}"
    result = subprocess.run(
        [sys.executable, "-m", "kcli", "dump-log-segments", "--files", ",".join(map(str, segments))],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return [dict(_BATCH_FIELD.findall(line)) for line in result.stdout.splitlines() if line.startswith("baseOffset: ")]


@pytest.fixture
def stored_batches(broker: BrokerProcess) -> Callable[[str, int], list[dict[str, str]]]:
    """``stored_batches(topic, partition)``: the batch headers the module's broker wrote."""
    return lambda topic, partition=0: segment_batches(broker, topic, partition)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    result = yield
    process = _test_broker(item)
    if process is not None:
        item.stash[_LOG_START] = len(process.log_lines)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[pytest.TestReport]:
    report = yield
    process = _test_broker(item)
    if report.failed and process is not None:
        start = item.stash.get(_LOG_START, 0)
        lines = process.log_lines[start:]
        report.sections.append(("broker log during the test", "\n".join(lines[-200:])))
    return report


def _test_broker(item: pytest.Item) -> BrokerProcess | None:
    funcargs = getattr(item, "funcargs", {})
    for name in ("own_broker", "broker"):
        if isinstance(funcargs.get(name), BrokerProcess):
            return funcargs[name]
    return None
