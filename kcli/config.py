"""Java ``.properties`` files and typed config definitions that follow Kafka's ConfigDef rules.

This module owns two things shared by the broker and the client tools:

* reading ``server.properties`` style files exactly as ``java.util.Properties.load`` does
  (comments, the three separators, line continuations, escapes) and ``key=value`` overrides;
* ``ConfigKey`` / ``ConfigDef``: a config's name, type, default, validator and importance, with
  Kafka's parsing of a string into a typed value (``parse_value``), Kafka's validators and their
  messages, and Kafka's rendering of a typed value back to a string (``render_value``).

A value that does not parse or validate raises ``KafkaError(ErrorCode.INVALID_CONFIG, "Invalid
value X for configuration Y: reason")``, the text Kafka's ConfigException carries, because a broker
sends that message to the client that sent the config.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kcli.errors import ErrorCode, KafkaError, KcliError, UsageError
from kcli.java_compat import double_to_string

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DOUBLE_MAX = 1.7976931348623157e308


class ConfigType(enum.IntEnum):
    """A config's type; the values are the ConfigType codes DescribeConfigs answers with."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Password:
    """A secret config value; it never shows itself in ``str``/``repr`` (Kafka prints ``[hidden]``)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return "[hidden]"

    __str__ = __repr__


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""The default of a config that must be given (Kafka's NO_DEFAULT_VALUE)."""


def config_error(name: str, value: Any, reason: str | None = None) -> KafkaError:
    """The INVALID_CONFIG error Kafka's ConfigException(name, value, reason) carries."""
    shown = value_text(value)
    message = f"Invalid value {shown} for configuration {name}"
    return KafkaError(ErrorCode.INVALID_CONFIG, f"{message}: {reason}" if reason is not None else message)


def value_text(value: Any) -> str:
    """A parsed value as Java's ``toString`` shows it in error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_to_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    return str(value)


# -- validators --------------------------------------------------------------------------------------


class Validator:
    """Checks a parsed (non-null) value; ``str(validator)`` describes the valid values as Kafka does."""

    def check(self, name: str, value: Any) -> None:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Range(Validator):
    """A number no smaller than ``at_least`` and no larger than ``at_most`` (either may be None)."""

    at_least: int | float | None = None
    at_most: int | float | None = None

    def check(self, name: str, value: Any) -> None:
        if self.at_least is not None and value < self.at_least:
            raise config_error(name, value, f"Value must be at least {value_text(self.at_least)}")
        if self.at_most is not None and value > self.at_most:
            raise config_error(name, value, f"Value must be no more than {value_text(self.at_most)}")

    def __str__(self) -> str:
        low = "" if self.at_least is None else value_text(self.at_least)
        high = "" if self.at_most is None else value_text(self.at_most)
        if self.at_least is None and self.at_most is None:
            return "[...]"
        if self.at_most is None:
            return f"[{low},...]"
        if self.at_least is None:
            return f"[...,{high}]"
        return f"[{low},...,{high}]"


def at_least(minimum: int | float) -> Range:
    return Range(at_least=minimum)


def between(minimum: int | float, maximum: int | float) -> Range:
    return Range(at_least=minimum, at_most=maximum)


@dataclasses.dataclass(frozen=True)
class ValidString(Validator):
    """One of a fixed set of strings (``case_insensitive`` compares ignoring case)."""

    values: tuple[str, ...]
    case_insensitive: bool = False

    def check(self, name: str, value: Any) -> None:
        if self.case_insensitive:
            if str(value).lower() not in {v.lower() for v in self.values}:
                raise config_error(name, value, f"String must be one of (case insensitive): {', '.join(self.values)}")
        elif value not in self.values:
            raise config_error(name, value, f"String must be one of: {', '.join(self.values)}")

    def __str__(self) -> str:
        if self.case_insensitive:
            return "(case insensitive) [" + ", ".join(self.values) + "]"
        return "[" + ", ".join(self.values) + "]"


def one_of(*values: str, case_insensitive: bool = False) -> ValidString:
    return ValidString(tuple(values), case_insensitive)


@dataclasses.dataclass(frozen=True)
class ValidList(Validator):
    """A list whose every item is one of ``values``; the error names the offending item."""

    values: tuple[str, ...]

    def check(self, name: str, value: Any) -> None:
        for item in value:
            ValidString(self.values).check(name, item)

    def __str__(self) -> str:
        return "[" + ", ".join(self.values) + "]"


def list_of(*values: str) -> ValidList:
    return ValidList(tuple(values))


class NonEmptyString(Validator):
    def check(self, name: str, value: Any) -> None:
        if value == "":
            raise config_error(name, value, "String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


@dataclasses.dataclass(frozen=True)
class Check(Validator):
    """A rule given as a function returning why a value is refused (or None) and its description."""

    problem: Callable[[Any], str | None]
    description: str

    def check(self, name: str, value: Any) -> None:
        reason = self.problem(value)
        if reason is not None:
            raise config_error(name, value, reason)

    def __str__(self) -> str:
        return self.description


# -- parsing and rendering ------------------------------------------------------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_COMMA_WITH_WHITESPACE = re.compile(r"\s*,\s*")
_INTEGER_BOUNDS = {
    ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
    ConfigType.INT: (INT_MIN, INT_MAX),
    ConfigType.LONG: (LONG_MIN, LONG_MAX),
}


def parse_value(name: str, value: Any, config_type: ConfigType) -> Any:
    """A string (or already typed value) turned into ``config_type``'s value as Kafka's ConfigDef.parseType does.

    Strings are trimmed; booleans are ``true``/``false`` in any case; numbers are range-checked
    for their Java type; lists split on commas with surrounding whitespace (an empty string is an
    empty list). None stays None. Failures raise INVALID_CONFIG naming ``name``.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        return _typed_value(name, value, config_type)
    text = value.strip()
    if config_type == ConfigType.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise config_error(name, value, "Expected value to be either true or false")
        return text.lower() == "true"
    if config_type in _INTEGER_BOUNDS:
        low, high = _INTEGER_BOUNDS[config_type]
        if not _INTEGER.fullmatch(text) or not low <= int(text) <= high:
            raise config_error(name, value, f"Not a number of type {config_type.name}")
        return int(text)
    if config_type == ConfigType.DOUBLE:
        if not _JAVA_DOUBLE.fullmatch(text):
            raise config_error(name, value, "Not a number of type DOUBLE")
        return float(text.rstrip("fFdD"))
    if config_type == ConfigType.LIST:
        return () if text == "" else tuple(_COMMA_WITH_WHITESPACE.split(text))
    if config_type == ConfigType.PASSWORD:
        return Password(text)
    return text


def _typed_value(name: str, value: Any, config_type: ConfigType) -> Any:
    if config_type == ConfigType.BOOLEAN and isinstance(value, bool):
        return value
    if config_type in _INTEGER_BOUNDS and isinstance(value, int) and not isinstance(value, bool):
        return value
    if config_type == ConfigType.DOUBLE and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if config_type == ConfigType.LIST and isinstance(value, (list, tuple)):
        return tuple(value)
    if config_type == ConfigType.PASSWORD and isinstance(value, Password):
        return value
    raise config_error(name, value, f"Expected a value of type {config_type.name}")


def render_value(value: Any, config_type: ConfigType | None = None) -> str | None:
    """A typed value in Kafka's string form (ConfigDef.convertToString): None stays None, lists
    are joined with ``,``, doubles are written as Java writes them, a password shows its text."""
    if value is None:
        return None
    if isinstance(value, Password):
        return value.value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_to_string(value)
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


@dataclasses.dataclass(frozen=True)
class ConfigKey:
    """One config: its name, type, typed default (``NO_DEFAULT`` when required), a one-line doc,
    an optional validator, importance, and whether its value is secret (every PASSWORD is)."""

    name: str
    type: ConfigType
    default: Any = NO_DEFAULT
    doc: str = ""
    validator: Validator | None = None
    importance: Importance = Importance.MEDIUM
    sensitive: bool = False
    internal: bool = False

    def __post_init__(self) -> None:
        if self.type == ConfigType.PASSWORD:
            object.__setattr__(self, "sensitive", True)
        if isinstance(self.default, str) and self.type not in (ConfigType.STRING, ConfigType.CLASS):
            object.__setattr__(self, "default", parse_value(self.name, self.default, self.type))
        elif self.type == ConfigType.DOUBLE and isinstance(self.default, int):
            object.__setattr__(self, "default", float(self.default))

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def parse(self, value: Any) -> Any:
        """``value`` parsed to this key's type and validated (None is not validated)."""
        parsed = parse_value(self.name, value, self.type)
        if parsed is not None and self.validator is not None:
            self.validator.check(self.name, parsed)
        return parsed

    def render(self, value: Any) -> str | None:
        return render_value(value, self.type)

    @property
    def default_string(self) -> str | None:
        """The default as Kafka writes it; None when there is none or it is null."""
        return self.render(self.default) if self.has_default else None

    @property
    def valid_values(self) -> str:
        return str(self.validator) if self.validator is not None else ""


class ConfigDef:
    """An ordered set of ``ConfigKey``\\ s, looked up by name, that parses a whole property map."""

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {}
        for key in keys:
            self.define(key)

    def define(self, key: ConfigKey) -> ConfigDef:
        if key.name in self._keys:
            raise ValueError(f"Configuration {key.name} is defined twice.")
        self._keys[key.name] = key
        return self

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __getitem__(self, name: str) -> ConfigKey:
        return self._keys[name]

    def get(self, name: str) -> ConfigKey | None:
        return self._keys.get(name)

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self._keys.values())

    def __len__(self) -> int:
        return len(self._keys)

    def names(self) -> list[str]:
        return list(self._keys)

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Every defined key's typed value: from ``props`` when given there, else its default.

        Keys in ``props`` that are not defined are ignored (Kafka only logs them). A missing
        required key or a bad value raises INVALID_CONFIG.
        """
        values = {}
        for key in self._keys.values():
            if key.name in props:
                values[key.name] = key.parse(props[key.name])
            elif key.has_default:
                values[key.name] = key.default
            else:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f'Missing required configuration "{key.name}" which has no default value.')
        return values

    def default_values(self) -> dict[str, Any]:
        return {key.name: key.default for key in self._keys.values() if key.has_default}


# -- .properties files ----------------------------------------------------------------------------------

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_properties(path: str | Path) -> dict[str, str]:
    """A ``.properties`` file's entries (later duplicates win). Raises KcliError naming the file
    when it cannot be read or passes ``input_files.PROPERTIES``' bounds. The file is read as UTF-8, falling back to ISO-8859-1 (Java's own
    encoding for these files) when it is not valid UTF-8."""
    from kcli.input_files import PROPERTIES, read_bytes

    data = read_bytes(path, "properties file", PROPERTIES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    try:
        return parse_properties(text)
    except KcliError as exc:
        raise KcliError(f"Cannot read properties file {path}: {exc}") from None


def parse_properties(text: str) -> dict[str, str]:
    """``text`` in Java's ``.properties`` syntax as a dict, as ``java.util.Properties.load`` reads it.

    Lines starting (after whitespace) with ``#`` or ``!`` are comments; a key ends at the first
    unescaped ``=``, ``:`` or whitespace, and one ``=``/``:`` plus surrounding whitespace separate it
    from the value; a line ending in an odd number of backslashes continues on the next line
    (whose leading whitespace is dropped); ``\\t \\n \\r \\f \\uXXXX`` are escapes and any other
    escaped character stands for itself.
    """
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_entry(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _natural_lines(text: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", text)


def _logical_lines(text: str) -> Iterator[str]:
    pending: str | None = None
    for raw in _natural_lines(text):
        line = raw.lstrip(_WHITESPACE)
        if pending is None:
            if line == "" or line[0] in "#!":
                continue
        elif line == "":
            # A blank line ends a continued entry.
            yield pending
            pending = None
            continue
        continued = _ends_with_odd_backslashes(line)
        body = line[:-1] if continued else line
        pending = body if pending is None else pending + body
        if not continued:
            yield pending
            pending = None
    if pending is not None:
        yield pending


def _ends_with_odd_backslashes(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_entry(line: str) -> tuple[str, str]:
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
            continue
        if char == "\\":
            escaped = True
        elif char in "=:" or char in _WHITESPACE:
            return line[:index], _value_after_separator(line, index)
    return line, ""


def _value_after_separator(line: str, index: int) -> str:
    seen_separator = line[index] in "=:"
    position = index + 1
    while position < len(line):
        char = line[position]
        if char in _WHITESPACE:
            position += 1
        elif char in "=:" and not seen_separator:
            seen_separator = True
            position += 1
        else:
            break
    return line[position:]


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    position = 0
    while position < len(text):
        char = text[position]
        position += 1
        if char != "\\" or position >= len(text):
            if char != "\\":
                out.append(char)
            continue
        escaped = text[position]
        position += 1
        if escaped == "u":
            digits = text[position : position + 4]
            if len(digits) < 4 or not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise KcliError("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            position += 4
        else:
            out.append(_ESCAPES.get(escaped, escaped))
    return "".join(out)


def parse_override(argument: str) -> tuple[str, str]:
    """``key=value`` from the command line as ``(key, value)``; the value may be empty or hold
    further ``=``. Raises UsageError (exit 2) when there is no ``=`` or no key."""
    key, separator, value = argument.partition("=")
    if not separator or not key.strip():
        raise UsageError(f"Invalid override '{argument}': expected key=value")
    return key.strip(), value
