"""SASL on a SASL_PLAINTEXT listener, spoken on the wire: SaslHandshake v0-1, SaslAuthenticate
v0-2 and v0's raw tokens; PLAIN users from the listener's JAAS entry; SCRAM-SHA-256/512 users
made with AlterUserScramCredentials and listed by DescribeUserScramCredentials. Failures answer
SASL_AUTHENTICATION_FAILED (or UNSUPPORTED_SASL_MECHANISM with the enabled list) and close, with
one log line naming the peer and the user, never the secret. Re-authentication (KIP-368): the
session lifetime is answered, and a request after it closes the connection."""

from __future__ import annotations

import hashlib
import struct
import time

import pytest

from tests.broker_process import BrokerProcess
from tests.scram_client import Scram
from tests.wire_client import ConnectionClosed, WireClient, code, recv_exactly

NONE, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 0, 33, 34, 58
RESOURCE_NOT_FOUND, UNACCEPTABLE_CREDENTIAL = 91, 93
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret-1";'


def _ports(broker) -> list[int]:
    return broker.listener_ports


def _start(tmp_path_factory, **extra: str) -> BrokerProcess:
    broker = BrokerProcess(tmp_path_factory.mktemp("broker"), {
        "broker.id": "0",
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        **extra,
    }, log_level="DEBUG").start()
    broker.plain_port, broker.sasl_port = _ports(broker)
    return broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = _start(tmp_path_factory)
    with WireClient("127.0.0.1", process.plain_port) as admin:
        answer = admin.call(51, 0, {"deletions": [], "upsertions": [
            _upsertion("bob", 1, "bob-secret-2", 4096), _upsertion("bob", 2, "bob-secret-2", 8192)]})
    assert [(r.user, code(r.error_code)) for r in answer.results] == [("bob", NONE)]
    yield process
    process.stop()


def _upsertion(user: str, mechanism: int, password: str, iterations: int) -> dict:
    """What a Java admin client sends: the salt and the salted password (RFC 5802's Hi)."""
    salt = hashlib.sha256(user.encode()).digest()
    name = "sha256" if mechanism == 1 else "sha512"
    return {"name": user, "mechanism": mechanism, "iterations": iterations, "salt": salt,
            "salted_password": hashlib.pbkdf2_hmac(name, password.encode(), salt, iterations)}


def _handshake(client: WireClient, mechanism: str, version: int = 1):
    return client.call(17, version, {"mechanism": mechanism})


def _authenticate(client: WireClient, token: bytes, version: int = 2):
    return client.call(36, version, {"auth_bytes": token})


def _plain(user: str, password: str) -> bytes:
    return b"\0" + user.encode() + b"\0" + password.encode()


def _closed(client: WireClient) -> bool:
    try:
        client.call(3, 12, {"topics": []})
    except (ConnectionClosed, ConnectionError):
        return True
    return False


def _new_lines(broker, before: int, text: str) -> list[str]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = [line for line in broker.log_lines[before:] if text in line]
        if lines:
            time.sleep(0.2)  # and nothing more follows
            return [line for line in broker.log_lines[before:] if text in line]
        time.sleep(0.05)
    return []


def test_plain_authenticates_and_requests_are_answered(broker):
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        versions = client.call(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert code(versions.error_code) == NONE
        handshake = _handshake(client, "PLAIN")
        assert (code(handshake.error_code), list(handshake.mechanisms)) == (NONE, MECHANISMS)
        answer = _authenticate(client, _plain("alice", "alice-secret-1"))
        assert code(answer.error_code) == NONE and answer.session_lifetime.total_seconds() == 0
        assert [b.port for b in client.call(3, 12, {"topics": []}).brokers] == [broker.sasl_port]
    assert _new_lines(broker, 0, "authenticated as User:alice with PLAIN")


def test_a_wrong_password_fails_closes_and_is_logged_once_without_the_secret(broker):
    before = len(broker.log_lines)
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        assert code(_handshake(client, "PLAIN").error_code) == NONE
        answer = _authenticate(client, _plain("alice", "not-her-secret-9"))
        assert code(answer.error_code) == SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert client.wait_closed()
    failed = _new_lines(broker, before, "Failed authentication")
    assert len(failed) == 1 and "127.0.0.1" in failed[0] and "as User:alice" in failed[0]
    assert not any("not-her-secret-9" in line or "alice-secret-1" in line for line in broker.log_lines)


def test_a_mechanism_not_enabled_is_answered_with_the_enabled_list_and_closed(broker):
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        answer = _handshake(client, "GSSAPI")
        assert (code(answer.error_code), list(answer.mechanisms)) == (UNSUPPORTED_SASL_MECHANISM, MECHANISMS)
        assert client.wait_closed()


def test_a_request_before_authentication_closes_the_connection(broker):
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        assert _closed(client)
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        assert code(_handshake(client, "PLAIN").error_code) == NONE
        assert _closed(client)  # Metadata instead of SaslAuthenticate


def test_a_v0_handshake_is_followed_by_raw_tokens(broker):
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        assert code(_handshake(client, "PLAIN", version=0).error_code) == NONE
        token = _plain("alice", "alice-secret-1")
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.read_frame() == b""
        assert [b.port for b in client.call(3, 1, {"topics": []}).brokers] == [broker.sasl_port]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_authenticates_with_the_stored_credential_and_proves_the_server(broker, mechanism):
    scram = Scram(mechanism, "bob", "bob-secret-2")
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        assert code(_handshake(client, mechanism).error_code) == NONE
        first = _authenticate(client, scram.first())
        assert code(first.error_code) == NONE and first.auth_bytes.startswith(f"r={scram.nonce}".encode())
        assert f"i={4096 if mechanism == 'SCRAM-SHA-256' else 8192}".encode() in first.auth_bytes
        final = _authenticate(client, scram.final(first.auth_bytes), version=1)
        assert code(final.error_code) == NONE and final.auth_bytes == scram.expected
        assert client.call(3, 12, {"topics": []}).brokers
    assert _new_lines(broker, 0, f"authenticated as User:bob with {mechanism}")


@pytest.mark.parametrize("case", ["wrong password", "unknown user", "replayed nonce", "malformed first", "malformed final"])
def test_scram_failures_answer_authentication_failed_and_close(broker, case):
    mechanism = "SCRAM-SHA-256"
    replayed = b""
    if case == "replayed nonce":
        # A whole exchange recorded, then its final message replayed in a new exchange.
        recorded = Scram(mechanism, "bob", "bob-secret-2")
        with WireClient("127.0.0.1", broker.sasl_port) as client:
            _handshake(client, mechanism)
            replayed = recorded.final(_authenticate(client, recorded.first()).auth_bytes)
            assert code(_authenticate(client, replayed).error_code) == NONE
    user, password = ("nobody", "x-secret-4") if case == "unknown user" else ("bob", "bob-secret-2")
    scram = Scram(mechanism, user, "wrong-secret-5" if case == "wrong password" else password)
    before = len(broker.log_lines)
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        assert code(_handshake(client, mechanism).error_code) == NONE
        if case == "malformed first":
            answer = _authenticate(client, b"n,,n=bob")
        else:
            first = _authenticate(client, scram.first())
            assert code(first.error_code) == NONE  # an unknown user is not told apart yet
            final = {"replayed nonce": replayed, "malformed final": b"c=biws,p=AAAA"}.get(case) or scram.final(first.auth_bytes)
            if case == "replayed nonce":
                assert first.auth_bytes.split(b",")[0] + b"," not in replayed  # this exchange's nonce is new
            answer = _authenticate(client, final)
        assert code(answer.error_code) == SASL_AUTHENTICATION_FAILED
        assert client.wait_closed()
    failed = _new_lines(broker, before, "Failed authentication")
    assert len(failed) == 1
    assert not any("secret" in line for line in broker.log_lines[before:])


def test_sasl_requests_elsewhere_are_illegal_sasl_state(broker):
    with WireClient("127.0.0.1", broker.plain_port) as client:
        assert code(_handshake(client, "PLAIN").error_code) == ILLEGAL_SASL_STATE
        assert code(_authenticate(client, b"").error_code) == ILLEGAL_SASL_STATE


def test_describe_and_alter_user_scram_credentials(broker):
    with WireClient("127.0.0.1", broker.plain_port) as client:
        described = client.call(50, 0, {"users": None})
        assert [(r.user, [(int(c.mechanism), c.iterations) for c in r.credential_infos]) for r in described.results] == [
            ("bob", [(1, 4096), (2, 8192)])]
        missing = client.call(50, 0, {"users": [{"name": "carol"}]})
        assert [(r.user, code(r.error_code)) for r in missing.results] == [("carol", RESOURCE_NOT_FOUND)]
        refused = client.call(51, 0, {"deletions": [{"name": "carol", "mechanism": 1}],
                                      "upsertions": [_upsertion("dave", 1, "d", 100)]})
        assert sorted((r.user, code(r.error_code)) for r in refused.results) == [("carol", RESOURCE_NOT_FOUND), ("dave", UNACCEPTABLE_CREDENTIAL)]
        assert code(client.call(51, 0, {"deletions": [], "upsertions": [_upsertion("erin", 2, "erin-secret-6", 4096)]}).results[0].error_code) == NONE
    scram = Scram("SCRAM-SHA-512", "erin", "erin-secret-6")
    with WireClient("127.0.0.1", broker.sasl_port) as client:
        _handshake(client, "SCRAM-SHA-512")
        assert code(_authenticate(client, scram.final(_authenticate(client, scram.first()).auth_bytes)).error_code) == NONE
    with WireClient("127.0.0.1", broker.plain_port) as client:
        deleted = client.call(51, 0, {"deletions": [{"name": "erin", "mechanism": 2}], "upsertions": []})
        assert code(deleted.results[0].error_code) == NONE
        assert code(client.call(50, 0, {"users": [{"name": "erin"}]}).results[0].error_code) == RESOURCE_NOT_FOUND


def test_an_expired_session_closes_unless_the_client_re_authenticates(tmp_path_factory):
    process = _start(tmp_path_factory, **{
        "connections.max.reauth.ms": "1500",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS.replace(";", ' user_bob="bob-secret-3";'),
    })
    try:
        with WireClient("127.0.0.1", process.sasl_port) as client:
            _handshake(client, "PLAIN")
            answer = _authenticate(client, _plain("alice", "alice-secret-1"))
            assert code(answer.error_code) == NONE and answer.session_lifetime.total_seconds() == 1.5
            # Clients re-authenticate before the session ends; another principal is refused.
            assert code(_handshake(client, "PLAIN").error_code) == NONE
            assert code(_authenticate(client, _plain("alice", "alice-secret-1")).error_code) == NONE
            time.sleep(1.6)
            assert code(_handshake(client, "PLAIN").error_code) == NONE  # re-authentication
            assert code(_authenticate(client, _plain("alice", "alice-secret-1")).error_code) == NONE
            assert client.call(3, 12, {"topics": []}).brokers
            time.sleep(1.6)
            assert _closed(client)
        with WireClient("127.0.0.1", process.sasl_port) as client:
            _handshake(client, "PLAIN")
            assert code(_authenticate(client, _plain("alice", "alice-secret-1")).error_code) == NONE
            _handshake(client, "PLAIN")
            refused = _authenticate(client, _plain("bob", "bob-secret-3"))
            assert code(refused.error_code) == SASL_AUTHENTICATION_FAILED
            assert refused.error_message == "Cannot change principals during re-authentication from User:alice to User:bob"
            assert client.wait_closed()
    finally:
        process.stop()


class _SaslV0OnlyBroker:
    """A proxy in front of the broker's SASL listener that makes it look like a Kafka 0.10.0-0.10.2
    broker: ApiVersions above v0 is UNSUPPORTED_VERSION, and v0's answer (the broker's own) lists
    SaslHandshake up to v0 and no SaslAuthenticate, so a client must send raw tokens."""

    def __init__(self, upstream_port: int) -> None:
        import socket
        import threading

        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.listener.close()
        for s in self.sockets:
            s.close()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self.sockets += [client, upstream]
            threading.Thread(target=self._serve, args=(client, upstream), daemon=True).start()

    @staticmethod
    def _frame(sock) -> bytes:
        size = struct.unpack(">i", recv_exactly(sock, 4))[0]
        return recv_exactly(sock, size)

    def _serve(self, client, upstream) -> None:
        import threading

        try:
            while True:
                frame = self._frame(client)
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                if api_key != 18:
                    upstream.sendall(struct.pack(">i", len(frame)) + frame)
                    break
                if version > 0:
                    body = struct.pack(">ihi", correlation_id, 35, 0)  # UNSUPPORTED_VERSION, no api keys
                else:
                    upstream.sendall(struct.pack(">i", len(frame)) + frame)
                    body = self._as_v0_only(self._frame(upstream))
                client.sendall(struct.pack(">i", len(body)) + body)
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
            _pipe(client, upstream)
        except (OSError, ConnectionClosed, struct.error):
            client.close()
            upstream.close()

    @staticmethod
    def _as_v0_only(answer: bytes) -> bytes:
        correlation_id, error, count = struct.unpack_from(">ihi", answer)
        keys = [struct.unpack_from(">hhh", answer, 10 + 6 * i) for i in range(count)]
        keys = [(k, low, 0 if k == 17 else high) for k, low, high in keys if k != 36]
        return struct.pack(">ihi", correlation_id, error, len(keys)) + b"".join(struct.pack(">hhh", *k) for k in keys)


def _pipe(source, target) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        # shutdown, not close alone: the other pipe's thread blocked in recv on this socket would
        # keep it open, and the peer would never see the end.
        for sock in (target, source):
            try:
                sock.shutdown(2)
            except OSError:
                pass


@pytest.mark.parametrize(
    "mechanism, user, password",
    [("PLAIN", "alice", "alice-secret-1"), ("SCRAM-SHA-256", "bob", "bob-secret-2"), ("SCRAM-SHA-512", "bob", "bob-secret-2")],
)
def test_kclis_client_authenticates_with_raw_tokens_to_a_broker_that_speaks_only_saslhandshake_v0(broker, mechanism, user, password):
    import asyncio

    from kcli.client.connection import BrokerConnection
    from kcli.client.security_config import client_security
    from kcli.errors import ErrorCode, KafkaError

    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"

    def security(secret: str):
        return client_security({
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'org.apache.kafka.common.security.{module} required username="{user}" password="{secret}";',
        })

    proxy = _SaslV0OnlyBroker(broker.sasl_port)

    async def main():
        connection = await BrokerConnection.open("127.0.0.1", proxy.port, security=security(password), timeout=10)
        try:
            assert connection.versions[17][1] == 0 and 36 not in connection.versions
            answer = await connection.call(3, {"topics": None, "allow_auto_topic_creation": False})
            assert [b.node_id for b in answer.brokers] == [0]
        finally:
            await connection.close()
        with pytest.raises(KafkaError) as refused:
            await BrokerConnection.open("127.0.0.1", proxy.port, security=security("wrong"), timeout=10)
        assert refused.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "wrong" not in str(refused.value)

    try:
        asyncio.run(main())
    finally:
        proxy.close()
