"""``kcli cluster``: the Kafka quickstart's pseudo-cluster in one command, and its state.

``kcli cluster start`` runs ZooKeeper and N brokers on this machine (the work is in
``kcli.tools.cluster_runner``); ``kcli cluster status`` reads the brokers, the controller, the
offline and the under-replicated partitions from ZooKeeper (``kcli.tools.cluster_status``). This
module only declares the commands.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.output import Format

cluster_app = typer.Typer(
    name="cluster",
    help="Run a ZooKeeper and several brokers on this machine, and show a ZooKeeper-mode cluster's state.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(cluster_app)


@cluster_app.command(
    "start",
    help="Start ZooKeeper and N brokers on 127.0.0.1 in the foreground, as the quickstart's "
    "server-N.properties (broker N on port BASE+N, log.dirs DIR/kafka-logsN, ZooKeeper's dataDir "
    "DIR/zookeeper); Ctrl-C or SIGTERM stops the brokers, then ZooKeeper.",
)
def start(
    brokers: Annotated[int, typer.Option("--brokers", min=1, max=1000, help="How many brokers (ids 0..N-1).")] = 3,
    zookeeper_port: Annotated[int, typer.Option("--zookeeper-port", min=1, max=65535, help="ZooKeeper's client port.")] = 2181,
    base_port: Annotated[int, typer.Option("--base-port", min=1, max=65535, help="Broker N listens on BASE+N.")] = 9092,
    directory: Annotated[str, typer.Option("--dir", help="Where the log dirs, ZooKeeper's data and the cluster's config and log files go.")] = "/tmp",
    override: Annotated[Optional[list[str]], typer.Option("--override", help="A broker property for every broker (key=value, repeatable), e.g. zookeeper.session.timeout.ms=6000.")] = None,
) -> None:
    from kcli.tools.cluster_runner import ClusterLayout, run_cluster

    layout = ClusterLayout(brokers=brokers, zookeeper_port=zookeeper_port, base_port=base_port, directory=directory)
    raise typer.Exit(run_cluster(layout, override or []))


@cluster_app.command(
    "status",
    help="List the registered brokers, the controller, the offline partitions (leader -1 or "
    "not a live broker) and the under-replicated partitions (ISR smaller than the assignment), "
    "as ZooKeeper holds them.",
)
def status(
    zookeeper: Annotated[str, typer.Option("--zookeeper", help="The cluster's ZooKeeper, HOST:PORT[/chroot].")] = "localhost:2181",
    output: Annotated[Format, typer.Option("--output", help="plain: lines; json: one JSON object.")] = Format.plain,
) -> None:
    from kcli.output import Output
    from kcli.tools.cluster_status import print_status

    raise typer.Exit(print_status(zookeeper, Output(output)))
