"""``kcli consumer-groups``: Kafka's kafka-consumer-groups.sh (ConsumerGroupCommand, Kafka 3.9).

Exactly one action: ``--list``, ``--describe``, ``--delete``, ``--reset-offsets`` or
``--delete-offsets``, with Kafka's flags, checks and messages. Plain output is Kafka's, line for
line: the column-aligned tables (each column as wide as its longest value, at least 15; every
column but the last padded), each table after a blank line; state notes ("Consumer group 'g' has
no active members.") on stderr. Where Kafka 3.9's Java port prints a table without line breaks
(--reset-offsets, --delete-offsets) or member assignments without topic names (--members
--verbose), kcli prints what Kafka 2.x and 4.0 print. Rows are in a fixed order: members by
number of assigned partitions (most first), each member's partitions by topic and partition,
then committed partitions no member owns; Kafka iterates hash maps here.

kcli's conventions on top: errors are one line on stderr starting with ``Error:`` (Kafka prints
some on stdout; a failed broker call reads "Executing consumer group command failed due to ...",
as in Kafka), and the exit code is 1 when any group or partition failed (a group that does not
exist, a group too active to reset, a failed deletion), 2 for a wrong command line. On a terminal
the tables are drawn with rich; on a pipe they are Kafka's plain text.

``--output json`` writes one JSON object per line instead (stable shapes; ``null`` where Kafka
prints ``-``):

    --list               {"group": "g", "state": "Stable", "type": "Classic", "protocolType": "consumer"}
                         (state and type are null when the broker's ListGroups version lacks them)
    --describe [--offsets]
                         {"group": "g", "state": "Stable",
                          "coordinator": {"id": 0, "host": "h", "port": 9092},
                          "partitions": [{"topic": "t", "partition": 0, "currentOffset": 5,
                                          "logEndOffset": 9, "lag": 4, "consumerId": "c-1",
                                          "host": "/10.0.0.1", "clientId": "c"}]}
    --describe --members {"group": "g", "state": "Stable", "coordinator": {...},
                          "members": [{"consumerId": "c-1", "groupInstanceId": null,
                                       "host": "/10.0.0.1", "clientId": "c", "partitions": 2,
                                       "assignment": [{"topic": "t", "partition": 0}, ...]}]}
    --describe --state   {"group": "g", "coordinator": {...}, "assignmentStrategy": "range",
                          "state": "Stable", "members": 1}
    --reset-offsets      {"group": "g", "topic": "t", "partition": 0, "newOffset": 3}  (one per partition)
    --delete             {"group": "g", "deleted": true, "error": null}
    --delete-offsets     {"group": "g", "topic": "t", "partition": 0, "error": null}
                         (partition null for a topic whose partitions could not be found)

A group that does not exist (Dead) has no object; its error goes to stderr.

kcli's own, with ``--describe`` (offsets): ``--lag-time`` adds a ``LAG-TIME-MS`` column after
``LAG`` (``"lagTimeMs"`` in JSON): how old, in ms, the oldest record the group has not consumed
is, from the timestamp of the record at its committed offset (``consumer_groups_lag``); 0 when
nothing is left, ``-`` when unknown. ``--watch SECONDS`` describes again every SECONDS until
stopped (Ctrl-C: exit 130; SIGTERM: 143), with a ``TREND`` column last (``"lagChange"``): the
lag's change since the previous round (``+N``, ``-N``, ``0``; ``-`` in the first). On a terminal
the screen is redrawn each round; otherwise the tables follow one another.

``--delete --inactive-for DURATION`` (kcli's own, with ``--all-groups`` or ``--group``s to choose
from) deletes the Empty groups whose newest offset commit is older than DURATION
(``consumer_groups_prune`` says what counts as activity); ``--dry-run`` prints the plan only.
Plain: ``GROUP``, ``STATE``, ``NEWEST-COMMIT`` (ISO 8601, UTC) and ``INACTIVE-FOR`` (ms) of each
group in the plan, then Kafka's deletion lines (or ``Dry run: N consumer group(s) would be
deleted.``); JSON: ``{"group", "state", "newestCommit": ms, "inactiveMs", "deleted": bool,
"error": str | null}`` per group.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typer.core import TyperCommand

from kcli.errors import UsageError
from kcli.output import Format, Output
from kcli.tools.int_options import INT64
from kcli.tools.options import BootstrapServerOpt, CommandConfigOpt

if TYPE_CHECKING:
    from kcli.client.group_admin import GroupAdmin, GroupDescription, TopicPartition
    from kcli.client.sync import SyncRunner

USAGE = "This tool helps to list all consumer groups, describe a consumer group, delete consumer group info, or reset consumer group offsets."
MISSING = "-"
DRY_RUN_WARNING = (
    "WARN: No action will be performed as the --execute option is missing."
    "In a future major release, the default behavior of this command will be to prompt the user before "
    "executing the reset rather than doing a dry run. You should add the --dry-run option explicitly "
    "if you are scripting this command and want to keep the current default behavior without prompting."
)
ACTIONS_ERROR = "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets"
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
TYPES = ("Consumer", "Classic")
REBALANCING = frozenset({"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"})
INACTIVE = frozenset({"Empty", "Dead"})
COMMAND_LOGGER = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
OPTIONAL_VALUE_OPTIONS = ("--state", "--type")

NL = "\n"
RESET_OFFSETS_DOC = (
    "Reset offsets of consumer group. Supports one consumer group at the time, and instances should be inactive" + NL
    + "Has 2 execution options: --dry-run (the default) to plan which offsets to reset, and --execute to update the offsets. "
    "Additionally, the --export option is used to export the results to a CSV format." + NL
    + "You must choose one of the following reset specifications: --to-datetime, --by-duration, --to-earliest, "
    "--to-latest, --shift-by, --from-file, --to-current, --to-offset." + NL
    + "To define the scope use --all-topics or --topic. One scope must be specified unless you use '--from-file'."
)


class _OptionalValueCommand(TyperCommand):
    """Lets ``--state`` and ``--type`` appear with or without a value, as jopt-simple's optional
    arguments do: without one (next token is an option, or none follows) they get ''."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, fill_optional_values(args))


def fill_optional_values(args: list[str]) -> list[str]:
    filled: list[str] = []
    for i, arg in enumerate(args):
        filled.append(arg)
        if arg == "--":
            filled.extend(args[i + 1:])
            break
        if arg in OPTIONAL_VALUE_OPTIONS and (i + 1 == len(args) or args[i + 1].startswith("--")):
            filled.append("")
    return filled


def register(app: typer.Typer) -> None:
    app.command("consumer-groups", help=USAGE, no_args_is_help=True, cls=_OptionalValueCommand)(consumer_groups)


def consumer_groups(
    bootstrap_server: BootstrapServerOpt = None,
    command_config: CommandConfigOpt = None,
    list_groups: Annotated[bool, typer.Option("--list", help="List all consumer groups.")] = False,
    describe: Annotated[bool, typer.Option("--describe", help="Describe consumer group and list offset lag (number of messages not yet processed) related to given group.")] = False,
    delete: Annotated[bool, typer.Option("--delete", help="Pass in groups to delete topic partition offsets and ownership information over the entire consumer group. For instance --group g1 --group g2")] = False,
    reset_offsets: Annotated[bool, typer.Option("--reset-offsets", help=RESET_OFFSETS_DOC)] = False,
    delete_offsets: Annotated[bool, typer.Option("--delete-offsets", help="Delete offsets of consumer group. Supports one consumer group at the time, and multiple topics.")] = False,
    group: Annotated[Optional[list[str]], typer.Option("--group", help="The consumer group we wish to act on.")] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="Apply to all consumer groups.")] = False,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="The topic whose consumer group information should be deleted or topic whose should be included in the reset offset process. In `reset-offsets` case, partitions can be specified using this format: `topic1:0,1,2`, where 0,1,2 are the partition to be included in the process. Reset-offsets also supports multiple topic inputs.")] = None,
    all_topics: Annotated[bool, typer.Option("--all-topics", help="Consider all topics assigned to a group in the `reset-offsets` process.")] = False,
    members: Annotated[bool, typer.Option("--members", help="Describe members of the group. This option may be used with '--describe' and '--bootstrap-server' options only.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="Provide additional information, if any, when describing the group. This option may be used with '--offsets'/'--members'/'--state' and '--bootstrap-server' options only.")] = False,
    offsets: Annotated[bool, typer.Option("--offsets", help="Describe the group and list all topic partitions in the group along with their offset lag. This is the default sub-action of and may be used with '--describe' and '--bootstrap-server' options only.")] = False,
    state: Annotated[Optional[str], typer.Option("--state", metavar="[STATES]", help="When specified with '--describe', includes the state of the group. When specified with '--list', it displays the state of all groups. It can also be used to list groups with specific states (comma separated, e.g. stable,empty).")] = None,
    group_type: Annotated[Optional[str], typer.Option("--type", metavar="[TYPES]", help="When specified with '--list', it displays the types of all the groups. It can also be used to list groups with specific types (comma separated, e.g. classic,consumer).")] = None,
    timeout: Annotated[int, typer.Option("--timeout", click_type=INT64, help="The timeout that can be set for some use cases. For example, it can be used when describing the group to specify the maximum amount of time in milliseconds to wait before the group stabilizes (when the group is just created, or is going through some changes).")] = 5000,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show results without executing changes on Consumer Groups. Supported operations: reset-offsets.")] = False,
    execute: Annotated[bool, typer.Option("--execute", help="Execute operation. Supported operations: reset-offsets.")] = False,
    export: Annotated[bool, typer.Option("--export", help="Export operation execution to a CSV file. Supported operations: reset-offsets.")] = False,
    to_offset: Annotated[Optional[int], typer.Option("--to-offset", click_type=INT64, help="Reset offsets to a specific offset.")] = None,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="Reset offsets to earliest offset.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="Reset offsets to latest offset.")] = False,
    to_current: Annotated[bool, typer.Option("--to-current", help="Reset offsets to current offset.")] = False,
    shift_by: Annotated[Optional[int], typer.Option("--shift-by", click_type=INT64, help="Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.")] = None,
    to_datetime: Annotated[Optional[str], typer.Option("--to-datetime", help="Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'")] = None,
    by_duration: Annotated[Optional[str], typer.Option("--by-duration", help="Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'")] = None,
    from_file: Annotated[Optional[str], typer.Option("--from-file", help="Reset offsets to values defined in CSV file.")] = None,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's text; json: one JSON object per group (or partition), shapes in the module's documentation.")] = Format.plain,
    zookeeper: Annotated[Optional[str], typer.Option("--zookeeper", help="Old (ZooKeeper-based) consumer groups, as Kafka 1.1's tool showed them: --list, or --describe --group G. REQUIRED unless --bootstrap-server is given.")] = None,
    lag_time: Annotated[bool, typer.Option("--lag-time", help="With --describe (kcli's own): a LAG-TIME-MS column, how old the oldest unconsumed record is (its timestamp, read at the committed offset).")] = False,
    inactive_for: Annotated[Optional[str], typer.Option("--inactive-for", metavar="DURATION", help="With --delete (kcli's own): delete only the Empty groups whose newest offset commit (their last activity: the newest commitTimestamp in __consumer_offsets; a group without any commit is kept) is older than DURATION (7d, 36h, 30m, 45s, 500ms or PT36H); --dry-run prints the plan.")] = None,
    watch: Annotated[Optional[float], typer.Option("--watch", metavar="SECONDS", help="With --describe (kcli's own): describe again every SECONDS until stopped, with the lag's change (TREND); redrawn on a terminal.")] = None,
) -> None:
    if zookeeper is not None:
        _old_consumer_groups(zookeeper, bootstrap_server, list_groups, describe, list(group or []),
                             any((delete, reset_offsets, delete_offsets)))
        return
    options = Options(
        bootstrap_server=bootstrap_server, command_config=command_config, list_groups=list_groups, describe=describe,
        delete=delete, reset_offsets=reset_offsets, delete_offsets=delete_offsets, groups=list(group or []),
        all_groups=all_groups, topics=list(topic or []), all_topics=all_topics, members=members, verbose=verbose,
        offsets=offsets, state=state, group_type=group_type, timeout_ms=timeout, dry_run=dry_run, execute=execute,
        export=export, to_offset=to_offset, to_earliest=to_earliest, to_latest=to_latest, to_current=to_current,
        shift_by=shift_by, to_datetime=to_datetime, by_duration=by_duration, from_file=from_file, json=output is Format.json,
        lag_time=lag_time, watch=watch, inactive_for=inactive_for,
    )
    check_args(options)
    if not run(options):
        raise typer.Exit(1)


def _old_consumer_groups(zookeeper: str, bootstrap_server: str | None, list_groups: bool, describe: bool,
                         groups: list[str], other_action: bool) -> None:
    """``--zookeeper``: the groups of Kafka's old consumer (kcli.tools.zk_consumer_groups)."""
    if bootstrap_server is not None:
        raise UsageError('Option "[bootstrap-server]" can\'t be used with option "[zookeeper]"')
    if other_action:
        raise UsageError("With --zookeeper, kcli supports the actions --list and --describe")
    if list_groups == describe:
        raise UsageError("Command must include exactly one action: --list, --describe")
    if describe and len(groups) != 1:
        raise UsageError("Option [describe] takes exactly one --group with --zookeeper")
    if list_groups and groups:
        raise UsageError('Option "[group]" can\'t be used with option "[list]"')
    from kcli.tools.zk_consumer_groups import consumer_groups as run_old

    code = run_old(zookeeper, "list" if list_groups else "describe", groups[0] if groups else None, timeout_ms=30000)
    if code:
        raise typer.Exit(code)


@dataclasses.dataclass
class Options:
    bootstrap_server: str | None = None
    command_config: str | None = None
    list_groups: bool = False
    describe: bool = False
    delete: bool = False
    reset_offsets: bool = False
    delete_offsets: bool = False
    groups: list[str] = dataclasses.field(default_factory=list)
    all_groups: bool = False
    topics: list[str] = dataclasses.field(default_factory=list)
    all_topics: bool = False
    members: bool = False
    verbose: bool = False
    offsets: bool = False
    state: str | None = None  # '' when given without a value
    group_type: str | None = None
    timeout_ms: int = 5000
    dry_run: bool = False
    execute: bool = False
    export: bool = False
    to_offset: int | None = None
    to_earliest: bool = False
    to_latest: bool = False
    to_current: bool = False
    shift_by: int | None = None
    to_datetime: str | None = None
    by_duration: str | None = None
    from_file: str | None = None
    json: bool = False
    lag_time: bool = False
    watch: float | None = None
    inactive_for: str | None = None

    def scenarios(self) -> list[str]:
        """The reset scenarios given, in the order Kafka checks them for conflicts."""
        given = {
            "to-offset": self.to_offset is not None, "to-datetime": self.to_datetime is not None,
            "by-duration": self.by_duration is not None, "to-earliest": self.to_earliest, "to-latest": self.to_latest,
            "to-current": self.to_current, "shift-by": self.shift_by is not None, "from-file": self.from_file is not None,
        }
        return [name for name, present in given.items() if present]


# -- argument checks (ConsumerGroupCommandOptions.checkArgs, then the action count) --------------------


def check_args(o: Options) -> None:
    """Kafka's checks and messages; a wrong command line raises UsageError (exit 2)."""
    if not o.bootstrap_server:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    for flag, present in (("members", o.members), ("verbose", o.verbose), ("offsets", o.offsets)):
        if present and not o.describe:
            raise UsageError(f"Option(s) [{flag}] are unavailable given other options on the command line")
    if o.state is not None and not (o.describe or o.list_groups):
        raise UsageError("Option(s) [state] are unavailable given other options on the command line")
    if o.group_type is not None and not o.list_groups:
        raise UsageError("Option(s) [type] are unavailable given other options on the command line")
    if o.timeout_ms < 0:
        raise UsageError(f"--timeout must not be negative, got {o.timeout_ms}")
    for flag, present in (("lag-time", o.lag_time), ("watch", o.watch is not None)):
        if present and (not o.describe or o.members or o.state is not None):
            raise UsageError(f"Option [{flag}] can only be used with [describe] of offsets (not with [members] or [state])")
    if o.inactive_for is not None:
        if not o.delete:
            raise UsageError("Option [inactive-for] can only be used with [delete]")
        from kcli.tools.consumer_groups_prune import parse_inactive_for

        parse_inactive_for(o.inactive_for)
    if o.dry_run and o.delete and o.inactive_for is None:
        raise UsageError("Option [dry-run] can only be used with [delete] together with [inactive-for]")
    if o.watch is not None and not o.watch > 0:
        raise UsageError(f"--watch takes a number of seconds above 0, not {o.watch:g}")
    group_scope = "[all-groups], [group]"
    if o.describe:
        if not o.groups and not o.all_groups:
            raise UsageError(f"Option [describe] takes one of these options: {group_scope}")
        if sum((o.members, o.offsets, o.state is not None)) > 1:
            raise UsageError("Option [describe] takes at most one of these options: [members], [offsets], [state]")
        if o.state:
            raise UsageError("Option [describe] does not take a value for [state]")
    if o.delete:
        if not o.groups and not o.all_groups:
            raise UsageError(f"Option [delete] takes one of these options: {group_scope}")
        if o.topics:
            raise UsageError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if o.delete_offsets and (not o.groups or not o.topics):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if o.reset_offsets:
        if o.dry_run and o.execute:
            raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not o.dry_run and not o.execute:
            Output().diag(DRY_RUN_WARNING)
        if not o.groups and not o.all_groups:
            raise UsageError(f"Option [reset-offsets] takes one of these options: {group_scope}")
        scenarios = o.scenarios()
        if len(scenarios) > 1:
            raise UsageError(f'Option "[{scenarios[0]}]" can\'t be used with option "[{scenarios[1]}]"')
    if o.groups and o.all_groups:
        raise UsageError('Option "[group]" can\'t be used with option "[all-groups]"')
    if o.groups and o.list_groups:
        raise UsageError('Option "[group]" can\'t be used with option "[list]"')
    if o.topics and (o.list_groups or o.describe):
        raise UsageError(f'Option "[topic]" can\'t be used with option "[{"list" if o.list_groups else "describe"}]"')
    if sum((o.list_groups, o.describe, o.delete, o.reset_offsets, o.delete_offsets)) != 1:
        raise UsageError(ACTIONS_ERROR)
    if o.reset_offsets:
        if not o.scenarios():
            scenarios = ", ".join(f"[{s}]" for s in ("to-datetime", "by-duration", "to-earliest", "to-latest", "shift-by", "from-file", "to-current", "to-offset"))
            raise UsageError(f"Option '[reset-offsets]' requires one of the following scenarios: [{scenarios}]")
        if not o.all_topics and not o.topics and o.from_file is None:
            raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    if o.delete_offsets and len(o.groups) > 1:
        raise UsageError("Option [delete-offsets] supports one consumer group at the time")
    if o.list_groups:
        parse_states(o.state or "")
        parse_types(o.group_type or "")
    if o.reset_offsets or o.delete_offsets:
        from kcli.tools import consumer_groups_reset as reset

        for arg in o.topics:
            reset.parse_topic_arg(arg)
        if o.reset_offsets and o.to_datetime is not None:
            reset.parse_datetime(o.to_datetime)
        if o.reset_offsets and o.by_duration is not None:
            reset.parse_duration_ms(o.by_duration)


def parse_states(text: str) -> list[str]:
    """A --state value as Kafka's state names; '' (no value) is no filter."""
    if not text:
        return []
    by_upper = {s.upper(): s for s in STATES}
    states = [by_upper.get(part.strip().upper()) for part in text.split(",")]
    if None in states:
        raise UsageError(f"Invalid state list '{text}'. Valid states are: {', '.join(STATES)}")
    return list(dict.fromkeys(s for s in states if s))


def parse_types(text: str) -> list[str]:
    """A --type value as Kafka's type names; '' (no value) is no filter."""
    if not text:
        return []
    by_lower = {t.lower(): t for t in TYPES}
    types = [by_lower.get(part.strip().lower()) for part in text.split(",")]
    if None in types:
        raise UsageError(f"Invalid types list '{text}'. Valid types are: {', '.join(TYPES)}")
    return list(dict.fromkeys(t for t in types if t))


def canonical_state(state: str | None) -> str:
    by_upper = {s.upper(): s for s in STATES}
    return by_upper.get((state or "").upper(), "Unknown")


def canonical_type(group_type: str | None) -> str:
    by_lower = {t.lower(): t for t in TYPES}
    return by_lower.get((group_type or "").lower(), "Unknown")


# -- client settings (--command-config) ------------------------------------------------------------------

# AdminClientConfig's names: accepted (most have no effect on kcli's client); any other name warns.
def client_settings(o: Options) -> dict[str, Any]:
    """``NetworkClient`` keyword arguments from --bootstrap-server and the --command-config file."""
    from kcli.tools._admin_common import client_settings, load_command_config

    return client_settings(load_command_config(o.command_config), bootstrap=o.bootstrap_server,
                           warn=lambda line: log_warn(line, "org.apache.kafka.clients.admin.AdminClientConfig"))


def log_warn(message: str, logger: str = COMMAND_LOGGER) -> None:
    """A WARN line on stderr in Kafka's tools-log4j layout."""
    Output().log4j("WARN", message, logger)


# -- running --------------------------------------------------------------------------------------------


def run(o: Options) -> bool:
    """Perform the action; False when any group or partition failed."""
    from kcli.errors import KafkaError

    settings = client_settings(o)
    out = Output(Format.json if o.json else Format.plain)
    try:
        return _run(o, settings, out)
    except KafkaError as exc:
        raise KafkaError(exc.error_code, f"Executing consumer group command failed due to {exc}") from None
    finally:
        out.flush()


def _run(o: Options, settings: dict[str, Any], out: Output) -> bool:
    from kcli.client.group_admin import GroupAdmin
    from kcli.client.network_client import NetworkClient
    from kcli.client.sync import SyncRunner

    with SyncRunner() as runner:
        cluster = NetworkClient(**settings)
        try:
            runner.run(cluster.any_connection(timeout=o.timeout_ms / 1000, timeout_setting="--timeout"))
            admin = GroupAdmin(cluster, timeout=o.timeout_ms / 1000)
            command = GroupCommand(o, admin, runner, out)
            if o.list_groups:
                return command.list_groups()
            if o.describe:
                return command.describe()
            if o.delete:
                return command.delete_groups()
            if o.reset_offsets:
                return command.reset_offsets()
            return command.delete_offsets()
        finally:
            runner.run(cluster.close())


class GroupCommand:
    def __init__(self, options: Options, admin: GroupAdmin, runner: SyncRunner, out: Output) -> None:
        self.o = options
        self.admin = admin
        self.runner = runner
        self.out = out
        self.ok = True
        self._prune_plan: dict[str, tuple[int, int]] | None = None  # --inactive-for: newest commit, inactive ms

    def error(self, message: str) -> None:
        self.ok = False
        self.out.diag(f"Error: {message}")

    def group_ids(self) -> list[str]:
        if self.o.all_groups:
            return [g.group_id for g in self.runner.run(self.admin.list_groups())]
        return list(dict.fromkeys(self.o.groups))

    def describe_all(self, ids: list[str]) -> dict[str, GroupDescription]:
        """The groups that could be described; failures are reported."""
        from kcli.errors import KafkaError

        found = {}
        for group_id, result in sorted(self.runner.run(self.admin.describe_groups(ids)).items()):
            if isinstance(result, KafkaError):
                self.error(str(result))
            elif not result.is_consumer_group:
                self.error(f"GroupId {group_id} is not a consumer group ({result.protocol_type}).")
            else:
                found[group_id] = result
        return found

    # -- --list ----------------------------------------------------------------------------------------

    def list_groups(self) -> bool:
        o = self.o
        states = parse_states(o.state or "")
        types = parse_types(o.group_type or "")
        listings = self.runner.run(self.admin.list_groups(states, types))
        if o.json:
            for g in listings:
                self.out.obj({
                    "group": g.group_id,
                    "state": canonical_state(g.state) if g.state else None,
                    "type": canonical_type(g.group_type) if g.group_type else None,
                    "protocolType": g.protocol_type,
                })
            return True
        if o.state is None and o.group_type is None:
            self.out.lines([g.group_id for g in listings])
            return True
        headers = ["GROUP"]
        rows = [[g.group_id] for g in listings]
        if o.group_type is not None:
            headers.append("TYPE")
            for row, g in zip(rows, listings):
                row.append(canonical_type(g.group_type))
        if o.state is not None:
            headers.append("STATE")
            for row, g in zip(rows, listings):
                row.append(canonical_state(g.state))
        width = max([15] + [len(g.group_id) for g in listings]) + 10
        widths = [width] + [20] * (len(headers) - 1)
        self.table(headers, rows, [pad_all(headers, widths, last=True)] + [pad_all(r, widths, last=True) for r in rows], leading_blank=False)
        return True

    # -- --describe ------------------------------------------------------------------------------------

    def describe(self) -> bool:
        if self.o.watch is not None:
            from kcli.tools.consumer_groups_watch import watch

            return watch(self, self.o.watch)
        ids = self.group_ids()
        groups = self.describe_all(ids)
        if self.o.members:
            self.describe_members(groups)
        elif self.o.state is not None:
            self.describe_state(groups)
        else:
            self.describe_offsets(groups)
        return self.ok

    def should_print(self, group_id: str, state: str, rows: int) -> bool:
        """Kafka's shouldPrintMemberState: notes and errors for the group's state."""
        if state == "Dead":
            self.error(f"Consumer group '{group_id}' does not exist.")
            return False
        if not self.o.json:
            if state == "Empty":
                self.out.diag(f"\nConsumer group '{group_id}' has no active members.")
            elif state in REBALANCING:
                self.out.diag(f"\nWarning: Consumer group '{group_id}' is rebalancing.")
            elif state != "Stable":
                self.error(f"Expected a valid consumer group state, but found '{state}'.")
                return False
        return rows > 0 or self.o.json

    def describe_offsets(self, groups: dict[str, GroupDescription], previous: dict | None = None) -> dict:
        """Kafka's offsets table per group; with ``previous`` (``--watch``: the lags of the round
        before) a TREND column. The lags shown, by (group, partition)."""
        from kcli.client.admin import LATEST, ListedOffset

        plans: dict[str, list[tuple[TopicPartition, str | None, str | None, str | None]]] = {}
        committed_by_group = self.runner.run(self.admin.fetch_offsets_of([g for g, d in groups.items() if d.state != "Dead"]))
        for group_id, group in groups.items():
            committed = committed_by_group.get(group_id, {})
            rows: list[tuple[TopicPartition, str | None, str | None, str | None]] = []
            assigned: set[TopicPartition] = set()
            owners = sorted((m for m in group.members if m.partitions), key=lambda m: -len(m.partitions))
            for member in owners:
                for tp in sorted(set(member.partitions)):
                    assigned.add(tp)
                    rows.append((tp, member.member_id, member.host, member.client_id))
            for tp in sorted(set(committed) - assigned):
                rows.append((tp, None, None, None))
            plans[group_id] = rows
        every = {tp for rows in plans.values() for tp, *_ in rows}
        ends = self.runner.run(self.admin.list_offsets(every, LATEST)) if every else {}
        timestamps = self.lag_timestamps(plans, committed_by_group, ends) if self.o.lag_time else {}
        now_ms = int(time.time() * 1000)
        lags = {}
        for group_id, group in groups.items():
            rows = plans[group_id]
            if not self.should_print(group_id, group.state, len(rows)):
                continue
            committed = committed_by_group.get(group_id, {})
            records = []
            for tp, consumer_id, host, client_id in rows:
                offset = committed[tp].offset if tp in committed else None
                end = ends.get(tp)
                end_offset = end.offset if isinstance(end, ListedOffset) else None
                lag = end_offset - offset if offset is not None and offset != -1 and end_offset is not None else None
                record = {
                    "topic": tp.topic, "partition": tp.partition, "currentOffset": offset, "logEndOffset": end_offset,
                    "lag": lag, "consumerId": consumer_id, "host": host, "clientId": client_id,
                }
                if self.o.lag_time:
                    from kcli.tools.consumer_groups_lag import lag_time_ms

                    record["lagTimeMs"] = lag_time_ms(now_ms, lag, timestamps.get((tp, offset)))
                if previous is not None:
                    before = previous.get((group_id, tp))
                    record["lagChange"] = lag - before if lag is not None and before is not None else None
                lags[(group_id, tp)] = lag
                records.append(record)
            if self.o.json:
                self.out.obj({"group": group_id, "state": group.state, "coordinator": node_json(group), "partitions": records})
                continue
            headers = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
            table = [
                [group_id, r["topic"], str(r["partition"]), text(r["currentOffset"]), text(r["logEndOffset"]), text(r["lag"]),
                 text(r["consumerId"]), text(r["host"]), text(r["clientId"])]
                for r in records
            ]
            widths = [
                max([15, len(group_id)]), max([15] + [len(r[1]) for r in table]), 10, 15, 15, 15,
                max([15] + [len(r[6]) for r in table]), max([15] + [len(r[7]) for r in table]), 0,
            ]
            if self.o.lag_time:
                headers.insert(6, "LAG-TIME-MS")
                widths.insert(6, 15)
                for row, r in zip(table, records):
                    row.insert(6, text(r["lagTimeMs"]))
            if previous is not None:
                headers.append("TREND")
                widths[-1] = max([15, len(headers[-2])] + [len(row[-1]) for row in table])
                widths.append(0)
                for row, r in zip(table, records):
                    change = r["lagChange"]
                    row.append(MISSING if change is None else f"{change:+d}" if change else "0")
            self.table(headers, table, [pad_all(headers, widths)] + [pad_all(r, widths) for r in table])
        return lags

    def lag_timestamps(self, plans, committed_by_group, ends) -> dict:
        """The timestamps of the records at the committed offsets that have a lag."""
        from kcli.client.admin import ListedOffset
        from kcli.tools.consumer_groups_lag import record_timestamps

        wanted: dict = {}
        for group_id, rows in plans.items():
            committed = committed_by_group.get(group_id, {})
            for tp, *_ in rows:
                end = ends.get(tp)
                if tp in committed and committed[tp].offset >= 0 and isinstance(end, ListedOffset) and end.offset > committed[tp].offset:
                    wanted.setdefault(tp, set()).add(committed[tp].offset)
        return self.runner.run(record_timestamps(self.admin.cluster, wanted)) if wanted else {}

    def describe_members(self, groups: dict[str, GroupDescription]) -> None:
        verbose = self.o.verbose
        for group_id, group in groups.items():
            if not self.should_print(group_id, group.state, len(group.members)):
                continue
            if self.o.json:
                self.out.obj({
                    "group": group_id, "state": group.state, "coordinator": node_json(group),
                    "members": [
                        {
                            "consumerId": m.member_id, "groupInstanceId": m.group_instance_id, "host": m.host,
                            "clientId": m.client_id, "partitions": len(set(m.partitions)),
                            "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(set(m.partitions))],
                        }
                        for m in group.members
                    ],
                })
                continue
            with_instance = any(m.group_instance_id for m in group.members)
            headers = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else []) + ["HOST", "CLIENT-ID", "#PARTITIONS"]
            table = []
            for m in group.members:
                row = [group_id, m.member_id] + ([m.group_instance_id or ""] if with_instance else []) + [m.host, m.client_id, str(len(set(m.partitions)))]
                if verbose:
                    row.append(assignment_text(m.partitions))
                table.append(row)
            widths = [max([15, len(group_id)]), max([15] + [len(m.member_id) for m in group.members])]
            if with_instance:
                widths.append(max([17] + [len(m.group_instance_id or "") for m in group.members]))
            widths += [max([15] + [len(m.host) for m in group.members]), max([15] + [len(m.client_id) for m in group.members]), 15]
            count = len(widths)

            def line(cells: list[str]) -> str:
                return "".join(cell.ljust(width) + " " for cell, width in zip(cells[:count], widths)) + "".join(cells[count:])

            self.table(headers + (["ASSIGNMENT"] if verbose else []), table, [line(headers + (["ASSIGNMENT"] if verbose else []))] + [line(r) for r in table])

    def describe_state(self, groups: dict[str, GroupDescription]) -> None:
        for group_id, group in groups.items():
            if not self.should_print(group_id, group.state, 1):
                continue
            if self.o.json:
                self.out.obj({
                    "group": group_id, "coordinator": node_json(group), "assignmentStrategy": group.protocol,
                    "state": group.state, "members": len(group.members),
                })
                continue
            node = group.coordinator
            coordinator = f"{node.host}:{node.port}  ({node.node_id})"
            headers = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
            row = [group_id, coordinator, group.protocol, group.state, str(len(group.members))]
            widths = [max(25, len(coordinator)), 25, 20, 15, 0]
            self.table(headers, [row], [pad_all(headers, widths), pad_all(row, widths)])

    # -- --delete --------------------------------------------------------------------------------------

    def delete_groups(self) -> bool:
        ids = self.group_ids()
        if self.o.inactive_for is not None:
            ids = self.inactive_groups(ids)
            if not ids:
                return self.ok
        results = self.runner.run(self.admin.delete_groups(ids))
        deleted = [g for g, error in results.items() if error is None]
        failed = {g: error for g, error in results.items() if error is not None}
        if self.o.json:
            pruned = self._prune_plan
            for group_id, error in results.items():
                done = {"group": group_id, "deleted": error is None, "error": None if error is None else failure_text(error)}
                if pruned is not None:
                    newest_ms, inactive = pruned[group_id]
                    done = {"group": group_id, "state": "Empty", "newestCommit": newest_ms, "inactiveMs": inactive, **done}
                self.out.obj(done)
            self.ok = not failed
            return self.ok
        if not failed:
            self.out.line("Deletion of requested consumer groups ('" + ", ".join(deleted) + "') was successful.")
            return True
        self.error("Deletion of some consumer groups failed:")
        for group_id, error in failed.items():
            self.out.diag(f"* Group '{group_id}' could not be deleted due to: {failure_text(error)}")
        if deleted:
            self.out.line("\nThese consumer groups were deleted successfully: " + ", ".join(f"'{g}'" for g in deleted))
        return False

    def inactive_groups(self, ids: list[str]) -> list[str]:
        """``--inactive-for``: the plan printed, and the groups to delete (none with --dry-run)."""
        from datetime import datetime, timezone

        from kcli.tools.consumer_groups_prune import newest_commits, parse_inactive_for

        inactive_ms = parse_inactive_for(self.o.inactive_for)
        groups = self.describe_all(ids)
        empty = {g for g, d in groups.items() if d.state == "Empty"}
        newest = self.runner.run(newest_commits(self.admin.cluster, empty)) if empty else {}
        now_ms = int(time.time() * 1000)
        plan = sorted(g for g in empty if g in newest and now_ms - newest[g] > inactive_ms)
        if self.o.json:
            if self.o.dry_run:
                for g in plan:
                    self.out.obj({"group": g, "state": "Empty", "newestCommit": newest[g], "inactiveMs": now_ms - newest[g], "deleted": False, "error": None})
                return []
            self._prune_plan = {g: (newest[g], now_ms - newest[g]) for g in plan}
            return plan
        if not plan:
            self.out.line(f"No consumer group has been inactive for {self.o.inactive_for}.")
            return []
        headers = ["GROUP", "STATE", "NEWEST-COMMIT", "INACTIVE-FOR"]
        rows = [
            [g, "Empty", datetime.fromtimestamp(newest[g] / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", str(now_ms - newest[g])]
            for g in plan
        ]
        widths = [max([15] + [len(g) for g in plan]), 15, 25, 0]
        self.table(headers, rows, [pad_all(headers, widths)] + [pad_all(r, widths) for r in rows])
        if self.o.dry_run:
            self.out.line(f"Dry run: {len(plan)} consumer group(s) would be deleted.")
            return []
        return plan

    # -- --delete-offsets ------------------------------------------------------------------------------

    def delete_offsets(self) -> bool:
        from kcli.client.group_admin import TopicPartition
        from kcli.errors import ErrorCode, KafkaError
        from kcli.tools.consumer_groups_reset import parse_topic_arg

        group_id = self.o.groups[0]
        results: dict[TopicPartition, str | None] = {}
        partitions: list[TopicPartition] = []
        for arg in self.o.topics:
            name, listed = parse_topic_arg(arg)
            if listed is not None:
                partitions += [TopicPartition(name, p) for p in listed]
                continue
            try:
                info = self.runner.run(self.admin.cluster.topic(name))
            except KafkaError as exc:
                results[TopicPartition(name, -1)] = failure_text(exc)
                continue
            partitions += [TopicPartition(name, p) for p in sorted(info.partitions)]
        code, per_partition = self.runner.run(self.admin.delete_offsets(group_id, partitions)) if partitions else (0, {})
        for tp in partitions:
            partition_code = per_partition.get(tp, code if code else 0)
            results[tp] = None if not partition_code else failure_text(ErrorCode.for_code(partition_code))
        top = ErrorCode.for_code(code)
        if top is ErrorCode.NONE and not any(results.values()):
            if not self.o.json:
                self.out.line(f"Request succeed for deleting offsets with topic {', '.join(self.o.topics)} group {group_id}")
        elif top is ErrorCode.INVALID_GROUP_ID:
            self.error(f"'{group_id}' is not valid.")
        elif top is ErrorCode.GROUP_ID_NOT_FOUND:
            self.error(f"'{group_id}' does not exist.")
        elif top is ErrorCode.GROUP_AUTHORIZATION_FAILED:
            self.error(f"Access to '{group_id}' is not authorized.")
        elif top is ErrorCode.NON_EMPTY_GROUP:
            self.error(f"Deleting offsets of a consumer group '{group_id}' is forbidden if the group is not empty.")
        elif top in (ErrorCode.NONE, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            self.error("Encounter some partition level error, see the follow-up details:")
        else:
            self.error(f"Encounter some unknown error: {top.name}")
        ordered = sorted(results.items(), key=lambda item: item[0].topic + str(item[0].partition))
        if self.o.json:
            for tp, error in ordered:
                self.out.obj({"group": group_id, "topic": tp.topic, "partition": tp.partition if tp.partition >= 0 else None, "error": error})
            return self.ok
        headers = ["TOPIC", "PARTITION", "STATUS"]
        rows = [[tp.topic, str(tp.partition) if tp.partition >= 0 else "Not Provided", "Successful" if error is None else f"Error: {error}"] for tp, error in ordered]
        widths = [30, 15, 15]
        self.table(headers, rows, [pad_all(headers, widths, last=True)] + [pad_all(r, widths, last=True) for r in rows])
        return self.ok

    # -- --reset-offsets -------------------------------------------------------------------------------

    def reset_offsets(self) -> bool:
        from kcli.tools.consumer_groups_reset import export_csv

        ids = self.group_ids()
        groups = self.describe_all(ids)
        plans: dict[str, dict[TopicPartition, int]] = {}
        for group_id, group in groups.items():
            if group.state not in INACTIVE:
                self.error(f"Assignments can only be reset if the group '{group_id}' is inactive, but the current state is {group.state}.")
                continue
            offsets = self.plan_group(group_id)
            if offsets is None:
                continue
            if self.o.execute:
                self.commit(group_id, offsets)
            plans[group_id] = offsets
        if self.o.json:
            for group_id in sorted(plans):
                for tp in sorted(plans[group_id]):
                    self.out.obj({"group": group_id, "topic": tp.topic, "partition": tp.partition, "newOffset": plans[group_id][tp]})
        elif self.o.export:
            self.out.lines(export_csv(plans, single_group=len(self.o.groups) == 1) + [""])
        elif plans:
            headers = ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
            rows = [[g, tp.topic, str(tp.partition), str(plans[g][tp])] for g in sorted(plans) for tp in sorted(plans[g])]
            widths = [30, 30, 10, 15]
            self.table(headers, rows, [pad_all(headers, widths, last=True)] + [pad_all(r, widths, last=True) for r in rows])
        return self.ok

    def plan_group(self, group_id: str) -> dict[TopicPartition, int] | None:
        from kcli.client.admin import EARLIEST, LATEST, ListedOffset, TopicPartition
        from kcli.tools import consumer_groups_reset as reset

        o = self.o
        scenario = o.scenarios()[0]
        committed = {tp: v.offset for tp, v in self.runner.run(self.admin.fetch_offsets(group_id)).items()}
        file_plan = None
        if scenario == reset.FROM_FILE:
            file_plan = self.file_plan().get(group_id)
            if file_plan is None:
                self.error(f"No reset plan for group {group_id} found")
                return None
            partitions = list(file_plan)
        elif o.all_topics:
            partitions = sorted(committed)
        else:
            partitions = []
            for arg in o.topics:
                name, listed = reset.parse_topic_arg(arg)
                if listed is None:
                    info = self.runner.run(self.admin.cluster.topic(name))
                    listed = sorted(info.partitions)
                partitions += [TopicPartition(name, p) for p in listed]
            partitions = list(dict.fromkeys(partitions))

        def offsets_at(timestamp: int) -> dict[TopicPartition, int | None]:
            listed = self.runner.run(self.admin.list_offsets(partitions, timestamp))
            return {tp: (r.offset if isinstance(r, ListedOffset) else None) for tp, r in listed.items()}

        by_timestamp = None
        if scenario == reset.TO_DATETIME:
            by_timestamp = offsets_at(reset.parse_datetime(o.to_datetime or ""))
        elif scenario == reset.BY_DURATION:
            import time

            by_timestamp = offsets_at(time.time_ns() // 10**6 - reset.parse_duration_ms(o.by_duration or ""))
        plan = reset.plan_offsets(
            scenario, o.to_offset if scenario == reset.TO_OFFSET else o.shift_by, partitions,
            committed=committed, log_start=offsets_at(EARLIEST), log_end=offsets_at(LATEST),
            by_timestamp=by_timestamp, from_file=file_plan,
        )
        for warning in plan.warnings:
            log_warn(warning)
        for note in plan.notes:
            self.out.diag("\n" + note)
        return plan.offsets

    def file_plan(self) -> dict[str, dict[TopicPartition, int]]:
        from kcli.input_files import LINE_RECORDS, read_text
        from kcli.tools.consumer_groups_reset import parse_reset_csv

        cached = getattr(self, "_file_plan", None)
        if cached is None:
            text = read_text(self.o.from_file or "", "--from-file", LINE_RECORDS)
            cached = self._file_plan = parse_reset_csv(text, self.o.groups)
        return cached

    def commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        from kcli.errors import ErrorCode

        results = self.runner.run(self.admin.commit_offsets(group_id, offsets))
        for tp, code in sorted(results.items()):
            if code:
                self.error(f"Resetting the offset of {tp} for group '{group_id}' failed: {failure_text(ErrorCode.for_code(code))}")

    # -- output ------------------------------------------------------------------------------------------

    def table(self, headers: list[str], rows: list[list[str]], plain: list[str], *, leading_blank: bool = True) -> None:
        self.out.table(headers, rows, plain, leading_blank=leading_blank)


def pad_all(cells: list[str], widths: list[int], *, last: bool = False) -> str:
    """Java's ``%-Ns`` for every cell separated by spaces; the last cell unpadded unless ``last``."""
    padded = [cell.ljust(width) for cell, width in zip(cells, widths)]
    if not last:
        padded[-1] = cells[-1]
    return " ".join(padded)


def text(value: Any) -> str:
    return MISSING if value is None else str(value)


def assignment_text(partitions: Any) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in set(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return MISSING
    return ", ".join(sorted(f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in by_topic.items()))


def node_json(group: GroupDescription) -> dict[str, Any]:
    node = group.coordinator
    return {"id": node.node_id, "host": node.host, "port": node.port}


def failure_text(error: Any) -> str:
    """A Kafka error as the tool reports it per group or partition: NAME: what the code means."""
    from kcli.errors import KafkaError

    code = error.error_code if isinstance(error, KafkaError) else error
    return f"{code.name}: {code.message}"
