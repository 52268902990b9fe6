"""The server side of SASL PLAIN and SCRAM (Kafka's PlainSaslServer, ScramSaslServer); sans I/O.

A server takes the client's tokens one at a time (``evaluate``) and answers each with a
challenge; once ``complete`` its ``authorization_id`` names the principal. Any failure raises
``SaslAuthenticationFailed`` with a message safe to send to the client and to log: it names
neither the password nor whether the user exists.

PLAIN (RFC 4616): one token ``authzid NUL authcid NUL passwd``, checked against the JAAS
``user_<name>`` entries with a constant-time comparison.

SCRAM (RFC 5802/7677): client-first -> server-first (the client's nonce extended with the
server's, the salt and iteration count), client-final -> server-final. The client-final must
carry exactly the nonce this server issued (a replayed message from another exchange fails) and
the GS2 header of the client-first as channel binding. An unknown user gets a salt and iteration
count like any other and fails at the proof, so users cannot be enumerated.
"""

from __future__ import annotations

import base64
import hmac
import secrets
from collections.abc import Callable, Mapping

from kcli.security import scram
from kcli.security.scram import ScramCredential, ScramError

PLAIN = "PLAIN"


class SaslAuthenticationFailed(Exception):
    """Authentication failed; ``str`` is the message for the client and the log. ``username``:
    who the client claimed to be, when known (for the log line)."""

    def __init__(self, message: str, username: str | None = None) -> None:
        super().__init__(message)
        self.username = username


def invalid_credentials(mechanism: str, username: str | None = None) -> SaslAuthenticationFailed:
    """Kafka's answer to bad credentials, which names no detail."""
    return SaslAuthenticationFailed(f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}", username)


class PlainSaslServer:
    mechanism = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationFailed("Authentication failed: PLAIN authentication already complete")
        parts = bytes(token).split(b"\0")
        if len(parts) != 3:
            raise SaslAuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts)))
        try:
            authzid, user, password = (part.decode("utf-8") for part in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user:
            raise SaslAuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationFailed("Authentication failed: password not specified", user)
        expected = self._users.get(user)
        # Compared in constant time even for an unknown user, so timing tells nothing.
        matches = hmac.compare_digest(password.encode(), (expected if expected is not None else secrets.token_hex(16)).encode())
        if expected is None or not matches:
            raise SaslAuthenticationFailed("Authentication failed: Invalid username or password", user)
        if authzid and authzid != user:
            raise SaslAuthenticationFailed("Authentication failed: Client requested an authorization id that is different from username", user)
        self.complete = True
        self.authorization_id = user
        return b""


class ScramSaslServer:
    def __init__(self, mechanism: str, credentials: Callable[[str, str], ScramCredential | None]) -> None:
        """``credentials(user, mechanism)``: the stored credential, or None."""
        self.mechanism = mechanism
        self._scram = scram.MECHANISMS[mechanism]
        self._credentials = credentials
        self.complete = False
        self.authorization_id: str | None = None
        self._first: scram.ClientFirst | None = None
        self._server_first: str | None = None
        self._nonce: str | None = None
        self._credential: ScramCredential | None = None
        self._known = False

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationFailed(f"Authentication failed: {self.mechanism} authentication already complete")
        if self._first is None:
            return self._receive_first(token)
        return self._receive_final(token)

    def _receive_first(self, token: bytes) -> bytes:
        try:
            first = scram.ClientFirst.parse(token)
        except ScramError as e:
            raise SaslAuthenticationFailed(f"Authentication failed: {e}") from None
        if first.authzid is not None and first.authzid != first.username:
            raise SaslAuthenticationFailed("Authentication failed: Client requested an authorization id that is different from username", first.username)
        if first.extensions:
            # Delegation tokens (tokenauth=true) are not served.
            raise SaslAuthenticationFailed(f"Authentication failed: Unsupported extensions {first.extensions.lstrip(',')}", first.username)
        credential = self._credentials(first.username, self.mechanism)
        self._known = credential is not None
        if credential is not None and credential.iterations < scram.MIN_ITERATIONS:
            raise SaslAuthenticationFailed(f"Authentication failed: iterations {credential.iterations} below the minimum for {self.mechanism}", first.username)
        if credential is None:
            size = len(self._scram.digest(b""))
            credential = ScramCredential(secrets.token_bytes(32), secrets.token_bytes(size), secrets.token_bytes(size), scram.MIN_ITERATIONS)
        self._first, self._credential = first, credential
        self._nonce = first.nonce + scram.nonce()
        self._server_first = scram.ServerFirst.build(self._nonce, credential.salt, credential.iterations)
        return self._server_first.encode()

    def _receive_final(self, token: bytes) -> bytes:
        user = self._first.username
        try:
            final = scram.ClientFinal.parse(token)
        except ScramError as e:
            raise SaslAuthenticationFailed(f"Authentication failed: {e}", user) from None
        if final.nonce != self._nonce:
            raise SaslAuthenticationFailed("Authentication failed: Invalid nonce in client final message", user)
        if final.channel_binding != self._first.gs2_header.encode():
            raise SaslAuthenticationFailed("Authentication failed: Invalid channel binding in client final message", user)
        message = scram.auth_message(self._first.bare, self._server_first, final.without_proof)
        if not scram.verify_proof(self._scram, self._credential, message, final.proof) or not self._known:
            raise invalid_credentials(self.mechanism, user)
        signature = scram.server_signature(self._scram, self._credential, message)
        self._credential = None
        self.complete = True
        self.authorization_id = user
        return b"v=" + base64.b64encode(signature)


def create_sasl_server(
    mechanism: str, plain_users: Mapping[str, str], credentials: Callable[[str, str], ScramCredential | None]
) -> PlainSaslServer | ScramSaslServer:
    if mechanism == PLAIN:
        return PlainSaslServer(plain_users)
    return ScramSaslServer(mechanism, credentials)
