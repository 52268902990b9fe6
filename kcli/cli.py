"""The ``kcli`` root command: finds each tool's module in ``kcli.tools.catalog`` and owns the error
boundary.

A tool's module is imported only when its command runs (or something walks every command, as the
completion generator does); ``kcli --help`` lists the catalog's summaries. Tool modules keep their
heavy imports inside their command functions, so even a running tool loads neither PySpark, kazoo
nor the protocol schemas it does not use.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping

import click
import typer
import typer.core
import typer.main

from kcli import KAFKA_VERSION, __version__
from kcli.tools.catalog import TOOLS_BY_NAME, Tool


# Help is shown as written, on a terminal as in a pipe: as rich markup, Kafka's texts would break
# (``HOST:PORT[/chroot]`` reads as a closing tag) or lose words (``[name]`` as a style).
RICH_MARKUP_MODE = None


def _load(tool: Tool) -> click.Command:
    """The tool's command, as its module registers it, with ``--version``."""
    # A mistyped subcommand (``kcli cluster statu``) is reported once, by click, with its suggestions.
    holder = typer.Typer(suggest_commands=False, rich_markup_mode=RICH_MARKUP_MODE)
    importlib.import_module(f"kcli.tools.{tool.module}").register(holder)
    command = typer.main.get_group(holder).commands[tool.name]
    _add_version_option(command, KAFKA_VERSION if tool.kafka else __version__)
    return command


def _add_version_option(command: click.Command, version: str) -> None:
    """``--version`` on a tool and each of its subcommands (``kcli broker start --version``, as
    kafka-server-start.sh takes it): the version printed on stdout, exit 0, before any other check."""

    def show(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value and not ctx.resilient_parsing:
            click.echo(version)
            ctx.exit(0)

    if not any("--version" in getattr(param, "opts", ()) for param in command.params):
        help_text = "Print the Kafka version this tool speaks and exit." if version == KAFKA_VERSION else "Print kcli's version and exit."
        command.params.append(click.Option(["--version"], is_flag=True, expose_value=False, is_eager=True, callback=show, help=help_text))
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _add_version_option(sub, version)


class _ToolCommands(Mapping[str, click.Command]):
    """The root's commands in the catalog's order, each loaded on first access."""

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            self._loaded[name] = _load(TOOLS_BY_NAME[name])
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(TOOLS_BY_NAME)

    def __len__(self) -> int:
        return len(TOOLS_BY_NAME)


class _KcliGroup(typer.core.TyperGroup):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _ToolCommands()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # the names alone: TyperGroup's own reads every command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's listing, written from the catalog's summaries: help imports no tool."""
        listed = [tool for tool in TOOLS_BY_NAME.values() if not tool.hidden]
        limit = formatter.width - 6 - max(len(tool.name) for tool in listed)
        with formatter.section("Commands"):
            formatter.write_dl([(tool.name, click.Command(tool.name, help=tool.summary).get_short_help_str(limit)) for tool in listed])


app = typer.Typer(
    name="kcli",
    cls=_KcliGroup,
    rich_markup_mode=RICH_MARKUP_MODE,
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


def main() -> None:
    """Console-script entry: runs the app and turns kcli's errors into one line and an exit code."""
    from kcli.errors import EXIT_ERROR, EXIT_SIGINT, KcliError

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
