"""Several listeners on one broker: each connection is answered for the listener it came in on.

Metadata, DescribeCluster and FindCoordinator give the broker at its advertised endpoint on the
requester's listener, as Kafka's MetadataCache does (a client on an internal listener must be sent
to internal addresses, one on an external listener to external ones)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.wire_client import WireClient, code

BROKER_OVERRIDES = {
    "listeners": "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
    "advertised.listeners": "CLIENT://localhost:0,INTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
}


def _ports(broker) -> list[int]:
    return broker.listener_ports


@pytest.fixture(scope="module")
def endpoints(broker):
    client_port, internal_port = _ports(broker)
    return {"CLIENT": ("localhost", client_port), "INTERNAL": ("127.0.0.1", internal_port)}


def _brokers_on_each_listener(endpoints, ask) -> dict[str, list[tuple]]:
    answers = {}
    for listener, (_host, port) in endpoints.items():
        with WireClient("127.0.0.1", port) as client:
            answers[listener] = ask(client)
    return answers


@pytest.mark.parametrize("version", [1, 12])
def test_metadata_gives_the_broker_on_the_listener_asked_on(endpoints, version):
    answers = _brokers_on_each_listener(endpoints, lambda client: [(b.node_id, b.host, b.port) for b in client.call(3, version, {"topics": []}).brokers])
    assert answers == {listener: [(0, *endpoint)] for listener, endpoint in endpoints.items()}


def test_describe_cluster_gives_the_broker_on_the_listener_asked_on(endpoints):
    def ask(client):
        return [(b.broker_id, b.host, b.port) for b in client.call(60, 0, {"include_cluster_authorized_operations": False}).brokers]

    assert _brokers_on_each_listener(endpoints, ask) == {listener: [(0, *endpoint)] for listener, endpoint in endpoints.items()}


def test_find_coordinator_gives_the_coordinator_on_the_listener_asked_on(endpoints):
    def ask(client):
        answer = client.call(10, 3, {"key": "a-group", "key_type": 0})
        if code(answer.error_code) != 0:  # the offsets topic was being created: asked again once it is
            answer = client.call(10, 3, {"key": "a-group", "key_type": 0})
        return [(code(answer.error_code), answer.node_id, answer.host, answer.port)]

    assert _brokers_on_each_listener(endpoints, ask) == {listener: [(0, 0, *endpoint)] for listener, endpoint in endpoints.items()}


def test_an_inter_broker_listener_that_is_not_a_listener_refuses_the_start_with_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kcli", "broker", "start", "--override", f"log.dirs={tmp_path / 'logs'}",
         "--override", "listeners=CLIENT://127.0.0.1:0", "--override", "listener.security.protocol.map=CLIENT:PLAINTEXT"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        "Error: the broker cannot start: inter.broker.listener.name must be a listener name defined in advertised.listeners. "
        "The valid options based on currently configured listeners are CLIENT"
    ]
    assert not (tmp_path / "logs").exists()
