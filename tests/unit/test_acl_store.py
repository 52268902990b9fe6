"""ACLs in the tree as Kafka 2.8 keeps them, on both backends (the embedded tree and a real
ZooKeeper): Kafka's paths and JSON, the change nodes of both stores, conditional updates, and the
authorizer's cache following znodes written by anyone, a malformed one skipped with one ERROR."""

from __future__ import annotations

import json
import logging

import pytest

from tests.cluster.conftest import wait_until

from kcli.broker.metadata.metadata_thread import InlineMetadataThread
from kcli.broker.security.acl_change_listener import AclChangeListener
from kcli.broker.security.authorizer import AclAuthorizer, Action
from kcli.metadata import zk_paths as zk
from kcli.metadata.acl_store import NO_ACLS, AclStore, VersionedAcls
from kcli.metadata.embedded import EmbeddedStore
from kcli.metadata.zookeeper import ZooKeeperStore
from kcli.security.acl import AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType
from kcli.security.principal import user

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
READ_ALICE = AccessControlEntry("User:alice", "*", AclOperation.READ, ALLOW)
ORDERS = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
TEAM = ResourcePattern(ResourceType.TOPIC, "team-", PatternType.PREFIXED)


@pytest.fixture(params=["embedded", "zookeeper"])
def store(request, tmp_path):
    if request.param == "embedded":
        with EmbeddedStore(tmp_path) as opened:
            yield opened
    else:
        server = request.getfixturevalue("zookeeper_server")
        chroot = request.node.name.translate(str.maketrans({"[": "-", "]": ""}))
        with ZooKeeperStore(f"{server.connect}/{chroot}").start() as opened:
            yield opened


def test_znode_json_and_change_values_are_kafkas():
    assert zk.acl_resource_path(ORDERS) == "/kafka-acl/Topic/orders"
    assert zk.acl_resource_path(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED)) == (
        "/kafka-acl-extended/prefixed/TransactionalId/tx-"
    )
    assert zk.encode_acls({READ_ALICE}) == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}'
    )
    assert zk.encode_acl_change(ORDERS) == b"TOPIC:orders"
    assert zk.encode_acl_change(TEAM) == b'{"version":1,"resourceType":"TOPIC","name":"team-","patternType":"PREFIXED"}'
    assert zk.decode_acl_change(zk.LITERAL_ACL_CHANGES, b"Topic:a:b") == ResourcePattern(ResourceType.TOPIC, "a:b", PatternType.LITERAL)
    assert zk.decode_acl_change(zk.EXTENDED_ACL_CHANGES, zk.encode_acl_change(TEAM)) == TEAM
    written_by_kafka = b'{"version":1,"acls":[{"host":"10.0.0.1","permissionType":"Deny","operation":"DescribeConfigs","principal":"User:bob"}]}'
    assert zk.decode_acls(written_by_kafka) == {AccessControlEntry("User:bob", "10.0.0.1", AclOperation.DESCRIBE_CONFIGS, DENY)}
    assert zk.decode_acls(b"") == frozenset()


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"not json", "Failed to parse ACLs"),
        (b'{"version":2,"acls":[]}', "unsupported version 2"),
        (b'{"version":1,"acls":[{"principal":"alice","permissionType":"Allow","operation":"Read","host":"*"}]}', "principalType"),
        (b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Fly","host":"*"}]}', "unknown operation Fly"),
        (b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe","operation":"Read","host":"*"}]}', "unknown permissionType"),
    ],
)
def test_malformed_acl_json_is_refused(data, reason):
    with pytest.raises(zk.ZNodeFormatError, match=reason):
        zk.decode_acls(data)


def test_updates_write_the_znode_and_its_change_node(store):
    acls = AclStore(store)
    acls.create_acl_paths()
    before, after = acls.update_resource_acls(ORDERS, None, lambda current: current | {READ_ALICE})
    assert before == NO_ACLS and after == VersionedAcls(frozenset({READ_ALICE}), 0)
    assert json.loads(store.get("/kafka-acl/Topic/orders")[0])["acls"][0]["principal"] == "User:alice"
    assert [store.get(f"/kafka-acl-changes/{c}")[0] for c in store.get_children("/kafka-acl-changes")] == [b"TOPIC:orders"]
    assert store.get_children("/kafka-acl-changes") == ["acl_changes_0000000000"]

    # A stale version (another writer came first) is read again and retried.
    deny = AccessControlEntry("User:bob", "*", AclOperation.ALL, DENY)
    _, after = acls.update_resource_acls(ORDERS, NO_ACLS, lambda current: current | {deny}, sleep=lambda s: None)
    assert after.acls == {READ_ALICE, deny} and after.zk_version == 1
    assert acls.versioned_acls(ORDERS) == after

    # The same set again writes nothing; removing every ACL removes the znode.
    assert acls.update_resource_acls(ORDERS, after, lambda current: current)[1] == after
    assert len(store.get_children("/kafka-acl-changes")) == 2
    _, gone = acls.update_resource_acls(ORDERS, after, lambda current: frozenset())
    assert gone == NO_ACLS and store.exists("/kafka-acl/Topic/orders") is None

    acls.update_resource_acls(TEAM, None, lambda current: {READ_ALICE})
    change = store.get_children("/kafka-acl-extended-changes")[0]
    assert json.loads(store.get(f"/kafka-acl-extended-changes/{change}")[0])["patternType"] == "PREFIXED"
    assert set(acls.resources()) == {TEAM}


def _allowed(authorizer: AclAuthorizer, name: str, operation: AclOperation = AclOperation.READ) -> bool:
    return authorizer.authorize(user("alice"), "127.0.0.1", Action(operation, ResourcePattern(ResourceType.TOPIC, name, PatternType.LITERAL)))


def test_the_cache_follows_znodes_written_by_anyone(store, caplog):
    # Written before the broker starts, by hand, in Kafka's JSON.
    store.create("/kafka-acl/Topic/orders", zk.encode_acls({READ_ALICE}), makepath=True)
    store.create("/kafka-acl/Topic/broken", b'{"version":1,"acls":[{"principal":"User:alice"}]}', makepath=True)
    authorizer = AclAuthorizer()
    listener = AclChangeListener(AclStore(store), InlineMetadataThread(), authorizer)
    with caplog.at_level(logging.ERROR, logger="kcli.broker.security"):
        listener.start()
    try:
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1 and "/kafka-acl/Topic/broken" in errors[0]
        assert _allowed(authorizer, "orders") and not _allowed(authorizer, "broken")

        # A prefixed ACL and its change node, written by hand (another tool) while running.
        store.create("/kafka-acl-extended/prefixed/Topic/team-", zk.encode_acls({READ_ALICE}), makepath=True)
        store.create("/kafka-acl-extended-changes/acl_changes_", zk.encode_acl_change(TEAM), sequence=True)
        wait_until(lambda: _allowed(authorizer, "team-a"))

        # A DENY written through another AclStore (another broker) takes effect.
        deny = AccessControlEntry("User:alice", "*", AclOperation.READ, DENY)
        AclStore(store).update_resource_acls(ORDERS, None, lambda current: current | {deny})
        wait_until(lambda: not _allowed(authorizer, "orders"))

        # A malformed rewrite keeps the ACLs the resource had; the rest keep working.
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="kcli.broker.security"):
            store.set("/kafka-acl/Topic/orders", b"{oops")
            store.create("/kafka-acl-changes/acl_changes_", b"TOPIC:orders", sequence=True)
            wait_until(lambda: any("/kafka-acl/Topic/orders" in r.getMessage() for r in caplog.records))
        assert not _allowed(authorizer, "orders")
        assert _allowed(authorizer, "team-b")
        store.delete("/kafka-acl-extended/prefixed/Topic/team-")
        store.create("/kafka-acl-extended-changes/acl_changes_", zk.encode_acl_change(TEAM), sequence=True)
        wait_until(lambda: not _allowed(authorizer, "team-b"))
        assert authorizer.versioned_acls(TEAM) == NO_ACLS
    finally:
        listener.stop()


def test_the_authorizer_creates_and_deletes_as_kafkas(tmp_path):
    from kcli.errors import ErrorCode
    from kcli.security.acl import AccessControlEntryFilter, AclBinding, AclBindingFilter, ResourcePatternFilter

    with EmbeddedStore(tmp_path) as store:
        acls = AclStore(store)
        authorizer = AclAuthorizer()
        bad = AclBinding(ResourcePattern(ResourceType.UNKNOWN, "x", PatternType.LITERAL), READ_ALICE)
        deny_bob = AccessControlEntry("User:bob", "*", AclOperation.WRITE, DENY)
        results = authorizer.create_acls(acls, [AclBinding(ORDERS, READ_ALICE), bad, AclBinding(ORDERS, deny_bob), AclBinding(TEAM, READ_ALICE)])
        assert [code for code, _ in results] == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST, ErrorCode.NONE, ErrorCode.NONE]
        assert zk.decode_acls(store.get("/kafka-acl/Topic/orders")[0]) == {READ_ALICE, deny_bob}

        any_entry = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)
        alice_only = AccessControlEntryFilter("User:alice", None, AclOperation.ANY, AclPermissionType.ANY)
        # Two filters matching alice's ACL on orders: it counts for the first; MATCH reaches the
        # prefixed pattern that applies to team-x.
        deleted = authorizer.delete_acls(acls, [
            AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.LITERAL), alice_only),
            AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.ANY), any_entry),
            AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "team-x", PatternType.MATCH), any_entry),
        ])
        assert [[(b.pattern.name, b.entry.principal) for b, _ in found] for found in deleted] == [
            [("orders", "User:alice")], [("orders", "User:bob")], [("team-", "User:alice")]
        ]
        assert store.exists("/kafka-acl/Topic/orders") is None and authorizer.cached() == {}
