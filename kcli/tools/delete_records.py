"""``kcli delete-records``: Kafka's kafka-delete-records.sh (DeleteRecordsCommand), with Kafka 3.9's
flags, lines and messages.

The offset JSON file names each partition and the offset below which its records go::

    {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version": 1}

(``version`` may be left out; only 1 is known; offset -1 means the high watermark.) The tool
prints ``Executing records delete operation``, sends DeleteRecords to each partition's leader,
prints ``Records delete operation completed:`` and one line per partition, in the order Kafka's
result map iterates them (a Java HashMap of TopicPartition)::

    partition: foo-1\tlow_watermark: 1
    partition: foo-2\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: <message>

A file Kafka refuses (not JSON, an unknown version, a missing field, a partition named twice)
is Kafka's message on stderr and exit 1, before anything is sent; so is a partition that
failed, unlike Kafka, whose exit code is 0 then.

``--output json`` writes one object per partition, in the same order: ``{"topic": str,
"partition": int, "low_watermark": int | null, "error": str | null}``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.output import Format
from kcli.tools.options import BootstrapServerOpt, CommandConfigOpt


def register(app: typer.Typer) -> None:
    app.command(
        "delete-records",
        help="This tool helps to delete records of the given partitions down to the specified offset.",
        no_args_is_help=True,
    )(delete_records)


def delete_records(
    bootstrap_server: BootstrapServerOpt = None,
    offset_json_file: Annotated[Optional[str], typer.Option("--offset-json-file", help='REQUIRED: The JSON file with offset per partition. The format to use is: {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version":1}')] = None,
    command_config: CommandConfigOpt = None,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's lines; json: one JSON object per partition.")] = Format.plain,
) -> None:
    from kcli.errors import UsageError

    for name, value in (("bootstrap-server", bootstrap_server), ("offset-json-file", offset_json_file)):
        if value is None:
            raise UsageError(f'Missing required argument "[{name}]"')
    from kcli.tools.delete_records_command import run

    run(bootstrap_server, offset_json_file, command_config, output)
