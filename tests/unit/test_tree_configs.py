"""Config overrides read from the tree, checked key by key: a value that does not parse is named
once while the tree holds it, and the value in effect before stays."""

from __future__ import annotations

import logging

from kcli.broker.config.tree_configs import TreeConfigs


def errors(caplog) -> list[str]:
    found = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    caplog.clear()
    return found


def test_a_topic_value_that_does_not_parse_keeps_the_one_in_effect_and_is_named_once(caplog):
    configs = TreeConfigs()
    caplog.set_level(logging.ERROR)
    read = {"retention.ms": "banana", "segment.ms": "3600000"}
    assert configs.topic("orders", read, {"retention.ms": "100000"}) == {"retention.ms": "100000", "segment.ms": "3600000"}
    [line] = errors(caplog)
    assert "retention.ms=banana" in line and "topic orders" in line and "/config/topics/orders" in line and "keeping retention.ms=100000" in line
    # Read again while the tree still holds it: applied the same way, not named again.
    assert configs.topic("orders", read, {"retention.ms": "100000", "segment.ms": "3600000"})["retention.ms"] == "100000"
    assert errors(caplog) == []
    # Fixed, then broken again: named again.
    assert configs.topic("orders", {"retention.ms": "5"}, None) == {"retention.ms": "5"}
    assert configs.topic("orders", {"retention.ms": "banana"}, {"retention.ms": "5"}) == {"retention.ms": "5"}
    assert len(errors(caplog)) == 1


def test_a_bad_value_with_nothing_in_effect_falls_back_to_the_default(caplog):
    caplog.set_level(logging.ERROR)
    assert TreeConfigs().topic("orders", {"cleanup.policy": "shred", "no.such.key": "1"}, None) == {}
    assert len(errors(caplog)) == 2


def test_broker_values_are_checked_and_unknown_broker_keys_left_alone(caplog):
    caplog.set_level(logging.ERROR)
    configs = TreeConfigs()
    read = {"log.retention.ms": "banana", "log.cleaner.threads": "2", "custom.plugin.setting": "x"}
    assert configs.broker(None, read, {"log.retention.ms": "60000"}) == {
        "log.retention.ms": "60000", "log.cleaner.threads": "2", "custom.plugin.setting": "x",
    }
    [line] = errors(caplog)
    assert "log.retention.ms=banana" in line and "/config/brokers/<default>" in line
    assert configs.broker(3, {"log.cleaner.threads": "many"}, None) == {}
    [line] = errors(caplog)
    assert "broker 3" in line and "/config/brokers/3" in line
