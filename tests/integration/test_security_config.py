"""No silent downgrade: a broker asked for security it cannot give (GSSAPI, OAUTHBEARER), whose SASL
users do not parse or whose inter-broker client has no credentials refuses to start (one line, exit 1);
keys no Kafka broker defines are warned about, one line each."""

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
        # GSSAPI is Kafka's default sasl.enabled.mechanisms.
        (["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"], "sasl.enabled.mechanisms names GSSAPI, which kcli does not support"),
        (["listeners=PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:SASL_SSL",
          "listener.name.client.sasl.enabled.mechanisms=OAUTHBEARER"], "listener CLIENT: sasl.enabled.mechanisms names OAUTHBEARER"),
        (["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN"],
         "listener SASL_PLAINTEXT enables PLAIN but has no users: set listener.name.sasl_plaintext.plain.sasl.jaas.config"),
        (["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN", "sasl.jaas.config=PlainLoginModule required"],
         "the entry does not end with ';'"),
        (["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN",
          "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"b\";",
          "security.inter.broker.protocol=SASL_PLAINTEXT"], "sasl.mechanism.inter.broker.protocol=GSSAPI is not supported"),
        (["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=SCRAM-SHA-256",
          "security.inter.broker.protocol=SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256"],
         "set username and password in listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"),
    ],
)
def test_a_broker_asked_for_security_it_cannot_give_refuses_to_start_with_one_line(tmp_path, overrides, named):
    result = _start(tmp_path, *overrides)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and named in errors[0], result.stderr
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
