"""kcli's tools against a secured broker, with the Java client's config keys in
--command-config / --producer.config / --consumer.config: TLS (the broker's name checked, a
client certificate where one is required), SASL PLAIN and SCRAM-SHA-256/512 over plaintext and
TLS. A misspelt security key, a trust store of another CA and a wrong password are one line."""

from __future__ import annotations

import uuid

import pytest

from broker_process import BrokerProcess
from certs import make_certs, tls_overrides
from tests.wire_client import WireClient

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw-1";'
MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def secured(tmp_path_factory, certs):
    broker = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "advertised.listeners": "PLAINTEXT://127.0.0.1:0,SSL://localhost:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://localhost:0",
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": MECHANISMS,
        "sasl.jaas.config": PLAIN_JAAS,
        **tls_overrides(certs),
    }).start()
    ports = broker.listener_ports
    broker.ports = dict(zip(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"], ports))
    yield broker
    broker.stop()


def _config(tmp_path, certs, protocol: str, mechanism: str | None = None, password: str = "alice-pw-1", **extra: str):
    lines = [f"security.protocol={protocol}"]
    if "SSL" in protocol:
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={certs / 'ca.pem'}"]
    if protocol == "SSL":
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'client.keystore.pem'}"]
    if mechanism:
        module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
        lines += [f"sasl.mechanism={mechanism}",
                  f'sasl.jaas.config=org.apache.kafka.common.security.{module} required username="alice" password="{password}";']
    lines += [f"{key}={value}" for key, value in extra.items()]
    path = tmp_path / f"client-{uuid.uuid4().hex[:6]}.properties"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def scram_user(secured):
    """alice's SCRAM credentials, made with kcli's own AlterUserScramCredentials call."""
    import hashlib

    upsertions = []
    for mechanism, name in ((1, "sha256"), (2, "sha512")):
        salt = f"alice-salt-{mechanism}".encode()
        upsertions.append({"name": "alice", "mechanism": mechanism, "iterations": 4096, "salt": salt,
                           "salted_password": hashlib.pbkdf2_hmac(name, b"alice-pw-1", salt, 4096)})
    with WireClient("127.0.0.1", secured.ports["PLAINTEXT"]) as client:
        assert all(int(r.error_code) == 0 for r in client.call(51, 0, {"deletions": [], "upsertions": upsertions}).results)


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN")],
)
def test_topics_producer_and_consumer_reach_a_secured_listener(kcli, secured, certs, scram_user, tmp_path, protocol, mechanism):
    config = _config(tmp_path, certs, protocol, mechanism)
    host = "localhost" if "SSL" in protocol else "127.0.0.1"
    bootstrap = f"{host}:{secured.ports[protocol]}"
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    created = kcli("topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "1",
                   "--replication-factor", "1", "--command-config", config)
    assert created.returncode == 0, created
    listed = kcli("topics", "--bootstrap-server", bootstrap, "--list", "--command-config", config)
    assert topic in listed.lines, listed
    produced = kcli("console-producer", "--bootstrap-server", bootstrap, "--topic", topic, "--producer.config", config, input="one\ntwo\n")
    assert produced.returncode == 0, produced
    consumed = kcli("console-consumer", "--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning",
                    "--max-messages", "2", "--consumer.config", config, "--group", topic)
    assert consumed.returncode == 0 and consumed.lines == ["one", "two"], consumed
    assert "alice-pw-1" not in produced.stderr + consumed.stderr + created.stderr


def test_a_misspelt_security_key_is_one_line(kcli, secured, certs, tmp_path):
    config = _config(tmp_path, certs, "SSL", **{"ssl.truststore.locaton": "/x"})
    result = kcli("topics", "--bootstrap-server", f"localhost:{secured.ports['SSL']}", "--list", "--command-config", config)
    assert (result.returncode, result.stderr.splitlines()) == (
        1, ["Error: Unknown security config 'ssl.truststore.locaton' in the client configuration (a misspelt key?)"])


def test_a_broker_certificate_of_another_ca_or_name_is_refused(kcli, secured, certs, tmp_path_factory, tmp_path):
    other = make_certs(tmp_path_factory.mktemp("other-ca"))
    config = _config(tmp_path, other, "SASL_SSL", "PLAIN")
    result = kcli("topics", "--bootstrap-server", f"localhost:{secured.ports['SASL_SSL']}", "--list", "--command-config", config,
                  timeout=60)
    said = (result.stdout + result.stderr).splitlines()  # kafka-topics.sh prints its errors on stdout
    assert result.returncode == 1 and len(said) == 1 and "the TLS handshake failed" in said[0], result
    renamed = _config(tmp_path, certs, "SASL_SSL", "PLAIN")
    mismatch = kcli("topics", "--bootstrap-server", f"127.0.0.2:{secured.ports['SASL_SSL']}", "--list", "--command-config", renamed)
    assert mismatch.returncode == 1, mismatch


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_wrong_password_is_one_line_without_the_password(kcli, secured, certs, scram_user, tmp_path, mechanism):
    config = _config(tmp_path, certs, "SASL_PLAINTEXT", mechanism, password="wrong-pw-9")
    result = kcli("topics", "--bootstrap-server", f"127.0.0.1:{secured.ports['SASL_PLAINTEXT']}", "--list", "--command-config", config)
    said = (result.stdout + result.stderr).splitlines()
    assert result.returncode == 1 and len(said) == 1, result
    assert f"SASL authentication to 127.0.0.1:{secured.ports['SASL_PLAINTEXT']} with {mechanism} failed: Authentication failed" in said[0]
    assert "wrong-pw-9" not in said[0]
