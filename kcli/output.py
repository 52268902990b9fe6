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


def _no_progress(completed: int) -> None:
    return None
