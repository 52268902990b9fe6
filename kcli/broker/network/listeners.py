"""What each listener needs to secure its connections (Kafka's ChannelBuilders per listener).

A listener's security keys are the broker's, each overridden by the same key prefixed with
``listener.name.<listener, lower case>.`` (Kafka's valuesWithPrefixOverride): one broker can
serve TLS with one certificate on an external listener and another on an internal one. SSL and
SASL_SSL listeners get an ``ssl.SSLContext`` (``kcli.security.ssl_factory``) and a principal
mapper (``ssl.principal.mapping.rules``); PLAINTEXT listeners get neither.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kcli.security.principal import SslPrincipalMapper
from kcli.security.ssl_factory import SslConfigError, create_context

TLS_PROTOCOLS = ("SSL", "SASL_SSL")


class ListenerConfigError(ValueError):
    """A listener's security configuration does not load; one line naming the listener and key."""


@dataclass(frozen=True)
class ListenerSecurity:
    """One listener's name, protocol, and (for TLS) its SSL context and principal mapper."""

    name: str
    security_protocol: str
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None


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
    if protocol not in TLS_PROTOCOLS:
        return ListenerSecurity(listener_name.upper(), protocol)
    get = listener_lookup(config, listener_name)
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
    return ListenerSecurity(listener_name.upper(), protocol, context, mapper)


def _has_certificate(get: Callable[[str], Any]) -> bool:
    return any(get(key) not in (None, "") for key in ("ssl.keystore.location", "ssl.keystore.certificate.chain"))
