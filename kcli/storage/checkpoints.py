"""The small text files a broker keeps beside its logs.

Offset checkpoints and the leader-epoch checkpoint share one framing (Kafka's CheckpointFile):

    0                          version
    2                          number of entries
    __consumer_offsets 31 3    one entry per line: <topic> <partition> <offset>
    __consumer_offsets 44 9    (leader-epoch-checkpoint: <epoch> <startOffset>)

Every line ends with ``\\n`` and entries are split on runs of whitespace. ``partition.metadata``
holds a partition's topic id, ``meta.properties`` identifies the log dir (java.util.Properties
format) and ``.kafka_cleanshutdown`` marks a clean shutdown. Every file here is written to
``<name>.tmp``, synced and renamed over the old one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from kcli.common import uuid_from_string, uuid_to_string
from kcli.errors import CorruptCheckpointError
from kcli.java_compat import parse_int, parse_long, split

RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0

T = TypeVar("T")

# Java's \s, which is narrower than Python's: no Unicode spaces.
_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_PARTITION_METADATA_SEPARATOR = re.compile(r":[ \t\n\x0b\f\r]+")
# What BufferedReader.readLine ends a line at.
_LINE_END = re.compile(r"\r\n|\r|\n")


def write_atomically(path: Path | str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file.

    The bytes go to ``<path>.tmp`` (a stale one is overwritten), which is synced and renamed over
    ``path``; the directory is then synced so the rename itself survives a crash.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        # A failed write (a full disk) leaves the old file and no half-written temporary one.
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    fsync_path(path.parent)


def fsync_path(path: Path | str) -> None:
    """fsync a file or a directory by its path (a directory's, so that the names created or
    renamed in it survive a crash)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- shared framing -------------------------------------------------------------------------------


def _text(path: Path | str) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(f"{path} is not valid UTF-8: {exc}") from None


def _lines(text: str) -> list[str]:
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def _malformed(path: Path | str, line: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(f"Malformed line in checkpoint file ({path}): '{line}'")


def _read_checkpoint(path: Path | str, parse_entry: Callable[[list[str]], T]) -> list[T]:
    """Entries of a version-0 checkpoint file; a missing, empty or version-only file has none."""
    try:
        lines = _lines(_text(path))
    except FileNotFoundError:
        return []
    if not lines:
        return []
    try:
        version = parse_int(lines[0])
    except ValueError:
        raise _malformed(path, lines[0]) from None
    if version != CHECKPOINT_VERSION:
        raise CorruptCheckpointError(f"Unrecognized version of the checkpoint file ({path}): {version}")
    if len(lines) == 1:
        return []
    try:
        expected = parse_int(lines[1])
    except ValueError:
        raise _malformed(path, lines[1]) from None
    entries = []
    for line in lines[2:]:
        try:
            entries.append(parse_entry(split(line, _WHITESPACE)))
        except ValueError:
            raise _malformed(path, line) from None
    if len(entries) != expected:
        raise CorruptCheckpointError(f"Expected {expected} entries in checkpoint file ({path}), but found only {len(entries)}")
    return entries


def _write_checkpoint(path: Path | str, lines: list[str]) -> None:
    text = "".join(f"{line}\n" for line in [str(CHECKPOINT_VERSION), str(len(lines)), *lines])
    write_atomically(path, text.encode("utf-8"))


# -- offset checkpoints ---------------------------------------------------------------------------


def _offset_entry(fields: list[str]) -> tuple[tuple[str, int], int]:
    if len(fields) != 3:
        raise ValueError(fields)
    topic, partition, offset = fields
    return (topic, parse_int(partition)), parse_long(offset)


def read_offset_checkpoint(path: Path | str) -> dict[tuple[str, int], int]:
    """The ``(topic, partition) -> offset`` map of an offset checkpoint file.

    A missing file reads as empty, as Kafka treats it (its checkpoint classes create the file on
    first use). A partition listed twice keeps its last offset.
    """
    return dict(_read_checkpoint(path, _offset_entry))


def write_offset_checkpoint(path: Path | str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Write ``offsets`` in the mapping's order; topic names must be free of whitespace."""
    lines = []
    for (topic, partition), offset in offsets.items():
        if not topic or _WHITESPACE.search(topic):
            raise ValueError(f"topic name {topic!r} cannot be written to an offset checkpoint")
        lines.append(f"{topic} {partition} {offset}")
    _write_checkpoint(path, lines)


# -- leader-epoch-checkpoint ----------------------------------------------------------------------


def _epoch_entry(fields: list[str]) -> tuple[int, int]:
    if len(fields) != 2:
        raise ValueError(fields)
    return parse_int(fields[0]), parse_long(fields[1])


def read_leader_epoch_checkpoint(path: Path | str) -> list[tuple[int, int]]:
    """The ``(epoch, start offset)`` entries in file order; a missing file reads as empty."""
    return _read_checkpoint(path, _epoch_entry)


def write_leader_epoch_checkpoint(path: Path | str, entries: Iterable[tuple[int, int]]) -> None:
    _write_checkpoint(path, [f"{epoch} {start_offset}" for epoch, start_offset in entries])


# -- partition.metadata ---------------------------------------------------------------------------


def _partition_metadata_value(path: Path | str, line: str) -> str:
    fields = split(line, _PARTITION_METADATA_SEPARATOR)
    if len(fields) != 2:
        raise _malformed(path, line)
    return fields[1]


def read_partition_metadata(path: Path | str) -> uuid.UUID:
    """The topic id in a ``partition.metadata`` file; a missing file raises FileNotFoundError.

    As in Kafka, only the values are checked (the names before ``:`` are not) and a version above 0
    is accepted, so that a file from a newer broker still reads.
    """
    lines = _lines(_text(path)) + ["", ""]
    try:
        version = parse_int(_partition_metadata_value(path, lines[0]))
    except ValueError:
        raise _malformed(path, lines[0]) from None
    if version < PARTITION_METADATA_VERSION:
        raise CorruptCheckpointError(f"Unrecognized version of partition metadata file ({path}): {version}")
    try:
        topic_id = uuid_from_string(_partition_metadata_value(path, lines[1]))
    except ValueError:
        raise _malformed(path, lines[1]) from None
    if topic_id.int == 0:
        raise CorruptCheckpointError(f"Invalid topic ID in partition metadata file ({path})")
    return topic_id


def write_partition_metadata(path: Path | str, topic_id: uuid.UUID) -> None:
    text = f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {uuid_to_string(topic_id)}"
    write_atomically(path, text.encode("ascii"))


# -- meta.properties ------------------------------------------------------------------------------

_PROPERTIES_BLANKS = " \t\f"
_PROPERTIES_UNESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|u|.|$)", re.DOTALL)
_PROPERTIES_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f", "=": "\\=", ":": "\\:", "#": "\\#", "!": "\\!"}
_CONTROL_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _property_lines(text: str) -> Iterator[str]:
    """java.util.Properties logical lines: comments and blanks skipped, ``\\`` continues a line."""
    pending: str | None = None
    for line in _lines(text):
        line = line.lstrip(_PROPERTIES_BLANKS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = (pending or "") + line[:-1]
        else:
            yield (pending or "") + line
            pending = None
    if pending is not None:
        yield pending


def _unescape(text: str, path: Path | str) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped = match.group(1)
        if escaped == "u":
            raise CorruptCheckpointError(f"Malformed \\uxxxx encoding in properties file ({path})")
        if len(escaped) == 5:
            return chr(int(escaped[1:], 16))
        return _CONTROL_ESCAPES.get(escaped, escaped)

    return _PROPERTIES_UNESCAPE.sub(replace, text)


def _split_property(line: str) -> tuple[str, str]:
    end = 0
    while end < len(line) and line[end] not in "=:" + _PROPERTIES_BLANKS:
        end += 2 if line[end] == "\\" else 1
    value = line[end:].lstrip(_PROPERTIES_BLANKS)
    if value[:1] in ("=", ":"):
        value = value[1:].lstrip(_PROPERTIES_BLANKS)
    return line[:end], value


def read_meta_properties(path: Path | str) -> dict[str, str]:
    """The entries of a ``meta.properties`` file; a missing file raises FileNotFoundError.

    ZooKeeper-mode brokers write ``version=0``, ``broker.id`` and (0.10.1+) ``cluster.id``; KRaft
    nodes write ``version=1``, ``node.id``, ``cluster.id`` and (3.7+) ``directory.id``.
    """
    properties = {}
    for line in _property_lines(_text(path)):
        key, value = _split_property(line)
        properties[_unescape(key, path)] = _unescape(value, path)
    return properties


def _escape(text: str, *, key: bool) -> str:
    escaped = "".join(_PROPERTIES_ESCAPES.get(char, char) for char in text)
    if key:
        return escaped.replace(" ", "\\ ")
    return "\\" + escaped if escaped.startswith(" ") else escaped


def _java_date(now: datetime) -> str:
    """java.util.Date.toString, e.g. ``Sat Nov 21 16:50:57 UTC 2026``."""
    return f"{_DAYS[now.weekday()]} {_MONTHS[now.month - 1]} {now:%d %H:%M:%S} {now.tzname()} {now.year}"


def write_meta_properties(path: Path | str, props: Mapping[str, str]) -> None:
    """Write ``props`` the way Properties.store(writer, "") does, in the mapping's order."""
    lines = ["#", "#" + _java_date(datetime.now().astimezone())]
    lines += [f"{_escape(key, key=True)}={_escape(value, key=False)}" for key, value in props.items()]
    write_atomically(path, "".join(f"{line}\n" for line in lines).encode("utf-8"))


# -- .kafka_cleanshutdown -------------------------------------------------------------------------


def write_clean_shutdown_marker(log_dir: Path | str, broker_epoch: int | None) -> None:
    """Mark ``log_dir`` as cleanly shut down.

    With a broker epoch this is Kafka 3.7+'s ``{"version":0,"brokerEpoch":N}`` (KIP-966); without
    one it is the empty file that earlier brokers write.
    """
    data = b""
    if broker_epoch is not None:
        data = json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode("ascii")
    write_atomically(Path(log_dir) / CLEAN_SHUTDOWN_FILE, data)


def has_clean_shutdown_marker(log_dir: Path | str) -> bool:
    return (Path(log_dir) / CLEAN_SHUTDOWN_FILE).exists()


def read_clean_shutdown_broker_epoch(log_dir: Path | str) -> int | None:
    """The broker epoch in the marker, or None when it is absent, empty or unreadable, as in Kafka."""
    try:
        content = json.loads((Path(log_dir) / CLEAN_SHUTDOWN_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    epoch = content.get("brokerEpoch") if isinstance(content, dict) else None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None


def remove_clean_shutdown_marker(log_dir: Path | str) -> None:
    (Path(log_dir) / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
