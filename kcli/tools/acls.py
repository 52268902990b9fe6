"""``kcli acls``: Kafka's kafka-acls.sh (AclCommand), with Kafka 3.9's flags and lines.

Through ``--bootstrap-server`` (and ``--command-config``) the ACLs go through any broker's
CreateAcls, DescribeAcls and DeleteAcls; through ``--authorizer-properties
zookeeper.connect=HOST:PORT[/chroot]`` (Kafka 2.8's path, deprecated in 3.9 with the same
warning) they are written straight into the ACL znodes with their change nodes, which every
broker follows (``kcli.tools.acls_command``). ``--add`` prints, per resource::

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

``--list`` prints ``Current ACLs for resource `...`:`` with the same entry lines (for each
``--principal``, after ``ACLs for principal `User:alice```), ``--remove`` asks before deleting
unless ``--force``. ``--producer`` and ``--consumer`` stand for Kafka's role ACLs (WRITE,
DESCRIBE, CREATE on topics, WRITE and DESCRIBE on transactional ids, IDEMPOTENT_WRITE with
``--idempotent``; READ and DESCRIBE on topics, READ on groups). A usage error is one line and
exit 2; a refused request is Kafka's "Error while executing ACL command: ..." and exit 1.
Kafka prints a resource's entries (and, listing, the resources) in its hash sets' orders; kcli
prints them in the order the flags name them (and the broker answered).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.options import BootstrapServerOpt, CommandConfigOpt


def register(app: typer.Typer) -> None:
    app.command("acls", help="This tool helps to manage acls on kafka.", no_args_is_help=True)(acls)


def acls(
    bootstrap_server: BootstrapServerOpt = None,
    command_config: CommandConfigOpt = None,
    authorizer: Annotated[Optional[str], typer.Option("--authorizer", help="DEPRECATED: the authorizer's class (only kafka.security.authorizer.AclAuthorizer).")] = None,
    authorizer_properties: Annotated[Optional[list[str]], typer.Option("--authorizer-properties", help="DEPRECATED: key=val properties of the authorizer, e.g. zookeeper.connect=localhost:2181.")] = None,
    add: Annotated[bool, typer.Option("--add", help="Indicates you are trying to add ACLs.")] = False,
    remove: Annotated[bool, typer.Option("--remove", help="Indicates you are trying to remove ACLs.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster to specify a resource.")] = False,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="topic to which ACLs should be added or removed. A value of '*' indicates ACL should apply to all topics.")] = None,
    cluster: Annotated[bool, typer.Option("--cluster", help="Add/Remove cluster ACLs.")] = False,
    group: Annotated[Optional[list[str]], typer.Option("--group", help="Consumer Group to which the ACLs should be added or removed. A value of '*' indicates the ACLs should apply to all groups.")] = None,
    transactional_id: Annotated[Optional[list[str]], typer.Option("--transactional-id", help="The transactionalId to which ACLs should be added or removed. A value of '*' indicates the ACLs should apply to all transactionalIds.")] = None,
    delegation_token: Annotated[Optional[list[str]], typer.Option("--delegation-token", help="Delegation token to which ACLs should be added or removed. A value of '*' indicates ACL should apply to all tokens.")] = None,
    resource_pattern_type: Annotated[str, typer.Option("--resource-pattern-type", help="ANY|MATCH|LITERAL|PREFIXED: the pattern type, or with --list and --remove the filter's.")] = "LITERAL",
    operation: Annotated[Optional[list[str]], typer.Option("--operation", help="Operation that is being allowed or denied (default All).")] = None,
    allow_principal: Annotated[Optional[list[str]], typer.Option("--allow-principal", help="principal is in principalType:name format.")] = None,
    deny_principal: Annotated[Optional[list[str]], typer.Option("--deny-principal", help="principal is in principalType:name format. DENY RULES TAKE PRECEDENCE OVER ALLOW RULES.")] = None,
    principal: Annotated[Optional[list[str]], typer.Option("--principal", help="List ACLs for the specified principal (principalType:name).")] = None,
    allow_host: Annotated[Optional[list[str]], typer.Option("--allow-host", help="Host from which principals listed in --allow-principal will have access (default *).")] = None,
    deny_host: Annotated[Optional[list[str]], typer.Option("--deny-host", help="Host from which principals listed in --deny-principal will be denied access (default *).")] = None,
    producer: Annotated[bool, typer.Option("--producer", help="Convenience option to add/remove ACLs for producer role.")] = False,
    consumer: Annotated[bool, typer.Option("--consumer", help="Convenience option to add/remove ACLs for consumer role.")] = False,
    idempotent: Annotated[bool, typer.Option("--idempotent", help="Enable idempotence for the producer (with --producer).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Assume Yes to all queries and do not prompt.")] = False,
) -> None:
    from kcli.tools.acls_command import AclOptions, run

    run(AclOptions(
        bootstrap_server=bootstrap_server, command_config=command_config, authorizer=authorizer,
        authorizer_properties=list(authorizer_properties or ()), add=add, remove=remove, list=list_,
        topics=list(topic or ()), cluster=cluster, groups=list(group or ()), transactional_ids=list(transactional_id or ()),
        delegation_tokens=list(delegation_token or ()), resource_pattern_type=resource_pattern_type,
        operations=list(operation or ()), allow_principals=list(allow_principal or ()), deny_principals=list(deny_principal or ()),
        principals=list(principal or ()), allow_hosts=list(allow_host or ()), deny_hosts=list(deny_host or ()),
        producer=producer, consumer=consumer, idempotent=idempotent, force=force,
    ))
