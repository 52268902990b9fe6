"""An ``ssl.SSLContext`` from Kafka's ``ssl.*`` keys (Kafka's SslFactory with the PEM key stores).

The keys, as a Java broker or client reads them:

- ``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` (one PEM file holding the private key
  and the certificate chain) or, inline (KIP-651), ``ssl.keystore.certificate.chain`` and
  ``ssl.keystore.key``; ``ssl.key.password`` decrypts an encrypted key;
- ``ssl.truststore.type=PEM`` with ``ssl.truststore.location`` or ``ssl.truststore.certificates``
  (inline); with neither, the system's trusted certificates;
- ``ssl.client.auth`` (server side): ``none``, ``requested`` (a certificate is asked for and
  checked when sent), ``required``;
- ``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3: the context allows the lowest to the highest
  listed), ``ssl.cipher.suites`` (IANA names as Java takes them, or OpenSSL's; TLS 1.3 suites
  cannot be narrowed through Python's ssl module);
- ``ssl.endpoint.identification.algorithm`` (client side): ``https`` (the default) checks the
  server's name, empty does not.

Python's ssl loads keys and certificates from files only: inline PEM is written to a private
temporary directory (mode 0700, the file 0600) for the load and removed at once. JKS and PKCS12
stores are refused with one line naming the key. Errors never carry a key or a password.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

PEM = "PEM"
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3, "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}
DEFAULT_ENABLED_PROTOCOLS = "TLSv1.2,TLSv1.3"


class SslConfigError(ValueError):
    """A ``ssl.*`` key kcli cannot honour, or key material that does not load; one line."""


def _text(value: Any) -> str | None:
    """A config value as text: Password objects are unwrapped, empty is None."""
    if value is None:
        return None
    value = getattr(value, "value", value)
    text = ",".join(str(item) for item in value) if isinstance(value, (list, tuple)) else str(value).strip()
    return text or None


def create_context(get: Callable[[str], Any] | Mapping[str, Any], *, server: bool) -> ssl.SSLContext:
    """The context for one listener (``server=True``) or one client. ``get`` gives a key's value
    (None when unset); a Mapping is read with ``.get``."""
    lookup = get.get if isinstance(get, Mapping) else get
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    _set_protocols(context, _text(lookup("ssl.enabled.protocols")) or DEFAULT_ENABLED_PROTOCOLS)
    ciphers = _text(lookup("ssl.cipher.suites"))
    if ciphers:
        _set_ciphers(context, ciphers)
    _load_keystore(context, lookup)
    _load_truststore(context, lookup)
    if server:
        auth = (_text(lookup("ssl.client.auth")) or "none").lower()
        if auth not in CLIENT_AUTH:
            raise SslConfigError(f"Invalid value {auth} for configuration ssl.client.auth: String must be one of: required, requested, none")
        context.verify_mode = CLIENT_AUTH[auth]
    else:
        algorithm = lookup("ssl.endpoint.identification.algorithm")
        algorithm = "https" if algorithm is None else (_text(algorithm) or "")
        if algorithm.lower() not in ("https", ""):
            raise SslConfigError(f"Invalid value {algorithm} for configuration ssl.endpoint.identification.algorithm: only https or empty")
        context.check_hostname = algorithm.lower() == "https"
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _set_protocols(context: ssl.SSLContext, text: str) -> None:
    versions = []
    for name in (item.strip() for item in text.split(",")):
        if not name:
            continue
        if name not in _PROTOCOLS:
            raise SslConfigError(f"Invalid value {name} in ssl.enabled.protocols: one of {', '.join(_PROTOCOLS)}")
        versions.append(_PROTOCOLS[name])
    if not versions:
        raise SslConfigError("ssl.enabled.protocols names no protocol")
    context.minimum_version = min(versions)
    context.maximum_version = max(versions)


# IANA cipher suite names (Java's) as OpenSSL's.
_KEY_EXCHANGES = {"ECDHE_RSA": "ECDHE-RSA", "ECDHE_ECDSA": "ECDHE-ECDSA", "DHE_RSA": "DHE-RSA", "RSA": ""}
_CIPHERS = {"AES_128_GCM": "AES128-GCM", "AES_256_GCM": "AES256-GCM", "AES_128_CBC": "AES128", "AES_256_CBC": "AES256",
            "CHACHA20_POLY1305": "CHACHA20-POLY1305"}


def openssl_cipher_name(name: str) -> str:
    """``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`` as ``ECDHE-RSA-AES128-GCM-SHA256``; a name
    that is not IANA's is taken to be OpenSSL's already."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    exchange, _, rest = name[4:].partition("_WITH_")
    prefix = _KEY_EXCHANGES.get(exchange)
    for cipher, openssl in _CIPHERS.items():
        if prefix is not None and rest.startswith(cipher + "_"):
            mac = rest[len(cipher) + 1:]
            parts = [prefix] if prefix else []
            parts.append(openssl)
            if cipher != "CHACHA20_POLY1305":
                parts.append(mac)
            return "-".join(parts)
    raise SslConfigError(f"Unknown cipher suite {name} in ssl.cipher.suites")


def _set_ciphers(context: ssl.SSLContext, text: str) -> None:
    names = [openssl_cipher_name(item.strip()) for item in text.split(",") if item.strip()]
    # TLS 1.3 suites are not set through the cipher list (and cannot be narrowed here).
    names = [name for name in names if not name.startswith("TLS_")]
    if not names:
        return
    try:
        context.set_ciphers(":".join(names))
    except ssl.SSLError:
        raise SslConfigError(f"No cipher suite of ssl.cipher.suites ({text}) is available") from None


def _check_type(lookup: Callable[[str], Any], key: str) -> None:
    store_type = (_text(lookup(key)) or "JKS").upper()
    if store_type != PEM:
        raise SslConfigError(f"{key}={store_type} is not supported: kcli reads PEM key stores only ({key}=PEM)")


def _load_keystore(context: ssl.SSLContext, lookup: Callable[[str], Any]) -> None:
    location = _text(lookup("ssl.keystore.location"))
    chain = _text(lookup("ssl.keystore.certificate.chain"))
    key = _text(lookup("ssl.keystore.key"))
    if location is None and chain is None and key is None:
        return
    _check_type(lookup, "ssl.keystore.type")
    password = _text(lookup("ssl.key.password"))
    if location is not None and (chain is not None or key is not None):
        raise SslConfigError("ssl.keystore.location and ssl.keystore.certificate.chain / ssl.keystore.key cannot both be set")
    if location is not None:
        _load_chain(context, location, password, "ssl.keystore.location")
        return
    if chain is None or key is None:
        missing = "ssl.keystore.key" if key is None else "ssl.keystore.certificate.chain"
        raise SslConfigError(f"{missing} must be set with {'ssl.keystore.certificate.chain' if key is None else 'ssl.keystore.key'}")
    with tempfile.TemporaryDirectory(prefix="kcli-keystore-") as directory:
        path = os.path.join(directory, "keystore.pem")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(key.strip() + "\n" + chain.strip() + "\n")
        _load_chain(context, path, password, "ssl.keystore.key")


def _load_chain(context: ssl.SSLContext, path: str, password: str | None, key: str) -> None:
    try:
        context.load_cert_chain(path, password=password.encode() if password is not None else None)
    except FileNotFoundError:
        raise SslConfigError(f"{key}: no such file {path}") from None
    except ssl.SSLError as e:
        reason = "the key does not decrypt with ssl.key.password" if "bad decrypt" in str(e).lower() else (e.reason or "not a PEM key and certificate chain")
        raise SslConfigError(f"The key store of {key} does not load: {reason}") from None
    except OSError as e:
        raise SslConfigError(f"{key}: {e.strerror or e}") from None


def _load_truststore(context: ssl.SSLContext, lookup: Callable[[str], Any]) -> None:
    location = _text(lookup("ssl.truststore.location"))
    certificates = _text(lookup("ssl.truststore.certificates"))
    if location is None and certificates is None:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH if context.protocol == ssl.PROTOCOL_TLS_SERVER else ssl.Purpose.SERVER_AUTH)
        return
    _check_type(lookup, "ssl.truststore.type")
    if location is not None and certificates is not None:
        raise SslConfigError("ssl.truststore.location and ssl.truststore.certificates cannot both be set")
    try:
        if location is not None:
            context.load_verify_locations(cafile=location)
        else:
            context.load_verify_locations(cadata=certificates)
    except FileNotFoundError:
        raise SslConfigError(f"ssl.truststore.location: no such file {location}") from None
    except (ssl.SSLError, ValueError) as e:
        key = "ssl.truststore.location" if location is not None else "ssl.truststore.certificates"
        raise SslConfigError(f"The trust store of {key} does not load: {getattr(e, 'reason', None) or 'no PEM certificate'}") from None
