"""``kcli acls`` (kafka-acls.sh) through --bootstrap-server against a broker with Kafka's
AclAuthorizer: Kafka 3.9's lines for --add, --list (with --principal and a MATCH filter) and
--remove, the --producer and --consumer roles, the prompt and --force, and Kafka's usage
refusals; the ACLs read back through confluent-kafka's AdminClient."""

from __future__ import annotations

import pytest

from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",  # the tool connects as ANONYMOUS on PLAINTEXT
    }).start()
    yield process
    process.stop()


def _stored(broker, name: str) -> set[tuple]:
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    found = admin.describe_acls(AclBindingFilter(ResourceType.ANY, name, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)).result(30)
    return {(b.restype.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name, b.permission_type.name) for b in found}


def test_add_list_and_remove_print_kafkas_lines(secured, kcli, unique_topic):
    topic = unique_topic("acl")
    added = kcli("acls", "--bootstrap-server", secured.bootstrap, "--add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
                 "--operation", "Read", "--topic", topic)
    assert added.returncode == 0, added
    assert added.stdout == (
        f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW) \n\n"
    )
    assert _stored(secured, topic) == {("TOPIC", "LITERAL", "User:alice", "*", "READ", "ALLOW"), ("TOPIC", "LITERAL", "User:bob", "*", "READ", "ALLOW")}

    listed = kcli("acls", "--bootstrap-server", secured.bootstrap, "--list", "--topic", topic, "--principal", "User:bob")
    assert listed.stdout == (
        "ACLs for principal `User:bob`\n"
        f"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)`: \n"
        " \t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW) \n\n"
    )

    refused = kcli("acls", "--bootstrap-server", secured.bootstrap, "--remove", "--topic", topic, input="n\n")
    assert refused.stdout.startswith(f"Are you sure you want to delete all ACLs for resource filter `ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)`? (y/n)")
    assert len(_stored(secured, topic)) == 2
    removed = kcli("acls", "--bootstrap-server", secured.bootstrap, "--remove", "--force", "--allow-principal", "User:bob", "--operation", "Read", "--topic", topic)
    assert (removed.returncode, removed.stdout) == (0, "")
    assert _stored(secured, topic) == {("TOPIC", "LITERAL", "User:alice", "*", "READ", "ALLOW")}


def test_producer_and_consumer_roles_and_prefixed_patterns(secured, kcli, unique_topic):
    prefix = unique_topic("team") + "-"
    result = kcli("acls", "--bootstrap-server", secured.bootstrap, "--add", "--allow-principal", "User:carol", "--producer", "--consumer",
                  "--topic", prefix, "--group", prefix, "--resource-pattern-type", "prefixed")
    assert result.returncode == 0, result
    assert _stored(secured, prefix) == {
        ("TOPIC", "PREFIXED", "User:carol", "*", op, "ALLOW") for op in ("WRITE", "DESCRIBE", "CREATE", "READ")
    } | {("GROUP", "PREFIXED", "User:carol", "*", "READ", "ALLOW")}
    # MATCH lists every pattern that applies to a topic under the prefix.
    matched = kcli("acls", "--bootstrap-server", secured.bootstrap, "--list", "--topic", prefix + "orders", "--resource-pattern-type", "match")
    assert f"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name={prefix}, patternType=PREFIXED)`: " in matched.lines


@pytest.mark.parametrize(
    "args, message",
    [
        (["--list", "--add"], "Command must include exactly one action: --list, --add, --remove. "),
        (["--add", "--producer", "--allow-principal", "User:a"], "With --producer you must specify a --topic"),
        (["--add", "--topic", "t"], "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
        (["--add", "--allow-principal", "alice", "--topic", "t"], "expected a string in format principalType:principalName but got alice"),
        (["--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"], "ResourceType GROUP only supports operations"),
        (["--list", "--resource-pattern-type", "sideways"], "Unknown resource-pattern-type: sideways"),
        (["--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"], "is not valid when adding acls"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(secured, kcli, args, message):
    result = kcli("acls", "--bootstrap-server", secured.bootstrap, *args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_refused_request_is_kafkas_error_line_and_exit_1(broker, kcli):
    result = kcli("acls", "--bootstrap-server", broker.bootstrap, "--add", "--allow-principal", "User:a", "--topic", "t")
    assert result.returncode == 1
    assert result.lines[-1] == "Error while executing ACL command: No Authorizer is configured on the broker."
