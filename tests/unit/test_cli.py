"""The command-line root: lazy imports, the error boundary, exit codes, completions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kcli.tools.catalog import TOOLS

ROOT = Path(__file__).resolve().parents[2]


def run_kcli(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcli", *args], capture_output=True, input=input, timeout=60, cwd=ROOT)


def test_help_does_not_import_heavy_modules():
    code = (
        "import sys\n"
        "sys.argv = ['kcli', '--help']\n"
        "from kcli.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'kazoo', 'kio') or m.startswith('kcli.protocol') or m.startswith('kcli.storage')]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr


def _tool_modules_loaded(*args: str) -> list[str]:
    """The kcli.tools modules imported by ``kcli ARGS`` (the catalog aside)."""
    code = (
        "import sys\n"
        f"sys.argv = ['kcli', *{list(args)!r}]\n"
        "from kcli.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('TOOLS', sorted(m for m in sys.modules if m.startswith('kcli.tools.') and m != 'kcli.tools.catalog'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    line = next((line for line in result.stdout.splitlines() if line.startswith("TOOLS ")), None)
    assert line is not None, result.stdout + result.stderr
    return eval(line.removeprefix("TOOLS "))


def test_help_lists_the_tools_without_importing_them():
    assert _tool_modules_loaded("--help") == []
    assert _tool_modules_loaded("--version") == []


def test_a_tool_imports_its_own_module_and_none_of_the_others():
    loaded = _tool_modules_loaded("topics", "--help")
    assert "kcli.tools.topics" in loaded
    others = {f"kcli.tools.{tool.module}" for tool in TOOLS} - {"kcli.tools.topics"}
    assert not others & set(loaded), loaded


def test_the_catalog_lists_each_command_as_its_own_help_begins():
    """kcli --help shows the catalog's summaries; each must be its command's first paragraph, and
    the catalog must name exactly the commands the tool modules register."""
    import click
    import typer.main

    from kcli.cli import app

    root = typer.main.get_command(app)
    assert list(root.commands) == [tool.name for tool in TOOLS]
    for tool in TOOLS:
        command = root.commands[tool.name]
        assert command.name == tool.name
        assert command.hidden == tool.hidden, tool.name
        assert (command.help or "").split("\n\n")[0] == tool.summary, tool.name
        for limit in (30, 45, 80):
            listed = click.Command(tool.name, help=tool.summary)  # as kcli --help lists it
            assert listed.get_short_help_str(limit) == command.get_short_help_str(limit), (tool.name, limit)


def test_python_dash_m_and_version():
    result = run_kcli("--version")
    assert result.returncode == 0
    from kcli import __version__

    assert result.stdout.decode().strip() == __version__


def test_usage_error_exits_2():
    result = run_kcli("dump-log-segments", "--no-such-flag")
    assert result.returncode == 2
    assert b"No such option" in result.stderr


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (("topcs",), "Did you mean 'topics'?"),
        (("consumer-offsets", "exprt"), "Did you mean 'export'?"),
        (("cluster", "statu"), "(Did you mean one of: 'start', 'status'?)"),
        (("transactions", "lst"), "Did you mean 'list'?"),
    ],
)
def test_a_mistyped_command_is_named_once_with_its_suggestions(args, suggestion):
    result = run_kcli(*args)
    assert result.returncode == 2
    last = result.stderr.decode().splitlines()[-1]
    assert last == f"Error: No such command '{args[-1]}'. {suggestion}"


def test_missing_file_is_one_line_and_exit_1(tmp_path):
    missing = tmp_path / "00000000000000000000.log"
    result = run_kcli("dump-log-segments", "--files", str(missing))
    assert result.returncode == 1
    assert result.stdout.decode() == f"Dumping {missing}\n"
    lines = result.stderr.decode().splitlines()
    assert lines == [f"Error: {missing}: no such file"]
    assert b"Traceback" not in result.stderr


def test_completions_are_current():
    from kcli.completions import generate

    stale = [name for name, text in generate().items() if (ROOT / "completions" / name).read_text() != text]
    assert not stale, f"completions/{stale} are stale: run scripts/gen-completions"


def test_completions_name_every_command_and_option():
    import typer.main

    from kcli.cli import app

    bash = (ROOT / "completions" / "kcli.bash").read_text()
    root = typer.main.get_command(app)
    for name, command in root.commands.items():
        if command.hidden:
            continue
        assert f'"/{name}")' in bash
        for param in command.params:
            if getattr(param, "hidden", False) or param.param_type_name == "argument":
                continue  # a positional argument has no flag to complete
            for opt in param.opts:
                assert opt in bash, opt


def test_bash_completion_script_parses_and_completes(tmp_path):
    script = ROOT / "completions" / "kcli.bash"
    probe = (
        f"source {script}\n"
        "COMP_WORDS=(kcli dump-log-segments --out); COMP_CWORD=2; _kcli; echo \"${COMPREPLY[*]}\"\n"
        "COMP_WORDS=(kcli dump-log-segments --output ''); COMP_CWORD=3; _kcli; echo \"${COMPREPLY[*]}\"\n"
        "COMP_WORDS=(kcli du); COMP_CWORD=1; _kcli; echo \"${COMPREPLY[*]}\"\n"
    )
    result = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["--output", "plain json", "dump-log dump-log-segments"]


@pytest.mark.parametrize("name", ["_kcli", "kcli.fish"])
def test_other_shells_cover_the_dump_options(name):
    text = (ROOT / "completions" / name).read_text()
    assert "dump-log-segments" in text
    assert "print-data-log" in text and "offsets-decoder" in text


# Kafka's tools print the Kafka version they speak for --version, on stdout, exit 0 (CommandLineUtils.
# printVersionAndExit: AppInfoParser.getVersion(), "3.9.0" for Kafka 3.9.0's tools); kcli's own
# commands print kcli's, as the root does.
KAFKA_39 = "3.9.0"
KCLI_OWN = {"export", "import", "mirror", "stats", "cluster", "consumer-offsets"}


@pytest.mark.parametrize("tool", [tool.name for tool in TOOLS if not tool.hidden])
def test_every_tool_prints_its_version(kcli_run, tool):
    from kcli import __version__

    code, out, err = kcli_run(tool, "--version")
    assert (code, err) == (0, [])
    assert out == [__version__ if tool in KCLI_OWN else KAFKA_39]


@pytest.mark.parametrize("args", [("broker", "start"), ("transactions", "list"), ("features", "describe")])
def test_a_subcommand_prints_the_version_before_checking_its_arguments(kcli_run, args):
    code, out, _err = kcli_run(*args, "--version")
    assert (code, out) == (0, [KAFKA_39])
