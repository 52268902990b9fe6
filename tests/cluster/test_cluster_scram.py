"""SCRAM users of a ZooKeeper cluster as Kafka 2.8 stores them: a credential written straight into
``/config/users/<user>`` with a ``/config/changes`` notification (as kafka-python's and aiokafka's
test fixtures write them) lets the user in on every running broker; one altered through any
broker (AlterUserScramCredentials) reaches the others the same way."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from tests.cluster.conftest import wait_until
from tests.scram_client import Scram
from tests.wire_client import WireClient, code

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw";'


def _sasl_port(broker) -> int:
    return broker.listener_ports[1]


def _credential(password: str, salt: bytes, iterations: int = 4096) -> str:
    """The credential text kafka-configs.sh writes (ScramCredentialUtils), computed here from RFC 5802."""
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    return f"salt={b64(salt)},stored_key={b64(stored_key)},server_key={b64(server_key)},iterations={iterations}"


def _authenticates(port: int, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> bool:
    scram = Scram(mechanism, user, password)
    with WireClient("127.0.0.1", port) as client:
        assert code(client.call(17, 1, {"mechanism": mechanism}).error_code) == 0
        first = client.call(36, 2, {"auth_bytes": scram.first()})
        if code(first.error_code) != 0:
            return False
        return code(client.call(36, 2, {"auth_bytes": scram.final(first.auth_bytes)}).error_code) == 0


def test_scram_users_written_in_the_znodes_take_effect_on_every_running_broker(cluster):
    for broker_id in (0, 1):
        cluster.broker(broker_id, listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", **{
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        }).start(timeout=60)
    ports = [_sasl_port(cluster.brokers[b]) for b in (0, 1)]
    assert not any(_authenticates(port, "carol", "carol-pw") for port in ports)

    zk = cluster.zk()
    try:
        config = {"version": 1, "config": {"SCRAM-SHA-256": _credential("carol-pw", b"carol-salt")}}
        zk.create("/config/users/carol", json.dumps(config).encode(), makepath=True)
        zk.create("/config/changes/config_change_", json.dumps({"version": 2, "entity_path": "users/carol"}).encode(), sequence=True)
        for port in ports:
            wait_until(lambda port=port: _authenticates(port, "carol", "carol-pw"))
        assert not _authenticates(ports[1], "carol", "not-carols")

        # Through broker 0's AlterUserScramCredentials: broker 1 learns it from the notification.
        salt = b"dave-salt"
        upsertion = {"name": "dave", "mechanism": 2, "iterations": 4096, "salt": salt,
                     "salted_password": hashlib.pbkdf2_hmac("sha512", b"dave-pw", salt, 4096)}
        with WireClient("127.0.0.1", cluster.brokers[0].port) as client:
            assert code(client.call(51, 0, {"deletions": [], "upsertions": [upsertion]}).results[0].error_code) == 0
        wait_until(lambda: _authenticates(ports[1], "dave", "dave-pw", "SCRAM-SHA-512"))
        stored = json.loads(zk.get("/config/users/dave")[0])
        assert stored["version"] == 1 and list(stored["config"]) == ["SCRAM-SHA-512"]
        assert stored["config"]["SCRAM-SHA-512"].startswith(f"salt={base64.b64encode(salt).decode()},stored_key=")
        assert stored["config"]["SCRAM-SHA-512"].endswith(",iterations=4096")
    finally:
        zk.stop()
        zk.close()
