"""The options many tools share, declared once (typer ``Annotated`` aliases): a flag spelled the
same way means the same thing, with the same help, in every tool."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

BootstrapServerOpt = Annotated[
    Optional[str],
    typer.Option("--bootstrap-server", help="The Kafka server(s) to connect to, HOST1:PORT1,HOST2:PORT2."),
]
BrokerListOpt = Annotated[
    Optional[str],
    typer.Option("--broker-list", help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified."),
]
CommandConfigOpt = Annotated[
    Optional[str],
    typer.Option("--command-config", help="A properties file of admin client settings (Kafka's --command-config)."),
]
