"""kcli.config: .properties parsing, --override parsing, ConfigDef types, validators and rendering."""

from __future__ import annotations

import pytest

from kcli.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigType,
    NonEmptyString,
    Password,
    at_least,
    between,
    list_of,
    one_of,
    parse_override,
    parse_properties,
    parse_value,
    read_properties,
    render_value,
)
from kcli.errors import ErrorCode, KafkaError, KcliError, UsageError

# -- .properties --------------------------------------------------------------------------------------


def test_comments_blank_lines_and_leading_whitespace_are_skipped():
    text = "# a comment\n! another\n\n   \n   indented=yes\n\t# indented comment\n"
    assert parse_properties(text) == {"indented": "yes"}


def test_the_three_separators_and_whitespace_around_them():
    text = "a=1\nb:2\nc 3\nd   =   4\ne\t:\t5\nf  6\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6"}


def test_only_one_separator_is_consumed():
    assert parse_properties("a:=b\nc = = d\ne  =f") == {"a": "=b", "c": "= d", "e": "f"}


def test_trailing_whitespace_of_a_value_is_kept_and_empty_values_allowed():
    assert parse_properties("a=b  \nempty=\nbare\n") == {"a": "b  ", "empty": "", "bare": ""}


def test_line_continuation_drops_the_next_lines_leading_whitespace():
    text = "listeners=PLAINTEXT://:9092,\\\n      SSL://:9093\nnext=1\n"
    assert parse_properties(text) == {"listeners": "PLAINTEXT://:9092,SSL://:9093", "next": "1"}


def test_an_even_number_of_trailing_backslashes_does_not_continue():
    assert parse_properties("path=C:\\\\\nnext=1") == {"path": "C:\\", "next": "1"}


def test_continued_line_starting_with_hash_is_not_a_comment_and_blank_line_ends_continuation():
    assert parse_properties("a=x\\\n  #not-comment\nb=y\\\n\nc=z") == {"a": "x#not-comment", "b": "y", "c": "z"}


def test_a_comment_ending_in_backslash_does_not_swallow_the_next_line():
    assert parse_properties("# comment \\\nkey=value") == {"key": "value"}


def test_escapes_in_keys_and_values():
    text = "key\\ with\\=odd\\:chars = v\\tal\\nue\\u0041\\\\ \\q\n"
    assert parse_properties(text) == {"key with=odd:chars": "v\tal\nueA\\ q"}


def test_windows_and_old_mac_line_endings():
    assert parse_properties("a=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_later_duplicates_win():
    assert parse_properties("a=1\na=2") == {"a": "2"}


def test_malformed_unicode_escape_is_an_error():
    with pytest.raises(KcliError, match=r"Malformed \\uxxxx encoding"):
        parse_properties("a=\\u12G4")


def test_read_properties_reads_utf8_and_falls_back_to_latin1(tmp_path):
    utf8 = tmp_path / "utf8.properties"
    utf8.write_bytes("name=café\n".encode())
    latin = tmp_path / "latin.properties"
    latin.write_bytes("name=caf\xe9\n".encode("iso-8859-1"))
    assert read_properties(utf8) == {"name": "café"}
    assert read_properties(latin) == {"name": "café"}


def test_read_properties_names_the_missing_file(tmp_path):
    missing = tmp_path / "nope.properties"
    with pytest.raises(KcliError, match="nope.properties"):
        read_properties(missing)


def test_parse_override():
    assert parse_override("log.dirs=/data/a,/data/b") == ("log.dirs", "/data/a,/data/b")
    assert parse_override("sasl.jaas.config=a=b c=d") == ("sasl.jaas.config", "a=b c=d")
    assert parse_override("broker.rack=") == ("broker.rack", "")
    for bad in ("num.partitions", "=3", "  =3"):
        with pytest.raises(UsageError) as exc:
            parse_override(bad)
        assert exc.value.exit_code == 2
        assert "key=value" in str(exc.value)


# -- typed values --------------------------------------------------------------------------------------


def _invalid(call, message):
    with pytest.raises(KafkaError) as exc:
        call()
    assert exc.value.error_code == ErrorCode.INVALID_CONFIG
    assert str(exc.value) == message


def test_booleans_are_true_or_false_in_any_case():
    assert parse_value("x", " TRUE ", ConfigType.BOOLEAN) is True
    assert parse_value("x", "False", ConfigType.BOOLEAN) is False
    _invalid(lambda: parse_value("x", "yes", ConfigType.BOOLEAN), "Invalid value yes for configuration x: Expected value to be either true or false")


def test_integers_are_range_checked_for_their_java_type():
    assert parse_value("i", " 2147483647 ", ConfigType.INT) == 2**31 - 1
    assert parse_value("i", "+5", ConfigType.INT) == 5
    assert parse_value("l", "-9223372036854775808", ConfigType.LONG) == -(2**63)
    assert parse_value("s", "-32768", ConfigType.SHORT) == -32768
    _invalid(lambda: parse_value("i", "2147483648", ConfigType.INT), "Invalid value 2147483648 for configuration i: Not a number of type INT")
    _invalid(lambda: parse_value("s", "32768", ConfigType.SHORT), "Invalid value 32768 for configuration s: Not a number of type SHORT")
    _invalid(lambda: parse_value("l", "9223372036854775808", ConfigType.LONG), "Invalid value 9223372036854775808 for configuration l: Not a number of type LONG")
    for text in ("1_000", "1.0", "0x10", "", "1e3"):
        with pytest.raises(KafkaError):
            parse_value("i", text, ConfigType.INT)


def test_doubles_follow_java_syntax():
    assert parse_value("d", "0.5", ConfigType.DOUBLE) == 0.5
    assert parse_value("d", "1e3", ConfigType.DOUBLE) == 1000.0
    assert parse_value("d", "2d", ConfigType.DOUBLE) == 2.0
    assert parse_value("d", ".25", ConfigType.DOUBLE) == 0.25
    _invalid(lambda: parse_value("d", "half", ConfigType.DOUBLE), "Invalid value half for configuration d: Not a number of type DOUBLE")
    with pytest.raises(KafkaError):
        parse_value("d", "1_0", ConfigType.DOUBLE)


def test_lists_split_on_commas_and_trim():
    assert parse_value("l", " a , b,c ", ConfigType.LIST) == ("a", "b", "c")
    assert parse_value("l", "  ", ConfigType.LIST) == ()
    assert parse_value("l", "a,,b", ConfigType.LIST) == ("a", "", "b")


def test_strings_are_trimmed_and_passwords_hide_themselves():
    assert parse_value("s", "  text  ", ConfigType.STRING) == "text"
    secret = parse_value("p", " s3cret ", ConfigType.PASSWORD)
    assert secret == Password("s3cret")
    assert str(secret) == repr(secret) == "[hidden]"
    assert parse_value("s", None, ConfigType.STRING) is None


def test_validators_and_their_messages():
    partitions = ConfigKey("num.partitions", ConfigType.INT, 1, validator=at_least(1))
    assert partitions.parse("3") == 3
    _invalid(lambda: partitions.parse("0"), "Invalid value 0 for configuration num.partitions: Value must be at least 1")
    ratio = ConfigKey("ratio", ConfigType.DOUBLE, 0.5, validator=between(0, 1))
    _invalid(lambda: ratio.parse("1.5"), "Invalid value 1.5 for configuration ratio: Value must be no more than 1")
    kind = ConfigKey("kind", ConfigType.STRING, "a", validator=one_of("a", "b"))
    _invalid(lambda: kind.parse("c"), "Invalid value c for configuration kind: String must be one of: a, b")
    loose = ConfigKey("loose", ConfigType.STRING, "x", validator=one_of("Alpha", case_insensitive=True))
    assert loose.parse("ALPHA") == "ALPHA"
    policy = ConfigKey("policy", ConfigType.LIST, "delete", validator=list_of("compact", "delete"))
    assert policy.parse("compact, delete") == ("compact", "delete")
    _invalid(lambda: policy.parse("compact,keep"), "Invalid value keep for configuration policy: String must be one of: compact, delete")
    named = ConfigKey("named", ConfigType.STRING, "x", validator=NonEmptyString())
    _invalid(lambda: named.parse(" "), "Invalid value  for configuration named: String must be non-empty")
    assert str(between(1, 17)) == "[1,...,17]" and str(at_least(0)) == "[0,...]"


def test_rendering_back_to_kafkas_strings():
    assert render_value(("compact", "delete")) == "compact,delete"
    assert render_value(()) == ""
    assert render_value(None) is None
    assert render_value(True) == "true"
    assert render_value(Password("pw")) == "pw"
    assert render_value(2**63 - 1) == "9223372036854775807"


def test_key_defaults_given_as_strings_are_parsed_to_the_type():
    key = ConfigKey("policy", ConfigType.LIST, "delete")
    assert key.default == ("delete",)
    assert key.default_string == "delete"
    assert ConfigKey("ratio", ConfigType.DOUBLE, 1).default == 1.0
    assert ConfigKey("unset", ConfigType.LONG, None).default_string is None
    assert ConfigKey("pw", ConfigType.PASSWORD, None).sensitive


def test_config_def_parses_a_property_map_with_defaults():
    definition = ConfigDef(
        [
            ConfigKey("a", ConfigType.INT, 1),
            ConfigKey("b", ConfigType.BOOLEAN, False),
            ConfigKey("required", ConfigType.STRING),
        ]
    )
    assert definition.parse({"a": "7", "required": "x", "ignored": "?"}) == {"a": 7, "b": False, "required": "x"}
    assert definition["required"].default is NO_DEFAULT
    _invalid(lambda: definition.parse({"a": "1"}), 'Missing required configuration "required" which has no default value.')
    with pytest.raises(ValueError, match="defined twice"):
        definition.define(ConfigKey("a", ConfigType.INT, 2))
