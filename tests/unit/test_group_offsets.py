"""Kafka 3.9's offset expiry rule (``GroupMetadata.removeExpiredOffsets``) and the metadata limit."""

from __future__ import annotations

from kcli.broker.groups.group import ClassicGroup, GroupState
from kcli.broker.groups.offsets import CommittedOffset, OffsetAndMetadata, expired_offsets, metadata_fits
from kcli.protocol import coordinator_records as cr

RETENTION = 1000


def _group(state=GroupState.EMPTY, protocol_type="consumer", state_time=None, **offsets) -> ClassicGroup:
    group = ClassicGroup("g", state=state, protocol_type=protocol_type, current_state_timestamp=state_time)
    for i, (topic, (commit_time, expire)) in enumerate(offsets.items()):
        group.offsets[(topic, 0)] = CommittedOffset(OffsetAndMetadata(1, None, "", commit_time, expire), i)
    return group


def test_empty_group_expires_from_when_it_became_empty():
    group = _group(state_time=5000, a=(0, None))
    assert expired_offsets(group, 5999, RETENTION) == []
    assert expired_offsets(group, 6000, RETENTION) == [("a", 0)]


def test_empty_group_without_a_state_time_uses_the_commit_time():
    group = _group(a=(100, None))
    assert expired_offsets(group, 1099, RETENTION) == []
    assert expired_offsets(group, 1100, RETENTION) == [("a", 0)]


def test_explicit_expire_time_wins():
    group = _group(state_time=0, a=(0, 50_000), b=(0, None))
    assert expired_offsets(group, 2000, RETENTION) == [("b", 0)]
    assert expired_offsets(group, 50_000, RETENTION) == [("a", 0), ("b", 0)]


def test_stable_consumer_group_expires_only_unsubscribed_topics_by_commit_time():
    group = _group(state=GroupState.STABLE, state_time=0, subscribed=(0, None), old=(0, None), fresh=(900, None))
    group.subscribed_topics = {"subscribed"}
    assert expired_offsets(group, 1500, RETENTION) == [("old", 0)]


def test_stable_group_with_unknown_subscriptions_and_rebalancing_groups_keep_everything():
    stable = _group(state=GroupState.STABLE, a=(0, None))
    stable.subscribed_topics = None
    preparing = _group(state=GroupState.PREPARING_REBALANCE, a=(0, None))
    assert expired_offsets(stable, 10**9, RETENTION) == []
    assert expired_offsets(preparing, 10**9, RETENTION) == []


def test_offsets_only_group_expires_by_commit_time():
    group = _group(protocol_type=None, state_time=10**9, a=(0, None), b=(600, None))
    assert expired_offsets(group, 1000, RETENTION) == [("a", 0)]


def test_metadata_limit_counts_utf16_units_like_java():
    assert metadata_fits(None, 0)
    assert metadata_fits("abcd", 4) and not metadata_fits("abcde", 4)
    assert metadata_fits("\U0001F600", 2) and not metadata_fits("\U0001F600", 1)


def test_subscribed_topics_come_from_the_members_consumer_subscriptions():
    from kcli.broker.groups.member import ClassicGroupMember

    group = ClassicGroup("g")
    for i, topics in enumerate((["a"], ["b", "c"])):
        metadata = cr.encode_consumer_protocol_subscription({"Topics": topics, "UserData": None}, version=0)
        group.add(ClassicGroupMember(f"m{i}", None, "c", "/h", 1, 1, "consumer", [("range", metadata)]))
    group.protocol_name = "range"
    assert group.compute_subscribed_topics() == {"a", "b", "c"}
    group.add(ClassicGroupMember("m9", None, "c", "/h", 1, 1, "consumer", [("range", b"\x00")]))
    assert group.compute_subscribed_topics() is None  # undecodable: unknown, so nothing is deletable
