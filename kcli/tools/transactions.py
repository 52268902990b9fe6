"""``kcli transactions``: Kafka's kafka-transactions.sh (TransactionsCommand, Kafka 3.9).

The global flags come before the subcommand, as in Kafka::

    kcli transactions --bootstrap-server HOST:PORT [--command-config FILE] COMMAND ...

Commands: ``list [--duration-filter MS]``; ``describe --transactional-id ID``;
``describe-producers --topic T --partition P [--broker-id N]``; ``abort --topic T --partition P``
with ``--start-offset O`` (brokers 3.0+) or ``--producer-id --producer-epoch
--coordinator-epoch``; ``find-hanging`` with ``--broker-id N`` or ``--topic T [--partition P]``
and ``--max-transaction-timeout`` (minutes, default 15).

Plain output is Kafka's: a header row and one row per item, every cell padded to its column's
width and followed by a tab. Failures are Kafka's lines on stderr (``Failed to ...: <cause>.
Enable debug logging for additional detail.``) and exit 1; a wrong command line exits 2.

``--output json`` writes one JSON object per row instead, keyed by Kafka's column names, with
numbers as numbers and ``null`` where Kafka prints ``None``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.output import Format
from kcli.tools.int_options import INT16, INT32, INT64

transactions_app = typer.Typer(
    name="transactions",
    help="This tool is used to analyze the transactional state of producers in the cluster. It can be used to detect and recover from hanging transactions.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

TopicOpt = Annotated[Optional[str], typer.Option("--topic", help="topic name")]
PartitionOpt = Annotated[Optional[int], typer.Option("--partition", help="partition number", click_type=INT32)]


def register(app: typer.Typer) -> None:
    app.add_typer(transactions_app)


@transactions_app.callback()
def transactions(
    ctx: typer.Context,
    bootstrap_server: Annotated[Optional[str], typer.Option("--bootstrap-server", metavar="host:port", help="hostname and port for the broker to connect to, in the form `host:port`  (multiple comma-separated entries can be given)")] = None,
    command_config: Annotated[Optional[str], typer.Option("--command-config", metavar="FILE", help="property file containing configs to be passed to admin client")] = None,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's tab-separated table; json: one JSON object per row.")] = Format.plain,
) -> None:
    """This tool is used to analyze the transactional state of producers in the cluster. It can be used to detect and recover from hanging transactions."""
    ctx.obj = (bootstrap_server, command_config, output)


def _run(ctx: typer.Context, command: str, **args: object) -> None:
    from kcli.tools import transactions_command

    bootstrap_server, command_config, output = ctx.obj
    transactions_command.run(command, bootstrap_server, command_config, output, args)


@transactions_app.command("list", help="list transactions")
def list_(
    ctx: typer.Context,
    duration_filter: Annotated[Optional[int], typer.Option("--duration-filter", help="Duration (in millis) to filter by: if < 0, all transactions will be returned; otherwise, only transactions running longer than this duration will be returned", click_type=INT64)] = None,
) -> None:
    _run(ctx, "list", duration_filter=duration_filter)


@transactions_app.command("describe", help="describe the state of an active transactional-id")
def describe(
    ctx: typer.Context,
    transactional_id: Annotated[Optional[str], typer.Option("--transactional-id", help="transactional id")] = None,
) -> None:
    _run(ctx, "describe", transactional_id=transactional_id)


@transactions_app.command("describe-producers", help="describe the states of active producers for a topic partition")
def describe_producers(
    ctx: typer.Context,
    broker_id: Annotated[Optional[int], typer.Option("--broker-id", help="optional broker id to describe the producer state on a specific replica", click_type=INT32)] = None,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
) -> None:
    _run(ctx, "describe-producers", broker_id=broker_id, topic=topic, partition=partition)


@transactions_app.command("abort", help="abort a hanging transaction (requires administrative privileges)")
def abort(
    ctx: typer.Context,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    start_offset: Annotated[Optional[int], typer.Option("--start-offset", help="start offset of the transaction to abort (brokers on versions 3.0 and above)", click_type=INT64)] = None,
    producer_id: Annotated[Optional[int], typer.Option("--producer-id", help="producer id (brokers on versions older than 3.0)", click_type=INT64)] = None,
    producer_epoch: Annotated[Optional[int], typer.Option("--producer-epoch", help="producer epoch (brokers on versions older than 3.0)", click_type=INT16)] = None,
    coordinator_epoch: Annotated[Optional[int], typer.Option("--coordinator-epoch", help="coordinator epoch (brokers on versions older than 3.0)", click_type=INT32)] = None,
) -> None:
    _run(ctx, "abort", topic=topic, partition=partition, start_offset=start_offset, producer_id=producer_id,
         producer_epoch=producer_epoch, coordinator_epoch=coordinator_epoch)


@transactions_app.command("find-hanging", help="find hanging transactions")
def find_hanging(
    ctx: typer.Context,
    broker_id: Annotated[Optional[int], typer.Option("--broker-id", help="broker id to search for hanging transactions", click_type=INT32)] = None,
    max_transaction_timeout: Annotated[int, typer.Option("--max-transaction-timeout", help="maximum transaction timeout in minutes to limit the scope of the search", click_type=INT32)] = 15,
    topic: Annotated[Optional[str], typer.Option("--topic", help="topic name to limit search to")] = None,
    partition: PartitionOpt = None,
) -> None:
    _run(ctx, "find-hanging", broker_id=broker_id, max_transaction_timeout=max_transaction_timeout, topic=topic, partition=partition)
