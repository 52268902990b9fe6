"""Znode paths and JSON codecs, checked against znode contents written by ZooKeeper-mode Kafka."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcli.metadata import zk_paths as zk
from kcli.common import uuid_from_string

# Znode contents as a Kafka 3.x broker in ZooKeeper mode writes them (compact JSON, observed key
# order), and as ZkData.scala documents the older versions.
BROKER_V5 = (
    b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://DESKTOP-L584EQM.localdomain:9092"],"jmx_port":-1,"port":9092,'
    b'"host":"DESKTOP-L584EQM.localdomain","version":5,"timestamp":"1781706151709"}'
)
TOPIC_V3 = (
    b'{"partitions":{"0":[0],"1":[0]},"topic_id":"WV18z8nWQ8yekl_6282UEQ",'
    b'"adding_replicas":{},"removing_replicas":{},"version":3}'
)
PARTITION_STATE = b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}'
CONTROLLER_V2 = b'{"version":2,"brokerid":0,"timestamp":"1781706151854","kraftControllerEpoch":-1}'
CLUSTER_ID = b'{"version":"1","id":"x_oECR_rT6uGoWuuHulV7A"}'
TOPIC_CONFIG = b'{"version":1,"config":{"retention.ms":"10000","max.message.bytes":"500"}}'
CONFIG_CHANGE = b'{"version":2,"entity_path":"topics/orders"}'
REASSIGNMENT = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}'
PRODUCER_ID_BLOCK = b'{"version":1,"broker":0,"block_start":"0","block_end":"999"}'
ISR_CHANGE = b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
LOG_DIR_EVENT = b'{"version":1,"broker":0,"event":1}'
FEATURE_V2 = b'{"features":{"metadata.version":{"max_version_level":7}},"version":2,"status":1}'


# -- paths ----------------------------------------------------------------------------------------


def test_paths_are_kafkas():
    assert zk.broker_id_path(3) == "/brokers/ids/3"
    assert zk.topic_path("orders") == "/brokers/topics/orders"
    assert zk.topic_partitions_path("orders") == "/brokers/topics/orders/partitions"
    assert zk.topic_partition_path("orders", 2) == "/brokers/topics/orders/partitions/2"
    assert zk.partition_state_path("orders", 2) == "/brokers/topics/orders/partitions/2/state"
    assert zk.topic_config_path("orders") == "/config/topics/orders"
    assert zk.broker_config_path(1) == "/config/brokers/1"
    assert zk.broker_config_path(None) == "/config/brokers/<default>"
    assert zk.config_change_path() == "/config/changes/config_change_"
    assert zk.isr_change_path() == "/isr_change_notification/isr_change_"
    assert zk.log_dir_event_path() == "/log_dir_event_notification/log_dir_event_"
    assert zk.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert zk.consumer_offset_path("g", "orders", 4) == "/consumers/g/offsets/orders/4"
    assert (zk.CONTROLLER, zk.CONTROLLER_EPOCH, zk.CLUSTER_ID) == ("/controller", "/controller_epoch", "/cluster/id")
    assert zk.REASSIGN_PARTITIONS == "/admin/reassign_partitions"
    assert zk.PRODUCER_ID_BLOCK == "/latest_producer_id_block"
    assert zk.FEATURE == "/feature"


def test_persistent_paths_are_the_ones_a_broker_creates_at_start():
    assert set(zk.PERSISTENT_PATHS) == {
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    }


# -- /brokers/ids/N -------------------------------------------------------------------------------


def test_broker_registration_matches_kafka_bytes():
    registration = zk.BrokerRegistration(
        endpoints=(zk.Endpoint("PLAINTEXT", "DESKTOP-L584EQM.localdomain", 9092),),
        timestamp=1781706151709,
    )
    assert zk.encode_broker_registration(registration) == BROKER_V5
    assert zk.decode_broker_registration(BROKER_V5, 0) == registration


def test_broker_registration_with_several_listeners_and_rack():
    registration = zk.BrokerRegistration(
        endpoints=(
            zk.Endpoint("CLIENT", "h1", 9092, "SASL_SSL"),
            zk.Endpoint("INTERNAL", "h1", 9093, "PLAINTEXT"),
        ),
        timestamp=5,
        jmx_port=9999,
        rack="dc1",
        features={"metadata.version": {"min_version": 1, "max_version": 7}},
    )
    data = zk.encode_broker_registration(registration)
    assert b'"endpoints":["CLIENT://h1:9092","INTERNAL://h1:9093"]' in data
    assert b'"listener_security_protocol_map":{"CLIENT":"SASL_SSL","INTERNAL":"PLAINTEXT"}' in data
    # host and port at the top level are the first PLAINTEXT listener's, for old clients.
    assert b'"port":9093,"host":"h1"' in data
    assert b'"rack":"dc1"' in data
    assert zk.decode_broker_registration(data) == registration


def test_broker_without_plaintext_listener_has_null_host():
    registration = zk.BrokerRegistration((zk.Endpoint("SSL", "h", 9093, "SSL"),), timestamp=1)
    data = zk.encode_broker_registration(registration)
    assert b'"port":-1,"host":null' in data


def test_ipv6_endpoint_is_bracketed_and_parsed_back():
    endpoint = zk.Endpoint("PLAINTEXT", "::1", 9092)
    assert endpoint.connection_string == "PLAINTEXT://[::1]:9092"
    assert zk.Endpoint.parse("PLAINTEXT://[::1]:9092") == endpoint


def test_broker_registration_v1_from_kafka_08():
    data = b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    decoded = zk.decode_broker_registration(data, 1)
    assert decoded.endpoints == (zk.Endpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),)
    assert decoded.jmx_port == 9999 and decoded.timestamp == 2233345666 and decoded.version == 1


def test_broker_registration_v2_listener_names_are_protocols():
    data = (
        b'{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        b'"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"]}'
    )
    decoded = zk.decode_broker_registration(data, 1)
    assert decoded.endpoints[1] == zk.Endpoint("SSL", "host1", 9093, "SSL")


def test_broker_registration_with_unmapped_listener_is_refused():
    data = b'{"version":4,"jmx_port":-1,"endpoints":["CLIENT://h:1"],"listener_security_protocol_map":{}}'
    with pytest.raises(zk.ZNodeFormatError, match="No security protocol defined for listener CLIENT"):
        zk.decode_broker_registration(data, 2)


def test_broker_registration_garbage_names_the_broker():
    with pytest.raises(zk.ZNodeFormatError, match="Failed to parse ZooKeeper registration for broker 4: oops"):
        zk.decode_broker_registration(b"oops", 4)


# -- /brokers/topics/T ----------------------------------------------------------------------------


def test_topic_assignment_matches_kafka_bytes():
    assignment = zk.TopicAssignment(
        partitions={0: (0,), 1: (0,)}, topic_id=uuid_from_string("WV18z8nWQ8yekl_6282UEQ")
    )
    assert zk.encode_topic_assignment(assignment) == TOPIC_V3
    assert zk.decode_topic_assignment(TOPIC_V3, "premier-topic") == assignment


def test_topic_assignment_with_reassignment_in_flight():
    assignment = zk.TopicAssignment(
        partitions={0: (1, 2, 3)}, adding_replicas={0: (3,)}, removing_replicas={0: (1,)}, topic_id=None
    )
    data = zk.encode_topic_assignment(assignment)
    assert data == (
        b'{"partitions":{"0":[1,2,3]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]},"version":3}'
    )
    assert zk.decode_topic_assignment(data) == assignment


def test_partitions_are_written_in_numeric_order():
    data = zk.encode_topic_assignment(zk.TopicAssignment({10: (1,), 2: (1,), 0: (1,)}))
    assert data.startswith(b'{"partitions":{"0":[1],"2":[1],"10":[1]}')


def test_older_topic_assignments_decode():
    v1 = zk.decode_topic_assignment(b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}')
    assert v1 == zk.TopicAssignment({0: (1, 2), 1: (2, 1)})
    v2 = zk.decode_topic_assignment(
        b'{"version":2,"partitions":{"0":[2,1,0]},"adding_replicas":{},"removing_replicas":{}}'
    )
    assert v2.partitions == {0: (2, 1, 0)} and v2.topic_id is None
    assert zk.decode_topic_assignment(b"") == zk.TopicAssignment({})


def test_topic_assignment_with_bad_topic_id_is_refused():
    with pytest.raises(zk.ZNodeFormatError, match="orders"):
        zk.decode_topic_assignment(b'{"version":3,"partitions":{},"topic_id":"short"}', "orders")


@given(
    st.dictionaries(
        st.integers(0, 5000), st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5).map(tuple), max_size=30
    ),
    st.uuids(),
)
def test_topic_assignment_round_trips(partitions, topic_id):
    assignment = zk.TopicAssignment(partitions, topic_id)
    assert zk.decode_topic_assignment(zk.encode_topic_assignment(assignment)) == assignment


# -- partition state ------------------------------------------------------------------------------


def test_partition_state_matches_kafka_bytes():
    state = zk.LeaderAndIsr(leader=2, leader_epoch=0, isr=(2, 3, 1), controller_epoch=1)
    assert zk.encode_leader_and_isr(state) == PARTITION_STATE
    assert zk.decode_leader_and_isr(PARTITION_STATE) == state


def test_partition_state_carries_recovery_only_while_recovering():
    state = zk.LeaderAndIsr(3, 5, (3,), 2, leader_recovery_state=zk.LEADER_RECOVERING)
    data = zk.encode_leader_and_isr(state)
    assert data.endswith(b',"isr":[3],"leader_recovery_state":1}')
    assert zk.decode_leader_and_isr(data) == state


@given(
    st.integers(-1, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.lists(st.integers(0, 2**31 - 1), max_size=6).map(tuple),
    st.integers(0, 2**31 - 1),
    st.sampled_from([zk.LEADER_RECOVERED, zk.LEADER_RECOVERING]),
)
def test_partition_state_round_trips(leader, leader_epoch, isr, controller_epoch, recovery):
    state = zk.LeaderAndIsr(leader, leader_epoch, isr, controller_epoch, recovery)
    assert zk.decode_leader_and_isr(zk.encode_leader_and_isr(state)) == state


def test_partition_state_with_missing_field_is_refused():
    with pytest.raises(zk.ZNodeFormatError, match="leader_epoch is not an integer"):
        zk.decode_leader_and_isr(b'{"controller_epoch":1,"leader":2,"version":1,"isr":[2]}')


# -- controller, cluster id -----------------------------------------------------------------------


def test_controller_matches_kafka_bytes():
    registration = zk.ControllerRegistration(broker_id=0, timestamp=1781706151854)
    assert zk.encode_controller(registration) == CONTROLLER_V2
    assert zk.decode_controller(CONTROLLER_V2) == registration


def test_controller_v1_has_no_kraft_epoch():
    decoded = zk.decode_controller(b'{"version":1,"brokerid":3,"timestamp":"1609459200000"}')
    assert decoded == zk.ControllerRegistration(3, 1609459200000, -1)


def test_controller_epoch_is_a_decimal_string():
    assert zk.encode_controller_epoch(12) == b"12"
    assert zk.decode_controller_epoch(b"12") == 12
    with pytest.raises(zk.ZNodeFormatError):
        zk.decode_controller_epoch(b"twelve")


def test_cluster_id_matches_kafka_bytes():
    assert zk.encode_cluster_id("x_oECR_rT6uGoWuuHulV7A") == CLUSTER_ID
    assert zk.decode_cluster_id(CLUSTER_ID) == "x_oECR_rT6uGoWuuHulV7A"


# -- configs --------------------------------------------------------------------------------------


def test_entity_config_matches_kafka_bytes():
    config = {"retention.ms": "10000", "max.message.bytes": "500"}
    assert zk.encode_entity_config(config) == TOPIC_CONFIG
    assert zk.decode_entity_config(TOPIC_CONFIG) == config


def test_empty_entity_config():
    assert zk.encode_entity_config({}) == b'{"version":1,"config":{}}'
    assert zk.decode_entity_config(b"") == {}
    assert zk.decode_entity_config(b'{"version":1}') == {}


def test_entity_config_values_must_be_strings():
    with pytest.raises(zk.ZNodeFormatError, match="retention.ms is not a string"):
        zk.decode_entity_config(b'{"version":1,"config":{"retention.ms":10000}}')


def test_config_change_notification_matches_kafka_bytes():
    assert zk.encode_config_change("topics/orders") == CONFIG_CHANGE
    assert zk.decode_config_change(CONFIG_CHANGE) == "topics/orders"
    assert zk.decode_config_change(b'{"version":1,"entity_type":"topics","entity_name":"t"}') == "topics/t"


# -- admin, notifications, producer ids, offsets, features -------------------------------------


def test_reassignment_matches_kafka_bytes():
    assert zk.encode_reassignment({("foo", 0): [1, 2]}) == REASSIGNMENT
    assert zk.decode_reassignment(REASSIGNMENT) == {("foo", 0): (1, 2)}


def test_partition_list_matches_kafka_bytes():
    assert zk.encode_partition_list([("t", 0)]) == ISR_CHANGE
    assert zk.decode_partition_list(ISR_CHANGE) == [("t", 0)]


def test_partition_list_must_be_a_list():
    with pytest.raises(zk.ZNodeFormatError, match="partitions is not a list"):
        zk.decode_partition_list(b'{"version":1,"partitions":{}}')


def test_log_dir_event_matches_kafka_bytes():
    assert zk.encode_log_dir_event(0) == LOG_DIR_EVENT
    assert zk.decode_log_dir_event(LOG_DIR_EVENT) == 0


def test_producer_id_block_matches_kafka_bytes():
    block = zk.ProducerIdBlock(broker=0, block_start=0, block_end=999)
    assert zk.encode_producer_id_block(block) == PRODUCER_ID_BLOCK
    assert zk.decode_producer_id_block(PRODUCER_ID_BLOCK) == block


def test_consumer_offset_is_plain_text():
    assert zk.encode_consumer_offset(42) == b"42"
    assert zk.decode_consumer_offset(b"42") == 42
    with pytest.raises(zk.ZNodeFormatError):
        zk.decode_consumer_offset(b"")


def test_feature_znode_v2_and_v1():
    znode = zk.FeatureZNode(status=zk.FEATURE_ENABLED, features={"metadata.version": 7})
    assert zk.encode_feature_znode(znode) == FEATURE_V2
    assert zk.decode_feature_znode(FEATURE_V2) == znode
    v1 = zk.FeatureZNode(zk.FEATURE_ENABLED, {"f": 2}, version=1)
    data = zk.encode_feature_znode(v1)
    assert data == b'{"features":{"f":{"max_version_level":2,"min_version_level":2}},"version":1,"status":1}'
    assert zk.decode_feature_znode(data) == v1
    assert zk.decode_feature_znode(b'{"features":{},"version":1,"status":1}') == zk.FeatureZNode(1, {}, 1)


def test_feature_znode_with_bad_status_is_refused():
    with pytest.raises(zk.ZNodeFormatError, match="malformed status 5"):
        zk.decode_feature_znode(b'{"features":{},"version":2,"status":5}')


def test_zero_uuid_round_trips_in_topic_assignment():
    assignment = zk.TopicAssignment({0: (1,)}, uuid.UUID(int=0))
    assert b'"topic_id":"AAAAAAAAAAAAAAAAAAAAAA"' in zk.encode_topic_assignment(assignment)


# -- numbers that do not fit the wire field they are sent in ---------------------------------------

PAST_INT32 = 2**31


@pytest.mark.parametrize(
    ("decode", "data", "reason"),
    [
        (zk.decode_topic_assignment, b'{"version":1,"partitions":{"%d":[0]}}' % PAST_INT32, "partition 2147483648 is out of range"),
        (zk.decode_topic_assignment, b'{"version":1,"partitions":{"-1":[0]}}', "partition -1 is out of range"),
        (zk.decode_topic_assignment, b'{"version":1,"partitions":{"0":[-5]}}', "partitions -5 is out of range"),
        (zk.decode_topic_assignment, b'{"version":1,"partitions":{"0":[%d]}}' % PAST_INT32, "partitions 2147483648 is out of range"),
        (zk.decode_topic_assignment, b'{"version":2,"partitions":{"0":[0]},"adding_replicas":{"0":[-1]}}', "adding_replicas -1"),
        (zk.decode_leader_and_isr, b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":%d,"isr":[0]}' % PAST_INT32, "leader_epoch"),
        (zk.decode_leader_and_isr, b'{"controller_epoch":%d,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}' % PAST_INT32, "controller_epoch"),
        (zk.decode_leader_and_isr, b'{"controller_epoch":1,"leader":%d,"version":1,"leader_epoch":0,"isr":[0]}' % PAST_INT32, "leader"),
        (zk.decode_leader_and_isr, b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0,-3]}', "isr -3"),
        (zk.decode_leader_and_isr, b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0],"leader_recovery_state":7}', "leader_recovery_state"),
        (zk.decode_broker_registration, BROKER_V5.replace(b"9092,", b"70000,").replace(b":9092", b":70000"), "port of PLAINTEXT 70000"),
        (zk.decode_broker_registration, BROKER_V5.replace(b":9092", b":%d" % PAST_INT32), "port of PLAINTEXT"),
        (zk.decode_broker_registration, b'{"version":1,"host":"h","port":-2}', "port -2"),
        (zk.decode_broker_registration, BROKER_V5.replace(b'"jmx_port":-1', b'"jmx_port":%d' % PAST_INT32), "jmx_port"),
        (zk.decode_controller, b'{"version":2,"brokerid":%d,"timestamp":"1"}' % PAST_INT32, "brokerid"),
        (zk.decode_controller_epoch, b"%d" % PAST_INT32, "epoch"),
        (zk.decode_reassignment, b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[%d]}]}' % PAST_INT32, "replicas"),
        (zk.decode_partition_list, b'{"version":1,"partitions":[{"topic":"t","partition":-1}]}', "partition -1"),
        (zk.decode_log_dir_event, b'{"version":1,"broker":%d,"event":1}' % PAST_INT32, "broker"),
        (zk.decode_producer_id_block, b'{"version":1,"broker":0,"block_start":"0","block_end":"%d"}' % 2**63, "block_end"),
        (zk.decode_feature_znode, b'{"features":{"f":{"max_version_level":40000}},"version":2,"status":1}', "max_version_level"),
    ],
)
def test_a_number_past_the_range_of_its_wire_field_is_a_format_error(decode, data, reason):
    with pytest.raises(zk.ZNodeFormatError, match=reason):
        decode(data)


def test_the_edges_of_each_range_still_decode():
    assert zk.decode_topic_assignment(b'{"version":1,"partitions":{"%d":[%d]}}' % (PAST_INT32 - 1, PAST_INT32 - 1)).partitions == {
        PAST_INT32 - 1: (PAST_INT32 - 1,)
    }
    state = zk.decode_leader_and_isr(b'{"controller_epoch":%d,"leader":-1,"version":1,"leader_epoch":%d,"isr":[]}' % (PAST_INT32 - 1, PAST_INT32 - 1))
    assert (state.leader, state.leader_epoch, state.controller_epoch) == (-1, PAST_INT32 - 1, PAST_INT32 - 1)
    assert zk.decode_broker_registration(BROKER_V5.replace(b":9092", b":65535")).endpoints[0].port == 65535
    assert zk.decode_broker_registration(BROKER_V5.replace(b":9092", b":0")).endpoints[0].port == 0
