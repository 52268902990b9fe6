"""The work behind ``kcli log-dirs --describe``: the brokers asked, DescribeLogDirs, and Kafka 3.9's
lines, the JSON one in the order Java's HashMaps give it."""

from __future__ import annotations

import json
from typing import Any

import typer

from kcli.errors import KcliError, KafkaError, java_exception
from kcli.java_compat import hash_map_order, parse_int, string_hash, topic_partition_hash
from kcli.output import Format, Output

CLIENT_ID = "log-dirs-tool"


class LogDirsError(KcliError):
    """A failure LogDirsCommand reports in its own words (printed as they are)."""


def run(bootstrap_server: str, command_config: str | None, topic_list: str, broker_list: str, fmt: Format, totals: bool = False) -> None:
    from kcli.tools._admin_common import AdminSession, client_settings, load_command_config

    out = Output(fmt)
    try:
        try:
            topics = {t for t in topic_list.split(",") if t}
            brokers = [parse_int(b) for b in dict.fromkeys(broker_list.split(",")) if b]
        except ValueError as exc:
            out.diag(str(exc))  # Integer.valueOf's message, as Kafka prints it
            raise typer.Exit(1) from None
        try:
            settings = client_settings(load_command_config(command_config), bootstrap=bootstrap_server, client_id=CLIENT_ID, warn=out.diag)
            with AdminSession(settings) as session:
                cluster = list(session.run(session.admin.describe_cluster()).nodes)
                missing = [b for b in brokers if b not in cluster]
                if missing:
                    raise LogDirsError(
                        f"ERROR: The given brokers do not exist from --broker-list: {_joined(missing)}. "
                        f"Current existent brokers: {_joined(cluster)}"
                    )
                queried = _hash_set(brokers or cluster)
                if not out.json:
                    out.now("Querying brokers for log directories information")
                answers = session.run(session.admin.describe_log_dirs(queried))
            failure = next((answer for answer in answers.values() if isinstance(answer, KafkaError)), None)
            if failure is not None:
                raise LogDirsError(f"{failure.java_class}: {failure}")
        except LogDirsError as exc:
            out.diag(str(exc))
            raise typer.Exit(exc.exit_code) from None
        except KcliError as exc:
            out.diag(f"Error: {exc}")
            raise typer.Exit(exc.exit_code) from None
        if out.json and totals:
            _print_totals(out, answers, topics)
        elif out.json:
            _print_json(out, answers, topics)
        else:
            out.line(f"Received log directory information from brokers {_joined(queried)}")
            out.line(json.dumps(kafka_json(answers, topics), separators=(",", ":"), ensure_ascii=False))
            if totals:
                _print_totals(out, answers, topics)
    finally:
        out.flush()


def _hash_set(ids: list[int]) -> list[int]:
    """A Java HashSet<Integer> of ``ids`` in its iteration order (Integer.hashCode is the value)."""
    return hash_map_order(ids, lambda i: i, initial_capacity=max(int(len(ids) / 0.75) + 1, 16))


def _joined(ids: list[int]) -> str:
    return ",".join(str(i) for i in _hash_set(ids))


def _ordered(mapping: dict[str, Any]) -> dict[str, Any]:
    """A Java HashMap<String, Object> as Jackson writes it: its keys in hash order."""
    return {key: mapping[key] for key in hash_map_order(mapping)}


def kafka_json(answers: dict[int, Any], topics: set[str]) -> dict[str, Any]:
    """LogDirsCommand.formatAsJson: version 1, each broker's dirs, each dir's partitions."""
    brokers = []
    for broker in hash_map_order(answers, lambda i: i, initial_capacity=len(answers)):
        dirs = answers[broker]
        logdirs = []
        for log_dir in hash_map_order(dirs, string_hash, initial_capacity=len(dirs)):
            description = dirs[log_dir]
            # Kafka filters the dir's HashMap into a fresh one (Collectors.toMap).
            kept = [tp for tp in hash_map_order(description.replicas, lambda tp: topic_partition_hash(tp.topic, tp.partition)) if not topics or tp.topic in topics]
            partitions = [
                _ordered({"partition": str(tp), "size": info.size, "offsetLag": info.offset_lag, "isFuture": info.is_future})
                for tp in hash_map_order(kept, lambda tp: topic_partition_hash(tp.topic, tp.partition))
                for info in (description.replicas[tp],)
            ]
            error = None if description.error is None else java_exception(description.error)
            logdirs.append(_ordered({"logDir": log_dir, "error": error, "partitions": partitions}))
        brokers.append(_ordered({"broker": broker, "logDirs": logdirs}))
    return _ordered({"version": 1, "brokers": brokers})


def _print_json(out: Output, answers: dict[int, Any], topics: set[str]) -> None:
    for broker in sorted(answers):
        for log_dir, description in sorted(answers[broker].items()):
            out.obj(
                {
                    "broker": broker,
                    "log_dir": log_dir,
                    "error": None if description.error is None else java_exception(description.error),
                    "total_bytes": description.total_bytes,
                    "usable_bytes": description.usable_bytes,
                    "partitions": [
                        {"topic": tp.topic, "partition": tp.partition, "size": info.size, "offset_lag": info.offset_lag, "is_future": info.is_future}
                        for tp, info in sorted(description.replicas.items(), key=lambda item: (item[0].topic, item[0].partition))
                        if not topics or tp.topic in topics
                    ],
                }
            )


def _print_totals(out: Output, answers: dict[int, Any], topics: set[str]) -> None:
    from kcli.tools.log_dir_sizes import broker_totals

    for total in broker_totals(answers, topics):
        if out.json:
            out.obj(
                {
                    "broker": total.broker, "log_dirs": total.log_dirs, "offline_log_dirs": total.offline_log_dirs, "partitions": total.partitions,
                    "size": total.size, "future_partitions": total.future_partitions, "future_size": total.future_size,
                }
            )
        else:
            out.line(
                f"Broker: {total.broker}\tLogDirs: {total.log_dirs}\tOfflineLogDirs: {total.offline_log_dirs}\tPartitions: {total.partitions}"
                f"\tSize: {total.size}\tFuturePartitions: {total.future_partitions}\tFutureSize: {total.future_size}"
            )
