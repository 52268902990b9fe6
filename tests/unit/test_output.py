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


class ClosedPipe(io.BytesIO):
    def write(self, data) -> int:  # type: ignore[no-untyped-def, override]
        raise BrokenPipeError


def test_bytes_output_writes_records_as_they_are_and_notices_a_closed_pipe():
    from kcli.output import BytesOutput

    out = io.BytesIO()
    sink = BytesOutput(out)
    assert sink.write(b"\xff\x00record\n") and out.getvalue() == b"\xff\x00record\n"
    closed = BytesOutput(ClosedPipe())
    assert closed.write(b"x") is False and closed.broken and closed.write(b"y") is False


def test_prompt_follows_the_lines_so_far_without_a_line_end():
    out = io.StringIO()
    sink = Output(out=out)
    sink.line("record sent")
    sink.prompt(">")
    assert out.getvalue() == "record sent\n>"
