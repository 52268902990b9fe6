"""Every integer flag of every command is range-checked against its Kafka type: one past either end
is a usage error (one line on stderr, exit 2) before any tool code runs, never a struct.error from
encoding it later. The walk covers commands added later too: an integer option declared without a
Kafka type fails here.
"""

from __future__ import annotations

import sys

import click
import pytest
import typer.main

from kcli import cli
from kcli.tools.int_options import INT16, INT32, INT64, NON_NEGATIVE_INT32, KafkaInt


def _commands() -> dict[str, click.Command]:
    root = typer.main.get_command(cli.app)
    assert isinstance(root, click.Group)
    return dict(root.commands)


def _integer_options() -> list[tuple[str, click.Option]]:
    found = []
    for name, command in sorted(_commands().items()):
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, (click.types.IntParamType, KafkaInt)):
                found.append((name, param))
    return found


INTEGER_OPTIONS = _integer_options()


def test_every_integer_option_has_a_kafka_type():
    assert len(INTEGER_OPTIONS) >= 30  # the walk finds the tools' options (topics --partitions, ...)
    untyped = [f"{name} {param.opts[0]}" for name, param in INTEGER_OPTIONS if not isinstance(param.type, KafkaInt)]
    assert untyped == []


def run_main(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["kcli", *argv])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    return int(exited.value.code or 0), capsys.readouterr().err


def _out_of_range(kafka_type: KafkaInt) -> list[int]:
    return [kafka_type.low - 1, kafka_type.high + 1]


@pytest.mark.parametrize(("command", "param"), INTEGER_OPTIONS, ids=[f"{c} {p.opts[0]}" for c, p in INTEGER_OPTIONS])
def test_out_of_range_values_are_one_line_usage_errors(command: str, param: click.Option, monkeypatch, capsys) -> None:
    kafka_type = param.type
    assert isinstance(kafka_type, KafkaInt)
    for value in _out_of_range(kafka_type):
        code, err = run_main([command, param.opts[0], str(value)], monkeypatch, capsys)
        assert code == 2
        assert err.splitlines() == [
            f"Error: Invalid value for '{param.opts[0]}': {value} is not in the range of {kafka_type.describe()} ({kafka_type.low} to {kafka_type.high})"
        ]


def test_the_reported_case_topics_alter_partitions_2147483648(monkeypatch, capsys):
    code, err = run_main(["topics", "--bootstrap-server", "127.0.0.1:9", "--alter", "--topic", "t", "--partitions", "2147483648"], monkeypatch, capsys)
    assert (code, err) == (2, "Error: Invalid value for '--partitions': 2147483648 is not in the range of an int32 (-2147483648 to 2147483647)\n")


def test_text_that_is_no_integer_is_one_line_too(monkeypatch, capsys):
    code, err = run_main(["consumer-groups", "--timeout", "5s"], monkeypatch, capsys)
    assert (code, err) == (2, "Error: Invalid value for '--timeout': '5s' is not a valid integer\n")


@pytest.mark.parametrize(
    ("kafka_type", "low", "high"),
    [(INT16, -32768, 32767), (INT32, -(2**31), 2**31 - 1), (INT64, -(2**63), 2**63 - 1), (NON_NEGATIVE_INT32, 0, 2**31 - 1)],
)
def test_the_types_take_their_whole_range(kafka_type: KafkaInt, low: int, high: int) -> None:
    assert kafka_type.convert(str(low), None, None) == low
    assert kafka_type.convert(f"+{high}", None, None) == high
    assert (kafka_type.low, kafka_type.high) == (low, high)


@pytest.mark.parametrize(
    ("setting", "kafka_type"), [("request.timeout.ms", "INT"), ("retries", "INT"), ("retry.backoff.ms", "LONG")]
)
def test_integer_client_settings_are_checked_against_their_kafka_type(setting, kafka_type, tmp_path, monkeypatch, capsys):
    too_big = 2**31 if kafka_type == "INT" else 2**63
    config = tmp_path / "client.properties"
    config.write_text(f"{setting}={too_big}\n")
    code, err = run_main(["broker-api-versions", "--bootstrap-server", "127.0.0.1:9", "--command-config", str(config)], monkeypatch, capsys)
    # Kafka's ConfigException, in its words: a bad setting is an error of the run (1), not of usage.
    assert (code, err) == (1, f"Error: Invalid value {too_big} for configuration {setting}: Not a number of type {kafka_type}\n")


def test_the_console_consumer_checks_its_request_timeout_alike(monkeypatch, capsys):
    code, err = run_main(
        ["console-consumer", "--bootstrap-server", "127.0.0.1:9", "--topic", "t", "--consumer-property", "request.timeout.ms=2147483648"], monkeypatch, capsys
    )
    assert code == 1
    assert "Error: Invalid value 2147483648 for configuration request.timeout.ms: Not a number of type INT" in err.splitlines()


# -- the integer fields of console-producer --input json -----------------------------------------------


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"value": "x", "partition": 2**31}, '"partition" must be an int32'),
        ({"value": "x", "timestamp": 2**63}, '"timestamp" must be an int64'),
        ({"value": "x", "partition": -5}, "Invalid partition: -5. Partition number should always be non-negative or null."),
        ({"value": "x", "timestamp": -5}, "Invalid timestamp: -5. Timestamp should always be non-negative or null."),
        ({"value": "x", "partition": True}, '"partition" must be an int32'),
    ],
)
def test_json_record_integers_are_checked_as_kafka_types(record, message):
    from kcli.errors import UsageError
    from kcli.tools.record_json import record_from_json

    with pytest.raises(UsageError) as refused:
        record_from_json(record)
    assert str(refused.value) == message


def test_json_record_integers_take_their_whole_range_and_minus_one_is_no_timestamp():
    from kcli.tools.record_json import record_from_json

    assert record_from_json({"value": "x", "partition": 2**31 - 1, "timestamp": 2**63 - 1})[3:] == (2**31 - 1, 2**63 - 1)
    assert record_from_json({"value": "x", "partition": 0, "timestamp": -1})[3:] == (0, None)


# -- the consumer's integer settings (--consumer-property, --consumer.config) ---------------------------


def test_every_integer_consumer_setting_is_checked_against_its_kafka_type():
    from kcli.client.consumer import CONSUMER_PROPERTIES
    from kcli.errors import KcliError

    numeric = {name: convert for name, (_kw, convert) in CONSUMER_PROPERTIES.items() if hasattr(convert, "kafka_type")}
    assert {n for n in CONSUMER_PROPERTIES if n.endswith((".ms", ".bytes", ".records"))} <= set(numeric)
    for name, convert in numeric.items():
        too_big = 2**31 if convert.kafka_type == "INT" else 2**63
        with pytest.raises(KcliError) as refused:
            convert(name, str(too_big))
        assert str(refused.value) == f"Invalid value {too_big} for configuration {name}: Not a number of type {convert.kafka_type}"
        assert convert(name, str(too_big - 1)) == too_big - 1


def test_a_consumer_setting_outside_its_type_is_refused_before_connecting(monkeypatch, capsys):
    code, err = run_main(
        ["console-consumer", "--bootstrap-server", "127.0.0.1:9", "--topic", "t", "--consumer-property", "fetch.max.bytes=99999999999"], monkeypatch, capsys
    )
    assert code == 1
    assert "Error: Invalid value 99999999999 for configuration fetch.max.bytes: Not a number of type INT" in err.splitlines()
