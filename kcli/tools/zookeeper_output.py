"""ZooKeeper's output while it starts: held back until it serves, and condensed to the one line
that says why when it exits before that.

ZooKeeper (slf4j's simple logger, one ``yyyy-MM-dd HH:mm:ss,SSS LEVEL Logger - message`` line per
event) reports a failed start as an ERROR line ("Invalid config, exiting abnormally",
"Unexpected exception, exiting abnormally") followed by a Java stack trace whose last
``Caused by:`` is the reason. ``StartupOutput`` copies the server's lines to a stream; until
``release()`` (the server answers clients) it keeps them instead, and ``cause()`` makes the one
line from them.
"""

from __future__ import annotations

import re
import threading
from typing import IO

_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<level>[A-Z]+) (?P<logger>\S+) - (?P<message>.*)$")
# "java.net.BindException: Address already in use", "org....QuorumPeerConfig$ConfigException: ..."
_EXCEPTION = re.compile(r"^(?:Caused by: )?(?P<type>[\w.$]+(?:Exception|Error))(?:: (?P<message>.*))?$")
# ServiceUtils' last words say only which status the JVM exits with.
_EXIT_LINE = "Exiting JVM with code"


class StartupOutput:
    """A reader of the server's merged stdout and stderr (run ``pump`` in a thread)."""

    def __init__(self, source: IO[bytes], sink: IO[str]) -> None:
        self._source = source
        self._sink = sink
        self._lock = threading.Lock()
        self._held: list[str] | None = []
        self._kept: list[str] = []

    def pump(self) -> None:
        for raw in self._source:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._lock:
                if self._held is None:
                    self._write([line])
                else:
                    self._held.append(line)
                    self._kept.append(line)

    def release(self) -> None:
        """The server serves: what it said so far goes out, and the rest as it comes."""
        with self._lock:
            if self._held is not None:
                self._write(self._held)
                self._held = None

    @property
    def released(self) -> bool:
        return self._held is None

    def cause(self) -> str:
        """Why the server stopped before it served, in one line."""
        return cause_line(self._kept)

    def _write(self, lines: list[str]) -> None:
        if lines:
            self._sink.write("".join(line + "\n" for line in lines))
            self._sink.flush()


def cause_line(lines: list[str]) -> str:
    """ZooKeeper's first ERROR message and the root of the exception after it, e.g. "Unexpected
    exception, exiting abnormally: BindException: Address already in use"."""
    headline = None
    root = None
    for line in lines:
        logged = _LOG_LINE.match(line)
        if logged is not None:
            if logged["level"] == "ERROR" and headline is None and _EXIT_LINE not in logged["message"]:
                headline = logged["message"].strip()
            continue
        thrown = _EXCEPTION.match(line.strip())
        if thrown is not None and (root is None or line.startswith("Caused by: ")):
            simple = thrown["type"].rsplit(".", 1)[-1].rsplit("$", 1)[-1]
            root = f"{simple}: {thrown['message']}" if thrown["message"] else simple
    if headline is None and root is None:
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        return last or "it exited without saying why"
    return ": ".join(part for part in (headline, root) if part)
