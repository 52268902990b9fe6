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
