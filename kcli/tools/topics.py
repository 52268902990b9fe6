"""``kcli topics``: Kafka's kafka-topics.sh, with Kafka 3.9's flags, checks, lines and messages.

Exactly one action: ``--list``, ``--describe``, ``--create``, ``--alter`` (partition count and
assignment of new partitions) or ``--delete``. ``--topic`` is a regex (Kafka's IncludeList, matched
against whole names) for every action but ``--create``. Option combinations Kafka refuses are
refused with its message (exit 2). A failure while acting prints Kafka's stdout line ``Error
while executing topic command : <message>`` once (Kafka adds only a log4j stack trace on stderr,
which kcli leaves out), and exits 1; with several topics (a regex), each failed topic gets its line.

Output as in Kafka 3.9 through the admin client: ``--list`` prints the sorted names;
``--describe`` prints per topic ``Topic: T\\tTopicId: ID\\tPartitionCount: N\\tReplicationFactor:
R\\tConfigs: k=v,...`` (every config whose source is not the built-in default, as Kafka's
``ConfigEntry.isDefault`` decides, in Java HashMap order) and per partition ``\\tTopic:
T\\tPartition: P\\tLeader: L\\tReplicas: a,b\\tIsr: a,b\\tElr: N/A\\tLastKnownElr: N/A``, topics in
the HashMap order Kafka's admin client returns them in. Partition data comes from Metadata (no
DescribeTopicPartitions), so ELR prints ``N/A`` as Kafka's tool does against a ZooKeeper-mode
broker. A broker without DescribeConfigs (librdkafka's mock) describes with empty ``Configs:``
and ``min.insync.replicas`` taken as 1. The report filters print, without summary lines, the
partitions any of them given matches (Kafka 3.9's DescribeOptions): ``--under-replicated-partitions``
an ISR smaller than the replicas, ``--unavailable-partitions`` no leader or one not among the
brokers DescribeCluster names, ``--under-min-isr-partitions`` no leader or an ISR below
``min.insync.replicas``, ``--at-min-isr-partitions`` an ISR of exactly ``min.insync.replicas``.

``--zookeeper HOST:PORT[/chroot]`` runs Kafka 2.8's ZooKeeper path instead (its checks, lines and
messages: ``kcli.tools.topics_zookeeper``). ``--force`` and ``--disable-rack-aware`` (2.x) are
accepted and ignored with ``--bootstrap-server``, as Kafka's admin-client path ignored them.

``--output json`` (``--list`` and ``--describe``) writes one JSON object per line:

- list: ``{"topic": str, "topic_id": str | null, "internal": bool, "partitions": int}``
- describe: ``{"topic": str, "topic_id": str | null, "internal": bool, "partition_count": int,
  "replication_factor": int, "configs": {name: value} | null, "partitions": [{"partition": int,
  "leader": int | null, "replicas": [int], "isr": [int], "offline": [int]}]}`` (``offline``: the
  replicas Metadata names offline, those on brokers not alive); ``configs``
  holds the same non-default configs as ``Configs:`` (null when the broker cannot describe
  configs). With a partition filter only topics with matching partitions appear, holding only
  those; with ``--topics-with-overrides`` only topics with overrides, with all their partitions.

``--describe --size`` (kcli's own, ``log_dir_sizes``) asks every live broker's DescribeLogDirs and
adds ``\tSize: N\tLeaderSize: N`` (bytes) to the topic line, before ``Configs:``, and to the end of
each partition line: ``Size`` all replicas summed (future ones too), ``LeaderSize`` the leader's
replica alone (``N/A`` when unknown); in JSON ``"size": {"replicas": int, "leader": int | null}``
on the topic and on each partition. Without it every line stays Kafka's.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.java_compat import parse_int, split
from kcli.output import Format
from kcli.tools.int_options import INT32
from kcli.tools.options import BootstrapServerOpt, CommandConfigOpt

ACTIONS = ("create", "list", "alter", "describe", "delete")
REPORT_FILTERS = ("under-replicated-partitions", "under-min-isr-partitions", "at-min-isr-partitions", "unavailable-partitions")
# Kafka 2.8's checkArgs for each report filter with --zookeeper: the options it cannot be used
# with, in the order Scala 2.13's immutable HashSet of them iterates (by the improved hash of each
# OptionSpec, a hash of its name), which decides the option named when several conflict.
ZK_REPORT_CONFLICTS = {
    "under-replicated-partitions": ("create", "unavailable-partitions", "delete", "list", "at-min-isr-partitions", "alter", "topics-with-overrides", "under-min-isr-partitions"),
    "under-min-isr-partitions": ("topics-with-overrides", "zookeeper", "create", "under-replicated-partitions", "unavailable-partitions", "delete", "list", "at-min-isr-partitions", "alter"),
    "at-min-isr-partitions": ("zookeeper", "create", "under-replicated-partitions", "unavailable-partitions", "delete", "list", "alter", "topics-with-overrides", "under-min-isr-partitions"),
    "unavailable-partitions": ("create", "under-replicated-partitions", "delete", "list", "at-min-isr-partitions", "alter", "topics-with-overrides", "under-min-isr-partitions"),
}
ALTER_CONFIG_HINT = " (the kafka-configs CLI supports altering topic configs with a --bootstrap-server option)"
COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. "
    "To avoid issues it is best to use either, but not both."
)
# Kafka 3.9 prints this text with its template placeholders left in, as written here.
MESSAGE_FORMAT_WARNING = (
    "WARNING: The configuration ${TopicConfig.MESSAGE_FORMAT_VERSION_CONFIG}=${props.getProperty(TopicConfig.MESSAGE_FORMAT_VERSION_CONFIG)} "
    "is specified. This configuration will be ignored if the version is newer than the inter.broker.protocol.version specified in the broker or "
    "if the inter.broker.protocol.version is 3.0 or newer. This configuration is deprecated and it will be removed in Apache Kafka 4.0."
)
SHORT_MAX = 32767


def register(app: typer.Typer) -> None:
    app.command("topics", help="Create, delete, describe, or change a topic.", no_args_is_help=True)(topics)


def topics(
    bootstrap_server: BootstrapServerOpt = None,
    command_config: CommandConfigOpt = None,
    zookeeper: Annotated[Optional[str], typer.Option("--zookeeper", help="HOST:PORT[/chroot]: act on the cluster's znodes as Kafka 2.8's tool does (instead of --bootstrap-server).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List all available topics.")] = False,
    describe: Annotated[bool, typer.Option("--describe", help="List details for the given topics.")] = False,
    create: Annotated[bool, typer.Option("--create", help="Create a new topic.")] = False,
    alter: Annotated[bool, typer.Option("--alter", help="Alter the number of partitions and the replica assignment (topic configs: kcli configs).")] = False,
    delete: Annotated[bool, typer.Option("--delete", help="Delete a topic.")] = False,
    topic: Annotated[Optional[str], typer.Option("--topic", help="The topic to create, alter, describe or delete; a regular expression except with --create.")] = None,
    topic_id: Annotated[Optional[str], typer.Option("--topic-id", help="The topic id to describe.")] = None,
    config: Annotated[Optional[list[str]], typer.Option("--config", help="A topic config override name=value for the topic being created (or altered, with --zookeeper) (repeatable).")] = None,
    delete_config: Annotated[Optional[list[str]], typer.Option("--delete-config", help="With --zookeeper --alter, a topic config override to remove (repeatable); with --bootstrap-server use kcli configs.")] = None,
    partitions: Annotated[Optional[int], typer.Option("--partitions", click_type=INT32, help="The number of partitions of the topic being created or altered; the broker's default when creating without it.")] = None,
    replication_factor: Annotated[Optional[int], typer.Option("--replication-factor", click_type=INT32, help="The replication factor of the topic being created; the broker's default without it.")] = None,
    replica_assignment: Annotated[Optional[str], typer.Option("--replica-assignment", help="Manual assignment for the topic being created or altered: b1:b2,b3:b4,... (partitions by comma, replicas by colon).")] = None,
    under_replicated_partitions: Annotated[bool, typer.Option("--under-replicated-partitions", help="With --describe, only partitions with fewer in-sync replicas than replicas.")] = False,
    unavailable_partitions: Annotated[bool, typer.Option("--unavailable-partitions", help="With --describe, only partitions whose leader is not available.")] = False,
    under_min_isr_partitions: Annotated[bool, typer.Option("--under-min-isr-partitions", help="With --describe, only partitions with fewer in-sync replicas than min.insync.replicas.")] = False,
    at_min_isr_partitions: Annotated[bool, typer.Option("--at-min-isr-partitions", help="With --describe, only partitions with exactly min.insync.replicas in-sync replicas.")] = False,
    topics_with_overrides: Annotated[bool, typer.Option("--topics-with-overrides", help="With --describe, only topics with overridden configs.")] = False,
    if_exists: Annotated[bool, typer.Option("--if-exists", help="With --alter, --delete or --describe, act only if the topic exists.")] = False,
    if_not_exists: Annotated[bool, typer.Option("--if-not-exists", help="With --create, create only if the topic does not exist.")] = False,
    exclude_internal: Annotated[bool, typer.Option("--exclude-internal", help="With --list or --describe, leave out internal topics.")] = False,
    partition_size_limit_per_response: Annotated[Optional[int], typer.Option("--partition-size-limit-per-response", click_type=INT32, help="Accepted for compatibility; kcli describes partitions through Metadata.")] = None,
    force: Annotated[bool, typer.Option("--force", hidden=True, help="Accepted and ignored (Kafka 2.x).")] = False,
    disable_rack_aware: Annotated[bool, typer.Option("--disable-rack-aware", help="With --zookeeper --create, place replicas without the brokers' racks (ignored with --bootstrap-server).")] = False,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's lines; json: one JSON object per topic (--list, --describe).")] = Format.plain,
    size: Annotated[bool, typer.Option("--size", help="With --describe (kcli's own): each topic's and partition's size on disk from DescribeLogDirs, all replicas summed (Size) and the leader's replica alone (LeaderSize).")] = False,
) -> None:
    from kcli.output import Output

    given = {
        "create": create, "list": list_, "alter": alter, "describe": describe, "delete": delete,
        "bootstrap-server": bootstrap_server is not None, "zookeeper": zookeeper is not None,
        "topic": topic is not None, "topic-id": topic_id is not None, "config": bool(config),
        "delete-config": bool(delete_config), "partitions": partitions is not None,
        "replication-factor": replication_factor is not None, "replica-assignment": replica_assignment is not None,
        "under-replicated-partitions": under_replicated_partitions, "unavailable-partitions": unavailable_partitions,
        "under-min-isr-partitions": under_min_isr_partitions, "at-min-isr-partitions": at_min_isr_partitions,
        "topics-with-overrides": topics_with_overrides, "if-exists": if_exists, "if-not-exists": if_not_exists,
        "exclude-internal": exclude_internal, "size": size,
    }
    out = Output(output)
    _check_args(given)
    if output is Format.json and not (list_ or describe):
        from kcli.errors import UsageError

        raise UsageError("--output json applies to --list and --describe")
    if zookeeper is not None:
        _zookeeper(out, zookeeper, topic, given, partitions, replication_factor, replica_assignment, config or [], delete_config or [], disable_rack_aware)
        return

    from kcli.tools._admin_common import client_settings, load_command_config

    settings = client_settings(load_command_config(command_config), bootstrap=bootstrap_server, warn=out.diag)
    if describe and if_exists and topic is not None and topic_id is not None:
        out.line("Only topic id will be used when both --topic and --topic-id are specified and topicId is not Uuid.ZERO_UUID")
    command = _TopicCommand(out, settings, topic, topic_id, exclude_internal, if_exists)
    try:
        if create:
            command.create(partitions, replication_factor, replica_assignment, config or [], if_not_exists)
        elif alter:
            command.alter(partitions, replica_assignment)
        elif list_:
            command.list()
        elif describe:
            command.describe(
                {name: flag for name, flag in zip(REPORT_FILTERS, (under_replicated_partitions, under_min_isr_partitions, at_min_isr_partitions, unavailable_partitions))},
                topics_with_overrides,
                size,
            )
        else:
            command.delete()
    finally:
        command.close()
        out.flush()


def _zookeeper(out, connect: str, topic: str | None, given: dict[str, bool], partitions, replication_factor, replica_assignment, config, delete_config, disable_rack_aware: bool) -> None:
    """The --zookeeper path: Kafka 2.8's ZookeeperTopicService (kcli.tools.topics_zookeeper)."""
    from kcli.errors import UsageError
    from kcli.tools.topics_zookeeper import ZookeeperTopicService

    if out.json:
        raise UsageError("--output json applies to --bootstrap-server (Kafka 2.8's --zookeeper path prints its lines)")
    service = ZookeeperTopicService(out, connect, topic, given["exclude-internal"], given["if-exists"])
    try:
        if given["create"]:
            service.create(partitions, replication_factor, replica_assignment, config, given["if-not-exists"], not disable_rack_aware)
        elif given["alter"]:
            service.alter(partitions, replica_assignment, config, delete_config)
        elif given["list"]:
            service.list()
        elif given["describe"]:
            service.describe(given["under-replicated-partitions"], given["unavailable-partitions"], given["topics-with-overrides"])
        else:
            service.delete()
    finally:
        service.close()
        out.flush()


def _check_args(given: dict[str, bool]) -> None:
    """Kafka's TopicCommandOptions.checkArgs, in its order, with its messages: 3.9's with
    --bootstrap-server, 2.8's with --zookeeper."""
    from kcli.errors import UsageError
    from kcli.tools._admin_common import option

    actions = [a for a in ACTIONS if given[a]]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    action = actions[0]
    zookeeper = given["zookeeper"]
    if zookeeper and given["bootstrap-server"]:
        raise UsageError("Only one of --bootstrap-server or --zookeeper must be specified")
    if not (given["bootstrap-server"] or zookeeper):
        raise UsageError("--bootstrap-server must be specified")
    if zookeeper and given["topic-id"]:
        raise UsageError(f'Option "{option("topic-id")}" can\'t be used with option "{option("zookeeper")}"')
    if action == "describe" and given["if-exists"] and not (given["topic"] or given["topic-id"]):
        raise UsageError("--topic or --topic-id is required to describe a topic")
    if action not in ("list", "describe") and not given["topic"]:
        raise UsageError(f'Missing required argument "{option("topic")}"')
    if zookeeper and action == "create" and not given["replica-assignment"]:
        for required in ("partitions", "replication-factor"):
            if not given[required]:
                raise UsageError(f'Missing required argument "{option(required)}"')
    if action == "alter" and not zookeeper:
        if given["config"]:
            raise UsageError(f'Option combination "[{option("bootstrap-server")}, {option("config")}]" can\'t be used with option "{option("alter")}"{ALTER_CONFIG_HINT}')
        if not given["partitions"]:
            raise UsageError(f'Missing required argument "{option("partitions")}"')

    def refuse(used: str, allowed_actions: tuple[str, ...], also: tuple[str, ...] = ()) -> None:
        if not given[used]:
            return
        for other in [a for a in ACTIONS if a not in allowed_actions] + list(also):
            if given[other]:
                raise UsageError(f'Option "{option(used)}" can\'t be used with option "{option(other)}"')

    refuse("config", ("alter", "create"))
    refuse("delete-config", ("alter",), ("bootstrap-server",))
    refuse("partitions", ("alter", "create"))
    refuse("replication-factor", ("create",))
    refuse("replica-assignment", ("alter", "create"))
    if action == "create":
        refuse("replica-assignment", ACTIONS, ("partitions", "replication-factor"))
    for report in REPORT_FILTERS:
        if zookeeper and given[report]:
            # Kafka 2.8: one report filter at a time, and the min-ISR ones not with --zookeeper
            # (its ZooKeeper path reads no configs); the first conflict named in its order.
            for other in ZK_REPORT_CONFLICTS[report]:
                if given[other]:
                    raise UsageError(f'Option "{option(report)}" can\'t be used with option "{option(other)}"')
        # Kafka 3.9: the report filters combine (a partition shows when any of them matches).
        refuse(report, ("describe",), ("topics-with-overrides",))
    refuse("topics-with-overrides", ("describe",), REPORT_FILTERS)
    refuse("if-exists", ("alter", "delete", "describe"))
    refuse("if-not-exists", ("create",))
    refuse("exclude-internal", ("list", "describe"))
    refuse("size", ("describe",), ("zookeeper",))


class ActionFailed(Exception):
    def __init__(self, messages: list[str]) -> None:
        super().__init__(messages[0])
        self.messages = messages


class TopicService:
    """What Kafka's TopicService implementations share: a failed action prints Kafka's one line on
    stdout and exits 1. Subclasses set ``out``."""

    out: object

    def _fail(self, messages: list[str]) -> None:
        for message in messages:
            self.out.line(f"Error while executing topic command : {message}")
        self.out.flush()
        raise typer.Exit(1)

    def _guard(self, action) -> None:
        from kcli.errors import KcliError

        try:
            action()
        except ActionFailed as exc:
            self._fail(exc.messages)
        except KcliError as exc:
            self._fail([str(exc)])


class _TopicCommand(TopicService):
    """Kafka's TopicService: each action over one admin session, opened on first use."""

    def __init__(self, out, settings, topic: str | None, topic_id: str | None, exclude_internal: bool, if_exists: bool) -> None:
        self.out = out
        self.settings = settings
        self.topic = topic
        self.topic_id = topic_id
        self.exclude_internal = exclude_internal
        self.if_exists = if_exists
        self._session = None

    def close(self) -> None:
        if self._session is not None:
            self._session.__exit__(None, None, None)
            self._session = None

    @property
    def admin(self):
        """The session's Admin; the session opens (connects) on first use."""
        if self._session is None:
            from kcli.tools._admin_common import AdminSession

            self._session = AdminSession(self.settings).__enter__()
        return self._session.admin

    def _run(self, coroutine):
        return self._session.run(coroutine)

    # -- shared steps --------------------------------------------------------------------------------

    def _topic_infos(self):
        return self._run(self.admin.list_topics(include_internal=not self.exclude_internal))

    def _matching(self, infos) -> list[str]:
        """Kafka's getTopics: the sorted names the --topic regex allows (all without one)."""
        from kcli.common import is_internal
        from kcli.tools._admin_common import TopicFilter

        names = sorted(infos)
        if self.topic is not None:
            wanted = TopicFilter(self.topic)
            return [n for n in names if wanted.allows(n, self.exclude_internal)]
        return [n for n in names if not (self.exclude_internal and is_internal(n))]

    def _ensure_found(self, found: list) -> None:
        if self.topic and not self.if_exists and not found:
            # Kafka 3.9 formats the Optional holding the name, hence "Optional[...]".
            raise ActionFailed([f"Topic 'Optional[{self.topic}]' does not exist as expected"])

    # -- create --------------------------------------------------------------------------------------

    def create(self, partitions: int | None, replication_factor: int | None, assignment_text: str | None, configs: list[str], if_not_exists: bool) -> None:
        self._guard(lambda: self._create(partitions, replication_factor, assignment_text, configs, if_not_exists))

    def _create(self, partitions, replication_factor, assignment_text, configs, if_not_exists) -> None:
        from kcli.client.admin import NewTopic
        from kcli.errors import ErrorCode

        name = self.topic
        assignment = parse_replica_assignment(assignment_text) if assignment_text else {}
        overrides = parse_topic_configs(configs)
        if "message.format.version" in overrides:
            self.out.line(MESSAGE_FORMAT_WARNING)
        if "." in name or "_" in name:
            self.out.line(COLLISION_WARNING)
        if replication_factor is not None and not 1 <= replication_factor <= SHORT_MAX:
            raise ActionFailed([f"The replication factor must be between 1 and {SHORT_MAX} inclusive"])
        if partitions is not None and partitions < 1:
            raise ActionFailed(["The partitions must be greater than 0"])
        if assignment:
            new_topic = NewTopic(name, assignments=assignment, configs=overrides)
        else:
            new_topic = NewTopic(name, partitions if partitions is not None else -1, replication_factor if replication_factor is not None else -1, configs=overrides)
        result = self._run(self.admin.create_topics([new_topic]))[name]
        if result.error is not None:
            if result.error.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and if_not_exists:
                return
            raise result.error
        self.out.line(f"Created topic {name}.")

    # -- alter ---------------------------------------------------------------------------------------

    def alter(self, partitions: int, assignment_text: str | None) -> None:
        self._guard(lambda: self._alter(partitions, assignment_text))

    def _alter(self, partitions: int, assignment_text: str | None) -> None:
        from kcli.client.admin import NewPartitions

        assignment = parse_replica_assignment(assignment_text) if assignment_text else {}
        names = self._matching(self._topic_infos())
        self._ensure_found(names)
        if not names:
            return
        changes = {}
        if assignment:
            described = self._run(self.admin.describe_topics(names))
            for name in names:
                info = described[name]
                if isinstance(info, Exception):
                    raise info
                extra = [brokers for index, brokers in assignment.items() if index >= len(info.partitions)]
                changes[name] = NewPartitions(partitions, extra)
        else:
            changes = {name: NewPartitions(partitions) for name in names}
        results = self._run(self.admin.create_partitions(changes))
        failed = [str(results[name]) for name in names if results.get(name) is not None]
        if failed:
            raise ActionFailed(failed)

    # -- delete --------------------------------------------------------------------------------------

    def delete(self) -> None:
        self._guard(self._delete)

    def _delete(self) -> None:
        names = self._matching(self._topic_infos())
        self._ensure_found(names)
        if not names:
            return
        results = self._run(self.admin.delete_topics(names))
        failed = [str(results[name]) for name in names if results.get(name) is not None]
        if failed:
            raise ActionFailed(failed)

    # -- list ----------------------------------------------------------------------------------------

    def list(self) -> None:
        self._guard(self._list)

    def _list(self) -> None:
        from kcli.common import uuid_to_string

        infos = self._topic_infos()
        names = self._matching(infos)
        if self.out.json:
            for name in names:
                info = infos[name]
                self.out.obj({"topic": name, "topic_id": _topic_id(info.topic_id, uuid_to_string), "internal": info.internal, "partitions": len(info.partitions)})
        else:
            self.out.line("\n".join(names))

    # -- describe ------------------------------------------------------------------------------------

    def describe(self, reports: dict[str, bool], overrides_only: bool, size: bool = False) -> None:
        self._guard(lambda: self._describe(reports, overrides_only, size))

    def _describe(self, reports: dict[str, bool], overrides_only: bool, size: bool) -> None:
        from kcli.client.admin import TOPIC, ConfigResource
        from kcli.errors import ErrorCode
        from kcli.common import uuid_from_string
        from kcli.errors import KcliError
        from kcli.java_compat import hash_map_order

        infos = self._topic_infos()
        try:
            wanted_id = uuid_from_string(self.topic_id) if self.topic_id is not None else None
        except ValueError as exc:
            raise KcliError(str(exc)) from None
        if wanted_id is not None and wanted_id.int != 0:
            found = [info for info in infos.values() if info.topic_id == wanted_id]
            if not found and not self.if_exists:
                raise ActionFailed([f"TopicId '{self.topic_id}' does not exist as expected"])
            descriptions = found
        else:
            names = self._matching(infos)
            self._ensure_found(names)
            described = self._run(self.admin.describe_topics(names)) if names else {}
            descriptions = []
            for name in hash_map_order(names, initial_capacity=len(names)):
                info = described[name]
                if isinstance(info, Exception):
                    raise info
                descriptions.append(info)
        if not descriptions:
            return
        resources = [ConfigResource(TOPIC, info.name) for info in descriptions]
        configs = self._run(self.admin.describe_configs(resources))
        topic_configs = {}
        for resource in resources:
            result = configs[resource]
            if result.error is not None:
                if result.error.error_code == ErrorCode.UNSUPPORTED_VERSION:
                    topic_configs[resource.name] = None
                    continue
                raise result.error
            topic_configs[resource.name] = result
        live = set(self._run(self.admin.describe_cluster()).nodes)
        sizes = self._sizes(descriptions, live) if size else None
        printer = _Describer(self.out, reports, overrides_only, live, sizes)
        for info in descriptions:
            printer.topic(info, topic_configs[info.name])


    def _sizes(self, descriptions, live: set[int]):
        """Every partition's size from the live brokers' DescribeLogDirs; a broker that fails
        is one warning on stderr, its replicas left out."""
        from kcli.common import TopicPartition
        from kcli.tools.log_dir_sizes import partition_sizes

        answers = self._run(self.admin.describe_log_dirs(sorted(live)))
        for broker, answer in sorted(answers.items()):
            if isinstance(answer, Exception):
                self.out.diag(f"WARNING: broker {broker} did not describe its log dirs ({answer}): its replicas are left out of the sizes")
        leaders = {TopicPartition(info.name, p): part.leader for info in descriptions for p, part in info.partitions.items()}
        return partition_sizes(answers, leaders)


class _Describer:
    """Kafka's DescribeOptions with TopicDescription / PartitionDescription printing; with
    ``sizes`` (``--size``), each topic's and partition's size on disk too."""

    def __init__(self, out, reports: dict[str, bool], overrides_only: bool, live_brokers: set[int], sizes=None) -> None:
        self.out = out
        self.sizes = sizes
        self.reports = reports
        self.overrides_only = overrides_only
        self.live = live_brokers
        self.describe_configs = not any(reports.values())
        self.describe_partitions = not overrides_only

    def topic(self, info, config) -> None:
        from kcli.java_compat import hash_map_order
        from kcli.common import uuid_to_string

        non_default = {}
        if config is not None:
            entries = {e.name: e for e in config.entries if not e.is_default}
            # Kafka's Config keeps its entries in a HashMap filled in the broker's order.
            non_default = {name: entries[name].value for name in hash_map_order(e.name for e in config.entries if not e.is_default)}
        min_isr = _min_isr(config)
        partitions = [info.partitions[p] for p in sorted(info.partitions)]
        shown = [p for p in partitions if self._shows_partition(p, min_isr)] if self.describe_partitions else []
        sizes = None
        if self.sizes is not None:
            from kcli.common import TopicPartition
            from kcli.tools.log_dir_sizes import total_size

            sizes = {p.partition: self.sizes[TopicPartition(info.name, p.partition)] for p in partitions}
            total = total_size(sizes.values())
        show_summary = self.describe_configs and (not self.overrides_only or bool(non_default)) and bool(partitions)
        if self.out.json:
            if not show_summary and not shown:
                return
            described = {
                "topic": info.name,
                "topic_id": _topic_id(info.topic_id, uuid_to_string),
                "internal": info.internal,
                "partition_count": len(partitions),
                "replication_factor": len(partitions[0].replicas) if partitions else 0,
                "configs": None if config is None else non_default,
                "partitions": [
                    {"partition": p.partition, "leader": p.leader if p.leader >= 0 else None, "replicas": list(p.replicas), "isr": list(p.isr), "offline": list(p.offline)}
                    | ({"size": sizes[p.partition].as_json()} if sizes is not None else {})
                    for p in (shown if not self.describe_configs else partitions)
                ],
            }
            if sizes is not None:
                described["size"] = total.as_json()
            self.out.obj(described)
            return
        if show_summary:
            line = f"Topic: {info.name}"
            if info.topic_id is not None and info.topic_id.int != 0:
                line += f"\tTopicId: {uuid_to_string(info.topic_id)}"
            line += f"\tPartitionCount: {len(partitions)}\tReplicationFactor: {len(partitions[0].replicas)}"
            if sizes is not None:
                line += _size_fields(total)
            line += "\tConfigs: " + ",".join(f"{k}={_text(v)}" for k, v in non_default.items())
            self.out.line(line)
        for p in shown:
            self.out.line(
                f"\tTopic: {info.name}\tPartition: {p.partition}\tLeader: {p.leader if p.leader >= 0 else 'none'}"
                f"\tReplicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}\tElr: N/A\tLastKnownElr: N/A"
                + (_size_fields(sizes[p.partition]) if sizes is not None else "")
            )

    def _shows_partition(self, p, min_isr: int) -> bool:
        if self.describe_configs:
            return True
        has_leader = p.leader >= 0
        return (
            (self.reports["under-replicated-partitions"] and len(p.replicas) - len(p.isr) > 0)
            or (self.reports["unavailable-partitions"] and (not has_leader or p.leader not in self.live))
            or (self.reports["under-min-isr-partitions"] and (not has_leader or len(p.isr) < min_isr))
            or (self.reports["at-min-isr-partitions"] and len(p.isr) == min_isr)
        )


def _size_fields(size) -> str:
    """``\tSize: N\tLeaderSize: N`` (bytes; N/A when the leader's replica is unknown)."""
    return f"\tSize: {size.replicas}\tLeaderSize: {'N/A' if size.leader is None else size.leader}"


def _min_isr(config) -> int:
    entry = config.get("min.insync.replicas") if config is not None else None
    try:
        return int(entry.value) if entry is not None and entry.value is not None else 1
    except ValueError:
        return 1


def _text(value: str | None) -> str:
    return "null" if value is None else value


def _topic_id(value, render) -> str | None:
    return render(value) if value is not None and value.int != 0 else None


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Kafka's parseReplicaAssignment: ``b1:b2,b3:b4`` -> {0: [b1, b2], 1: [b3, b4]}."""
    result: dict[int, list[int]] = {}
    for index, item in enumerate(split(text, ",")):
        brokers = []
        for part in split(item, ":"):
            part = part.strip()
            try:
                brokers.append(parse_int(part))
            except ValueError:
                raise ActionFailed([f'For input string: "{part}"']) from None
        seen: set[int] = set()
        duplicates = []
        for broker in brokers:
            if broker in seen and broker not in duplicates:
                duplicates.append(broker)
            seen.add(broker)
        if duplicates:
            raise ActionFailed(["Partition replica lists may not contain duplicate entries: " + ",".join(map(str, duplicates))])
        result[index] = brokers
        if len(brokers) != len(result[0]):
            raise ActionFailed([f"Partition {index} has different replication factor: [{', '.join(map(str, brokers))}]"])
    return result


def parse_topic_configs(items: list[str]) -> dict[str, str]:
    """``--config`` values as Kafka splits them: on ``\\s*=\\s*``, exactly two parts."""
    props: dict[str, str] = {}
    pairs = [split(item, r"\s*=\s*") for item in items]
    if not all(len(pair) == 2 for pair in pairs):
        raise ActionFailed(['requirement failed: Invalid topic config: all configs to be added must be in the format "key=val".'])
    for key, value in pairs:
        props[key.strip()] = value.strip()
    return props
