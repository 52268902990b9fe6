"""ApiVersions from a running broker: every version a Kafka 3.9 client may send, answered with
the ranges the handlers serve (which tests/unit/test_api_versions_kafka_39.py holds against
Kafka 3.9's)."""

from __future__ import annotations

import pytest

from kcli.broker.handlers import load_registry
from tests.wire_client import code

API_VERSIONS = 18


@pytest.mark.parametrize("version", range(0, 5))
def test_every_api_versions_version_answers_the_served_ranges(client, version):
    fields = {"client_software_name": "kcli-tests", "client_software_version": "1"}
    answer = client.call(API_VERSIONS, version, fields)
    advertised = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert code(answer.error_code) == 0
    assert advertised == {key: (api.min_version, api.max_version) for key, api in load_registry(cluster_mode=False).items()}
    assert advertised[1][1] == 17 and advertised[API_VERSIONS][1] == 4
    # The controller's requests and AlterPartition are for brokers in cluster mode only.
    assert not {4, 5, 6, 7, 56} & advertised.keys()
