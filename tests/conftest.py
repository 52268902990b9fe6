"""Fixtures shared by the unit and conformance tests."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest


@pytest.fixture
def kcli_run(capsys) -> Callable[..., tuple[int, list[str], list[str]]]:
    """Run ``kcli ARGS`` in this process; returns (exit code, stdout lines, stderr lines)."""

    def run(*args: str) -> tuple[int, list[str], list[str]]:
        from kcli.cli import main

        old = sys.argv
        sys.argv = ["kcli", *args]
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        finally:
            sys.argv = old
        captured = capsys.readouterr()
        return code, captured.out.splitlines(), captured.err.splitlines()

    return run


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory):
    """One real ZooKeeper server (Debian's package, run by ``kcli zookeeper start``) for the
    session's tests; each test keeps to a chroot of its own."""
    from tests.zookeeper_process import ZooKeeperProcess

    server = ZooKeeperProcess(tmp_path_factory.mktemp("zookeeper")).start()
    try:
        yield server
    finally:
        server.stop()
