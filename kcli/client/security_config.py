"""The Java client's security keys, read from a client configuration (``--command-config``,
``--consumer.config``, ``--producer.config``, ``--consumer-property``...).

    security.protocol                        PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
    ssl.truststore.type=PEM                  with ssl.truststore.location or ssl.truststore.certificates
    ssl.keystore.type=PEM                    with ssl.keystore.location, or ssl.keystore.key and
                                             ssl.keystore.certificate.chain; ssl.key.password
    ssl.endpoint.identification.algorithm    https (default: the broker's name is checked) or empty
    ssl.enabled.protocols, ssl.cipher.suites
    sasl.mechanism                           PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (GSSAPI, Java's
                                             default, is refused)
    sasl.jaas.config                         ...PlainLoginModule required username="u" password="p";
                                             or ...ScramLoginModule required username="u" password="p";

A key that starts with ``ssl.``, ``sasl.`` or ``security.`` and is none of the Java client's is
one line naming it: a misspelt trust store must not silently mean "no TLS". Passwords live only
in ``ClientSecurity`` (never in its repr) and in the SASL exchange.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from kcli.errors import KcliError
from kcli.security.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, JaasConfigError, parse_jaas_config
from kcli.security.ssl_factory import SslConfigError, create_context

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

# Every ssl.*, sasl.* and security.* key of Kafka 3.9's clients (SslConfigs, SaslConfigs,
# CommonClientConfigs).
JAVA_SECURITY_KEYS = frozenset({
    "security.protocol", "security.providers",
    "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.type", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.certificates", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.engine.factory.class",
    "sasl.mechanism", "sasl.jaas.config", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds", "sasl.login.callback.handler.class", "sasl.login.class",
    "sasl.client.callback.handler.class", "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms",
    "sasl.login.retry.backoff.ms", "sasl.login.retry.backoff.max.ms", "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.clock.skew.seconds", "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.header.urlencode",
})
_PREFIXES = ("ssl.", "sasl.", "security.")


def is_security_key(name: str) -> bool:
    return name.startswith(_PREFIXES)


@dataclass(frozen=True)
class ClientSecurity:
    """How a client reaches a secured listener."""

    security_protocol: str
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def uses_sasl(self) -> bool:
        return self.sasl_mechanism is not None


def client_security(props: Mapping[str, str]) -> ClientSecurity | None:
    """The security a client configuration asks for; None for PLAINTEXT. Raises KcliError (one
    line naming the key) for a key no Java client knows or a value kcli cannot honour."""
    for name in props:
        if is_security_key(name) and name not in JAVA_SECURITY_KEYS:
            raise KcliError(f"Unknown security config '{name}' in the client configuration (a misspelt key?)")
    protocol = (props.get("security.protocol") or "PLAINTEXT").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise KcliError(f"Invalid value {props.get('security.protocol')} for configuration security.protocol: "
                        f"String must be one of: {', '.join(SECURITY_PROTOCOLS)}")
    if protocol == "PLAINTEXT":
        return None
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        try:
            context = create_context(lambda key: props.get(key), server=False)
        except SslConfigError as e:
            raise KcliError(str(e)) from None
    if protocol == "SSL":
        return ClientSecurity(protocol, context)
    mechanism = (props.get("sasl.mechanism") or "GSSAPI").strip()
    if mechanism not in MECHANISMS:
        raise KcliError(f"sasl.mechanism={mechanism} is not supported: kcli's client speaks {', '.join(MECHANISMS)}")
    text = props.get("sasl.jaas.config")
    if not text:
        raise KcliError(f"security.protocol={protocol} needs sasl.jaas.config with a username and password")
    try:
        jaas = parse_jaas_config(text)
    except JaasConfigError as e:
        raise KcliError(str(e)) from None
    expected = PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE
    if jaas.login_module != expected:
        raise KcliError(f"sasl.jaas.config names {jaas.login_module}; sasl.mechanism={mechanism} needs {expected}")
    username, password = jaas.options.get("username"), jaas.options.get("password")
    if not username or password is None:
        raise KcliError("sasl.jaas.config has no username or no password option")
    return ClientSecurity(protocol, context, mechanism, username, password)
