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


def _run_on_terminal(args: list[str]) -> tuple[int, str]:
    """``kcli ARGS`` with stdin, stdout and stderr on a pseudo-terminal: what a user at a shell sees."""
    import os
    import pty

    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "kcli", *args], stdin=slave, stdout=slave, stderr=slave, cwd=ROOT)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    return process.wait(timeout=60), b"".join(chunks).decode().replace("\r\n", "\n")


def test_help_on_a_terminal_is_the_text_a_pipe_gets():
    """Help is shown as written: Kafka's texts hold brackets (``HOST:PORT[/chroot]``) that rich
    markup would read as tags, failing or dropping words."""
    paths = _command_paths(typer.main.get_command(app))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda path: (path, _run_on_terminal([*path, "--help"]), _run([*path, "--help"])), paths))
    failures = [
        f"kcli {' '.join(path)} --help on a terminal -> {code}:\n{text[:600]}"
        for path, (code, text), piped in results
        if code != 0 or text != piped.stdout
    ]
    assert not failures, "\n\n".join(failures)
    zookeeper_shell = next(text for path, (_, text), _ in results if path == ("zookeeper-shell",))
    assert "HOST:PORT[/chroot]" in zookeeper_shell
