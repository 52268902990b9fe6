"""``sasl.jaas.config`` as Kafka's JaasConfig reads it: one login module, its flag, its options.

    org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="pw";

Options are ``key=value`` with the value quoted (``\\"`` and ``\\\\`` escapes) or a bare word; the
entry ends with ``;``. A broker's PlainLoginModule lists its users as ``user_<name>="<password>"``.
The parsed options are secrets: ``JaasConfig`` never shows them in ``str``/``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasConfigError(ValueError):
    """A ``sasl.jaas.config`` value that does not parse; the message holds no option value."""


@dataclass(frozen=True)
class JaasConfig:
    login_module: str
    flag: str
    options: dict[str, str] = field(repr=False)

    def __repr__(self) -> str:
        return f"JaasConfig({self.login_module} {self.flag}, options: {', '.join(sorted(self.options))})"

    __str__ = __repr__

    def users(self) -> dict[str, str]:
        """The ``user_<name>="<password>"`` options of a broker's PlainLoginModule."""
        return {key[len("user_"):]: value for key, value in self.options.items() if key.startswith("user_")}


def _tokens(text: str, key: str):
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif char in "=;":
            yield char, None
            i += 1
        elif char == '"':
            i += 1
            out = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                out.append(text[i])
                i += 1
            if i >= n:
                raise JaasConfigError(f"Value not specified for key '{key}' in JAAS config: a quoted value is not closed")
            i += 1
            yield "word", "".join(out)
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in '=;"':
                i += 1
            yield "word", text[start:i]


def parse_jaas_config(text: str, key: str = "sasl.jaas.config") -> JaasConfig:
    tokens = list(_tokens(text, key))
    entries: list[JaasConfig] = []
    position = 0
    while position < len(tokens):
        kind, module = tokens[position]
        if kind != "word":
            raise JaasConfigError(f"Invalid JAAS config in {key}: a login module name is expected")
        if position + 1 >= len(tokens) or tokens[position + 1][0] != "word":
            raise JaasConfigError(f"Invalid JAAS config in {key}: a login module control flag is expected after {module}")
        flag = tokens[position + 1][1].lower()
        if flag not in FLAGS:
            raise JaasConfigError(f"Invalid JAAS config in {key}: invalid control flag {tokens[position + 1][1]}")
        position += 2
        options: dict[str, str] = {}
        while position < len(tokens) and tokens[position][0] != ";":
            if (tokens[position][0] != "word" or position + 2 >= len(tokens) or tokens[position + 1][0] != "="
                    or tokens[position + 2][0] != "word"):
                raise JaasConfigError(f"Invalid JAAS config in {key}: options must be key=value")
            options[tokens[position][1]] = tokens[position + 2][1]
            position += 3
        if position >= len(tokens):
            raise JaasConfigError(f"Invalid JAAS config in {key}: the entry does not end with ';'")
        position += 1
        entries.append(JaasConfig(module, flag, options))
    if len(entries) != 1:
        raise JaasConfigError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]
