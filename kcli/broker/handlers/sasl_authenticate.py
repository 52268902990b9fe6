"""SaslAuthenticate: v0-2

Behaviour: on a SASL listener the exchange is the authenticator's (``network.authenticator``).
A SaslAuthenticate that reaches this handler comes on a listener without SASL or after the
connection authenticated, and is answered as Kafka's KafkaApis answers it: ILLEGAL_SASL_STATE,
"SaslAuthenticate request received after successful authentication".

Version notes: v1 adds the session lifetime (KIP-368); v2 is flexible.
"""

from __future__ import annotations

from kcli.errors import ErrorCode
from kcli.protocol.api_keys import ApiKey

API_KEY = ApiKey.SASL_AUTHENTICATE
VERSIONS = (0, 2)


def handle(ctx, request):
    return {
        "error_code": ErrorCode.ILLEGAL_SASL_STATE,
        "error_message": "SaslAuthenticate request received after successful authentication",
        "auth_bytes": b"",
        "session_lifetime": 0,
    }
