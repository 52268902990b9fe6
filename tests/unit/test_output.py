"""The output sink: Kafka's plain lines to a pipe, a table only on a terminal, log4j diagnostics."""

from __future__ import annotations

import io
import re

from kcli.output import Format, Output


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


HEADERS = ["GROUP", "TOPIC"]
ROWS = [["g1", "orders"]]
PLAIN = ["GROUP TOPIC", "g1    orders"]


def test_table_is_kafkas_plain_lines_when_not_a_terminal():
    out, err = io.StringIO(), io.StringIO()
    sink = Output(out=out, err=err)
    sink.table(HEADERS, ROWS, PLAIN)
    sink.table(HEADERS, ROWS, PLAIN, leading_blank=False)
    sink.flush()
    assert out.getvalue() == "\n" + "\n".join(PLAIN) + "\n" + "\n".join(PLAIN) + "\n" and err.getvalue() == ""


def test_table_is_drawn_only_on_a_terminal_and_never_in_json():
    terminal = Terminal()
    Output(out=terminal).table(HEADERS, ROWS, PLAIN, leading_blank=False)
    drawn = terminal.getvalue()
    assert "orders" in drawn and drawn != "\n".join(PLAIN) + "\n"
    piped_json = Terminal()
    sink = Output(Format.json, out=piped_json)
    sink.table(HEADERS, ROWS, PLAIN, leading_blank=False)
    sink.flush()
    assert piped_json.getvalue() == "\n".join(PLAIN) + "\n"


def test_log4j_diagnostic_goes_to_stderr_after_the_results_so_far():
    out, err = io.StringIO(), io.StringIO()
    sink = Output(out=out, err=err)
    sink.line("result")
    sink.log4j("WARN", "careful", "org.apache.kafka.tools.X")
    assert out.getvalue() == "result\n"
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] WARN careful \(org\.apache\.kafka\.tools\.X\)\n", err.getvalue())


def test_now_writes_at_once():
    out = io.StringIO()
    Output(out=out).now("progress")
    assert out.getvalue() == "progress\n"
