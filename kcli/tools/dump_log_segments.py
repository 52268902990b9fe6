"""``kcli dump-log`` and ``kcli dump-log-segments``: Kafka's kafka-dump-log.sh (its name since Kafka
2.0) and the DumpLogSegments class it runs, one command under both names, with Kafka 3.9's output
line for line.

Dispatch is by file suffix, as in Kafka: ``.log`` (batches, and records with deep iteration),
``.index``, ``.timeindex``, ``.snapshot`` (producer state) and ``.txnindex``. Index mismatches,
time-index problems and non-consecutive offsets are gathered while dumping and reported on
stderr after the last file, in Kafka's order. ``--output json`` replaces the plain lines with one
JSON object per file, batch, record and index entry.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kcli.output import Format
from kcli.tools.int_options import INT32

STRING_DECODER = "org.apache.kafka.tools.api.StringDecoder"
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
INT32_MAX = 2**31 - 1


def register(app: typer.Typer) -> None:
    from kcli.tools.catalog import names_of

    for name in names_of(__name__):
        app.command(
            name,
            help="This tool helps to parse a log file and dump its contents to the console, "
            "useful for debugging a seemingly corrupt log segment.",
            no_args_is_help=True,
        )(dump_log_segments)


def dump_log_segments(
    files: Annotated[str, typer.Option("--files", help="REQUIRED: The comma separated list of data and index log files to be dumped.")],
    print_data_log: Annotated[bool, typer.Option("--print-data-log", help="If set, printing the messages content when dumping data logs. Automatically set if any decoder option is specified.")] = False,
    deep_iteration: Annotated[bool, typer.Option("--deep-iteration", help="If set, uses deep instead of shallow iteration. Automatically set if print-data-log is enabled.")] = False,
    verify_index_only: Annotated[bool, typer.Option("--verify-index-only", help="If set, just verify the index log without printing its content.")] = False,
    index_sanity_check: Annotated[bool, typer.Option("--index-sanity-check", help="If set, just checks the index sanity without printing its content. This is the same check that is executed on broker startup to determine if an index needs rebuilding or not.")] = False,
    max_message_size: Annotated[int, typer.Option("--max-message-size", click_type=INT32, help="Size of largest message.")] = DEFAULT_MAX_MESSAGE_SIZE,
    max_bytes: Annotated[int, typer.Option("--max-bytes", click_type=INT32, help="Limit the amount of total batches read in bytes avoiding reading the whole .log file(s).")] = INT32_MAX,
    key_decoder_class: Annotated[Optional[str], typer.Option("--key-decoder-class", help=f"If set, used to deserialize the keys. This class should implement org.apache.kafka.tools.api.Decoder trait. Custom jar should be available in kafka/libs directory. (default: {STRING_DECODER})")] = None,
    value_decoder_class: Annotated[Optional[str], typer.Option("--value-decoder-class", help=f"If set, used to deserialize the messages. This class should implement org.apache.kafka.tools.api.Decoder trait. Custom jar should be available in kafka/libs directory. (default: {STRING_DECODER})")] = None,
    offsets_decoder: Annotated[bool, typer.Option("--offsets-decoder", help="If set, log data will be parsed as offset data from the __consumer_offsets topic.")] = False,
    transaction_log_decoder: Annotated[bool, typer.Option("--transaction-log-decoder", help="If set, log data will be parsed as transaction metadata from the __transaction_state topic.")] = False,
    cluster_metadata_decoder: Annotated[bool, typer.Option("--cluster-metadata-decoder", help="If set, log data will be parsed as cluster metadata records.")] = False,
    remote_log_metadata_decoder: Annotated[bool, typer.Option("--remote-log-metadata-decoder", help="If set, log data will be parsed as TopicBasedRemoteLogMetadataManager (RLMM) metadata records. Instead, the value-decoder-class option can be used if a custom RLMM implementation is configured.")] = False,
    skip_record_metadata: Annotated[bool, typer.Option("--skip-record-metadata", help="Whether to skip printing metadata for each record.")] = False,
    output: Annotated[Format, typer.Option("--output", help="plain: Kafka's lines; json: one JSON object per file, batch, record and index entry.")] = Format.plain,
) -> None:
    from kcli.output import Output
    from kcli.tools.dump_log_segments_command import DumpOptions, Dumper, record_parser

    out = Output(output)
    parser = record_parser(out, key_decoder_class, value_decoder_class, offsets_decoder, transaction_log_decoder,
                           cluster_metadata_decoder, remote_log_metadata_decoder)
    options = DumpOptions(
        print_data=print_data_log or offsets_decoder or transaction_log_decoder or cluster_metadata_decoder
        or remote_log_metadata_decoder or key_decoder_class is not None or value_decoder_class is not None,
        deep_iteration=deep_iteration,
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
        max_bytes=max_bytes,
        skip_record_metadata=skip_record_metadata,
    )
    dumper = Dumper(out, options, parser)
    try:
        ok = dumper.dump_files([f for f in files.split(",") if f])
    finally:
        out.flush()
    if not ok:
        raise typer.Exit(1)
