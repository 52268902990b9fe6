"""Fixtures for the tool tests: a real ``kcli broker start`` process per test module, the
librdkafka mock cluster as a second, independent Kafka implementation, unique topic names, and a
runner for ``kcli`` commands as separate processes (as a user or a script runs them).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker_process import BrokerProcess
from mock_cluster import MockCluster

ROOT = Path(__file__).resolve().parents[2]
BROKER_OVERRIDES = {
    "broker.id": "0",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.num.partitions": "5",
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One kcli broker for the whole test module, stopped gracefully at teardown."""
    process = BrokerProcess(tmp_path_factory.mktemp("broker"), BROKER_OVERRIDES).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[MockCluster]:
    """librdkafka's mock cluster in its own process, for the module."""
    with MockCluster() as cluster:
        yield cluster


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> Callable[[str], str]:
    base = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:60]

    def make(label: str = "") -> str:
        return f"{base}{'-' + label if label else ''}-{uuid.uuid4().hex[:8]}"

    return make


class KcliResult:
    def __init__(self, completed: subprocess.CompletedProcess) -> None:
        self.returncode = completed.returncode
        self.stdout: str = completed.stdout
        self.stderr: str = completed.stderr

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def __repr__(self) -> str:
        return f"KcliResult(rc={self.returncode}, stdout={self.stdout[-2000:]!r}, stderr={self.stderr[-2000:]!r})"


def run_kcli(*args: str, input: str | None = None, timeout: float = 60, env: dict[str, str] | None = None) -> KcliResult:
    """``kcli ARGS`` as its own process (stdin from ``input``), bounded in time."""
    completed = subprocess.run(
        [sys.executable, "-m", "kcli", *args], input=input, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    return KcliResult(completed)


@pytest.fixture
def kcli() -> Callable[..., KcliResult]:
    return run_kcli


class InProcess:
    """``kcli ARGS`` run in this process through the same entry point (``kcli.cli.main``), for the
    many argument checks where a process start per case would dominate the run time."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *args: str):
        import sys
        import types

        from kcli.cli import main

        self.capsys.readouterr()
        argv, sys.argv = sys.argv, ["kcli", *args]
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.argv = argv
        captured = self.capsys.readouterr()
        return types.SimpleNamespace(returncode=code, stdout=captured.out, stderr=captured.err, lines=captured.out.splitlines())


@pytest.fixture
def inproc(capsys: pytest.CaptureFixture[str]) -> InProcess:
    return InProcess(capsys)
