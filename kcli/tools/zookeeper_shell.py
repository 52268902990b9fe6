"""``kcli zookeeper-shell HOST:PORT[/chroot] [command args...]``: Kafka's zookeeper-shell.sh.

The work is in ``kcli.tools.zk_cli``; this module only declares the command. Everything after the
connect string is ZooKeeper's (its ``-timeout`` and ``-r`` flags, then the command and its own
options such as ``ls -s``), so it reaches the shell untouched.
"""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command(
        "zookeeper-shell",
        help="Run ZooKeeper's command-line client (zkCli) against HOST:PORT[/chroot]: one command "
        "(ls, get, stat, create, set, delete, deleteall, getAcl, sync, ...) and exit, or an "
        "interactive shell reading commands from stdin.",
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )(zookeeper_shell)


def zookeeper_shell(
    ctx: typer.Context,
    connect: Annotated[str | None, typer.Argument(metavar="HOST:PORT[/chroot]", help="ZooKeeper connect string.", show_default=False)] = None,
    args: Annotated[list[str] | None, typer.Argument(metavar="[command args...]", help="A zkCli command and its arguments; none for the interactive shell.", show_default=False)] = None,
) -> None:
    import sys

    import click

    from kcli.tools.zk_cli import run

    if connect is not None and connect.startswith("-"):
        # Unknown options are the shell's once the connect string is given; before it, kcli's.
        raise click.NoSuchOption(connect, ctx=ctx)

    sys.exit(run(connect, args or []))
