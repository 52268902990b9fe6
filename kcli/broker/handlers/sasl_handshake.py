"""SaslHandshake: v0-1

Behaviour: on a SASL listener the handshake is the authenticator's (``network.authenticator``):
it never reaches this handler before the connection has authenticated. Here, on a listener
without SASL or on a connection already authenticated (outside re-authentication), the answer is
Kafka's KafkaApis answer: ILLEGAL_SASL_STATE and no mechanisms.

Version notes: v1 moves the tokens that follow into SaslAuthenticate requests (v0: raw tokens).
"""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey

API_KEY = ApiKey.SASL_HANDSHAKE
VERSIONS = (0, 1)


def handle(ctx, request):
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
