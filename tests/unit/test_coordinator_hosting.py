"""The internal topics of the coordinators, created on first use as Kafka creates them."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from kcli.broker.coordinator_hosting import internal_topic
from kcli.errors import ErrorCode, KafkaError


class RefusingAdmin:
    def __init__(self) -> None:
        self.calls = []

    async def create_topic(self, name, partitions, replication_factor, configs):
        self.calls.append((name, partitions, replication_factor, configs))
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Unable to replicate the partition 3 time(s)")


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state"])
def test_a_refused_creation_is_coordinator_not_available_and_logged_once(name, caplog):
    admin = RefusingAdmin()
    broker = SimpleNamespace(
        metadata=SimpleNamespace(topic=lambda _: None),
        config=SimpleNamespace(get={"p": 50, "rf": 3}.get),
        admin_manager=admin,
    )
    with caplog.at_level(logging.WARNING, logger="kcli.broker"):
        for _ in range(3):
            with pytest.raises(KafkaError) as caught:
                asyncio.run(internal_topic(broker, name, "internal topic", "p", "rf", {"cleanup.policy": "compact"}))
            assert caught.value.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert admin.calls == [(name, 50, 3, {"cleanup.policy": "compact"})] * 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"Could not create the internal topic {name}: Unable to replicate the partition 3 time(s) (rf=3)"]
