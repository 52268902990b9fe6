"""``kcli consumer-groups`` against a real kcli broker, with groups made by confluent-kafka.

Expected output is written from Kafka's templates (../shared/reference/kafka-tools.md §5.4 and
Kafka 3.9's ConsumerGroupCommand): ``%-<w>s`` columns, widths max(15, longest value), a blank line
before each table. Offsets a reset writes are checked through confluent-kafka's
``Consumer.committed()``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.timeout(120)

SUFFIX = uuid.uuid4().hex[:6]
ORDERS = f"orders-{SUFFIX}"
EXTRA = f"extra-{SUFFIX}"
TIMED = f"timed-{SUFFIX}"
RECENT = f"recent-{SUFFIX}"
ACTIVE = f"active-{SUFFIX}"
IDLE = f"idle-{SUFFIX}"
ORDERS_COUNTS = [5, 7, 4]
EXTRA_COUNT = 3
TIMED_BASE = 1704067200000  # 2024-01-01T00:00:00.000Z
TIMED_COUNT = 6
RECENT_OLD, RECENT_NEW = 2, 2
DRY_RUN_WARNING = (
    "WARN: No action will be performed as the --execute option is missing.In a future major release, the default "
    "behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. "
    "You should add the --dry-run option explicitly if you are scripting this command and want to keep the current "
    "default behavior without prompting."
)
NO_OFFSET = -1001  # confluent-kafka's OFFSET_INVALID: nothing committed


def row(values: list[object], widths: list[int], *, pad_last: bool = False) -> str:
    """Java's printf of ``%-<w>s`` columns joined by spaces."""
    cells = [str(v).ljust(w) for v, w in zip(values, widths)]
    if not pad_last:
        cells[-1] = str(values[-1])
    return " ".join(cells)


@pytest.fixture(scope="module")
def cluster(broker) -> Iterator[dict]:
    """Topics with known contents, a running consumer group and an inactive one."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(ORDERS, 3, 1), NewTopic(EXTRA, 1, 1), NewTopic(TIMED, 1, 1), NewTopic(RECENT, 1, 1)])
    for future in futures.values():
        future.result(15)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for partition, count in enumerate(ORDERS_COUNTS):
        for i in range(count):
            producer.produce(ORDERS, value=f"o{partition}-{i}".encode(), partition=partition)
    for i in range(EXTRA_COUNT):
        producer.produce(EXTRA, value=b"e", partition=0)
    for i in range(TIMED_COUNT):
        producer.produce(TIMED, value=b"t", partition=0, timestamp=TIMED_BASE + i * 1000)
    now = int(time.time() * 1000)
    for i in range(RECENT_OLD):
        producer.produce(RECENT, value=b"old", partition=0, timestamp=now - 2 * 3600 * 1000 + i)
    for i in range(RECENT_NEW):
        producer.produce(RECENT, value=b"new", partition=0, timestamp=now + i)
    assert producer.flush(15) == 0

    idle = join_and_consume(broker.bootstrap, IDLE, "idle-client")
    idle.commit(offsets=[TopicPartition(ORDERS, 0, 2), TopicPartition(ORDERS, 2, 4)], asynchronous=False)
    idle.close()

    active = join_and_consume(broker.bootstrap, ACTIVE, "active-client")
    active.commit(offsets=[TopicPartition(ORDERS, 0, 3), TopicPartition(ORDERS, 1, 7), TopicPartition(EXTRA, 0, 1)], asynchronous=False)
    try:
        yield {"bootstrap": broker.bootstrap, "active_member": active.memberid(), "port": broker.port}
    finally:
        active.close()


def join_and_consume(bootstrap: str, group: str, client_id: str) -> Consumer:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
    })
    consumer.subscribe([ORDERS])
    seen = 0
    deadline = time.monotonic() + 30
    while (seen < sum(ORDERS_COUNTS) or len(consumer.assignment()) < 3) and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            seen += 1
    assert len(consumer.assignment()) == 3 and seen == sum(ORDERS_COUNTS)
    return consumer


def simple_group(bootstrap: str, offsets: dict[tuple[str, int], int]) -> str:
    """A new group holding only committed offsets (a simple consumer's commit, no membership)."""
    group = f"simple-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()
    return group


def committed(bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        answer = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=15)
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): tp.offset for tp in answer}


def groups_cmd(kcli, cluster, *args: str):
    return kcli("consumer-groups", "--bootstrap-server", cluster["bootstrap"], *args)


# -- --list ----------------------------------------------------------------------------------------------


def test_list_prints_one_group_per_line(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--list")
    assert result.returncode == 0, result
    assert {ACTIVE, IDLE} <= set(result.lines)
    assert all(line and " " not in line for line in result.lines)


def test_list_with_state_and_type_columns(kcli, cluster):
    names = groups_cmd(kcli, cluster, "--list").lines
    result = groups_cmd(kcli, cluster, "--list", "--type", "--state")
    assert result.returncode == 0, result
    width = max([15] + [len(n) for n in names]) + 10
    assert result.lines[0] == row(["GROUP", "TYPE", "STATE"], [width, 20, 20], pad_last=True)
    assert row([ACTIVE, "Classic", "Stable"], [width, 20, 20], pad_last=True) in result.lines
    assert row([IDLE, "Classic", "Empty"], [width, 20, 20], pad_last=True) in result.lines
    assert len(result.lines) == len(names) + 1


def test_list_filtered_by_state(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--list", "--state", "stable")
    assert result.returncode == 0, result
    width = max(15, len(ACTIVE)) + 10
    assert result.lines == [row(["GROUP", "STATE"], [width, 20], pad_last=True), row([ACTIVE, "Stable"], [width, 20], pad_last=True)]


def test_list_rejects_an_unknown_state(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--list", "--state", "Sleeping")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "Error: Invalid state list 'Sleeping'. Valid states are: PreparingRebalance, CompletingRebalance, Stable, Dead, Empty, Assigning, Reconciling"
    ]


def test_list_as_json(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--list", "--output", "json")
    assert result.returncode == 0, result
    objects = {o["group"]: o for o in map(json.loads, result.lines)}
    assert objects[ACTIVE] == {"group": ACTIVE, "state": "Stable", "type": "Classic", "protocolType": "consumer"}
    assert objects[IDLE]["state"] == "Empty"


# -- --describe ------------------------------------------------------------------------------------------


def active_offsets_table(cluster) -> list[str]:
    member = cluster["active_member"]
    rows = [
        [ACTIVE, ORDERS, 0, 3, 5, 2, member, "/127.0.0.1", "active-client"],
        [ACTIVE, ORDERS, 1, 7, 7, 0, member, "/127.0.0.1", "active-client"],
        [ACTIVE, ORDERS, 2, "-", 4, "-", member, "/127.0.0.1", "active-client"],
        [ACTIVE, EXTRA, 0, 1, EXTRA_COUNT, EXTRA_COUNT - 1, "-", "-", "-"],
    ]
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    widths = [max(15, len(ACTIVE)), max(15, len(ORDERS), len(EXTRA)), 10, 15, 15, 15, max(15, len(member)), 15, 0]
    return ["", row(header, widths)] + [row(r, widths) for r in rows]


def test_describe_offsets_of_an_active_group(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--describe", "--group", ACTIVE)
    assert result.returncode == 0, result
    assert result.lines == active_offsets_table(cluster)
    assert result.stderr == ""
    assert groups_cmd(kcli, cluster, "--describe", "--group", ACTIVE, "--offsets").lines == result.lines


def test_describe_an_inactive_group_notes_it_on_stderr(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--describe", "--group", IDLE)
    assert result.returncode == 0, result
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    widths = [max(15, len(IDLE)), max(15, len(ORDERS)), 10, 15, 15, 15, 15, 15, 0]
    assert result.lines == [
        "",
        row(header, widths),
        row([IDLE, ORDERS, 0, 2, 5, 3, "-", "-", "-"], widths),
        row([IDLE, ORDERS, 2, 4, 4, 0, "-", "-", "-"], widths),
    ]
    assert result.stderr == f"\nConsumer group '{IDLE}' has no active members.\n"


def test_describe_all_groups_prints_each_group_in_order(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--describe", "--all-groups")
    assert result.returncode == 0, result
    text = result.stdout
    active = "\n".join(active_offsets_table(cluster)) + "\n"
    assert active in text
    assert text.index(active) < text.index(f"\n{IDLE} ")
    headers = [line for line in result.lines if line.startswith("GROUP ")]
    assert len(headers) == len(groups_cmd(kcli, cluster, "--list").lines)


def test_describe_members(kcli, cluster):
    member = cluster["active_member"]
    widths = [max(15, len(ACTIVE)), max(15, len(member)), 15, 15, 15]
    header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    result = groups_cmd(kcli, cluster, "--describe", "--group", ACTIVE, "--members")
    assert result.returncode == 0, result
    assert result.lines == ["", row(header, widths, pad_last=True) + " ", row([ACTIVE, member, "/127.0.0.1", "active-client", 3], widths, pad_last=True) + " "]
    verbose = groups_cmd(kcli, cluster, "--describe", "--group", ACTIVE, "--members", "--verbose")
    assert verbose.lines == [
        "",
        row(header, widths, pad_last=True) + " ASSIGNMENT",
        row([ACTIVE, member, "/127.0.0.1", "active-client", 3], widths, pad_last=True) + f" {ORDERS}(0,1,2)",
    ]


def test_describe_state(kcli, cluster):
    coordinator = f"127.0.0.1:{cluster['port']}  (0)"
    width = max(25, len(coordinator))
    result = groups_cmd(kcli, cluster, "--describe", "--group", ACTIVE, "--group", IDLE, "--state")
    assert result.returncode == 0, result
    header = row(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"], [width, 25, 20, 15, 0])
    assert result.lines == [
        "", header, row([ACTIVE, coordinator, "range", "Stable", 1], [width, 25, 20, 15, 0]),
        "", header, row([IDLE, coordinator, "", "Empty", 0], [width, 25, 20, 15, 0]),
    ]
    assert result.stderr == f"\nConsumer group '{IDLE}' has no active members.\n"


def test_describe_json_shapes(kcli, cluster):
    member = cluster["active_member"]
    offsets = json.loads(groups_cmd(kcli, cluster, "--describe", "--group", ACTIVE, "--output", "json").stdout)
    assert offsets["group"] == ACTIVE and offsets["state"] == "Stable"
    assert offsets["coordinator"] == {"id": 0, "host": "127.0.0.1", "port": cluster["port"]}
    assert offsets["partitions"][2] == {
        "topic": ORDERS, "partition": 2, "currentOffset": None, "logEndOffset": 4, "lag": None,
        "consumerId": member, "host": "/127.0.0.1", "clientId": "active-client",
    }
    assert [(p["topic"], p["partition"], p["lag"]) for p in offsets["partitions"]] == [(ORDERS, 0, 2), (ORDERS, 1, 0), (ORDERS, 2, None), (EXTRA, 0, 2)]
    members = json.loads(groups_cmd(kcli, cluster, "--describe", "--group", ACTIVE, "--members", "--output", "json").stdout)
    assert members["members"] == [{
        "consumerId": member, "groupInstanceId": None, "host": "/127.0.0.1", "clientId": "active-client", "partitions": 3,
        "assignment": [{"topic": ORDERS, "partition": p} for p in range(3)],
    }]
    state = json.loads(groups_cmd(kcli, cluster, "--describe", "--group", ACTIVE, "--state", "--output", "json").stdout)
    assert state == {"group": ACTIVE, "coordinator": offsets["coordinator"], "assignmentStrategy": "range", "state": "Stable", "members": 1}
    idle = groups_cmd(kcli, cluster, "--describe", "--group", IDLE, "--output", "json")
    assert idle.stderr == "" and json.loads(idle.stdout)["state"] == "Empty"


def test_describe_a_group_that_does_not_exist(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--describe", "--group", "no-such-group")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["Error: Consumer group 'no-such-group' does not exist."]


# -- --reset-offsets ----------------------------------------------------------------------------------


def reset_table(rows: list[list[object]]) -> list[str]:
    widths = [30, 30, 10, 15]
    return ["", row(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], widths, pad_last=True)] + [row(r, widths, pad_last=True) for r in rows]


def test_reset_is_a_dry_run_without_execute(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 0): 4, (ORDERS, 1): 5})
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest")
    assert result.returncode == 0, result
    assert result.stderr.splitlines() == [DRY_RUN_WARNING]
    assert result.lines == reset_table([[group, ORDERS, 0, 0], [group, ORDERS, 1, 0]])
    assert committed(cluster["bootstrap"], group, [(ORDERS, 0), (ORDERS, 1)]) == {(ORDERS, 0): 4, (ORDERS, 1): 5}
    explicit = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--dry-run")
    assert explicit.stderr == "" and explicit.lines == result.lines


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--to-earliest"], {0: 0, 1: 0, 2: 0}),
        (["--to-latest"], {0: 5, 1: 7, 2: 4}),
        (["--to-offset", "3"], {0: 3, 1: 3, 2: 3}),
        (["--shift-by", "-2"], {0: 2, 1: 0, 2: 1}),
        (["--to-current"], {0: 4, 1: 1, 2: 3}),
    ],
)
def test_reset_execute_each_target(kcli, cluster, args, expected):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 0): 4, (ORDERS, 1): 1, (ORDERS, 2): 3})
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", ORDERS, *args, "--execute")
    assert result.returncode == 0, result
    assert result.lines == reset_table([[group, ORDERS, p, o] for p, o in sorted(expected.items())])
    after = committed(cluster["bootstrap"], group, [(ORDERS, p) for p in range(3)])
    assert after == {(ORDERS, p): o for p, o in expected.items()}


def test_reset_clamps_to_the_log_and_warns(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 1): 1})
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", f"{ORDERS}:1,2", "--to-offset", "6", "--execute")
    assert result.returncode == 0, result
    assert result.lines == reset_table([[group, ORDERS, 1, 6], [group, ORDERS, 2, 4]])
    warning = f"WARN New offset (6) is higher than latest offset for topic partition {ORDERS}-2. Value will be set to 4 (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand)"
    assert [line.split("] ", 1)[1] for line in result.stderr.splitlines()] == [warning]
    assert committed(cluster["bootstrap"], group, [(ORDERS, 1), (ORDERS, 2)]) == {(ORDERS, 1): 6, (ORDERS, 2): 4}


def test_reset_shift_by_needs_a_committed_offset(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 0): 1})
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", f"{ORDERS}:0,1", "--shift-by", "1", "--dry-run")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"Error: Cannot shift offset for partition {ORDERS}-1 since there is no current committed offset"]


def test_reset_to_datetime(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(TIMED, 0): 0})
    utc = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", TIMED, "--to-datetime", "2024-01-01T00:00:02.500", "--execute")
    assert utc.returncode == 0, utc
    assert utc.lines == reset_table([[group, TIMED, 0, 3]])
    assert committed(cluster["bootstrap"], group, [(TIMED, 0)]) == {(TIMED, 0): 3}
    zoned = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", TIMED, "--to-datetime", "2024-01-01T02:00:01.000+02:00", "--dry-run")
    assert zoned.lines == reset_table([[group, TIMED, 0, 1]])
    future = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", TIMED, "--to-datetime", "2099-01-01T00:00:00.000Z", "--dry-run")
    assert future.lines == reset_table([[group, TIMED, 0, TIMED_COUNT]])
    assert f"Warn: Partition 0 from topic {TIMED} is empty. Falling back to latest known offset." in future.stderr.splitlines()
    bad = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", TIMED, "--to-datetime", "2024-01-01", "--dry-run")
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == ["Error: Error parsing timestamp. It does not contain a 'T' according to ISO8601 format"]


def test_reset_by_duration(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(RECENT, 0): 0})
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", RECENT, "--by-duration", "PT1H", "--execute")
    assert result.returncode == 0, result
    assert result.lines == reset_table([[group, RECENT, 0, RECENT_OLD]])
    assert committed(cluster["bootstrap"], group, [(RECENT, 0)]) == {(RECENT, 0): RECENT_OLD}


def test_export_then_from_file_round_trip(kcli, cluster, tmp_path):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 0): 1, (ORDERS, 1): 1, (EXTRA, 0): 0})
    exported = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--all-topics", "--shift-by", "2", "--export", "--dry-run")
    assert exported.returncode == 0, exported
    assert exported.stdout == f"{EXTRA},0,2\n{ORDERS},0,3\n{ORDERS},1,3\n\n"
    assert committed(cluster["bootstrap"], group, [(ORDERS, 0)]) == {(ORDERS, 0): 1}
    plan = tmp_path / "plan.csv"
    plan.write_text(exported.stdout)
    applied = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--from-file", str(plan), "--execute")
    assert applied.returncode == 0, applied
    assert applied.lines == reset_table([[group, EXTRA, 0, 2], [group, ORDERS, 0, 3], [group, ORDERS, 1, 3]])
    assert committed(cluster["bootstrap"], group, [(EXTRA, 0), (ORDERS, 0), (ORDERS, 1)]) == {(EXTRA, 0): 2, (ORDERS, 0): 3, (ORDERS, 1): 3}


def test_export_of_several_groups_names_each_group(kcli, cluster, tmp_path):
    first = simple_group(cluster["bootstrap"], {(ORDERS, 0): 2})
    second = simple_group(cluster["bootstrap"], {(ORDERS, 1): 5})
    exported = groups_cmd(kcli, cluster, "--reset-offsets", "--group", first, "--group", second, "--all-topics", "--to-earliest", "--export", "--dry-run")
    assert exported.returncode == 0, exported
    assert exported.lines == sorted([f"{first},{ORDERS},0,0", f"{second},{ORDERS},1,0"]) + [""]
    plan = tmp_path / "groups.csv"
    plan.write_text(exported.stdout)
    applied = groups_cmd(kcli, cluster, "--reset-offsets", "--group", first, "--group", second, "--from-file", str(plan), "--execute")
    assert applied.returncode == 0, applied
    assert committed(cluster["bootstrap"], first, [(ORDERS, 0)]) == {(ORDERS, 0): 0}
    assert committed(cluster["bootstrap"], second, [(ORDERS, 1)]) == {(ORDERS, 1): 0}


def test_reset_of_an_active_group_is_refused(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", ACTIVE, "--all-topics", "--to-earliest", "--execute")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"Error: Assignments can only be reset if the group '{ACTIVE}' is inactive, but the current state is Stable."
    ]
    assert committed(cluster["bootstrap"], ACTIVE, [(ORDERS, 0)]) == {(ORDERS, 0): 3}


def test_reset_of_an_unknown_topic(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 0): 1})
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--topic", "no-such-topic", "--to-earliest", "--dry-run")
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["Error: Executing consumer group command failed due to topic 'no-such-topic' does not exist"]


def test_reset_as_json(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 2): 1})
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", group, "--all-topics", "--to-latest", "--dry-run", "--output", "json")
    assert result.returncode == 0, result
    assert [json.loads(line) for line in result.lines] == [{"group": group, "topic": ORDERS, "partition": 2, "newOffset": 4}]


# -- --delete and --delete-offsets ------------------------------------------------------------------------


def test_delete_groups(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 0): 1})
    result = groups_cmd(kcli, cluster, "--delete", "--group", group)
    assert result.returncode == 0, result
    assert result.lines == [f"Deletion of requested consumer groups ('{group}') was successful."]
    assert committed(cluster["bootstrap"], group, [(ORDERS, 0)]) == {(ORDERS, 0): NO_OFFSET}
    gone = groups_cmd(kcli, cluster, "--describe", "--group", group)
    assert gone.returncode == 1 and gone.stderr.splitlines() == [f"Error: Consumer group '{group}' does not exist."]


def test_delete_of_an_active_group_fails_and_says_why(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--delete", "--group", ACTIVE)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "Error: Deletion of some consumer groups failed:",
        f"* Group '{ACTIVE}' could not be deleted due to: NON_EMPTY_GROUP: The group still has members.",
    ]
    assert result.stdout == ""


def test_delete_offsets_of_one_topic(kcli, cluster):
    group = simple_group(cluster["bootstrap"], {(ORDERS, 0): 1, (ORDERS, 1): 2, (EXTRA, 0): 1})
    result = groups_cmd(kcli, cluster, "--delete-offsets", "--group", group, "--topic", ORDERS)
    assert result.returncode == 0, result
    widths = [30, 15, 15]
    assert result.lines == [
        f"Request succeed for deleting offsets with topic {ORDERS} group {group}",
        "",
        row(["TOPIC", "PARTITION", "STATUS"], widths, pad_last=True),
    ] + [row([ORDERS, p, "Successful"], widths, pad_last=True) for p in range(3)]
    after = committed(cluster["bootstrap"], group, [(ORDERS, 0), (ORDERS, 1), (EXTRA, 0)])
    assert after == {(ORDERS, 0): NO_OFFSET, (ORDERS, 1): NO_OFFSET, (EXTRA, 0): 1}


def test_delete_offsets_of_a_subscribed_topic_fails_per_partition(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--delete-offsets", "--group", ACTIVE, "--topic", f"{ORDERS}:0")
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["Error: Encounter some partition level error, see the follow-up details:"]
    widths = [30, 15, 15]
    status = "Error: GROUP_SUBSCRIBED_TO_TOPIC: Offsets of a topic cannot be deleted while the group is subscribed to that topic."
    assert result.lines == ["", row(["TOPIC", "PARTITION", "STATUS"], widths, pad_last=True), row([ORDERS, 0, status], widths, pad_last=True)]
    assert committed(cluster["bootstrap"], ACTIVE, [(ORDERS, 0)]) == {(ORDERS, 0): 3}


# -- bad command lines: one line, exit code 2 --------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets"),
        (["--list", "--describe", "--group", "g"], "Option \"[group]\" can't be used with option \"[list]\""),
        (["--describe"], "Option [describe] takes one of these options: [all-groups], [group]"),
        (["--describe", "--group", "g", "--members", "--state"], "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
        (["--describe", "--group", "g", "--state", "Stable"], "Option [describe] does not take a value for [state]"),
        (["--describe", "--group", "g", "--all-groups"], "Option \"[group]\" can't be used with option \"[all-groups]\""),
        (["--list", "--members"], "Option(s) [members] are unavailable given other options on the command line"),
        (["--delete", "--group", "g", "--topic", "t"], "The consumer does not support topic-specific offset deletion from a consumer group."),
        (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options: [group], [topic]"),
        (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--execute", "--dry-run"], "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
        (["--reset-offsets", "--group", "g", "--all-topics", "--to-offset", "1", "--to-latest", "--dry-run"], "Option \"[to-offset]\" can't be used with option \"[to-latest]\""),
        (["--reset-offsets", "--group", "g", "--to-earliest", "--dry-run"], "One of the reset scopes should be defined: --all-topics, --topic."),
        (["--reset-offsets", "--all-topics", "--to-earliest", "--dry-run"], "Option [reset-offsets] takes one of these options: [all-groups], [group]"),
        (["--reset-offsets", "--group", "g", "--topic", "t:x", "--to-earliest", "--dry-run"], "Invalid partition 'x' specified in topic arg 't:x'"),
    ],
)
def test_bad_command_lines(kcli, cluster, args, message):
    result = groups_cmd(kcli, cluster, *args)
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [f"Error: {message}"]
    assert result.stdout == ""


def test_reset_needs_a_scenario(kcli, cluster):
    result = groups_cmd(kcli, cluster, "--reset-offsets", "--group", "g", "--all-topics", "--dry-run")
    assert result.returncode == 2
    assert result.stderr.startswith("Error: Option '[reset-offsets]' requires one of the following scenarios: [")
    assert len(result.stderr.splitlines()) == 1


def test_command_config_takes_java_client_properties(kcli, cluster, tmp_path):
    config = tmp_path / "admin.properties"
    config.write_text("client.id=ops-tool\nrequest.timeout.ms=20000\nno.such.setting=1\n")
    result = groups_cmd(kcli, cluster, "--list", "--command-config", str(config))
    assert result.returncode == 0, result
    assert ACTIVE in result.lines
    warning = "WARN The configuration 'no.such.setting' was supplied but isn't a known config. (org.apache.kafka.clients.admin.AdminClientConfig)"
    assert [line.split("] ", 1)[1] for line in result.stderr.splitlines()] == [warning]
    config.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    refused = groups_cmd(kcli, cluster, "--list", "--command-config", str(config))
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == ["Error: sasl.mechanism=GSSAPI is not supported: kcli's client speaks PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"]


def test_missing_bootstrap_server(kcli):
    result = kcli("consumer-groups", "--list")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ['Error: Missing required argument "[bootstrap-server]"']


# -- the librdkafka mock cluster ----------------------------------------------------------------------------


def test_mock_cluster_without_group_listing_gets_one_clear_line(kcli, mock_cluster):
    result = kcli("consumer-groups", "--bootstrap-server", mock_cluster.bootstrap, "--list")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"Error: Executing consumer group command failed due to broker {mock_cluster.bootstrap} does not support ListGroups"]


def test_group_offsets_against_the_mock_cluster(mock_cluster):
    """The offset calls the tool makes (OffsetCommit as an admin, OffsetFetch, ListOffsets) speak
    standard Kafka: confluent-kafka sees what kcli's client commits on the mock."""
    from kcli.client.admin import EARLIEST, LATEST
    from kcli.client.group_admin import GroupAdmin
    from kcli.client.group_admin import TopicPartition as TP
    from kcli.client.network_client import NetworkClient
    from kcli.client.sync import SyncRunner

    topic = f"mock-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": mock_cluster.bootstrap})
    for i in range(5):
        producer.produce(topic, value=b"m", partition=1)
    assert producer.flush(15) == 0
    group = f"mock-group-{uuid.uuid4().hex[:6]}"

    async def work():
        async with NetworkClient(mock_cluster.bootstrap) as cluster:
            admin = GroupAdmin(cluster, timeout=15)
            ends = await admin.list_offsets([TP(topic, 0), TP(topic, 1)], LATEST)
            starts = await admin.list_offsets([TP(topic, 1)], EARLIEST)
            codes = await admin.commit_offsets(group, {TP(topic, 1): 3})
            fetched = await admin.fetch_offsets(group, [TP(topic, 0), TP(topic, 1)])
            return ends, starts, codes, fetched

    with SyncRunner() as runner:
        ends, starts, codes, fetched = runner.run(work())
    assert {tp: r.offset for tp, r in ends.items()} == {TP(topic, 0): 0, TP(topic, 1): 5}
    assert starts[TP(topic, 1)].offset == 0
    assert codes == {TP(topic, 1): 0}
    assert {tp: v.offset for tp, v in fetched.items()} == {TP(topic, 1): 3}
    assert committed(mock_cluster.bootstrap, group, [(topic, 1)]) == {(topic, 1): 3}
