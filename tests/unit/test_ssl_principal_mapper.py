"""ssl.principal.mapping.rules as Kafka's SslPrincipalMapper parses and applies them (the cases of
Kafka's SslPrincipalMapperTest), and a certificate subject written as X500Principal.getName()."""

from __future__ import annotations

import pytest

from kcli.security.principal import ANONYMOUS, NoMatchingRule, SslPrincipalMapper, subject_dn, user

RULES = (
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, "
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
    "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, "
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, "
    "DEFAULT"
)


@pytest.mark.parametrize(
    ("dn", "name"),
    [
        ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
        ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
        ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
        ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
        ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
    ],
)
def test_the_first_rule_that_matches_names_the_principal(dn, name):
    assert SslPrincipalMapper(RULES).name(dn) == name


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules):
    SslPrincipalMapper(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:CN=(.*?),OU=ServiceUsers.*/$1/",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/L",
        "RULE:CN=(.*?),OU=ServiceUsers.*/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/LU",
    ],
)
def test_invalid_rules(rules):
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper(rules)


def test_no_rule_matching_is_an_error():
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=x"):
        SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/").name("CN=x")


def test_the_subject_is_written_last_rdn_first_with_rfc_2253_escapes():
    certificate = {
        "subject": (
            (("countryName", "US"),),
            (("organizationName", "Acme, Inc."),),
            (("organizationalUnitName", "eng"), ("userId", "u1")),
            (("commonName", " lead"),),
            (("emailAddress", "a@b.c"),),
        )
    }
    assert subject_dn(certificate) == "1.2.840.113549.1.9.1=#16056140622e63,CN=\\ lead,OU=eng+UID=u1,O=Acme\\, Inc.,C=US"


def test_principals_print_as_kafka_principal():
    assert str(ANONYMOUS) == "User:ANONYMOUS"
    assert str(user("CN=client,O=kcli")) == "User:CN=client,O=kcli"
