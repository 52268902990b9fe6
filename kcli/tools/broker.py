"""``kcli broker start``: a Kafka-compatible broker in the foreground (kafka-server-start.sh).

The configuration is a ``server.properties`` file with Kafka's keys (given as the argument, as
kafka-server-start.sh takes it, or with ``--config``), then ``--override key=value`` in order.
Logs go to stderr in Kafka's layout. SIGTERM or SIGINT shuts the broker down cleanly.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

broker_app = typer.Typer(
    name="broker",
    help="Run a Kafka-compatible broker.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(broker_app)


@broker_app.command("start", help="Start a broker in the foreground: metadata embedded, or in ZooKeeper with zookeeper.connect.")
def start(
    properties: Annotated[Optional[str], typer.Argument(metavar="[server.properties]", help="Kafka broker properties file.")] = None,
    config: Annotated[Optional[str], typer.Option("--config", "-c", help="Kafka broker properties file (same as the argument).")] = None,
    override: Annotated[Optional[list[str]], typer.Option("--override", help="Optional property that should override values set in server.properties file (key=value, repeatable).")] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="Log level on stderr: DEBUG, INFO, WARN or ERROR.")] = "INFO",
) -> None:
    from kcli.broker.run import run_broker
    from kcli.errors import UsageError

    if properties and config and properties != config:
        raise UsageError("give the properties file once: as the argument or with --config")
    run_broker(properties or config, override or [], log_level)
