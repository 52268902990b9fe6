"""The client side of SASL PLAIN and SCRAM (Kafka's PlainSaslClient, ScramSaslClient); sans I/O.

``first()`` gives the client's first token; ``evaluate(challenge)`` each next one (None once the
exchange is over). A SCRAM client checks the server's signature: a server that does not know the
password cannot pass itself off as the broker.
"""

from __future__ import annotations

import hmac

from kcli.security import scram


class SaslClientError(Exception):
    """The server's side of the exchange does not verify."""


class PlainSaslClient:
    mechanism = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._username, self._password = username, password

    def first(self) -> bytes:
        return b"\0" + self._username.encode() + b"\0" + self._password.encode()

    def evaluate(self, challenge: bytes) -> bytes | None:
        return None


class ScramSaslClient:
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._scram = scram.MECHANISMS[mechanism]
        self._username, self._password = username, password
        self._nonce = scram.nonce()
        self._bare = ""
        self._expected: bytes | None = None

    def first(self) -> bytes:
        message, self._bare = scram.ClientFirst.build(self._username, self._nonce)
        return message

    def evaluate(self, challenge: bytes) -> bytes | None:
        if self._expected is None:
            try:
                first = scram.ServerFirst.parse(challenge)
            except scram.ScramError as e:
                raise SaslClientError(str(e)) from None
            if not first.nonce.startswith(self._nonce) or len(first.nonce) == len(self._nonce):
                raise SaslClientError("Invalid server nonce: does not start with client nonce")
            if first.iterations < scram.MIN_ITERATIONS:
                raise SaslClientError(f"Requested iterations {first.iterations} is less than the minimum {scram.MIN_ITERATIONS} for {self.mechanism}")
            final, self._expected = scram.client_final(self._scram, self._password, self._bare, first)
            return final
        try:
            error, signature = scram.parse_server_final(challenge)
        except scram.ScramError as e:
            raise SaslClientError(str(e)) from None
        if error is not None:
            raise SaslClientError(f"Sasl authentication using {self.mechanism} failed with error: {error}")
        if not hmac.compare_digest(signature, self._expected):
            raise SaslClientError("Invalid server signature in server final message")
        return None


def create_sasl_client(mechanism: str, username: str, password: str) -> PlainSaslClient | ScramSaslClient:
    if mechanism == "PLAIN":
        return PlainSaslClient(username, password)
    if mechanism in scram.MECHANISMS:
        return ScramSaslClient(mechanism, username, password)
    raise ValueError(f"Unsupported SASL mechanism {mechanism}")
