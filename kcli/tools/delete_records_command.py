"""The work behind ``kcli delete-records``: the offset JSON file read as Kafka reads it, the
deletion, and Kafka 3.9's lines."""

from __future__ import annotations

import json
from typing import Any

import typer

from kcli.common import TopicPartition
from kcli.errors import KcliError
from kcli.input_files import LINE_RECORDS, read_text
from kcli.java_compat import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, hash_map_order, topic_partition_hash
from kcli.output import Format, Output

EARLIEST_VERSION = 1


class OffsetFileError(KcliError):
    """An offset JSON file Kafka's DeleteRecordsCommand refuses; the message is Kafka's."""


def run(bootstrap_server: str, offset_json_file: str, command_config: str | None, fmt: Format) -> None:
    from kcli.tools._admin_common import AdminSession, client_settings, load_command_config

    out = Output(fmt)
    try:
        try:
            offsets = parse_offset_json(read_text(offset_json_file, "offset JSON file", LINE_RECORDS))
            settings = client_settings(load_command_config(command_config), bootstrap=bootstrap_server, warn=out.diag)
            if not out.json:
                out.now("Executing records delete operation")
            with AdminSession(settings) as session:
                results = session.run(session.admin.delete_records(offsets))
        except OffsetFileError as exc:
            out.diag(str(exc))  # Kafka's message, as DeleteRecordsCommand prints it
            raise typer.Exit(exc.exit_code) from None
        except KcliError as exc:
            out.diag(f"Error: {exc}")
            raise typer.Exit(exc.exit_code) from None
        if not out.json:
            out.line("Records delete operation completed:")
        failed = False
        for tp in hash_map_order(offsets, lambda tp: topic_partition_hash(tp.topic, tp.partition)):
            result = results[tp]
            failed = failed or result.error is not None
            error = None if result.error is None else f"{result.error.java_class}: {result.error}"
            if out.json:
                out.obj({"topic": tp.topic, "partition": tp.partition, "low_watermark": None if error else result.low_watermark, "error": error})
            elif error is None:
                out.line(f"partition: {tp}\tlow_watermark: {result.low_watermark}")
            else:
                out.line(f"partition: {tp}\terror: {error}")
    finally:
        out.flush()
    if failed:
        raise typer.Exit(1)


def parse_offset_json(text: str) -> dict[TopicPartition, int]:
    """The partitions and offsets of an offset JSON file, in the file's order, with Kafka's
    messages for what it refuses (DeleteRecordsCommand.parseOffsetJsonStringWithoutDedup)."""
    try:
        document = json.loads(text)
    except ValueError:
        raise OffsetFileError("The input string is not a valid JSON") from None
    _expect_object(document)
    version = _to_int(document["version"], INT_MIN, INT_MAX, "Integer") if "version" in document else EARLIEST_VERSION
    if version != 1:
        raise OffsetFileError(f"Not supported version field value {version}")
    if "partitions" not in document:
        raise OffsetFileError("Missing partitions field")
    partitions = document["partitions"]
    if not isinstance(partitions, list):
        raise OffsetFileError(f"Expected JSON array, received {_node(partitions)}")
    seen: dict[TopicPartition, list[int]] = {}
    for item in partitions:
        _expect_object(item)
        topic = _field(item, "topic")
        if not isinstance(topic, str):
            raise OffsetFileError(f"Expected `String` value, received {_node(topic)}")
        partition = _to_int(_field(item, "partition"), INT_MIN, INT_MAX, "Integer")
        offset = _to_int(_field(item, "offset"), LONG_MIN, LONG_MAX, "Long")
        seen.setdefault(TopicPartition(topic, partition), []).append(offset)
    duplicates = [tp for tp, found in seen.items() if len(found) > 1]
    if duplicates:
        # Kafka joins them from a HashSet of TopicPartition.
        ordered = hash_map_order(duplicates, lambda tp: topic_partition_hash(tp.topic, tp.partition))
        raise OffsetFileError(f"Offset json file contains duplicate topic partitions: {','.join(str(tp) for tp in ordered)}")
    return {tp: found[0] for tp, found in seen.items()}


def _expect_object(node: Any) -> None:
    if not isinstance(node, dict):
        raise OffsetFileError(f"Expected JSON object, received {_node(node)}")


def _field(obj: dict, name: str) -> Any:
    if name not in obj:
        raise OffsetFileError(f"No such field exists: `{name}`")
    return obj[name]


def _to_int(node: Any, low: int, high: int, java_type: str) -> int:
    if isinstance(node, bool) or not isinstance(node, int) or not low <= node <= high:
        raise OffsetFileError(f"Expected `{java_type}` value, received {_node(node)}")
    return node


def _node(node: Any) -> str:
    """A JSON value as Jackson's JsonNode.toString writes it."""
    return json.dumps(node, separators=(",", ":"), ensure_ascii=False)
