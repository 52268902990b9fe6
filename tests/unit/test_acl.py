"""Kafka's ACL model: names in both of Kafka's spellings, the filters' matching (LITERAL,
PREFIXED, the wildcard, MATCH and ANY), implied operations, and Kafka's text forms."""

from __future__ import annotations

import pytest

from kcli.errors import ErrorCode
from kcli.security.acl import (
    AUTHORIZATION_ERRORS,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    implying_operations,
    parse_principal,
    validate_binding,
)

T, L, P = ResourceType.TOPIC, PatternType.LITERAL, PatternType.PREFIXED


def test_names_in_kafkas_two_spellings():
    assert ResourceType.TRANSACTIONAL_ID.pascal_name == "TransactionalId"
    assert AclOperation.DESCRIBE_CONFIGS.pascal_name == "DescribeConfigs"
    assert AclPermissionType.ALLOW.pascal_name == "Allow"
    for text in ("DescribeConfigs", "DESCRIBE_CONFIGS", "describe_configs", "DESCRIBECONFIGS"):
        assert AclOperation.from_name(text) == AclOperation.DESCRIBE_CONFIGS
    assert ResourceType.from_name("Topic") == ResourceType.from_name("TOPIC") == T
    assert AclOperation.from_name("Fly") == AclOperation.UNKNOWN
    assert PatternType.from_name("prefixed") == P


def test_codes_are_the_wire_codes():
    assert [ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID, ResourceType.DELEGATION_TOKEN] == [2, 3, 4, 5, 6]
    assert [PatternType.ANY, PatternType.MATCH, PatternType.LITERAL, PatternType.PREFIXED] == [1, 2, 3, 4]
    assert AclOperation.IDEMPOTENT_WRITE == 12 and AclPermissionType.DENY == 2 and AclPermissionType.ALLOW == 3


def test_text_forms_as_kafka_prints_them():
    pattern = ResourcePattern(T, "orders", L)
    entry = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    assert str(pattern) == "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    assert str(entry) == "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert str(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY)) == "ResourcePattern(resourceType=ANY, name=<any>, patternType=ANY)"


@pytest.mark.parametrize(
    "filter_, pattern, expected",
    [
        ((T, "foo", L), (T, "foo", L), True),
        ((T, "foo", L), (T, "*", L), False),  # a LITERAL filter names the pattern exactly
        ((T, "foo", L), (T, "foo", P), False),
        ((T, "foobar", PatternType.MATCH), (T, "foobar", L), True),
        ((T, "foobar", PatternType.MATCH), (T, "*", L), True),
        ((T, "foobar", PatternType.MATCH), (T, "foo", P), True),
        ((T, "foobar", PatternType.MATCH), (T, "fox", P), False),
        ((T, "foobar", PatternType.MATCH), (T, "foo", L), False),
        ((T, "foo", PatternType.ANY), (T, "foo", P), True),
        ((T, "foo", PatternType.ANY), (T, "*", L), False),
        ((T, None, PatternType.ANY), (T, "anything", P), True),
        ((ResourceType.ANY, None, PatternType.ANY), (ResourceType.GROUP, "g", L), True),
        ((ResourceType.GROUP, None, PatternType.ANY), (T, "g", L), False),
    ],
)
def test_resource_pattern_filter_matches_as_kafkas(filter_, pattern, expected):
    assert ResourcePatternFilter(*filter_).matches(ResourcePattern(*pattern)) is expected


def test_entry_filter_nulls_and_any_match_everything():
    entry = AccessControlEntry("User:alice", "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY)
    assert AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY).matches(entry)
    assert AccessControlEntryFilter("User:alice", "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY).matches(entry)
    assert not AccessControlEntryFilter("User:bob", None, AclOperation.ANY, AclPermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter(None, "*", AclOperation.ANY, AclPermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ALLOW).matches(entry)
    binding = AclBinding(ResourcePattern(T, "t", L), entry)
    assert AclBindingFilter(ResourcePatternFilter(T, "t", PatternType.MATCH), AccessControlEntryFilter(None, None, AclOperation.WRITE, AclPermissionType.ANY)).matches(binding)


def test_filters_that_match_at_most_one_pattern():
    assert ResourcePatternFilter(T, "t", L).matches_at_most_one()
    assert ResourcePatternFilter(T, "t", PatternType.MATCH).find_indefinite_field() == "Resource pattern type is MATCH."
    assert ResourcePatternFilter(T, None, L).find_indefinite_field() == "Resource name is NULL."
    assert ResourcePatternFilter(ResourceType.ANY, "t", L).find_indefinite_field() == "Resource type is ANY."


def test_implied_operations():
    assert implying_operations(AclOperation.DESCRIBE) == {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    assert implying_operations(AclOperation.DESCRIBE_CONFIGS) == {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    assert implying_operations(AclOperation.READ) == {AclOperation.READ}


def test_principal_and_binding_checks():
    assert str(parse_principal("User:CN=a:b")) == "User:CN=a:b"
    with pytest.raises(ValueError, match="principalType:principalName"):
        parse_principal("alice")
    with pytest.raises(ValueError, match="unknown elements"):
        validate_binding(AclBinding(ResourcePattern(ResourceType.UNKNOWN, "t", L), AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW)))
    assert AUTHORIZATION_ERRORS[ResourceType.TRANSACTIONAL_ID] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
