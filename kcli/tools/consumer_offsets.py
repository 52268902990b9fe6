"""``kcli consumer-offsets``: consumer offsets between ZooKeeper storage and Kafka storage.

The tool for offsets the old (ZooKeeper) consumer left under ``/consumers``, since Kafka removed
ExportZkOffsets/ImportZkOffsets and the old consumer in 2.0:

    export   --from zookeeper|kafka [--group G ...] [--output-file F] [--format zk|csv|json]
    import   --to zookeeper|kafka --input-file F [--format zk|csv|json]
    migrate  (--group G ... | --all-groups) --to kafka|zookeeper [--execute] [--verify]
             [--force] [--allow-rewind]

``--zookeeper`` (ExportZkOffsets' ``--zkconnect`` is accepted too) names the ZooKeeper ensemble,
with the cluster's chroot if it has one; ``--bootstrap-server`` the Kafka cluster. The ``zk``
format is ExportZkOffsets' ``/consumers/<group>/offsets/<topic>/<partition>:<offset>`` lines.
Exit codes: 0 ok, 1 when any group or partition failed (each reported on one line), 2 for a
wrong command line. The work is in ``kcli.tools.consumer_offsets_command``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.int_options import INT32
from kcli.tools.options import BootstrapServerOpt, CommandConfigOpt

consumer_offsets_app = typer.Typer(
    name="consumer-offsets",
    help="Export, import and migrate consumer offsets between ZooKeeper storage (/consumers) and Kafka storage.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

ZooKeeperOpt = Annotated[
    Optional[str],
    typer.Option("--zookeeper", "--zkconnect", help="The ZooKeeper connect string, host:port[,host:port][/chroot]."),
]
GroupOpt = Annotated[Optional[list[str]], typer.Option("--group", help="A consumer group (repeatable).")]
AllGroupsOpt = Annotated[bool, typer.Option("--all-groups", help="Every group of the source store.")]
TimeoutOpt = Annotated[int, typer.Option("--timeout", click_type=INT32, help="Milliseconds to wait for ZooKeeper and the brokers.")]
FormatOpt = Annotated[str, typer.Option("--format", help="zk: ExportZkOffsets' /consumers/G/offsets/T/P:OFFSET lines; csv: group,topic,partition,offset; json: one object a line.")]


def register(app: typer.Typer) -> None:
    app.add_typer(consumer_offsets_app)


def _options(zookeeper, bootstrap_server, command_config, group, all_groups, timeout):
    from kcli.errors import UsageError
    from kcli.tools.consumer_offsets_command import Options

    if group and all_groups:
        raise UsageError('Option "[group]" can\'t be used with option "[all-groups]"')
    if timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {timeout}")
    return Options(zookeeper, bootstrap_server, command_config, list(group or ()), all_groups, timeout)


def _store(value: str, option: str, allowed: tuple[str, ...] = ("zookeeper", "kafka")) -> str:
    from kcli.errors import UsageError

    if value not in allowed:
        raise UsageError(f"{option} must be one of {', '.join(allowed)}, got '{value}'")
    return value


def _format(value: str) -> str:
    from kcli.errors import UsageError
    from kcli.tools.offset_files import FORMATS

    if value not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got '{value}'")
    return value


@consumer_offsets_app.command("export", help="Write the stored offsets of groups (every group without --group) to a file or stdout.")
def export(
    source: Annotated[str, typer.Option("--from", help="The store to read: zookeeper or kafka.")] = "zookeeper",
    zookeeper: ZooKeeperOpt = None,
    bootstrap_server: BootstrapServerOpt = None,
    command_config: CommandConfigOpt = None,
    group: GroupOpt = None,
    all_groups: AllGroupsOpt = False,
    output_file: Annotated[Optional[str], typer.Option("--output-file", help="The file to write (stdout without it, or with -).")] = None,
    fmt: FormatOpt = "zk",
    timeout: TimeoutOpt = 30000,
) -> None:
    from kcli.tools.consumer_offsets_command import export as run

    o = _options(zookeeper, bootstrap_server, command_config, group, all_groups, timeout)
    raise typer.Exit(run(o, _store(source, "--from"), _format(fmt), output_file))


@consumer_offsets_app.command("import", help="Store the offsets a file holds, each group as one batch; a file with a malformed line imports nothing.")
def import_(
    input_file: Annotated[Optional[str], typer.Option("--input-file", help="REQUIRED: the file to read.")] = None,
    target: Annotated[str, typer.Option("--to", help="The store to write: zookeeper or kafka.")] = "zookeeper",
    zookeeper: ZooKeeperOpt = None,
    bootstrap_server: BootstrapServerOpt = None,
    command_config: CommandConfigOpt = None,
    fmt: FormatOpt = "zk",
    timeout: TimeoutOpt = 30000,
) -> None:
    from kcli.errors import UsageError
    from kcli.tools.consumer_offsets_command import import_ as run

    if input_file is None:
        raise UsageError("Missing required option --input-file")
    o = _options(zookeeper, bootstrap_server, command_config, None, False, timeout)
    raise typer.Exit(run(o, _store(target, "--to"), _format(fmt), input_file))


@consumer_offsets_app.command(
    "migrate",
    help="Copy groups' offsets to the other store (a dry run without --execute), clamped to the logs' ranges, "
    "never backwards unless --allow-rewind, each group as one batch; --verify compares both stores instead.",
)
def migrate(
    target: Annotated[Optional[str], typer.Option("--to", help="The store to migrate to: kafka (from zookeeper) or zookeeper (from kafka).")] = None,
    zookeeper: ZooKeeperOpt = None,
    bootstrap_server: BootstrapServerOpt = None,
    command_config: CommandConfigOpt = None,
    group: GroupOpt = None,
    all_groups: AllGroupsOpt = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only print the plan (the default).")] = False,
    execute: Annotated[bool, typer.Option("--execute", help="Write the planned offsets.")] = False,
    verify: Annotated[bool, typer.Option("--verify", help="Compare both stores partition by partition and print the differences (exit 1 if any).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Migrate groups that still have live members.")] = False,
    allow_rewind: Annotated[bool, typer.Option("--allow-rewind", help="Let an offset move backwards in the target store.")] = False,
    timeout: TimeoutOpt = 30000,
) -> None:
    from kcli.errors import UsageError
    from kcli.tools.consumer_offsets_command import migrate as run

    o = _options(zookeeper, bootstrap_server, command_config, group, all_groups, timeout)
    if not group and not all_groups:
        raise UsageError("One of --group or --all-groups is required")
    if dry_run and execute:
        raise UsageError('Option "[dry-run]" can\'t be used with option "[execute]"')
    if verify and execute:
        raise UsageError('Option "[verify]" can\'t be used with option "[execute]"')
    if verify:
        target = target or "kafka"
    elif target is None:
        raise UsageError("Missing required option --to (kafka or zookeeper)")
    raise typer.Exit(run(o, _store(target, "--to"), execute=execute, verify=verify, force=force, allow_rewind=allow_rewind))
