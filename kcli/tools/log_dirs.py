"""``kcli log-dirs``: Kafka's kafka-log-dirs.sh (LogDirsCommand), with Kafka 3.9's flags, lines and
messages.

``--describe`` asks each broker of ``--broker-list`` (every broker of the cluster without it) for
its log dirs and prints::

    Querying brokers for log directories information
    Received log directory information from brokers 0
    {"brokers":[{"broker":0,"logDirs":[{"partitions":[{"partition":"foo-0","size":0,"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/tmp/kafka-logs"}]}],"version":1}

The JSON line is Kafka's: every object is a Java HashMap written by Jackson, so keys, brokers,
dirs and partitions come in Java's hash order; ``error`` is the Java exception class of a dir's
error (``org.apache.kafka.common.errors.KafkaStorageException`` for an offline dir) or null.
``--topic-list foo,bar`` keeps only those topics' partitions. A broker of ``--broker-list`` the
cluster lacks is Kafka's ``ERROR: The given brokers do not exist from --broker-list: ...`` line
on stderr and exit 1.

``--output json`` writes one object per log dir instead: ``{"broker": int, "log_dir": str,
"error": str | null, "total_bytes": int, "usable_bytes": int, "partitions": [{"topic": str,
"partition": int, "size": int, "offset_lag": int, "is_future": bool}]}`` (brokers, dirs and
partitions sorted).

``--totals`` (kcli's own, ``log_dir_sizes``) adds, after Kafka's lines (unchanged), one line per
broker queried, by id: ``Broker: 0\tLogDirs: 1\tOfflineLogDirs: 0\tPartitions: 12\tSize: N\t
FuturePartitions: 0\tFutureSize: N`` (bytes of the partitions of ``--topic-list``, or of all;
future replicas, moves between log dirs in progress, apart). With ``--output json`` it writes one
object per broker instead of one per log dir: ``{"broker": int, "log_dirs": int,
"offline_log_dirs": int, "partitions": int, "size": int, "future_partitions": int,
"future_size": int}``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.output import Format
from kcli.tools.options import BootstrapServerOpt, CommandConfigOpt


def register(app: typer.Typer) -> None:
    app.command(
        "log-dirs",
        help="This tool helps to query log directory usage on the specified brokers.",
        no_args_is_help=True,
    )(log_dirs)


def log_dirs(
    bootstrap_server: BootstrapServerOpt = None,
    command_config: CommandConfigOpt = None,
    describe: Annotated[bool, typer.Option("--describe", help="Describe the specified log directories on the specified brokers.")] = False,
    topic_list: Annotated[str, typer.Option("--topic-list", help='The list of topics to be queried in the form "topic1,topic2,topic3". All topics will be queried if no topic list is specified')] = "",
    broker_list: Annotated[str, typer.Option("--broker-list", help='The list of brokers to be queried in the form "0,1,2". All brokers in the cluster will be queried if no broker list is specified')] = "",
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's lines; json: one JSON object per log dir.")] = Format.plain,
    totals: Annotated[bool, typer.Option("--totals", help="With --describe (kcli's own): after Kafka's lines, one line per broker adding up its log dirs: partitions and their bytes.")] = False,
) -> None:
    from kcli.errors import UsageError

    if bootstrap_server is None:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    if not describe:
        raise UsageError('Missing required argument "[describe]"')
    from kcli.tools.log_dirs_command import run

    run(bootstrap_server, command_config, topic_list, broker_list, output, totals)
