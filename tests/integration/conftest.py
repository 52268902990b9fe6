"""Fixtures for tests against a real ``kcli broker start`` process over 127.0.0.1.

``broker`` is one process per test module, started with the module's ``BROKER_OVERRIDES`` (a
dict, optional) and stopped gracefully at the end; a test module may instead define its own
``broker`` fixture. ``client`` is a fresh wire-protocol connection per test, ``new_topic`` a
factory of topic names no other test uses. A failing test's report carries the tail of the
broker's log.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.wire_client import WireClient

_BROKER_LOG_LINES = 80
_topic_counter = itertools.count()
_BROKER = pytest.StashKey[BrokerProcess]()


def start_broker(log_dir: Path, overrides: dict[str, str] | None = None) -> BrokerProcess:
    return BrokerProcess(log_dir, {"broker.id": "0", **(overrides or {})}).start()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[BrokerProcess]:
    overrides = dict(getattr(request.module, "BROKER_OVERRIDES", {}))
    root = tmp_path_factory.mktemp("broker")
    dir_names = getattr(request.module, "LOG_DIR_NAMES", None)
    if dir_names:
        overrides["log.dirs"] = ",".join(str(root / name) for name in dir_names)
    process = start_broker(root, overrides)
    request.node.stash[_BROKER] = process
    yield process
    process.stop()


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient("127.0.0.1", broker.port) as connection:
        yield connection


@pytest.fixture
def new_topic(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Topic names unique within the session: the test's name, a label and a counter."""
    base = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:100]

    def make(label: str = "t") -> str:
        return f"{base}-{label}-{next(_topic_counter)}"

    return make


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    process = None
    for node in item.listchain():
        process = node.stash.get(_BROKER, process)
    if process is not None:
        report.sections.append(("broker log", "\n".join(process.log_lines[-_BROKER_LOG_LINES:])))
