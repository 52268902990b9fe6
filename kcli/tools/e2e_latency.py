"""``kcli e2e-latency``: Kafka's kafka-e2e-latency.sh (kafka.tools.EndToEndLatency), with Kafka 3.9's
arguments, lines and messages.

    kcli e2e-latency broker_list topic num_messages producer_acks message_size_bytes [properties_file]

Sends ``num_messages`` records of ``message_size_bytes`` bytes one at a time (each one letter
repeated, drawn as Kafka draws it from ``java.util.Random(0)``), waiting for each to be
acknowledged (``producer_acks`` 1 or all) and then polling for it with a consumer assigned to
the topic's partitions at their end; the time from send to poll is the record's latency. A
topic that does not exist is created with 1 partition and replication factor 1. The properties
file (optional) holds settings for the producer, the consumer and the admin client alike.

Output, as Kafka's: ``<i>\\t<latency ms>`` for every 1000th record (the first included), then
``Avg latency: %.4f ms`` and ``Percentiles: 50th = %d, 99th = %d, 99.9th = %d`` (whole ms).
A record not read back within 60 s, read back changed, or with others, ends the run with
Kafka's message on stderr and exit 1.
"""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

USAGE = (
    "USAGE: java org.apache.kafka.tools.EndToEndLatency broker_list topic num_messages producer_acks "
    "message_size_bytes [optional] properties_file"
)


def register(app: typer.Typer) -> None:
    app.command(
        "e2e-latency",
        help="This tool records the average end to end latency for a single message to travel through Kafka.\n\n"
        "Arguments: broker_list topic num_messages producer_acks message_size_bytes [properties_file], "
        "e.g. localhost:9092 test 10000 1 20.",
        no_args_is_help=True,
    )(e2e_latency)


def e2e_latency(
    args: Annotated[Optional[List[str]], typer.Argument(metavar="broker_list topic num_messages producer_acks message_size_bytes [properties_file]", show_default=False)] = None,
) -> None:
    from kcli.errors import UsageError
    from kcli.java_compat import parse_int

    args = args or []
    if len(args) not in (5, 6):
        raise UsageError(USAGE)
    brokers, topic, num_messages, acks, message_size = args[:5]
    properties_file = args[5] if len(args) == 6 and args[5].strip() else None
    try:
        count = parse_int(num_messages)
        size = parse_int(message_size)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if acks not in ("1", "all"):
        raise UsageError("Latency testing requires synchronous acknowledgement. Please use 1 or all")
    from kcli.tools.e2e_latency_command import run

    run(brokers, topic, count, acks, size, properties_file)
