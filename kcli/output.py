"""The one output sink every tool writes through.

Plain text (exactly Kafka's lines) goes to stdout by default; ``--output json`` writes one JSON
object per line instead. Diagnostics go to stderr. Rich rendering (progress bars) appears only
when stderr is a terminal, so pipes and scripts always see plain text.
"""

from __future__ import annotations

import contextlib
import enum
import json
import sys
from collections.abc import Iterator
from typing import IO, Any

class Format(str, enum.Enum):
    plain = "plain"
    json = "json"


class Output:
    """Buffered writer for a tool's results and diagnostics.

    Lines are gathered and written in large chunks: tools such as dump-log-segments emit millions
    of short lines, and one ``write`` per line would dominate their run time.
    """

    _FLUSH_AT = 512

    def __init__(self, fmt: Format = Format.plain, out: IO[str] | None = None, err: IO[str] | None = None):
        self.format = fmt
        self._out = out if out is not None else sys.stdout
        self._err = err if err is not None else sys.stderr
        self._pending: list[str] = []

    @property
    def json(self) -> bool:
        return self.format is Format.json

    def line(self, text: str) -> None:
        """One plain-text result line on stdout."""
        pending = self._pending
        pending.append(text)
        if len(pending) >= self._FLUSH_AT:
            self.flush()

    def now(self, text: str) -> None:
        """One result line on stdout, written at once (a progress report must not wait for the buffer)."""
        self.line(text)
        self.flush()

    def prompt(self, text: str) -> None:
        """A prompt on stdout without a line end (console-producer's ``>`` on a terminal)."""
        self.flush()
        self._out.write(text)
        self._out.flush()

    def lines(self, texts: list[str]) -> None:
        """Many plain-text result lines at once."""
        self._pending.extend(texts)
        if len(self._pending) >= self._FLUSH_AT:
            self.flush()

    def obj(self, value: dict[str, Any]) -> None:
        """One JSON object on its own line on stdout."""
        self.line(json.dumps(value, ensure_ascii=False, separators=(",", ":")))

    def diag(self, text: str) -> None:
        """A diagnostic line on stderr; stdout written so far goes out first to keep order."""
        self.flush()
        self._err.write(text + "\n")
        self._err.flush()

    def log4j(self, level: str, message: str, category: str) -> None:
        """A diagnostic in the layout of Kafka's tools-log4j.properties (``[%d] %p %m (%c)``)."""
        self.diag(log4j_line(level, message, category))

    def table(self, headers: list[str], rows: list[list[str]], plain: list[str], *, leading_blank: bool = True) -> None:
        """Kafka's plain lines (after a blank line when ``leading_blank``); when stdout is a
        terminal and the format plain, the same cells as a rich table instead."""
        if self.json or not self._out.isatty():
            self.lines(([""] if leading_blank else []) + plain)
            return
        from rich.console import Console
        from rich.table import Table

        self.flush()
        view = Table(box=None, header_style="bold", pad_edge=False)
        widths = [max([len(header)] + [len(row[i]) for row in rows if i < len(row)]) for i, header in enumerate(headers)]
        for header, width in zip(headers, widths):
            view.add_column(header, no_wrap=True, min_width=width)
        for row in rows:
            view.add_row(*row)
        # A table wider than the terminal scrolls rather than losing its cells to ellipses.
        width = Console(file=self._out).width
        console = Console(file=self._out, width=max(width, sum(widths) + 2 * len(widths)))
        if leading_blank:
            console.print()
        console.print(view)

    def flush(self) -> None:
        if self._pending:
            self._pending.append("")
            self._out.write("\n".join(self._pending))
            self._pending.clear()
        self._out.flush()

    @contextlib.contextmanager
    def progress(self, description: str, total: int) -> Iterator[Any]:
        """A progress bar on stderr when it is a terminal; otherwise a no-op updater.

        Yields a callable ``advance(completed)`` taking the absolute amount done so far.
        """
        if not self._err.isatty():
            yield _no_progress
            return
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        from rich.console import Console

        console = Console(file=self._err)
        with Progress(
            TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
            console=console, transient=True,
        ) as bar:
            task = bar.add_task(description, total=total)
            yield lambda completed: bar.update(task, completed=completed)


class BytesOutput:
    """stdout as bytes, for records written as they are (console-consumer): one write and flush
    per call; notices a reader that went away (a closed pipe) instead of failing."""

    def __init__(self, out: IO[bytes] | None = None) -> None:
        self.stream = out if out is not None else sys.stdout.buffer
        self._is_stdout = out is None
        self.broken = False

    def write(self, data: bytes | bytearray) -> bool:
        """True when written; False once the reader is gone (and from then on)."""
        if self.broken:
            return False
        try:
            if data:
                self.stream.write(data)
            self.stream.flush()
            return True
        except (BrokenPipeError, ValueError):
            self.broken = True
            if self._is_stdout:
                # Point stdout at /dev/null so the interpreter's last flush does not fail again.
                import os

                try:
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                except (OSError, ValueError):
                    pass
            return False


def log4j_line(level: str, message: str, category: str) -> str:
    """A line as Kafka's tools-log4j.properties lays it out: ``[%d] %p %m (%c)``."""
    import datetime

    now = datetime.datetime.now()
    return f"[{now:%Y-%m-%d %H:%M:%S},{now.microsecond // 1000:03d}] {level} {message} ({category})"


def _no_progress(completed: int) -> None:
    return None
