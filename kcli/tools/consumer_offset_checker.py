"""``kcli consumer-offset-checker``: Kafka's ConsumerOffsetChecker (kafka-consumer-offset-checker.sh,
0.8-0.11), for old-consumer groups.

Flags as Kafka's: ``--zookeeper`` (default localhost:2181), ``--group`` (required), ``--topic``
(comma-separated; every topic the group owns partitions of without it), ``--socket.timeout.ms``,
``--retry.backoff.ms`` (accepted; kcli's client has its own timeouts), ``--broker-info``. Prints
``Group Topic Pid Offset logSize Lag Owner`` rows (``%-15s %-30s %-3s %-15s %-15s %-15s %s``), the
offset Kafka-stored when the group has one, else ZooKeeper-stored; a failure is Kafka's line
``Exiting due to: <message>.`` (exit 1). The work is in ``kcli.tools.zk_consumer_groups``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.int_options import INT32


def register(app: typer.Typer) -> None:
    app.command("consumer-offset-checker", help="Check the offset of your consumers (old, ZooKeeper-based consumer groups).",
                no_args_is_help=True)(consumer_offset_checker)


def consumer_offset_checker(
    group: Annotated[Optional[str], typer.Option("--group", help="Consumer group.")] = None,
    zookeeper: Annotated[str, typer.Option("--zookeeper", help="ZooKeeper connect string.")] = "localhost:2181",
    topic: Annotated[Optional[str], typer.Option("--topic", help="Comma-separated list of consumer topics (all topics if absent).")] = None,
    socket_timeout_ms: Annotated[int, typer.Option("--socket.timeout.ms", click_type=INT32, help="Socket timeout to use when querying for offsets.")] = 6000,
    retry_backoff_ms: Annotated[int, typer.Option("--retry.backoff.ms", click_type=INT32, help="Retry back-off to use for failed offset queries.")] = 3000,
    broker_info: Annotated[bool, typer.Option("--broker-info", help="Print broker info")] = False,
) -> None:
    from kcli.errors import UsageError
    from kcli.tools.zk_consumer_groups import offset_checker

    if group is None:
        raise UsageError("Missing required argument \"[group]\"")
    topics = [t for t in topic.split(",") if t] if topic is not None else None
    code = offset_checker(zookeeper, group, topics, broker_info, timeout_ms=max(socket_timeout_ms, 1000) * 5)
    if code:
        raise typer.Exit(code)
