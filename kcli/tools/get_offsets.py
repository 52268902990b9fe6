"""``kcli get-offsets``: Kafka's kafka-get-offsets.sh (GetOffsetShell), with Kafka 3.9's flags,
lines and messages.

Prints ``topic:partition:offset`` for each partition the filters select, sorted as Kafka sorts
them: by the text ``topic-partition`` (so ``t-10`` comes before ``t-2``). Partitions whose offset
is unknown (no record at or after the asked timestamp) are left out, as in Kafka 3.9.

Filters: ``--topic`` (a regex; every topic without it) with ``--partitions 0,1,...``, or
``--topic-partitions topic1:1,topic2:0-3,topic3,topic4:5-,:-3`` (ranges include the lower and
exclude the upper bound); ``--exclude-internal-topics``. ``--time``: ``-1``/``latest`` (default),
``-2``/``earliest``, ``-3``/``max-timestamp``, ``-4``/``earliest-local``, ``-5``/``latest-tiered``
(needs ListOffsets v9, which kcli's client does not send: each partition reports it), or a
timestamp in ms. ``--broker-list`` is the deprecated spelling of ``--bootstrap-server``.

Errors are Kafka's lines on stderr: ``Error occurred: <message>`` (exit 2 for bad arguments, 1
otherwise), and per failed partition ``Skip getting offsets for topic-partition t-0 due to error:
<message>``; unlike Kafka, a skipped partition makes the exit code 1.

``--output json`` writes one object per partition, in the same order: ``{"topic": str,
"partition": int, "offset": int, "timestamp": int | null, "leader_epoch": int | null}``
(``timestamp``: the matched record's, for ``max-timestamp`` and timestamps; null when the broker
gives none).

``--count`` (kcli's own) prints the records really in each partition instead of an offset,
``topic:partition:N`` in the same order, then ``total:N``: counted from batch headers
(``record_counts``), through Fetch from the leaders, or with ``--log-dirs`` from a broker's
segment files (``get_offsets_command`` does that work). ``--isolation-level`` says which records
count: ``read_committed`` (default) those a read_committed consumer reads, non-transactional and
committed ones; ``read_uncommitted`` also those of aborted and still open transactions. Control
batches are never counted. With ``--output json``: ``{"topic", "partition", "count",
"committed", "aborted", "open", "start_offset", "end_offset", "batches", "control_batches"}`` per
partition, then ``{"total", "aborted", "open"}``.
"""

from __future__ import annotations

import re
from typing import Annotated, Optional

import typer

from kcli.java_compat import parse_int
from kcli.output import Format
from kcli.tools.options import BootstrapServerOpt, BrokerListOpt, CommandConfigOpt

TOPIC_PARTITION_PATTERN = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
INT_MAX = 2**31 - 1
TIME_NAMES = {"latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4, "latest-tiered": -5}


def register(app: typer.Typer) -> None:
    app.command("get-offsets", help="An interactive shell for getting topic-partition offsets.", no_args_is_help=True)(get_offsets)


def get_offsets(
    bootstrap_server: BootstrapServerOpt = None,
    broker_list: BrokerListOpt = None,
    topic_partitions: Annotated[Optional[str], typer.Option("--topic-partitions", help="Comma-separated topic-partition patterns: topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3 (topic regex, then a partition, range, lower or upper bound).")] = None,
    topic: Annotated[Optional[str], typer.Option("--topic", help="The topic (a regex) to get offsets for; every topic without it. Not with --topic-partitions.")] = None,
    partitions: Annotated[Optional[str], typer.Option("--partitions", help="Comma-separated partition ids; every partition without it. Not with --topic-partitions.")] = None,
    time: Annotated[Optional[str], typer.Option("--time", help="<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp / -4 or earliest-local / -5 or latest-tiered.", show_default="latest")] = None,
    command_config: CommandConfigOpt = None,
    exclude_internal_topics: Annotated[bool, typer.Option("--exclude-internal-topics", help="Leave out internal topics (included by default).")] = False,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's topic:partition:offset lines; json: one JSON object per partition.")] = Format.plain,
    count: Annotated[bool, typer.Option("--count", help=COUNT_HELP)] = False,
    log_dirs: Annotated[Optional[str], typer.Option("--log-dirs", help="With --count: count from the segment files of these log dirs (one broker's log.dirs, comma-separated) instead of through a broker.")] = None,
    isolation_level: Annotated[Optional[str], typer.Option("--isolation-level", help="With --count: read_committed (default) counts non-transactional and committed records, what a read_committed consumer reads; read_uncommitted adds those of aborted and open transactions.")] = None,
) -> None:
    from kcli.errors import KcliError, UsageError
    from kcli.output import Output
    from kcli.tools._admin_common import validate_bootstrap_server

    out = Output(output)
    try:
        try:
            servers = bootstrap_server if bootstrap_server is not None else broker_list
            _check_count_args(count, servers, time, log_dirs, isolation_level)
            if servers is None and log_dirs is None:
                raise UsageError("Missing required option(s) [bootstrap-server]")
            if servers is not None:
                validate_bootstrap_server(servers)
            if topic_partitions is not None and (topic is not None or partitions is not None):
                raise UsageError("--topic-partitions cannot be used with --topic or --partitions")
            spec = parse_time(time if time is not None else "latest")
            if topic_partitions is not None:
                selector = _PatternList(topic_partitions)
            else:
                selector = _TopicAndPartitions(topic if topic is not None else ".*", _partition_set(partitions))
            if log_dirs is None:
                from kcli.tools._admin_common import client_settings, load_command_config

                settings = client_settings(load_command_config(command_config), bootstrap=servers, client_id="GetOffsetShell", warn=out.diag)
        except KcliError as exc:
            out.diag(f"Error occurred: {exc}")
            raise typer.Exit(exc.exit_code) from None
        try:
            if count:
                read_committed = isolation_level != "read_uncommitted"
                if log_dirs is not None:
                    ok = _count_files(out, [d for d in log_dirs.split(",") if d.strip()], selector, exclude_internal_topics, read_committed)
                else:
                    ok = _count_online(out, settings, selector, exclude_internal_topics, read_committed)
            else:
                ok = _fetch_and_print(out, settings, selector, spec, exclude_internal_topics)
        except KcliError as exc:
            out.diag(f"Error occurred: {exc}")
            raise typer.Exit(1) from None
        if not ok:
            raise typer.Exit(1)
    finally:
        out.flush()


COUNT_HELP = (
    "Print the records really in each partition (and the total) instead of an offset: counted from batch headers, never "
    "decompressing, so compaction gaps, deleted records and transaction markers do not count; control batches are not "
    "records; aborted records are left out (a read_committed consumer never gets them), see --isolation-level."
)
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


def _check_count_args(count: bool, servers: str | None, time: str | None, log_dirs: str | None, isolation_level: str | None) -> None:
    from kcli.errors import UsageError

    if not count:
        for flag, value in (("--log-dirs", log_dirs), ("--isolation-level", isolation_level)):
            if value is not None:
                raise UsageError(f"{flag} can only be used with --count")
        return
    if time is not None:
        raise UsageError("--time cannot be used with --count")
    if log_dirs is not None and servers is not None:
        raise UsageError("--log-dirs cannot be used with --bootstrap-server or --broker-list")
    if log_dirs is not None and not log_dirs.strip():
        raise UsageError("--log-dirs needs at least one directory")
    if isolation_level is not None and isolation_level not in ISOLATION_LEVELS:
        raise UsageError(f"--isolation-level must be read_committed or read_uncommitted, not {isolation_level}")


def _matched(session, selector, exclude_internal: bool) -> list:
    from kcli.client.admin import TopicPartition
    from kcli.errors import KcliError

    topics = session.run(session.admin.list_topics(include_internal=not exclude_internal))
    chosen = [name for name in topics if selector.allows_topic(name)]
    described = session.run(session.admin.describe_topics(chosen)) if chosen else {}
    wanted = []
    for name in chosen:
        info = described[name]
        if isinstance(info, Exception):
            raise info
        wanted += [TopicPartition(name, p) for p in info.partitions if selector.allows(name, p)]
    if not wanted:
        raise KcliError("Could not match any topic-partitions with the specified filters")
    return wanted


def _count_online(out, settings, selector, exclude_internal: bool, read_committed: bool) -> bool:
    from kcli.tools._admin_common import AdminSession
    from kcli.tools.get_offsets_command import count_online, print_counts

    with AdminSession(settings) as session:
        counts = count_online(session, _matched(session, selector, exclude_internal))
    return print_counts(out, counts, read_committed)


def _count_files(out, log_dirs: list[str], selector, exclude_internal: bool, read_committed: bool) -> bool:
    from kcli.errors import KcliError
    from kcli.common import is_internal
    from kcli.tools.get_offsets_command import count_files, partition_dirs, print_counts

    dirs = partition_dirs(log_dirs, lambda topic, p: selector.allows(topic, p) and not (exclude_internal and is_internal(topic)))
    if not dirs:
        raise KcliError("Could not match any topic-partitions with the specified filters")
    return print_counts(out, count_files(dirs), read_committed)


def _fetch_and_print(out, settings, selector, spec: int, exclude_internal: bool) -> bool:
    from kcli.tools._admin_common import AdminSession

    with AdminSession(settings) as session:
        wanted = _matched(session, selector, exclude_internal)
        results = session.run(session.admin.list_offsets({tp: spec for tp in wanted}))
    ok = True
    for tp in sorted(wanted, key=str):
        result = results[tp]
        if result.error is not None:
            out.diag(f"Skip getting offsets for topic-partition {tp} due to error: {result.error}")
            ok = False
            continue
        if result.offset == -1:
            continue
        if out.json:
            out.obj(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "offset": result.offset,
                    "timestamp": result.timestamp if result.timestamp >= 0 else None,
                    "leader_epoch": result.leader_epoch if result.leader_epoch >= 0 else None,
                }
            )
        else:
            out.line(f"{tp.topic}:{tp.partition}:{result.offset}")
    return ok


def parse_time(text: str) -> int:
    """Kafka's parseOffsetSpec as a ListOffsets timestamp."""
    from kcli.errors import UsageError

    if text in TIME_NAMES:
        return TIME_NAMES[text]
    body = text[1:] if text[:1] in "+-" else text
    if body and body.isascii() and body.isdigit() and -(2**63) <= int(text) < 2**63:
        return int(text)
    raise UsageError(
        f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or max-timestamp / -4 or earliest-local / "
        "-5 or latest-tiered, or a specified long format timestamp"
    )


def _partition_set(text: str | None) -> frozenset[int]:
    from kcli.errors import UsageError

    if not text:
        return frozenset()
    try:
        return frozenset(parse_int(p) for p in text.split(","))
    except ValueError:
        raise UsageError(f"--partitions expects a comma separated list of numeric partition ids, but received: {text}") from None


class _TopicAndPartitions:
    """Kafka's TopicFilterAndPartitionFilter: a topic regex and a set of partitions (empty: all)."""

    def __init__(self, topic_regex: str, partitions: frozenset[int] | None = None, low: int = 0, high: int = INT_MAX) -> None:
        from kcli.tools._admin_common import TopicFilter

        self.topics = TopicFilter(topic_regex)
        self.partitions = partitions
        self.low, self.high = low, high

    def allows_topic(self, topic: str) -> bool:
        return self.topics.allows(topic)

    def allows(self, topic: str, partition: int) -> bool:
        if not self.allows_topic(topic):
            return False
        if self.partitions is not None:
            return not self.partitions or partition in self.partitions
        return self.low <= partition < self.high


class _PatternList:
    """``--topic-partitions``: any of the comma-separated rules."""

    def __init__(self, text: str) -> None:
        from kcli.errors import UsageError

        self.rules = []
        specs = text.split(",")
        while len(specs) > 1 and specs[-1] == "":
            specs.pop()  # Java's split drops trailing empty strings
        for spec in specs:
            match = TOPIC_PARTITION_PATTERN.fullmatch(spec)
            if match is None:
                raise UsageError(f"Invalid rule specification: {spec}")
            topic, single, low, high = (g or None for g in match.groups())
            regex = topic if topic is not None else ".*"
            try:
                if single is not None:
                    rule = _TopicAndPartitions(regex, None, parse_int(single), parse_int(single) + 1)
                else:
                    rule = _TopicAndPartitions(regex, None, parse_int(low) if low else 0, parse_int(high) if high else INT_MAX)
            except ValueError:
                raise UsageError(f"Invalid rule specification: {spec}") from None
            self.rules.append(rule)

    def allows_topic(self, topic: str) -> bool:
        return any(rule.allows_topic(topic) for rule in self.rules)

    def allows(self, topic: str, partition: int) -> bool:
        return any(rule.allows(topic, partition) for rule in self.rules)
