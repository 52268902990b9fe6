"""``consumer-groups --delete --inactive-for DURATION [--dry-run]`` (kcli's own) against a kcli
broker: Empty groups whose newest offset commit (read from __consumer_offsets) is older than the
duration are deleted; a recent commit, a group with a running member, or a group without commits
keeps a group. The duration is chosen between the commit times the broker recorded, read back
first, so the test does not depend on how long commands take beyond a margin of seconds."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.timeout(180)


def commit(kcli, broker, group: str, topic: str, offset: int = 0) -> None:
    result = kcli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--group", group, "--reset-offsets",
                  "--topic", topic, "--to-offset", str(offset), "--execute")
    assert result.returncode == 0, result


def groups_of(kcli, broker) -> set[str]:
    return set(kcli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--list").lines)


def test_empty_groups_idle_longer_than_the_duration_are_deleted(kcli, broker, unique_topic):
    topic, tag = unique_topic(), uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    old, busy, fresh, never = (f"prune-{name}-{tag}" for name in ("old", "busy", "fresh", "never"))
    commit(kcli, broker, old, topic)
    commit(kcli, broker, busy, topic)
    time.sleep(6)
    commit(kcli, broker, fresh, topic)
    member = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": busy, "enable.auto.commit": False, "session.timeout.ms": 30000})
    member.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment(), "the member did not join"
        everyone = ["--group", old, "--group", busy, "--group", fresh, "--group", never]

        # The newest commits as the broker recorded them, from a plan that keeps everything old.
        listed = kcli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--delete", *everyone, "--inactive-for", "0ms",
                      "--dry-run", "--output", "json")
        assert listed.returncode == 0, listed
        newest = {d["group"]: d["newestCommit"] for d in map(json.loads, listed.lines)}
        assert set(newest) == {old, fresh}  # busy has a member; never has no commit (nor any state)
        duration = int(time.time() * 1000) - newest[old] - 2000  # ends between the two commits

        dry = kcli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--delete", *everyone, "--inactive-for", f"{duration}ms", "--dry-run")
        header, *rows, summary = [line for line in dry.lines if line]
        assert header.split() == ["GROUP", "STATE", "NEWEST-COMMIT", "INACTIVE-FOR"]
        assert [row.split()[:2] for row in rows] == [[old, "Empty"]]
        assert summary == "Dry run: 1 consumer group(s) would be deleted."
        assert {old, busy, fresh} <= groups_of(kcli, broker)

        done = kcli("consumer-groups", "--bootstrap-server", broker.bootstrap, "--delete", "--all-groups", "--inactive-for", f"{duration}ms")
        assert done.returncode == 0, done
        assert done.lines[-1] == f"Deletion of requested consumer groups ('{old}') was successful."
        remaining = groups_of(kcli, broker)
        assert old not in remaining and {busy, fresh} <= remaining
    finally:
        member.close()


def test_inactive_for_is_checked(inproc):
    cases = [
        (["--describe", "--group", "g", "--inactive-for", "7d"], "Option [inactive-for] can only be used with [delete]"),
        (["--delete", "--all-groups", "--inactive-for", "seven days"], "--inactive-for takes a duration such as 7d, 36h, 30m, 45s, 500ms or PT36H, not seven days"),
        (["--delete", "--all-groups", "--dry-run"], "Option [dry-run] can only be used with [delete] together with [inactive-for]"),
    ]
    for args, message in cases:
        result = inproc("consumer-groups", "--bootstrap-server", "h:1", *args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
