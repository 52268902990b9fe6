"""Kafka's ConnectionQuotas rules: per-listener and broker-wide slots, the inter-broker exemption,
per-address limits and their overrides."""

from __future__ import annotations

import pytest

from kcli.broker.network.connection_quotas import ConnectionQuotas, normalize_address, parse_per_ip_overrides
from kcli.errors import ErrorCode, KafkaError


def test_a_listener_has_no_slot_at_the_broker_wide_limit_unless_it_is_the_exempt_inter_broker_listener():
    quotas = ConnectionQuotas(max_connections=1, inter_broker_listener="INTERNAL", listener_count=2)
    assert quotas.inc("EXTERNAL", "10.0.0.1")
    assert not quotas.slot_available("EXTERNAL")
    assert quotas.slot_available("INTERNAL")
    assert quotas.inc("INTERNAL", "10.0.0.2")
    assert quotas.exceeded("EXTERNAL") and not quotas.exceeded("INTERNAL")
    quotas.dec("EXTERNAL", "10.0.0.1")
    assert not quotas.exceeded("EXTERNAL")


def test_the_inter_broker_listener_is_not_exempt_when_it_is_the_only_listener():
    quotas = ConnectionQuotas(max_connections=1, inter_broker_listener="PLAINTEXT", listener_count=1)
    quotas.inc("PLAINTEXT", "10.0.0.1")
    assert not quotas.slot_available("PLAINTEXT")


def test_a_listener_limit_applies_even_to_the_inter_broker_listener():
    quotas = ConnectionQuotas(listener_max={"internal": 1}, inter_broker_listener="INTERNAL", listener_count=2)
    quotas.inc("INTERNAL", "10.0.0.1")
    assert not quotas.slot_available("INTERNAL")
    assert quotas.slot_available("EXTERNAL")


def test_an_address_at_its_limit_is_refused_and_overrides_win():
    quotas = ConnectionQuotas(max_per_ip=1, per_ip_overrides={"10.0.0.9": 2})
    assert quotas.inc("L", "10.0.0.1") and not quotas.inc("L", "10.0.0.1")
    assert quotas.inc("L", "10.0.0.9") and quotas.inc("L", "10.0.0.9") and not quotas.inc("L", "10.0.0.9")
    assert quotas.total == 3


def test_overrides_parse_host_count_pairs_and_reject_anything_else():
    assert parse_per_ip_overrides("127.0.0.1:5, [::1]:7,localhost:2") == {"127.0.0.1": 5, "::1": 7} | {"127.0.0.1": 2}
    for bad in ("127.0.0.1", "127.0.0.1:many", ":3"):
        with pytest.raises(KafkaError) as raised:
            parse_per_ip_overrides(bad)
        assert raised.value.error_code == ErrorCode.INVALID_CONFIG


def test_ipv4_mapped_addresses_count_as_their_ipv4_address():
    assert normalize_address("::ffff:127.0.0.1") == "127.0.0.1"
