"""The consumer's assignors against the expectations of Kafka 3.9's own assignor tests
(RangeAssignorTest, RoundRobinAssignorTest, AbstractStickyAssignorTest,
CooperativeStickyAssignorTest), and the consumer protocol's formats against their schemas."""

from __future__ import annotations

import random
import struct

import pytest

from kcli.client.assignors import (
    COOPERATIVE,
    EAGER,
    Assignment,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    Subscription,
    common_protocol,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kcli.client.fetcher import TopicPartition

NO_GENERATION = struct.pack(">i", -1)  # CooperativeStickyAssignor's user data before any assignment


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def sub(topics: list[str], instance: str | None = None) -> Subscription:
    """AbstractStickyAssignorTest.subscription: no user data, no owned partitions, no generation."""
    return Subscription(list(topics), None, [], -1, None, instance)


def sub_v2(topics: list[str], owned: list[TopicPartition], generation: int) -> Subscription:
    """CooperativeStickyAssignorTest.buildSubscriptionV2Above with a fresh assignor's user data."""
    return Subscription(list(topics), NO_GENERATION, list(owned), generation)


def sets(assignment: dict[str, list[TopicPartition]]) -> dict[str, set[TopicPartition]]:
    return {m: set(v) for m, v in assignment.items()}


# -- the consumer protocol -------------------------------------------------------------------------


def test_subscription_v3_layout():
    data = encode_subscription(Subscription(["b", "a"], b"\x00\x00\x00\x07", [tp("a", 1), tp("a", 0)], 7, "r1"), 3)
    expected = (
        b"\x00\x03"  # version
        + b"\x00\x00\x00\x02" + b"\x00\x01a" + b"\x00\x01b"  # topics, sorted
        + b"\x00\x00\x00\x04" + b"\x00\x00\x00\x07"  # user data
        + b"\x00\x00\x00\x01" + b"\x00\x01a" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x01"  # owned, sorted
        + b"\x00\x00\x00\x07"  # generation
        + b"\x00\x02r1"  # rack
    )
    assert data == expected
    decoded = decode_subscription(data)
    assert decoded.topics == ["a", "b"]
    assert decoded.owned_partitions == [tp("a", 0), tp("a", 1)]
    assert decoded.generation_id == 7 and decoded.rack_id == "r1" and decoded.user_data == b"\x00\x00\x00\x07"


def test_subscription_v0_and_newer_versions_are_read():
    v0 = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"
    s = decode_subscription(v0)
    assert s.topics == ["t"] and s.user_data is None and s.owned_partitions == [] and s.generation_id == -1
    # A version this client does not know is read as the newest one it knows; extra bytes are ignored.
    future = b"\x00\x09" + v0[2:] + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x03" + b"\xff\xff" + b"extra"
    s = decode_subscription(future)
    assert s.topics == ["t"] and s.generation_id == 3 and s.rack_id is None


def test_assignment_round_trip_and_layout():
    data = encode_assignment(Assignment([tp("t", 2), tp("s", 0), tp("t", 0)]), 0)
    assert data == (
        b"\x00\x00" + b"\x00\x00\x00\x02"
        + b"\x00\x01s" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x00"
        + b"\x00\x01t" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x02"
        + b"\xff\xff\xff\xff"
    )
    assert decode_assignment(data).partitions == [tp("s", 0), tp("t", 0), tp("t", 2)]
    assert decode_assignment(b"").partitions == []  # a member the leader left out


def test_truncated_subscription_is_an_error():
    from kcli.errors import KafkaError

    with pytest.raises(KafkaError):
        decode_subscription(b"\x00\x00\x00\x00\x00\x05\x00\x01t")


def test_rebalance_protocol_is_cooperative_only_when_every_assignor_supports_it():
    assert common_protocol([RangeAssignor(), CooperativeStickyAssignor()]) == EAGER
    assert common_protocol([CooperativeStickyAssignor()]) == COOPERATIVE


# -- range (RangeAssignorTest) ---------------------------------------------------------------------


def test_range_one_consumer_no_or_nonexistent_topic():
    assert RangeAssignor().assign({}, {"consumer1": sub([])}) == {"consumer1": []}
    assert RangeAssignor().assign({}, {"consumer1": sub(["topic1"])}) == {"consumer1": []}


def test_range_only_subscribed_topics():
    got = RangeAssignor().assign({"topic1": 3, "other": 3}, {"consumer1": sub(["topic1"])})
    assert got == {"consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)]}


def test_range_two_consumers_one_partition():
    got = RangeAssignor().assign({"topic1": 1}, {"consumer1": sub(["topic1"]), "consumer2": sub(["topic1"])})
    assert got == {"consumer1": [tp("topic1", 0)], "consumer2": []}


def test_range_multiple_consumers_mixed_topics():
    got = RangeAssignor().assign(
        {"topic1": 3, "topic2": 2},
        {"consumer1": sub(["topic1"]), "consumer2": sub(["topic1", "topic2"]), "consumer3": sub(["topic1"])},
    )
    assert sets(got) == {
        "consumer1": {tp("topic1", 0)},
        "consumer2": {tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer3": {tp("topic1", 2)},
    }


def test_range_two_consumers_two_topics_six_partitions():
    got = RangeAssignor().assign({"topic1": 3, "topic2": 3}, {"consumer1": sub(["topic1", "topic2"]), "consumer2": sub(["topic1", "topic2"])})
    assert sets(got) == {
        "consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)},
        "consumer2": {tp("topic1", 2), tp("topic2", 2)},
    }


def test_range_orders_static_members_by_instance_id_before_dynamic_ones():
    topics = ["topic1", "topic2"]
    # Both static: instance ids decide, not member ids.
    got = RangeAssignor().assign({"topic1": 3, "topic2": 3}, {"consumer-b": sub(topics, "instance1"), "consumer-a": sub(topics, "instance2")})
    assert sets(got)["consumer-b"] == {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)}
    # A static member goes before a dynamic one whatever their member ids.
    got = RangeAssignor().assign({"topic1": 3, "topic2": 3}, {"consumer-b": sub(topics, "instance1"), "consumer-a": sub(topics)})
    assert sets(got)["consumer-b"] == {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)}
    assert sets(got)["consumer-a"] == {tp("topic1", 2), tp("topic2", 2)}


def test_range_static_assignment_persists_across_a_dynamic_member_change():
    topics = ["topic1", "topic2"]
    members = {"consumer1": sub(topics, "instance1"), "consumer2": sub(topics, "instance2"), "consumer3": sub(topics, "instance3"), "consumer4": sub(topics)}
    expected = {
        "consumer1": {tp("topic1", 0), tp("topic1", 1), tp("topic2", 0)},
        "consumer2": {tp("topic1", 2), tp("topic2", 1)},
        "consumer3": {tp("topic1", 3), tp("topic2", 2)},
        "consumer4": {tp("topic1", 4), tp("topic2", 3)},
    }
    assert sets(RangeAssignor().assign({"topic1": 5, "topic2": 4}, members)) == expected
    del members["consumer4"]
    members["consumer5"] = sub(topics)
    expected["consumer5"] = expected.pop("consumer4")
    assert sets(RangeAssignor().assign({"topic1": 5, "topic2": 4}, members)) == expected


# -- roundrobin (RoundRobinAssignorTest) -----------------------------------------------------------


def test_roundrobin_multiple_consumers_mixed_topics():
    got = RoundRobinAssignor().assign(
        {"topic1": 3, "topic2": 2},
        {"consumer1": sub(["topic1"]), "consumer2": sub(["topic1", "topic2"]), "consumer3": sub(["topic1"])},
    )
    assert got == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 2)],
    }


def test_roundrobin_two_consumers_two_topics_six_partitions():
    got = RoundRobinAssignor().assign({"topic1": 3, "topic2": 3}, {"consumer1": sub(["topic1", "topic2"]), "consumer2": sub(["topic1", "topic2"])})
    assert got == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_roundrobin_static_members_by_instance_id():
    topics = ["topic1", "topic2"]
    got = RoundRobinAssignor().assign({"topic1": 3, "topic2": 3}, {"consumer-b": sub(topics, "instance1"), "consumer-a": sub(topics, "instance2")})
    assert got == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


# -- cooperative-sticky (AbstractStickyAssignorTest / CooperativeStickyAssignorTest) ---------------


def assign_cooperatively(partitions: dict[str, int], subscriptions: dict[str, Subscription]) -> dict[str, list[TopicPartition]]:
    """One assignment, then the follow-up rebalances CooperativeStickyAssignorTest runs while
    partitions are being revoked; checks no partition moves within one rebalance. Only subscribed
    topics are passed, as Java's AbstractPartitionAssignor passes them."""
    subscribed = {t for s in subscriptions.values() for t in s.topics}
    partitions = {t: n for t, n in partitions.items() if t in subscribed}
    assignor = CooperativeStickyAssignor()
    assignment = assignor.assign(partitions, subscriptions)
    for _round in range(5):
        added: set[TopicPartition] = set()
        revoked: set[TopicPartition] = set()
        for member, assigned in assignment.items():
            owned = set(subscriptions[member].owned_partitions)
            added |= set(assigned) - owned
            revoked |= owned - set(assigned)
        assert not (added & revoked), f"partitions moved within one rebalance: {added & revoked}"
        if not revoked:
            return assignment
        for member, assigned in assignment.items():
            old = subscriptions[member]
            subscriptions[member] = sub_v2(old.topics, assigned, 1)
        assignment = assignor.assign(partitions, subscriptions)
    raise AssertionError("more than 4 follow-up rebalances")


def check_valid_and_balanced(partitions: dict[str, int], subscriptions: dict[str, Subscription], assignment: dict[str, list[TopicPartition]]) -> None:
    owners: dict[TopicPartition, str] = {}
    for member, assigned in assignment.items():
        for p in assigned:
            assert p.topic in subscriptions[member].topics
            assert p not in owners, f"{p} assigned twice"
            owners[p] = member
    wanted = {tp(t, i) for s in subscriptions.values() for t in s.topics if t in partitions for i in range(partitions[t])}
    assert set(owners) == wanted


def fully_balanced(assignment: dict[str, list[TopicPartition]]) -> bool:
    sizes = [len(v) for v in assignment.values()]
    return max(sizes) - min(sizes) <= 1


def test_sticky_initial_assignments():
    a = CooperativeStickyAssignor().assign({"topic": 3}, {"consumer": sub(["topic"])})
    assert a == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}
    a = CooperativeStickyAssignor().assign({"topic1": 3, "topic2": 3}, {"consumer1": sub(["topic1", "topic2"]), "consumer2": sub(["topic1", "topic2"])})
    assert sets(a) == {
        "consumer1": {tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)},
        "consumer2": {tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)},
    }


def test_sticky_multiple_consumers_mixed_topic_subscriptions():
    # The general (non-uniform subscription) algorithm.
    subscriptions = {"consumer1": sub(["topic1"]), "consumer2": sub(["topic1", "topic2"]), "consumer3": sub(["topic1"])}
    a = CooperativeStickyAssignor().assign({"topic1": 3, "topic2": 2}, subscriptions)
    assert sets(a) == {
        "consumer1": {tp("topic1", 0), tp("topic1", 2)},
        "consumer2": {tp("topic2", 0), tp("topic2", 1)},
        "consumer3": {tp("topic1", 1)},
    }


def test_sticky_consumer_owning_min_quota_expecting_max_quota():
    topics = ["topic1", "topic2"]
    subscriptions = {
        "consumer1": sub_v2(topics, [tp("topic1", 0), tp("topic2", 1)], 1),
        "consumer2": sub_v2(topics, [tp("topic1", 1), tp("topic2", 2)], 1),
    }
    a = CooperativeStickyAssignor().assign({"topic1": 2, "topic2": 3}, subscriptions)
    assert sets(a) == {"consumer1": {tp("topic1", 0), tp("topic2", 1), tp("topic2", 0)}, "consumer2": {tp("topic1", 1), tp("topic2", 2)}}


def test_sticky_max_quota_consumers_more_than_expected():
    topics = ["topic1", "topic2"]
    partitions = {"topic1": 2, "topic2": 2}
    subscriptions = {
        "consumer1": sub_v2(topics, [tp("topic1", 0), tp("topic2", 0)], 1),
        "consumer2": sub_v2(topics, [tp("topic1", 1), tp("topic2", 1)], 1),
        "consumer3": sub_v2(topics, [], 1),
    }
    first = CooperativeStickyAssignor().assign(partitions, dict(subscriptions))
    assert tp("topic2", 0) not in first["consumer3"]  # held back until consumer1 revoked it
    a = assign_cooperatively(partitions, subscriptions)
    assert sets(a) == {"consumer1": {tp("topic1", 0)}, "consumer2": {tp("topic1", 1), tp("topic2", 1)}, "consumer3": {tp("topic2", 0)}}


def test_sticky_all_consumers_under_min_quota():
    topics = ["topic1", "topic2"]
    subscriptions = {
        "consumer1": sub_v2(topics, [tp("topic1", 0)], 1),
        "consumer2": sub_v2(topics, [tp("topic1", 1)], 1),
        "consumer3": sub_v2(topics, [], 1),
    }
    a = assign_cooperatively({"topic1": 2, "topic2": 3}, subscriptions)
    assert sets(a) == {"consumer1": {tp("topic1", 0), tp("topic2", 1)}, "consumer2": {tp("topic1", 1), tp("topic2", 2)}, "consumer3": {tp("topic2", 0)}}


def test_sticky_add_and_remove_two_consumers():
    topics = ["topic1", "topic2"]
    partitions = {"topic1": 3, "topic2": 4}
    subscriptions = {"consumer1": sub(topics), "consumer2": sub(topics)}
    a = CooperativeStickyAssignor().assign(partitions, subscriptions)
    assert sets(a) == {
        "consumer1": {tp("topic1", 0), tp("topic1", 2), tp("topic2", 1), tp("topic2", 3)},
        "consumer2": {tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)},
    }
    subscriptions = {
        "consumer1": sub_v2(topics, a["consumer1"], 1),
        "consumer2": sub_v2(topics, a["consumer2"], 1),
        "consumer3": sub_v2(topics, [], 1),
        "consumer4": sub_v2(topics, [], 1),
    }
    a = assign_cooperatively(partitions, subscriptions)
    assert sets(a) == {
        "consumer1": {tp("topic1", 0), tp("topic2", 1)},
        "consumer2": {tp("topic2", 0), tp("topic1", 1)},
        "consumer3": {tp("topic1", 2), tp("topic2", 3)},
        "consumer4": {tp("topic2", 2)},
    }
    subscriptions = {"consumer3": sub_v2(topics, a["consumer3"], 1), "consumer4": sub_v2(topics, a["consumer4"], 1)}
    a = CooperativeStickyAssignor().assign(partitions, subscriptions)
    assert sets(a) == {
        "consumer3": {tp("topic1", 2), tp("topic2", 3), tp("topic1", 0), tp("topic2", 1)},
        "consumer4": {tp("topic2", 2), tp("topic1", 1), tp("topic2", 0)},
    }


def test_sticky_all_consumers_reach_quota():
    subscriptions = {
        "consumer1": sub_v2(["topic"], [tp("topic", 0), tp("topic", 1)], 1),
        "consumer2": sub_v2(["topic"], [tp("topic", 2)], 1),
        "consumer3": sub_v2(["topic"], [], 1),
    }
    a = CooperativeStickyAssignor().assign({"topic": 4}, subscriptions)
    assert sets(a) == {"consumer1": {tp("topic", 0), tp("topic", 1)}, "consumer2": {tp("topic", 2)}, "consumer3": {tp("topic", 3)}}


@pytest.mark.parametrize("other_generation", [9, -1])
def test_sticky_owned_partitions_of_a_stale_generation_are_invalidated(other_generation: int):
    topics = ["topic", "topic2"]
    owned = [tp("topic", 0), tp("topic", 2), tp("topic2", 1)]
    subscriptions = {"consumer1": sub_v2(topics, owned, 10), "consumer2": sub_v2(topics, owned, other_generation)}
    a = CooperativeStickyAssignor().assign({"topic": 3, "topic2": 3}, subscriptions)
    assert sets(a) == {"consumer1": set(owned), "consumer2": {tp("topic", 1), tp("topic2", 0), tp("topic2", 2)}}


def test_sticky_partition_claimed_twice_in_one_generation_waits_for_both_to_revoke():
    # CooperativeStickyAssignorTest ...ClaimedByMultipleConsumersInSameGenerationWithEqualPartitionsPerConsumer
    subscriptions = {
        "consumer1": sub_v2(["topic"], [tp("topic", 0), tp("topic", 1)], 1),
        "consumer2": sub_v2(["topic"], [tp("topic", 0), tp("topic", 2)], 1),
        "consumer3": sub_v2(["topic"], [], 1),
    }
    a = CooperativeStickyAssignor().assign({"topic": 3}, dict(subscriptions))
    assert a == {"consumer1": [tp("topic", 1)], "consumer2": [tp("topic", 2)], "consumer3": []}
    final = assign_cooperatively({"topic": 3}, subscriptions)
    assert sets(final) == {"consumer1": {tp("topic", 1)}, "consumer2": {tp("topic", 2)}, "consumer3": {tp("topic", 0)}}
    # ...WithUnequalPartitionsPerConsumer
    subscriptions = {
        "consumer1": sub_v2(["topic"], [tp("topic", 0), tp("topic", 1)], 1),
        "consumer2": sub_v2(["topic"], [tp("topic", 0), tp("topic", 2)], 1),
        "consumer3": sub_v2(["topic"], [], 1),
    }
    a = CooperativeStickyAssignor().assign({"topic": 4}, subscriptions)
    assert sets(a) == {"consumer1": {tp("topic", 1), tp("topic", 3)}, "consumer2": {tp("topic", 2)}, "consumer3": set()}


def test_sticky_partitions_go_to_the_highest_generation():
    topics = ["topic", "topic2", "topic3"]
    subscriptions = {
        "consumer1": sub_v2(topics, [tp("topic", 0), tp("topic2", 0), tp("topic3", 0)], 10),
        "consumer2": sub_v2(topics, [tp("topic", 1), tp("topic2", 1), tp("topic3", 1)], 9),
        "consumer3": sub_v2(topics, [tp("topic2", 1), tp("topic3", 0), tp("topic3", 2)], 8),
    }
    a = CooperativeStickyAssignor().assign({"topic": 3, "topic2": 3, "topic3": 3}, subscriptions)
    assert sets(a) == {
        "consumer1": {tp("topic", 0), tp("topic2", 0), tp("topic3", 0)},
        "consumer2": {tp("topic", 1), tp("topic2", 1), tp("topic3", 1)},
        "consumer3": {tp("topic", 2), tp("topic2", 2), tp("topic3", 2)},
    }


def test_sticky_no_reassignment_on_current_members():
    topics = ["topic", "topic2", "topic3", "topic1"]
    subscriptions = {
        "consumer1": sub_v2(topics, [], -1),
        "consumer2": sub_v2(topics, [tp("topic", 0), tp("topic2", 0), tp("topic1", 0)], 9),
        "consumer3": sub_v2(topics, [tp("topic3", 2), tp("topic2", 2), tp("topic1", 1)], 8),
        "consumer4": sub_v2(topics, [tp("topic3", 1), tp("topic", 1), tp("topic", 2)], 7),
    }
    a = CooperativeStickyAssignor().assign({"topic": 3, "topic1": 3, "topic2": 3, "topic3": 3}, subscriptions)
    assert set(a["consumer1"]) == {tp("topic1", 2), tp("topic2", 1), tp("topic3", 0)}


def test_sticky_owned_partitions_invalidated_across_multiple_generations():
    subscriptions = {
        "consumer1": sub_v2(["topic", "topic2"], [tp("topic", 0), tp("topic2", 1), tp("topic", 1)], 10),
        "consumer2": sub_v2(["topic", "topic2"], [tp("topic", 0), tp("topic2", 1), tp("topic2", 2)], 8),
    }
    a = CooperativeStickyAssignor().assign({"topic": 3, "topic2": 3}, subscriptions)
    assert sets(a) == {
        "consumer1": {tp("topic", 0), tp("topic2", 1), tp("topic", 1)},
        "consumer2": {tp("topic", 2), tp("topic2", 2), tp("topic2", 0)},
    }


def test_sticky_old_version_subscriptions_with_generation_in_user_data():
    # v1 subscriptions: owned partitions, the generation only in CooperativeStickyAssignor's user data.
    subscriptions = {
        "consumer1": Subscription(["topic1"], struct.pack(">i", 1), [tp("topic1", 0)], -1),
        "consumer2": Subscription(["topic1"], struct.pack(">i", 1), [tp("topic1", 1)], -1),
        "consumer3": sub_v2(["topic1"], [], 1),
    }
    a = CooperativeStickyAssignor().assign({"topic1": 3}, subscriptions)
    assert a == {"consumer1": [tp("topic1", 0)], "consumer2": [tp("topic1", 1)], "consumer3": [tp("topic1", 2)]}


def test_sticky_user_data_carries_the_generation():
    assignor = CooperativeStickyAssignor()
    assert assignor.subscription_user_data(["t"]) == struct.pack(">i", -1)
    assignor.on_assignment(Assignment([]), 10)
    assert assignor.subscription_user_data(["t"]) == struct.pack(">i", 10)


@pytest.mark.parametrize("seed", range(8))
def test_sticky_random_subscriptions_stay_valid_balanced_and_cooperative(seed: int):
    rng = random.Random(seed)
    topics = {f"t{i}": rng.randint(1, 6) for i in range(rng.randint(1, 5))}
    members = [f"consumer{i}" for i in range(rng.randint(1, 6))]
    uniform = rng.random() < 0.5
    names = sorted(topics)
    subscriptions = {m: sub(names if uniform else rng.sample(names, rng.randint(1, len(names)))) for m in members}
    assignment = assign_cooperatively(topics, subscriptions)
    check_valid_and_balanced(topics, subscriptions, assignment)
    if uniform:
        assert fully_balanced(assignment)
    # A member leaves: the others keep what they had and the group stays valid.
    gone = members[0]
    survivors = {m: sub_v2(subscriptions[m].topics, assignment[m], 2) for m in members[1:]}
    if survivors:
        after = assign_cooperatively(topics, dict(survivors))
        check_valid_and_balanced(topics, survivors, after)
        if uniform:
            for m in survivors:
                kept = set(assignment[m]) & set(after[m])
                assert len(kept) >= min(len(assignment[m]), len(after[m])), f"{m} lost partitions it could keep"
        assert gone not in after
