"""The client library logs; it never prints: a tool decides what reaches stdout and stderr."""

from __future__ import annotations

import logging

from kcli.client.consumer import Consumer
from kcli.client.network_client import NetworkClient
from kcli.client.producer_config import ProducerConfig


def test_producer_config_warning_goes_to_the_log(capsys, caplog):
    with caplog.at_level(logging.WARNING, logger="kcli.client.producer_config"):
        ProducerConfig.from_properties({"no.such.thing": "1"})
    assert capsys.readouterr() == ("", "")
    assert [r.getMessage() for r in caplog.records] == ["The configuration 'no.such.thing' was supplied but isn't a known config."]


def test_consumer_config_warning_goes_to_the_log(capsys, caplog):
    cluster = NetworkClient("127.0.0.1:9")  # never connected: the properties are read before any request
    with caplog.at_level(logging.WARNING, logger="kcli.client.consumer"):
        Consumer.from_properties(cluster, {"no.such.thing": "1"})
    assert capsys.readouterr() == ("", "")
    assert "The configuration 'no.such.thing' was supplied but isn't a known config." in [r.getMessage() for r in caplog.records]
