"""The admin APIs over the wire against a real broker: DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, DeleteRecords, DescribeLogDirs and DescribeProducers.

Expected values come from outside the broker where possible: sizes from the files on disk,
offsets from what was produced, file-system figures from ``os.statvfs``, and config changes are
checked by what the log does afterwards (a produce refused, a retention pass).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kcli.errors import ErrorCode
from kcli.storage.records import NewRecord, build_batch, iter_batches
from tests.wire_client import WireClient, code

LOG_DIR_NAMES = ("dir-a", "dir-b")
RETENTION_CHECK_MS = 200
BROKER_OVERRIDES = {
    "log.retention.check.interval.ms": str(RETENTION_CHECK_MS),
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
}

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
DELETE_RECORDS, DESCRIBE_LOG_DIRS, DESCRIBE_PRODUCERS, INIT_PRODUCER_ID = 21, 35, 61, 22
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS = 2, 4, 8, 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC_BROKER, DEFAULT_CONFIG, LOGGER_CONFIG = 1, 2, 3, 4, 5, 6
LONG_TYPE, LIST_TYPE = 5, 7
EARLIEST, LATEST = -2, -1
WAIT_SECONDS = 15.0


# -- helpers ----------------------------------------------------------------------------------------


def records(count: int, value_size: int = 16, **batch_fields) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([NewRecord(None, bytes([65 + i % 26]) * value_size, now) for i in range(count)], **batch_fields)


def produce_batches(client: WireClient, topic: str, batches: list[bytes], partition: int = 0) -> list[int]:
    offsets = []
    for data in batches:
        answer = client.produce(topic, partition, data)
        assert code(answer.error_code) == ErrorCode.NONE, answer
        offsets.append(answer.base_offset)
    return offsets


def fetched_offsets(client: WireClient, topic: str, offset: int, partition: int = 0) -> tuple[int, list[int]]:
    data = client.fetch(topic, partition, offset)
    found = [record.offset for batch in iter_batches(data.records or b"") for record in batch.records()]
    return code(data.error_code), found


def create(client: WireClient, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    result = client.create_topic(name, partitions, configs)
    assert code(result.error_code) == ErrorCode.NONE, result


def describe(client: WireClient, resources: list[tuple[int, str, list[str] | None]], version: int = 4, **flags) -> list:
    response = client.call(
        DESCRIBE_CONFIGS,
        version,
        {"resources": [{"resource_type": t, "resource_name": n, "configuration_keys": k} for t, n, k in resources], **flags},
    )
    return list(response.results)


def describe_one(client: WireClient, resource_type: int, name: str, keys: list[str] | None = None, **flags) -> dict:
    (result,) = describe(client, [(resource_type, name, keys)], **flags)
    assert code(result.error_code) == ErrorCode.NONE, result
    return {entry.name: entry for entry in result.configs}


def alter(client: WireClient, resources: list[tuple[int, str, dict[str, str | None]]], version: int = 2, validate_only: bool = False) -> list:
    response = client.call(
        ALTER_CONFIGS,
        version,
        {
            "resources": [
                {"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v} for k, v in configs.items()]}
                for t, n, configs in resources
            ],
            "validate_only": validate_only,
        },
    )
    return list(response.responses)


def incremental(
    client: WireClient, resources: list[tuple[int, str, list[tuple[str, int, str | None]]]], version: int = 1, validate_only: bool = False
) -> list:
    response = client.call(
        INCREMENTAL_ALTER_CONFIGS,
        version,
        {
            "resources": [
                {
                    "resource_type": t,
                    "resource_name": n,
                    "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
                }
                for t, n, ops in resources
            ],
            "validate_only": validate_only,
        },
    )
    return list(response.responses)


def outcome(response) -> tuple[int, str | None]:
    return code(response.error_code), response.error_message


def wait_until(condition, what: str, timeout: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def log_dirs(broker) -> list[Path]:
    return [broker.log_dir / name for name in LOG_DIR_NAMES]


def partition_dir(broker, topic: str, partition: int) -> Path:
    (found,) = [d / f"{topic}-{partition}" for d in log_dirs(broker) if (d / f"{topic}-{partition}").is_dir()]
    return found


def segment_bytes_on_disk(broker, topic: str, partition: int) -> int:
    return sum(path.stat().st_size for path in partition_dir(broker, topic, partition).glob("*.log"))


# -- DescribeConfigs --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_topic_configs_reports_overrides_and_defaults(client, new_topic, version):
    topic = new_topic()
    create(client, topic, configs={"retention.ms": "123456"})
    (result,) = describe(client, [(TOPIC, topic, ["retention.ms", "cleanup.policy"])], version, include_synonyms=True, include_documentation=True)
    assert (code(result.error_code), result.error_message, result.resource_type, result.resource_name) == (0, None, TOPIC, topic)
    entries = {e.name: e for e in result.configs}
    assert set(entries) == {"retention.ms", "cleanup.policy"}
    retention, cleanup = entries["retention.ms"], entries["cleanup.policy"]
    assert (retention.value, retention.config_source, retention.read_only, retention.is_sensitive) == ("123456", TOPIC_CONFIG, False, False)
    assert (retention.synonyms[0].name, retention.synonyms[0].value, retention.synonyms[0].source) == ("retention.ms", "123456", TOPIC_CONFIG)
    assert (cleanup.value, cleanup.config_source) == ("delete", DEFAULT_CONFIG)
    if version >= 3:
        assert (retention.config_type, cleanup.config_type) == (LONG_TYPE, LIST_TYPE)
        assert retention.documentation
    without_docs = describe_one(client, TOPIC, topic, ["retention.ms"])
    assert without_docs["retention.ms"].synonyms == () and without_docs["retention.ms"].documentation is None


def test_describe_topic_without_keys_lists_every_topic_config_once(client, new_topic):
    topic = new_topic()
    create(client, topic)
    (result,) = describe(client, [(TOPIC, topic, None)])
    names = [entry.name for entry in result.configs]
    assert len(names) == len(set(names))
    assert {"cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes", "max.message.bytes", "min.insync.replicas"} <= set(names)
    (empty_keys,) = describe(client, [(TOPIC, topic, [])])
    assert [entry.name for entry in empty_keys.configs] == names


def test_describe_missing_or_illegal_topic_fails_that_resource_only(client, new_topic):
    topic = new_topic()
    create(client, topic)
    missing, illegal, fine = describe(client, [(TOPIC, "no-such-topic-here", None), (TOPIC, "bad name!", None), (TOPIC, topic, ["retention.ms"])])
    assert outcome(missing) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    assert missing.configs == ()
    assert code(illegal.error_code) == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "bad name!" in illegal.error_message
    assert code(fine.error_code) == ErrorCode.NONE and len(fine.configs) == 1


def test_describe_this_broker_shows_static_overrides_and_refuses_other_ids(client):
    entries = describe_one(client, BROKER, "0", ["log.retention.check.interval.ms", "broker.id", "log.dirs"], include_synonyms=True)
    check = entries["log.retention.check.interval.ms"]
    assert (check.value, check.config_source, check.read_only) == (str(RETENTION_CHECK_MS), STATIC_BROKER, True)
    assert (check.synonyms[0].name, check.synonyms[0].source) == ("log.retention.check.interval.ms", STATIC_BROKER)
    assert entries["broker.id"].value == "0"
    other, not_a_number = describe(client, [(BROKER, "7", None), (BROKER, "zero", None)])
    assert outcome(other) == (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0 or empty string, but received 7")
    assert outcome(not_a_number) == (ErrorCode.INVALID_REQUEST, "Broker id must be an integer, but it is: zero")


def test_describe_cluster_defaults_lists_only_keys_set_there(client):
    key = "log.cleaner.backoff.ms"
    assert key not in describe_one(client, BROKER, "")
    (changed,) = incremental(client, [(BROKER, "", [(key, SET, "16000")])])
    assert outcome(changed) == (0, None)
    try:
        defaults = describe_one(client, BROKER, "", include_synonyms=True)
        assert (defaults[key].value, defaults[key].config_source) == ("16000", DYNAMIC_DEFAULT)
        assert {s.source for s in defaults[key].synonyms} == {DYNAMIC_DEFAULT}
        per_broker = describe_one(client, BROKER, "0", [key])
        assert (per_broker[key].value, per_broker[key].config_source) == ("16000", DYNAMIC_DEFAULT)
    finally:
        incremental(client, [(BROKER, "", [(key, DELETE, None)])])
    assert key not in describe_one(client, BROKER, "")


def test_describe_broker_logger_lists_loggers_with_levels(client):
    loggers = describe_one(client, BROKER_LOGGER, "0")
    assert loggers["root"].value in {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}
    assert {entry.config_source for entry in loggers.values()} == {LOGGER_CONFIG}
    assert any(name.startswith("kcli.broker") for name in loggers)
    empty, other = describe(client, [(BROKER_LOGGER, "", None), (BROKER_LOGGER, "3", None)])
    assert outcome(empty) == (ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    assert outcome(other) == (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0 but received 3")


def test_an_unknown_resource_type_fails_every_resource(client, new_topic):
    topic = new_topic()
    create(client, topic)
    results = describe(client, [(TOPIC, topic, None), (3, "whatever", None)])
    assert [(code(r.error_code), r.resource_type, r.resource_name, r.configs) for r in results] == [
        (ErrorCode.INVALID_REQUEST, TOPIC, topic, ()),
        (ErrorCode.INVALID_REQUEST, 3, "whatever", ()),
    ]


def test_client_metrics_configs_are_refused(client):
    unnamed, named = describe(client, [(CLIENT_METRICS, "", None), (CLIENT_METRICS, "sub", None)])
    assert outcome(unnamed) == (ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
    assert code(named.error_code) == ErrorCode.INVALID_REQUEST


# -- AlterConfigs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_replaces_the_whole_override_set(client, new_topic, version):
    topic = new_topic()
    create(client, topic, configs={"retention.ms": "1000", "segment.bytes": "1048576"})
    (response,) = alter(client, [(TOPIC, topic, {"max.message.bytes": "2048"})], version)
    assert (outcome(response), response.resource_type, response.resource_name) == ((0, None), TOPIC, topic)
    entries = describe_one(client, TOPIC, topic, ["retention.ms", "segment.bytes", "max.message.bytes"])
    assert (entries["max.message.bytes"].value, entries["max.message.bytes"].config_source) == ("2048", TOPIC_CONFIG)
    assert (entries["retention.ms"].value, entries["retention.ms"].config_source) == ("604800000", DEFAULT_CONFIG)
    assert entries["segment.bytes"].config_source == DEFAULT_CONFIG


def test_alter_configs_validate_only_changes_nothing(client, new_topic):
    topic = new_topic()
    create(client, topic, configs={"retention.ms": "1000"})
    (response,) = alter(client, [(TOPIC, topic, {"retention.ms": "5000"})], validate_only=True)
    assert outcome(response) == (0, None)
    (bad,) = alter(client, [(TOPIC, topic, {"retention.ms": "soon"})], validate_only=True)
    assert code(bad.error_code) == ErrorCode.INVALID_CONFIG
    assert describe_one(client, TOPIC, topic, ["retention.ms"])["retention.ms"].value == "1000"


def test_alter_configs_errors_carry_kafkas_codes_and_messages(client, new_topic):
    topic = new_topic()
    create(client, topic)
    cases = [
        ((TOPIC, "missing-topic-x", {"retention.ms": "1"}), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing-topic-x' does not exist."),
        ((TOPIC, "", {"retention.ms": "1"}), ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        ((TOPIC, topic, {"no.such.config": "1"}), ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such.config"),
        (
            (TOPIC, topic, {"retention.ms": "abc"}),
            ErrorCode.INVALID_CONFIG,
            f"Invalid config value for resource ConfigResource(type=TOPIC, name='{topic}'): "
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            (TOPIC, topic, {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}),
            ErrorCode.INVALID_CONFIG,
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        ((TOPIC, topic, {"retention.ms": None}), ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        ((BROKER_LOGGER, "0", {"root": "DEBUG"}), ErrorCode.INVALID_REQUEST, "Unknown resource type 8"),
        ((CLIENT_METRICS, "m", {"interval.ms": "1000"}), ErrorCode.INVALID_REQUEST, "AlterConfigs is only supported for topics and brokers, but resource type is CLIENT_METRICS"),
        ((BROKER, "5", {"log.retention.ms": "1000"}), ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0, but received 5"),
        ((BROKER, "five", {"log.retention.ms": "1000"}), ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: five"),
        ((BROKER, "0", {"log.dirs": "/tmp/elsewhere"}), ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.dirs)"),
        (
            (BROKER, "", {"advertised.listeners": "PLAINTEXT://127.0.0.1:1"}),
            ErrorCode.INVALID_REQUEST,
            "Cannot update these configs at default cluster level, broker id must be specified: Set(advertised.listeners)",
        ),
    ]
    for resource, error, message in cases:
        (response,) = alter(client, [resource])
        assert outcome(response) == (error, message)
    assert describe_one(client, TOPIC, topic, ["retention.ms"])["retention.ms"].config_source == DEFAULT_CONFIG


def test_a_resource_named_twice_fails_both_and_duplicate_keys_fail(client, new_topic):
    topic, other = new_topic(), new_topic()
    create(client, topic)
    create(client, other)
    request = {
        "resources": [
            {"resource_type": TOPIC, "resource_name": topic, "configs": [{"name": "retention.ms", "value": "1"}]},
            {"resource_type": TOPIC, "resource_name": other, "configs": [{"name": "retention.ms", "value": "1"}, {"name": "retention.ms", "value": "2"}]},
            {"resource_type": TOPIC, "resource_name": topic, "configs": [{"name": "retention.ms", "value": "3"}]},
        ],
        "validate_only": False,
    }
    for api, version in ((ALTER_CONFIGS, 2), (INCREMENTAL_ALTER_CONFIGS, 1)):
        if api == INCREMENTAL_ALTER_CONFIGS:
            for resource in request["resources"]:
                for config in resource["configs"]:
                    config["config_operation"] = SET
        responses = client.call(api, version, request).responses
        assert [outcome(r) for r in responses] == [
            (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
            (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
            (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        ]
    assert describe_one(client, TOPIC, topic, ["retention.ms"])["retention.ms"].config_source == DEFAULT_CONFIG


def test_a_topic_config_change_reaches_the_hosted_log(client, new_topic):
    topic = new_topic()
    create(client, topic)
    big = records(1, value_size=4000)
    assert code(client.produce(topic, 0, big).error_code) == ErrorCode.NONE
    (response,) = alter(client, [(TOPIC, topic, {"max.message.bytes": "1000"})])
    assert outcome(response) == (0, None)
    refused = client.produce(topic, 0, big)
    assert code(refused.error_code) == ErrorCode.MESSAGE_TOO_LARGE
    assert code(client.produce(topic, 0, records(1, value_size=100)).error_code) == ErrorCode.NONE
    (restored,) = incremental(client, [(TOPIC, topic, [("max.message.bytes", DELETE, None)])])
    assert outcome(restored) == (0, None)
    assert code(client.produce(topic, 0, big).error_code) == ErrorCode.NONE


def test_a_retention_change_reaches_the_hosted_log(client, new_topic):
    topic = new_topic()
    create(client, topic, configs={"segment.bytes": "1024"})
    offsets = produce_batches(client, topic, [records(4, value_size=200) for _ in range(5)])
    end = offsets[-1] + 4
    assert client.list_offset(topic, 0, EARLIEST) == (0, 0)
    (response,) = incremental(client, [(TOPIC, topic, [("retention.ms", SET, "1")])])
    assert outcome(response) == (0, None)
    wait_until(lambda: client.list_offset(topic, 0, EARLIEST) == (0, end), "retention to delete every segment")
    assert client.list_offset(topic, 0, LATEST) == (0, end)


def test_a_cluster_default_change_reaches_every_topic_without_override(client, new_topic):
    topic = new_topic()
    create(client, topic)
    big = records(1, value_size=3000)
    (response,) = alter(client, [(BROKER, "", {"message.max.bytes": "1500"})])
    assert outcome(response) == (0, None)
    try:
        entry = describe_one(client, TOPIC, topic, ["max.message.bytes"])["max.message.bytes"]
        assert (entry.value, entry.config_source) == ("1500", DYNAMIC_DEFAULT)
        assert code(client.produce(topic, 0, big).error_code) == ErrorCode.MESSAGE_TOO_LARGE
    finally:
        (reset,) = alter(client, [(BROKER, "", {})])
        assert outcome(reset) == (0, None)
    assert code(client.produce(topic, 0, big).error_code) == ErrorCode.NONE


# -- IncrementalAlterConfigs ------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_incremental_operations_on_a_topic(client, new_topic, version):
    topic = new_topic()
    create(client, topic, configs={"retention.ms": "1000", "segment.ms": "60000"})
    steps = [
        ([("retention.ms", SET, "2000"), ("segment.ms", DELETE, None)], {"retention.ms": "2000", "cleanup.policy": "delete"}),
        ([("cleanup.policy", APPEND, "compact")], {"cleanup.policy": "delete,compact"}),
        ([("cleanup.policy", SUBTRACT, "delete")], {"cleanup.policy": "compact"}),
    ]
    for ops, expected in steps:
        (response,) = incremental(client, [(TOPIC, topic, ops)], version)
        assert outcome(response) == (0, None)
        entries = describe_one(client, TOPIC, topic, list(expected) + ["segment.ms"])
        assert {name: entries[name].value for name in expected} == expected
        assert entries["segment.ms"].config_source == DEFAULT_CONFIG


def test_incremental_errors(client, new_topic):
    topic = new_topic()
    create(client, topic, configs={"retention.ms": "1000"})
    cases = [
        ((TOPIC, topic, [("retention.ms", 9, "1")]), ErrorCode.INVALID_REQUEST, "Unknown operations type 9"),
        ((TOPIC, topic, [("retention.ms", SET, None)]), ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        ((TOPIC, topic, [("retention.ms", APPEND, "5")]), ErrorCode.INVALID_CONFIG, None),
        ((TOPIC, topic, [("retention.ms", SET, "x")]), ErrorCode.INVALID_CONFIG, None),
        ((TOPIC, "absent-topic-y", [("retention.ms", SET, "5")]), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'absent-topic-y' does not exist."),
        ((BROKER, "0", [("log.dirs", SET, "/x")]), ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.dirs)"),
        ((BROKER, "2", [("log.retention.ms", SET, "5")]), ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0, but received 2"),
        ((BROKER, "0", [("log.retention.ms", SET, "soon")]), ErrorCode.INVALID_REQUEST, None),
        ((0, "x", [("a", SET, "b")]), ErrorCode.INVALID_REQUEST, "Unknown resource type 0"),
    ]
    for resource, error, message in cases:
        (response,) = incremental(client, [resource])
        assert code(response.error_code) == error, response
        assert response.error_message
        if message is not None:
            assert response.error_message == message
    assert describe_one(client, TOPIC, topic, ["retention.ms"])["retention.ms"].value == "1000"
    assert describe_one(client, BROKER, "0", ["log.retention.ms"])["log.retention.ms"].config_source != DYNAMIC_BROKER


def test_incremental_per_broker_config_round_trip(client, new_topic):
    topic = new_topic()
    create(client, topic)
    (validated,) = incremental(client, [(BROKER, "0", [("log.retention.ms", SET, "777777")])], validate_only=True)
    assert outcome(validated) == (0, None)
    assert describe_one(client, TOPIC, topic, ["retention.ms"])["retention.ms"].value == "604800000"
    (response,) = incremental(client, [(BROKER, "0", [("log.retention.ms", SET, "777777")])])
    assert outcome(response) == (0, None)
    try:
        broker_entry = describe_one(client, BROKER, "0", ["log.retention.ms"], include_synonyms=True)["log.retention.ms"]
        assert (broker_entry.value, broker_entry.config_source, broker_entry.read_only) == ("777777", DYNAMIC_BROKER, False)
        topic_entry = describe_one(client, TOPIC, topic, ["retention.ms"])["retention.ms"]
        assert (topic_entry.value, topic_entry.config_source) == ("777777", DYNAMIC_BROKER)
    finally:
        (removed,) = incremental(client, [(BROKER, "0", [("log.retention.ms", DELETE, None)])])
    assert outcome(removed) == (0, None)
    assert describe_one(client, TOPIC, topic, ["retention.ms"])["retention.ms"].value == "604800000"


def test_incremental_broker_logger_sets_and_unsets_levels(client):
    name = "kcli.broker.handlers.describe_producers"
    before = describe_one(client, BROKER_LOGGER, "0")
    root_level = before["root"].value
    target = "TRACE" if root_level != "TRACE" else "ERROR"
    (validated,) = incremental(client, [(BROKER_LOGGER, "0", [(name, SET, target)])], validate_only=True)
    assert outcome(validated) == (0, None)
    assert describe_one(client, BROKER_LOGGER, "0", [name])[name].value == before[name].value
    (response,) = incremental(client, [(BROKER_LOGGER, "0", [(name, SET, target)])])
    assert outcome(response) == (0, None)
    assert describe_one(client, BROKER_LOGGER, "0", [name])[name].value == target
    (unset,) = incremental(client, [(BROKER_LOGGER, "0", [(name, DELETE, None)])])
    assert outcome(unset) == (0, None)
    assert describe_one(client, BROKER_LOGGER, "0", [name])[name].value == root_level
    refused = [
        (BROKER_LOGGER, "0", [("no.such.logger", SET, "DEBUG")]),
        (BROKER_LOGGER, "0", [(name, SET, "LOUD")]),
        (BROKER_LOGGER, "0", [("root", DELETE, None)]),
        (BROKER_LOGGER, "0", [(name, APPEND, "DEBUG")]),
        (BROKER_LOGGER, "7", [(name, SET, "DEBUG")]),
    ]
    assert [outcome(incremental(client, [resource])[0]) for resource in refused] == [
        (ErrorCode.INVALID_CONFIG, "Logger no.such.logger does not exist!"),
        (
            ErrorCode.INVALID_CONFIG,
            f"Cannot set the log level of {name} to LOUD as it is not a supported log level. "
            "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN",
        ),
        (ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed"),
        (ErrorCode.INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource"),
        (ErrorCode.INVALID_REQUEST, "Unexpected node id. Expected 0, but received 7"),
    ]


# -- DeleteRecords ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_moves_the_log_start_offset(client, new_topic, version):
    topic = new_topic()
    create(client, topic)
    offsets = produce_batches(client, topic, [records(2) for _ in range(5)])
    assert offsets == [0, 2, 4, 6, 8]

    def delete(offset: int) -> tuple[int, int]:
        response = client.call(DELETE_RECORDS, version, {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}], "timeout": 5000})
        (answer,) = response.topics[0].partitions
        assert (response.topics[0].name, answer.partition_index) == (topic, 0)
        return code(answer.error_code), answer.low_watermark

    assert delete(4) == (0, 4)
    assert client.list_offset(topic, 0, EARLIEST) == (0, 4)
    assert fetched_offsets(client, topic, 0) == (ErrorCode.OFFSET_OUT_OF_RANGE, [])
    assert fetched_offsets(client, topic, 4) == (0, [4, 5, 6, 7, 8, 9])
    assert delete(2) == (0, 4)  # below the start offset: nothing to do, not an error
    assert delete(11) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert delete(-5) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert delete(-1) == (0, 10)
    assert client.list_offset(topic, 0, EARLIEST) == (0, 10)
    assert fetched_offsets(client, topic, 10) == (0, [])
    assert produce_batches(client, topic, [records(1)]) == [10]
    assert fetched_offsets(client, topic, 10) == (0, [10])


def test_delete_records_errors_per_partition(client, new_topic):
    topic, compacted = new_topic(), new_topic("compacted")
    create(client, topic, partitions=2)
    create(client, compacted, configs={"cleanup.policy": "compact"})
    produce_batches(client, topic, [records(3)], partition=1)
    produce_batches(client, compacted, [build_batch([NewRecord(b"k", b"v", int(time.time() * 1000))])])
    response = client.call(
        DELETE_RECORDS,
        2,
        {
            "topics": [
                {"name": topic, "partitions": [{"partition_index": 1, "offset": 2}, {"partition_index": 5, "offset": 0}]},
                {"name": "no-such-topic-z", "partitions": [{"partition_index": 0, "offset": 0}]},
                {"name": compacted, "partitions": [{"partition_index": 0, "offset": 1}]},
            ],
            "timeout": 5000,
        },
    )
    answers = {(t.name, p.partition_index): (code(p.error_code), p.low_watermark) for t in response.topics for p in t.partitions}
    assert answers == {
        (topic, 1): (0, 2),
        (topic, 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("no-such-topic-z", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        (compacted, 0): (ErrorCode.POLICY_VIOLATION, -1),
    }
    assert client.list_offset(compacted, 0, EARLIEST) == (0, 0)


# -- DescribeLogDirs --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_log_dirs_reports_every_dir_with_sizes_from_disk(broker, client, new_topic, version):
    topic = new_topic()
    create(client, topic, partitions=3)
    for partition, count in ((0, 1), (1, 3), (2, 0)):
        for _ in range(count):
            assert code(client.produce(topic, partition, records(5, value_size=100)).error_code) == ErrorCode.NONE
    response = client.call(DESCRIBE_LOG_DIRS, version, {"topics": None})
    if version >= 3:
        assert code(response.error_code) == ErrorCode.NONE
    by_dir = {result.log_dir: result for result in response.results}
    assert set(by_dir) == {str(d) for d in log_dirs(broker)}
    seen = {}
    for log_dir, result in by_dir.items():
        assert code(result.error_code) == ErrorCode.NONE
        for described in result.topics:
            for p in described.partitions:
                assert (described.name, p.partition_index) not in seen
                seen[(described.name, p.partition_index)] = (log_dir, p.partition_size, p.offset_lag, p.is_future_key)
        if version >= 4:
            stats = os.statvfs(log_dir)
            assert result.total_bytes == stats.f_blocks * stats.f_frsize
            assert 0 < result.usable_bytes <= result.total_bytes
    for partition in range(3):
        expected_dir = str(partition_dir(broker, topic, partition).parent)
        assert seen[(topic, partition)] == (expected_dir, segment_bytes_on_disk(broker, topic, partition), 0, False)
    assert seen[(topic, 1)][1] > seen[(topic, 0)][1] > seen[(topic, 2)][1] == 0


def test_describe_log_dirs_filters_to_the_named_partitions(broker, client, new_topic):
    topic = new_topic()
    create(client, topic, partitions=2)
    response = client.call(DESCRIBE_LOG_DIRS, 4, {"topics": [{"topic": topic, "partitions": [1, 9]}, {"topic": "absent-topic", "partitions": [0]}]})
    described = [(t.name, [p.partition_index for p in t.partitions]) for r in response.results for t in r.topics]
    assert described == [(topic, [1])]
    nothing = client.call(DESCRIBE_LOG_DIRS, 4, {"topics": []})
    assert len(nothing.results) == len(LOG_DIR_NAMES)
    assert all(r.topics == () for r in nothing.results)


# -- DescribeProducers ------------------------------------------------------------------------------


def test_describe_producers_reports_idempotent_producers(client, new_topic):
    topic = new_topic()
    create(client, topic, partitions=2)
    init = client.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1})
    assert code(init.error_code) == ErrorCode.NONE
    producer_id, epoch = init.producer_id, init.producer_epoch
    first = records(3, producer_id=producer_id, producer_epoch=epoch, base_sequence=0)
    second = records(2, producer_id=producer_id, producer_epoch=epoch, base_sequence=3)
    produce_batches(client, topic, [first, second])
    produce_batches(client, topic, [records(4)], partition=1)
    last_timestamp = next(iter_batches(second)).max_timestamp
    response = client.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0, 1, 7]}]})
    (answer,) = response.topics
    with_producer, without, missing = answer.partitions
    assert (code(with_producer.error_code), with_producer.partition_index) == (0, 0)
    (state,) = with_producer.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence, state.last_timestamp) == (producer_id, epoch, 4, last_timestamp)
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)
    assert (code(without.error_code), without.active_producers) == (0, ())
    assert (code(missing.error_code), missing.partition_index) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 7)


def test_describe_producers_topic_errors(client):
    response = client.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "no-such-topic-p", "partition_indexes": [0, 1]}, {"name": "bad/name", "partition_indexes": [0]}]})
    missing, illegal = response.topics
    assert [(code(p.error_code), p.partition_index) for p in missing.partitions] == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 1)]
    assert all(p.error_message for p in missing.partitions)
    (bad,) = illegal.partitions
    assert code(bad.error_code) == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "bad/name" in bad.error_message
