"""``kcli zookeeper start``: a ZooKeeper server in the foreground (zookeeper-server-start.sh).

The work is in ``kcli.tools.zookeeper_server``; this module only declares the command.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

zookeeper_app = typer.Typer(
    name="zookeeper",
    help="Run a ZooKeeper server (Debian's zookeeper package) for a multi-broker cluster.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(zookeeper_app)


@zookeeper_app.command(
    "start",
    help="Start ZooKeeper in the foreground with a zookeeper.properties file "
    "(default: Kafka's config/zookeeper.properties: dataDir=/tmp/zookeeper, clientPort=2181).",
)
def start(
    properties: Annotated[Optional[str], typer.Argument(metavar="[zookeeper.properties]", help="ZooKeeper properties file.")] = None,
) -> None:
    from kcli.tools.zookeeper_server import main

    main(properties)
