"""TLS listeners with PEM key stores: a TLS client is answered, a client certificate's subject is
the connection's principal (through ssl.principal.mapping.rules), and a plaintext client, a
certificate from another CA, an expired one or none where one is required is closed with one
log line and no traceback. A listener whose key store does not load refuses the start."""

from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import sys
import time

import pytest

from tests.broker_process import BrokerProcess
from tests.certs import make_certs, tls_overrides
from tests.wire_client import decode_response, encode_request, recv_exactly, request_entity

SUBJECT = "CN=client,OU=test,O=kcli"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("other-ca"))


@pytest.fixture(scope="module")
def expired(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("expired"), DAYS="-1")


def _ports(broker) -> list[int]:
    return broker.listener_ports


def _start(tmp_path_factory, overrides: dict[str, str]) -> BrokerProcess:
    return BrokerProcess(tmp_path_factory.mktemp("broker"), {"broker.id": "0", **overrides}, log_level="DEBUG").start()


@pytest.fixture(scope="module")
def requested(tmp_path_factory, certs):
    """PLAINTEXT and SSL listeners; client certificates asked for and mapped to short names."""
    broker = _start(tmp_path_factory, {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.client.auth": "requested",
        **tls_overrides(certs),
    })
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def required(tmp_path_factory, certs):
    """An SSL listener requiring a client certificate, its principal mapped by a rule, its key
    store inline (KIP-651) and under the listener's prefix, its key encrypted."""
    encrypted = make_certs(tmp_path_factory.mktemp("encrypted"), KEY_PASSWORD="key-secret-1")
    keystore = (encrypted / "server.keystore.pem").read_text()
    key, chain = keystore.split("-----END ENCRYPTED PRIVATE KEY-----\n")
    broker = _start(tmp_path_factory, {
        "listeners": "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SSL",
        "listener.name.secure.ssl.client.auth": "required",
        "listener.name.secure.ssl.keystore.type": "PEM",
        "listener.name.secure.ssl.keystore.key": key + "-----END ENCRYPTED PRIVATE KEY-----\n",
        "listener.name.secure.ssl.keystore.certificate.chain": chain,
        "listener.name.secure.ssl.key.password": "key-secret-1",
        "listener.name.secure.ssl.truststore.type": "PEM",
        "listener.name.secure.ssl.truststore.certificates": (certs / "ca.pem").read_text(),
        "ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=test.*$/$1/U,DEFAULT",
    })
    broker.trust = encrypted / "ca.pem"
    yield broker
    broker.stop()


def _client_context(trust, keystore=None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(trust))
    if keystore is not None:
        context.load_cert_chain(str(keystore))
    return context


def _call(sock, api_key: int, version: int, fields: dict):
    sock.sendall(encode_request(request_entity(api_key, version, fields), 1))
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    return decode_response(api_key, version, recv_exactly(sock, size))[1]



def _tls(port: int, context: ssl.SSLContext, host: str = "localhost"):
    return context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname=host)


def _refused(port: int, context: ssl.SSLContext) -> bool:
    """The handshake fails, or the broker closes the connection before answering."""
    try:
        with _tls(port, context) as sock:
            _call(sock, 18, 0, {})
    except (ssl.SSLError, ConnectionError):
        return True
    return False


def _lines(broker, text: str) -> list[str]:
    return [line for line in broker.log_lines if text in line]


def _wait_lines(broker, text: str, count: int) -> list[str]:
    deadline = time.monotonic() + 10
    while len(_lines(broker, text)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return _lines(broker, text)


def test_a_tls_client_is_answered_and_told_the_tls_endpoint(requested, certs):
    plaintext_port, ssl_port = _ports(requested)
    with _tls(ssl_port, _client_context(certs / "ca.pem")) as sock:
        assert _call(sock, 18, 0, {}).error_code == 0
        metadata = _call(sock, 3, 12, {"topics": None})
    assert [(b.node_id, b.host, b.port) for b in metadata.brokers] == [(0, "127.0.0.1", ssl_port)]
    with socket.create_connection(("127.0.0.1", plaintext_port), timeout=10) as sock:
        assert [b.port for b in _call(sock, 3, 12, {"topics": None}).brokers] == [plaintext_port]


def test_the_client_certificate_subject_is_the_principal_and_no_certificate_is_anonymous(requested, certs):
    _, ssl_port = _ports(requested)
    with _tls(ssl_port, _client_context(certs / "ca.pem", certs / "client.keystore.pem")) as sock:
        assert _call(sock, 18, 0, {}).error_code == 0
    assert _wait_lines(requested, f"authenticated as User:{SUBJECT}", 1)
    before = len(_lines(requested, "authenticated as User:ANONYMOUS"))
    with _tls(ssl_port, _client_context(certs / "ca.pem")) as sock:
        assert _call(sock, 18, 0, {}).error_code == 0
    assert len(_wait_lines(requested, "authenticated as User:ANONYMOUS", before + 1)) == before + 1


def test_a_plaintext_client_on_the_tls_listener_is_closed_and_logged_once(requested):
    _, ssl_port = _ports(requested)
    before = len(_lines(requested, "Failed authentication"))
    with socket.create_connection(("127.0.0.1", ssl_port), timeout=10) as sock:
        sock.sendall(encode_request(request_entity(18, 0, {}), 1))
        received = b""
        try:
            while chunk := sock.recv(1024):  # until the broker closes
                received += chunk
        except ConnectionError:
            pass
    assert not received.startswith(b"\x00\x00")  # no answer frame: at most a TLS alert
    failed = _wait_lines(requested, "Failed authentication", before + 1)[before:]
    assert len(failed) == 1 and "SSL handshake failed" in failed[0] and "listener SSL" in failed[0]
    assert not any("Traceback" in line for line in requested.log_lines)


def test_a_tls_client_on_the_plaintext_listener_is_closed_without_a_traceback(requested, certs):
    plaintext_port, _ = _ports(requested)
    assert _refused(plaintext_port, _client_context(certs / "ca.pem"))
    assert not any("Traceback" in line for line in requested.log_lines)


def test_a_required_certificate_is_mapped_by_the_rules(required, certs):
    _, port = _ports(required)
    with _tls(port, _client_context(required.trust, certs / "client.keystore.pem")) as sock:
        metadata = _call(sock, 3, 12, {"topics": None})
    assert [b.port for b in metadata.brokers] == [port]
    assert _wait_lines(required, "authenticated as User:CLIENT", 1)


@pytest.mark.parametrize("case", ["no certificate", "another CA", "expired"])
def test_a_client_without_a_good_certificate_is_refused_and_logged_once(required, certs, other_ca, expired, case):
    _, port = _ports(required)
    keystore = {"no certificate": None, "another CA": other_ca / "client.keystore.pem", "expired": expired / "client.keystore.pem"}[case]
    before = len(_lines(required, "Failed authentication"))
    assert _refused(port, _client_context(required.trust, keystore))
    failed = _wait_lines(required, "Failed authentication", before + 1)[before:]
    assert len(failed) == 1 and "listener SECURE (SSL handshake failed" in failed[0]
    assert not any("Traceback" in line for line in required.log_lines)


def test_the_key_password_never_reaches_the_log(required):
    assert not any("key-secret-1" in line for line in required.log_lines)


def _start_refused(tmp_path, overrides: dict[str, str]) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "kcli", "broker", "start", "--override", f"log.dirs={tmp_path / 'logs'}"]
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ({}, "listener SSL uses SSL but has no key store: set ssl.keystore.location"),
        ({"ssl.keystore.location": "{certs}/server.keystore.pem"}, "ssl.keystore.type=JKS is not supported"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "{certs}/missing.pem"}, "ssl.keystore.location: no such file"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "{certs}/ca.pem"}, "The key store of ssl.keystore.location does not load"),
    ],
)
def test_a_tls_listener_whose_key_store_does_not_load_refuses_the_start(tmp_path, certs, keys, named):
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", **{k: v.format(certs=certs) for k, v in keys.items()}}
    result = _start_refused(tmp_path, overrides)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and named in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "logs").exists()


def test_a_wrong_key_password_refuses_the_start_without_showing_it(tmp_path, tmp_path_factory):
    encrypted = make_certs(tmp_path_factory.mktemp("wrong-password"), KEY_PASSWORD="right-secret-2")
    result = _start_refused(tmp_path, {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(encrypted / "server.keystore.pem"),
        "ssl.key.password": "wrong-secret-3",
    })
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "does not load" in errors[0], result.stderr
    assert "secret" not in result.stderr
