"""The files a user hands kcli to read, read with a bound on their size and on their lines.

Properties files (``server.properties``, ``--command-config``, ``--producer.config``,
``--consumer.config``, ...), offset files, CSV plans and payload files all come through
``read_bytes`` / ``read_text``: whatever the path names (``/dev/zero``, a FIFO, a huge file
without a line end), at most ``max_bytes`` (and one line of at most ``max_line`` bytes) is ever held
in memory. Past a bound, or when the file cannot be read, the caller gets one ``KcliError``
naming the file and the bound, so a tool ends with one line and exit 1 and a broker refuses to
start with one line.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from kcli.errors import KcliError

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Bounds:
    """At most ``max_bytes`` in all; with ``max_line``, no line (up to ``\\n``) longer than it."""

    max_bytes: int
    max_line: int | None


# Java .properties files: a few hundred short lines in practice (a JAAS entry is the longest).
PROPERTIES = Bounds(max_bytes=1024 * 1024, max_line=64 * 1024)
# Offset files and CSV plans: one short line per partition, millions of partitions at most.
LINE_RECORDS = Bounds(max_bytes=256 * 1024 * 1024, max_line=64 * 1024)
# producer-perf-test's --payload-file: records split on a delimiter of the user's choosing, so
# only the size is bounded.
PAYLOADS = Bounds(max_bytes=256 * 1024 * 1024, max_line=None)


def read_bytes(path: str | os.PathLike[str], what: str, bounds: Bounds) -> bytes:
    """The bytes of ``path`` (``what`` names it in errors: "properties file", ...)."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > bounds.max_bytes:
                raise _too_large(path, what, bounds)
            return _read_bounded(f, path, what, bounds)
    except OSError as exc:
        raise KcliError(f"Cannot read {what} {path}: {exc.strerror or exc}") from None


def read_text(path: str | os.PathLike[str], what: str, bounds: Bounds) -> str:
    """The text of ``path`` as UTF-8; bytes that are not UTF-8 are one error naming the file."""
    data = read_bytes(path, what, bounds)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KcliError(f"Cannot read {what} {path}: not UTF-8 text (byte {exc.start})") from None


def _read_bounded(f, path, what: str, bounds: Bounds) -> bytes:
    data = bytearray()
    line = 0  # bytes of the current line read so far
    while True:
        chunk = f.read(_CHUNK)
        if not chunk:
            return bytes(data)
        if len(data) + len(chunk) > bounds.max_bytes:
            raise _too_large(path, what, bounds)
        if bounds.max_line is not None:
            line = _open_line_after(chunk, line, bounds.max_line, path, what)
        data += chunk


def _open_line_after(chunk: bytes, line: int, max_line: int, path, what: str) -> int:
    """The length of the line open after ``chunk`` (``line`` bytes of it came before); raises
    when any line reaches past ``max_line``."""
    start = 0
    while True:
        end = chunk.find(b"\n", start)
        if end < 0:
            line += len(chunk) - start
            break
        line += end - start
        if line > max_line:
            break
        line, start = 0, end + 1
    if line > max_line:
        raise KcliError(f"Cannot read {what} {path}: a line is longer than {_size(max_line)}, the most kcli reads")
    return line


def _too_large(path, what: str, bounds: Bounds) -> KcliError:
    return KcliError(f"Cannot read {what} {path}: it is larger than {_size(bounds.max_bytes)}, the most kcli reads")


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"

