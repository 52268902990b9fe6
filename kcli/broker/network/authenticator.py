"""SASL on one connection of a SASL_PLAINTEXT or SASL_SSL listener (Kafka's SaslServerAuthenticator).

States, each frame read in one of them:

    HANDSHAKE     ApiVersions (answered), SaslHandshake v0-1 (a mechanism of
                  ``sasl.enabled.mechanisms``, else UNSUPPORTED_SASL_MECHANISM with the enabled
                  list, and closed)
    AUTHENTICATE  SaslAuthenticate v0-2 (after a v1 handshake): tokens in ``auth_bytes``
    RAW           after a v0 handshake: each frame is a bare SASL token, each answer a bare
                  size-prefixed challenge (the framing of clients older than KIP-152)
    COMPLETE      requests go to the handlers; the principal is ``User:<authorization id>``

Any other request before COMPLETE closes the connection. A failed exchange answers
SASL_AUTHENTICATION_FAILED with a message that names no secret (v0 raw tokens cannot carry one)
and closes; the broker logs one line with the peer and the claimed user. With
``connections.max.reauth.ms`` (KIP-368) SaslAuthenticate v1+ tells the client its session
lifetime; a new SaslHandshake at any time starts a re-authentication, which must keep the
principal; past the lifetime, any other request closes the connection.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from typing import Any

from kcli.errors import ErrorCode
from kcli.protocol import framing, mapping_encoder, messages
from kcli.protocol.api_keys import ApiKey
from kcli.security.principal import KafkaPrincipal, user
from kcli.security.sasl_server import SaslAuthenticationFailed, create_sasl_server

log = logging.getLogger("kcli.broker.network")


class State(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    RAW = "raw"
    COMPLETE = "complete"
    FAILED = "failed"


class SaslServerAuthenticator:
    def __init__(
        self,
        sasl: Any,
        listener: str,
        address: str,
        credentials: Callable[[str, str], Any],
        write: Callable[[bytes], None],
        close: Callable[[], None],
        api_versions: Callable[[bytes | memoryview], list[bytes] | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sasl = sasl  # listeners.SaslSettings
        self._listener = listener
        self._address = address
        self._credentials = credentials
        self._write = write
        self._close = close
        self._api_versions = api_versions
        self._clock = clock
        self.state = State.HANDSHAKE
        self.principal: KafkaPrincipal | None = None
        self._server: Any = None
        self._expires_at: float | None = None

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    def intercepts(self, frame: bytes | memoryview) -> bool:
        """Whether ``frame`` is the authenticator's (then ``receive`` it) rather than a handler's."""
        if self.state is not State.COMPLETE:
            return True
        if self._sasl.reauth_ms > 0 and framing.peek_api_key(frame) == ApiKey.SASL_HANDSHAKE:
            return True  # a re-authentication (KIP-368), which clients start before the session ends
        if self._expires_at is None or self._clock() < self._expires_at:
            return False
        return True  # expired: the connection closes

    def receive(self, frame: bytes | memoryview) -> None:
        if self.state is State.FAILED:
            return
        if self.state is State.RAW:
            self._raw_token(bytes(frame))
            return
        try:
            api_key, version, correlation_id = framing.peek_api(frame)
        except framing.InvalidRequest as e:
            self._drop(f"a frame that is not a request during SASL authentication ({e})")
            return
        if self.state is State.COMPLETE:  # a re-authentication, or a request after the session expired
            if api_key != ApiKey.SASL_HANDSHAKE:
                self._drop("the SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate")
                return
            self.state = State.HANDSHAKE
        if self.state is State.HANDSHAKE and api_key == ApiKey.API_VERSIONS and self.principal is None:
            response = self._api_versions(frame)
            if response is not None:
                self._write(b"".join(response))
            return
        if self.state is State.HANDSHAKE and api_key == ApiKey.SASL_HANDSHAKE and version <= 1:
            self._handshake(frame, version, correlation_id)
        elif self.state is State.AUTHENTICATE and api_key == ApiKey.SASL_AUTHENTICATE and version <= 2:
            self._authenticate(frame, version, correlation_id)
        else:
            self._drop(f"unexpected request of API key {api_key} v{version} during SASL authentication ({self.state.value})")

    # -- the exchange ------------------------------------------------------------------------------

    def _request(self, frame: bytes | memoryview, api_key: int, version: int) -> Any:
        header_version = messages.request_header_version(api_key, version)
        _header, offset = framing.decode_request_header(frame, header_version == 2, with_client_id=header_version > 0)
        return messages.decode_request(api_key, version, frame, offset)

    def _respond(self, api_key: int, version: int, correlation_id: int, fields: dict) -> None:
        head = framing.response_header(correlation_id, messages.is_flexible(api_key, version))
        body = mapping_encoder.encode_response(api_key, version, fields)
        self._write(framing.frame_size(len(head) + len(body)) + head + body)

    def _handshake(self, frame: bytes | memoryview, version: int, correlation_id: int) -> None:
        try:
            mechanism = self._request(frame, ApiKey.SASL_HANDSHAKE, version).mechanism
        except Exception as e:
            self._drop(f"malformed SaslHandshake v{version} request: {e}")
            return
        enabled = list(self._sasl.enabled_mechanisms)
        if mechanism not in enabled:
            self._respond(ApiKey.SASL_HANDSHAKE, version, correlation_id, {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled})
            self._fail(f"Unsupported SASL mechanism {mechanism}", None)
            return
        self._respond(ApiKey.SASL_HANDSHAKE, version, correlation_id, {"error_code": ErrorCode.NONE, "mechanisms": enabled})
        self._server = create_sasl_server(mechanism, self._sasl.plain_users, self._credentials)
        self.state = State.RAW if version == 0 else State.AUTHENTICATE

    def _authenticate(self, frame: bytes | memoryview, version: int, correlation_id: int) -> None:
        try:
            token = self._request(frame, ApiKey.SASL_AUTHENTICATE, version).auth_bytes
        except Exception as e:
            self._drop(f"malformed SaslAuthenticate v{version} request: {e}")
            return
        try:
            challenge = self._server.evaluate(token)
        except SaslAuthenticationFailed as e:
            self._respond(ApiKey.SASL_AUTHENTICATE, version, correlation_id,
                          {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": str(e), "auth_bytes": b""})
            self._fail(str(e), e.username)
            return
        lifetime = 0
        if self._server.complete:
            refused = self._completed()
            if refused is not None:
                self._respond(ApiKey.SASL_AUTHENTICATE, version, correlation_id,
                              {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": refused, "auth_bytes": b""})
                self._fail(refused, self._server.authorization_id)
                return
            lifetime = self._sasl.reauth_ms
        self._respond(ApiKey.SASL_AUTHENTICATE, version, correlation_id,
                      {"error_code": ErrorCode.NONE, "error_message": None, "auth_bytes": challenge, "session_lifetime": lifetime})

    def _raw_token(self, token: bytes) -> None:
        try:
            challenge = self._server.evaluate(token)
        except SaslAuthenticationFailed as e:
            self._fail(str(e), e.username)
            return
        if self._server.complete:
            refused = self._completed()
            if refused is not None:
                self._fail(refused, self._server.authorization_id)
                return
        self._write(framing.frame_size(len(challenge)) + challenge)

    def _completed(self) -> str | None:
        """The exchange succeeded: the principal is set; re-authentication may not change it (the
        reason it is refused, else None)."""
        principal = user(self._server.authorization_id)
        if self.principal is not None and principal != self.principal:
            return f"Cannot change principals during re-authentication from {self.principal} to {principal}"
        self.principal = principal
        self.state = State.COMPLETE
        reauth = self._sasl.reauth_ms
        self._expires_at = self._clock() + reauth / 1000 if reauth > 0 else None
        log.debug("Connection from %s on listener %s authenticated as %s with %s", self._address, self._listener, principal, self._server.mechanism)
        return None

    # -- failures ----------------------------------------------------------------------------------

    def _fail(self, reason: str, username: str | None) -> None:
        """Kafka's one INFO line for a failed authentication; the connection closes after what was written."""
        who = f" as User:{username}" if username else ""
        log.info("Failed authentication with %s on listener %s%s (%s)", self._address, self._listener, who, reason)
        self.state = State.FAILED
        self._close()

    def _drop(self, reason: str) -> None:
        log.info("Closing connection from %s on listener %s: %s", self._address, self._listener, reason)
        self.state = State.FAILED
        self._close()
