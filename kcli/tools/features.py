"""``kcli features``: Kafka's kafka-features.sh (FeatureCommand), its ``describe`` with Kafka 3.9's
output.

The connection flags come before the command, as in Kafka 3.9::

    kcli features --bootstrap-server HOST:PORT [--command-config FILE] describe

Kafka 2.8-3.x's spelling, ``--describe`` among the flags, is accepted too. One line per feature
the broker supports, sorted by name, from its ApiVersions answer::

    Feature: metadata.version\tSupportedMinVersion: 3.0-IV1\tSupportedMaxVersion: 3.9-IV0\tFinalizedVersionLevel: 3.9-IV0\tEpoch: 5

Levels of ``metadata.version`` print as the Kafka release they stand for (``UNKNOWN n`` for a
level Kafka 3.9 does not know), other features' levels as numbers; a feature not finalized prints
level 0, and ``Epoch: -`` when the broker gives no finalized epoch. A broker that advertises no
features (kcli's, and ZooKeeper-mode Kafka 2.8) prints nothing. ``upgrade``, ``downgrade`` and
``disable`` (UpdateFeatures) are not offered: kcli's broker has no feature to change.

``--output json`` writes one object per feature: ``{"feature": str, "supported_min_version": int,
"supported_max_version": int, "finalized_version_level": int, "epoch": int | null}``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.output import Format

features_app = typer.Typer(
    name="features",
    help="This tool manages feature flags in Kafka.",
    no_args_is_help=True,
    invoke_without_command=True,
    pretty_exceptions_enable=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(features_app)


@features_app.callback()
def features(
    ctx: typer.Context,
    bootstrap_server: Annotated[Optional[str], typer.Option("--bootstrap-server", help="A comma-separated list of host:port pairs to use for establishing the connection to the Kafka cluster.")] = None,
    bootstrap_controller: Annotated[Optional[str], typer.Option("--bootstrap-controller", help="A comma-separated list of host:port pairs to use for establishing the connection to the KRaft quorum.")] = None,
    command_config: Annotated[Optional[str], typer.Option("--command-config", help="Property file containing configs to be passed to Admin Client.")] = None,
    describe_flag: Annotated[bool, typer.Option("--describe", help="Describe supported and finalized features (Kafka 2.8-3.x's spelling of the describe command).")] = False,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's lines; json: one JSON object per feature.")] = Format.plain,
) -> None:
    from kcli.errors import UsageError

    ctx.obj = (bootstrap_server, bootstrap_controller, command_config, output)
    if ctx.invoked_subcommand is None:
        if not describe_flag:
            raise UsageError("a command is required: describe")
        _describe(ctx)


@features_app.command("describe", help="Describes the current active feature flags.")
def describe(ctx: typer.Context) -> None:
    _describe(ctx)


def _describe(ctx: typer.Context) -> None:
    from kcli.errors import UsageError

    bootstrap_server, bootstrap_controller, command_config, output = ctx.obj
    if (bootstrap_server is None) == (bootstrap_controller is None):
        if bootstrap_server is None:
            raise UsageError("one of the arguments --bootstrap-server --bootstrap-controller is required")
        raise UsageError("argument --bootstrap-controller: not allowed with argument --bootstrap-server")
    from kcli.tools.features_command import describe as run

    run(bootstrap_server or bootstrap_controller, command_config, output)
