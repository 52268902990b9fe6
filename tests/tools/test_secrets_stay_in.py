"""Secrets never leave the process: a broker given a key password, PLAIN users and SCRAM
credentials, and a client given its password, show none of them in the broker's log (DEBUG
included), in a failed or successful authentication, in `kcli configs --describe` (Kafka's
sensitive entries: value null, sensitive=true) or in DescribeUserScramCredentials."""

from __future__ import annotations

import base64
import hashlib

import pytest

from broker_process import BrokerProcess
from certs import make_certs
from tests.wire_client import WireClient

KEY_PASSWORD = "kp-secret-1"
USER_PASSWORD = "jaas-secret-2"
SCRAM_PASSWORD = "scram-secret-3"
SALT = b"salt-of-carol"
SALTED = hashlib.pbkdf2_hmac("sha256", SCRAM_PASSWORD.encode(), SALT, 4096)
SECRETS = [KEY_PASSWORD, USER_PASSWORD, SCRAM_PASSWORD, base64.b64encode(SALTED).decode(), "wrong-secret-4"]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    encrypted = make_certs(tmp_path_factory.mktemp("certs"), KEY_PASSWORD=KEY_PASSWORD)
    broker = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            f'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="{USER_PASSWORD}";',
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(encrypted / "server.keystore.pem"),
        "ssl.key.password": KEY_PASSWORD,
    }, log_level="DEBUG").start()
    broker.ports = broker.listener_ports
    broker.trust = encrypted / "ca.pem"
    yield broker
    broker.stop()


def _client_config(tmp_path, broker, mechanism: str, password: str) -> str:
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    user = "alice" if mechanism == "PLAIN" else "carol"
    path = tmp_path / f"{mechanism}-{password}.properties"
    path.write_text(
        f"security.protocol=SASL_SSL\nssl.truststore.type=PEM\nssl.truststore.location={broker.trust}\nsasl.mechanism={mechanism}\n"
        f'sasl.jaas.config=org.apache.kafka.common.security.{module} required username="{user}" password="{password}";\n'
    )
    return str(path)


def test_no_secret_leaves_the_broker_or_the_tools(kcli, secured, tmp_path):
    plaintext, sasl_ssl = secured.ports
    with WireClient("127.0.0.1", plaintext) as client:
        altered = client.call(51, 0, {"deletions": [], "upsertions": [
            {"name": "carol", "mechanism": 1, "iterations": 4096, "salt": SALT, "salted_password": SALTED}]})
        assert int(altered.results[0].error_code) == 0
        described = client.call(50, 0, {"users": [{"name": "carol"}]})
    assert [(int(c.mechanism), c.iterations) for c in described.results[0].credential_infos] == [(1, 4096)]
    said = []
    for mechanism, password, expected in [("PLAIN", USER_PASSWORD, 0), ("SCRAM-SHA-256", SCRAM_PASSWORD, 0),
                                          ("PLAIN", "wrong-secret-4", 1), ("SCRAM-SHA-256", "wrong-secret-4", 1)]:
        result = kcli("topics", "--bootstrap-server", f"localhost:{sasl_ssl}", "--list",
                      "--command-config", _client_config(tmp_path, secured, mechanism, password))
        assert result.returncode == expected, result
        said.append(result.stdout + result.stderr)
    described = kcli("configs", "--bootstrap-server", f"127.0.0.1:{plaintext}", "--describe", "--entity-type", "brokers",
                     "--entity-name", "0", "--all")
    assert described.returncode == 0, described
    shown = {line.strip().split("=", 1)[0]: line for line in described.lines if line.startswith("  ")}
    for key in ("ssl.key.password", "listener.name.sasl_ssl.plain.sasl.jaas.config"):
        assert shown[key].strip().startswith(f"{key}=null sensitive=true"), shown[key]
    said.append(described.stdout + described.stderr)
    said.append(kcli("broker", "start", "--help").stdout)
    everything = "\n".join(said + secured.log_lines)
    assert any("Failed authentication" in line for line in secured.log_lines)
    for secret in SECRETS:
        assert secret not in everything
