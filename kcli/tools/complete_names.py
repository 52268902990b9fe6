"""``kcli complete-names``: topic or group names for the shell completion scripts (hidden).

The completion scripts call it when the word being completed follows ``--topic`` or ``--group``
and the command line names a broker (``--bootstrap-server``, or 2.x's ``--broker-list``). It
prints one name per line. A completion must never get in the way: every failure (no broker
reachable within the short timeout, an error answer) prints nothing and exits 0.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kcli.tools.options import BootstrapServerOpt

KINDS = ("topics", "groups")


def register(app: typer.Typer) -> None:
    app.command("complete-names", hidden=True)(complete_names)


def complete_names(
    kind: Annotated[str, typer.Argument(help="topics or groups")],
    bootstrap_server: BootstrapServerOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds before giving up, silently.")] = 1.5,
) -> None:
    if kind not in KINDS or not bootstrap_server:
        return
    import asyncio

    try:
        names = asyncio.run(asyncio.wait_for(_names(kind, bootstrap_server, timeout), timeout))
    except Exception:  # a completion stays silent, whatever went wrong
        return
    if names:
        from kcli.output import Output

        out = Output()
        out.lines(sorted(names))
        out.flush()


async def _names(kind: str, bootstrap: str, timeout: float) -> set[str]:
    from kcli.client.group_admin import GroupAdmin
    from kcli.client.network_client import NetworkClient

    async with NetworkClient(bootstrap, request_timeout=timeout, retries=0) as cluster:
        if kind == "topics":
            return set((await cluster.refresh()).topics)
        return {g.group_id for g in await GroupAdmin(cluster).list_groups()}
