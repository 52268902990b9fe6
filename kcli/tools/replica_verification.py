"""``kcli replica-verification``: Kafka's kafka-replica-verification.sh (ReplicaVerificationTool),
with Kafka 3.9's flags, lines and messages.

Every replica of the chosen topics is fetched from the broker holding it (a debugging consumer,
replica id -2, which may read followers) from the same offsets, the partitions' latest
(``--time -1``, the default), earliest (-2) or those of a timestamp (the latest where no record
is that new). Round after round, the batches of each partition's replicas are compared up to each
replica's high watermark: the last offset of each batch must be the same (else the tool prints
``<time>: partition T-P: replica A's offset O doesn't match replica B's offset O2`` and exits 1),
and so should the batch's checksum (else ``<time>: partition T-P has unmatched checksum at offset
O; replica A's checksum C; replica B's checksum C2``, and it goes on). Every
``--report-interval-ms`` it prints ``<time>: max lag is L for partition T-P at offset O among N
partitions``: the largest distance between a partition's high watermark and where its replicas
were found equal. It runs until stopped (SIGINT or SIGTERM). Times are
``yyyy-MM-dd HH:mm:ss,SSS`` in local time, as Kafka prints them.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.tools.int_options import INT32, INT64

DEFAULT_FETCH_SIZE = 1048576  # ConsumerConfig.DEFAULT_MAX_PARTITION_FETCH_BYTES


def register(app: typer.Typer) -> None:
    app.command(
        "replica-verification",
        help="Validate that all replicas for a set of topics have the same data.",
        no_args_is_help=True,
    )(replica_verification)


def replica_verification(
    broker_list: Annotated[Optional[str], typer.Option("--broker-list", metavar="hostname:port,...,hostname:port", help="REQUIRED: The list of hostname and port of the server to connect to.")] = None,
    fetch_size: Annotated[int, typer.Option("--fetch-size", metavar="bytes", click_type=INT32, help="The fetch size of each request.")] = DEFAULT_FETCH_SIZE,
    max_wait_ms: Annotated[int, typer.Option("--max-wait-ms", metavar="ms", click_type=INT32, help="The max amount of time each fetch request waits.")] = 1000,
    topic_white_list: Annotated[Optional[str], typer.Option("--topic-white-list", metavar="Java regex (String)", help="DEPRECATED use --topics-include instead; ignored if --topics-include specified. List of topics to verify replica consistency. (default: .*)")] = None,
    topics_include: Annotated[Optional[str], typer.Option("--topics-include", metavar="Java regex (String)", help="List of topics to verify replica consistency. (default: .*)")] = None,
    time: Annotated[int, typer.Option("--time", metavar="timestamp/-1(latest)/-2(earliest)", click_type=INT64, help="Timestamp for getting the initial offsets.")] = -1,
    report_interval_ms: Annotated[int, typer.Option("--report-interval-ms", metavar="ms", click_type=INT64, help="The reporting interval.")] = 30000,
) -> None:
    from kcli.errors import UsageError
    from kcli.tools._admin_common import option, validate_bootstrap_server

    if broker_list is None:
        raise UsageError(f'Missing required argument "{option("broker-list")}"')
    if topics_include is not None and topic_white_list is not None:
        raise UsageError(f'Option "{option("topics-include")}" can\'t be used with option "{option("topic-white-list")}"')
    validate_bootstrap_server(broker_list)
    from kcli.tools.replica_verification_command import run

    regex = topics_include if topics_include is not None else topic_white_list if topic_white_list is not None else ".*"
    run(broker_list, regex, fetch_size=fetch_size, max_wait_ms=max_wait_ms, initial_time=time, report_interval_ms=report_interval_ms)
