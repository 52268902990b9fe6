"""Kafka 2.8's AclAuthorizer rules on a cache of ACLs: super users, allow.everyone.if.no.acl.found,
literal, wildcard and prefixed patterns, implied operations, deny over allow, principal and host
wildcards, authorized operations, the configuration, and the kafka.authorizer.logger lines."""

from __future__ import annotations

import logging

import pytest

from kcli.broker.security.authorizer import (
    NO_ACLS,
    AclAuthorizer,
    Action,
    AuthorizerConfigError,
    VersionedAcls,
)
from kcli.security.acl import AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType
from kcli.security.principal import user

O, ALLOW, DENY = AclOperation, AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE, BOB = user("alice"), user("bob")
HOST = "127.0.0.1"


def topic(name: str, pattern_type: PatternType = PatternType.LITERAL) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name, pattern_type)


def with_acls(authorizer: AclAuthorizer, resource: ResourcePattern, *entries: tuple) -> AclAuthorizer:
    current = authorizer.versioned_acls(resource).acls
    acls = frozenset(AccessControlEntry(*entry) for entry in entries) | current
    authorizer.update_cache(resource, VersionedAcls(acls, 0))
    return authorizer


def allowed(authorizer: AclAuthorizer, principal, operation: AclOperation, name: str, host: str = HOST) -> bool:
    return authorizer.authorize(principal, host, Action(operation, topic(name)), "Produce")


def test_no_acls_denies_unless_allow_everyone():
    assert not allowed(AclAuthorizer(), ALICE, O.READ, "t")
    assert allowed(AclAuthorizer(allow_everyone_if_no_acl_found=True), ALICE, O.READ, "t")
    # allow.everyone applies only where no ACL at all applies to the resource
    everyone = with_acls(AclAuthorizer(allow_everyone_if_no_acl_found=True), topic("t"), ("User:bob", "*", O.READ, ALLOW))
    assert not allowed(everyone, ALICE, O.READ, "t")
    assert allowed(everyone, ALICE, O.READ, "u")


def test_super_users_bypass_acls():
    authorizer = with_acls(AclAuthorizer(super_users=[ALICE]), topic("t"), ("User:alice", "*", O.ALL, DENY))
    assert allowed(authorizer, ALICE, O.WRITE, "t")
    assert not allowed(authorizer, BOB, O.WRITE, "t")


def test_literal_allow_and_implied_describe():
    authorizer = with_acls(AclAuthorizer(), topic("t"), ("User:alice", "*", O.WRITE, ALLOW))
    assert allowed(authorizer, ALICE, O.WRITE, "t")
    assert allowed(authorizer, ALICE, O.DESCRIBE, "t")  # WRITE implies DESCRIBE
    assert not allowed(authorizer, ALICE, O.READ, "t")
    assert not allowed(authorizer, BOB, O.WRITE, "t")
    assert not allowed(authorizer, ALICE, O.WRITE, "t2")
    configs = with_acls(AclAuthorizer(), topic("t"), ("User:alice", "*", O.ALTER_CONFIGS, ALLOW))
    assert allowed(configs, ALICE, O.DESCRIBE_CONFIGS, "t")
    assert not allowed(configs, ALICE, O.DESCRIBE, "t")


def test_all_operation_and_wildcards():
    authorizer = with_acls(AclAuthorizer(), topic("*"), ("User:*", "*", O.ALL, ALLOW))
    assert allowed(authorizer, BOB, O.DELETE, "anything")
    hosts = with_acls(AclAuthorizer(), topic("t"), ("User:alice", "10.0.0.9", O.READ, ALLOW))
    assert allowed(hosts, ALICE, O.READ, "t", host="10.0.0.9")
    assert not allowed(hosts, ALICE, O.READ, "t", host=HOST)


def test_deny_wins_over_allow_and_is_not_implied():
    authorizer = with_acls(AclAuthorizer(), topic("*"), ("User:alice", "*", O.ALL, ALLOW))
    with_acls(authorizer, topic("secret"), ("User:alice", "*", O.READ, DENY))
    assert not allowed(authorizer, ALICE, O.READ, "secret")
    assert allowed(authorizer, ALICE, O.WRITE, "secret")
    assert allowed(authorizer, ALICE, O.DESCRIBE, "secret")  # a DENY of READ denies READ only
    with_acls(authorizer, topic("*"), ("User:*", HOST, O.ALL, DENY))
    assert not allowed(authorizer, ALICE, O.WRITE, "other")
    assert allowed(authorizer, ALICE, O.WRITE, "other", host="10.0.0.1")


def test_prefixed_patterns():
    authorizer = with_acls(AclAuthorizer(), topic("team-", PatternType.PREFIXED), ("User:alice", "*", O.READ, ALLOW))
    assert allowed(authorizer, ALICE, O.READ, "team-orders")
    assert allowed(authorizer, ALICE, O.READ, "team-")
    assert not allowed(authorizer, ALICE, O.READ, "team")
    assert not allowed(authorizer, ALICE, O.READ, "other-team-orders")
    with_acls(authorizer, topic("team-secret", PatternType.PREFIXED), ("User:alice", "*", O.READ, DENY))
    assert not allowed(authorizer, ALICE, O.READ, "team-secret-1")
    assert allowed(authorizer, ALICE, O.READ, "team-public")
    authorizer.update_cache(topic("team-secret", PatternType.PREFIXED), NO_ACLS)
    assert allowed(authorizer, ALICE, O.READ, "team-secret-1")


def test_other_resource_types_are_separate():
    authorizer = with_acls(AclAuthorizer(), topic("g"), ("User:alice", "*", O.READ, ALLOW))
    group = ResourcePattern(ResourceType.GROUP, "g", PatternType.LITERAL)
    assert not authorizer.authorize(ALICE, HOST, Action(O.READ, group))


def test_authorized_operations():
    authorizer = with_acls(AclAuthorizer(), topic("t"), ("User:alice", "*", O.READ, ALLOW), ("User:alice", "*", O.ALTER_CONFIGS, ALLOW))
    assert authorizer.authorized_operations(ALICE, HOST, topic("t")) == {O.READ, O.DESCRIBE, O.ALTER_CONFIGS, O.DESCRIBE_CONFIGS}
    cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)
    assert AclAuthorizer(super_users=[ALICE]).authorized_operations(ALICE, HOST, cluster) == {
        O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE, O.ALTER, O.DESCRIBE
    }


def test_only_literal_resources_are_authorized():
    with pytest.raises(ValueError, match="Only literal resources"):
        AclAuthorizer().authorize(ALICE, HOST, Action(O.READ, topic("t", PatternType.PREFIXED)))


def test_configuration():
    config = {"super.users": "User:admin; User:broker", "allow.everyone.if.no.acl.found": "true"}
    authorizer = AclAuthorizer.from_config("kafka.security.authorizer.AclAuthorizer", config)
    assert authorizer.super_users == {user("admin"), user("broker")}
    assert authorizer.allow_everyone_if_no_acl_found
    assert not AclAuthorizer.from_config("kafka.security.authorizer.AclAuthorizer", {}).allow_everyone_if_no_acl_found
    assert AclAuthorizer.from_config("", config) is None
    with pytest.raises(AuthorizerConfigError, match="com.example.Mine"):
        AclAuthorizer.from_config("com.example.Mine", {})
    with pytest.raises(AuthorizerConfigError, match="super.users"):
        AclAuthorizer.from_config("kafka.security.authorizer.AclAuthorizer", {"super.users": "admin"})


def test_denials_are_logged_at_info_as_kafka(caplog):
    authorizer = with_acls(AclAuthorizer(), topic("t"), ("User:alice", "*", O.WRITE, ALLOW))
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        authorizer.authorize(BOB, HOST, Action(O.DESCRIBE_CONFIGS, topic("t"), 2), "DescribeConfigs")
        authorizer.authorize(ALICE, HOST, Action(O.WRITE, topic("t")), "Produce")  # allowed: DEBUG
        authorizer.authorize(BOB, HOST, Action(O.READ, topic("t"), 1, False, False), "Metadata")  # filtering: TRACE
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "kafka.authorizer.logger"]
    assert lines == [
        (
            "INFO",
            "Principal = User:bob is Denied Operation = DescribeConfigs from host = 127.0.0.1 on resource = "
            "Topic:LITERAL:t for request = DescribeConfigs with resourceRefCount = 2",
        )
    ]


def test_the_authorizers_keys_are_known_to_the_broker():
    from kcli.broker.config.broker_config import BrokerConfig, unknown_keys

    config = BrokerConfig.from_file(None, ["super.users=User:admin", "allow.everyone.if.no.acl.found=true", "no.such.key=1"])
    assert unknown_keys(config) == ["no.such.key"]


def test_authorize_by_resource_type():
    write = lambda a: a.authorize_by_resource_type(ALICE, HOST, O.WRITE, ResourceType.TOPIC)  # noqa: E731
    assert not write(AclAuthorizer())
    assert write(AclAuthorizer(allow_everyone_if_no_acl_found=True))
    assert write(AclAuthorizer(super_users=[ALICE]))
    authorizer = with_acls(AclAuthorizer(), topic("t"), ("User:alice", "*", O.WRITE, ALLOW))
    assert write(authorizer)
    with_acls(authorizer, topic("t"), ("User:alice", "*", O.WRITE, DENY))
    assert not write(authorizer)
    prefixed = with_acls(AclAuthorizer(), topic("team-a", PatternType.PREFIXED), ("User:*", "*", O.ALL, ALLOW))
    assert write(prefixed)
    with_acls(prefixed, topic("team", PatternType.PREFIXED), ("User:alice", "*", O.WRITE, DENY))
    assert not write(prefixed)
    denied_all = with_acls(AclAuthorizer(allow_everyone_if_no_acl_found=True), topic("*"), ("User:alice", "*", O.WRITE, DENY))
    assert not write(denied_all)
