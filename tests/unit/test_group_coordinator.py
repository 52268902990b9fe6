"""The classic group coordinator's state machine, errors and timers, over real offsets-partition logs.

Timers run on a real event loop with short timeouts (tens of milliseconds); tests wait for the
effect of a timer with a bounded poll, never for a fixed time.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from kcli.broker.groups import group_metadata_manager
from kcli.broker.groups.coordinator import GroupConfig, GroupCoordinator
from kcli.broker.groups.group import GroupState
from kcli.broker.groups.offsets import OffsetAndMetadata
from kcli.broker.handlers._completion import Completion
from kcli.broker.replica.delayed_produce import PartitionResponse
from kcli.errors import ErrorCode
from kcli.protocol import coordinator_records as cr
from kcli.storage.compression import CompressionType
from kcli.storage.log import Log
from kcli.storage.records import build_batch, iter_batches

pytestmark = pytest.mark.timeout(60)

PARTITIONS = 4
CONFIG = GroupConfig(
    min_session_timeout_ms=10,
    max_session_timeout_ms=60000,
    initial_rebalance_delay_ms=0,
    offsets_partitions=PARTITIONS,
    offset_metadata_max_bytes=16,
    offsets_retention_check_interval_ms=2**62,
)


class LogWriter(group_metadata_manager.GroupMetadataManager):
    """``GroupMetadataManager`` over real logs in a directory instead of the broker's partitions."""

    def __init__(self, directory, partitions=range(PARTITIONS), compression=CompressionType.NONE) -> None:
        super().__init__(None, compression)
        self.logs = {p: Log.open(directory / f"__consumer_offsets-{p}") for p in partitions}
        self.fail_with: ErrorCode | None = None

    def log(self, partition):
        return self.logs.get(partition)

    def append_batch(self, partition, batch, appended):
        if self.fail_with is not None:
            appended(PartitionResponse(self.fail_with))
        else:
            appended(PartitionResponse(base_offset=self.logs[partition].append(batch, origin="coordinator").first_offset))

    def records(self, partition):
        return [(r.key, r.value) for batch in group_metadata_manager.read_batches(self.logs[partition], 1 << 20) for r in batch.records()]


def commit(coordinator, *args):
    """``commit_offsets``'s answer: the writer here answers every append within its call."""
    done = Completion()
    coordinator.commit_offsets(*args, done)
    return done.result()


def run(scenario, tmp_path, config=CONFIG, writer=None):
    async def main():
        w = writer or LogWriter(tmp_path)
        coordinator = GroupCoordinator(config, w)
        coordinator.startup(range(PARTITIONS))
        try:
            return await scenario(coordinator, w)
        finally:
            await coordinator.shutdown()

    return asyncio.run(main())


def subscription(*topics):
    return cr.encode_consumer_protocol_subscription({"Topics": list(topics), "UserData": None, "OwnedPartitions": []}, version=1)


async def join(c, group="g", member="", *, instance=None, protocols=None, session=10000, rebalance=5000, protocol_type="consumer", known=True, client="c"):
    return await c.join_group(
        group, member, instance,
        require_known_member_id=known, support_skipping_assignment=True, client_id=client, client_host="/127.0.0.1",
        rebalance_timeout_ms=rebalance, session_timeout_ms=session, protocol_type=protocol_type,
        protocols=[("range", subscription("t"))] if protocols is None else protocols,
    )


async def join_new(c, group="g", **kwargs):
    """The v4+ two-step join: MEMBER_ID_REQUIRED, then a join with the id handed out."""
    first = await join(c, group, **kwargs)
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED and first.member_id.startswith("c-")
    return await join(c, group, first.member_id, **kwargs)


async def eventually(predicate, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


def test_single_member_join_sync_and_stored_group(tmp_path):
    async def scenario(c, w):
        joined = await join_new(c)
        assert joined.error is ErrorCode.NONE
        assert (joined.generation_id, joined.protocol_type, joined.protocol_name, joined.leader) == (1, "consumer", "range", joined.member_id)
        assert joined.members == ((joined.member_id, None, subscription("t")),)
        synced = await c.sync_group("g", 1, joined.member_id, None, "consumer", "range", {joined.member_id: b"assigned"})
        assert synced == type(synced)(ErrorCode.NONE, "consumer", "range", b"assigned")
        summary = (c.describe_group("g"))[1]
        assert summary.state == "Stable" and summary.members[0].assignment == b"assigned"
        key, value = w.records(c.partition_for("g"))[-1]
        version, stored = cr.decode_group_metadata_value(value)
        assert key == cr.encode_group_metadata_key("g")
        assert (version, stored["Generation"], stored["Leader"], stored["Members"][0]["Assignment"]) == (3, 1, joined.member_id, b"assigned")

    run(scenario, tmp_path)


def test_concurrent_joins_end_in_one_generation_with_one_leader(tmp_path):
    config = dataclasses.replace(CONFIG, initial_rebalance_delay_ms=100)

    async def scenario(c, w):
        results = await asyncio.gather(*(join(c, known=False, client=f"c{i}") for i in range(3)))
        assert {r.error for r in results} == {ErrorCode.NONE}
        assert {r.generation_id for r in results} == {1}
        assert len({r.member_id for r in results}) == 3
        leaders = [r for r in results if r.member_id == r.leader]
        assert len(leaders) == 1 and {r.leader for r in results} == {leaders[0].member_id}
        assert sorted(m[0] for m in leaders[0].members) == sorted(r.member_id for r in results)
        assert all(r.members == () for r in results if r is not leaders[0])
        syncs = await asyncio.gather(*(
            c.sync_group("g", 1, r.member_id, None, None, None, {m.member_id: m.member_id.encode() for m in results} if r is leaders[0] else {})
            for r in results
        ))
        assert [s.assignment for s in syncs] == [r.member_id.encode() for r in results]

    run(scenario, tmp_path, config)


def test_join_errors(tmp_path):
    config = dataclasses.replace(CONFIG, max_size=1)

    async def scenario(c, w):
        assert (await join(c, session=5)).error is ErrorCode.INVALID_SESSION_TIMEOUT
        assert (await join(c, session=60001)).error is ErrorCode.INVALID_SESSION_TIMEOUT
        assert (await join(c, "")).error is ErrorCode.INVALID_GROUP_ID
        assert (await join(c, "new-group", "someone")).error is ErrorCode.UNKNOWN_MEMBER_ID
        assert (await join(c, protocols=[])).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        first = await join_new(c)
        assert first.error is ErrorCode.NONE
        other_type = await join(c, "g2", protocol_type="connect", known=False)
        assert other_type.error is ErrorCode.NONE
        full = await join(c, "g2", known=False)  # checked before the protocols: the group is full
        assert (full.error, full.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")

    run(scenario, tmp_path, config)


def test_join_with_another_protocol_type_or_no_common_protocol(tmp_path):
    async def scenario(c, w):
        first = await join_new(c)
        other_type = await join(c, protocol_type="connect", known=False)
        assert other_type.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        no_common = await join(c, protocols=[("roundrobin", b"")], known=False)
        assert no_common.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        rejoin_without_common = await join(c, "g", first.member_id, protocols=[("roundrobin", b"")])
        assert rejoin_without_common.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL

    run(scenario, tmp_path)


def test_protocol_is_chosen_by_the_members_votes(tmp_path):
    config = dataclasses.replace(CONFIG, initial_rebalance_delay_ms=100)

    async def scenario(c, w):
        results = await asyncio.gather(
            join(c, protocols=[("range", b"1"), ("roundrobin", b"1")], known=False),
            join(c, protocols=[("roundrobin", b"2"), ("range", b"2")], known=False),
            join(c, protocols=[("roundrobin", b"3"), ("range", b"3"), ("sticky", b"3")], known=False),
        )
        assert {r.protocol_name for r in results} == {"roundrobin"}
        leader = next(r for r in results if r.member_id == r.leader)
        assert sorted(m[2] for m in leader.members) == [b"1", b"2", b"3"]

    run(scenario, tmp_path, config)


def test_heartbeat_errors_and_rebalance_signal(tmp_path):
    async def scenario(c, w):
        first = await join_new(c)
        await c.sync_group("g", 1, first.member_id, None, None, None, {})
        assert c.heartbeat("g", first.member_id, None, 1) is ErrorCode.NONE
        assert c.heartbeat("g", first.member_id, None, 0) is ErrorCode.ILLEGAL_GENERATION
        assert c.heartbeat("g", "nobody", None, 1) is ErrorCode.UNKNOWN_MEMBER_ID
        assert c.heartbeat("unknown-group", "x", None, 1) is ErrorCode.UNKNOWN_MEMBER_ID
        second = asyncio.ensure_future(join_new(c))
        await eventually(lambda: c._groups["g"].is_(GroupState.PREPARING_REBALANCE))
        assert c.heartbeat("g", first.member_id, None, 1) is ErrorCode.REBALANCE_IN_PROGRESS
        assert (await c.sync_group("g", 1, first.member_id, None, None, None, {})).error is ErrorCode.REBALANCE_IN_PROGRESS
        rejoined = await join(c, "g", first.member_id)
        assert (await second).generation_id == rejoined.generation_id == 2

    run(scenario, tmp_path)


def test_sync_errors(tmp_path):
    async def scenario(c, w):
        joined = await join_new(c)
        member = joined.member_id
        assert (await c.sync_group("g", 2, member, None, None, None, {})).error is ErrorCode.ILLEGAL_GENERATION
        assert (await c.sync_group("g", 1, "nobody", None, None, None, {})).error is ErrorCode.UNKNOWN_MEMBER_ID
        assert (await c.sync_group("g", 1, member, None, "connect", None, {})).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert (await c.sync_group("g", 1, member, None, None, "roundrobin", {})).error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert (await c.sync_group("other", 1, member, None, None, None, {})).error is ErrorCode.UNKNOWN_MEMBER_ID
        assert (await c.sync_group("g", 1, member, None, "consumer", "range", {})).error is ErrorCode.NONE

    run(scenario, tmp_path)


def test_member_that_stops_heartbeating_is_removed_after_its_session_timeout(tmp_path):
    async def scenario(c, w):
        first = await join_new(c, session=60)
        await c.sync_group("g", 1, first.member_id, None, None, None, {})
        group = c._groups["g"]
        await eventually(lambda: group.is_(GroupState.EMPTY))
        assert group.generation_id == 2 and not group.members
        assert c.heartbeat("g", first.member_id, None, 1) is ErrorCode.UNKNOWN_MEMBER_ID

    run(scenario, tmp_path)


def test_heartbeats_keep_a_member_past_its_session_timeout(tmp_path):
    async def scenario(c, w):
        first = await join_new(c, session=150)
        await c.sync_group("g", 1, first.member_id, None, None, None, {})
        deadline = asyncio.get_running_loop().time() + 0.6  # four session timeouts
        while asyncio.get_running_loop().time() < deadline:
            assert c.heartbeat("g", first.member_id, None, 1) is ErrorCode.NONE
            await asyncio.sleep(0.03)
        assert c._groups["g"].is_(GroupState.STABLE)

    run(scenario, tmp_path)


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout(tmp_path):
    async def scenario(c, w):
        first = await join_new(c, rebalance=100)
        await c.sync_group("g", 1, first.member_id, None, None, None, {})
        second = await join_new(c, rebalance=100)  # the first never rejoins: the timeout ends the wait
        assert (second.error, second.generation_id, second.leader) == (ErrorCode.NONE, 2, second.member_id)
        assert list(c._groups["g"].members) == [second.member_id]

    run(scenario, tmp_path)


def test_member_that_does_not_sync_is_removed_and_the_group_rebalances(tmp_path):
    config = dataclasses.replace(CONFIG, initial_rebalance_delay_ms=50)

    async def scenario(c, w):
        a, b = await asyncio.gather(join(c, known=False, rebalance=150), join(c, known=False, rebalance=150))
        leader, follower = (a, b) if a.member_id == a.leader else (b, a)
        synced = await c.sync_group("g", 1, leader.member_id, None, None, None, {})
        assert synced.error is ErrorCode.NONE
        group = c._groups["g"]
        await eventually(lambda: not group.has(follower.member_id))
        assert group.state is GroupState.PREPARING_REBALANCE

    run(scenario, tmp_path, config)


def test_pending_member_id_expires_after_the_session_timeout(tmp_path):
    async def scenario(c, w):
        first = await join(c, session=50)
        assert first.error is ErrorCode.MEMBER_ID_REQUIRED
        group = c._groups["g"]
        assert group.is_pending_member(first.member_id)
        await eventually(lambda: not group.is_pending_member(first.member_id))
        assert (await join(c, "g", first.member_id)).error is ErrorCode.UNKNOWN_MEMBER_ID

    run(scenario, tmp_path)


def test_static_member_rejoins_without_rebalance_and_fences_its_old_id(tmp_path):
    async def scenario(c, w):
        first = await join(c, instance="i-1", client="c")
        assert first.error is ErrorCode.NONE and first.member_id.startswith("i-1-")
        await c.sync_group("g", 1, first.member_id, "i-1", None, None, {first.member_id: b"p0"})
        again = await join(c, instance="i-1")
        assert again.error is ErrorCode.NONE and again.member_id != first.member_id
        assert (again.generation_id, again.skip_assignment, again.leader) == (1, True, again.member_id)
        group = c._groups["g"]
        assert group.state is GroupState.STABLE and group.generation_id == 1
        assert c.heartbeat("g", first.member_id, "i-1", 1) is ErrorCode.FENCED_INSTANCE_ID
        synced = await c.sync_group("g", 1, again.member_id, "i-1", None, None, {})
        assert synced.assignment == b"p0"
        stored = cr.decode_group_metadata_value(w.records(c.partition_for("g"))[-1][1])[1]
        assert [m["MemberId"] for m in stored["Members"]] == [again.member_id]
        changed = await join(c, instance="i-1", protocols=[("roundrobin", b""), ("range", subscription("t"))])
        assert changed.generation_id == 2 and changed.protocol_name == "roundrobin"

    run(scenario, tmp_path)


def test_leave_group_rebalances_the_rest(tmp_path):
    config = dataclasses.replace(CONFIG, initial_rebalance_delay_ms=50)

    async def scenario(c, w):
        a, b = await asyncio.gather(join(c, known=False), join(c, known=False))
        for r in (a, b):
            asyncio.ensure_future(c.sync_group("g", 1, r.member_id, None, None, None, {}))
        await eventually(lambda: c._groups["g"].is_(GroupState.STABLE))
        error, members = c.leave_group("g", [(a.member_id, None, "bye"), ("nobody", None, None), ("", "no-such-instance", None)])
        assert error is ErrorCode.NONE
        assert [e for _, _, e in members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID]
        assert c._groups["g"].state is GroupState.PREPARING_REBALANCE
        rejoined = await join(c, "g", b.member_id)
        assert (rejoined.generation_id, rejoined.leader, len(rejoined.members)) == (2, b.member_id, 1)
        assert c.leave_group("unknown", [("x", None, None)]) == (ErrorCode.NONE, [("x", None, ErrorCode.UNKNOWN_MEMBER_ID)])

    run(scenario, tmp_path, config)


def test_offset_commits_and_fetches(tmp_path):
    async def scenario(c, w):
        value = OffsetAndMetadata(42, 3, "meta", c.now_ms())
        big = OffsetAndMetadata(1, None, "x" * 17, c.now_ms())
        result = commit(c, "simple", "", None, -1, {("t", 0): value, ("t", 1): big})
        assert result == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}
        error, fetched = c.fetch_offsets("simple", False, [("t", 0), ("t", 1), ("u", 0)])
        assert error is ErrorCode.NONE
        assert [(f.topic, f.partition, f.offset, f.leader_epoch, f.metadata) for f in fetched] == [
            ("t", 0, 42, 3, "meta"), ("t", 1, -1, None, ""), ("u", 0, -1, None, ""),
        ]
        assert [(f.topic, f.partition) for f in (c.fetch_offsets("simple", False, None))[1]] == [("t", 0)]
        assert (c.fetch_offsets("nobody", False, None)) == (ErrorCode.NONE, [])
        assert (commit(c, "gone", "m", None, 3, {("t", 0): value})) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}

        member = (await join_new(c, "live")).member_id
        assert (commit(c, "live", member, None, 1, {("t", 0): value}))[("t", 0)] is ErrorCode.REBALANCE_IN_PROGRESS
        await c.sync_group("live", 1, member, None, None, None, {})
        assert (commit(c, "live", member, None, 1, {("t", 0): value}))[("t", 0)] is ErrorCode.NONE
        assert (commit(c, "live", member, None, 0, {("t", 0): value}))[("t", 0)] is ErrorCode.ILLEGAL_GENERATION
        assert (commit(c, "live", "", None, -1, {("t", 0): value}))[("t", 0)] is ErrorCode.UNKNOWN_MEMBER_ID
        assert (commit(c, "live", "other", None, 1, {("t", 0): value}))[("t", 0)] is ErrorCode.UNKNOWN_MEMBER_ID
        key, stored = w.records(c.partition_for("live"))[-1]
        assert cr.decode_offsets_key(key)[2] == {"Group": "live", "Topic": "t", "Partition": 0}
        assert cr.decode_offset_commit_value(stored)[1]["Offset"] == 42

    run(scenario, tmp_path)


def test_failed_append_answers_the_converted_error_and_keeps_the_old_offset(tmp_path):
    async def scenario(c, w):
        commit(c, "g", "", None, -1, {("t", 0): OffsetAndMetadata(1, None, "", 0)})
        w.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
        result = commit(c, "g", "", None, -1, {("t", 0): OffsetAndMetadata(2, None, "", 0)})
        assert result == {("t", 0): ErrorCode.NOT_COORDINATOR}
        w.fail_with = ErrorCode.RECORD_LIST_TOO_LARGE
        result = commit(c, "g", "", None, -1, {("t", 0): OffsetAndMetadata(3, None, "", 0)})
        assert result == {("t", 0): ErrorCode.INVALID_COMMIT_OFFSET_SIZE}
        assert (c.fetch_offsets("g", False, [("t", 0)]))[1][0].offset == 1

    run(scenario, tmp_path)


def test_delete_groups(tmp_path):
    async def scenario(c, w):
        commit(c, "empty", "", None, -1, {("t", 0): OffsetAndMetadata(1, None, "", 0)})
        member = (await join_new(c, "busy")).member_id
        results = c.delete_groups(["empty", "busy", "missing", "empty"])
        assert results == {"empty": ErrorCode.NONE, "busy": ErrorCode.NON_EMPTY_GROUP, "missing": ErrorCode.GROUP_ID_NOT_FOUND}
        assert (c.fetch_offsets("empty", False, [("t", 0)]))[1][0].offset == -1
        assert w.records(c.partition_for("empty"))[-1] == (cr.encode_offset_commit_key("empty", "t", 0), None)
        assert (c.describe_group("empty")) == (ErrorCode.NONE, None)
        c.leave_group("busy", [(member, None, None)])
        assert (c.delete_groups(["busy"])) == {"busy": ErrorCode.NONE}
        # A group that had a generation also gets a metadata tombstone.
        assert w.records(c.partition_for("busy"))[-1] == (cr.encode_group_metadata_key("busy"), None)

    run(scenario, tmp_path)


def test_offset_delete_refuses_subscribed_topics_of_an_active_consumer_group(tmp_path):
    async def scenario(c, w):
        member = (await join_new(c, protocols=[("range", subscription("t"))])).member_id
        await c.sync_group("g", 1, member, None, None, None, {})
        commits = {("t", 0): OffsetAndMetadata(1, None, "", 0), ("u", 0): OffsetAndMetadata(2, None, "", 0)}
        commit(c, "g", member, None, 1, commits)
        error, results = c.delete_offsets("g", [("t", 0), ("u", 0)])
        assert (error, results) == (ErrorCode.NONE, {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): ErrorCode.NONE})
        assert [f.offset for f in (c.fetch_offsets("g", False, [("t", 0), ("u", 0)]))[1]] == [1, -1]
        assert c.delete_offsets("missing", [("t", 0)]) == (ErrorCode.GROUP_ID_NOT_FOUND, {})

    run(scenario, tmp_path)


def test_list_and_describe(tmp_path):
    async def scenario(c, w):
        member = (await join_new(c, "a")).member_id
        await c.sync_group("a", 1, member, None, None, None, {member: b"z"})
        commit(c, "b", "", None, -1, {("t", 0): OffsetAndMetadata(1, None, "", 0)})
        error, groups = c.list_groups()
        assert error is ErrorCode.NONE
        assert sorted((g.group_id, g.protocol_type, g.state, g.group_type) for g in groups) == [
            ("a", "consumer", "Stable", "classic"), ("b", "", "Empty", "classic"),
        ]
        assert [g.group_id for g in c.list_groups(states=["stable"])[1]] == ["a"]
        assert c.list_groups(types=["consumer"])[1] == []
        assert len(c.list_groups(types=["Classic"])[1]) == 2
        error, summary = c.describe_group("a")
        assert (summary.state, summary.protocol_type, summary.protocol) == ("Stable", "consumer", "range")
        assert (summary.members[0].client_host, summary.members[0].metadata, summary.members[0].assignment) == ("/127.0.0.1", subscription("t"), b"z")
        assert (c.describe_group("")) == (ErrorCode.NONE, None)  # the empty id is valid here, and unknown

    run(scenario, tmp_path)


def test_requests_for_partitions_not_led_or_loading(tmp_path):
    async def main():
        writer = LogWriter(tmp_path)
        group = "g"
        coordinator = GroupCoordinator(CONFIG, writer)
        partition = coordinator.partition_for(group)
        writer.append(partition, [group_metadata_manager.offset_commit_record(group, ("t", 0), OffsetAndMetadata(7, None, "", 0), 0)], lambda response: None)
        coordinator.startup([p for p in range(PARTITIONS) if p != partition])
        try:
            assert (await join(coordinator, group)).error is ErrorCode.NOT_COORDINATOR
            assert (coordinator.fetch_offsets(group, False, None))[0] is ErrorCode.NOT_COORDINATOR
            coordinator.on_election(partition)  # a non-empty log: loaded off the event loop
            assert (await join(coordinator, group)).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            assert coordinator.heartbeat(group, "m", None, 1) is ErrorCode.NONE
            assert (await coordinator.sync_group(group, 1, "m", None, None, None, {})).error is ErrorCode.REBALANCE_IN_PROGRESS
            assert coordinator.list_groups()[0] is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            await eventually(lambda: coordinator.is_loaded(partition))
            assert (coordinator.fetch_offsets(group, False, [("t", 0)]))[1][0].offset == 7
        finally:
            await coordinator.shutdown()
        assert (await join(coordinator, group)).error is ErrorCode.COORDINATOR_NOT_AVAILABLE

    asyncio.run(main())


def test_groups_and_offsets_survive_a_reload(tmp_path):
    writer = LogWriter(tmp_path)
    state = {}

    async def first(c, w):
        member = (await join_new(c, session=60000)).member_id
        await c.sync_group("g", 1, member, None, None, None, {member: b"a"})
        commit(c, "g", member, None, 1, {("t", 0): OffsetAndMetadata(11, 2, "m", c.now_ms())})
        state["member"] = member

    async def second(c, w):
        await eventually(lambda: c.is_loaded(c.partition_for("g")))
        group = c._groups["g"]
        assert (group.state, group.generation_id, list(group.members)) == (GroupState.STABLE, 1, [state["member"]])
        assert c.heartbeat("g", state["member"], None, 1) is ErrorCode.NONE
        assert (await c.sync_group("g", 1, state["member"], None, None, None, {})).assignment == b"a"
        fetched = (c.fetch_offsets("g", False, None))[1]
        assert [(f.offset, f.leader_epoch, f.metadata) for f in fetched] == [(11, 2, "m")]

    run(first, tmp_path, writer=writer)
    reopened = LogWriter(tmp_path)  # the same files, opened again
    run(second, tmp_path, writer=reopened)


def test_unloading_answers_waiting_joins_with_not_coordinator(tmp_path):
    config = dataclasses.replace(CONFIG, initial_rebalance_delay_ms=60000)

    async def scenario(c, w):
        waiting = asyncio.ensure_future(join(c, known=False))
        await eventually(lambda: "g" in c._groups and c._groups["g"].num_awaiting_join == 1)
        c.on_resignation(c.partition_for("g"))
        assert (await waiting).error is ErrorCode.NOT_COORDINATOR
        assert (await join(c, known=False)).error is ErrorCode.NOT_COORDINATOR

    run(scenario, tmp_path, config)


def test_expiry_removes_offsets_and_the_empty_group(tmp_path):
    clock = [1_000_000]
    config = dataclasses.replace(CONFIG, offsets_retention_ms=1000)

    async def main():
        writer = LogWriter(tmp_path)
        c = GroupCoordinator(config, writer, time_ms=lambda: clock[0])
        c.startup(range(PARTITIONS))
        try:
            commit(c, "g", "", None, -1, {("t", 0): OffsetAndMetadata(5, None, "", clock[0])})
            clock[0] += 999
            assert c.expire_offsets() == 0
            clock[0] += 1
            assert c.expire_offsets() == 1
            assert "g" not in c._groups
            assert writer.records(c.partition_for("g"))[-1] == (cr.encode_offset_commit_key("g", "t", 0), None)
        finally:
            await c.shutdown()

    asyncio.run(main())


def test_commits_are_stored_as_the_batch_of_their_records(tmp_path):
    """What a commit writes is byte for byte ``build_batch`` of ``offset_commit_record``s (the
    offsets topic's codec, CreateTime, no producer), with the log's offsets, and each committed
    offset remembers the base offset of its batch."""
    now = 1_700_000_000_000
    writer = LogWriter(tmp_path, compression=CompressionType.LZ4)

    async def main():
        c = GroupCoordinator(CONFIG, writer, time_ms=lambda: now)
        c.startup(range(PARTITIONS))
        try:
            partition = c.partition_for("g")
            for round_ in range(3):
                offsets = {("t", p): OffsetAndMetadata(100 * round_ + p, p % 2 or None, "m" * p, now - p) for p in range(8)}
                result = commit(c, "g", "", None, -1, offsets)
                assert result == dict.fromkeys(offsets, ErrorCode.NONE)
                log = writer.logs[partition]
                data = b"".join(s.log.path.read_bytes() for s in log.segments)
                batch = list(iter_batches(data))[-1]
                expected = bytearray(build_batch([group_metadata_manager.offset_commit_record("g", tp, v, now) for tp, v in offsets.items()], compression=CompressionType.LZ4))
                expected[:8] = (8 * round_).to_bytes(8, "big")  # base offset and leader epoch (0): outside the CRC
                expected[12:16] = bytes(4)
                assert bytes(batch.buffer[batch.position : batch.position + batch.size_in_bytes]) == bytes(expected)
                assert {tp: committed.record_offset for tp, committed in c._groups["g"].offsets.items()} == dict.fromkeys(offsets, 8 * round_)
                assert log.log_end_offset == 8 * (round_ + 1)
        finally:
            await c.shutdown()

    asyncio.run(main())


def test_metadata_is_measured_in_utf16_units_and_only_fitting_commits_are_stored(tmp_path):
    async def scenario(c, w):
        offsets = {
            ("t", 0): OffsetAndMetadata(1, None, "x" * 16, 0),  # 16 units: fits
            ("t", 1): OffsetAndMetadata(2, None, "x" * 17, 0),
            ("t", 2): OffsetAndMetadata(3, None, "\U0001d11e" * 8, 0),  # 8 characters, 16 units: fits
            ("t", 3): OffsetAndMetadata(4, None, "\U0001d11e" * 9, 0),  # 9 characters, 18 units
            ("t", 4): OffsetAndMetadata(5, None, "é" * 16, 0),  # 16 units, 32 UTF-8 bytes: fits
        }
        result = commit(c, "g", "", None, -1, offsets)
        assert result == {
            ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE, ("t", 2): ErrorCode.NONE,
            ("t", 3): ErrorCode.OFFSET_METADATA_TOO_LARGE, ("t", 4): ErrorCode.NONE,
        }
        assert list(result) == list(offsets)
        stored = [cr.decode_offsets_key(k)[2]["Partition"] for k, _ in w.records(c.partition_for("g"))]
        assert stored == [0, 2, 4]
        fetched = (c.fetch_offsets("g", False, None))[1]
        assert [(f.partition, f.offset) for f in fetched] == [(0, 1), (2, 3), (4, 5)]
        only_large = {("t", 1): OffsetAndMetadata(9, None, "y" * 40, 0)}
        assert commit(c, "g", "", None, -1, only_large) == {("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}
        # Fewer characters than the limit, more UTF-16 units than it.
        only_wide = {("t", 3): OffsetAndMetadata(9, None, "\U0001d11e" * 9, 0)}
        assert commit(c, "g", "", None, -1, only_wide) == {("t", 3): ErrorCode.OFFSET_METADATA_TOO_LARGE}
        assert len(w.records(c.partition_for("g"))) == 3
        w.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
        failed = commit(c, "g", "", None, -1, {("t", 0): OffsetAndMetadata(7, None, "", 0), ("t", 1): OffsetAndMetadata(7, None, "z" * 17, 0)})
        assert failed == {("t", 0): ErrorCode.NOT_COORDINATOR, ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}

    run(scenario, tmp_path)
