"""Who a connection is: Kafka's KafkaPrincipal, and the TLS principal from a certificate's subject.

A principal is a type and a name, written ``User:alice`` (KafkaPrincipal.toString). A PLAINTEXT
connection, and a TLS one whose client sent no certificate, is ``User:ANONYMOUS``; a SASL
connection is ``User:<authorization id>``; a TLS client certificate gives its subject's
distinguished name in RFC 2253 form (as Java's ``X500Principal.getName()`` writes it: the last
RDN first, ``CN=client,OU=eng,O=kcli``), mapped through ``ssl.principal.mapping.rules``
(Kafka's SslPrincipalMapper):

    RULE:pattern/replacement/[LU], ..., DEFAULT

Rules are tried in order; the first whose pattern matches the whole DN gives the name (every
match replaced, ``$1`` back references, then lower- or upper-cased with ``L``/``U``); DEFAULT is
the DN as it is. No rule matching is an error: the connection is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


def user(name: str) -> KafkaPrincipal:
    return KafkaPrincipal(USER_TYPE, name)


class NoMatchingRule(Exception):
    """No ``ssl.principal.mapping.rules`` rule applies to a distinguished name."""


# Kafka's RULE_PATTERN and RULE_SPLITTER (SslPrincipalMapper), in Python's regex dialect.
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    lower: bool = False
    upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(self.replacement, dn)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result


def _java_replacement(replacement: str) -> str:
    """A java.util.regex replacement (``$1``, ``\\$``) as a Python one (``\\g<1>``)."""
    out = []
    i = 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1].replace("\\", "\\\\"))
            i += 2
        elif char == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            j = i + 1
            while j < len(replacement) and replacement[j].isdigit():
                j += 1
            out.append(f"\\g<{replacement[i + 1:j]}>")
            i = j
        else:
            out.append("\\\\" if char == "\\" else char)
            i += 1
    return "".join(out)


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules`` parsed once; ``name(dn)`` maps a subject DN."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self._rules = _parse_rules(_split_rules(rules))

    def name(self, dn: str) -> str:
        for rule in self._rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {dn}")


def _split_rules(text: str) -> list[str]:
    rules = []
    for match in _RULE_SPLITTER.finditer(text.strip()):
        if match.group(1):
            rules.append(match.group(1))
    return rules


def _parse_rules(rules: list[str]) -> list[_Rule]:
    parsed = []
    for rule in rules:
        match = _RULE_PARSER.match(rule)
        if match is None or match.end() != len(rule):
            rest = rule[match.end():] if match is not None else rule
            raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rest}`")
        if match.group(1) is not None:
            parsed.append(_Rule(None))
        elif match.group(2) is not None:
            try:
                pattern = re.compile(match.group(2))
            except re.error as e:
                raise ValueError(f"Invalid rule: `{rule}`: {e}") from None
            parsed.append(_Rule(pattern, _java_replacement(match.group(4)), match.group(6) == "L", match.group(6) == "U"))
    return parsed


# -- a certificate's subject as RFC 2253 text ---------------------------------------------------

# The attribute keywords X500Principal.getName() writes (RFC 2253's, plus DC and UID); others
# are written as their OID with the value's DER in hex.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_OIDS = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16), "serialNumber": ("2.5.4.5", 0x13), "title": ("2.5.4.12", 0x0C)}
_SPECIAL = set(',+"\\<>;')


def _escape(value: str) -> str:
    out = []
    for i, char in enumerate(value):
        if char in _SPECIAL or (i == 0 and char in "# ") or (i == len(value) - 1 and char == " "):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _der_hex(tag: int, value: str) -> str:
    data = value.encode()
    if len(data) < 0x80:
        length = bytes([len(data)])
    else:
        size = (len(data).bit_length() + 7) // 8
        length = bytes([0x80 | size]) + len(data).to_bytes(size, "big")
    return "#" + (bytes([tag]) + length + data).hex()


def subject_dn(certificate: Any) -> str:
    """The subject of a certificate as ``ssl.SSLSocket.getpeercert()`` gives it, in RFC 2253 form."""
    rdns = []
    for rdn in reversed(certificate.get("subject", ())):
        parts = []
        for attribute, value in rdn:
            keyword = _KEYWORDS.get(attribute)
            if keyword is not None:
                parts.append(f"{keyword}={_escape(value)}")
            elif attribute in _OIDS:
                oid, tag = _OIDS[attribute]
                parts.append(f"{oid}={_der_hex(tag, value)}")
            else:
                parts.append(f"{attribute}={_escape(value)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)
