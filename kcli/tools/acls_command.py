"""The work behind ``kcli acls`` (Kafka 3.9's AclCommand): the flags checked as Kafka checks
them, the bindings and filters they stand for, and the two services: a broker's ACL APIs
(``--bootstrap-server``) or the ACL znodes themselves (``--authorizer-properties
zookeeper.connect=...``, through ``kcli.metadata.acl_store`` and the authorizer's own create and
delete, as Kafka 2.8's tool runs the AclAuthorizer in process)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import typer

from kcli.errors import KcliError, UsageError
from kcli.output import Format, Output
from kcli.security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    parse_principal,
)

O = AclOperation
DEPRECATION = (
    "Warning: support for ACL configuration directly through the authorizer is deprecated and will be removed in a future "
    "release. Please use --bootstrap-server instead to set ACLs through the admin client."
)
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ZK_TIMEOUT_MS = 30000  # Kafka 2.8's zookeeper.session.timeout.ms and connection timeout for the tool
ANY_ENTRY = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)


@dataclass
class AclOptions:
    bootstrap_server: str | None = None
    command_config: str | None = None
    authorizer: str | None = None
    authorizer_properties: list[str] = field(default_factory=list)
    add: bool = False
    remove: bool = False
    list: bool = False
    topics: list[str] = field(default_factory=list)
    cluster: bool = False
    groups: list[str] = field(default_factory=list)
    transactional_ids: list[str] = field(default_factory=list)
    delegation_tokens: list[str] = field(default_factory=list)
    resource_pattern_type: str = "LITERAL"
    operations: list[str] = field(default_factory=list)
    allow_principals: list[str] = field(default_factory=list)
    deny_principals: list[str] = field(default_factory=list)
    principals: list[str] = field(default_factory=list)
    allow_hosts: list[str] = field(default_factory=list)
    deny_hosts: list[str] = field(default_factory=list)
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False
    force: bool = False


def check_args(o: AclOptions) -> None:
    """AclCommandOptions.checkArgs, each refusal Kafka's message."""
    if o.bootstrap_server and o.authorizer:
        raise UsageError("Only one of --bootstrap-server or --authorizer must be specified")
    if not o.bootstrap_server and not o.authorizer_properties:
        raise UsageError('Missing required argument "[authorizer-properties]"')
    if o.command_config and not o.bootstrap_server:
        raise UsageError("The --command-config option can only be used with --bootstrap-server option")
    if o.authorizer_properties and o.bootstrap_server:
        raise UsageError("The --authorizer-properties option can only be used with --authorizer option")
    if sum((o.add, o.remove, o.list)) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    if o.list:
        for flag, given in (("producer", o.producer), ("consumer", o.consumer), ("allow-host", o.allow_hosts), ("allow-principal", o.allow_principals),
                            ("deny-host", o.deny_hosts), ("deny-principal", o.deny_principals)):
            if given:
                raise UsageError(f'Option "[list]" can\'t be used with option "[{flag}]"')
    for role, used in (("producer", o.producer), ("consumer", o.consumer)):
        if used:
            for flag, given in (("operation", o.operations), ("deny-principal", o.deny_principals), ("deny-host", o.deny_hosts)):
                if given:
                    raise UsageError(f'Option "[{role}]" can\'t be used with option "[{flag}]"')
    if o.principals and not o.list:
        raise UsageError("The --principal option is only available if --list is set")
    if o.producer and not o.topics:
        raise UsageError("With --producer you must specify a --topic")
    if o.idempotent and not o.producer:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if o.consumer and (not o.topics or not o.groups or (not o.producer and (o.cluster or o.transactional_ids))):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.")


def pattern_type(text: str) -> PatternType:
    for member in PatternType:
        if member != PatternType.UNKNOWN and member.name == text.upper():
            return member
    raise UsageError(f"Unknown resource-pattern-type: {text}")


def _principals(texts: list[str]) -> list[str]:
    principals = []
    for text in texts:
        try:
            principals.append(str(parse_principal(text.strip())))
        except ValueError as e:
            raise UsageError(str(e)) from None
    return list(dict.fromkeys(principals))


def resource_filters(o: AclOptions, die_if_none: bool = True) -> list[ResourcePatternFilter]:
    """getResourceFilter: topics, the cluster, groups, transactional ids, delegation tokens."""
    patterns = pattern_type(o.resource_pattern_type)
    filters: list[ResourcePatternFilter] = [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), patterns) for t in o.topics]
    if patterns == PatternType.LITERAL and (o.cluster or o.idempotent):
        filters.append(ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    filters += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), patterns) for g in o.groups]
    filters += [ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, patterns) for t in o.transactional_ids]
    filters += [ResourcePatternFilter(ResourceType.DELEGATION_TOKEN, t.strip(), patterns) for t in o.delegation_tokens]
    if not filters and die_if_none:
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>")
    return list(dict.fromkeys(filters))


def _entries(o: AclOptions, operations: list[AclOperation]) -> list[AccessControlEntry]:
    """getAcl: each allowed (denied) principal x operation x host, hosts * unless given."""
    entries = []
    for principals, hosts, permission in (
        (o.allow_principals, o.allow_hosts, AclPermissionType.ALLOW),
        (o.deny_principals, o.deny_hosts, AclPermissionType.DENY),
    ):
        names = _principals(principals)
        chosen = list(dict.fromkeys(h.strip() for h in hosts)) if hosts else ([WILDCARD_HOST] if names else [])
        entries += [AccessControlEntry(p, h, op, permission) for p in names for op in operations for h in chosen]
    return list(dict.fromkeys(entries))


def _operations(o: AclOptions) -> list[AclOperation]:
    operations = []
    for text in o.operations or ["All"]:
        operation = AclOperation.from_name(text.strip())
        if operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise UsageError(f"Invalid operation: {text}")  # Kafka's AccessControlEntry refuses it
        operations.append(operation)
    return list(dict.fromkeys(operations))


def filter_to_acls(o: AclOptions) -> dict[ResourcePatternFilter, list[AccessControlEntry]]:
    """getResourceFilterToAcls: the flags' ACLs, or the --producer and --consumer roles'."""
    filters = resource_filters(o)
    result: dict[ResourcePatternFilter, list[AccessControlEntry]] = {}
    if not o.producer and not o.consumer:
        entries = _entries(o, _operations(o))
        result = {f: list(entries) for f in filters}
    if o.producer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                result[f] = _entries(o, [O.WRITE, O.DESCRIBE, O.CREATE])
            elif f.resource_type == ResourceType.TRANSACTIONAL_ID:
                result[f] = _entries(o, [O.WRITE, O.DESCRIBE])
        if o.idempotent:
            result[ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)] = _entries(o, [O.IDEMPOTENT_WRITE])
    if o.consumer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                result[f] = list(dict.fromkeys(_entries(o, [O.READ, O.DESCRIBE]) + result.get(f, [])))
            elif f.resource_type == ResourceType.GROUP:
                result[f] = list(dict.fromkeys(_entries(o, [O.READ]) + result.get(f, [])))
    for f, entries in result.items():
        valid = SUPPORTED_OPERATIONS[f.resource_type] | {O.ALL}
        if any(e.operation not in valid for e in entries):
            names = ", ".join(op.pascal_name for op in sorted(valid))
            raise UsageError(f"ResourceType {f.resource_type.name} only supports operations {names}")
    return result


def resource_to_acls(o: AclOptions) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """getResourceToAcls: adding needs a specific pattern type and at least one entry."""
    patterns = pattern_type(o.resource_pattern_type)
    if not patterns.is_specific:
        raise UsageError(f"A '--resource-pattern-type' value of '{patterns.name}' is not valid when adding acls.")
    result = {ResourcePattern(f.resource_type, f.name or "", f.pattern_type): entries for f, entries in filter_to_acls(o).items()}
    if any(not entries for entries in result.values()):
        raise UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return result


def _block(head: str, entries) -> str:
    """Kafka's println(s"$head $Newline ${acls.map("\\t" + _).mkString(Newline)} $Newline")."""
    return f"{head} \n " + "\n".join(f"\t{e}" for e in entries) + " \n"


# -- the services ---------------------------------------------------------------------------------


class AdminService:
    """Through a broker's ACL APIs (Kafka's AdminClientService)."""

    def __init__(self, o: AclOptions, out: Output) -> None:
        from kcli.tools._admin_common import client_settings, load_command_config

        self.settings = client_settings(load_command_config(o.command_config), bootstrap=o.bootstrap_server, warn=out.diag)

    def __enter__(self) -> AdminService:
        from kcli.tools._admin_common import AdminSession

        self.session = AdminSession(self.settings).__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.session.__exit__(*exc)

    def create(self, bindings: list[AclBinding]) -> None:
        from kcli.client import acl_admin

        for failure in self.session.run(acl_admin.create_acls(self.session.cluster, bindings)):
            if failure is not None:
                raise failure

    def describe(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        from kcli.client import acl_admin

        return self.session.run(acl_admin.describe_acls(self.session.cluster, binding_filter))

    def delete(self, filters: list[AclBindingFilter]) -> None:
        from kcli.client import acl_admin

        for failure, _deleted in self.session.run(acl_admin.delete_acls(self.session.cluster, filters)):
            if failure is not None:
                raise failure


class ZooKeeperService:
    """Straight to the ACL znodes (Kafka 2.8's AuthorizerService, which runs the AclAuthorizer in
    the tool): the stored ACLs read, writes conditional with their change nodes."""

    def __init__(self, o: AclOptions) -> None:
        if o.authorizer not in (None, ACL_AUTHORIZER):
            raise UsageError(f"--authorizer {o.authorizer}: kcli provides {ACL_AUTHORIZER} only")
        props = {}
        for pair in o.authorizer_properties:
            key, sep, value = pair.partition("=")
            if not sep:
                raise UsageError(f"Invalid argument for --authorizer-properties: {pair} (expected key=val)")
            props[key.strip()] = value.strip()
        self.connect = props.get("zookeeper.connect")
        if not self.connect:
            raise UsageError("--authorizer-properties must give zookeeper.connect=HOST:PORT[/chroot]")

    def __enter__(self) -> ZooKeeperService:
        from kcli.metadata.acl_store import AclStore
        from kcli.tools.zk_session import open_cluster_store

        self._zk = open_cluster_store(self.connect, session_timeout_ms=ZK_TIMEOUT_MS, connection_timeout_ms=ZK_TIMEOUT_MS)
        self.store = AclStore(self._zk)
        self.cached = {}
        for resource in self.store.resources():
            try:
                self.cached[resource] = self.store.versioned_acls(resource)
            except KcliError as e:
                print(f"Skipping malformed ACLs: {e}", file=sys.stderr)
        return self

    def __exit__(self, *exc: object) -> None:
        self._zk.close()

    def create(self, bindings: list[AclBinding]) -> None:
        from kcli.metadata.acl_store import create_acls

        results, written = create_acls(self.store, self.cached, bindings)
        self.cached.update(written)
        for _code, message in results:
            if message is not None:
                raise KcliError(message)

    def describe(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        from kcli.metadata.acl_store import matching_bindings

        return matching_bindings(self.cached, binding_filter)

    def delete(self, filters: list[AclBindingFilter]) -> None:
        from kcli.metadata.acl_store import delete_acls

        deleted, written = delete_acls(self.store, self.cached, filters)
        self.cached.update(written)
        for found in deleted:
            for _binding, (_code, message) in found:
                if message is not None:
                    raise KcliError(message)


def _confirm(o: AclOptions, out: Output, message: str) -> bool:
    if o.force:
        return True
    out.now(message)
    return sys.stdin.readline().strip().lower() == "y"


def _list(o: AclOptions, out: Output, service) -> None:
    filters = resource_filters(o, die_if_none=False)
    bindings: list[AclBinding] = []
    for f in filters or [None]:
        bindings += service.describe(AclBindingFilter(f, ANY_ENTRY) if f is not None else AclBindingFilter(
            ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY), ANY_ENTRY))
    by_resource: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        by_resource.setdefault(b.pattern, [])
        if b.entry not in by_resource[b.pattern]:
            by_resource[b.pattern].append(b.entry)
    principals = _principals(o.principals)
    if not principals:
        for resource, entries in by_resource.items():
            out.line(_block(f"Current ACLs for resource `{resource}`:", entries))
        return
    for principal in principals:
        out.line(f"ACLs for principal `{principal}`")
        for resource, entries in by_resource.items():
            mine = [e for e in entries if e.principal == principal]
            if mine:
                out.line(_block(f"Current ACLs for resource `{resource}`:", mine))


def run(o: AclOptions) -> None:
    out = Output(Format.plain)
    try:
        check_args(o)
        if not o.bootstrap_server:
            out.diag(DEPRECATION)
        service = AdminService(o, out) if o.bootstrap_server else ZooKeeperService(o)
        if o.add:
            plan = resource_to_acls(o)
        elif o.remove:
            plan = filter_to_acls(o)
        with service:
            if o.add:
                for resource, entries in plan.items():
                    out.now(_block(f"Adding ACLs for resource `{resource}`:", entries))
                    service.create([AclBinding(resource, e) for e in entries])
            elif o.remove:
                for f, entries in plan.items():
                    if not entries:
                        if _confirm(o, out, f"Are you sure you want to delete all ACLs for resource filter `{f}`? (y/n)"):
                            service.delete([AclBindingFilter(f, ANY_ENTRY)])
                    elif _confirm(o, out, _block("Are you sure you want to remove ACLs:", entries) + f" from resource filter `{f}`? (y/n)"):
                        service.delete([AclBindingFilter(f, AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type)) for e in entries])
            else:
                _list(o, out, service)
    except UsageError:
        out.flush()
        raise
    except KcliError as e:
        out.line(f"Error while executing ACL command: {e}")
        out.flush()
        raise typer.Exit(1) from None
    finally:
        out.flush()
