"""``kcli verifiable-producer``: Kafka's VerifiableProducer (kafka-verifiable-producer.sh), the
producer Kafka's system tests drive, with Kafka 3.9's flags and JSON event lines on stdout.

Produces the values 0, 1, 2, ... (``--value-prefix P``: ``P.0``, ``P.1``, ...) to ``--topic``,
with null keys or, with ``--repeating-keys N``, keys 0..N-1 over and over; ``--max-messages``
of them (-1: until stopped), at most ``--throughput`` per second (-1: unthrottled), with
``--acks`` (-1, 0 or 1) and no retries, ``--producer.config`` overriding those. Each line is
one event, as Jackson writes Kafka's event objects::

    {"timestamp":1700000000000,"name":"startup_complete"}
    {"timestamp":...,"name":"producer_send_success","key":null,"value":"0","topic":"t","partition":0,"offset":0}
    {"timestamp":...,"name":"producer_send_error","key":null,"value":"1","topic":"t","exception":"class org.apache.kafka.common.errors.TimeoutException","message":"..."}
    {"timestamp":...,"name":"shutdown_complete"}
    {"timestamp":...,"name":"tool_data","sent":2,"acked":1,"target_throughput":-1,"avg_throughput":123.4}

The last two come when every message was sent, or on SIGTERM/SIGINT (after the records in
flight are answered), as Kafka's shutdown hook prints them; the exit status is then 143 or 130.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.int_options import INT32, INT64

HOSTS = "HOST1:PORT1[,HOST2:PORT2[...]]"


def register(app: typer.Typer) -> None:
    app.command(
        "verifiable-producer",
        help='This tool produces increasing integers to the specified topic and prints JSON metadata to stdout on each "send" request, '
        "making externally visible which messages have been acked and which have not.",
        no_args_is_help=True,
    )(verifiable_producer)


def verifiable_producer(
    topic: Annotated[Optional[str], typer.Option("--topic", metavar="TOPIC", help="Produce messages to this topic.")] = None,
    bootstrap_server: Annotated[Optional[str], typer.Option("--bootstrap-server", metavar=HOSTS, help="REQUIRED: The server(s) to connect to. Comma-separated list of Kafka brokers in the form HOST1:PORT1,HOST2:PORT2,...")] = None,
    broker_list: Annotated[Optional[str], typer.Option("--broker-list", metavar=HOSTS, help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.  Comma-separated list of Kafka brokers in the form HOST1:PORT1,HOST2:PORT2,...")] = None,
    max_messages: Annotated[int, typer.Option("--max-messages", metavar="MAX-MESSAGES", click_type=INT32, help="Produce this many messages. If -1, produce messages until the process is killed externally.")] = -1,
    throughput: Annotated[int, typer.Option("--throughput", metavar="THROUGHPUT", click_type=INT32, help="If set >= 0, throttle maximum message throughput to *approximately* THROUGHPUT messages/sec.")] = -1,
    acks: Annotated[int, typer.Option("--acks", metavar="ACKS", click_type=INT32, help="Acks required on each produced message. See Kafka docs on acks for details. One of 0, 1, -1.")] = -1,
    producer_config: Annotated[Optional[str], typer.Option("--producer.config", metavar="CONFIG_FILE", help="Producer config properties file.")] = None,
    create_time: Annotated[int, typer.Option("--message-create-time", metavar="CREATETIME", click_type=INT64, help="Send messages with creation time starting at the arguments value, in milliseconds since epoch")] = -1,
    value_prefix: Annotated[Optional[int], typer.Option("--value-prefix", metavar="VALUE-PREFIX", click_type=INT32, help="If specified, each produced value will have this prefix with a dot separator")] = None,
    repeating_keys: Annotated[Optional[int], typer.Option("--repeating-keys", metavar="REPEATING-KEYS", click_type=INT32, help="If specified, each produced record will have a key starting at 0 increment by 1 up to the number specified (exclusive), then the key is set to 0 again")] = None,
) -> None:
    from kcli.errors import UsageError

    if bootstrap_server is not None and broker_list is not None:
        raise UsageError("argument --broker-list: not allowed with argument --bootstrap-server")
    if bootstrap_server is None and broker_list is None:
        raise UsageError("one of the arguments --bootstrap-server --broker-list is required")
    if topic is None:
        raise UsageError("argument --topic is required")
    if acks not in (0, 1, -1):
        raise UsageError(f"argument --acks: invalid choice: '{acks}' (choose from {{0,1,-1}})")
    from kcli.tools.verifiable_producer_command import ProducerOptions, run

    run(ProducerOptions(topic, bootstrap_server or broker_list, max_messages, throughput, acks, producer_config,
                        None if create_time == -1 else create_time, value_prefix, repeating_keys))
