"""No silent downgrade: a broker asked for SASL refuses to start (one line, exit 1) instead
of serving plaintext; keys no Kafka broker defines are warned about, one line each."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.broker_process import BrokerProcess


def _start(tmp_path, *overrides: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "kcli", "broker", "start", "--override", f"log.dirs={tmp_path / 'logs'}"]
    for override in overrides:
        args += ["--override", override]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["listeners=SASL_PLAINTEXT://127.0.0.1:0"], "SASL_PLAINTEXT"),
        (["listeners=SASL_SSL://127.0.0.1:0"], "SASL_SSL"),
        (["listeners=CLIENT://127.0.0.1:0", "listener.security.protocol.map=CLIENT:SASL_PLAINTEXT"], "SASL_PLAINTEXT"),
        (["security.inter.broker.protocol=SASL_PLAINTEXT"], "SASL_PLAINTEXT"),
        (["sasl.enabled.mechanisms=PLAIN"], "sasl.enabled.mechanisms=PLAIN"),
        (["listener.name.plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256"], "SCRAM-SHA-256"),
    ],
)
def test_a_broker_asked_for_security_refuses_to_start_with_one_line(tmp_path, overrides, named):
    result = _start(tmp_path, *overrides)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and named in errors[0] and "kcli does not support" in errors[0]
    assert "Traceback" not in result.stderr
    assert "Awaiting socket connections" not in result.stderr
    assert not (tmp_path / "logs").exists()  # refused before anything was written


def test_unknown_keys_are_warned_about_one_line_each_and_kafka_keys_are_not(tmp_path):
    broker = BrokerProcess(
        tmp_path,
        {
            "broker.id": "0",
            "num.network.threads": "3",  # a Kafka key kcli has no use for: known, not warned about
            "listener.name.plaintext.max.connections": "100",
            "sasl.enabled.mechanisms": "",  # empty: asks for nothing
            "log.retension.hours": "1",  # misspelt
            "my.custom.setting": "x",
        },
    ).start()
    try:
        warned = [line for line in broker.log_lines if "was supplied but isn't a known config" in line]
    finally:
        broker.stop()
    assert len(warned) == 2
    assert any("'log.retension.hours'" in line for line in warned)
    assert any("'my.custom.setting'" in line for line in warned)
    assert all(" WARN" in line for line in warned)
