"""What each listener needs to secure its connections (Kafka's ChannelBuilders per listener).

A listener's security keys are the broker's, each overridden by the same key prefixed with
``listener.name.<listener, lower case>.`` (Kafka's valuesWithPrefixOverride): one broker can
serve TLS with one certificate on an external listener and another on an internal one. SSL and
SASL_SSL listeners get an ``ssl.SSLContext`` (``kcli.security.ssl_factory``) and a principal
mapper (``ssl.principal.mapping.rules``); SASL_PLAINTEXT and SASL_SSL listeners get their SASL
settings: ``sasl.enabled.mechanisms`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), the PLAIN users
of ``listener.name.<l>.plain.sasl.jaas.config`` (else ``sasl.jaas.config``), entries
``user_<name>="<password>"``, and ``connections.max.reauth.ms``.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcli.security.jaas import PLAIN_LOGIN_MODULE, JaasConfig, JaasConfigError, parse_jaas_config
from kcli.security.principal import SslPrincipalMapper
from kcli.security.ssl_factory import SslConfigError, create_context

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class ListenerConfigError(ValueError):
    """A listener's security configuration does not load; one line naming the listener and key."""


@dataclass(frozen=True)
class SaslSettings:
    """A SASL listener's mechanisms, PLAIN users (secrets: never shown) and re-authentication."""

    enabled_mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = field(repr=False)
    reauth_ms: int = 0


@dataclass(frozen=True)
class ListenerSecurity:
    """One listener's name, protocol, (for TLS) its SSL context and principal mapper, and (for
    SASL) its SASL settings."""

    name: str
    security_protocol: str
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None
    sasl: SaslSettings | None = None


def listener_prefix(listener_name: str) -> str:
    return f"listener.name.{listener_name.lower()}."


def listener_lookup(config: Any, listener_name: str) -> Callable[[str], Any]:
    """A key's value for ``listener_name``: its ``listener.name.<l>.`` form when given, else the
    broker's own value (typed, with Kafka's default)."""
    prefix = listener_prefix(listener_name)
    properties = config.effective_properties

    def get(name: str) -> Any:
        prefixed = properties.get(prefix + name)
        if prefixed is not None:
            return prefixed
        return config.get(name) if name in config else None

    return get


def listener_security(config: Any, listener_name: str) -> ListenerSecurity:
    """The security of one listener of a BrokerConfig; raises ListenerConfigError."""
    protocol = config.security_protocol(listener_name)
    get = listener_lookup(config, listener_name)
    sasl = sasl_settings(config, listener_name, get) if protocol in SASL_PROTOCOLS else None
    if protocol not in TLS_PROTOCOLS:
        return ListenerSecurity(listener_name.upper(), protocol, sasl=sasl)
    try:
        context = create_context(get, server=True)
    except SslConfigError as e:
        raise ListenerConfigError(f"listener {listener_name.upper()}: {e}") from None
    if not _has_certificate(get):
        raise ListenerConfigError(
            f"listener {listener_name.upper()} uses {protocol} but has no key store: set ssl.keystore.location "
            "(or ssl.keystore.certificate.chain and ssl.keystore.key) with ssl.keystore.type=PEM"
        )
    try:
        mapper = SslPrincipalMapper(str(get("ssl.principal.mapping.rules") or "DEFAULT"))
    except ValueError as e:
        raise ListenerConfigError(f"listener {listener_name.upper()}: ssl.principal.mapping.rules: {e}") from None
    return ListenerSecurity(listener_name.upper(), protocol, context, mapper, sasl)


def _names(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    return tuple(item.strip() for item in items if item.strip())


def sasl_settings(config: Any, listener_name: str, get: Callable[[str], Any]) -> SaslSettings:
    name = listener_name.upper()
    mechanisms = _names(get("sasl.enabled.mechanisms"))
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ListenerConfigError(
            f"listener {name}: sasl.enabled.mechanisms names {', '.join(unsupported)}, which kcli does not support "
            f"(set it to some of {', '.join(SUPPORTED_MECHANISMS)})"
        )
    if not mechanisms:
        raise ListenerConfigError(f"listener {name}: sasl.enabled.mechanisms is empty")
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        jaas = _plain_jaas(config, listener_name)
        if jaas is None:
            raise ListenerConfigError(
                f"listener {name} enables PLAIN but has no users: set {listener_prefix(listener_name)}plain.sasl.jaas.config "
                f"to {PLAIN_LOGIN_MODULE} required user_<name>=\"<password>\";"
            )
        users = jaas.users()
    reauth = get("connections.max.reauth.ms")
    try:
        reauth_ms = int(reauth or 0)
    except ValueError:
        raise ListenerConfigError(f"listener {name}: connections.max.reauth.ms is not a number") from None
    return SaslSettings(mechanisms, users, max(reauth_ms, 0))


def inter_broker_security(config: Any) -> Any:
    """How this broker reaches the others' inter-broker listener (controller requests, controlled
    shutdown, transaction markers and verification), as a client: None for PLAINTEXT, else a
    ``client.security_config.ClientSecurity`` with the listener's trust and key stores and, for
    SASL, ``sasl.mechanism.inter.broker.protocol`` with the username and password of
    ``listener.name.<l>.<mechanism>.sasl.jaas.config`` (else ``sasl.jaas.config``)."""
    from kcli.client.security_config import ClientSecurity

    listener = config.inter_broker_listener_name
    protocol = config.listener_security_protocol_map.get(listener, listener)
    if protocol == "PLAINTEXT":
        return None
    get = listener_lookup(config, listener)
    context = None
    if protocol in TLS_PROTOCOLS:
        try:
            context = create_context(get, server=False)
        except SslConfigError as e:
            raise ListenerConfigError(f"inter-broker listener {listener}: {e}") from None
    if protocol not in SASL_PROTOCOLS:
        return ClientSecurity(protocol, context)
    mechanism = str(config.get("sasl.mechanism.inter.broker.protocol"))
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ListenerConfigError(
            f"sasl.mechanism.inter.broker.protocol={mechanism} is not supported (set it to one of {', '.join(SUPPORTED_MECHANISMS)})"
        )
    key = f"{listener_prefix(listener)}{mechanism.lower()}.sasl.jaas.config"
    text = config.effective_properties.get(key)
    if text is None:
        key, value = "sasl.jaas.config", config.get("sasl.jaas.config")
        text = getattr(value, "value", value)
    try:
        options = parse_jaas_config(str(text), key).options if text else {}
    except JaasConfigError as e:
        raise ListenerConfigError(f"inter-broker listener {listener}: {e}") from None
    if not options.get("username") or options.get("password") is None:
        raise ListenerConfigError(
            f"inter-broker listener {listener} uses {mechanism}: set username and password in "
            f"{listener_prefix(listener)}{mechanism.lower()}.sasl.jaas.config (or sasl.jaas.config)"
        )
    return ClientSecurity(protocol, context, mechanism, options["username"], options["password"])


def _plain_jaas(config: Any, listener_name: str) -> JaasConfig | None:
    """The PLAIN JAAS entry of a listener: listener.name.<l>.plain.sasl.jaas.config, else sasl.jaas.config."""
    key = f"{listener_prefix(listener_name)}plain.sasl.jaas.config"
    text = config.effective_properties.get(key)
    if text is None:
        key = "sasl.jaas.config"
        value = config.get(key)
        text = getattr(value, "value", value)
    if not text:
        return None
    try:
        jaas = parse_jaas_config(str(text), key)
    except JaasConfigError as e:
        raise ListenerConfigError(f"listener {listener_name.upper()}: {e}") from None
    if jaas.login_module != PLAIN_LOGIN_MODULE:
        raise ListenerConfigError(f"listener {listener_name.upper()}: {key} names {jaas.login_module}, not {PLAIN_LOGIN_MODULE}")
    return jaas


def _has_certificate(get: Callable[[str], Any]) -> bool:
    return any(get(key) not in (None, "") for key in ("ssl.keystore.location", "ssl.keystore.certificate.chain"))
