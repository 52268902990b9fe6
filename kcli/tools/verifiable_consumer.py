"""``kcli verifiable-consumer``: Kafka's VerifiableConsumer (kafka-verifiable-consumer.sh), the
consumer Kafka's system tests drive, with Kafka 3.9's flags and JSON event lines on stdout.

Joins ``--group-id`` (classic protocol, ``--assignment-strategy``, ``--session-timeout``,
``--group-instance-id``) subscribed to ``--topic``, and reports, one JSON object per line as
Jackson writes Kafka's events::

    {"timestamp":...,"name":"startup_complete"}
    {"timestamp":...,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0}]}
    {"timestamp":...,"name":"records_consumed","count":2,"partitions":[{"topic":"t","partition":0,"count":2,"minOffset":0,"maxOffset":1}]}
    {"timestamp":...,"name":"record_data","key":null,"value":"0","topic":"t","partition":0,"offset":0}    (--verbose)
    {"timestamp":...,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,"offset":2}],"success":true}
    {"timestamp":...,"name":"partitions_revoked","partitions":[{"topic":"t","partition":0}]}
    {"timestamp":...,"name":"shutdown_complete"}

Offsets are committed after every poll (synchronously; ``"error":"..."`` and ``"success":false``
when the commit fails) unless ``--enable-autocommit``. It stops after ``--max-messages`` records
(-1: until stopped) or on SIGTERM/SIGINT (exit 143 or 130), leaving the group, which revokes its
partitions, before ``shutdown_complete``. ``--reset-policy`` is auto.offset.reset (earliest by
default). ``--consumer.config`` settings are overridden by the flags. ``--group-protocol consumer``
(KIP-848) is refused: kcli's consumer speaks the classic protocol.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.int_options import INT32

HOSTS = "HOST1:PORT1[,HOST2:PORT2[...]]"
RANGE_ASSIGNOR = "org.apache.kafka.clients.consumer.RangeAssignor"


def register(app: typer.Typer) -> None:
    app.command(
        "verifiable-consumer",
        help="This tool consumes messages from a specific topic and emits consumer events (e.g. group rebalances, received messages, "
        "and offsets committed) as JSON objects to STDOUT.",
        no_args_is_help=True,
    )(verifiable_consumer)


def verifiable_consumer(
    bootstrap_server: Annotated[Optional[str], typer.Option("--bootstrap-server", metavar=HOSTS, help="REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect to. Comma-separated list of Kafka brokers in the form HOST1:PORT1,HOST2:PORT2,...")] = None,
    broker_list: Annotated[Optional[str], typer.Option("--broker-list", metavar=HOSTS, help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.  Comma-separated list of Kafka brokers in the form HOST1:PORT1,HOST2:PORT2,...")] = None,
    topic: Annotated[Optional[str], typer.Option("--topic", metavar="TOPIC", help="Consumes messages from this topic.")] = None,
    group_protocol: Annotated[str, typer.Option("--group-protocol", metavar="GROUP_PROTOCOL", help="Group protocol (must be one of CLASSIC, CONSUMER); kcli speaks CLASSIC.")] = "classic",
    group_remote_assignor: Annotated[Optional[str], typer.Option("--group-remote-assignor", metavar="GROUP_REMOTE_ASSIGNOR", help="Group remote assignor; only used if the group protocol is CONSUMER")] = None,
    group_id: Annotated[Optional[str], typer.Option("--group-id", metavar="GROUP_ID", help="The groupId shared among members of the consumer group")] = None,
    group_instance_id: Annotated[Optional[str], typer.Option("--group-instance-id", metavar="GROUP_INSTANCE_ID", help="A unique identifier of the consumer instance")] = None,
    max_messages: Annotated[int, typer.Option("--max-messages", metavar="MAX-MESSAGES", click_type=INT32, help="Consume this many messages. If -1 (the default), the consumer will consume until the process is killed externally")] = -1,
    session_timeout: Annotated[int, typer.Option("--session-timeout", metavar="TIMEOUT_MS", click_type=INT32, help="Set the consumer's session timeout")] = 30000,
    verbose: Annotated[bool, typer.Option("--verbose", help="Enable to log individual consumed records")] = False,
    enable_autocommit: Annotated[bool, typer.Option("--enable-autocommit", help="Enable offset auto-commit on consumer")] = False,
    reset_policy: Annotated[str, typer.Option("--reset-policy", help="Set reset policy (must be either 'earliest', 'latest', or 'none'")] = "earliest",
    assignment_strategy: Annotated[str, typer.Option("--assignment-strategy", help="Set assignment strategy (e.g. org.apache.kafka.clients.consumer.RoundRobinAssignor); only used if the group protocol is CLASSIC")] = RANGE_ASSIGNOR,
    consumer_config: Annotated[Optional[str], typer.Option("--consumer.config", metavar="CONFIG_FILE", help="Consumer config properties file (config options shared with command line parameters will be overridden).")] = None,
) -> None:
    from kcli.errors import UsageError

    if bootstrap_server is not None and broker_list is not None:
        raise UsageError("argument --broker-list: not allowed with argument --bootstrap-server")
    if bootstrap_server is None and broker_list is None:
        raise UsageError("one of the arguments --bootstrap-server --broker-list is required")
    for flag, value in (("--topic", topic), ("--group-id", group_id)):
        if value is None:
            raise UsageError(f"argument {flag} is required")
    if group_protocol.lower() == "consumer":
        raise UsageError("--group-protocol consumer (KIP-848) is not supported: kcli's consumer speaks the classic group protocol")
    from kcli.tools.verifiable_consumer_command import run

    props = {
        "partition.assignment.strategy": assignment_strategy,
        "group.id": group_id,
        **({"group.instance.id": group_instance_id} if group_instance_id is not None else {}),
        "bootstrap.servers": bootstrap_server or broker_list,
        "enable.auto.commit": "true" if enable_autocommit else "false",
        "auto.offset.reset": reset_policy,
        "session.timeout.ms": str(session_timeout),
    }
    run(topic, props, consumer_config, max_messages, enable_autocommit, verbose)
