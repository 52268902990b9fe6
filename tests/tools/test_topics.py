"""``kcli topics`` against a kcli broker and librdkafka's mock cluster: Kafka 3.9's kafka-topics.sh
lines (reference section 1.3), its option checks and messages, and the results seen through an
independent client (confluent-kafka's admin client)."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid

import pytest
from confluent_kafka import Producer, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from kcli.java_compat import hash_map_order
from kcli.common import uuid_to_string
from kcli.tools._admin_common import TopicFilter
from kcli.tools.topics import parse_replica_assignment, parse_topic_configs

pytestmark = pytest.mark.timeout(120)

COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. "
    "To avoid issues it is best to use either, but not both."
)


def name(label: str) -> str:
    """A fresh topic name without '.' or '_' (those add Kafka's collision warning)."""
    return f"tt-{label}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create(kcli, broker, topic: str, *args: str) -> None:
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, *args)
    assert result.returncode == 0, result
    assert result.lines[-1] == f"Created topic {topic}."


def make(admin: AdminClient, *topics: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    """Create topics through confluent-kafka (setup for tests whose subject is not --create)."""
    futures = admin.create_topics([NewTopic(t, partitions, 1, config=config or {}) for t in topics], operation_timeout=10)
    for future in futures.values():
        future.result(10)


def describe_topic(admin: AdminClient, topic: str):
    return admin.describe_topics(TopicCollection([topic]))[topic].result(10)


def topic_id_of(admin: AdminClient, topic: str) -> str:
    """The topic's id from confluent-kafka, printed as Kafka prints ids (URL-safe base64;
    librdkafka's own string uses the standard alphabet)."""
    value = describe_topic(admin, topic).topic_id
    bits = ((value.get_most_significant_bits() & (2**64 - 1)) << 64) | (value.get_least_significant_bits() & (2**64 - 1))
    return base64.urlsafe_b64encode(bits.to_bytes(16, "big")).decode().rstrip("=")


def non_default_configs(admin: AdminClient, topic: str) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(10)
    return {k: v.value for k, v in entries.items() if v.source != ConfigSource.DEFAULT_CONFIG.value}


def usage_error(result, message: str) -> None:
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [f"Error: {message}"]
    assert result.stdout == ""


# -- create ------------------------------------------------------------------------------------------


def test_create_prints_created_topic_and_makes_the_topic(kcli, broker, admin):
    topic = name("create")
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
    assert (result.returncode, result.lines, result.stderr) == (0, [f"Created topic {topic}."], "")
    description = describe_topic(admin, topic)
    assert sorted(p.id for p in description.partitions) == [0, 1, 2]
    assert all([r.id for r in p.replicas] == [0] for p in description.partitions)


def test_create_warns_about_names_with_a_period_or_underscore(kcli, broker):
    for topic in (f"with.dot-{uuid.uuid4().hex[:6]}", f"with_underscore-{uuid.uuid4().hex[:6]}"):
        result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic)
        assert result.returncode == 0, result
        assert result.lines == [COLLISION_WARNING, f"Created topic {topic}."]


def test_create_an_existing_topic_fails_unless_if_not_exists(kcli, broker):
    topic = name("exists")
    create(kcli, broker, topic)
    again = kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic)
    assert again.returncode == 1
    assert again.lines == [f"Error while executing topic command : Topic '{topic}' already exists."]
    assert again.stderr == ""  # Kafka's line once, not again on stderr
    quiet = kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, "--if-not-exists")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")


def test_create_with_configs_and_a_manual_assignment(kcli, broker, admin):
    topic = name("assigned")
    create(kcli, broker, topic, "--replica-assignment", "0,0", "--config", "retention.ms=123456", "--config", "cleanup.policy = compact")
    assert sorted(p.id for p in describe_topic(admin, topic).partitions) == [0, 1]
    overrides = non_default_configs(admin, topic)
    assert overrides["retention.ms"] == "123456"
    assert overrides["cleanup.policy"] == "compact"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--partitions", "0"), "The partitions must be greater than 0"),
        (("--replication-factor", "0"), "The replication factor must be between 1 and 32767 inclusive"),
        (("--replication-factor", "40000"), "The replication factor must be between 1 and 32767 inclusive"),
        (("--replica-assignment", "0:0"), "Partition replica lists may not contain duplicate entries: 0"),
        (("--replica-assignment", "0,0:0"), "Partition replica lists may not contain duplicate entries: 0"),
        (("--replica-assignment", "0,1:2"), "Partition 1 has different replication factor: [1, 2]"),
        (("--replica-assignment", "0,x"), 'For input string: "x"'),
        (("--config", "retention.ms"), 'requirement failed: Invalid topic config: all configs to be added must be in the format "key=val".'),
        (("--config", "a=b=c"), 'requirement failed: Invalid topic config: all configs to be added must be in the format "key=val".'),
    ],
)
def test_create_argument_failures_use_kafkas_error_line(inproc, broker, args, message):
    topic = name("bad")
    result = inproc("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, *args)
    assert result.returncode == 1, result
    assert result.lines == [f"Error while executing topic command : {message}"]
    assert result.stderr == ""


def test_broker_rejections_are_reported_in_kafkas_line(kcli, broker):
    topic = name("unknown-config")
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, "--config", "no.such.config=1")
    assert result.returncode == 1
    [line] = result.lines
    assert line.startswith("Error while executing topic command : ") and "no.such.config" in line
    too_many = kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, "--replication-factor", "3")
    assert too_many.returncode == 1
    assert too_many.lines[0].startswith("Error while executing topic command : ")


# -- list and describe -------------------------------------------------------------------------------


def test_list_prints_sorted_names_and_exclude_internal_drops_internal_topics(kcli, broker, admin):
    first, second = "aaa-" + name("list"), "zzz-" + name("list")
    make(admin, second, first)
    _make_offsets_topic(broker.bootstrap)
    listed = kcli("topics", "--bootstrap-server", broker.bootstrap, "--list")
    assert listed.returncode == 0
    assert listed.lines == sorted(listed.lines)
    assert {first, second, "__consumer_offsets"} <= set(listed.lines)
    external = kcli("topics", "--bootstrap-server", broker.bootstrap, "--list", "--exclude-internal")
    assert "__consumer_offsets" not in external.lines and first in external.lines
    by_regex = kcli("topics", "--bootstrap-server", broker.bootstrap, "--list", "--topic", f"{first},{second}")
    assert by_regex.lines == [first, second]
    nothing = kcli("topics", "--bootstrap-server", broker.bootstrap, "--list", "--topic", "no-such-topic-.*")
    assert (nothing.returncode, nothing.stdout) == (0, "\n")  # Kafka prints the empty join


def _make_offsets_topic(bootstrap: str) -> None:
    from kcli.client.network_client import NetworkClient
    from kcli.errors import KafkaError

    async def go():
        async with NetworkClient(bootstrap) as cluster:
            for _ in range(50):
                try:
                    return await cluster.coordinator("topics-test-group")
                except KafkaError:
                    await asyncio.sleep(0.1)

    asyncio.run(asyncio.wait_for(go(), 30))


def test_describe_prints_kafkas_summary_and_partition_lines(kcli, broker, admin):
    topic = name("describe")
    create(kcli, broker, topic, "--partitions", "2", "--config", "max.message.bytes=200000", "--config", "retention.ms=86400000")
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic)
    assert result.returncode == 0, result
    summary, *partitions = result.lines
    topic_id = topic_id_of(admin, topic)
    head, configs = summary.split("\tConfigs: ")
    assert head == f"Topic: {topic}\tTopicId: {topic_id}\tPartitionCount: 2\tReplicationFactor: 1"
    expected = non_default_configs(admin, topic)
    pairs = configs.split(",")
    assert dict(p.split("=", 1) for p in pairs) == expected
    assert [p.split("=", 1)[0] for p in pairs] == hash_map_order(pairs_in_broker_order(admin, topic))
    assert partitions == [
        f"\tTopic: {topic}\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A\tLastKnownElr: N/A" for p in (0, 1)
    ]


def pairs_in_broker_order(admin: AdminClient, topic: str) -> list[str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(10)
    return [k for k, v in entries.items() if v.source != ConfigSource.DEFAULT_CONFIG.value]


def test_describe_missing_topic_fails_unless_if_exists(kcli, broker):
    topic = name("missing")
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic)
    assert result.returncode == 1
    # Kafka 3.9 formats the Optional holding the name into its message.
    assert result.lines == [f"Error while executing topic command : Topic 'Optional[{topic}]' does not exist as expected"]
    assert result.stderr == ""  # the error once: Kafka's stdout line only
    quiet = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic, "--if-exists")
    assert (quiet.returncode, quiet.stdout) == (0, "")


def test_describe_orders_topics_as_kafkas_admin_client_returns_them(kcli, broker, admin):
    prefix = f"order{uuid.uuid4().hex[:6]}"
    topics = [f"{prefix}-{i}" for i in range(6)]
    make(admin, *topics)
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", f"{prefix}-.*")
    described = [line.split("\t")[0].removeprefix("Topic: ") for line in result.lines if line.startswith("Topic: ")]
    assert sorted(described) == topics
    assert described == hash_map_order(sorted(topics), initial_capacity=len(topics))


def test_describe_by_topic_id(kcli, broker, admin):
    topic = name("by-id")
    make(admin, topic)
    topic_id = topic_id_of(admin, topic)
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic-id", topic_id)
    assert result.returncode == 0, result
    assert result.lines[0].startswith(f"Topic: {topic}\tTopicId: {topic_id}\t")
    missing = uuid_to_string(uuid.uuid4())
    absent = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic-id", missing)
    assert absent.returncode == 1
    assert absent.lines == [f"Error while executing topic command : TopicId '{missing}' does not exist as expected"]


def test_describe_report_filters(kcli, broker, admin):
    topic = name("filters")
    strict = name("strict")
    make(admin, topic, partitions=2)
    make(admin, strict, config={"min.insync.replicas": "2"})
    both = f"{topic}|{strict}"
    run = lambda *flags: kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", both, *flags)

    # One broker, replication factor 1: nothing is under-replicated or unavailable.
    assert run("--under-replicated-partitions").stdout == ""
    assert run("--unavailable-partitions").stdout == ""
    # min.insync.replicas 1 with one in-sync replica: at the minimum; 2: under it. No summary lines.
    at_min = run("--at-min-isr-partitions").lines
    assert at_min == [f"\tTopic: {topic}\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A\tLastKnownElr: N/A" for p in (0, 1)]
    under_min = run("--under-min-isr-partitions").lines
    assert under_min == [f"\tTopic: {strict}\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A\tLastKnownElr: N/A"]
    combined = run("--under-min-isr-partitions", "--at-min-isr-partitions").lines
    assert sorted(combined) == sorted(at_min + under_min)


def test_topics_with_overrides_prints_only_summaries_of_overridden_topics(kcli, broker, admin):
    plain, overridden = name("plain"), name("overridden")
    make(admin, plain)
    make(admin, overridden, config={"retention.ms": "1000"})
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", f"{plain}|{overridden}", "--topics-with-overrides")
    assert result.returncode == 0
    expected = [t for t in (plain, overridden) if non_default_configs(admin, t)]
    assert [line.split("\t")[0] for line in result.lines] == [f"Topic: {t}" for t in hash_map_order(sorted([plain, overridden]), initial_capacity=2) if t in expected]
    assert all(not line.startswith("\t") for line in result.lines)


def test_json_list_and_describe(kcli, broker, admin):
    topic = name("json")
    create(kcli, broker, topic, "--partitions", "2", "--config", "retention.ms=5000")
    listed = [json.loads(line) for line in kcli("topics", "--bootstrap-server", broker.bootstrap, "--list", "--topic", topic, "--output", "json").lines]
    topic_id = topic_id_of(admin, topic)
    assert listed == [{"topic": topic, "topic_id": topic_id, "internal": False, "partitions": 2}]
    [described] = [json.loads(line) for line in kcli("topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", topic, "--output", "json").lines]
    assert described == {
        "topic": topic,
        "topic_id": topic_id,
        "internal": False,
        "partition_count": 2,
        "replication_factor": 1,
        "configs": non_default_configs(admin, topic),
        "partitions": [{"partition": p, "leader": 0, "replicas": [0], "isr": [0], "offline": []} for p in (0, 1)],
    }
    refused = kcli("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic, "--output", "json")
    usage_error(refused, "--output json applies to --list and --describe")


# -- alter and delete --------------------------------------------------------------------------------


def test_alter_adds_partitions_and_refuses_to_shrink(kcli, broker, admin):
    topic = name("alter")
    make(admin, topic)
    grown = kcli("topics", "--bootstrap-server", broker.bootstrap, "--alter", "--topic", topic, "--partitions", "3")
    assert (grown.returncode, grown.stdout, grown.stderr) == (0, "", "")
    assert len(describe_topic(admin, topic).partitions) == 3
    shrink = kcli("topics", "--bootstrap-server", broker.bootstrap, "--alter", "--topic", topic, "--partitions", "2")
    assert shrink.returncode == 1
    assert shrink.lines == ["Error while executing topic command : Topic currently has 3 partitions, which is higher than the requested 2."]


def test_alter_with_an_assignment_for_the_new_partitions(kcli, broker, admin):
    topic = name("alter-assigned")
    make(admin, topic)
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--alter", "--topic", topic, "--partitions", "2", "--replica-assignment", "0,0")
    assert result.returncode == 0, result
    partitions = {p.id: [r.id for r in p.replicas] for p in describe_topic(admin, topic).partitions}
    assert partitions == {0: [0], 1: [0]}


def test_alter_or_delete_missing_topic(kcli, broker):
    topic = name("gone")
    for action in (("--alter", "--partitions", "2"), ("--delete",)):
        result = kcli("topics", "--bootstrap-server", broker.bootstrap, *action, "--topic", topic)
        assert result.returncode == 1
        assert result.lines == [f"Error while executing topic command : Topic 'Optional[{topic}]' does not exist as expected"]
        quiet = kcli("topics", "--bootstrap-server", broker.bootstrap, *action, "--topic", topic, "--if-exists")
        assert (quiet.returncode, quiet.stdout) == (0, "")


def test_delete_by_regex_removes_every_match(kcli, broker, admin):
    prefix = f"del{uuid.uuid4().hex[:6]}"
    topics = [f"{prefix}-a", f"{prefix}-b"]
    keep = f"{prefix}x-c"
    make(admin, *topics, keep)
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--delete", "--topic", f"{prefix}-.*")
    assert (result.returncode, result.stdout) == (0, ""), result
    remaining = set(admin.list_topics(timeout=10).topics)
    assert not set(topics) & remaining and keep in remaining


# -- option checks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--list", "--describe"), "Command must include exactly one action: --list, --describe, --create, --alter or --delete"),
        (("--topic", "t"), "Command must include exactly one action: --list, --describe, --create, --alter or --delete"),
        (("--create", "--topic", "t", "--no-bootstrap"), "--bootstrap-server must be specified"),
        (("--create",), 'Missing required argument "[topic]"'),
        (("--describe", "--if-exists"), "--topic or --topic-id is required to describe a topic"),
        (("--alter", "--topic", "t", "--config", "a=b", "--partitions", "2"),
         'Option combination "[[bootstrap-server], [config]]" can\'t be used with option "[alter]" (the kafka-configs CLI supports altering topic configs with a --bootstrap-server option)'),
        (("--alter", "--topic", "t"), 'Missing required argument "[partitions]"'),
        (("--alter", "--topic", "t", "--partitions", "2", "--delete-config", "a"), 'Option "[delete-config]" can\'t be used with option "[bootstrap-server]"'),
        (("--create", "--topic", "t", "--delete-config", "a"), 'Option "[delete-config]" can\'t be used with option "[create]"'),
        (("--list", "--config", "a=b"), 'Option "[config]" can\'t be used with option "[list]"'),
        (("--describe", "--partitions", "2"), 'Option "[partitions]" can\'t be used with option "[describe]"'),
        (("--alter", "--topic", "t", "--partitions", "2", "--replication-factor", "1"), 'Option "[replication-factor]" can\'t be used with option "[alter]"'),
        (("--create", "--topic", "t", "--replica-assignment", "0", "--replication-factor", "1"), 'Option "[replica-assignment]" can\'t be used with option "[replication-factor]"'),
        (("--list", "--under-replicated-partitions"), 'Option "[under-replicated-partitions]" can\'t be used with option "[list]"'),
        (("--describe", "--at-min-isr-partitions", "--topics-with-overrides"), 'Option "[at-min-isr-partitions]" can\'t be used with option "[topics-with-overrides]"'),
        (("--list", "--topics-with-overrides"), 'Option "[topics-with-overrides]" can\'t be used with option "[list]"'),
        (("--create", "--topic", "t", "--if-exists"), 'Option "[if-exists]" can\'t be used with option "[create]"'),
        (("--delete", "--topic", "t", "--if-not-exists"), 'Option "[if-not-exists]" can\'t be used with option "[delete]"'),
        (("--delete", "--topic", "t", "--exclude-internal"), 'Option "[exclude-internal]" can\'t be used with option "[delete]"'),
    ],
)
def test_option_checks_use_kafkas_messages(inproc, args, message):
    bootstrap = [] if "--no-bootstrap" in args else ["--bootstrap-server", "127.0.0.1:9"]
    usage_error(inproc("topics", *bootstrap, *[a for a in args if a != "--no-bootstrap"]), message)


def test_command_config_properties(kcli, broker, tmp_path):
    config = tmp_path / "admin.properties"
    config.write_text("client.id=topics-test\nrequest.timeout.ms=5000\nno.such.setting=1\n")
    result = kcli("topics", "--bootstrap-server", broker.bootstrap, "--list", "--command-config", str(config))
    assert result.returncode == 0
    assert result.stderr.splitlines() == ["The configuration 'no.such.setting' was supplied but isn't a known config."]
    config.write_text("security.protocol=SSL\nssl.truststore.locaton=/tmp/ca.pem\n")
    secure = kcli("topics", "--bootstrap-server", broker.bootstrap, "--list", "--command-config", str(config))
    assert secure.returncode == 1
    assert secure.stderr.splitlines() == ["Error: Unknown security config 'ssl.truststore.locaton' in the client configuration (a misspelt key?)"]
    missing = kcli("topics", "--bootstrap-server", broker.bootstrap, "--list", "--command-config", str(tmp_path / "nope"))
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1


def test_unreachable_broker_is_one_line(kcli):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = kcli("topics", "--bootstrap-server", f"127.0.0.1:{port}", "--list")
    assert (result.returncode, result.stderr) == (1, "")
    [line] = result.lines
    assert line.startswith("Error while executing topic command : ") and f"127.0.0.1:{port}" in line


# -- the mock cluster --------------------------------------------------------------------------------


def test_list_and_describe_against_the_mock_cluster(kcli, mock_cluster):
    topic = name("mock")
    producer = Producer({"bootstrap.servers": mock_cluster.bootstrap})
    producer.produce(topic, b"v")
    assert producer.flush(10) == 0
    listed = kcli("topics", "--bootstrap-server", mock_cluster.bootstrap, "--list")
    assert listed.returncode == 0 and topic in listed.lines
    described = kcli("topics", "--bootstrap-server", mock_cluster.bootstrap, "--describe", "--topic", topic)
    assert described.returncode == 0, described
    summary, *partitions = described.lines
    # The mock has no DescribeConfigs: the summary shows no configs. It auto-creates 4 partitions.
    assert summary.startswith(f"Topic: {topic}\tTopicId: ") and summary.endswith("\tPartitionCount: 4\tReplicationFactor: 1\tConfigs: ")
    assert [line.split("\t")[1:3] for line in partitions] == [[f"Topic: {topic}", f"Partition: {p}"] for p in range(4)]
    assert all(line.endswith("\tElr: N/A\tLastKnownElr: N/A") for line in partitions)
    refused = kcli("topics", "--bootstrap-server", mock_cluster.bootstrap, "--create", "--topic", name("mock-create"))
    assert (refused.returncode, refused.stderr, refused.lines) == (
        1, "", [f"Error while executing topic command : broker {mock_cluster.bootstrap} does not support create_topics"])


# -- helpers, without a broker -----------------------------------------------------------------------


def test_topic_filter_is_a_whole_name_regex():
    assert TopicFilter("foo.*").allows("foobar") and not TopicFilter("foo").allows("foobar")
    assert TopicFilter("a, b").allows("b")
    assert TopicFilter("'quoted'").allows("quoted")
    assert not TopicFilter(".*").allows("__consumer_offsets", exclude_internal=True)


def test_replica_assignment_and_config_parsing():
    assert parse_replica_assignment("1:2, 3 : 4,") == {0: [1, 2], 1: [3, 4]}
    assert parse_topic_configs(["a = b", "c=d"]) == {"a": "b", "c": "d"}


def test_admin_validate_only_creates_nothing(broker, admin):
    from kcli.client.admin import Admin, NewTopic as KcliNewTopic
    from kcli.client.network_client import NetworkClient

    topic = name("validate")

    async def go():
        async with NetworkClient(broker.bootstrap) as cluster:
            checked = await Admin(cluster).create_topics([KcliNewTopic(topic, 2, 1)], validate_only=True)
            refused = await Admin(cluster).create_topics([KcliNewTopic(topic, 0, 1)], validate_only=True)
            return checked[topic], refused[topic]

    checked, refused = asyncio.run(asyncio.wait_for(go(), 30))
    assert checked.error is None
    assert refused.error is not None and refused.error.error_code.name == "INVALID_PARTITIONS"
    assert topic not in admin.list_topics(timeout=10).topics
