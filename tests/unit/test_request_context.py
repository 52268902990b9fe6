"""Every request's context carries its connection's principal, listener name and security
protocol (Kafka's RequestContext), ready for an authorizer: User:ANONYMOUS on PLAINTEXT, the SASL
user on a SASL listener, the mapped subject of a client certificate on TLS. A real server on
127.0.0.1 with a handler that records the contexts it is given."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import types

import pytest

from kcli.broker.handlers import Api, api_versions
from kcli.broker.network.listeners import ListenerSecurity, SaslSettings
from kcli.broker.network.server import Server
from kcli.security.principal import SslPrincipalMapper
from kcli.security.ssl_factory import create_context
from tests.certs import make_certs
from tests.wire_client import decode_response, encode_request, request_entity

TIMEOUT = 10.0


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def _exchange(sock, api_key: int, version: int, fields: dict):
    sock.sendall(encode_request(request_entity(api_key, version, fields), 1))
    size = struct.unpack(">i", _read(sock, 4))[0]
    return decode_response(api_key, version, _read(sock, size))[1]


def _read(sock, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, "closed by the server"
        data += chunk
    return data


def _contexts(security: ListenerSecurity, client) -> list[tuple[str, str, str]]:
    """(principal, listener, protocol) of each DescribeCluster request ``client(port)`` sends."""
    seen = []

    def describe_cluster(ctx, request):
        seen.append((str(ctx.principal), ctx.listener_name, ctx.security_protocol))
        return {"cluster_id": "c", "controller_id": 0, "brokers": [], "endpoint_type": 1}

    registry = {18: Api(18, "api_versions", *api_versions.VERSIONS, api_versions.handle, False),
                60: Api(60, "describe_cluster", 0, 1, describe_cluster, False)}

    async def run():
        server = Server(types.SimpleNamespace(registry=registry), registry)
        _host, port = await server.listen("127.0.0.1", 0, security.name, security=security)
        try:
            await asyncio.wait_for(asyncio.to_thread(client, port), TIMEOUT)
        finally:
            server.stop_accepting()
            await server.drain_and_close(TIMEOUT)

    asyncio.run(run())
    return seen


def _describe(sock) -> None:
    assert int(_exchange(sock, 60, 0, {"include_cluster_authorized_operations": False}).error_code) == 0


def test_plaintext_requests_are_anonymous():
    def client(port):
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
            _describe(sock)

    assert _contexts(ListenerSecurity("PLAINTEXT", "PLAINTEXT"), client) == [("User:ANONYMOUS", "PLAINTEXT", "PLAINTEXT")]


def test_sasl_requests_carry_the_authenticated_user():
    security = ListenerSecurity("CLIENT", "SASL_PLAINTEXT", sasl=SaslSettings(("PLAIN",), {"alice": "pw-1"}))

    def client(port):
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
            assert int(_exchange(sock, 17, 1, {"mechanism": "PLAIN"}).error_code) == 0
            assert int(_exchange(sock, 36, 2, {"auth_bytes": b"\0alice\0pw-1"}).error_code) == 0
            _describe(sock)
            _describe(sock)

    assert _contexts(security, client) == [("User:alice", "CLIENT", "SASL_PLAINTEXT")] * 2


def test_tls_requests_carry_the_mapped_certificate_subject(certs):
    server_context = create_context({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "server.keystore.pem"),
                                     "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"),
                                     "ssl.client.auth": "required"}, server=True)
    security = ListenerSecurity("SSL", "SSL", server_context, SslPrincipalMapper("RULE:^CN=([^,]*),.*$/$1/,DEFAULT"))
    client_context = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    client_context.load_cert_chain(str(certs / "client.keystore.pem"))

    def client(port):
        with client_context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT), server_hostname="localhost") as sock:
            _describe(sock)

    assert _contexts(security, client) == [("User:client", "SSL", "SSL")]
