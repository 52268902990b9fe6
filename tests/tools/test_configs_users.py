"""``kcli configs --entity-type users`` through ``--bootstrap-server``: SCRAM credentials made,
described and deleted with Kafka 3.9's ConfigCommand lines (AlterUserScramCredentials and
DescribeUserScramCredentials), then used in a real SCRAM exchange on the broker's SASL listener;
Kafka's errors; no password in any output."""

from __future__ import annotations

import pytest

from tests.broker_process import BrokerProcess, scram_authenticates
from tests.tools.conftest import run_kcli

SECRET = "alice-secret-7"


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    }).start()
    process.plain_port, process.sasl_port = process.listener_ports
    yield process
    process.stop()


def configs(broker, *args: str):
    return run_kcli("configs", "--bootstrap-server", f"127.0.0.1:{broker.plain_port}", "--entity-type", "users", *args)


def authenticates_as(broker, mechanism: str, user: str, password: str) -> bool:
    return scram_authenticates(broker.sasl_port, mechanism, user, password)


def test_scram_credentials_are_set_described_used_and_deleted(sasl_broker):
    added = configs(sasl_broker, "--entity-name", "alice", "--alter", "--add-config",
                    f"SCRAM-SHA-256=[iterations=8192,password={SECRET}],SCRAM-SHA-512=[password={SECRET}]")
    assert added.returncode == 0, added
    assert added.lines == ["Completed updating config for user alice."]
    described = configs(sasl_broker, "--entity-name", "alice", "--describe")
    assert described.returncode == 0, described
    [line] = described.lines
    prefix = "SCRAM credential configs for user-principal 'alice' are "
    assert line.startswith(prefix)
    assert sorted(line[len(prefix):].split(", ")) == ["SCRAM-SHA-256=iterations=8192", "SCRAM-SHA-512=iterations=4096"]
    assert authenticates_as(sasl_broker, "SCRAM-SHA-256", "alice", SECRET)
    assert authenticates_as(sasl_broker, "SCRAM-SHA-512", "alice", SECRET)
    assert not authenticates_as(sasl_broker, "SCRAM-SHA-256", "alice", "not-" + SECRET)

    deleted = configs(sasl_broker, "--entity-name", "alice", "--alter", "--delete-config", "SCRAM-SHA-512")
    assert deleted.lines == ["Completed updating config for user alice."]
    assert configs(sasl_broker, "--entity-name", "alice", "--describe").lines == [prefix + "SCRAM-SHA-256=iterations=8192"]
    assert not authenticates_as(sasl_broker, "SCRAM-SHA-512", "alice", SECRET)
    everyone = configs(sasl_broker, "--describe")
    assert prefix + "SCRAM-SHA-256=iterations=8192" in everyone.lines
    for result in (added, described, deleted, everyone):
        assert SECRET not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--entity-name", "bob", "--alter", "--add-config", f"SCRAM-SHA-256=[iterations=1000,password={SECRET}]"], 1,
         "Iterations 1000 is less than the minimum 4096 required for SCRAM-SHA-256"),
        (["--entity-name", "bob", "--alter", "--add-config", f"SCRAM-SHA-256=[pass={SECRET}]"], 1, "Invalid credential property SCRAM-SHA-256="),
        (["--entity-default", "--alter", "--add-config", f"SCRAM-SHA-256=[password={SECRET}]"], 2,
         "The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server."),
        (["--entity-name", "bob", "--alter", "--add-config", "retention.ms=1"], 2,
         "Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: Set(retention.ms)"),
        (["--entity-name", "bob", "--alter", "--add-config", "producer_byte_rate=1024"], 1, "quota configs (producer_byte_rate) are not supported"),
        (["--entity-name", "bob", "--alter", "--delete-config", "SCRAM-SHA-512"], 1, "Attempt to delete a user credential that does not exist"),
    ],
)
def test_bad_credentials_and_configs_are_kafkas_errors_without_the_password(sasl_broker, args, code, message):
    result = configs(sasl_broker, *args)
    assert result.returncode == code, result
    assert message in result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
