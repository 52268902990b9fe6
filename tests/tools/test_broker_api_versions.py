"""``kcli broker-api-versions`` against a kcli broker and librdkafka's mock cluster: Kafka 3.9's
BrokerApiVersionsCommand layout (``host:port (id: N rack: null) -> (`` then one tab-indented line
per API and ``)``), with the ranges each broker gives to a plain ApiVersions v0 request sent here
by hand, and the usable version being what kcli's client would send."""

from __future__ import annotations

import json
import re
import socket
import struct

import pytest

from kcli.client.connection import CLIENT_MAX_VERSIONS

pytestmark = pytest.mark.timeout(60)

LINE = re.compile(r"\t(\w+)\((\d+)\): (?:(\d+)(?: to (\d+))? \[(usable: \d+|unusable: [a-z ]+)\]|UNSUPPORTED)$")
# Kafka 3.9 client APIs a kcli broker does not serve, and APIs only controllers serve.
SOME_UNSUPPORTED = {4: "LeaderAndIsr", 5: "StopReplica", 38: "CreateDelegationToken", 41: "DescribeDelegationToken"}
CONTROLLER_ONLY = {52, 53, 54, 59, 62, 63, 70, 73, 82}


def raw_api_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 over a plain socket: api key -> (min, max)."""
    host, port = bootstrap.rsplit(":", 1)
    client_id = b"raw-test"
    request = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _read(sock, 4))[0]
        body = _read(sock, size)
    correlation, error, count = struct.unpack_from(">ihi", body)
    assert (correlation, error) == (7, 0)
    return {key: (low, high) for key, low, high in struct.iter_unpack(">hhh", body[10 : 10 + 6 * count])}


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def check_output(lines: list[str], node_id: int, bootstrap: str) -> dict[int, tuple]:
    """The layout of one broker's block; returns key -> parsed line."""
    assert lines[0] == f"{bootstrap} (id: {node_id} rack: null) -> ("
    assert lines[-1] == ")"
    body = lines[1:-1]
    assert all(line.endswith(",") for line in body[:-1]) and not body[-1].endswith(",")
    parsed = {}
    for line in body:
        match = LINE.fullmatch(line.removesuffix(","))
        assert match, line
        name, key, low, high, usable = match.groups()
        parsed[int(key)] = (name, low, high, usable)
    assert list(parsed) == sorted(parsed)
    return parsed


def expected_usable(key: int, low: int, high: int) -> str:
    version = min(CLIENT_MAX_VERSIONS[key], high)
    return f"usable: {version}" if version >= low else "unusable: node too new"


def test_kcli_broker(kcli, broker):
    result = kcli("broker-api-versions", "--bootstrap-server", broker.bootstrap)
    assert (result.returncode, result.stderr) == (0, "")
    parsed = check_output(result.lines, 0, broker.bootstrap)
    advertised = raw_api_versions(broker.bootstrap)
    for key, (low, high) in advertised.items():
        name, shown_low, shown_high, usable = parsed[key]
        assert (int(shown_low), int(shown_high or shown_low)) == (low, high)
        if key in CLIENT_MAX_VERSIONS:
            assert usable == expected_usable(key, low, high), name
    assert parsed[0][0] == "Produce" and parsed[18][0] == "ApiVersions" and parsed[44][0] == "IncrementalAlterConfigs"
    for key, name in SOME_UNSUPPORTED.items():
        assert parsed[key] == (name, None, None, None)
    assert not CONTROLLER_ONLY & set(parsed)
    # Every Kafka 3.9 client API has a line: the 88 keys of 3.9 less the controller-only ones.
    assert set(parsed) == set(range(88)) - CONTROLLER_ONLY


def test_single_version_ranges_print_one_number(kcli, mock_cluster):
    result = kcli("broker-api-versions", "--bootstrap-server", mock_cluster.bootstrap)
    assert result.returncode == 0, result
    advertised = raw_api_versions(mock_cluster.bootstrap)
    # The mock runs one broker, so the output is one block.
    address, node_id = re.fullmatch(r"(\S+) \(id: (\d+) rack: null\) -> \(", result.lines[0]).groups()
    assert address == mock_cluster.bootstrap
    parsed = check_output(result.lines, int(node_id), address)
    for key, (low, high) in advertised.items():
        name, shown_low, shown_high, usable = parsed[key]
        if low == high:
            assert (shown_low, shown_high) == (str(low), None), name
        else:
            assert (shown_low, shown_high) == (str(low), str(high)), name
        if key in CLIENT_MAX_VERSIONS:
            assert usable == expected_usable(key, low, high), name
    assert parsed[32] == ("DescribeConfigs", None, None, None)  # the mock has no DescribeConfigs


def test_json_output(kcli, broker):
    result = kcli("broker-api-versions", "--bootstrap-server", broker.bootstrap, "--output", "json")
    [entry] = [json.loads(line) for line in result.lines]
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    assert (entry["id"], entry["host"], entry["port"], entry["rack"], entry["error"]) == (0, "127.0.0.1", port, None, None)
    advertised = raw_api_versions(broker.bootstrap)
    assert {a["key"]: (a["min_version"], a["max_version"]) for a in entry["apis"]} == advertised
    produce = next(a for a in entry["apis"] if a["key"] == 0)
    assert produce["name"] == "Produce" and produce["usable_version"] == min(CLIENT_MAX_VERSIONS[0], advertised[0][1]) and produce["unusable"] is None


def test_errors(kcli):
    missing = kcli("broker-api-versions")
    assert missing.returncode == 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    unreachable = kcli("broker-api-versions", "--bootstrap-server", f"127.0.0.1:{port}")
    assert unreachable.returncode == 1
    [line] = unreachable.stderr.splitlines()
    assert line.startswith("Error: ") and f"127.0.0.1:{port}" in line
    usage = kcli("broker-api-versions", "--bootstrap-server", "h:1", "--no-such-flag")
    assert usage.returncode == 2


def test_usable_version_rules():
    from kcli.client.admin import usable_version

    assert usable_version(0, 3, 11) == CLIENT_MAX_VERSIONS[0]  # capped by the client
    assert usable_version(0, 3, 5) == 5  # capped by the broker
    assert usable_version(0, 0, 2) == "node too old"  # kcli's lowest Produce is v3
    assert usable_version(18, 5, 7) == "node too new"
    assert usable_version(4, 0, 7) == 7  # LeaderAndIsr: a schema kcli states (kio has none)
    assert usable_version(4, 0, 5) == 5
    assert usable_version(200, 0, 1) == "unknown to kcli"
