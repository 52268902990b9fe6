"""ApiVersions: v0-4

Behaviour: lists every API the broker serves with its version range, computed from the handler
registry. A request for a version the broker lacks is answered by the network layer in v0 with
UNSUPPORTED_VERSION and the same list, so the client can retry with a version both know.
Clients send their software name and version (v3+); they are accepted and not checked.

Version notes: v1 adds throttle_time_ms; v3 is flexible and carries the supported and finalized
features as tagged fields (none are advertised: kcli has no feature-versioned behaviour); v4
(Kafka 3.9) only lets a supported feature's minimum version be 0, so it answers as v3 does.
"""

from __future__ import annotations

from kcli.broker.handlers import api_ranges
from kcli.protocol.api_keys import ApiKey

API_KEY = ApiKey.API_VERSIONS
VERSIONS = (0, 4)


def handle(ctx, request):
    return {"error_code": 0, "api_keys": api_ranges(ctx.broker.registry)}
