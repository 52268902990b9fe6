"""``kcli configs``: Kafka's kafka-configs.sh for topics, brokers and broker loggers, with Kafka 3.9's
flags, checks, lines and messages.

Entities: ``--entity-type topics|brokers|broker-loggers`` with ``--entity-name`` (or, for brokers,
``--entity-default``: the cluster-wide defaults), or the shorthands ``--topic``, ``--broker``,
``--broker-defaults``, ``--broker-logger``. Users (``--entity-type users`` or ``--user``): their
SCRAM credentials (``configs_users``). Clients, IPs, client metrics and quotas are refused with
one line: kcli does not manage them yet.

``--describe`` prints, per entity, ``Dynamic configs for topic T are:`` (``All configs ...`` with
``--all``; ``Default configs for brokers in the cluster are:`` for the defaults) and one line per
config, sorted by name: ``  name=value sensitive=false synonyms={SOURCE:name=value, ...}``. Without
``--all`` only the entity's own dynamic configs are listed (a topic's overrides, a broker's
per-broker dynamic configs, the dynamic cluster defaults). Without an entity name every topic, or
every broker and then the defaults, is described.

``--alter`` with ``--add-config k1=v1,k2=[a,b]`` (brackets group values holding commas),
``--add-config-file`` (a properties file) and ``--delete-config k1,k2`` changes the configs through
IncrementalAlterConfigs (SET and DELETE; brokers before Kafka 2.3 get AlterConfigs with the whole
new set) and prints ``Completed updating config for topic T.`` (``... for broker 0.``,
``Completed updating default config for brokers in the cluster.``). Deleting a config the entity
does not set fails with ``Invalid config(s): k``, as in Kafka. Kafka 3.9 alters broker configs with
the legacy AlterConfigs; kcli uses the incremental API wherever the broker has it, which changes the
same configs without having to resend (sensitive) values it cannot read back.

Argument errors exit 2 with Kafka's message; failures exit 1 with one ``Error: ...`` line per
failed entity.

``--zookeeper HOST:PORT[/chroot]`` (without ``--bootstrap-server``) is Kafka 2.8's ZooKeeper path
for topics and brokers, with 2.8's checks where they differ (``--all`` needs
``--bootstrap-server``; the entity types are topics, clients, users, brokers, ips; clients and ips
are not available yet): ``Configs for topic 'T' are k=v,k2=v2`` (``brokers '0'``,
``default brokers``) and ``Completed updating config for entity: topic 'T'.``, the config znode
written with a change notification that live brokers follow (``kcli.tools.configs_zookeeper``).

``--output json`` (``--describe``) writes one object per entity: ``{"entity_type": str,
"entity_name": str | null (null: the cluster-wide defaults), "configs": [{"name": str, "value":
str | null, "source": str, "sensitive": bool, "read_only": bool, "synonyms": [{"name": str,
"value": str | null, "source": str}]}]}``, the configs the plain lines would list, sorted by name;
sources are Kafka's names (DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...).

kcli's own additions to ``--describe`` (``config_provenance``): ``--provenance`` appends
`` source=SOURCE`` to each config line, the Kafka source name of the value in effect (the first
of its synonyms: DEFAULT_CONFIG, STATIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
DYNAMIC_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG); the line before it stays Kafka's byte for byte.
``--only-overrides`` describes as ``--all`` does but keeps only the configs whose value is not
Kafka's default, wherever it is set. In JSON each config then has ``"provenance": str``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.output import Format
from kcli.tools.options import BootstrapServerOpt, CommandConfigOpt

TOPICS, CLIENTS, USERS, BROKERS, IPS = "topics", "clients", "users", "brokers", "ips"
BROKER_LOGGERS, CLIENT_METRICS = "broker-loggers", "client-metrics"
ALLOWED_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, IPS, BROKER_LOGGERS, CLIENT_METRICS)
SUPPORTED_TYPES = (TOPICS, BROKERS, BROKER_LOGGERS, USERS)
MESSAGE_FORMAT_WARNING = (
    "WARNING: The configuration message.format.version={} is specified. This configuration will be ignored if the version is newer "
    "than the inter.broker.protocol.version specified in the broker or if the inter.broker.protocol.version is 3.0 or newer. "
    "This configuration is deprecated and it will be removed in Apache Kafka 4.0."
)


def register(app: typer.Typer) -> None:
    app.command(
        "configs",
        help="Describe or change the configs of a topic, broker or broker logger.",
        no_args_is_help=True,
    )(configs)


def configs(
    bootstrap_server: BootstrapServerOpt = None,
    bootstrap_controller: Annotated[Optional[str], typer.Option("--bootstrap-controller", help="KRaft controllers: not available (kcli has none).")] = None,
    zookeeper: Annotated[Optional[str], typer.Option("--zookeeper", help="ZooKeeper mode (Kafka 2.8's path): HOST:PORT[/chroot]; topics and brokers.")] = None,
    zk_tls_config_file: Annotated[Optional[str], typer.Option("--zk-tls-config-file", hidden=True, help="Only with --zookeeper: not available yet.")] = None,
    command_config: CommandConfigOpt = None,
    alter: Annotated[bool, typer.Option("--alter", help="Alter the configs of the entity.")] = False,
    describe: Annotated[bool, typer.Option("--describe", help="List the configs of the entity.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="With --describe, every config (static and default ones too), not only dynamic ones.")] = False,
    entity_type: Annotated[Optional[list[str]], typer.Option("--entity-type", help="Type of entity: topics, brokers, broker-loggers or users (SCRAM credentials; clients, ips, client-metrics: not supported).")] = None,
    entity_name: Annotated[Optional[list[str]], typer.Option("--entity-name", help="Name of the entity: a topic name, a broker id or a user principal.")] = None,
    entity_default: Annotated[bool, typer.Option("--entity-default", help="The cluster-wide default entity (brokers).")] = False,
    add_config: Annotated[Optional[str], typer.Option("--add-config", help="Configs to set: k1=v1,k2=[v1,v2],k3=v3 (brackets group values holding commas).")] = None,
    add_config_file: Annotated[Optional[str], typer.Option("--add-config-file", help="A properties file of configs to set.")] = None,
    delete_config: Annotated[Optional[list[str]], typer.Option("--delete-config", help="Config names to remove: k1,k2 (repeatable).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Accepted for compatibility (kcli never prompts).")] = False,
    topic: Annotated[Optional[str], typer.Option("--topic", help="The topic's name (same as --entity-type topics --entity-name).")] = None,
    client: Annotated[Optional[str], typer.Option("--client", help="A client id: not supported.")] = None,
    client_defaults: Annotated[bool, typer.Option("--client-defaults", help="Client defaults: not supported.")] = False,
    user: Annotated[Optional[str], typer.Option("--user", help="A user principal (same as --entity-type users --entity-name): its SCRAM credentials.")] = None,
    user_defaults: Annotated[bool, typer.Option("--user-defaults", help="User defaults: not supported.")] = False,
    broker: Annotated[Optional[str], typer.Option("--broker", help="The broker's id (same as --entity-type brokers --entity-name).")] = None,
    broker_defaults: Annotated[bool, typer.Option("--broker-defaults", help="The config defaults of all brokers.")] = False,
    broker_logger: Annotated[Optional[str], typer.Option("--broker-logger", help="The broker's id, for its logger levels.")] = None,
    ip: Annotated[Optional[str], typer.Option("--ip", help="An IP address: not supported.")] = None,
    ip_defaults: Annotated[bool, typer.Option("--ip-defaults", help="IP defaults: not supported.")] = False,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's lines; json: one JSON object per entity (--describe).")] = Format.plain,
    provenance: Annotated[bool, typer.Option("--provenance", help="With --describe (kcli's own): end each config line with source=SOURCE, where its value comes from: DEFAULT_CONFIG (Kafka's default), STATIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_BROKER_CONFIG or DYNAMIC_TOPIC_CONFIG (the first of its synonyms).")] = False,
    only_overrides: Annotated[bool, typer.Option("--only-overrides", help="With --describe (kcli's own): every config as --all, but only those whose value is not Kafka's default (set in server.properties, dynamically for the brokers or one broker, or on the topic).")] = False,
) -> None:
    from kcli.errors import KcliError, UsageError
    from kcli.output import Output

    out = Output(output)
    flags = [(topic, TOPICS), (client, CLIENTS), (user, USERS), (broker, BROKERS), (broker_logger, BROKER_LOGGERS), (ip, IPS)]
    default_flags = [(client_defaults, CLIENTS), (user_defaults, USERS), (broker_defaults, BROKERS), (ip_defaults, IPS)]
    types = list(entity_type or []) + [t for value, t in flags if value is not None] + [t for on, t in default_flags if on]
    names = list(entity_name or []) + ([""] if entity_default else []) + [v for v, _ in flags if v is not None] + ["" for on, _ in default_flags if on]

    # Kafka 3.9's ConfigCommandOptions.checkArgs, in its order.
    if alter + describe != 1:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    if describe:
        for used, other in (("alter", alter), ("add-config", add_config is not None), ("delete-config", bool(delete_config))):
            if other:
                raise UsageError(f'Option "[describe]" can\'t be used with option "[{used}]"')
    for used, on in (("provenance", provenance), ("only-overrides", only_overrides)):
        if on and not describe:
            raise UsageError(f'Option "[{used}]" can only be used with option "[describe]"')
        if on and zookeeper is not None and bootstrap_server is None:
            raise UsageError(f"--bootstrap-server must be specified for --{used}")
    duplicates = sorted({t for t in types if types.count(t) > 1}, key=types.index)
    if duplicates:
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    # --zookeeper alone is Kafka 2.8's ZooKeeper path, with 2.8's checks where they differ.
    zk_mode = zookeeper is not None and bootstrap_server is None and bootstrap_controller is None
    if zk_mode:
        from kcli.tools.configs_zookeeper import check_entity_type

        for value in types:
            check_entity_type(value)
    for value in types:
        if value not in ALLOWED_TYPES:
            raise UsageError(
                f"Invalid entity type {value}, the entity type must be one of {', '.join(ALLOWED_TYPES)} with a --bootstrap-server or --bootstrap-controller argument"
            )
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise UsageError(f"Only '{USERS}' and '{CLIENTS}' entity types may be specified together")
    if (entity_name or entity_type or entity_default) and (any(v is not None for v, _ in flags) or any(on for on, _ in default_flags)):
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    connects = sum(x is not None for x in (bootstrap_server, bootstrap_controller, zookeeper))
    if connects == 0:
        raise UsageError("One of the required --bootstrap-server, --boostrap-controller, or --zookeeper arguments must be specified")
    if connects > 1:
        raise UsageError("Only one of --bootstrap-server, --boostrap-controller, and --zookeeper can be specified")
    if zk_tls_config_file is not None and zookeeper is None:
        raise UsageError("Only the --zookeeper option can be used with the --zk-tls-config-file option.")
    if zk_mode and all_:
        raise UsageError("--bootstrap-server must be specified for --all")
    if zk_mode and zk_tls_config_file is not None:
        raise KcliError("--zk-tls-config-file is not available yet: kcli's ZooKeeper sessions are plain")
    if bootstrap_controller is not None:
        raise KcliError("--bootstrap-controller is not available: kcli clusters have no KRaft controllers; use --bootstrap-server")
    has_name = any(names)
    has_default = any(n == "" for n in names)
    if has_name and (BROKERS in types or BROKER_LOGGERS in types):
        for value in (entity_name or []) + [v for v in (broker, broker_logger) if v is not None]:
            if not _is_broker_id(value):
                raise UsageError(f"The entity name for {types[0]} must be a valid integer broker id, but it is: {value}")
    if describe and BROKER_LOGGERS in types and not has_name:
        raise UsageError(f"an entity name must be specified with --describe of {','.join(types)}")
    if alter:
        if set(types) & {USERS, CLIENTS, BROKERS, IPS}:
            if not has_name and not has_default:
                raise UsageError("an entity-name or default entity must be specified with --alter of users, clients, brokers or ips")
        elif not has_name:
            raise UsageError(f"an entity name must be specified with --alter of {','.join(types)}")
        if add_config is not None and add_config_file is not None:
            raise UsageError("Only one of --add-config or --add-config-file must be specified")
        if add_config is None and add_config_file is None and not delete_config:
            raise UsageError("At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter")
    if zk_mode:
        if output is Format.json:
            raise UsageError("--output json applies to --describe with --bootstrap-server")
        from kcli.tools.configs_zookeeper import run

        try:
            run(out, zookeeper, alter=alter, entity_type=types[0], entity_name=names[0] if names else None,
                add_config=add_config, add_config_file=add_config_file, delete_config=delete_config)
        finally:
            out.flush()
        return
    if output is Format.json and not describe:
        raise UsageError("--output json applies to --describe")
    unsupported = [t for t in types if t not in SUPPORTED_TYPES]
    if unsupported:
        raise KcliError(f"entity type '{unsupported[0]}' is not supported by kcli yet (quotas, SCRAM credentials and client metrics); supported: {', '.join(SUPPORTED_TYPES)}")
    if alter and len(types) != len(names):
        raise UsageError("An entity name must be specified for every entity type")

    from kcli.tools._admin_common import AdminSession, client_settings, load_command_config

    settings = client_settings(load_command_config(command_config), bootstrap=bootstrap_server, warn=out.diag)
    entity_kind = types[0]
    try:
        if entity_kind == USERS:
            from kcli.tools import configs_users

            if alter:
                additions = parse_configs_to_add(add_config, add_config_file, out)
                deletions = [name.strip() for item in delete_config or [] for name in item.split(",") if item]
                configs_users.checked_changes(additions, deletions, default_entity=names[0] == "", through="bootstrap")
                with AdminSession(settings) as session:
                    configs_users.alter_through_broker(session, out, names[0], additions, deletions)
            else:
                if all_ or provenance or only_overrides:
                    raise UsageError("--all, --provenance and --only-overrides describe topics and brokers, not users")
                with AdminSession(settings) as session:
                    configs_users.describe_through_broker(session, out, names[0] if names and names[0] else None)
            return
        if alter:
            additions = parse_configs_to_add(add_config, add_config_file, out)
            deletions = [name.strip() for item in delete_config or [] for name in item.split(",") if item]
            with AdminSession(settings) as session:
                _alter(session, out, entity_kind, names[0], additions, deletions)
        else:
            with AdminSession(settings) as session:
                failed = _describe(session, out, entity_kind, names[0] if names else None, all_ or only_overrides, provenance=provenance, only_overrides=only_overrides)
            if failed:
                raise typer.Exit(1)
    finally:
        out.flush()


# -- describe ----------------------------------------------------------------------------------------


def _describe(session, out, kind: str, name: str | None, describe_all: bool, *, provenance: bool = False, only_overrides: bool = False) -> bool:
    """Describe one entity, or every entity of ``kind``; True when any of them failed."""
    from kcli.java_compat import hash_map_order
    from kcli.tools import config_provenance

    if name is not None:
        entities = [name]
    elif kind == TOPICS:
        entities = hash_map_order(sorted(session.run(session.admin.list_topics())))
    else:
        entities = [str(node) for node in session.run(session.admin.describe_cluster()).nodes] + [""]
    failed = False
    for entity in entities:
        if not out.json:
            if entity == "" and kind != TOPICS:
                out.line(f"Default configs for {kind} in the cluster are:")
            else:
                out.line(f"{'All' if describe_all else 'Dynamic'} configs for {kind[:-1]} {entity} are:")
        try:
            entries = _resource_configs(session, kind, entity, include_synonyms=True, describe_all=describe_all)
        except Exception as exc:  # noqa: BLE001 - a KcliError, reported per entity
            from kcli.errors import KcliError

            if not isinstance(exc, KcliError):
                raise
            out.diag(f"Error: {exc}")
            failed = True
            continue
        if only_overrides:
            entries = [e for e in entries if config_provenance.is_override(e)]
        if out.json:
            out.obj(
                {
                    "entity_type": kind,
                    "entity_name": None if entity == "" and kind != TOPICS else entity,
                    "configs": [
                        {
                            "name": e.name,
                            "value": e.value,
                            "source": e.source.name,
                            "sensitive": e.sensitive,
                            "read_only": e.read_only,
                            "synonyms": [{"name": s.name, "value": s.value, "source": s.source.name} for s in e.synonyms],
                        }
                        | ({"provenance": config_provenance.provenance(e)} if provenance or only_overrides else {})
                        for e in entries
                    ],
                }
            )
            continue
        for e in entries:
            synonyms = ", ".join(f"{s.source.name}:{s.name}={_text(s.value)}" for s in e.synonyms)
            line = f"  {e.name}={_text(e.value)} sensitive={'true' if e.sensitive else 'false'} synonyms={{{synonyms}}}"
            out.line(f"{line} source={config_provenance.provenance(e)}" if provenance else line)
    return failed


def _resource_configs(session, kind: str, name: str, *, include_synonyms: bool, describe_all: bool):
    """Kafka's getResourceConfig: the entity's entries, its dynamic ones only unless
    ``describe_all``, sorted by name. Raises the entity's error."""
    from kcli.client.admin import BROKER, BROKER_LOGGER, TOPIC, ConfigResource, ConfigSource
    from kcli.errors import UsageError

    if kind == TOPICS:
        resource_type, dynamic = TOPIC, ConfigSource.DYNAMIC_TOPIC_CONFIG
    elif kind == BROKERS:
        if name and not _is_broker_id(name):
            raise UsageError(f"The entity name for {kind} must be a valid integer broker id, found: {name}")
        resource_type = BROKER
        dynamic = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if name == "" else ConfigSource.DYNAMIC_BROKER_CONFIG
    else:
        if name and not _is_broker_id(name):
            raise UsageError(f"The entity name for {kind} must be a valid integer broker id, found: {name}")
        resource_type, dynamic = BROKER_LOGGER, None
    resource = ConfigResource(resource_type, name)
    result = session.run(session.admin.describe_configs([resource], include_synonyms=include_synonyms))[resource]
    if result.error is not None:
        raise result.error
    entries = [e for e in result.entries if describe_all or dynamic is None or e.source is dynamic]
    return sorted(entries, key=lambda e: e.name)


# -- alter -------------------------------------------------------------------------------------------


def _alter(session, out, kind: str, name: str, additions: dict[str, str], deletions: list[str]) -> None:
    from kcli.client.admin import BROKER, BROKER_LOGGER, TOPIC, AlterOp, ConfigOp, ConfigResource
    from kcli.errors import ErrorCode, KafkaError

    if kind == BROKER_LOGGERS:
        valid = {e.name for e in _resource_configs(session, kind, name, include_synonyms=True, describe_all=False)}
        invalid = [k for k in deletions if k not in valid] + [k for k in additions if k not in valid]
        if invalid:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid broker logger(s): {','.join(invalid)}")
        resource_type = BROKER_LOGGER
    else:
        current = {e.name for e in _resource_configs(session, kind, name, include_synonyms=False, describe_all=False)}
        invalid = [k for k in deletions if k not in current]
        if invalid:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid config(s): {','.join(invalid)}")
        resource_type = TOPIC if kind == TOPICS else BROKER
    resource = ConfigResource(resource_type, name)
    ops = [ConfigOp(k, AlterOp.SET, v) for k, v in additions.items()] + [ConfigOp(k, AlterOp.DELETE, "") for k in deletions]
    error = session.run(session.admin.incremental_alter_configs({resource: ops}))[resource]
    if error is not None:
        raise error
    if name:
        out.line(f"Completed updating config for {kind[:-1]} {name}.")
    else:
        out.line(f"Completed updating default config for {kind} in the cluster.")


def parse_configs_to_add(add_config: str | None, add_config_file: str | None, out) -> dict[str, str]:
    """Kafka 3.9's parseConfigsToBeAdded: ``read_configs_to_add``, its warning and key check."""
    import re

    from kcli.errors import UsageError

    props = read_configs_to_add(add_config, add_config_file)
    if "message.format.version" in props:
        out.line(MESSAGE_FORMAT_WARNING.format(props["message.format.version"]))
    for key in props:
        if not re.fullmatch(r"[a-zA-Z0-9._-]*", key):
            raise UsageError(f"Invalid character found for config key: {key}")
    return props


def read_configs_to_add(add_config: str | None, add_config_file: str | None) -> dict[str, str]:
    """The file's properties, then ``--add-config``'s pairs (brackets group values holding
    commas), as Kafka's parseConfigsToBeAdded reads them."""
    import re

    from kcli.config import read_properties
    from kcli.errors import UsageError

    props: dict[str, str] = {}
    if add_config_file is not None:
        props.update(read_properties(add_config_file))
    if add_config is not None:
        outside_brackets = r"(?=[^\]]*(?:\[|$))"
        items = re.split("," + outside_brackets, add_config)
        while len(items) > 1 and items[-1] == "":
            items.pop()  # Java's split drops trailing empty strings
        pairs = [re.split(r"\s*=\s*" + outside_brackets, item) for item in items]
        if not all(len(pair) == 2 for pair in pairs):
            raise UsageError('requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".')
        for key, value in pairs:
            props[key.strip()] = re.sub(r"\[?\]?", "", value).strip()
    return props


def _text(value: str | None) -> str:
    return "null" if value is None else value


def _is_broker_id(text: str) -> bool:
    """True when Java's Integer.parseInt reads ``text``."""
    from kcli.java_compat import parse_int

    try:
        parse_int(text)
    except ValueError:
        return False
    return True
