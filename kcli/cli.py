"""The ``kcli`` root command: mounts one module per tool and owns the error boundary.

Tool modules keep their heavy imports inside their command functions, so ``kcli --help`` loads
neither PySpark, kazoo nor the protocol schemas.
"""

from __future__ import annotations

import sys

import typer

from kcli import __version__
from kcli.tools import (
    broker,
    broker_api_versions,
    cluster,
    complete_names,
    configs,
    console_consumer,
    console_producer,
    consumer_groups,
    consumer_offset_checker,
    consumer_offsets,
    consumer_perf_test,
    dump_log_segments,
    export,
    get_offsets,
    import_,
    mirror,
    producer_perf_test,
    stats,
    topics,
    transactions,
    zookeeper,
    zookeeper_shell,
)

app = typer.Typer(
    name="kcli",
    help="A Kafka toolbox: broker, on-disk format and Kafka's classic tools.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,  # completions/ ships static scripts; see kcli/completions.py
    suggest_commands=False,  # click's "No such command" names the close matches already
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print kcli's version and exit."),
) -> None:
    """A Kafka toolbox: broker, on-disk format and Kafka's classic tools."""


for tool in (
    broker,
    zookeeper,
    zookeeper_shell,
    cluster,
    topics,
    console_producer,
    console_consumer,
    consumer_groups,
    consumer_offsets,
    consumer_offset_checker,
    get_offsets,
    configs,
    broker_api_versions,
    producer_perf_test,
    consumer_perf_test,
    dump_log_segments,
    export,
    import_,
    mirror,
    stats,
    transactions,
    complete_names,
):
    tool.register(app)

# A mistyped subcommand (``kcli cluster statu``) is reported once, by click, with its suggestions.
for group in app.registered_groups:
    group.typer_instance.suggest_commands = False


def _plain_unless_terminal() -> None:
    """Typer draws help and usage errors as rich panels; when stdout or stderr is not a terminal
    (a pipe, a file, a CI log) they are click's plain text instead, like every tool's output."""
    if not (sys.stdout.isatty() and sys.stderr.isatty()):
        import typer.core

        typer.core.HAS_RICH = False


def main() -> None:
    """Console-script entry: runs the app and turns kcli's errors into one line and an exit code."""
    from kcli.errors import EXIT_ERROR, EXIT_SIGINT, KcliError

    _plain_unless_terminal()
    try:
        app()
    except KcliError as exc:
        sys.stdout.flush()
        print(f"Error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # The reader (head, less) went away: not an error of ours. Point stdout at devnull so
        # the interpreter's final flush does not raise again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        sys.exit(EXIT_SIGINT)
