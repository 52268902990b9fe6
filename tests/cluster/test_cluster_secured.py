"""A cluster whose brokers talk to each other only over SASL_SSL with SCRAM-SHA-512: the
controller's LeaderAndIsr and UpdateMetadata and a stopping broker's ControlledShutdown go over
the secured inter-broker listener, authenticated with the inter-broker user's credentials, which
are written to ZooKeeper before the brokers start (as Kafka's documentation has it)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from kazoo.client import KazooClient

from certs import make_certs, tls_overrides
from tests.cluster.conftest import wait_until
from tests.wire_client import WireClient, code


def _credential(password: str, salt: bytes, iterations: int = 4096) -> str:
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    return (f"salt={b64(salt)},stored_key={b64(hashlib.sha512(client_key).digest())},"
            f"server_key={b64(hmac.new(salted, b'Server Key', 'sha512').digest())},iterations={iterations}")


def _leaders(port: int, topic: str) -> list[int]:
    with WireClient("127.0.0.1", port) as client:
        answer = client.call(3, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    return [p.leader_id for p in sorted(answer.topics[0].partitions, key=lambda p: p.partition_index)]


def test_inter_broker_requests_go_over_sasl_ssl_with_scram(cluster, tmp_path):
    certs = make_certs(tmp_path / "certs")
    zk = KazooClient(hosts=cluster.zookeeper.connect)  # the cluster's chroot does not exist yet
    zk.start(timeout=15)
    try:
        zk.create(f"{cluster.chroot}/config/users/broker", json.dumps({"version": 1, "config": {"SCRAM-SHA-512": _credential("broker-pw", b"broker-salt")}}).encode(),
                  makepath=True)
    finally:
        zk.stop()
        zk.close()
    for broker_id in (0, 1):
        cluster.broker(broker_id, listeners="CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0", **{
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.internal.scram-sha-512.sasl.jaas.config":
                'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-pw";',
            **tls_overrides(certs),
        }).start(timeout=60)
    ports = [cluster.brokers[b].port for b in (0, 1)]
    with WireClient("127.0.0.1", ports[0]) as client:
        created = client.call(19, 7, {"topics": [{"name": "secured", "num_partitions": -1, "replication_factor": -1, "assignments": [
            {"partition_index": 0, "broker_ids": [0]}, {"partition_index": 1, "broker_ids": [1]}]}], "timeout": 10000})
        assert code(created.topics[0].error_code) == 0
    # Broker 1 leads partition 1 only once the controller's LeaderAndIsr reached it over INTERNAL;
    # each broker knows both leaders once UpdateMetadata did.
    for port in ports:
        wait_until(lambda port=port: _leaders(port, "secured") == [0, 1])
    zk = cluster.zk()
    try:
        controller = json.loads(zk.get("/controller")[0])["brokerid"]
    finally:
        zk.stop()
        zk.close()
    stopping = cluster.brokers[1 - controller]  # its ControlledShutdown goes to the controller over INTERNAL
    assert stopping.stop() == 0
    assert any("Controlled shutdown request returned successfully" in line for line in stopping.log_lines)


def test_scram_credentials_written_through_zookeeper_by_kcli_configs_take_effect_on_a_running_broker(cluster):
    """Kafka 2.8's ``kafka-configs.sh --zookeeper --entity-type users``: the credential computed by
    the tool (RFC 5802's salted password, stored key and server key, checked here against the
    password independently), written to ``/config/users/<user>`` with a change notification that
    the running broker follows; the description shows iterations, never the keys."""
    import re
    import subprocess
    import sys

    from tests.broker_process import scram_authenticates

    broker = cluster.broker(0, listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", **{
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    }).start(timeout=60)
    sasl_port = broker.listener_ports[1]
    connect = cluster.connect

    def configs(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kcli", "configs", "--zookeeper", connect, "--entity-type", "users", *args],
                              capture_output=True, text=True, timeout=60)

    added = configs("--entity-name", "carol", "--alter", "--add-config", "SCRAM-SHA-512=[iterations=4500,password=carol-pw]")
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines()[-1] == "Completed updating config for entity: user-principal 'carol'."
    zk = cluster.zk()
    try:
        stored = json.loads(zk.get("/config/users/carol")[0])  # the session is on the cluster's chroot
    finally:
        zk.stop()
        zk.close()
    credential = stored["config"]["SCRAM-SHA-512"]
    salt = base64.b64decode(re.search(r"salt=([^,]+)", credential).group(1))
    assert stored["version"] == 1 and credential == _credential("carol-pw", salt, 4500)

    def authenticates(password: str) -> bool:
        return scram_authenticates(sasl_port, "SCRAM-SHA-512", "carol", password)

    wait_until(lambda: authenticates("carol-pw"), timeout=60)
    assert not authenticates("wrong-pw")
    described = configs("--entity-name", "carol", "--describe")
    assert described.stdout.splitlines()[-1] == "Configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4500"
    assert "stored_key" not in described.stdout and "carol-pw" not in described.stdout + added.stdout + added.stderr
