"""The Java client's security keys as kcli's client reads them: PLAINTEXT needs nothing, TLS
builds a context that checks the broker's name, SASL takes its user from the JAAS entry; what
kcli cannot honour, or a key no Java client has, is one line naming it."""

from __future__ import annotations

import ssl

import pytest

from kcli.client.security_config import client_security
from kcli.errors import KcliError

PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="pw-1";'
SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="pw-2";'


def test_plaintext_is_no_security():
    assert client_security({}) is None and client_security({"security.protocol": "plaintext"}) is None


def test_tls_checks_the_host_name_unless_identification_is_off():
    secured = client_security({"security.protocol": "SSL"})
    assert secured.ssl_context.check_hostname and secured.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert not client_security({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""}).ssl_context.check_hostname


def test_sasl_takes_the_user_from_the_jaas_entry_and_never_shows_the_password():
    plain = client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN})
    assert (plain.sasl_mechanism, plain.username, plain.password, plain.ssl_context) == ("PLAIN", "alice", "pw-1", None)
    assert "pw-1" not in repr(plain)
    scram = client_security({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM})
    assert (scram.username, scram.ssl_context is not None) == ("bob", True)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"ssl.truststore.locaton": "/x"}, "Unknown security config 'ssl.truststore.locaton' in the client configuration (a misspelt key?)"),
        ({"security.protocol": "TLS"}, "Invalid value TLS for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": PLAIN}, "sasl.mechanism=GSSAPI is not supported"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": PLAIN},
         "sasl.mechanism=SCRAM-SHA-256 needs org.apache.kafka.common.security.scram.ScramLoginModule"),
        ({"security.protocol": "SSL", "ssl.truststore.location": "/x.jks"}, "ssl.truststore.type=JKS is not supported"),
    ],
)
def test_what_cannot_be_honoured_is_one_line(props, message):
    with pytest.raises(KcliError) as refused:
        client_security(props)
    assert message in str(refused.value) and "pw-1" not in str(refused.value)
