"""sasl.jaas.config as Kafka's JaasConfig reads it: one login module, a flag, key=value options
(quoted with escapes, or bare); a parsed entry never shows its option values."""

from __future__ import annotations

import pytest

from kcli.security.jaas import JaasConfigError, parse_jaas_config


def test_a_plain_entry_with_users():
    config = parse_jaas_config(
        'org.apache.kafka.common.security.plain.PlainLoginModule required\n'
        '  username="admin" password="a\\"b" user_admin="admin-pw" user_bob=bob-pw;'
    )
    assert (config.login_module, config.flag) == ("org.apache.kafka.common.security.plain.PlainLoginModule", "required")
    assert config.options["password"] == 'a"b'
    assert config.users() == {"admin": "admin-pw", "bob": "bob-pw"}
    assert "admin-pw" not in repr(config) and "admin-pw" not in str(config)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x.LoginModule required a=1", "does not end with ';'"),
        ("x.LoginModule maybe;", "invalid control flag maybe"),
        ("x.LoginModule required a=;", "options must be key=value"),
        ("a required; b required;", "contains 2 login modules, should be 1 module"),
        ('x required password="secret-7;', "a quoted value is not closed"),
    ],
)
def test_what_does_not_parse_is_one_line_without_the_values(text, message):
    with pytest.raises(JaasConfigError, match=message) as refused:
        parse_jaas_config(text)
    assert "secret-7" not in str(refused.value)
