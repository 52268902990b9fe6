"""Every command's help and usage errors are plain text when stdout and stderr are not a terminal:
no ANSI escape and no box drawing reaches a pipe or a file (the README's promise)."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import typer.main

from kcli.cli import app

ROOT = Path(__file__).resolve().parents[2]
_ANSI = re.compile(r"\x1b[\[\]()]")
_BOX = re.compile(r"[\u2500-\u257f]")  # the Box Drawing block: ─ │ ╭ ╮ ╰ ╯ ...


def _command_paths(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            paths += _command_paths(sub, (*path, name))
    return paths


def _run(args: list[str]) -> subprocess.CompletedProcess:
    # capture_output: both streams are pipes, as in a script or a CI log.
    return subprocess.run([sys.executable, "-m", "kcli", *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_every_command_walks_into_the_check():
    paths = _command_paths(typer.main.get_command(app))
    assert ("topics",) in paths and ("broker", "start") in paths and len(paths) > 15


def test_help_and_usage_errors_are_plain_text_in_a_pipe():
    paths = _command_paths(typer.main.get_command(app))
    cases = [([*path, "--help"], 0) for path in paths] + [([*path, "--no-such-option"], 2) for path in paths]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda case: (case, _run(case[0])), cases))
    failures = []
    for (args, expected_code), result in results:
        text = result.stdout + result.stderr
        if result.returncode != expected_code or _ANSI.search(text) or _BOX.search(text) or "Traceback" in text:
            failures.append(f"kcli {' '.join(args)} -> {result.returncode}:\n{text[:600]}")
    assert not failures, "\n\n".join(failures)
    usage_error = dict((tuple(args), result) for (args, _), result in results)[("topics", "--no-such-option")]
    assert "No such option" in usage_error.stderr and "--no-such-option" in usage_error.stderr and usage_error.stdout == ""
    help_text = dict((tuple(args), result) for (args, _), result in results)[("topics", "--help")]
    assert help_text.stdout.startswith("Usage: ") and "kcli topics" in help_text.stdout.splitlines()[0]
    assert "--bootstrap-server" in help_text.stdout
