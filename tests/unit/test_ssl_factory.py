"""Kafka's ssl.* keys as SSL contexts: PEM stores from files or inline, enabled protocols, cipher
suites by their IANA (Java) names, client authentication and host name checks. Handshakes run in
memory (ssl.MemoryBIO), with certificates made by scripts/make-test-certs."""

from __future__ import annotations

import ssl

import pytest

from kcli.security.ssl_factory import SslConfigError, create_context, openssl_cipher_name
from tests.certs import make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def _server(certs, **keys):
    return create_context({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "server.keystore.pem"),
                           "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"), **keys}, server=True)


def _client(certs, **keys):
    return create_context({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"), **keys}, server=False)


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, host: str = "localhost"):
    """(client side, server side) after an in-memory handshake; raises the failure."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    server_side = server.wrap_bio(to_server, to_client, server_side=True)
    client_side = client.wrap_bio(to_client, to_server, server_hostname=host)
    for _ in range(10):
        done = 0
        for side in (client_side, server_side):
            try:
                side.do_handshake()
                done += 1
            except ssl.SSLWantReadError:
                pass
        if done == 2:
            return client_side, server_side
    raise AssertionError("the handshake did not finish")


def test_enabled_protocols_bound_the_version(certs):
    client, _ = _handshake(_server(certs, **{"ssl.enabled.protocols": ["TLSv1.2"]}), _client(certs))
    assert client.version() == "TLSv1.2"
    client, _ = _handshake(_server(certs), _client(certs))
    assert client.version() == "TLSv1.3"


def test_cipher_suites_take_java_names(certs):
    server = _server(certs, **{"ssl.enabled.protocols": "TLSv1.2", "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"})
    client, _ = _handshake(server, _client(certs))
    assert client.cipher()[0] == "ECDHE-RSA-AES256-GCM-SHA384"
    assert openssl_cipher_name("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256") == "ECDHE-ECDSA-CHACHA20-POLY1305"
    assert openssl_cipher_name("TLS_RSA_WITH_AES_128_CBC_SHA") == "AES128-SHA"
    with pytest.raises(SslConfigError, match="Unknown cipher suite TLS_FOO_WITH_BAR_SHA"):
        openssl_cipher_name("TLS_FOO_WITH_BAR_SHA")


def test_the_host_name_is_checked_unless_identification_is_off(certs):
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        _handshake(_server(certs), _client(certs), host="kafka.example")
    _handshake(_server(certs), _client(certs, **{"ssl.endpoint.identification.algorithm": ""}), host="kafka.example")


def test_required_client_auth_refuses_a_client_without_a_certificate(certs):
    # With TLS 1.3 the server decides after the client's Finished: the client learns on its next read.
    server = _server(certs, **{"ssl.client.auth": "required", "ssl.enabled.protocols": "TLSv1.2"})
    with pytest.raises(ssl.SSLError):
        _handshake(server, _client(certs))
    keyed = _client(certs, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "client.keystore.pem")})
    _, server_side = _handshake(server, keyed)
    assert dict(x[0] for x in server_side.getpeercert()["subject"])["commonName"] == "client"


def test_an_inline_trust_store_and_key_store(certs):
    keystore = (certs / "server.keystore.pem").read_text()
    key_end = keystore.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----")
    server = create_context({"ssl.keystore.type": "PEM", "ssl.keystore.key": keystore[:key_end], "ssl.keystore.certificate.chain": keystore[key_end:]}, server=True)
    client = create_context({"ssl.truststore.type": "PEM", "ssl.truststore.certificates": (certs / "ca.pem").read_text()}, server=False)
    _handshake(server, client)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"ssl.keystore.location": "x.jks"}, "ssl.keystore.type=JKS is not supported"),
        ({"ssl.truststore.type": "PKCS12", "ssl.truststore.location": "x.p12"}, "ssl.truststore.type=PKCS12 is not supported"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "k"}, "ssl.keystore.certificate.chain must be set with ssl.keystore.key"),
        ({"ssl.enabled.protocols": "SSLv3"}, "Invalid value SSLv3 in ssl.enabled.protocols"),
    ],
)
def test_what_cannot_be_honoured_is_one_line_naming_the_key(keys, message):
    with pytest.raises(SslConfigError, match=message):
        create_context(keys, server=True)
